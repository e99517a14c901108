/*
 * enqueue.c — the entry points of the collectives and of sends and
 * receives: check every argument, number the operation, choose its
 * algorithm (tuning.h), and hand it to the group (group.h) or, for device
 * buffers, to the stream. A kernel's failure becomes a sentence in group.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "comm_stats.h"
#include "group.h"
#include "log.h"
#include "redop.h"
#include "reg.h"
#include "reduce.h"
#include "tuning.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h" /* device buffers: classified per call, enqueued on the stream */
#endif

static xcclResult_t check_buffer(const char *fn, const char *what, const void *p, size_t elems, size_t esize) {
  if (elems == 0) return xcclSuccess;
  if (!p) return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL with count > 0", fn, what);
  if ((uintptr_t)p & (esize - 1)) /* every type's size is a power of two; no division on the call path */
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is not aligned to the %zu-byte element size", fn, what,
                   p, esize);
  return xcclSuccess;
}

/* The only overlap allowed is the collective's in-place layout. */
static xcclResult_t check_overlap(xcclComm_t comm, const coll_args_t *a, size_t esize) {
  const char *s = a->sendbuff, *r = a->recvbuff;
  size_t sb = a->send_elems * esize, rb = a->recv_elems * esize;
  if (!sb || !rb || !(s < r + rb && r < s + sb)) return xcclSuccess;
  size_t own = (size_t)comm->rank * a->count * esize;
  const char *rule;
  switch (a->coll) {
    case COLL_ALLGATHER:
      if (s == r + own) return xcclSuccess;
      rule = "sendbuff == recvbuff + rank * sendcount";
      break;
    case COLL_REDUCESCATTER:
      if (r == s + own) return xcclSuccess;
      rule = "recvbuff == sendbuff + rank * recvcount";
      break;
    default:
      if (s == r) return xcclSuccess;
      rule = "sendbuff == recvbuff";
  }
  return err_set(xcclInvalidArgument, LOG_COLL,
                 "%s: sendbuff %p and recvbuff %p overlap without being in place (in place needs %s)", a->name,
                 a->sendbuff, a->recvbuff, rule);
}

static xcclResult_t coll_check(xcclComm_t comm, const coll_args_t *a, void *stream) {
  const char *fn = a->name;
  if ((unsigned)a->type >= xcclNumTypes)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", fn, (int)a->type,
                   xcclNumTypes - 1);
  if (coll_has_op(a) && (unsigned)a->op >= xcclNumOps)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown reduction op %d (valid: 0..%d)", fn, (int)a->op,
                   xcclNumOps - 1);
  if (coll_has_root(a) && (a->root < 0 || a->root >= comm->nranks))
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: root %d is not a rank of this communicator (0..%d)", fn,
                   a->root, comm->nranks - 1);
  size_t esize = kern_type_size(a->type), total;
  if (__builtin_mul_overflow(a->count, esize * (size_t)comm->nranks, &total) || total > SIZE_MAX / 2)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", fn, a->count,
                   kern_type_name(a->type));
  TRY(check_buffer(fn, "sendbuff", a->sendbuff, a->send_elems, esize));
  TRY(check_buffer(fn, "recvbuff", a->recvbuff, a->recv_elems, esize));
  TRY(check_overlap(comm, a, esize));
#ifndef XCCL_HAVE_CUDA
  if (stream)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: stream %p given, but this build of xccl has no CUDA support: pass NULL for host buffers", fn,
                   stream);
#endif
  if (comm->failed)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: the communicator failed in an earlier operation (%s); destroy or abort it and make a new one",
                   fn, comm->fail_msg);
  return xcclSuccess;
}

/* One rank: what the collective leaves in recvbuff is sendbuff (or nothing). */
static void coll_single_rank(const coll_args_t *a, size_t esize) {
  size_t bytes = a->recv_elems * esize;
  if (bytes && a->sendbuff && a->sendbuff != a->recvbuff) memcpy(a->recvbuff, a->sendbuff, bytes);
}

