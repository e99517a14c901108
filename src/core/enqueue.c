/*
 * enqueue.c — the entry points of the collectives and of sends and
 * receives: each acquires its communicator once, has the call prepared
 * (op.h: checked, numbered, its algorithm chosen) and hands the op to the
 * group (group.h) or, for device buffers, to the stream. A kernel's failure
 * becomes a sentence in group.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "group.h"
#include "log.h"
#include "op.h"
#include "redop.h"
#include "reduce.h"
#include "tuning.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h" /* device buffers: enqueued on the stream */
#endif

_Thread_local uint64_t op_user_tag;

/* One rank: what the collective leaves in recvbuff is sendbuff (or nothing). */
static void coll_single_rank(const coll_args_t *a) {
  size_t bytes = a->recv_elems * a->esize;
  if (bytes && a->sendbuff && a->sendbuff != a->recvbuff) memcpy(a->recvbuff, a->sendbuff, bytes);
}

/* One rank with a PreMulSum op: recvbuff is sendbuff times the scalar. */
static void coll_single_rank_premul(const coll_args_t *a, const redop_premul_t *pm) {
  if (a->recv_elems && a->sendbuff) redop_scale(pm, a->recvbuff, a->sendbuff, a->recv_elems);
}

/* The sentence for a collective name the tuner does not know. */
static const char *not_algo_coll(const char *collective) {
  static _Thread_local char why[160];
  snprintf(why, sizeof(why),
           "collective \"%.40s\" is not one with algorithms (allreduce, allgather, reducescatter, broadcast, reduce, "
           "alltoall)",
           collective ? collective : "(NULL)");
  return why;
}

xcclResult_t xcclCommGetAlgorithm(xcclComm_t comm, const char *collective, size_t count, xcclDataType_t datatype,
                                  const char **algorithm) {
  const char *fn = "xcclCommGetAlgorithm";
  TRY(comm_acquire(comm));
  int c = collective ? tuning_coll_lookup(collective) : -1;
  size_t esize = 0;
  xcclResult_t res = xcclSuccess;
  if (!algorithm)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: algorithm is NULL", fn);
  else if (c < 0)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: %s", fn, not_algo_coll(collective));
  else if ((res = op_check_type(fn, datatype, &esize)) == xcclSuccess &&
           (res = op_check_count(fn, count, esize, 1, datatype)) == xcclSuccess)
    *algorithm = algo_name(op_pick(comm, (coll_kind_t)c, count * esize, 0));
  comm_release(comm);
  return comm_record(comm, res);
}

xcclResult_t xcclGetAlgorithms(const char *collective, const char **names, int *count) {
  int c = collective ? tuning_coll_lookup(collective) : -1;
  if (!count) return err_set(xcclInvalidArgument, LOG_COLL, "xcclGetAlgorithms: count is NULL");
  if (c < 0)
    return err_set(xcclInvalidArgument, LOG_COLL, "xcclGetAlgorithms: %s", not_algo_coll(collective));
  if (*count > 0 && !names) return err_set(xcclInvalidArgument, LOG_COLL, "xcclGetAlgorithms: names is NULL");
  int n = 0;
  for (int a = 0; a < ALGO_COUNT; a++) {
    if (!algo_serves((algo_t)a, (coll_kind_t)c)) continue;
    if (n < *count) names[n] = algo_name((algo_t)a);
    n++;
  }
  *count = n;
  return xcclSuccess;
}

/* Runs the collective whose user arguments op->coll holds (op.h's
 * op_prepare_coll): done here when nothing needs moving, else now or at
 * xcclGroupEnd. */
