/*
 * trace_rank.c — one rank of the XCCL_TRACE tests (test_trace.py): N
 * all-reduces of 65536 floats on the world communicator, checked, then
 * destroy, which writes the rank's timeline when XCCL_TRACE is set.
 *
 *   trace_rank N
 * Prints "rank R: OK" and exits 0, or says what failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "xccl.h"

#define COUNT 65536

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 4;
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) return printf("init failed: %s\n", xcclGetLastError(NULL)), 1;
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  float *buf = malloc(COUNT * sizeof(float));
  for (int i = 0; i < iters; i++) {
    for (int k = 0; k < COUNT; k++) buf[k] = (float)(rank + 1);
    if (xcclAllReduce(buf, buf, COUNT, xcclFloat32, xcclSum, comm, NULL) != xcclSuccess)
      return printf("rank %d: all-reduce %d failed: %s\n", rank, i, xcclGetLastError(comm)), 1;
    if (buf[0] != (float)(n * (n + 1) / 2) || buf[COUNT - 1] != buf[0])
      return printf("rank %d: all-reduce %d gave %g, not %d\n", rank, i, buf[0], n * (n + 1) / 2), 1;
  }
  free(buf);
  if (xcclCommDestroy(comm) != xcclSuccess) return printf("rank %d: destroy failed\n", rank), 1;
  printf("rank %d: OK\n", rank);
  return 0;
}
