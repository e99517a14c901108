/*
 * test_prepare.c — a call's one preparation step (src/core/op.h), on a
 * one-rank communicator made in this process over loopback.
 *
 * What it holds to, so that a check skipped on one path, or made twice with
 * different sentences, shows up here:
 *  - every entry point refuses a bad datatype, op, count, buffer, root or
 *    peer with xcclInvalidArgument and one sentence that starts with the
 *    call's name and says the problem once;
 *  - a refused call is not numbered, an accepted one exactly once;
 *  - the prepared op carries the element size, bytes, this rank's element
 *    counts, the algorithm and the ring channels the layers below read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "op.h"
#include "test_util.h"
#include "xccl.h"

static _Alignas(64) float sbuf[256], rbuf[256];

/* How often word occurs in text. */
static int occurrences(const char *text, const char *word) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, word)); p += strlen(word)) n++;
  return n;
}

/* A refused call: xcclInvalidArgument, a sentence that begins "fn: " and
 * says word once, in the thread's and the communicator's last error, and
 * the communicator's operation number unchanged. */
static void refused(xcclComm_t comm, const char *what, xcclResult_t r, const char *fn, const char *word,
                    uint64_t seq0) {
  const char *m = xcclGetLastError(NULL);
  size_t fl = strlen(fn);
  CHECK(r == xcclInvalidArgument, "%s: returned %d (%s), want xcclInvalidArgument", what, (int)r,
        xcclGetErrorString(r));
  CHECK(m && strncmp(m, fn, fl) == 0 && m[fl] == ':', "%s: '%s' does not begin with '%s:'", what, m ? m : "", fn);
  CHECK(occurrences(m, word) == 1, "%s: '%s' says '%s' %d times, want once", what, m ? m : "", word,
        occurrences(m, word));
  CHECK(occurrences(xcclGetLastError(comm), word) == 1, "%s: comm's last error '%s' lacks '%s'", what,
        xcclGetLastError(comm), word);
  CHECK(comm->seq == seq0, "%s: a refused call was numbered (%llu -> %llu)", what, (unsigned long long)seq0,
        (unsigned long long)comm->seq);
}

