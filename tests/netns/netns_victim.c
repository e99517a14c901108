/*
 * netns_victim.c — one rank of the external-fault runs (netns_faults.sh, and
 * the netem cells of the rxe VM): float all-reduces in a loop, each result
 * checked, until CALLS calls or until SECONDS have passed on some rank.
 *
 *   netns_victim [-t SECONDS] [-n CALLS] [-c COUNT]     (defaults 60, 100000, 65536)
 *
 * The ranks stop together: each call carries one extra element, 1 on a rank
 * whose time is up, and every rank reads the same sum. Lines printed:
 *   "rank R: RUNNING pid P"                     after the first call (the job is up)
 *   "rank R: OK N calls, X ms per call"         exit 0 (the average leaves out call 1)
 *   "rank R: ERROR at T after S s: <message>"   exit 3; T is the wall clock (epoch
 *                                               seconds), S the time since that call began
 *   "rank R: WRONG in all-reduce #N ..."        exit 4
 *   "rank ?: INIT FAILED: <message>"            exit 2
 * The loop itself is tests/common/victim_loop.c, shared with fault_victim.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "victim_loop.h"
#include "xccl.h"

static int usage(const char *me) {
  fprintf(stderr, "usage: %s [-t SECONDS] [-n CALLS] [-c COUNT]\n", me);
  return 2;
}

int main(int argc, char **argv) {
  victim_loop_opts_t opts = {.count = 64 * 1024, .calls = 100000, .limit_s = 60, .watched = 1};
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage(argv[0]);
    if (strcmp(argv[i], "-t") == 0)
      opts.limit_s = atof(argv[++i]);
    else if (strcmp(argv[i], "-n") == 0)
      opts.calls = atol(argv[++i]);
    else if (strcmp(argv[i], "-c") == 0)
      opts.count = (size_t)atol(argv[++i]);
    else
      return usage(argv[0]);
  }
  if (opts.limit_s <= 0 || opts.calls < 1 || opts.count < 1) return usage(argv[0]);

  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) {
    printf("rank ?: INIT FAILED: %s\n", xcclGetLastError(NULL));
    return 2;
  }
  victim_loop_stats_t stats;
  int code = victim_loop_run(comm, &opts, &stats);
  if (code != 0) return code;
  int rank = 0;
  xcclCommUserRank(comm, &rank);
  printf("rank %d: OK %ld calls, %.3f ms per call\n", rank, stats.calls, stats.per_call_ms);
  xcclCommDestroy(comm);
  return 0;
}