/* One rank with a PreMulSum op: recvbuff is sendbuff times the scalar. */
static void coll_single_rank_premul(const coll_args_t *a, const redop_premul_t *pm) {
  if (a->recv_elems && a->sendbuff) redop_scale(pm, a->recvbuff, a->sendbuff, a->recv_elems);
}

/* Checks, numbers and submits a collective: done here when nothing needs
 * moving, else run now or at xcclGroupEnd. */
/* The buffers a uses lie in windows that every rank registered in
 * xcclMemAlloc memory (reg.c): every rank's can be mapped by its peers. As
 * with NCCL's symmetric windows, the ranks pass their windows' buffers
 * alike, so they agree. */
static int coll_in_windows(xcclComm_t comm, const coll_args_t *a) {
  size_t esize = kern_type_size(a->type), sb = a->send_elems * esize, rb = a->recv_elems * esize;
  comm_win_memo_t *m = &comm->win_memo;
  uint64_t gen = atomic_load(&comm->windows_gen);
  /* A loop passes the same buffers again and again: two lookups under the
   * registry's lock would cost a small call a tenth of its time. */
  if (m->gen == gen && gen && m->send == a->sendbuff && m->recv == a->recvbuff && m->send_bytes == sb &&
      m->recv_bytes == rb)
    return m->in;
  const struct xcclWindow *w;
  int in = (a->send_elems || a->recv_elems) &&
           (!a->send_elems || ((w = reg_find_window(comm, a->sendbuff, sb)) && w->all_shared)) &&
           (!a->recv_elems || ((w = reg_find_window(comm, a->recvbuff, rb)) && w->all_shared));
  *m = (comm_win_memo_t){
      .gen = gen, .send = a->sendbuff, .recv = a->recvbuff, .send_bytes = sb, .recv_bytes = rb, .in = in};
  return in;
}

/* The algorithm for coll of `bytes` (the schedule's count), its buffers in
 * windows every rank shares (in_windows) or not. The last answer is kept:
 * the tuner weighs every algorithm's cost, which a loop of calls of one
 * size would pay each time. */
static algo_t coll_pick(struct xcclComm *comm, coll_kind_t coll, size_t bytes, int in_windows) {
  comm_pick_memo_t *m = &comm->pick_memo;
  if (m->valid && m->bytes == bytes && m->coll == (int)coll && m->in_windows == in_windows) return m->algo;
  algo_site_t site = comm->site;
  site.zero_agreed = in_windows;
  algo_t a = tuning_pick(comm->algo_forced, coll, bytes, comm->nranks, comm->peers[comm->rank].chunk_size, &site);
  *m = (comm_pick_memo_t){.valid = 1, .coll = (int)coll, .in_windows = in_windows, .bytes = bytes, .algo = a};
  return a;
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
  TRY(comm_acquire(comm));
  int c = collective ? tuning_coll_lookup(collective) : -1;
  size_t esize = xcclTypeSize(datatype);
  xcclResult_t res = xcclSuccess;
  if (!algorithm)
    res = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAlgorithm: algorithm is NULL");
  else if (c < 0)
    res = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAlgorithm: %s", not_algo_coll(collective));
  else if (esize == 0)
    res = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAlgorithm: unknown datatype %d", (int)datatype);
  else if (count > SIZE_MAX / esize)
    res = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAlgorithm: %zu elements of %zu bytes overflow", count,
                  esize);
  else
    *algorithm = algo_name(coll_pick(comm, (coll_kind_t)c, count * esize, 0));
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

