/*
 * victim_loop.c — the all-reduce-and-check loop shared by the fault victims
 * (see victim_loop.h).
 */
#include "victim_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The buffer: malloc's, or with TEST_MEMALLOC=1 xcclMemAlloc's (which peers
 * on the host may map: the zero-copy path). */
static int use_memalloc(void) {
  const char *v = getenv("TEST_MEMALLOC");
  return v && strcmp(v, "1") == 0;
}

static float *buf_alloc(size_t len) {
  void *p = NULL;
  if (!use_memalloc()) return malloc(len * sizeof(float));
  return xcclMemAlloc(&p, len * sizeof(float)) == xcclSuccess ? p : NULL;
}

static void buf_free(float *p) {
  if (!use_memalloc())
    free(p);
  else if (p)
    (void)xcclMemFree(p);
}

int victim_loop_run(xcclComm_t comm, const victim_loop_opts_t *opts, victim_loop_stats_t *stats_p) {
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  const size_t count = opts->count;
  const int agree_stop = opts->limit_s > 0; /* buf[count] says "my time is up" */
  const size_t len = count + (agree_stop ? 1 : 0);
  float *buf = buf_alloc(len);
  if (buf == NULL) {
    printf("rank %d: ERROR %safter 0 s: cannot allocate %zu floats\n", rank, opts->watched ? "at 0 " : "", len);
    xcclCommAbort(comm);
    return 3;
  }
  const float ranks = (float)n * (float)(n + 1) / 2;
  double start = clock_s(CLOCK_MONOTONIC), after_first = start;
  long it = 1;
  for (;; it++) {
    for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1) * (float)((i + (size_t)it) % 7);
    double t0 = clock_s(CLOCK_MONOTONIC);
    if (agree_stop) buf[count] = (it >= opts->calls || t0 - start >= opts->limit_s) ? 1.0f : 0.0f;
    xcclResult_t r = xcclAllReduce(buf, buf, len, xcclFloat32, xcclSum, comm, NULL);
    if (r != xcclSuccess) {
      char at[48] = "";
      if (opts->watched) snprintf(at, sizeof(at), "at %.3f ", clock_s(CLOCK_REALTIME));
      printf("rank %d: ERROR %safter %.2f s: %s\n", rank, at, clock_s(CLOCK_MONOTONIC) - t0, xcclGetLastError(comm));
      fflush(stdout);
      xcclCommAbort(comm);
      buf_free(buf);
      return 3;
    }
    for (size_t i = 0; i < count; i++)
      if (buf[i] != ranks * (float)((i + (size_t)it) % 7)) {
        printf("rank %d: WRONG in all-reduce #%ld at element %zu: %g, expected %g\n", rank, it, i, buf[i],
               ranks * (float)((i + (size_t)it) % 7));
        fflush(stdout);
        xcclCommAbort(comm);
        buf_free(buf);
        return 4;
      }
    if (it == 1) {
      after_first = clock_s(CLOCK_MONOTONIC);
      if (opts->watched) {
        printf("rank %d: RUNNING pid %ld\n", rank, (long)getpid());
        fflush(stdout);
      }
    }
    if (agree_stop ? buf[count] > 0 : it >= opts->calls) break;
  }
  double end = clock_s(CLOCK_MONOTONIC);
  if (stats_p) {
    stats_p->calls = it;
    stats_p->per_call_ms = it > 1 ? (end - after_first) * 1e3 / (double)(it - 1) : (end - start) * 1e3;
  }
  buf_free(buf);
  return 0;
}
