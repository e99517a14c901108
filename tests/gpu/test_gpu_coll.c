/*
 * test_gpu_coll.c — the collectives on CUDA device buffers, several ranks on
 * one GPU, run under xccl-run. Skipped (77, with the reason) unless every
 * rank can use CUDA device 0.
 *
 * The reference is xccl's host path: each case runs once on host buffers
 * (stream NULL) and once on device buffers (a stream), from the same bytes,
 * in an arena that holds canaries around the buffers, the inputs and the
 * outputs; afterwards the two arenas must hold the same bytes. Both paths
 * walk the same ring schedule with the same element operations
 * (ring_schedule.h, reduce_ops.h), so every element must match bit for bit;
 * the only freedom is a NaN's payload (a GPU adder returns its canonical
 * NaN), so two NaNs of a floating type count as equal. Inputs are random
 * bits: NaNs, infinities, subnormals and overflow all occur.
 *
 * usage: test_gpu_coll MODE, MODE one of
 *   coll     every collective x types x ops (a sample of the product), counts
 *            1 and 999 in and out of place, one large count; and a group of
 *            two collectives on two streams, launched as one kernel
 *   p2p      send/recv rings in groups (1 B .. 1 MiB), sends to self,
 *            all-to-all, gather and scatter
 *   quick    a few of each (used over sockets: the proxy path)
 *   abort    rank 0 starts an all-reduce rank 1 never joins; xcclCommAbort
 *            must stop the running kernel and return
 *   timeout  the same with XCCL_TIMEOUT=3: the kernel gives up by itself and
 *            the communicator reports xcclTimeout
 *   mixed    2 ranks, after device sends both ways (the CUDA p2p or GPUDirect
 *            area taken): a host send into a device receive arrives; a
 *            device send into a host receive arrives (staged, GPUDirect) or
 *            is refused with a sentence that says why (CUDA p2p: the data is
 *            in the receiver's GPU), never a wrong result or a hang
 *   refuse   with XCCL_CHECKSUM=1 a device all-reduce is refused with a
 *            sentence, and the communicator still works for host buffers
 *   held     (stand-in runtime only) rank 0's stream waits on other work,
 *            so its all-reduce's kernel has not started when it aborts:
 *            xcclCommAbort returns anyway, and the kernel that starts later
 *            stops at once, touching nothing of the freed communicator
 *   fault    (stand-in runtime only) rank 0's kernel faults on the GPU: the
 *            communicator reports the CUDA error and xcclCommDestroy returns
 *
 * GPU_TEST_P2P=1 (0): against the stand-in runtime (mock_cuda.c), the run
 * must (must not) have shared slots through CUDA IPC, the p2p transport.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "test_util.h"
#include "xccl.h"

static int rank, nranks;
static int groups = 1; /* GPU_TEST_GROUPS=0: the build lacks the group hook, leave groups out */
static xcclComm_t comm;
static cudaStream_t stream, stream2;

#define CU(call)                                                                                            \
  do {                                                                                                      \
    cudaError_t e_ = (call);                                                                                \
    if (e_ != cudaSuccess) {                                                                                \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                              \
    }                                                                                                       \
  } while (0)

/* A copy into device memory or a memset, finished before the next call: from
 * pageable memory cudaMemcpy may return before its DMA lands, and a memset
 * is queued on the legacy stream, which the tests' non-blocking streams do
 * not wait for. */
static void dev_put(void *d, const void *h, size_t bytes) {
  CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  CU(cudaStreamSynchronize(0));
}
static void dev_zero(void *d, size_t bytes) {
  CU(cudaMemset(d, 0, bytes));
  CU(cudaStreamSynchronize(0));
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Every rank must reach CUDA device 0, or every rank skips (a rank that
 * skipped alone would leave the others waiting). */
static void gpu_setup(void) {
  char why[320] = "";
  int ok = 1, n = 0, all = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    snprintf(why, sizeof(why), "no usable CUDA here: cudaGetDeviceCount says %s (%s)", cudaGetErrorString(e),
             cudaGetErrorName(e)),
        ok = 0;
  else if (n == 0)
    snprintf(why, sizeof(why), "no CUDA device"), ok = 0;
  else if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaFree(NULL)) != cudaSuccess)
    snprintf(why, sizeof(why),
             "rank %d cannot use CUDA device 0: %s (in exclusive-process mode a GPU takes one process; these tests put "
             "several ranks on one GPU)",
             rank, cudaGetErrorString(e)),
        ok = 0;
  XCHECK(xcclAllReduce(&ok, &all, 1, xcclInt32, xcclMin, comm, NULL));
  if (!all) {
    XCHECK(xcclCommDestroy(comm));
    test_skip(ok ? "another rank has no usable GPU" : why);
  }
  CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&stream2, cudaStreamNonBlocking));
  if (rank == 0) {
    struct cudaDeviceProp p;
    CU(cudaGetDeviceProperties(&p, 0));
    printf("device 0: %s (sm_%d%d), %d ranks on it\n", p.name, p.major, p.minor, nranks);
  }
}