#define REFUSED(comm, call, fn, word)                       \
  do {                                                      \
    uint64_t seq0_ = (comm)->seq;                           \
    err_clear();                                            \
    xcclResult_t r_ = (call);                               \
    refused((comm), #call, r_, (fn), (word), seq0_);        \
  } while (0)

static void test_bad_datatype(xcclComm_t comm, int t) {
  char word[48];
  snprintf(word, sizeof(word), "unknown datatype %d", t);
  xcclDataType_t T = (xcclDataType_t)t;
  size_t c4[1] = {4}, d0[1] = {0};
  xcclRedOp_t op = xcclSum;
  const char *algo = NULL;
  float scalar = 2.0f;
  REFUSED(comm, xcclAllReduce(sbuf, rbuf, 4, T, xcclSum, comm, NULL), "allreduce", word);
  REFUSED(comm, xcclAllGather(sbuf, rbuf, 4, T, comm, NULL), "allgather", word);
  REFUSED(comm, xcclReduceScatter(sbuf, rbuf, 4, T, xcclSum, comm, NULL), "reducescatter", word);
  REFUSED(comm, xcclBroadcast(sbuf, rbuf, 4, T, 0, comm, NULL), "broadcast", word);
  REFUSED(comm, xcclReduce(sbuf, rbuf, 4, T, xcclSum, 0, comm, NULL), "reduce", word);
  REFUSED(comm, xcclSend(sbuf, 4, T, 0, comm, NULL), "send", word);
  REFUSED(comm, xcclRecv(rbuf, 4, T, 0, comm, NULL), "recv", word);
  REFUSED(comm, xcclGather(sbuf, rbuf, 4, T, 0, comm, NULL), "gather", word);
  REFUSED(comm, xcclScatter(sbuf, rbuf, 4, T, 0, comm, NULL), "scatter", word);
  REFUSED(comm, xcclAllToAll(sbuf, rbuf, 4, T, comm, NULL), "alltoall", word);
  REFUSED(comm, xcclAllToAllv(sbuf, c4, d0, rbuf, c4, d0, T, comm, NULL), "alltoallv", word);
  REFUSED(comm, xcclRedOpCreatePreMulSum(&op, &scalar, T, xcclScalarHostImmediate, comm), "xcclRedOpCreatePreMulSum",
          word);
  REFUSED(comm, xcclCommGetAlgorithm(comm, "allreduce", 4, T, &algo), "xcclCommGetAlgorithm", word);
  CHECK(op == xcclSum && algo == NULL, "a refused call wrote its output");
}

static void test_bad_args(xcclComm_t comm) {
  const size_t huge = SIZE_MAX / 2;
  size_t c4[1] = {4}, d0[1] = {0};
  const char *algo = NULL;
  for (int op = (int)xcclNumOps; op >= -1; op -= (int)xcclNumOps + 1) {
    char word[48];
    snprintf(word, sizeof(word), "unknown reduction op %d", op);
    REFUSED(comm, xcclAllReduce(sbuf, rbuf, 4, xcclFloat32, (xcclRedOp_t)op, comm, NULL), "allreduce", word);
    REFUSED(comm, xcclReduceScatter(sbuf, rbuf, 4, xcclFloat32, (xcclRedOp_t)op, comm, NULL), "reducescatter", word);
    REFUSED(comm, xcclReduce(sbuf, rbuf, 4, xcclFloat32, (xcclRedOp_t)op, 0, comm, NULL), "reduce", word);
  }
  const char *ovf = "overflows the address space";
  REFUSED(comm, xcclAllReduce(sbuf, rbuf, huge, xcclFloat32, xcclSum, comm, NULL), "allreduce", ovf);
  REFUSED(comm, xcclAllGather(sbuf, rbuf, huge, xcclFloat32, comm, NULL), "allgather", ovf);
  REFUSED(comm, xcclReduceScatter(sbuf, rbuf, huge, xcclFloat32, xcclSum, comm, NULL), "reducescatter", ovf);
  REFUSED(comm, xcclBroadcast(sbuf, rbuf, huge, xcclFloat32, 0, comm, NULL), "broadcast", ovf);
  REFUSED(comm, xcclReduce(sbuf, rbuf, huge, xcclFloat32, xcclSum, 0, comm, NULL), "reduce", ovf);
  REFUSED(comm, xcclSend(sbuf, huge, xcclFloat32, 0, comm, NULL), "send", ovf);
  REFUSED(comm, xcclRecv(rbuf, huge, xcclFloat32, 0, comm, NULL), "recv", ovf);
  REFUSED(comm, xcclGather(sbuf, rbuf, huge, xcclFloat32, 0, comm, NULL), "gather", ovf);
  REFUSED(comm, xcclScatter(sbuf, rbuf, huge, xcclFloat32, 0, comm, NULL), "scatter", ovf);
  REFUSED(comm, xcclAllToAll(sbuf, rbuf, huge, xcclFloat32, comm, NULL), "alltoall", ovf);
  REFUSED(comm, xcclCommGetAlgorithm(comm, "allreduce", SIZE_MAX, xcclInt32, &algo), "xcclCommGetAlgorithm", ovf);

  REFUSED(comm, xcclAllReduce(NULL, rbuf, 4, xcclFloat32, xcclSum, comm, NULL), "allreduce", "sendbuff is NULL");
  REFUSED(comm, xcclAllGather(sbuf, NULL, 4, xcclFloat32, comm, NULL), "allgather", "recvbuff is NULL");
  REFUSED(comm, xcclBroadcast(NULL, rbuf, 4, xcclFloat32, 0, comm, NULL), "broadcast", "sendbuff is NULL");
  REFUSED(comm, xcclReduce(sbuf, NULL, 4, xcclFloat32, xcclSum, 0, comm, NULL), "reduce", "recvbuff is NULL");
  REFUSED(comm, xcclSend(NULL, 4, xcclFloat32, 0, comm, NULL), "send", "buff is NULL");
  REFUSED(comm, xcclRecv(NULL, 4, xcclFloat32, 0, comm, NULL), "recv", "buff is NULL");
  REFUSED(comm, xcclGather(sbuf, NULL, 4, xcclFloat32, 0, comm, NULL), "gather", "recvbuff is NULL");
  REFUSED(comm, xcclScatter(NULL, rbuf, 4, xcclFloat32, 0, comm, NULL), "scatter", "sendbuff is NULL");
  REFUSED(comm, xcclAllToAll(sbuf, NULL, 4, xcclFloat32, comm, NULL), "alltoall", "recvbuff is NULL");
  REFUSED(comm, xcclAllToAllv(NULL, c4, d0, rbuf, c4, d0, xcclFloat32, comm, NULL), "alltoallv", "sendbuff is NULL");

  const char *mis = "is not aligned to the 4-byte element size";
  const char *odd = (const char *)sbuf + 1;
  REFUSED(comm, xcclAllReduce(odd, rbuf, 4, xcclFloat32, xcclSum, comm, NULL), "allreduce", mis);
  REFUSED(comm, xcclSend(odd, 4, xcclInt32, 0, comm, NULL), "send", mis);
  REFUSED(comm, xcclAllToAll(odd, rbuf, 4, xcclFloat32, comm, NULL), "alltoall", mis);
  REFUSED(comm, xcclAllToAllv(odd, c4, d0, rbuf, c4, d0, xcclFloat32, comm, NULL), "alltoallv", mis);

  REFUSED(comm, xcclBroadcast(sbuf, rbuf, 4, xcclFloat32, 1, comm, NULL), "broadcast", "root 1 is not a rank");
  REFUSED(comm, xcclReduce(sbuf, rbuf, 4, xcclFloat32, xcclSum, -1, comm, NULL), "reduce", "root -1 is not a rank");
  REFUSED(comm, xcclGather(sbuf, rbuf, 4, xcclFloat32, 1, comm, NULL), "gather", "root 1 is not a rank");
  REFUSED(comm, xcclScatter(sbuf, rbuf, 4, xcclFloat32, 5, comm, NULL), "scatter", "root 5 is not a rank");
  REFUSED(comm, xcclSend(sbuf, 4, xcclFloat32, 1, comm, NULL), "send", "peer 1 is not a rank");
  REFUSED(comm, xcclRecv(rbuf, 4, xcclFloat32, -1, comm, NULL), "recv", "peer -1 is not a rank");
}

/* op_prepare_coll of coll with count elements of type t: what it fills. */
static void prepared_coll(xcclComm_t comm, coll_kind_t coll, const char *name, int has_op, int has_root,
                          xcclDataType_t t, size_t count, void *send, void *recv) {
  group_op_t op;
  op.coll = (coll_args_t){.name = name, .coll = coll, .sendbuff = send, .recvbuff = recv, .count = count, .type = t,
                          .op = has_op ? xcclSum : xcclNumOps, .root = has_root ? 0 : -1};
  int on_device = -1;
  XCHECK(comm_acquire(comm));
  uint64_t seq0 = comm->seq;
  xcclResult_t r = op_prepare_coll(comm, &op, NULL, &on_device);
  comm_release(comm);
  const coll_args_t *a = &op.coll;
  size_t esize = xcclTypeSize(t);
  CHECK(r == xcclSuccess, "%s type %d: %s", name, (int)t, xcclGetLastError(NULL));
  CHECK(a->esize == esize && a->bytes == count * esize && op.bytes == a->bytes,
        "%s type %d count %zu: esize %zu bytes %zu (op %zu), want %zu and %zu", name, (int)t, count, a->esize,
        a->bytes, op.bytes, esize, count * esize);
  CHECK(a->send_elems == count && a->recv_elems == count, "%s: send %zu recv %zu elements on one rank, want %zu", name,
        a->send_elems, a->recv_elems, count);
  CHECK(a->nchannels == ring_nchannels_for(a->bytes, comm->nchannels) && a->nchannels <= comm->nchannels + 1,
        "%s of %zu bytes: %d channels of %d", name, a->bytes, a->nchannels, comm->nchannels);
  CHECK((unsigned)a->algo < ALGO_COUNT && algo_serves(a->algo, coll), "%s: algorithm %d", name, (int)a->algo);
  CHECK(op.seq == seq0 + 1 && comm->seq == seq0 + 1, "%s: numbered %llu, comm at %llu, from %llu", name,
        (unsigned long long)op.seq, (unsigned long long)comm->seq, (unsigned long long)seq0);
  CHECK(op.kind == GROUP_COLL && op.comm == comm && !op.premul.on && on_device == 0, "%s: kind %d premul %d", name,
        (int)op.kind, op.premul.on);
}

static void test_prepared(xcclComm_t comm) {
  for (int t = 0; t < xcclNumTypes; t++) {
    xcclDataType_t T = (xcclDataType_t)t;
    prepared_coll(comm, COLL_ALLREDUCE, "allreduce", 1, 0, T, 16, sbuf, rbuf);
    prepared_coll(comm, COLL_ALLGATHER, "allgather", 0, 0, T, 16, sbuf, rbuf);
    prepared_coll(comm, COLL_REDUCESCATTER, "reducescatter", 1, 0, T, 16, sbuf, rbuf);
    prepared_coll(comm, COLL_BROADCAST, "broadcast", 0, 1, T, 16, sbuf, rbuf);
    prepared_coll(comm, COLL_REDUCE, "reduce", 1, 1, T, 16, sbuf, rbuf);
  }
  /* Large enough for more than one channel where the communicator has them. */
  size_t big = (size_t)1 << 22;
  float *b = malloc(big * sizeof(float));
  CHECK(b != NULL, "no memory");
  if (b) prepared_coll(comm, COLL_ALLREDUCE, "allreduce", 1, 0, xcclFloat32, big, b, b);
  free(b);

  /* A PreMulSum op: resolved to a sum that carries its scalar. */
  float scalar = 0.5f;
  xcclRedOp_t pm;
  XCHECK(xcclRedOpCreatePreMulSum(&pm, &scalar, xcclFloat32, xcclScalarHostImmediate, comm));
  group_op_t op;
  op.coll = (coll_args_t){.name = "allreduce", .coll = COLL_ALLREDUCE, .sendbuff = sbuf, .recvbuff = rbuf,
                          .count = 8, .type = xcclFloat32, .op = pm, .root = -1};
  int on_device = -1;
  XCHECK(comm_acquire(comm));
  xcclResult_t r = op_prepare_coll(comm, &op, NULL, &on_device);
  comm_release(comm);
  CHECK(r == xcclSuccess && op.premul.on && op.coll.op == xcclSum && op.coll.esize == 4 && op.coll.bytes == 32,
        "PreMulSum: %s (on %d op %d esize %zu)", xcclGetLastError(NULL), op.premul.on, (int)op.coll.op, op.coll.esize);
  XCHECK(xcclRedOpDestroy(pm, comm));

  /* A send: checked and numbered; a part of a collective: only completed. */
  for (int t = 0; t < xcclNumTypes; t++) {
    group_op_t s = {.kind = GROUP_SEND, .peer = 0, .buf = sbuf};
    s.coll.name = "send", s.coll.count = 8, s.coll.type = (xcclDataType_t)t;
    XCHECK(comm_acquire(comm));
    uint64_t seq0 = comm->seq;
    r = op_prepare_p2p(comm, &s, NULL, 0, &on_device);
    comm_release(comm);
    size_t esize = xcclTypeSize((xcclDataType_t)t);
    CHECK(r == xcclSuccess && s.coll.esize == esize && s.coll.bytes == 8 * esize && s.bytes == 8 * esize,
          "send type %d: %s (esize %zu bytes %zu)", t, xcclGetLastError(NULL), s.coll.esize, s.bytes);
    CHECK(s.seq == seq0 + 1 && comm->seq == seq0 + 1, "send type %d: numbered %llu from %llu", t,
          (unsigned long long)s.seq, (unsigned long long)seq0);
  }
  group_op_t part = {.kind = GROUP_RECV, .peer = 0, .buf = rbuf};
  part.coll.name = "gather", part.coll.count = 8, part.coll.type = xcclFloat64, part.coll.esize = 8;
  XCHECK(comm_acquire(comm));
  uint64_t seq0 = comm->seq;
  r = op_prepare_p2p(comm, &part, NULL, 77, &on_device);
  comm_release(comm);
  CHECK(r == xcclSuccess && part.seq == 77 && comm->seq == seq0 && part.bytes == 64,
        "a part: %s (seq %llu, comm %llu from %llu, bytes %zu)", xcclGetLastError(NULL),
        (unsigned long long)part.seq, (unsigned long long)comm->seq, (unsigned long long)seq0, part.bytes);
}

/* Accepted calls through the public API: numbered once each, and right. */
static void test_numbered_once(xcclComm_t comm) {
  for (int k = 0; k < 16; k++) sbuf[k] = (float)k;
  uint64_t seq0 = comm->seq;
  XCHECK(xcclAllReduce(sbuf, rbuf, 16, xcclFloat32, xcclSum, comm, NULL));
  XCHECK(xcclAllGather(sbuf, rbuf, 16, xcclFloat32, comm, NULL));
  XCHECK(xcclBroadcast(sbuf, rbuf, 16, xcclFloat32, 0, comm, NULL));
  XCHECK(xcclGather(sbuf, rbuf, 16, xcclFloat32, 0, comm, NULL));
  XCHECK(xcclAllToAll(sbuf, rbuf, 16, xcclFloat32, comm, NULL));
  CHECK(comm->seq == seq0 + 5, "5 calls numbered %llu times", (unsigned long long)(comm->seq - seq0));
  CHECK(memcmp(sbuf, rbuf, 16 * sizeof(float)) == 0, "all-to-all of one rank is a copy");
}

int main(void) {
  setenv("XCCL_SOCKET_IFNAME", "lo", 1);
  setenv("XCCL_TIMEOUT", "30", 0);
  setenv("XCCL_DEBUG", "NONE", 0); /* the expected refusals would each log a WARN */
  xcclUniqueId id;
  xcclComm_t comm = NULL;
  XCHECK(xcclGetUniqueId(&id));
  XCHECK(xcclCommInitRank(&comm, 1, id, 0));
  test_bad_datatype(comm, xcclNumTypes);
  test_bad_datatype(comm, -1);
  test_bad_args(comm);
  test_prepared(comm);
  test_numbered_once(comm);
  XCHECK(xcclCommDestroy(comm));
  return test_finish("test_prepare");
}
