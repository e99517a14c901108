/*
 * perf_options.h — xccl-perf's command line: its options, their help and
 * their parsing (every refusal a sentence on stderr).
 */
#ifndef XCCL_TOOLS_PERF_OPTIONS_H
#define XCCL_TOOLS_PERF_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "xccl.h"

typedef struct {
  size_t min_bytes, max_bytes;
  size_t factor;
  int iters, warmup;
  xcclDataType_t type;
  xcclRedOp_t op;
  int root;
  int check, inplace, json, latency, device, memalloc;
  const char *algos; /* --algo: "all" or a list of algorithms (perf_algo.h); NULL: the tuner's */
  const char *plot;  /* --plot: the PNG rank 0 draws (perf_plot.h); NULL: none */
} options_t;

/* The help; collectives: " allreduce allgather ...". */
void perf_usage(FILE *f, const char *collectives);
/* Parses argv (argv[0] is the collective's name) into *o; -1 after saying
 * what is wrong on stderr. */
int perf_parse_options(int argc, char **argv, const char *collectives, options_t *o);

#endif