/* The device work finished, and the communicator says nothing went wrong.
 * (A failure is noted by xccl's watcher just after the kernel ends; a case
 * that follows one would then be refused, and say why.) */
static void sync_ok(const char *what) {
  CU(cudaStreamSynchronize(stream));
  CU(cudaStreamSynchronize(stream2));
  xcclResult_t async = xcclSuccess;
  XCHECK(xcclCommGetAsyncError(comm, &async));
  if (async != xcclSuccess) {
    fprintf(stderr, "rank %d: %s: the communicator failed: %s: %s\n", rank, what, xcclGetErrorString(async),
            xcclGetLastError(comm));
    exit(1);
  }
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

static size_t type_size(xcclDataType_t t) {
  switch (t) {
    case xcclInt8:
    case xcclUint8:
    case xcclFloat8e4m3:
    case xcclFloat8e5m2:
      return 1;
    case xcclFloat16:
    case xcclBfloat16:
      return 2;
    case xcclInt32:
    case xcclUint32:
    case xcclFloat32:
      return 4;
    default:
      return 8;
  }
}

static const char *const type_names[xcclNumTypes] = {"int8",    "uint8",    "int32",      "uint32",
                                                     "int64",   "uint64",   "float16",    "float32",
                                                     "float64", "bfloat16", "float8e4m3", "float8e5m2"};
static const char *const op_names[xcclNumOps] = {"sum", "prod", "max", "min", "avg"};
static const char *const coll_names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"};
enum { C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_BROADCAST, C_REDUCE, C_N };

/* Element e of type t (raw bits) is a NaN. */
static int is_nan(xcclDataType_t t, const unsigned char *e) {
  uint64_t b = 0;
  memcpy(&b, e, type_size(t));
  switch (t) {
    case xcclFloat16:
      return (b & 0x7C00) == 0x7C00 && (b & 0x3FF);
    case xcclBfloat16:
      return (b & 0x7F80) == 0x7F80 && (b & 0x7F);
    case xcclFloat8e4m3:
      return (b & 0x7F) == 0x7F;
    case xcclFloat8e5m2:
      return (b & 0x7C) == 0x7C && (b & 0x3);
    case xcclFloat32:
      return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu);
    case xcclFloat64:
      return (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (b & 0xFFFFFFFFFFFFFull);
    default:
      return 0;
  }
}

/* Index of the first element where a and b differ (NaN = NaN), or -1. */
static long first_diff(xcclDataType_t t, const unsigned char *a, const unsigned char *b, size_t bytes) {
  size_t es = type_size(t);
  for (size_t i = 0; i + es <= bytes; i += es)
    if (memcmp(a + i, b + i, es) != 0 && !(is_nan(t, a + i) && is_nan(t, b + i))) return (long)(i / es);
  return -1;
}

#define CANARY 64

/* One collective, on host buffers and on device buffers, from the same arena. */
static void coll_case(int coll, xcclDataType_t t, xcclRedOp_t op, size_t count, int inplace, int root, cudaStream_t s) {
  size_t es = type_size(t), k = (size_t)nranks;
  size_t send_n = coll == C_REDUCESCATTER ? count * k : count, recv_n = coll == C_ALLGATHER ? count * k : count;
  size_t body = inplace ? (send_n > recv_n ? send_n : recv_n) * es : (send_n + recv_n) * es + CANARY;
  size_t bytes = body + 2 * CANARY;
  unsigned char *h = malloc(bytes), *back = malloc(bytes);
  uint64_t seed = mix(((uint64_t)coll << 40) ^ ((uint64_t)t << 32) ^ ((uint64_t)op << 24) ^ count ^ (uint64_t)inplace);
  for (size_t i = 0; i < bytes; i++) h[i] = (unsigned char)mix(seed + (uint64_t)rank * 0x9E3779B97F4A7C15ull + i);
  unsigned char *d = NULL;
  CU(cudaMalloc((void **)&d, bytes));
  dev_put(d, h, bytes);
  for (int pass = 0; pass < 2; pass++) {
    unsigned char *base = (pass ? d : h) + CANARY;
    void *sb = base, *rb = inplace ? base : base + send_n * es + CANARY;
    if (inplace && coll == C_ALLGATHER) sb = base + (size_t)rank * count * es;
    if (inplace && coll == C_REDUCESCATTER) rb = base + (size_t)rank * count * es;
    cudaStream_t st = pass ? s : NULL;
    xcclResult_t r = xcclInternalError;
    switch (coll) {
      case C_ALLREDUCE:
        r = xcclAllReduce(sb, rb, count, t, op, comm, st);
        break;
      case C_ALLGATHER:
        r = xcclAllGather(sb, rb, count, t, comm, st);
        break;
      case C_REDUCESCATTER:
        r = xcclReduceScatter(sb, rb, count, t, op, comm, st);
        break;
      case C_BROADCAST:
        r = xcclBroadcast(sb, rb, count, t, root, comm, st);
        break;
      default:
        r = xcclReduce(sb, rb, count, t, op, root, comm, st);
        break;
    }
    if (r != xcclSuccess) {
      fprintf(stderr, "rank %d: %s %s %s count %zu%s on %s buffers: %s: %s\n", rank, coll_names[coll], type_names[t],
              op_names[op], count, inplace ? " in place" : "", pass ? "device" : "host", xcclGetErrorString(r),
              xcclGetLastError(comm));
      exit(1);
    }
  }
  sync_ok(coll_names[coll]);
  CU(cudaMemcpy(back, d, bytes, cudaMemcpyDeviceToHost));
  long at = first_diff(t, h, back, bytes);
  CHECK(at < 0,
        "rank %d: %s %s %s count %zu%s root %d: device and host results differ at element %ld of the arena (%zu "
        "bytes, buffers from byte %d)",
        rank, coll_names[coll], type_names[t], op_names[op], count, inplace ? " in place" : "", root, at, bytes,
        CANARY);
  CU(cudaFree(d));
  free(h);
  free(back);
}

static int coll_has_op(int coll) { return coll == C_ALLREDUCE || coll == C_REDUCESCATTER || coll == C_REDUCE; }

static void mode_coll(int quick) {
  const size_t small[] = {1, 999};
  int cases = 0;
  double t0 = now_s();
  for (int coll = 0; coll < C_N; coll++) {
    for (int t = 0; t < xcclNumTypes; t++) {
      if (quick && t != xcclFloat32 && t != xcclBfloat16) continue;
      for (int op = 0; op < xcclNumOps; op++) {
        if (!coll_has_op(coll) && op > 0) break;
        /* Every type with sum, max and avg; the rest of the ops on a sample
         * of types that exercises every code path (narrow, native, integer). */
        int sample = t == xcclFloat32 || t == xcclFloat16 || t == xcclBfloat16 || t == xcclInt32 ||
                     t == xcclFloat8e4m3 || t == xcclFloat64;
        if (coll_has_op(coll) && !sample && (op == xcclProd || op == xcclMin)) continue;
        for (int c = 0; c < 2; c++)
          for (int inplace = 0; inplace < 2; inplace++) {
            coll_case(coll, (xcclDataType_t)t, (xcclRedOp_t)op, small[c], inplace, (coll + t + op) % nranks, stream);
            cases++;
          }
      }
    }
    /* Large: several loops and both channels. */
    coll_case(coll, xcclFloat32, xcclSum, 300007, 0, 0, stream);
    coll_case(coll, xcclBfloat16, coll_has_op(coll) ? xcclAvg : xcclSum, 1 << 20, 1, nranks - 1, stream2);
    cases += 2;
  }
  if (rank == 0) printf("%d collective cases on device buffers matched the host path (%.1f s)\n", cases, now_s() - t0);
  if (!groups) {
    if (rank == 0) printf("groups left out (GPU_TEST_GROUPS=0: src/core/group.c lacks the device hook)\n");
    return;
  }
  /* A group of two all-reduces on two streams: one kernel, both results. */
  size_t n = 4096;
  float *h1 = malloc(n * sizeof(float)), *h2 = malloc(n * sizeof(float)), *d1, *d2;
  for (size_t i = 0; i < n; i++) h1[i] = (float)(rank + 1), h2[i] = (float)(i % 7) * (float)(rank + 2);
  CU(cudaMalloc((void **)&d1, n * sizeof(float)));
  CU(cudaMalloc((void **)&d2, n * sizeof(float)));
  dev_put(d1, h1, n * sizeof(float));
  dev_put(d2, h2, n * sizeof(float));
  XCHECK(xcclGroupStart());
  XCHECK(xcclAllReduce(d1, d1, n, xcclFloat32, xcclSum, comm, stream));
  XCHECK(xcclAllReduce(d2, d2, n, xcclFloat32, xcclMax, comm, stream2));
  XCHECK(xcclGroupEnd());
  sync_ok("group");
  CU(cudaMemcpy(h1, d1, n * sizeof(float), cudaMemcpyDeviceToHost));
  CU(cudaMemcpy(h2, d2, n * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += h1[i] != (float)(nranks * (nranks + 1) / 2) || h2[i] != (float)(i % 7) * (float)(nranks + 1);
  CHECK(bad == 0, "rank %d: group of two all-reduces on two streams: %d wrong elements", rank, bad);
  /* One group runs host or device operations on a communicator, not both:
   * the host one is refused, the device one still runs. */
  float hv[4] = {1, 2, 3, 4};
  XCHECK(xcclGroupStart());
  XCHECK(xcclAllReduce(d1, d1, n, xcclFloat32, xcclSum, comm, stream));
  xcclResult_t r = xcclAllReduce(hv, hv, 4, xcclFloat32, xcclSum, comm, NULL);
  XCHECK(xcclGroupEnd());
  /* (With one rank neither moves anything over a connection: no conflict.) */
  CHECK(nranks == 1 || (r == xcclInvalidUsage && strstr(xcclGetLastError(comm), "either host or device")),
        "rank %d: a host all-reduce in a group with a device one returned %s (%s)", rank, xcclGetErrorString(r),
        xcclGetLastError(comm));
  sync_ok("group with a refused host operation");
  CU(cudaMemcpy(h1, d1, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(h1[7] == (float)(nranks * (nranks * (nranks + 1) / 2)), "rank %d: the group's device all-reduce gave %g", rank,
        h1[7]);
  CU(cudaFree(d1));
  CU(cudaFree(d2));
  free(h1);
  free(h2);
  if (rank == 0) printf("a group of two all-reduces on two streams: done\n");
}

/* ---- point to point ---- */

static unsigned char p2p_byte(int from, int to, size_t i) {
  return (unsigned char)mix((uint64_t)from * 7919 + (uint64_t)to * 104729 + i);
}

static unsigned char *dev_filled(size_t bytes, int to_of_block, size_t block) {
  unsigned char *h = malloc(bytes ? bytes : 1), *d = NULL;
  for (size_t i = 0; i < bytes; i++)
    h[i] = p2p_byte(rank, block ? (int)(i / block) : to_of_block, block ? i % block : i);
  CU(cudaMalloc((void **)&d, bytes ? bytes : 1));
  dev_put(d, h, bytes);
  free(h);
  return d;
}

/* Bytes of d that differ from what `from(j)` sent to this rank. */
static size_t dev_check(const unsigned char *d, size_t bytes, size_t block, int single_from) {
  unsigned char *h = malloc(bytes ? bytes : 1);
  CU(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < bytes; i++) {
    int from = block ? (int)(i / block) : single_from;
    bad += h[i] != p2p_byte(from, rank, block ? i % block : i);
  }
  free(h);
  return bad;
}

static void mode_p2p(int quick) {
  if (!groups) {
    if (rank == 0) printf("sends and receives left out (GPU_TEST_GROUPS=0: src/core/group.c lacks the device hook)\n");
    return;
  }
  const size_t sizes[] = {1, 1000, (1 << 20) + 3};
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  for (int si = 0; si < 3; si++) {
    size_t n = sizes[si];
    unsigned char *sb = dev_filled(n, next, 0), *rb = NULL;
    CU(cudaMalloc((void **)&rb, n));
    XCHECK(xcclGroupStart());
    XCHECK(xcclSend(sb, n, xcclUint8, next, comm, stream));
    XCHECK(xcclRecv(rb, n, xcclUint8, prev, comm, stream));
    XCHECK(xcclGroupEnd());
    sync_ok("send/recv ring");
    CHECK(dev_check(rb, n, 0, prev) == 0, "rank %d: ring of %zu bytes from rank %d: wrong bytes", rank, n, prev);
    CU(cudaFree(sb));
    CU(cudaFree(rb));
    if (quick) break;
  }
  /* A send to itself, in a group with a receive from itself. */
  unsigned char *sb = dev_filled(4096, rank, 0), *rb = NULL;
  CU(cudaMalloc((void **)&rb, 4096));
  XCHECK(xcclGroupStart());
  XCHECK(xcclSend(sb, 1024, xcclFloat32, rank, comm, stream));
  XCHECK(xcclRecv(rb, 1024, xcclFloat32, rank, comm, stream));
  XCHECK(xcclGroupEnd());
  sync_ok("send to self");
  CHECK(dev_check(rb, 4096, 0, rank) == 0, "rank %d: send to itself: wrong bytes", rank);
  CU(cudaFree(sb));
  CU(cudaFree(rb));
  /* All-to-all, gather and scatter (groups of sends and receives inside). */
  size_t blk = quick ? 1000 : 70001;
  size_t all = blk * (size_t)nranks;
  sb = dev_filled(all, 0, blk);
  CU(cudaMalloc((void **)&rb, all));
  XCHECK(xcclAllToAll(sb, rb, blk, xcclUint8, comm, stream));
  sync_ok("all-to-all");
  CHECK(dev_check(rb, all, blk, 0) == 0, "rank %d: all-to-all of %zu-byte blocks: wrong bytes", rank, blk);
  CU(cudaFree(sb));
  CU(cudaFree(rb));
  int root = nranks - 1;
  sb = dev_filled(blk, root, 0);
  CU(cudaMalloc((void **)&rb, all));
  XCHECK(xcclGather(sb, rb, blk, xcclUint8, root, comm, stream));
  sync_ok("gather");
  if (rank == root) {
    unsigned char *h = malloc(all);
    CU(cudaMemcpy(h, rb, all, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < all; i++) bad += h[i] != p2p_byte((int)(i / blk), root, i % blk);
    CHECK(bad == 0, "gather at rank %d: %zu wrong bytes", root, bad);
    free(h);
  }
  CU(cudaFree(sb));
  CU(cudaFree(rb));
  sb = dev_filled(all, 0, blk);
  CU(cudaMalloc((void **)&rb, blk));
  XCHECK(xcclScatter(sb, rb, blk, xcclUint8, root, comm, stream));
  sync_ok("scatter");
  CHECK(dev_check(rb, blk, 0, root) == 0, "rank %d: scatter from rank %d: wrong bytes", rank, root);
  CU(cudaFree(sb));
  CU(cudaFree(rb));
  if (rank == 0) printf("sends, receives, all-to-all, gather and scatter on device buffers: done\n");
}

/* ---- abort and deadline ---- */

/* Rank 0 starts an all-reduce that rank 1 never joins. */
static float *start_lonely_allreduce(size_t n) {
  float *d = NULL;
  CU(cudaMalloc((void **)&d, n * sizeof(float)));
  dev_zero(d, n * sizeof(float));
  double t0 = now_s();
  XCHECK(xcclAllReduce(d, d, n, xcclFloat32, xcclSum, comm, stream));
  double took = now_s() - t0;
  CHECK(took < 2.0, "a device all-reduce took %.2f s to return: it should only enqueue", took);
  return d;
}

static void mode_abort(void) {
  if (rank != 0) {
    sleep(4); /* never joins; then leaves (its peer aborted meanwhile) */
    xcclCommAbort(comm);
    return;
  }
  float *d = start_lonely_allreduce(1 << 20);
  sleep(1);
  CHECK(cudaStreamQuery(stream) == cudaErrorNotReady, "the kernel should still be waiting for rank 1");
  double t0 = now_s();
  XCHECK(xcclCommAbort(comm));
  double took = now_s() - t0;
  CHECK(took < 10.0, "xcclCommAbort took %.2f s with a kernel running", took);
  /* The kernel saw the abort and ended. */
  t0 = now_s();
  cudaError_t e = cudaErrorNotReady;
  while ((e = cudaStreamQuery(stream)) == cudaErrorNotReady && now_s() - t0 < 20) usleep(10000);
  CHECK(e == cudaSuccess, "after xcclCommAbort the kernel %s",
        e == cudaErrorNotReady ? "still runs after 20 s" : cudaGetErrorString(e));
  printf("abort: xcclCommAbort returned in %.2f s and the kernel ended\n", took);
  CU(cudaFree(d));
}

static void mode_timeout(void) {
  if (rank != 0) {
    sleep(12); /* well past the deadline, even on a loaded machine */
    xcclCommAbort(comm);
    return;
  }
  float *d = start_lonely_allreduce(4096);
  double t0 = now_s();
  CU(cudaStreamSynchronize(stream));
  double took = now_s() - t0;
  CHECK(took > 2.0 && took < 11.0, "the kernel waited %.2f s for a silent peer with XCCL_TIMEOUT=3", took);
  xcclResult_t async = xcclSuccess;
  for (int i = 0; i < 200 && async == xcclSuccess; i++) {
    XCHECK(xcclCommGetAsyncError(comm, &async));
    if (async == xcclSuccess) usleep(10000);
  }
  const char *msg = xcclGetLastError(comm);
  CHECK(async == xcclTimeout, "async error %s after the deadline (%s)", xcclGetErrorString(async), msg);
  CHECK(strstr(msg, "XCCL_TIMEOUT") && strstr(msg, "rank 1"), "the message '%s' does not name the wait and the peer",
        msg);
  printf("timeout after %.2f s: %s\n", took, msg);
  /* The communicator is failed: new work is refused. */
  xcclResult_t r = xcclAllReduce(d, d, 16, xcclFloat32, xcclSum, comm, stream);
  CHECK(r == xcclInvalidUsage, "a call on the failed communicator returned %s", xcclGetErrorString(r));
  xcclCommAbort(comm);
  CU(cudaFree(d));
}

/* One device send each way between ranks 0 and 1, n bytes. */
static void device_exchange(unsigned char *d, size_t n) {
  XCHECK(xcclGroupStart());
  XCHECK(xcclSend(d, n, xcclUint8, 1 - rank, comm, stream));
  XCHECK(xcclRecv(d + n, n, xcclUint8, 1 - rank, comm, stream));
  XCHECK(xcclGroupEnd());
  sync_ok("device exchange");
}

static void mode_mixed(void) {
  enum { N = 4096 };
  unsigned char *d, host[N];
  CU(cudaMalloc((void **)&d, 2 * N));
  for (int i = 0; i < 4; i++) device_exchange(d, N); /* offered, found, taken, used */
  /* A host send into a device receive: the data is in its slot, unmarked. */
  if (rank == 0) {
    for (int i = 0; i < N; i++) host[i] = p2p_byte(0, 1, (size_t)i);
    XCHECK(xcclSend(host, N, xcclUint8, 1, comm, NULL));
  } else {
    dev_zero(d, N);
    XCHECK(xcclRecv(d, N, xcclUint8, 0, comm, stream));
    sync_ok("a device receive of a host send");
    CU(cudaMemcpy(host, d, N, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += host[i] != p2p_byte(0, 1, (size_t)i);
    CHECK(bad == 0, "a host send into a device receive: %d of %d bytes wrong", bad, N);
  }
  /* A device send (of what rank 1 just received) into a host receive. */
  if (rank == 1) {
    XCHECK(xcclSend(d, N, xcclUint8, 0, comm, stream));
    sync_ok("a device send to a host receive");
  } else {
    memset(host, 0, sizeof(host));
    xcclResult_t r = xcclRecv(host, N, xcclUint8, 1, comm, NULL);
    const char *msg = xcclGetLastError(comm);
    int bad = 0;
    for (int i = 0; r == xcclSuccess && i < N; i++) bad += host[i] != p2p_byte(0, 1, (size_t)i);
    CHECK(r == xcclSuccess ? bad == 0
                           : r == xcclInvalidUsage && strstr(msg, "from a device operation") && strstr(msg, "host buffers"),
          "a host receive of a device send returned %s, %d of %d bytes wrong: %s", xcclGetErrorString(r), bad, N, msg);
    printf("host receive of a device send: %s\n", r == xcclSuccess ? "arrived" : msg);
  }
  xcclCommAbort(comm);
  CU(cudaFree(d));
}

static void mode_refuse(void) {
  float *d, h[64];
  CU(cudaMalloc((void **)&d, sizeof(h)));
  xcclResult_t r = xcclAllReduce(d, d, 64, xcclFloat32, xcclSum, comm, stream);
  const char *msg = xcclGetLastError(comm);
  CHECK(r == xcclInvalidUsage && strstr(msg, "XCCL_CHECKSUM"), "a device all-reduce with XCCL_CHECKSUM=1: %s: %s",
        xcclGetErrorString(r), msg);
  for (int i = 0; i < 64; i++) h[i] = (float)(rank + i);
  r = xcclAllReduce(h, h, 64, xcclFloat32, xcclSum, comm, NULL); /* refused without harm: host buffers still work */
  CHECK(r == xcclSuccess && h[5] == (float)(nranks * 5 + nranks * (nranks - 1) / 2), "then a host all-reduce: %s, %g",
        xcclGetErrorString(r), (double)h[5]);
  CU(cudaFree(d));
}

/* A device all-reduce of floats whose sum depends on the order, back in h. */
static void device_allreduce(float *d, float *h, size_t n) {
  for (size_t i = 0; i < n; i++) h[i] = (float)(rank + 1) * (1.0f + (float)(i % 97) / 3.0f);
  dev_put(d, h, n * sizeof(float));
  XCHECK(xcclAllReduce(d, d, n, xcclFloat32, xcclSum, comm, stream));
  sync_ok("a device all-reduce");
  CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
}

/* XCCL_SUSPEND_MEM between device all-reduces (issue 48): the device side's
 * fifo registrations go with the connections and come back at the next
 * launch; the results keep their bits. */
static void mode_suspend(void) {
  enum { N = 100003 };
  float *d, *first = malloc(N * sizeof(float)), *again = malloc(N * sizeof(float));
  CU(cudaMalloc((void **)&d, N * sizeof(float)));
  for (int i = 0; i < 4; i++) device_allreduce(d, first, N); /* CUDA IPC: offered, found, taken, used */
  for (int round = 0; round < 2; round++) {
    XCHECK(xcclCommSuspend(comm, XCCL_SUSPEND_MEM));
    uint64_t held = 1;
    XCHECK(xcclCommMemStats(comm, xcclStatMemSuspend, &held));
    CHECK(held == 0, "round %d: %llu bytes held after XCCL_SUSPEND_MEM", round, (unsigned long long)held);
    xcclResult_t r = xcclAllReduce(d, d, N, xcclFloat32, xcclSum, comm, stream);
    CHECK(r == xcclInvalidUsage, "round %d: a device all-reduce while suspended: %s", round, xcclGetErrorString(r));
    XCHECK(xcclCommResume(comm));
    for (int i = 0; i < 4; i++) { /* the device side starts over: CUDA IPC is offered again */
      device_allreduce(d, again, N);
      CHECK(memcmp(first, again, N * sizeof(float)) == 0, "round %d: device all-reduce %d after resume differs",
            round, i);
    }
  }
  printf("device all-reduce: the same bits after 2 suspends with XCCL_SUSPEND_MEM\n");
  CU(cudaFree(d));
  free(first);
  free(again);
}

/* The stand-in runtime can hold a stream; real builds lack it. */
void mock_cuda_hold_stream(cudaStream_t st, _Atomic int *hold) __attribute__((weak));

static void mode_held(void) {
  if (!mock_cuda_hold_stream) test_skip("a held stream is made only by the stand-in runtime (mock_cuda.c)");
  if (rank != 0) {
    sleep(1);
    xcclCommAbort(comm);
    return;
  }
  static _Atomic int hold = 1;
  float *d;
  CU(cudaMalloc((void **)&d, 4096 * sizeof(float)));
  mock_cuda_hold_stream(stream, &hold);
  XCHECK(xcclAllReduce(d, d, 4096, xcclFloat32, xcclSum, comm, stream));
  usleep(200000);
  double t0 = now_s();
  XCHECK(xcclCommAbort(comm));
  double took = now_s() - t0;
  CHECK(took < 6.0, "xcclCommAbort with a kernel that never started took %.2f s", took);
  printf("abort with a held stream returned in %.2f s\n", took);
  atomic_store(&hold, 0); /* the kernel runs now, after its communicator is gone */
  CU(cudaStreamSynchronize(stream));
  CU(cudaFree(d));
}

/* The stand-in runtime can make the next kernel fault; real builds lack it. */
void mock_cuda_fault_next_kernel(void) __attribute__((weak));

static void mode_fault(void) {
  if (!mock_cuda_fault_next_kernel) test_skip("a kernel fault is made only by the stand-in runtime (mock_cuda.c)");
  if (rank != 0) {
    sleep(3); /* away: rank 0's kernel dies before it needs anyone */
    xcclCommAbort(comm);
    return;
  }
  float *d;
  CU(cudaMalloc((void **)&d, 4096 * sizeof(float)));
  mock_cuda_fault_next_kernel();
  XCHECK(xcclAllReduce(d, d, 4096, xcclFloat32, xcclSum, comm, stream));
  xcclResult_t async = xcclSuccess;
  double t0 = now_s();
  while (async == xcclSuccess && now_s() - t0 < 10) {
    XCHECK(xcclCommGetAsyncError(comm, &async));
    if (async == xcclSuccess) usleep(10000);
  }
  const char *msg = xcclGetLastError(comm);
  CHECK(async == xcclUnhandledCudaError && strstr(msg, "failed on the GPU") && strstr(msg, "sticky"),
        "after a kernel fault: %s: %s", xcclGetErrorString(async), msg);
  printf("kernel fault after %.2f s: %s\n", now_s() - t0, msg);
  t0 = now_s();
  XCHECK(xcclCommDestroy(comm)); /* the watcher let go of it: no hang */
  printf("destroyed in %.2f s\n", now_s() - t0);
}

/* The stand-in runtime counts CUDA IPC exports and opens; real builds lack it. */
void mock_cuda_ipc_counts(int *exports, int *opens) __attribute__((weak));

static void check_p2p_used(void) {
  const char *want = getenv("GPU_TEST_P2P");
  if (!want || !mock_cuda_ipc_counts || nranks < 2) return;
  int exports = 0, opens = 0;
  mock_cuda_ipc_counts(&exports, &opens);
  if (atoi(want))
    CHECK(exports > 0 && opens > 0, "rank %d: expected GPU slots shared through CUDA IPC, saw %d exports, %d opens",
          rank, exports, opens);
  else
    CHECK(exports == 0 && opens == 0, "rank %d: expected no CUDA IPC, saw %d exports, %d opens", rank, exports, opens);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "coll";
  const char *g = getenv("GPU_TEST_GROUPS");
  groups = !g || atoi(g) != 0;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommUserRank(comm, &rank));
  XCHECK(xcclCommCount(comm, &nranks));
  gpu_setup();
  if (!strcmp(mode, "coll")) {
    mode_coll(0);
  } else if (!strcmp(mode, "p2p")) {
    if (!groups) {
      XCHECK(xcclCommDestroy(comm));
      test_skip("sends and receives on the device need the group hook in src/core/group.c (enqueue_cuda_group_end)");
    }
    mode_p2p(0);
  } else if (!strcmp(mode, "quick")) {
    mode_coll(1);
    mode_p2p(1);
  } else if (!strcmp(mode, "refuse")) {
    mode_refuse();
  } else if (!strcmp(mode, "suspend")) {
    if (nranks < 2) test_skip("needs 2 ranks");
    mode_suspend();
  } else if (!strcmp(mode, "held")) {
    if (nranks != 2) test_skip("needs 2 ranks");
    mode_held();
    return test_finish(mode);
  } else if (!strcmp(mode, "fault")) {
    if (nranks != 2) test_skip("needs 2 ranks");
    mode_fault();
    return test_finish(mode);
  } else if (!strcmp(mode, "mixed")) {
    if (nranks != 2) test_skip("needs 2 ranks");
    mode_mixed();
    return test_finish(mode);
  } else if (!strcmp(mode, "abort") || !strcmp(mode, "timeout")) {
    if (nranks < 2) test_skip("needs 2 ranks");
    if (!strcmp(mode, "abort"))
      mode_abort();
    else
      mode_timeout();
    return test_finish(mode);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  check_p2p_used();
  XCHECK(xcclCommDestroy(comm));
  return test_finish(mode);
}
