/*
 * tune_measure.h — XCCL_TUNE: the cost model's link constants from the
 * table (tuning.c) or measured once per communicator at init.
 */
#ifndef XCCL_CORE_TUNE_MEASURE_H
#define XCCL_CORE_TUNE_MEASURE_H

#include "xccl.h"

struct xcclComm;

/* Refuses an XCCL_TUNE value other than table or measure (xcclInvalidUsage,
 * with the sentence), before the rank meets the others. */
xcclResult_t tune_check_config(void);

/* Under XCCL_TUNE=measure, on 2 or more ranks: times the ring all-reduce on
 * comm's channels and sets comm->site's flat link (link[flat]) to the medians
 * of every rank's figures (the same on every rank); otherwise does nothing.
 * Collective: every rank of comm calls it at the same point of init, after
 * the ring channels are connected. On failure comm->site is unchanged. */
xcclResult_t tune_measure(struct xcclComm *comm);

#endif
