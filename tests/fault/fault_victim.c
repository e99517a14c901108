/*
 * fault_victim.c — one rank of a fault-matrix case (fault_matrix.sh): six
 * all-reduces of 256 Ki floats (TEST_VICTIM_COUNT: another count), each
 * checked. Prints one line and exits:
 *   0  every result right            "rank R: OK"
 *   3  a call returned an error      "rank R: ERROR after S s: <message>"
 *   4  a result was wrong            "rank R: WRONG in all-reduce #N"
 * S is the time from the start of the failing call. The loop itself is
 * tests/common/victim_loop.c, shared with netns_victim.
 */
#include <stdio.h>
#include <stdlib.h>

#include "victim_loop.h"
#include "xccl.h"

int main(void) {
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) {
    printf("rank ?: INIT FAILED: %s\n", xcclGetLastError(NULL));
    return 2;
  }
  const char *c = getenv("TEST_VICTIM_COUNT"); /* floats per all-reduce; default 256 Ki */
  const victim_loop_opts_t opts = {.count = c ? (size_t)strtoull(c, NULL, 10) : 256 * 1024, .calls = 6};
  int code = victim_loop_run(comm, &opts, NULL);
  if (code != 0) return code;
  int rank = 0;
  xcclCommUserRank(comm, &rank);
  printf("rank %d: OK\n", rank);
  xcclCommDestroy(comm);
  return 0;
}
