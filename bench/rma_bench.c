/*
 * rma_bench.c — one-sided put + signal / wait against a send/recv pair of
 * the same size, on 2 ranks, through xccl.h (built as xccl-rma-bench).
 * Run under xccl-run, on a quiet machine:
 *
 *   xccl-run -n 2 xccl-rma-bench [ITERS]
 *   XCCL_TRANSPORT=socket xccl-run -n 2 xccl-rma-bench      (over sockets)
 *
 * For 8 B, 64 KiB and 16 MiB it prints, on rank 0:
 *   latency:   half a ping-pong (rank 0 puts to rank 1, which waits and
 *              puts back; and the same with xcclSend/xcclRecv), in us;
 *   bandwidth: rank 0 issues a batch of puts (sends), rank 1 waits for all
 *              of them (receives) and answers with one signal (a 1-byte
 *              send), in GB/s of payload;
 * each the median of 5 batches.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "xccl.h"

#define CHECK(call)                                                                          \
  do {                                                                                       \
    xcclResult_t r_ = (call);                                                                \
    if (r_ != xcclSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, xcclGetLastError(NULL)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { BATCHES = 5 };

typedef struct {
  xcclComm_t comm;
  xcclWindow_t win;
  char *buf; /* the bytes put and sent from */
  char *rbuf; /* received into */
  int rank, peer;
} bench_t;

/* One leg of a ping-pong, or a batch item: one put + signal (sig 0), or
 * the wait for k of them. */
static void put(bench_t *b, size_t bytes) {
  CHECK(xcclPutSignal(b->buf, bytes, xcclUint8, b->peer, b->win, 0, 0, 0, 0, b->comm, NULL));
}
static void wait_puts(bench_t *b, int k) {
  xcclWaitSignalDesc_t d = {k, b->peer, 0, 0};
  CHECK(xcclWaitSignal(1, &d, b->comm, NULL));
}
static void do_send(bench_t *b, size_t bytes) { CHECK(xcclSend(b->buf, bytes, xcclUint8, b->peer, b->comm, NULL)); }
static void do_recv(bench_t *b, size_t bytes) { CHECK(xcclRecv(b->rbuf, bytes, xcclUint8, b->peer, b->comm, NULL)); }

/* Half a round trip, in us: rank 0 goes first. */
static double latency(bench_t *b, size_t bytes, int iters, int one_sided) {
  double t[BATCHES];
  for (int k = -1; k < BATCHES; k++) { /* k = -1: warm-up */
    CHECK(xcclBarrier(b->comm));
    double t0 = bench_now_us();
    for (int i = 0; i < iters; i++) {
      if (b->rank == 0) {
        if (one_sided) put(b, bytes), wait_puts(b, 1);
        else do_send(b, bytes), do_recv(b, bytes);
      } else {
        if (one_sided) wait_puts(b, 1), put(b, bytes);
        else do_recv(b, bytes), do_send(b, bytes);
      }
    }
    if (k >= 0) t[k] = (bench_now_us() - t0) / iters / 2;
  }
  return bench_median(t, BATCHES);
}

/* Payload GB/s of a batch of iters transfers from rank 0 to rank 1. */
static double bandwidth(bench_t *b, size_t bytes, int iters, int one_sided) {
  double t[BATCHES];
  for (int k = -1; k < BATCHES; k++) {
    CHECK(xcclBarrier(b->comm));
    double t0 = bench_now_us();
    if (b->rank == 0) {
      for (int i = 0; i < iters; i++) one_sided ? put(b, bytes) : do_send(b, bytes);
      if (one_sided) wait_puts(b, 1);
      else CHECK(xcclRecv(b->rbuf, 1, xcclUint8, b->peer, b->comm, NULL));
    } else {
      if (one_sided) {
        wait_puts(b, iters);
        CHECK(xcclSignal(b->peer, 0, 0, 0, b->comm, NULL));
      } else {
        for (int i = 0; i < iters; i++) do_recv(b, bytes);
        CHECK(xcclSend(b->buf, 1, xcclUint8, b->peer, b->comm, NULL));
      }
    }
    if (k >= 0) t[k] = (double)bytes * iters / (bench_now_us() - t0) / 1e3;
  }
  return bench_median(t, BATCHES);
}

int main(int argc, char **argv) {
  xcclUniqueId id;
  int rank, n;
  if (!bench_from_env(&id, sizeof(id), &rank, &n)) return 2;
  int scale = argc > 1 ? atoi(argv[1]) : 1000;
  bench_t b = {.rank = rank};
  if (n != 2) return fprintf(stderr, "xccl-rma-bench runs on 2 ranks\n"), 2;
  b.peer = 1 - b.rank;
  CHECK(xcclCommInitRank(&b.comm, 2, id, b.rank));
  static const size_t sizes[] = {8, 64 << 10, 16 << 20};
  size_t max = 16 << 20;
  char *win_buf = aligned_alloc(4096, max); /* host memory (xcclMemAlloc's is the GPU's where CUDA runs) */
  if (!win_buf) return fprintf(stderr, "out of memory\n"), 1;
  CHECK(xcclCommWindowRegister(b.comm, win_buf, max, &b.win, XCCL_WIN_DEFAULT));
  b.buf = malloc(max), b.rbuf = malloc(max);
  memset(b.buf, 1, max);
  if (b.rank == 0)
    printf("%10s %14s %14s %14s %14s   (half round trip; batch payload; median of %d)\n", "bytes", "put+sig us",
           "send/recv us", "put+sig GB/s", "send/recv GB/s", BATCHES);
  for (int s = 0; s < 3; s++) {
    size_t bytes = sizes[s];
    int lat_iters = bytes <= 65536 ? scale : scale / 100 + 1;
    int bw_iters = bytes <= 65536 ? scale : scale / 100 + 2;
    double lp = latency(&b, bytes, lat_iters, 1), ls = latency(&b, bytes, lat_iters, 0);
    double bp = bandwidth(&b, bytes, bw_iters, 1), bs = bandwidth(&b, bytes, bw_iters, 0);
    if (b.rank == 0) printf("%10zu %14.2f %14.2f %14.4g %14.4g\n", bytes, lp, ls, bp, bs);
  }
  CHECK(xcclCommWindowDeregister(b.comm, b.win));
  CHECK(xcclCommDestroy(b.comm));
  free(win_buf);
  free(b.buf), free(b.rbuf);
  return 0;
}