static xcclResult_t coll_run(xcclComm_t comm, const coll_args_t *user, void *stream) {
  TRY(comm_acquire(comm));
  coll_args_t args = *user, *a = &args;
  redop_premul_t pm = {0};
  xcclResult_t res = xcclSuccess;
  /* An op of xcclRedOpCreatePreMulSum runs as a sum of scaled inputs. */
  if (coll_has_op(a) && (int)a->op >= (int)xcclNumOps) res = redop_resolve(comm, a, &pm);
  if (res == xcclSuccess) res = coll_check(comm, a, stream);
  int on_device = 0;
#ifdef XCCL_HAVE_CUDA
  size_t eb = kern_type_size(a->type);
  cuda_buf_t bufs[2] = {{"sendbuff", a->sendbuff, a->send_elems * eb}, {"recvbuff", a->recvbuff, a->recv_elems * eb}};
  if (res == xcclSuccess) res = enqueue_cuda_where(a->name, bufs, 2, stream, &on_device);
  if (res == xcclSuccess && on_device && pm.on)
    res = err_set(xcclInvalidUsage, LOG_COLL, "%s: PreMulSum ops run on host buffers only for now", a->name);
#endif
  /* Field by field: an initializer would clear the whole struct first (a
   * string store that starts slowly), on every small call. */
  group_op_t op;
  op.kind = GROUP_COLL, op.comm = comm, op.seq = 0, op.coll = *a, op.premul = pm;
  op.peer = -1, op.buf = NULL, op.bytes = 0;
  int submit = 0;
  if (comm->check && !comm->failed) {
    /* A rank that refused its arguments still takes part, so that the
     * others learn of it at once instead of waiting for it. */
    op.seq = ++comm->seq;
    xcclResult_t c = check_collective(comm, op.seq, res == xcclSuccess ? a->name : "(refused)", a->count, a->type,
                                      coll_has_op(a) ? (int)a->op : -1, a->root);
    if (res == xcclSuccess) res = c;
  } else if (res == xcclSuccess) {
    op.seq = ++comm->seq;
  }
  if (res == xcclSuccess) {
    int in_windows =
        comm->site.direct && !comm->site.direct_forced && !on_device && atomic_load(&comm->windows_shared) &&
        coll_in_windows(comm, a);
    op.coll.algo = coll_pick(comm, a->coll, a->count * kern_type_size(a->type), in_windows);
    comm_stats_op(comm, a->coll, op.coll.algo);
    TRACE(COLL, "%s #%llu count %zu %s %s", a->name, (unsigned long long)op.seq, a->count, kern_type_name(a->type),
          algo_name(op.coll.algo));
    /* One rank: a copy, now; inside a group at xcclGroupEnd, like any
     * operation (xcclGroupSimulateEnd then drops it too). */
    int local = a->count > 0 && comm->nranks == 1 && !on_device, grouped = group_open();
    if (local && !grouped && pm.on) coll_single_rank_premul(a, &pm);
    else if (local && !grouped) coll_single_rank(a, kern_type_size(a->type));
    submit = a->count > 0 && (comm->nranks > 1 || on_device || grouped);
  }
#ifdef XCCL_HAVE_CUDA
  if (res == xcclSuccess && submit && on_device) res = enqueue_cuda_submit(&op, stream), submit = 0;
  if (res == xcclSuccess && submit) res = enqueue_cuda_host_fence(comm, a->name);
#endif
  if (res == xcclSuccess && submit) res = group_add_held(&op);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

/* The number of ranks, read before the communicator is checked: only used to
 * size buffers, and coll_run refuses a bad handle before touching them. */
static int coll_nranks(xcclComm_t comm) {
  int n = 1;
  if (comm_acquire_quiet(comm)) {
    n = comm->nranks;
    comm_release(comm);
  }
  return n;
}

static int coll_rank(xcclComm_t comm) {
  int r = -1;
  if (comm_acquire_quiet(comm)) {
    r = comm->rank;
    comm_release(comm);
  }
  return r;
}

xcclResult_t xcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype,
                           xcclRedOp_t op, xcclComm_t comm, void *stream) {
  coll_args_t a = {"allreduce", COLL_ALLREDUCE, sendbuff, recvbuff, count, count, count, datatype, op, -1, ALGO_RING};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype,
                           xcclComm_t comm, void *stream) {
  size_t n = (size_t)coll_nranks(comm);
  size_t total = sendcount <= SIZE_MAX / n ? sendcount * n : SIZE_MAX;
  coll_args_t a = {"allgather", COLL_ALLGATHER, sendbuff, recvbuff, sendcount, sendcount, total, datatype,
                   xcclNumOps, -1, ALGO_RING};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype,
                               xcclRedOp_t op, xcclComm_t comm, void *stream) {
  size_t n = (size_t)coll_nranks(comm);
  size_t total = recvcount <= SIZE_MAX / n ? recvcount * n : SIZE_MAX;
  coll_args_t a = {"reducescatter", COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, total, recvcount, datatype,
                   op, -1, ALGO_RING};
  if (n == 1) a.send_elems = recvcount;
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, int root,
                           xcclComm_t comm, void *stream) {
  int is_root = coll_rank(comm) == root;
  coll_args_t a = {"broadcast", COLL_BROADCAST, is_root ? sendbuff : NULL, recvbuff, count, is_root ? count : 0,
                   count, datatype, xcclNumOps, root, ALGO_RING};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclBcast(void *buff, size_t count, xcclDataType_t datatype, int root, xcclComm_t comm, void *stream) {
  return xcclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

xcclResult_t xcclReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, xcclRedOp_t op,
                        int root, xcclComm_t comm, void *stream) {
  int is_root = coll_rank(comm) == root;
  coll_args_t a = {"reduce", COLL_REDUCE, sendbuff, is_root ? recvbuff : NULL, count, count, is_root ? count : 0,
                   datatype, op, root, ALGO_RING};
  return coll_run(comm, &a, stream);
}

/* ---- Point to point ---- */

/* Checks a send or receive, which may be part of a collective (name, and
 * seq != 0: the collective's number), and submits it. */
static xcclResult_t p2p_submit(const char *name, uint64_t seq, group_kind_t kind, void *buf, size_t count,
                               xcclDataType_t type, int peer, xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  size_t esize = xcclTypeSize(type);
  if ((unsigned)type >= xcclNumTypes)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", name, (int)type,
                  xcclNumTypes - 1);
  else if (peer < 0 || peer >= comm->nranks)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: peer %d is not a rank of this communicator (0..%d)", name, peer,
                  comm->nranks - 1);
  else if (count > (SIZE_MAX / 2) / esize)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", name, count,
                  kern_type_name(type));
