/*
 * tuning.h — which algorithm runs a collective: XCCL_ALGO when it forces
 * one, else a cost model (latency per step + bytes / bandwidth).
 */
#ifndef XCCL_CORE_TUNING_H
#define XCCL_CORE_TUNING_H

#include <stddef.h>

#include "ring_schedule.h"
#include "xccl.h"

typedef enum { ALGO_RING = 0, ALGO_RD = 1, ALGO_COUNT } algo_t;

const char *algo_name(algo_t a);

/* Reads XCCL_ALGO into forced[RING_COLL_NCOLLS] (-1: not forced). A name
 * that is not an algorithm, or an algorithm that does not serve the named
 * collective, is an error that says what is allowed. */
xcclResult_t tuning_parse(const char *text, int *forced);

/* The algorithm for coll of `bytes` on nranks ranks with slots of `slot` bytes. */
algo_t tuning_pick(const int *forced, ring_coll_t coll, size_t bytes, int nranks, size_t slot);

#endif
