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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xccl.h"

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int usage(const char *me) {
  fprintf(stderr, "usage: %s [-t SECONDS] [-n CALLS] [-c COUNT]\n", me);
  return 2;
}

int main(int argc, char **argv) {
  double limit_s = 60;
  long calls = 100000;
  size_t count = 64 * 1024;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage(argv[0]);
    if (strcmp(argv[i], "-t") == 0)
      limit_s = atof(argv[++i]);
    else if (strcmp(argv[i], "-n") == 0)
      calls = atol(argv[++i]);
    else if (strcmp(argv[i], "-c") == 0)
      count = (size_t)atol(argv[++i]);
    else
      return usage(argv[0]);
  }
  if (limit_s <= 0 || calls < 1 || count < 1) return usage(argv[0]);

  xcclComm_t comm;
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  if (r != xcclSuccess) {
    printf("rank ?: INIT FAILED: %s\n", xcclGetLastError(NULL));
    return 2;
  }
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  float *buf = malloc((count + 1) * sizeof(float));
  if (buf == NULL) {
    printf("rank %d: ERROR at 0 after 0 s: cannot allocate %zu floats\n", rank, count + 1);
    xcclCommAbort(comm);
    return 3;
  }
  const float ranks = (float)n * (float)(n + 1) / 2;
  double start = clock_s(CLOCK_MONOTONIC), after_first = start;
  long it = 1;
  for (;; it++) {
    for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1) * (float)((i + (size_t)it) % 7);
    double t0 = clock_s(CLOCK_MONOTONIC);
    buf[count] = (it >= calls || t0 - start >= limit_s) ? 1.0f : 0.0f;
    r = xcclAllReduce(buf, buf, count + 1, xcclFloat32, xcclSum, comm, NULL);
    if (r != xcclSuccess) {
      printf("rank %d: ERROR at %.3f after %.2f s: %s\n", rank, clock_s(CLOCK_REALTIME), clock_s(CLOCK_MONOTONIC) - t0,
             xcclGetLastError(comm));
      fflush(stdout);
      xcclCommAbort(comm);
      free(buf);
      return 3;
    }
    for (size_t i = 0; i < count; i++)
      if (buf[i] != ranks * (float)((i + (size_t)it) % 7)) {
        printf("rank %d: WRONG in all-reduce #%ld at element %zu: %g, expected %g\n", rank, it, i, buf[i],
               ranks * (float)((i + (size_t)it) % 7));
        fflush(stdout);
        xcclCommAbort(comm);
        free(buf);
        return 4;
      }
    if (it == 1) {
      after_first = clock_s(CLOCK_MONOTONIC);
      printf("rank %d: RUNNING pid %ld\n", rank, (long)getpid());
      fflush(stdout);
    }
    if (buf[count] > 0) break;
  }
  double end = clock_s(CLOCK_MONOTONIC);
  double per_ms = it > 1 ? (end - after_first) * 1e3 / (double)(it - 1) : (end - start) * 1e3;
  printf("rank %d: OK %ld calls, %.3f ms per call\n", rank, it, per_ms);
  free(buf);
  xcclCommDestroy(comm);
  return 0;
}
