/*
 * fault_victim.c — one rank of a fault-matrix case (fault_matrix.sh): six
 * all-reduces of 256 Ki floats, each checked. Prints one line and exits:
 *   0  every result right            "rank R: OK"
 *   3  a call returned an error      "rank R: ERROR after S s: <message>"
 *   4  a result was wrong            "rank R: WRONG in all-reduce #N"
 * S is the time from the start of the failing call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xccl.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
  xcclComm_t comm;
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  if (r != xcclSuccess) {
    printf("rank ?: INIT FAILED: %s\n", xcclGetLastError(NULL));
    return 2;
  }
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  size_t count = 256 * 1024;
  float *buf = malloc(count * sizeof(float));
  for (int it = 1; it <= 6; it++) {
    for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1) * (float)((i + (size_t)it) % 7);
    double t0 = now_s();
    r = xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL);
    if (r != xcclSuccess) {
      printf("rank %d: ERROR after %.2f s: %s\n", rank, now_s() - t0, xcclGetLastError(comm));
      fflush(stdout);
      xcclCommAbort(comm);
      return 3;
    }
    float ranks = (float)n * (float)(n + 1) / 2;
    for (size_t i = 0; i < count; i++)
      if (buf[i] != ranks * (float)((i + (size_t)it) % 7)) {
        printf("rank %d: WRONG in all-reduce #%d at element %zu: %g, expected %g\n", rank, it, i, buf[i],
               ranks * (float)((i + (size_t)it) % 7));
        fflush(stdout);
        xcclCommAbort(comm);
        return 4;
      }
  }
  printf("rank %d: OK\n", rank);
  free(buf);
  xcclCommDestroy(comm);
  return 0;
}
