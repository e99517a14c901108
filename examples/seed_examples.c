/*
 * seed_examples.c — the seven collectives of the project's seed, on host
 * buffers, printing each rank's data before and after in the seed's log
 * format. Run it under xccl-run:
 *
 *   xccl-run -n 4 seed_examples            (or -n 2, the seed's other size)
 *   xccl-run -n 4 seed_examples --check    (also asserts the seed's values)
 *
 * The values are the seed's: scatter from rank 0 of [1,1] and [5,5] (then
 * [9,9], [13,13] for more ranks), gather of each rank's rank at rank 0,
 * broadcast of rank 0's value, reduce and all-reduce sums of the ranks,
 * all-gather of the ranks, and reduce-scatter of [1,2] and [3,4] (each rank
 * r holding r*n+1 .. r*n+n).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xccl.h"

static int rank, nranks, check, failures;

#define CALL(x)                                                                                 \
  do {                                                                                          \
    xcclResult_t r_ = (x);                                                                      \
    if (r_ != xcclSuccess) {                                                                    \
      fprintf(stderr, "rank %d: %s failed: %s\n", rank, #x, xcclGetLastError(comm));            \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* "tensor([1., 1.])" like the seed's logs (floats with a trailing dot). */
static const char *ftensor(const float *v, int n, char *buf, size_t len) {
  int o = snprintf(buf, len, "tensor([");
  for (int i = 0; i < n; i++) o += snprintf(buf + o, len - (size_t)o, "%s%g.", i ? ", " : "", v[i]);
  snprintf(buf + o, len - (size_t)o, "])");
  return buf;
}

static void expect(int ok, const char *what) {
  if (check && !ok) {
    failures++;
    fprintf(stderr, "rank %d: %s is not what the seed shows\n", rank, what);
  }
}

/* The collectives, one after the other, as the seed runs them. */
static void run(xcclComm_t comm) {
  char a[256], b[256];
  float *f = calloc((size_t)nranks * nranks, sizeof(float)), *g = calloc((size_t)nranks * nranks, sizeof(float));
  float before[64];

  /* scatter: rank 0 holds [1,1], [5,5], ...; rank i gets the i-th. */
  if (rank == 0) printf("INFO:root:rank: %d is scattering data\n", rank);
  for (int i = 0; i < nranks * nranks; i++) f[i] = 1.0f + 4.0f * (float)(i / nranks);
  memset(g, 0, sizeof(float) * (size_t)nranks);
  memcpy(before, g, sizeof(float) * (size_t)nranks);
  CALL(xcclScatter(f, g, (size_t)nranks, xcclFloat32, 0, comm, NULL));
  printf("INFO:root:scatter, rank: %d, before scatter: %s after scatter: %s\n", rank, ftensor(before, nranks, a, sizeof(a)),
         ftensor(g, nranks, b, sizeof(b)));
  expect(g[0] == 1.0f + 4.0f * (float)rank && g[nranks - 1] == g[0], "scatter");

  /* gather: each rank's [rank] at rank 0. */
  float mine = (float)rank;
  memset(g, 0, sizeof(float) * (size_t)nranks);
  CALL(xcclGather(&mine, g, 1, xcclFloat32, 0, comm, NULL));
  if (rank == 0) {
    int o = snprintf(b, sizeof(b), "[");
    for (int i = 0; i < nranks; i++) o += snprintf(b + o, sizeof(b) - (size_t)o, "%stensor([%g.])", i ? ", " : "", g[i]);
    snprintf(b + o, sizeof(b) - (size_t)o, "]");
    for (int i = 0; i < nranks; i++) expect(g[i] == (float)i, "gather");
  } else {
    snprintf(b, sizeof(b), "None");
  }
  printf("INFO:root:gather, rank: %d, before gather: tensor([%g.]) after gather: %s\n", rank, mine, b);

  /* broadcast: every rank's scalar becomes rank 0's. */
  int x = rank, x0 = rank;
  CALL(xcclBroadcast(&x, &x, 1, xcclInt32, 0, comm, NULL));
  printf("INFO:root:broadcast, rank: %d, before broadcast tensor: tensor(%d) after broadcast tensor: tensor(%d)\n", rank,
         x0, x);
  expect(x == 0, "broadcast");

  /* reduce: the sum of the ranks at rank 0; the others keep their value. */
  float r = (float)rank, r0 = r;
  CALL(xcclReduce(&r, &r, 1, xcclFloat32, xcclSum, 0, comm, NULL));
  printf("INFO:root:reduce, rank: %d, before reduce: tensor([%g.]) after reduce: tensor([%g.])\n", rank, r0, r);
  expect(rank == 0 ? r == (float)(nranks * (nranks - 1) / 2) : r == r0, "reduce");

  /* all-reduce: the sum everywhere. */
  float s = (float)rank, s0 = s;
  CALL(xcclAllReduce(&s, &s, 1, xcclFloat32, xcclSum, comm, NULL));
  printf("INFO:root:all_reduce, rank: %d, before allreduce tensor: tensor([%g.]), after allreduce tensor: tensor([%g.])\n",
         rank, s0, s);
  expect(s == (float)(nranks * (nranks - 1) / 2), "all-reduce");

  /* all-gather: every rank's rank, everywhere. */
  int in = rank, *out = calloc((size_t)nranks, sizeof(int));
  CALL(xcclAllGather(&in, out, 1, xcclInt32, comm, NULL));
  int o = snprintf(b, sizeof(b), "[");
  for (int i = 0; i < nranks; i++) {
    o += snprintf(b + o, sizeof(b) - (size_t)o, "%stensor([%d])", i ? ", " : "", out[i]);
    expect(out[i] == i, "all-gather");
  }
  snprintf(b + o, sizeof(b) - (size_t)o, "]");
  printf("INFO:root:allgather, rank: %d, input_tensor: tensor(%d), output tensor_list: %s\n", rank, in, b);

  /* reduce-scatter: rank r holds r*n+1 .. r*n+n; rank j gets the sum of the j-th. */
  int *list = calloc((size_t)nranks, sizeof(int)), res = 0;
  for (int i = 0; i < nranks; i++) list[i] = rank * nranks + i + 1;
  CALL(xcclReduceScatter(list, &res, 1, xcclInt32, xcclSum, comm, NULL));
  o = snprintf(a, sizeof(a), "[");
  for (int i = 0; i < nranks; i++) o += snprintf(a + o, sizeof(a) - (size_t)o, "%stensor(%d)", i ? ", " : "", list[i]);
  snprintf(a + o, sizeof(a) - (size_t)o, "]");
  printf("INFO:root:reduce_scatter, rank: %d, input_list: %s, tensor: tensor([%d])\n", rank, a, res);
  int want = 0;
  for (int q = 0; q < nranks; q++) want += q * nranks + rank + 1;
  expect(res == want, "reduce-scatter");
  fflush(stdout);
  free(f);
  free(g);
  free(out);
  free(list);
}

int main(int argc, char **argv) {
  check = argc > 1 && strcmp(argv[1], "--check") == 0;
  xcclComm_t comm = NULL;
  CALL(xcclCommInitFromEnv(&comm));
  CALL(xcclCommCount(comm, &nranks));
  CALL(xcclCommUserRank(comm, &rank));
  printf("INFO:root:world size: %d, rank: %d\n", nranks, rank);
  run(comm);
  CALL(xcclCommDestroy(comm));
  if (check && failures == 0) printf("seed examples, rank %d of %d: the seed's values, exactly\n", rank, nranks);
  return failures ? 1 : 0;
}