static xcclResult_t coll_run(xcclComm_t comm, group_op_t *op, void *stream) {
  TRY(comm_acquire(comm));
  const coll_args_t *a = &op->coll;
  int on_device = 0, submit = 0;
  xcclResult_t res = op_prepare_coll(comm, op, stream, &on_device);
  if (res == xcclSuccess) {
    /* One rank: a copy, now; inside a group at xcclGroupEnd, like any
     * operation (xcclGroupSimulateEnd then drops it too). */
    int local = a->count > 0 && comm->nranks == 1 && !on_device, grouped = group_open();
    if (local && !grouped && op->premul.on) coll_single_rank_premul(a, &op->premul);
    else if (local && !grouped) coll_single_rank(a);
    submit = a->count > 0 && (comm->nranks > 1 || on_device || grouped);
  }
#ifdef XCCL_HAVE_CUDA
  if (res == xcclSuccess && submit && on_device) res = enqueue_cuda_submit(op, stream), submit = 0;
  if (res == xcclSuccess && submit) res = enqueue_cuda_host_fence(comm, a->name);
#endif
  if (res == xcclSuccess && submit) res = group_add_held(op);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

/* An entry point's user arguments into an op; op_prepare_coll works out the
 * rest (this rank's element counts among them). Field by field: a compound
 * literal would clear the whole struct first (a string store that starts
 * slowly), on every small call. */
static inline xcclResult_t coll_call(const char *name, coll_kind_t kind, const void *sendbuff, void *recvbuff,
                                     size_t count, xcclDataType_t type, xcclRedOp_t op, int root, xcclComm_t comm,
                                     void *stream) {
  group_op_t o;
  o.user_tag = op_user_tag;
  coll_args_t *a = &o.coll;
  a->name = name, a->coll = kind, a->sendbuff = sendbuff, a->recvbuff = recvbuff, a->count = count;
  a->type = type, a->op = op, a->root = root;
  return coll_run(comm, &o, stream);
}

xcclResult_t xcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype,
                           xcclRedOp_t op, xcclComm_t comm, void *stream) {
  return coll_call("allreduce", COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, -1, comm, stream);
}

xcclResult_t xcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype,
                           xcclComm_t comm, void *stream) {
  return coll_call("allgather", COLL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, xcclNumOps, -1, comm, stream);
}

xcclResult_t xcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype,
                               xcclRedOp_t op, xcclComm_t comm, void *stream) {
  return coll_call("reducescatter", COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, -1, comm, stream);
}

xcclResult_t xcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, int root,
                           xcclComm_t comm, void *stream) {
  return coll_call("broadcast", COLL_BROADCAST, sendbuff, recvbuff, count, datatype, xcclNumOps, root, comm, stream);
}

