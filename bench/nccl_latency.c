/*
 * nccl_latency.c — the time of a small all-reduce through xccl's
 * libnccl.so.2 (built as nccl-latency, against include/xccl-nccl/nccl.h) or
 * through xccl.h directly (built as xccl-latency, -DLAT_XCCL): one source,
 * so the two differ only in the library they call. Run under xccl-run:
 *
 *   xccl-run -n 2 nccl-latency [BYTES] [ITERS]
 *
 * Rank 0 prints the median over 7 batches of the mean time per call (us).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#ifdef LAT_XCCL
#include "xccl.h"
#define API "xcclAllReduce"
typedef xcclComm_t comm_t;
typedef xcclUniqueId id_t_;
#define INIT(c, n, id, r) xcclCommInitRank(c, n, id, r)
#define ALLREDUCE(b, cnt, c) xcclAllReduce(b, b, cnt, xcclFloat32, xcclSum, c, NULL)
#define DESTROY(c) xcclCommDestroy(c)
#define OK xcclSuccess
#define LASTERR() xcclGetLastError(NULL)
#else
#include <nccl.h>
#define API "ncclAllReduce"
typedef ncclComm_t comm_t;
typedef ncclUniqueId id_t_;
#define INIT(c, n, id, r) ncclCommInitRank(c, n, id, r)
#define ALLREDUCE(b, cnt, c) ncclAllReduce(b, b, cnt, ncclFloat32, ncclSum, c, (cudaStream_t)0)
#define DESTROY(c) ncclCommDestroy(c)
#define OK ncclSuccess
#define LASTERR() ncclGetLastError(NULL)
#endif

int main(int argc, char **argv) {
  id_t_ id;
  int rank, n;
  if (!bench_from_env(&id, sizeof(id), &rank, &n)) return 2;
  size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
  int iters = argc > 2 ? atoi(argv[2]) : 20000;
  comm_t comm;
  if (INIT(&comm, n, id, rank) != OK) return fprintf(stderr, "init: %s\n", LASTERR()), 1;
  size_t count = bytes / 4 ? bytes / 4 : 1;
  float *buf = calloc(count, 4);
  for (int i = 0; i < iters / 10; i++) ALLREDUCE(buf, count, comm);
  enum { BATCHES = 7 };
  double t[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    double t0 = bench_now_us();
    for (int i = 0; i < iters / BATCHES; i++)
      if (ALLREDUCE(buf, count, comm) != OK) return fprintf(stderr, "all-reduce: %s\n", LASTERR()), 1;
    t[b] = (bench_now_us() - t0) / (iters / BATCHES);
  }
  if (rank == 0)
    printf("%s %zu B on %d ranks: %.3f us per call (median of %d batches)\n", API, count * 4, n,
           bench_median(t, BATCHES), BATCHES);
  free(buf);
  DESTROY(comm);
  return 0;
}