#ifndef XCCL_HAVE_CUDA
  else if (stream)
    res = err_set(xcclInvalidArgument, LOG_COLL,
                  "%s: stream %p given, but this build of xccl has no CUDA support: pass NULL for host buffers", name,
                  stream);
#endif
  else if (comm->failed)
    res = err_set(xcclInvalidUsage, LOG_COLL,
                  "%s: the communicator failed in an earlier operation (%s); destroy or abort it and make a new one",
                  name, comm->fail_msg);
  if (res == xcclSuccess) res = check_buffer(name, "buff", buf, count, esize);
#ifdef XCCL_HAVE_CUDA
  int on_device = 0;
  cuda_buf_t cb = {"buff", buf, count * esize};
  if (res == xcclSuccess) res = enqueue_cuda_where(name, &cb, 1, stream, &on_device);
#endif
  group_op_t op = {.kind = kind, .comm = comm, .peer = peer, .buf = buf, .bytes = count * esize};
  op.coll = (coll_args_t){.name = name, .count = count, .type = type, .op = xcclNumOps, .root = -1};
  if (res == xcclSuccess) op.seq = seq ? seq : ++comm->seq;
  if (res == xcclSuccess && !seq)
    comm_stats_op(comm, kind == GROUP_SEND ? COMM_STATS_SEND : COMM_STATS_RECV, COMM_STATS_P2P);
  comm_release(comm);
  if (res != xcclSuccess) return comm_record(comm, res);