xcclResult_t xcclBcast(void *buff, size_t count, xcclDataType_t datatype, int root, xcclComm_t comm, void *stream) {
  return xcclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

xcclResult_t xcclReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, xcclRedOp_t op,
                        int root, xcclComm_t comm, void *stream) {
  return coll_call("reduce", COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

/* ---- Point to point ---- */

/* Prepares a send or receive on comm (held) and submits it: the user's own
 * (seq 0, checked here), or a part of a collective checked as a whole (seq
 * its number, esize its element size). */
static xcclResult_t p2p_add(xcclComm_t comm, const char *name, uint64_t seq, group_kind_t kind, void *buf,
                            size_t count, xcclDataType_t type, size_t esize, int peer, void *stream) {
  group_op_t op = {.kind = kind, .peer = peer, .buf = buf, .user_tag = op_user_tag};
  op.coll.name = name, op.coll.count = count, op.coll.type = type, op.coll.esize = esize;
  int on_device = 0;
  TRY(op_prepare_p2p(comm, &op, stream, seq, &on_device));
  if (!count) return xcclSuccess; /* nothing to move, nothing to match */
#ifdef XCCL_HAVE_CUDA
  if (on_device) return enqueue_cuda_submit(&op, stream);
  TRY(enqueue_cuda_host_fence(comm, name));
#endif
  return group_add_held(&op);
}

static xcclResult_t p2p_call(const char *name, group_kind_t kind, void *buf, size_t count, xcclDataType_t type,
                             int peer, xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = p2p_add(comm, name, 0, kind, buf, count, type, 0, peer, stream);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

xcclResult_t xcclSend(const void *sendbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream) {
  return p2p_call("send", GROUP_SEND, (void *)sendbuff, count, datatype, peer, comm, stream);
}

xcclResult_t xcclRecv(void *recvbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream) {
  return p2p_call("recv", GROUP_RECV, recvbuff, count, datatype, peer, comm, stream);
}

/* ---- Collectives made of sends and receives ---- */

typedef enum { P2P_GATHER, P2P_SCATTER, P2P_ALLTOALL } p2p_coll_t;

/* The overlap of a gather's, scatter's or all-to-all's buffers (sb and rb
 * bytes used, blk one rank's block): only the root's in-place layout. */
static xcclResult_t p2p_coll_overlap(const char *name, p2p_coll_t kind, const char *s, const char *r, size_t sb,
                                     size_t rb, size_t blk, int root) {
  if (!sb || !rb || !(s < r + rb && r < s + sb)) return xcclSuccess;
  /* in place: the root's own block is already where it belongs */
  if ((kind == P2P_GATHER && s == r + (size_t)root * blk) || (kind == P2P_SCATTER && r == s + (size_t)root * blk))
    return xcclSuccess;
  return err_set(xcclInvalidArgument, LOG_COLL, "%s: sendbuff %p and recvbuff %p overlap%s", name, (const void *)s,
                 (const void *)r,
                 kind == P2P_ALLTOALL ? " (all-to-all is never in place)"
                 : kind == P2P_GATHER ? " without being in place (sendbuff == recvbuff + root * sendcount)"
                                      : " without being in place (recvbuff == sendbuff + root * recvcount)");
}

/* The whole call's checks (comm held), which its sends and receives then
 * skip: type, root, total sizes, buffers, overlap. Numbers it into *seq_p
 * and gives the element size in *esize_p. */
static xcclResult_t p2p_coll_check(xcclComm_t comm, const char *name, p2p_coll_t kind, const void *sendbuff,
                                   const void *recvbuff, size_t count, xcclDataType_t type, int root, void *stream,
                                   size_t *esize_p, uint64_t *seq_p) {
  int n = comm->nranks, me = comm->rank;
  size_t esize = 0;
  xcclResult_t res = op_check_type(name, type, &esize);
  if (res == xcclSuccess && kind != P2P_ALLTOALL) res = op_check_rank(name, "root", root, n);
  if (res == xcclSuccess) res = op_check_count(name, count, esize, (size_t)n, type);
  if (res == xcclSuccess && count) { /* nothing moves at count 0: nothing more to check */
    size_t all = count * (size_t)n;
    size_t se = kind == P2P_GATHER ? count : (kind == P2P_SCATTER ? (me == root ? all : 0) : all);
    size_t re = kind == P2P_SCATTER ? count : (kind == P2P_GATHER ? (me == root ? all : 0) : all);
    res = op_check_usable(name, comm, stream);
    if (res == xcclSuccess) res = op_check_buffer(name, "sendbuff", sendbuff, se, esize);
    if (res == xcclSuccess) res = op_check_buffer(name, "recvbuff", recvbuff, re, esize);
    if (res == xcclSuccess)
      res = p2p_coll_overlap(name, kind, sendbuff, recvbuff, se * esize, re * esize, count * esize, root);
  }
  res = op_number(comm, res, name, count, type, -1, root, seq_p);
  if (res == xcclSuccess) *esize_p = esize;
  return res;
}

/* A collective made of sends and receives runs as one group: if any part is
 * refused, none of it runs (on the host or on the device). */
typedef struct {
  int mark, dmark;
} p2p_parts_t;

static xcclResult_t parts_begin(p2p_parts_t *pp) {
  xcclResult_t res = xcclGroupStart();
  pp->mark = group_mark();
  pp->dmark = 0;
#ifdef XCCL_HAVE_CUDA
  pp->dmark = enqueue_cuda_group_mark();
#endif
  return res;
}

static xcclResult_t parts_end(p2p_parts_t *pp, xcclResult_t res) {
  if (res != xcclSuccess) group_rollback(pp->mark);
#ifdef XCCL_HAVE_CUDA
  if (res != xcclSuccess) enqueue_cuda_group_rollback(pp->dmark);
#endif
  xcclResult_t end = xcclGroupEnd();
  return res != xcclSuccess ? res : end;
}

/* All-to-all as bruck's one item (algo_bruck.c), when the tuner or
 * XCCL_ALGO picks it for host buffers on 2 or more ranks (comm held); sets
 * *done. Pairwise runs as p2p_coll's sends and receives. */
static xcclResult_t alltoall_bruck(xcclComm_t comm, const void *sendbuff, void *recvbuff, size_t count,
                                   xcclDataType_t type, size_t esize, void *stream, uint64_t seq, int *done) {
  *done = 0;
  if (stream || comm->nranks < 2) return xcclSuccess; /* device buffers: their sends and receives */
  size_t total = count * (size_t)comm->nranks;
  group_op_t op = {.kind = GROUP_COLL, .comm = comm, .seq = seq, .peer = -1, .user_tag = op_user_tag};
  op.coll = (coll_args_t){.name = "alltoall", .coll = COLL_ALLTOALL, .sendbuff = sendbuff, .recvbuff = recvbuff,
                          .count = count, .send_elems = total, .recv_elems = total, .type = type, .op = xcclNumOps,
                          .root = -1, .algo = ALGO_BRUCK};
  op_coll_sizes(&op.coll, esize, comm->nchannels);
  op.bytes = op.coll.bytes;
  int on_device = 0;
#ifdef XCCL_HAVE_CUDA
  cuda_buf_t bufs[2] = {{"sendbuff", sendbuff, total * esize}, {"recvbuff", recvbuff, total * esize}};
  TRY(enqueue_cuda_where(op.coll.name, bufs, 2, stream, &on_device));
#endif
  if (on_device || op_pick(comm, COLL_ALLTOALL, op.coll.bytes, 0) != ALGO_BRUCK) return xcclSuccess;
  TRACE(COLL, "alltoall #%llu count %zu %s bruck", (unsigned long long)seq, count, kern_type_name(type));
  *done = 1;
  return group_add_held(&op);
}

/* Gather, scatter and all-to-all (comm held): checked once, then bruck's
 * item or the pairwise sends and receives. */
static xcclResult_t p2p_coll_run(xcclComm_t comm, const char *name, p2p_coll_t kind, const void *sendbuff,
                                 void *recvbuff, size_t count, xcclDataType_t type, int root, void *stream) {
  uint64_t seq = 0;
  size_t esize = 0;
  int n = comm->nranks, me = comm->rank, done = 0;
  TRY(p2p_coll_check(comm, name, kind, sendbuff, recvbuff, count, type, root, stream, &esize, &seq));
  if (kind == P2P_ALLTOALL && count) TRY(alltoall_bruck(comm, sendbuff, recvbuff, count, type, esize, stream, seq, &done));
  static const int stats_op[] = {
      [P2P_GATHER] = COMM_STATS_GATHER, [P2P_SCATTER] = COMM_STATS_SCATTER, [P2P_ALLTOALL] = COLL_ALLTOALL};
  comm_count_op(comm, stats_op[kind], kind != P2P_ALLTOALL ? COMM_STATS_P2P : done ? ALGO_BRUCK : ALGO_PAIRWISE);
  if (count == 0 || done) return xcclSuccess;
  size_t blk = count * esize;
  const char *s = sendbuff;
  char *r = recvbuff;
  p2p_parts_t parts;
  xcclResult_t res = parts_begin(&parts);
  /* Pairwise order: at step i, to me + i and from me - i (the root's
   * partners for gather and scatter, whose other ranks have one). */
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    int to = (me + i) % n, from = (me - i + n) % n;
    int send = kind == P2P_ALLTOALL || (kind == P2P_GATHER && to == root) || (kind == P2P_SCATTER && me == root);
    int recv = kind == P2P_ALLTOALL || (kind == P2P_GATHER && me == root) || (kind == P2P_SCATTER && from == root);
    if (send) {
      const char *sp = kind == P2P_GATHER ? s : s + (size_t)to * blk;
      res = p2p_add(comm, name, seq, GROUP_SEND, (void *)sp, count, type, esize, to, stream);
    }
    if (recv && res == xcclSuccess) {
      char *rp = kind == P2P_SCATTER ? r : r + (size_t)from * blk;
      res = p2p_add(comm, name, seq, GROUP_RECV, rp, count, type, esize, from, stream);
    }
  }
  return parts_end(&parts, res);
}

static xcclResult_t p2p_coll(const char *name, p2p_coll_t kind, const void *sendbuff, void *recvbuff, size_t count,
                             xcclDataType_t type, int root, xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = p2p_coll_run(comm, name, kind, sendbuff, recvbuff, count, type, root, stream);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

xcclResult_t xcclGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype, int root,
                        xcclComm_t comm, void *stream) {
  return p2p_coll("gather", P2P_GATHER, sendbuff, recvbuff, sendcount, datatype, root, comm, stream);
}

xcclResult_t xcclScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype, int root,
                         xcclComm_t comm, void *stream) {
  return p2p_coll("scatter", P2P_SCATTER, sendbuff, recvbuff, recvcount, datatype, root, comm, stream);
}

xcclResult_t xcclAllToAll(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype,
                          xcclComm_t comm, void *stream) {
  return p2p_coll("alltoall", P2P_ALLTOALL, sendbuff, recvbuff, count, datatype, -1, comm, stream);
}

/* Where all-to-all-v's counts and displacements put the bytes of one side,
 * as the extent [0, *extent) they cover in its buffer; -1 on overflow. */
static int a2av_extent(const size_t *counts, const size_t *displs, int n, size_t esize, size_t *extent, size_t *total) {
  size_t ext = 0, sum = 0, lim = (SIZE_MAX / 2) / esize;
  for (int p = 0; p < n; p++) {
    if (counts[p] > lim || displs[p] > lim - counts[p]) return -1;
    if (counts[p] && displs[p] + counts[p] > ext) ext = displs[p] + counts[p];
    sum += counts[p];
    if (sum > lim) return -1;
  }
  *extent = ext * esize;
  *total = sum;
  return 0;
}

/* XCCL_CHECK: every rank sees every rank's counts, so that all refuse
 * together when one pair disagrees (rank a sends x to b, b expects y). */
static xcclResult_t check_a2av_counts(xcclComm_t comm, uint64_t seq, const size_t *sendcounts,
                                      const size_t *recvcounts) {
  int n = comm->nranks;
  uint64_t *all = calloc((size_t)n * 2 * (size_t)n, sizeof(*all));
  if (!all) return err_set(xcclSystemError, LOG_COLL, "XCCL_CHECK: out of memory for %d ranks' counts", n);
  uint64_t *mine = all + (size_t)comm->rank * 2 * (size_t)n;
  for (int p = 0; p < n; p++) mine[p] = sendcounts[p], mine[n + p] = recvcounts[p];
  xcclResult_t res = bootstrap_allgather(comm->bs, all, 2 * (size_t)n * sizeof(*all));
  if (res != xcclSuccess) {
    free(all);
    return err_prefix(res, "XCCL_CHECK of alltoallv #%llu", (unsigned long long)seq);
  }
  for (int a = 0; a < n && res == xcclSuccess; a++)
    for (int b = 0; b < n; b++) {
      uint64_t sent = all[(size_t)a * 2 * (size_t)n + (size_t)b];
      uint64_t expected = all[(size_t)b * 2 * (size_t)n + (size_t)n + (size_t)a];
      if (sent == expected) continue;
      res = err_set(xcclInvalidUsage, LOG_COLL,
                    "XCCL_CHECK: alltoallv #%llu: rank %d's sendcounts[%d] is %llu but rank %d's recvcounts[%d] is "
                    "%llu; they must be equal",
                    (unsigned long long)seq, a, b, (unsigned long long)sent, b, a, (unsigned long long)expected);
      break;
    }
  free(all);
  return res;
}

/* All-to-all-v's checks (comm held), which its sends and receives then
 * skip; the extents and totals in *ext (send, recv) and *tot. */
static xcclResult_t a2av_check(xcclComm_t comm, const char *name, const void *sendbuff, const size_t *sendcounts,
                               const size_t *sdispls, const void *recvbuff, const size_t *recvcounts,
                               const size_t *rdispls, size_t esize, void *stream, size_t ext[2], size_t tot[2]) {
  int n = comm->nranks;
  const char *s = sendbuff, *r = recvbuff;
  if (!sendcounts || !sdispls || !recvcounts || !rdispls)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL (every rank passes four arrays of %d entries)",
                   name, !sendcounts ? "sendcounts" : !sdispls ? "sdispls" : !recvcounts ? "recvcounts" : "rdispls",
                   n);
  if (a2av_extent(sendcounts, sdispls, n, esize, &ext[0], &tot[0]) ||
      a2av_extent(recvcounts, rdispls, n, esize, &ext[1], &tot[1]))
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: a count plus its displacement overflows the address space",
                   name);
  if (!tot[0] && !tot[1]) return xcclSuccess; /* nothing moves: nothing more to check */
  TRY(op_check_usable(name, comm, stream));
  TRY(op_check_buffer(name, "sendbuff", sendbuff, tot[0], esize));
  TRY(op_check_buffer(name, "recvbuff", recvbuff, tot[1], esize));
  if (tot[0] && tot[1] && s < r + ext[1] && r < s + ext[0])
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: sendbuff %p (%zu bytes used) and recvbuff %p (%zu bytes used) overlap (all-to-all-v is never "
                   "in place)",
                   name, sendbuff, ext[0], recvbuff, ext[1]);
  return xcclSuccess;
}

