/*
 * test_ops16.c — what issue 16 added to the communicator, across real
 * processes under xccl-run:
 *
 *   premulsum  xcclRedOpCreatePreMulSum ops on all-reduce, reduce (every
 *              root) and reduce-scatter, in and out of place, seven types,
 *              each rank its own scalar; HostImmediate keeps the scalar of
 *              create, Device follows it; two ops in one group; refusals
 *              (wrong datatype, destroyed op, another communicator's op,
 *              destroying a built-in op) leave the communicator usable.
 *   reg        xcclCommRegister/Deregister and xcclCommWindowRegister/
 *              Deregister, their refusals, symmetric windows of different
 *              sizes refused on every rank naming the ranks.
 *   simulate   xcclGroupSimulateEnd: an estimate > 0 that grows with the
 *              count, nothing run (receive buffers untouched), then a real
 *              operation works.
 *
 * Expected values are computed here from inputs chosen so that every sum
 * is exact (small multiples of 1/2 for floats; wrapping integers), so the
 * result does not depend on the order the ring adds in; fp16 and bf16 go
 * through the library's own conversions (fp_convert.h) for encoding only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_convert.h"
#include "reg.h"
#include "test_util.h"
#include "xccl.h"

static int nranks, rank;
/* A second communicator over the same ranks (xcclCommShrink excluding
 * none), destroyed by the mode that uses it. */
static xcclComm_t second;

static void second_comm(xcclComm_t comm) { XCHECK(xcclCommShrink(comm, NULL, 0, &second)); }

/* ---- values ---- */

