/*
 * launch_twice.c — two communicators from xcclCommInitFromEnv in one
 * process, as a launcher starts it (tests/launch/run.sh): the second call
 * must meet the second call of the others (its own store key, PMIx key or
 * port), and both must work at once. Prints "rank R of N: ok" on success.
 */
#include <stdio.h>
#include <stdlib.h>

#include "xccl.h"

static int check(xcclResult_t r, const char *what) {
  if (r == xcclSuccess) return 0;
  fprintf(stderr, "launch_twice: %s: %s: %s\n", what, xcclGetErrorString(r), xcclGetLastError(NULL));
  return 1;
}

/* An all-reduce of rank + 1 over n ranks sums to n(n+1)/2 everywhere. */
static int allreduce_ok(xcclComm_t comm, int rank, int n, const char *which) {
  float buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = (float)(rank + 1);
  if (check(xcclAllReduce(buf, buf, 1000, xcclFloat32, xcclSum, comm, NULL), which)) return 1;
  for (int i = 0; i < 1000; i++)
    if (buf[i] != (float)(n * (n + 1) / 2)) {
      fprintf(stderr, "launch_twice: %s: element %d is %g, want %d\n", which, i, buf[i], n * (n + 1) / 2);
      return 1;
    }
  return 0;
}

int main(void) {
  xcclComm_t a = NULL, b = NULL;
  int rank = -1, n = 0, rank_b = -1, n_b = 0;
  if (check(xcclCommInitFromEnv(&a), "first xcclCommInitFromEnv")) return 1;
  if (check(xcclCommInitFromEnv(&b), "second xcclCommInitFromEnv")) return 1;
  if (check(xcclCommUserRank(a, &rank), "rank") || check(xcclCommCount(a, &n), "count") ||
      check(xcclCommUserRank(b, &rank_b), "rank") || check(xcclCommCount(b, &n_b), "count"))
    return 1;
  if (rank != rank_b || n != n_b) {
    fprintf(stderr, "launch_twice: the communicators disagree: rank %d of %d and rank %d of %d\n", rank, n, rank_b, n_b);
    return 1;
  }
  if (allreduce_ok(b, rank, n, "all-reduce on the second") || allreduce_ok(a, rank, n, "all-reduce on the first"))
    return 1;
  if (check(xcclCommDestroy(b), "destroy") || check(xcclCommDestroy(a), "destroy")) return 1;
  printf("rank %d of %d: ok\n", rank, n);
  return 0;
}