#ifdef XCCL_HAVE_CUDA
  if (count) res = on_device ? enqueue_cuda_submit(&op, stream) : enqueue_cuda_host_fence(comm, name);
  if (res != xcclSuccess || (count && on_device)) return res == xcclSuccess ? res : comm_record(comm, res);
#endif
  return count ? group_add(&op) : xcclSuccess; /* nothing to move, nothing to match */
}

xcclResult_t xcclSend(const void *sendbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream) {
  return p2p_submit("send", 0, GROUP_SEND, (void *)sendbuff, count, datatype, peer, comm, stream);
}

xcclResult_t xcclRecv(void *recvbuff, size_t count, xcclDataType_t datatype, int peer, xcclComm_t comm,
                      void *stream) {
  return p2p_submit("recv", 0, GROUP_RECV, recvbuff, count, datatype, peer, comm, stream);
}

/* ---- Collectives made of sends and receives ---- */

typedef enum { P2P_GATHER, P2P_SCATTER, P2P_ALLTOALL } p2p_coll_t;

/* Checks what the sends and receives cannot: root, total sizes, overlap.
 * Returns the collective's number in *seq_p. */
static xcclResult_t p2p_coll_check(const char *name, p2p_coll_t kind, const void *sendbuff, const void *recvbuff,
                                   size_t count, xcclDataType_t type, int root, xcclComm_t comm, uint64_t *seq_p,
                                   int *nranks_p, int *rank_p) {
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  int n = comm->nranks, me = comm->rank;
  size_t esize = xcclTypeSize(type);
  if ((unsigned)type >= xcclNumTypes)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", name, (int)type,
                  xcclNumTypes - 1);
  else if (kind != P2P_ALLTOALL && (root < 0 || root >= n))
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: root %d is not a rank of this communicator (0..%d)", name, root,
                  n - 1);
  else if (count > (SIZE_MAX / 2) / esize / (size_t)n)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", name, count,
                  kern_type_name(type));
  if (res == xcclSuccess && count) {
    size_t blk = count * esize, all = blk * (size_t)n;
    size_t sb = kind == P2P_GATHER ? blk : (kind == P2P_SCATTER ? (me == root ? all : 0) : all);
    size_t rb = kind == P2P_SCATTER ? blk : (kind == P2P_GATHER ? (me == root ? all : 0) : all);
    const char *s = sendbuff, *r = recvbuff;
    if (sb && !s) res = err_set(xcclInvalidArgument, LOG_COLL, "%s: sendbuff is NULL with count > 0", name);
    else if (rb && !r) res = err_set(xcclInvalidArgument, LOG_COLL, "%s: recvbuff is NULL with count > 0", name);
    else if ((sb && (uintptr_t)s % esize) || (rb && (uintptr_t)r % esize))
      res = err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is not aligned to the %zu-byte element size", name,
                    sb && (uintptr_t)s % esize ? "sendbuff" : "recvbuff",
                    sb && (uintptr_t)s % esize ? sendbuff : recvbuff, esize);
    else if (sb && rb && s < r + rb && r < s + sb) {
      /* in place: the root's own block is already where it belongs */
      int ok = (kind == P2P_GATHER && s == r + (size_t)root * blk) || (kind == P2P_SCATTER && r == s + (size_t)root * blk);
      if (!ok)
        res = err_set(xcclInvalidArgument, LOG_COLL, "%s: sendbuff %p and recvbuff %p overlap%s", name, sendbuff,
                      recvbuff,
                      kind == P2P_ALLTOALL ? " (all-to-all is never in place)"
                      : kind == P2P_GATHER ? " without being in place (sendbuff == recvbuff + root * sendcount)"
                                           : " without being in place (recvbuff == sendbuff + root * recvcount)");
    }
  }
  if (comm->check && !comm->failed) { /* a rank that refused still takes part (see coll_run) */
    uint64_t seq = ++comm->seq;
    xcclResult_t c = check_collective(comm, seq, res == xcclSuccess ? name : "(refused)", count, type, -1, root);
    if (res == xcclSuccess) res = c, *seq_p = seq;
  } else if (res == xcclSuccess) {
    *seq_p = ++comm->seq;
  }
  if (res == xcclSuccess) *nranks_p = n, *rank_p = me;
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
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
 * XCCL_ALGO picks it for host buffers on 2 or more ranks; sets *done.
 * Pairwise runs as p2p_coll's sends and receives. */
