/*
 * tuning.h — which algorithm runs a collective: XCCL_ALGO when it forces
 * one, else the cheapest by the algorithms' costs (algo.h).
 */
#ifndef XCCL_CORE_TUNING_H
#define XCCL_CORE_TUNING_H

#include <stddef.h>

#include "algo.h"
#include "ring_schedule.h"
#include "xccl.h"

/* Reads XCCL_ALGO into forced[COLL_NKINDS] (-1: not forced). A name
 * that is not an algorithm, or an algorithm that does not serve the named
 * collective, is an error that says what is allowed; forced is then left
 * as it was. */
xcclResult_t tuning_parse(const char *text, int *forced);

/* The algorithm for coll of `bytes` on nranks ranks with slots of `slot`
 * bytes: the forced one, else the cheapest that serves coll (the earlier in
 * algo_table on a tie), ALGO_RING on one rank. */
algo_t tuning_pick(const int *forced, coll_kind_t coll, size_t bytes, int nranks, size_t slot);

#endif