static const xcclDataType_t types[] = {xcclFloat32, xcclFloat64, xcclFloat16, xcclBfloat16,
                                       xcclInt32,   xcclInt64,   xcclUint8};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static int is_float(xcclDataType_t t) {
  return t == xcclFloat32 || t == xcclFloat64 || t == xcclFloat16 || t == xcclBfloat16;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* Element i of rank r's input: an integer in [-6, 6] for floats (times a
 * scalar <= 4.5 and summed over <= 4 ranks it stays a multiple of 1/2 below
 * 128: exact in bf16's 8 bits), any value for integers. */
static double input(int r, size_t i, xcclDataType_t t, int salt) {
  uint64_t h = mix((uint64_t)r * 0x9E3779B97F4A7C15ull + i * 0x632BE59BD9B4E019ull + (uint64_t)t * 1009 + (uint64_t)salt);
  if (is_float(t)) return (double)(int)(h % 13) - 6;
  return (double)(int64_t)(h % 2001) - 1000;
}

static double scalar_of(int r, xcclDataType_t t) { return is_float(t) ? r + 1.5 : r + 2; }

static void put(void *p, size_t i, xcclDataType_t t, double v) {
  switch (t) {
    case xcclFloat32: ((float *)p)[i] = (float)v; break;
    case xcclFloat64: ((double *)p)[i] = v; break;
    case xcclFloat16: ((uint16_t *)p)[i] = fp16_from_float((float)v); break;
    case xcclBfloat16: ((uint16_t *)p)[i] = bf16_from_float((float)v); break;
    case xcclInt32: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
    case xcclInt64: ((uint64_t *)p)[i] = (uint64_t)(int64_t)v; break;
    case xcclUint8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
    default: abort();
  }
}

/* The element as raw bits, for comparing. */
static uint64_t bits(const void *p, size_t i, xcclDataType_t t) {
  switch (xcclTypeSize(t)) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

/* The expected element: sum over ranks of scalar_r * x_r, as bits of t.
 * Integers: wrapping products and sums in the type's width. */
static uint64_t expected(size_t i, xcclDataType_t t, int salt, double (*scal)(int, xcclDataType_t)) {
  unsigned char one[8];
  if (is_float(t)) {
    double acc = 0;
    for (int r = 0; r < nranks; r++) acc += scal(r, t) * input(r, i, t, salt);
    put(one, 0, t, acc);
    return bits(one, 0, t);
  }
  uint64_t acc = 0;
  for (int r = 0; r < nranks; r++) acc += (uint64_t)(int64_t)scal(r, t) * (uint64_t)(int64_t)input(r, i, t, salt);
  size_t es = xcclTypeSize(t);
  return es == 8 ? acc : acc & ((1ull << (8 * es)) - 1);
}

static void fill_input(void *p, size_t n, xcclDataType_t t, int salt, size_t first) {
  for (size_t i = 0; i < n; i++) put(p, i, t, input(rank, first + i, t, salt));
}

static xcclRedOp_t make_op(xcclComm_t comm, xcclDataType_t t, double s, xcclScalarResidence_t res, void *store) {
  put(store, 0, t, s);
  xcclRedOp_t op;
  XCHECK(xcclRedOpCreatePreMulSum(&op, store, t, res, comm));
  CHECK((int)op >= (int)xcclNumOps, "op %d below xcclNumOps", (int)op);
  return op;
}

/* ---- premulsum ---- */

typedef enum { K_ALLREDUCE, K_REDUCE, K_REDUCESCATTER } kind_t;
static const char *const kind_names[] = {"allreduce", "reduce", "reducescatter"};

/* Runs one collective with op and checks it; count is the per-rank result
 * count (reduce-scatter: recvcount). */
static void run_case(xcclComm_t comm, kind_t kind, xcclDataType_t t, xcclRedOp_t op, int inplace, int root,
                     size_t count, int salt, double (*scal)(int, xcclDataType_t)) {
  size_t es = xcclTypeSize(t), n = (size_t)nranks;
  size_t send_n = kind == K_REDUCESCATTER ? count * n : count;
  unsigned char *send = malloc(send_n * es + 1), *recv = malloc(send_n * es + 1), *orig = malloc(send_n * es + 1);
  fill_input(send, send_n, t, salt, 0);
  memcpy(orig, send, send_n * es);
  memset(recv, 0x5A, send_n * es);
  void *rb = inplace ? (kind == K_REDUCESCATTER ? send + (size_t)rank * count * es : send) : recv;
  xcclResult_t res;
  if (kind == K_ALLREDUCE) res = xcclAllReduce(send, rb, count, t, op, comm, NULL);
  else if (kind == K_REDUCE) res = xcclReduce(send, rb, count, t, op, root, comm, NULL);
  else res = xcclReduceScatter(send, rb, count, t, op, comm, NULL);
  CHECK(res == xcclSuccess, "%s type %d inplace %d root %d: %s", kind_names[kind], (int)t, inplace, root,
        xcclGetLastError(comm));
  int bad = 0;
  int has_result = kind != K_REDUCE || rank == root;
  size_t first = kind == K_REDUCESCATTER ? (size_t)rank * count : 0;
  for (size_t i = 0; has_result && i < count && bad < 3; i++) {
    uint64_t want = expected(first + i, t, salt, scal), got = bits(rb, i, t);
    if (got != want) {
      bad++;
      CHECK(got == want, "%s type %d inplace %d root %d n%d: element %zu is 0x%llx, expected 0x%llx", kind_names[kind],
            (int)t, inplace, root, nranks, i, (unsigned long long)got, (unsigned long long)want);
    }
  }
  /* The input is read, never scaled in place: out of place it is as it was,
   * and so is a non-root's in-place buffer of reduce. */
  if (!inplace) CHECK(memcmp(send, orig, send_n * es) == 0, "%s type %d: sendbuff changed", kind_names[kind], (int)t);
  if (inplace && kind == K_REDUCE && rank != root)
    CHECK(memcmp(send, orig, send_n * es) == 0, "reduce type %d: a non-root's in-place buffer changed", (int)t);
  if (!inplace && kind == K_REDUCE && rank != root)
    CHECK(recv[0] == 0x5A, "reduce type %d: a non-root's recvbuff was written", (int)t);
  free(send);
  free(recv);
  free(orig);
}

static double scalar_new(int r, xcclDataType_t t) { return scalar_of(r, t) + (is_float(t) ? 0.5 : 1); }

static void mode_premulsum(xcclComm_t comm) {
  size_t counts[] = {1, 257};
  for (size_t ti = 0; ti < NTYPES; ti++) {
    xcclDataType_t t = types[ti];
    unsigned char store[8];
    xcclRedOp_t op = make_op(comm, t, scalar_of(rank, t), xcclScalarHostImmediate, store);
    for (size_t ci = 0; ci < 2; ci++)
      for (int inplace = 0; inplace < 2; inplace++) {
        run_case(comm, K_ALLREDUCE, t, op, inplace, -1, counts[ci], (int)ci, scalar_of);
        run_case(comm, K_REDUCESCATTER, t, op, inplace, -1, counts[ci], (int)ci + 10, scalar_of);
        for (int root = 0; root < nranks; root++)
          run_case(comm, K_REDUCE, t, op, inplace, root, counts[ci], (int)ci + 20 + root, scalar_of);
      }
    XCHECK(xcclRedOpDestroy(op, comm));
  }

  /* HostImmediate: the scalar of create, whatever the variable holds later. */
  for (size_t ti = 0; ti < NTYPES; ti++) {
    xcclDataType_t t = types[ti];
    unsigned char store[8];
    xcclRedOp_t imm = make_op(comm, t, scalar_of(rank, t), xcclScalarHostImmediate, store);
    put(store, 0, t, 100);
    run_case(comm, K_ALLREDUCE, t, imm, 0, -1, 33, 40, scalar_of);
    XCHECK(xcclRedOpDestroy(imm, comm));
    /* Device: read when each operation starts. */
    xcclRedOp_t dev = make_op(comm, t, scalar_of(rank, t), xcclScalarDevice, store);
    run_case(comm, K_ALLREDUCE, t, dev, 0, -1, 33, 41, scalar_of);
    put(store, 0, t, scalar_new(rank, t));
    run_case(comm, K_ALLREDUCE, t, dev, 1, -1, 33, 42, scalar_new);
    run_case(comm, K_REDUCESCATTER, t, dev, 0, -1, 9, 43, scalar_new);
    XCHECK(xcclRedOpDestroy(dev, comm));
  }

  /* Two ops in one group: each runs with its own scalar, read at xcclGroupEnd. */
  {
    float sf = (float)scalar_of(rank, xcclFloat32);
    int32_t si = (int32_t)scalar_of(rank, xcclInt32);
    xcclRedOp_t of, oi;
    XCHECK(xcclRedOpCreatePreMulSum(&of, &sf, xcclFloat32, xcclScalarHostImmediate, comm));
    XCHECK(xcclRedOpCreatePreMulSum(&oi, &si, xcclInt32, xcclScalarDevice, comm));
    size_t n = 100;
    float *fin = malloc(n * 4), *fout = malloc(n * 4);
    int32_t *iin = malloc(n * 4), *iout = malloc(n * 4);
    fill_input(fin, n, xcclFloat32, 50, 0);
    fill_input(iin, n, xcclInt32, 51, 0);
    XCHECK(xcclGroupStart());
    XCHECK(xcclAllReduce(fin, fout, n, xcclFloat32, of, comm, NULL));
    XCHECK(xcclAllReduce(iin, iout, n, xcclInt32, oi, comm, NULL));
    si = (int32_t)scalar_new(rank, xcclInt32); /* before the group runs: the new value counts */
    XCHECK(xcclGroupEnd());
    int bad = 0;
    for (size_t i = 0; i < n && bad < 3; i++) {
      uint64_t wf = expected(i, xcclFloat32, 50, scalar_of), wi = expected(i, xcclInt32, 51, scalar_new);
      if (bits(fout, i, xcclFloat32) != wf || bits(iout, i, xcclInt32) != wi) bad++;
      CHECK(bits(fout, i, xcclFloat32) == wf, "group float element %zu", i);
      CHECK(bits(iout, i, xcclInt32) == wi, "group int32 element %zu", i);
    }
    /* A group rolled back by xcclGroupSimulateEnd holds no scratch (asan). */
    float t_us = 0;
    XCHECK(xcclGroupStart());
    XCHECK(xcclAllReduce(fin, fout, n, xcclFloat32, of, comm, NULL));
    XCHECK(xcclGroupSimulateEnd(&t_us));
    XCHECK(xcclRedOpDestroy(of, comm));
    XCHECK(xcclRedOpDestroy(oi, comm));
    free(fin), free(fout), free(iin), free(iout);
  }

  /* Refusals: every rank refuses the same call, and the comm stays usable. */
  {
    float s = 2, buf[8] = {0};
    xcclRedOp_t op;
    XCHECK(xcclRedOpCreatePreMulSum(&op, &s, xcclFloat32, xcclScalarHostImmediate, comm));
    xcclResult_t r = xcclAllReduce(buf, buf, 8, xcclFloat64, op, comm, NULL);
    CHECK(r == xcclInvalidArgument, "wrong datatype: %d", r);
    CHECK(strstr(xcclGetLastError(comm), "float32"), "wrong datatype message: %s", xcclGetLastError(comm));
    r = xcclRedOpDestroy(xcclSum, comm);
    CHECK(r == xcclInvalidArgument, "destroying xcclSum: %d", r);
    r = xcclRedOpDestroy((xcclRedOp_t)12345, comm);
    CHECK(r == xcclInvalidArgument, "destroying an op never made: %d", r);
    r = xcclRedOpCreatePreMulSum(&op, NULL, xcclFloat32, xcclScalarHostImmediate, comm);
    CHECK(r == xcclInvalidArgument, "NULL scalar: %d", r);
    r = xcclRedOpCreatePreMulSum(&op, &s, xcclFloat32, (xcclScalarResidence_t)7, comm);
    CHECK(r == xcclInvalidArgument, "bad residence: %d", r);

    /* Another communicator's op, and ours on it. */
    r = xcclAllReduce(buf, buf, 8, xcclFloat32, op, second, NULL);
    CHECK(r == xcclInvalidArgument, "another comm's op: %d", r);
    CHECK(strstr(xcclGetLastError(second), "another communicator"), "message: %s", xcclGetLastError(second));
    r = xcclRedOpDestroy(op, second);
    CHECK(r == xcclInvalidArgument, "destroying another comm's op: %d", r);
    xcclRedOp_t left;
    XCHECK(xcclRedOpCreatePreMulSum(&left, &s, xcclFloat32, xcclScalarHostImmediate, second));
    CHECK(left != op, "two live ops share value %d", (int)op);
    XCHECK(xcclCommDestroy(second)); /* takes `left` with it */
    r = xcclAllReduce(buf, buf, 8, xcclFloat32, left, comm, NULL);
    CHECK(r == xcclInvalidArgument, "op of a destroyed comm: %d", r);

    XCHECK(xcclRedOpDestroy(op, comm));
    r = xcclAllReduce(buf, buf, 8, xcclFloat32, op, comm, NULL);
    CHECK(r == xcclInvalidArgument, "destroyed op: %d", r);
    CHECK(strstr(xcclGetLastError(comm), "destroyed"), "destroyed op message: %s", xcclGetLastError(comm));
    r = xcclRedOpDestroy(op, comm);
    CHECK(r == xcclInvalidArgument, "destroying twice: %d", r);
    r = xcclReduce(buf, buf, 8, xcclFloat32, op, 0, comm, NULL);
    CHECK(r == xcclInvalidArgument, "reduce with a destroyed op: %d", r);
    r = xcclReduceScatter(buf, buf, 1, xcclFloat32, op, comm, NULL);
    CHECK(r == xcclInvalidArgument, "reducescatter with a destroyed op: %d", r);

    /* Still usable; and an op left at destroy is freed with the comm. */
    unsigned char store[8];
    xcclRedOp_t keep = make_op(comm, xcclInt32, scalar_of(rank, xcclInt32), xcclScalarHostImmediate, store);
    run_case(comm, K_ALLREDUCE, xcclInt32, keep, 0, -1, 17, 60, scalar_of);
  }
}

/* ---- registrations and windows ---- */

static void expect(xcclResult_t got, xcclResult_t want, const char *what, xcclComm_t comm) {
  CHECK(got == want, "%s: %s (%d), expected %s: %s", what, xcclGetErrorString(got), got, xcclGetErrorString(want),
        xcclGetLastError(comm));
}

static void mode_reg(xcclComm_t comm) {
  char *heap = malloc(10000);
  void *shared = NULL, *h1 = NULL, *h2 = NULL, *junk = NULL;
  XCHECK(xcclMemAlloc(&shared, 1 << 16));
  XCHECK(xcclCommRegister(comm, heap, 10000, &h1));
  XCHECK(xcclCommRegister(comm, shared, 1 << 16, &h2));
  const comm_reg_t *r = reg_find(comm, heap + 100, 50);
  CHECK(r && r->buff == heap && r->size == 10000 && !r->shared, "reg_find of the heap buffer");
  r = reg_find(comm, (char *)shared + 4096, 4096);
  CHECK(r && r->buff == shared && r->shared, "reg_find of the xcclMemAlloc buffer (shared %d)", r ? r->shared : -1);
  CHECK(!reg_find(comm, heap + 9990, 20), "reg_find past the end");
  expect(xcclCommRegister(comm, NULL, 10, &junk), xcclInvalidArgument, "register NULL", comm);
  expect(xcclCommRegister(comm, heap, 0, &junk), xcclInvalidArgument, "register size 0", comm);
  expect(xcclCommRegister(comm, heap, 10, NULL), xcclInvalidArgument, "register NULL handle", comm);
  expect(xcclCommDeregister(comm, heap), xcclInvalidArgument, "deregister a non-handle", comm);
  XCHECK(xcclCommDeregister(comm, h1));
  expect(xcclCommDeregister(comm, h1), xcclInvalidArgument, "deregister twice", comm);
  CHECK(!reg_find(comm, heap, 1), "a deregistered buffer is still found");

  /* Windows: any sizes without SYMMETRIC, each rank's size kept. */
  size_t mine = 4096 * (size_t)(rank + 1);
  char *win_mem = aligned_alloc(4096, 4096 * 8);
  xcclWindow_t w1 = NULL, w2 = NULL, bad = NULL;
  XCHECK(xcclCommWindowRegister(comm, win_mem, mine, &w1, XCCL_WIN_DEFAULT));
  CHECK(w1 && w1->nranks == nranks, "window ranks");
  for (int p = 0; w1 && p < nranks; p++) CHECK(w1->sizes[p] == 4096 * (size_t)(p + 1), "window size of rank %d", p);
  XCHECK(xcclCommWindowRegister(comm, win_mem, 8192, &w2, XCCL_WIN_COLL_SYMMETRIC));
  CHECK(reg_find_window(comm, win_mem + 10, 10) != NULL, "reg_find_window");
  XCHECK(xcclCommWindowDeregister(comm, w2));
  expect(xcclCommWindowDeregister(comm, w2), xcclInvalidArgument, "window deregistered twice", comm);

  if (nranks > 1) {
    /* Symmetric, sizes differ: refused on every rank, naming the ranks. */
    expect(xcclCommWindowRegister(comm, win_mem, mine, &bad, XCCL_WIN_COLL_SYMMETRIC), xcclInvalidUsage,
           "symmetric windows of different sizes", comm);
    const char *m = xcclGetLastError(comm);
    CHECK(strstr(m, "rank 0 registers 4096 bytes") && strstr(m, "rank 1: 8192 bytes"), "message: %s", m);
    CHECK(bad == NULL, "win written on failure");
    /* Flags differ. */
    expect(xcclCommWindowRegister(comm, win_mem, 4096, &bad, rank == 0 ? XCCL_WIN_COLL_SYMMETRIC : XCCL_WIN_DEFAULT),
           xcclInvalidUsage, "windows with different flags", comm);
    CHECK(strstr(xcclGetLastError(comm), "rank 0 passes 0x1"), "message: %s", xcclGetLastError(comm));
    /* One rank's unknown flags: refused there, and the others hear of it. */
    expect(xcclCommWindowRegister(comm, win_mem, 4096, &bad, rank == 1 ? 0x80 : XCCL_WIN_DEFAULT),
           rank == 1 ? xcclInvalidArgument : xcclInvalidUsage, "one rank's unknown flags", comm);
    if (rank != 1) CHECK(strstr(xcclGetLastError(comm), "rank 1 refused"), "message: %s", xcclGetLastError(comm));
  }
  expect(xcclCommWindowRegister(comm, win_mem, 4096, &bad, 0x80), xcclInvalidArgument, "unknown flags", comm);
  expect(xcclCommWindowRegister(comm, win_mem + 64, 4096, &bad, XCCL_WIN_COLL_SYMMETRIC), xcclInvalidArgument,
         "misaligned symmetric", comm);
  expect(xcclCommWindowRegister(comm, win_mem, 4096, NULL, 0), xcclInvalidArgument, "NULL win", comm);
  expect(xcclCommWindowDeregister(comm, (xcclWindow_t)heap), xcclInvalidArgument, "deregister a non-window", comm);

  /* Another communicator's handle and window. */
  expect(xcclCommDeregister(second, h2), xcclInvalidArgument, "another comm's registration", second);
  expect(xcclCommWindowDeregister(second, w1), xcclInvalidArgument, "another comm's window", second);
  void *h3;
  XCHECK(xcclCommRegister(second, heap, 100, &h3)); /* left for destroy to release */
  XCHECK(xcclCommDestroy(second));

  /* Still usable; h2 and w1 are left for xcclCommDestroy to release. */
  XCHECK(xcclBarrier(comm));
  XCHECK(xcclCommDestroy(comm));
  XCHECK(xcclMemFree(shared));
  free(win_mem);
  free(heap);
}

/* ---- simulate ---- */

static void mode_simulate(xcclComm_t comm) {
  size_t big = 1 << 20;
  float *send = malloc(big * 4), *recv = malloc(big * 4);
  for (size_t i = 0; i < big; i++) send[i] = 1, recv[i] = -7;
  float t_small = 0, t_big = 0, t_two = 0;
  XCHECK(xcclGroupStart());
  XCHECK(xcclAllReduce(send, recv, 16, xcclFloat32, xcclSum, comm, NULL));
  XCHECK(xcclGroupSimulateEnd(&t_small));
  XCHECK(xcclGroupStart());
  XCHECK(xcclAllReduce(send, recv, big, xcclFloat32, xcclSum, comm, NULL));
  XCHECK(xcclGroupSimulateEnd(&t_big));
  XCHECK(xcclGroupStart());
  XCHECK(xcclAllReduce(send, recv, big, xcclFloat32, xcclSum, comm, NULL));
  XCHECK(xcclReduceScatter(send, recv, big / (size_t)nranks, xcclFloat32, xcclSum, comm, NULL));
  XCHECK(xcclGroupSimulateEnd(&t_two));
  if (nranks > 1) {
    CHECK(t_small > 0, "estimate %g us", t_small);
    CHECK(t_big > t_small, "estimate does not grow with the count: %g then %g us", t_small, t_big);
    CHECK(t_two > t_big, "a second operation adds nothing: %g then %g us", t_big, t_two);
  }
  int untouched = 1;
  for (size_t i = 0; i < big; i++) untouched &= recv[i] == -7;
  CHECK(untouched, "a simulated group wrote recvbuff");
  printf("rank %d/%d: simulated 64 B all-reduce %.2f us, 4 MiB %.2f us, + reduce-scatter %.2f us\n", rank, nranks,
         t_small, t_big, t_two);

  /* Refusals: no group, NULL. */
  float t;
  CHECK(xcclGroupSimulateEnd(&t) == xcclInvalidUsage, "SimulateEnd without a group");
  XCHECK(xcclGroupStart());
  CHECK(xcclGroupSimulateEnd(NULL) == xcclInvalidArgument, "SimulateEnd(NULL)");
  XCHECK(xcclGroupEnd()); /* the refused call left the group open */

  /* A real operation afterwards runs, and nothing of the dropped ones. */
  XCHECK(xcclAllReduce(send, recv, 1000, xcclFloat32, xcclSum, comm, NULL));
  int ok = 1;
  for (size_t i = 0; i < 1000; i++) ok &= recv[i] == (float)nranks;
  CHECK(ok, "the all-reduce after simulated groups");
  CHECK(recv[1000] == -7, "the all-reduce wrote past its count");
  free(send);
  free(recv);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "premulsum";
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  int destroyed = 0;
  if (strcmp(mode, "simulate") != 0) second_comm(comm);
  if (strcmp(mode, "premulsum") == 0) mode_premulsum(comm);
  else if (strcmp(mode, "reg") == 0) mode_reg(comm), destroyed = 1;
  else if (strcmp(mode, "simulate") == 0) mode_simulate(comm);
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  if (!destroyed) {
    xcclResult_t async;
    XCHECK(xcclCommGetAsyncError(comm, &async));
    CHECK(async == xcclSuccess, "async error %d after the run", async);
    XCHECK(xcclCommDestroy(comm));
  }
  char name[64];
  snprintf(name, sizeof(name), "ops16 %s rank %d/%d", mode, rank, nranks);
  return test_finish(name);
}