static xcclResult_t alltoall_bruck(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t type,
                                   xcclComm_t comm, void *stream, uint64_t seq, int *done) {
  *done = 0;
  if (stream) return xcclSuccess; /* device buffers: their sends and receives */
  TRY(comm_acquire(comm));
  int n = comm->nranks;
  size_t total = count * (size_t)n;
  coll_args_t a = {"alltoall", COLL_ALLTOALL, sendbuff, recvbuff, count, total, total, type, xcclNumOps, -1,
                   ALGO_BRUCK};
  xcclResult_t res = xcclSuccess;
  int on_device = 0;
#ifdef XCCL_HAVE_CUDA
  size_t eb = xcclTypeSize(type);
  cuda_buf_t bufs[2] = {{"sendbuff", sendbuff, total * eb}, {"recvbuff", recvbuff, total * eb}};
  res = enqueue_cuda_where(a.name, bufs, 2, stream, &on_device);
#endif
  if (res == xcclSuccess && !on_device && n > 1 && coll_pick(comm, COLL_ALLTOALL, count * xcclTypeSize(type), 0) == ALGO_BRUCK) {
    TRACE(COLL, "alltoall #%llu count %zu %s bruck", (unsigned long long)seq, count, kern_type_name(type));
    group_op_t op = {.kind = GROUP_COLL, .comm = comm, .seq = seq, .coll = a};
    res = group_add_held(&op);
    *done = 1;
  }
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

static xcclResult_t p2p_coll(const char *name, p2p_coll_t kind, const void *sendbuff, void *recvbuff, size_t count,
                             xcclDataType_t type, int root, xcclComm_t comm, void *stream) {
  uint64_t seq = 0;
  int n = 0, me = 0, done = 0;
  TRY(p2p_coll_check(name, kind, sendbuff, recvbuff, count, type, root, comm, &seq, &n, &me));
  size_t blk = count * xcclTypeSize(type);
  if (kind == P2P_ALLTOALL && count) TRY(alltoall_bruck(sendbuff, recvbuff, count, type, comm, stream, seq, &done));
  static const int stats_op[] = {
      [P2P_GATHER] = COMM_STATS_GATHER, [P2P_SCATTER] = COMM_STATS_SCATTER, [P2P_ALLTOALL] = COLL_ALLTOALL};
  comm_stats_op(comm, stats_op[kind], kind != P2P_ALLTOALL ? COMM_STATS_P2P : done ? ALGO_BRUCK : ALGO_PAIRWISE);
  if (count == 0 || done) return xcclSuccess;
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
      res = p2p_submit(name, seq, GROUP_SEND, (void *)sp, count, type, to, comm, stream);
    }
    if (recv && res == xcclSuccess) {
      char *rp = kind == P2P_SCATTER ? r : r + (size_t)from * blk;
      res = p2p_submit(name, seq, GROUP_RECV, rp, count, type, from, comm, stream);
    }
  }
  return parts_end(&parts, res);
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

