/*
 * victim_loop.h — the all-reduce-and-check loop of the fault victims
 * (fault/fault_victim.c, netns/netns_victim.c): float sums, each result
 * checked, with the lines the fault scripts read printed as it goes.
 */
#ifndef XCCL_TEST_VICTIM_LOOP_H
#define XCCL_TEST_VICTIM_LOOP_H

#include <stddef.h>

#include "xccl.h"

typedef struct {
  size_t count;   /* floats summed and checked per call (at least 1) */
  long calls;     /* calls to make (at least 1); with limit_s, the most */
  double limit_s; /* > 0: also stop once this many seconds have passed on some rank.
                   * The ranks stop together: each call then carries one extra
                   * element, 1 on a rank whose time is up. 0: exactly `calls` calls. */
  int watched;    /* 1: print "rank R: RUNNING pid P" after call 1, and the wall
                   * clock (epoch seconds) in ERROR lines, for a script that acts
                   * on the job from outside (netns_faults.sh) */
} victim_loop_opts_t;

typedef struct {
  long calls;         /* calls made */
  double per_call_ms; /* average time per call; call 1 (connection setup) left
                       * out when there was more than one */
} victim_loop_stats_t;

/* Runs all-reduces on comm, rank r putting in (r + 1) * ((i + call) % 7) at
 * element i, and checks every element of every result. Returns the exit code
 * for the victim:
 *   0  every result right; *stats_p written (stats_p may be NULL), and comm
 *      still the caller's to destroy
 *   3  a call failed (or the buffer could not be allocated): printed
 *      "rank R: ERROR [at T ]after S s: <message>", S the time since that
 *      call began; comm aborted
 *   4  a result was wrong: printed "rank R: WRONG in all-reduce #N at
 *      element I: X, expected Y"; comm aborted
 * After 3 or 4 the caller must not use comm again. */
int victim_loop_run(xcclComm_t comm, const victim_loop_opts_t *opts, victim_loop_stats_t *stats_p);

#endif
