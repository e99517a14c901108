/*
 * bench_util.h — what the C benchmarks run under xccl-run share: the
 * clock, the median of a few batches, and the rank's place and unique id
 * from xccl-run's environment. Header only (each benchmark is one file).
 */
#ifndef XCCL_BENCH_UTIL_H
#define XCCL_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of t[0..n) (sorts t). */
static inline double bench_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), bench_cmp);
  return t[n / 2];
}

/* XCCL_UNIQUE_ID (hex, id_bytes long), XCCL_RANK and XCCL_NRANKS, as
 * xccl-run exports them; 0 when they are not all there (said on stderr). */
static inline int bench_from_env(void *id, size_t id_bytes, int *rank_p, int *nranks_p) {
  const char *hex = getenv("XCCL_UNIQUE_ID"), *rs = getenv("XCCL_RANK"), *ns = getenv("XCCL_NRANKS");
  if (!hex || !rs || !ns || strlen(hex) != 2 * id_bytes) {
    fprintf(stderr, "run me under xccl-run: XCCL_UNIQUE_ID, XCCL_RANK and XCCL_NRANKS are not set\n");
    return 0;
  }
  for (size_t i = 0; i < id_bytes; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    ((unsigned char *)id)[i] = (unsigned char)v;
  }
  *rank_p = atoi(rs), *nranks_p = atoi(ns);
  return 1;
}

#endif