xcclResult_t xcclAllToAllv(const void *sendbuff, const size_t *sendcounts, const size_t *sdispls, void *recvbuff,
                           const size_t *recvcounts, const size_t *rdispls, xcclDataType_t datatype, xcclComm_t comm,
                           void *stream) {
  const char *name = "alltoallv";
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  int n = comm->nranks, me = comm->rank;
  size_t esize = xcclTypeSize(datatype), sext = 0, rext = 0, stot = 0, rtot = 0;
  const char *s = sendbuff, *r = recvbuff;
  if ((unsigned)datatype >= xcclNumTypes)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", name, (int)datatype,
                  xcclNumTypes - 1);
  else if (!sendcounts || !sdispls || !recvcounts || !rdispls)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL (every rank passes four arrays of %d entries)", name,
                  !sendcounts ? "sendcounts" : !sdispls ? "sdispls" : !recvcounts ? "recvcounts" : "rdispls", n);
  else if (a2av_extent(sendcounts, sdispls, n, esize, &sext, &stot) ||
           a2av_extent(recvcounts, rdispls, n, esize, &rext, &rtot))
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: a count plus its displacement overflows the address space",
                  name);
  else if (stot && !s)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: sendbuff is NULL with %zu elements to send", name, stot);
  else if (rtot && !r)
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: recvbuff is NULL with %zu elements to receive", name, rtot);
  else if ((stot && (uintptr_t)s % esize) || (rtot && (uintptr_t)r % esize))
    res = err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is not aligned to the %zu-byte element size", name,
                  stot && (uintptr_t)s % esize ? "sendbuff" : "recvbuff",
                  stot && (uintptr_t)s % esize ? sendbuff : recvbuff, esize);
  else if (stot && rtot && s < r + rext && r < s + sext)
    res = err_set(xcclInvalidArgument, LOG_COLL,
                  "%s: sendbuff %p (%zu bytes used) and recvbuff %p (%zu bytes used) overlap (all-to-all-v is never "
                  "in place)",
                  name, sendbuff, sext, recvbuff, rext);
  uint64_t seq = 0;
  /* Counts differ between ranks by design, so XCCL_CHECK compares the call
   * and type only; a send and receive of different sizes is caught by the
   * point-to-point layer, which names both. */
  if (comm->check && !comm->failed) {
    seq = ++comm->seq;
    xcclResult_t c = check_collective(comm, seq, res == xcclSuccess ? name : "(refused)", 0, datatype, -1, -1);
    if (c == xcclSuccess && res == xcclSuccess) c = check_a2av_counts(comm, seq, sendcounts, recvcounts);
    if (res == xcclSuccess) res = c;
  } else if (res == xcclSuccess) {
    seq = ++comm->seq;
  }
  if (res == xcclSuccess) comm_stats_op(comm, COMM_STATS_ALLTOALLV, COMM_STATS_P2P);
  comm_release(comm);
  if (res != xcclSuccess) return comm_record(comm, res);
  if (!stot && !rtot) return xcclSuccess;
  p2p_parts_t parts;
  res = parts_begin(&parts);
  for (int i = 0; i < n && res == xcclSuccess; i++) { /* pairwise order, as p2p_coll's */
    int to = (me + i) % n, from = (me - i + n) % n;
    if (sendcounts[to])
      res = p2p_submit(name, seq, GROUP_SEND, (void *)(s + sdispls[to] * esize), sendcounts[to], datatype, to, comm,
                       stream);
    if (recvcounts[from] && res == xcclSuccess)
      res = p2p_submit(name, seq, GROUP_RECV, (char *)recvbuff + rdispls[from] * esize, recvcounts[from], datatype,
                       from, comm, stream);
  }
  return parts_end(&parts, res);
}

xcclResult_t xcclBarrier(xcclComm_t comm) {
  if (group_open())
    return comm_record(comm, err_set(xcclInvalidUsage, LOG_COLL,
                                     "xcclBarrier inside a group would not wait: call it outside the group"));
  static _Thread_local uint8_t token; /* the value does not matter */
  return xcclAllReduce(&token, &token, 1, xcclUint8, xcclMax, comm, NULL);
}