static xcclResult_t a2av_run(xcclComm_t comm, const void *sendbuff, const size_t *sendcounts, const size_t *sdispls,
                             void *recvbuff, const size_t *recvcounts, const size_t *rdispls, xcclDataType_t datatype,
                             void *stream) {
  const char *name = "alltoallv";
  int n = comm->nranks, me = comm->rank;
  size_t esize = 0, ext[2] = {0, 0}, tot[2] = {0, 0};
  uint64_t seq = 0;
  xcclResult_t res = op_check_type(name, datatype, &esize);
  if (res == xcclSuccess)
    res = a2av_check(comm, name, sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, esize, stream, ext,
                     tot);
  /* Counts differ between ranks by design, so XCCL_CHECK compares the call
   * and type only, then each pair's counts; a send and receive of different
   * sizes is caught by the point-to-point layer, which names both. */
  int checked = comm->check && !comm->failed;
  TRY(op_number(comm, res, name, 0, datatype, -1, -1, &seq));
  if (checked) TRY(check_a2av_counts(comm, seq, sendcounts, recvcounts));
  comm_count_op(comm, COMM_STATS_ALLTOALLV, COMM_STATS_P2P);
  if (!tot[0] && !tot[1]) return xcclSuccess;
  const char *s = sendbuff;
  char *r = recvbuff;
  p2p_parts_t parts;
  res = parts_begin(&parts);
  for (int i = 0; i < n && res == xcclSuccess; i++) { /* pairwise order, as p2p_coll's */
    int to = (me + i) % n, from = (me - i + n) % n;
    if (sendcounts[to])
      res = p2p_add(comm, name, seq, GROUP_SEND, (void *)(s + sdispls[to] * esize), sendcounts[to], datatype, esize,
                    to, stream);
    if (recvcounts[from] && res == xcclSuccess)
      res = p2p_add(comm, name, seq, GROUP_RECV, r + rdispls[from] * esize, recvcounts[from], datatype, esize, from,
                    stream);
  }
  return parts_end(&parts, res);
}

xcclResult_t xcclAllToAllv(const void *sendbuff, const size_t *sendcounts, const size_t *sdispls, void *recvbuff,
                           const size_t *recvcounts, const size_t *rdispls, xcclDataType_t datatype, xcclComm_t comm,
                           void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res =
      a2av_run(comm, sendbuff, sendcounts, sdispls, recvbuff, recvcounts, rdispls, datatype, stream);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

xcclResult_t xcclBarrier(xcclComm_t comm) {
  if (group_open())
    return comm_record(comm, err_set(xcclInvalidUsage, LOG_COLL,
                                     "xcclBarrier inside a group would not wait: call it outside the group"));
  static _Thread_local uint8_t token; /* the value does not matter */
  return xcclAllReduce(&token, &token, 1, xcclUint8, xcclMax, comm, NULL);
}
