/*
 * perf_algo.h — xccl-perf --algo: one communicator per algorithm, split from
 * the one the launcher made with config->algo forcing that algorithm for the
 * collective measured, so that every algorithm runs each size in turn in one
 * run; and which of them the tuner would pick.
 */
#ifndef XCCL_TOOLS_PERF_ALGO_H
#define XCCL_TOOLS_PERF_ALGO_H

#include <stddef.h>

#include "xccl.h"

#define PERF_MAX_ALGOS 16

typedef struct {
  const char *name;
  xcclComm_t comm;
} perf_algo_t;

/* Makes a communicator per algorithm of `words` ("all": every one that
 * serves collective; else a comma list) from parent. Returns how many, or -1
 * after rank 0 said why on stderr (a collective without algorithms, a name
 * that is not one, a split refused: every rank fails alike). An algorithm
 * that cannot run here (direct across hosts) is left out with a line from
 * rank 0 when words is "all". */
int perf_algo_open(xcclComm_t parent, int rank, const char *collective, const char *words, perf_algo_t *algos);
/* Destroys what perf_algo_open made. */
void perf_algo_close(perf_algo_t *algos, int n);
/* 1 if collective has algorithms to choose from (xcclGetAlgorithms). */
int perf_algo_has(const char *collective);
/* The tuner's pick on parent for collective of count elements of type: its
 * name, or "?" when the library does not say. */
const char *perf_algo_chosen(xcclComm_t parent, const char *collective, size_t count, xcclDataType_t type);

#endif
