/*
 * op.c — a call's one preparation step (op.h): the argument checks, each
 * refusal's sentence written once, and the op record filled for the layers
 * below (group launch, algorithms, redop, CUDA enqueue, trace and stats).
 */
#include "op.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "redop.h"
#include "reduce.h"
#include "reg.h"
#include "tuning.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h" /* device buffers: classified per call */
#endif

xcclResult_t op_check_type(const char *fn, xcclDataType_t type, size_t *esize_p) {
  if ((unsigned)type >= xcclNumTypes)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", fn, (int)type,
                   xcclNumTypes - 1);
  *esize_p = kern_type_size(type);
  return xcclSuccess;
}

xcclResult_t op_check_rank(const char *fn, const char *what, int r, int nranks) {
  if (r >= 0 && r < nranks) return xcclSuccess;
  return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %d is not a rank of this communicator (0..%d)", fn, what, r,
                 nranks - 1);
}

xcclResult_t op_check_count(const char *fn, size_t count, size_t esize, size_t times, xcclDataType_t type) {
  size_t total;
  if (!__builtin_mul_overflow(count, esize * times, &total) && total <= SIZE_MAX / 2) return xcclSuccess;
  return err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", fn, count,
                 kern_type_name(type));
}

xcclResult_t op_check_buffer(const char *fn, const char *what, const void *p, size_t elems, size_t esize) {
  if (elems == 0) return xcclSuccess;
  if (!p)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL with count > 0 (%zu elements)", fn, what, elems);
  if ((uintptr_t)p & (esize - 1)) /* every type's size is a power of two; no division on the call path */
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is not aligned to the %zu-byte element size", fn, what,
                   p, esize);
  return xcclSuccess;
}

xcclResult_t op_check_usable(const char *fn, const struct xcclComm *comm, void *stream) {
#ifndef XCCL_HAVE_CUDA
  if (stream)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: stream %p given, but this build of xccl has no CUDA support: pass NULL for host buffers", fn,
                   stream);
#else
  (void)stream;
#endif
  if (comm->failed)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: the communicator failed in an earlier operation (%s); destroy or abort it and make a new one",
                   fn, comm->fail_msg);
  return xcclSuccess;
}

xcclResult_t op_number(struct xcclComm *comm, xcclResult_t res, const char *fn, size_t count, xcclDataType_t type,
                       int op, int root, uint64_t *seq_p) {
  if (comm->check && !comm->failed) {
    uint64_t seq = ++comm->seq;
    xcclResult_t c = check_collective(comm, seq, res == xcclSuccess ? fn : "(refused)", count, type, op, root);
    if (res == xcclSuccess && c == xcclSuccess) *seq_p = seq;
    return res == xcclSuccess ? c : res;
  }
  if (res == xcclSuccess) *seq_p = ++comm->seq;
  return res;
}

/* Whether the last collective's buffers lay in windows every rank shares
 * (coll_in_windows), while windows_gen was `gen`. */
typedef struct {
  uint64_t gen;
  const void *send, *recv;
  size_t send_bytes, recv_bytes;
  int in;
} op_win_memo_t;

/* The tuner's last answer (op_pick), on the site of site_gen (comm_site_edit). */
typedef struct {
  int valid, coll, in_windows;
  unsigned site_gen;
  size_t bytes;
  algo_t algo;
} op_pick_memo_t;

/* The answers the preparation step keeps on a communicator between calls
 * (comm->op_memo): a loop of calls of one size asks the same questions each
 * time. */
struct op_memo {
  op_win_memo_t win;
  op_pick_memo_t pick;
};

/* comm's memo, made at its first call (freed with comm); NULL when out of
 * memory: nothing is kept then. A query on another thread may make it at
 * the same time: one of the two is kept. */
static struct op_memo *op_memo_of(struct xcclComm *comm) {
  struct op_memo *m = atomic_load_explicit(&comm->op_memo, memory_order_acquire), *none = NULL;
  if (m || !(m = calloc(1, sizeof(*m)))) return m;
  if (atomic_compare_exchange_strong(&comm->op_memo, &none, m)) return m;
  free(m);
  return none;
}

/* The buffers a uses lie in windows that every rank registered in
 * xcclMemAlloc memory (reg.c): every rank's can be mapped by its peers. As
 * with NCCL's symmetric windows, the ranks pass their windows' buffers
 * alike, so they agree. */
static int coll_in_windows(struct xcclComm *comm, const coll_args_t *a) {
  size_t sb = a->send_elems * a->esize, rb = a->recv_elems * a->esize;
  struct op_memo *memo = op_memo_of(comm);
  uint64_t gen = atomic_load(&comm->windows_gen);
  /* A loop passes the same buffers again and again: two lookups under the
   * registry's lock would cost a small call a tenth of its time. */
  const op_win_memo_t *m = memo ? &memo->win : NULL;
  if (m && m->gen == gen && gen && m->send == a->sendbuff && m->recv == a->recvbuff && m->send_bytes == sb &&
      m->recv_bytes == rb)
    return m->in;
  const struct xcclWindow *w;
  int in = (a->send_elems || a->recv_elems) &&
           (!a->send_elems || ((w = reg_find_window(comm, a->sendbuff, sb)) && w->all_shared)) &&
           (!a->recv_elems || ((w = reg_find_window(comm, a->recvbuff, rb)) && w->all_shared));
  if (memo)
    memo->win = (op_win_memo_t){
        .gen = gen, .send = a->sendbuff, .recv = a->recvbuff, .send_bytes = sb, .recv_bytes = rb, .in = in};
  return in;
}

/* The last answer is kept: the tuner weighs every algorithm's cost, which a
 * loop of calls of one size would pay each time. */
algo_t op_pick(struct xcclComm *comm, coll_kind_t coll, size_t bytes, int in_windows) {
  struct op_memo *memo = op_memo_of(comm);
  const op_pick_memo_t *m = memo ? &memo->pick : NULL;
  if (m && m->valid && m->bytes == bytes && m->coll == (int)coll && m->in_windows == in_windows &&
      m->site_gen == comm->site_gen)
    return m->algo;
  algo_site_t site = comm->site;
  site.zero_agreed = in_windows;
  algo_t a = tuning_pick(comm->algo_forced, coll, bytes, comm->nranks, comm->peers[comm->rank].chunk_size, &site);
  if (memo)
    memo->pick = (op_pick_memo_t){
        .valid = 1, .coll = (int)coll, .in_windows = in_windows, .site_gen = comm->site_gen, .bytes = bytes, .algo = a};
  return a;
}

/* What this rank reads and writes of a checked collective of n ranks; a
 * non-root's unused buffer is dropped, so no later step looks at it. */
static void coll_elems(coll_args_t *a, int n, int rank) {
  size_t c = a->count, all = c * (size_t)n;
  switch (a->coll) {
    case COLL_ALLGATHER: a->send_elems = c, a->recv_elems = all; break;
    case COLL_REDUCESCATTER: a->send_elems = all, a->recv_elems = c; break;
    case COLL_ALLTOALL: a->send_elems = a->recv_elems = all; break;
    case COLL_BROADCAST:
      if (rank != a->root) a->sendbuff = NULL;
      a->send_elems = rank == a->root ? c : 0, a->recv_elems = c;
      break;
    case COLL_REDUCE:
      if (rank != a->root) a->recvbuff = NULL;
      a->send_elems = c, a->recv_elems = rank == a->root ? c : 0;
      break;
    default: a->send_elems = a->recv_elems = c;
  }
}

/* The only overlap allowed is the collective's in-place layout. */
static xcclResult_t check_overlap(const struct xcclComm *comm, const coll_args_t *a) {
  const char *s = a->sendbuff, *r = a->recvbuff;
  size_t sb = a->send_elems * a->esize, rb = a->recv_elems * a->esize;
  if (!sb || !rb || !(s < r + rb && r < s + sb)) return xcclSuccess;
  size_t own = (size_t)comm->rank * a->bytes;
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

/* The checks of a collective, in the order a user fixes them. */
static xcclResult_t coll_check(struct xcclComm *comm, group_op_t *op, void *stream) {
  coll_args_t *a = &op->coll;
  const char *fn = a->name;
  size_t esize = 0;
  TRY(op_check_type(fn, a->type, &esize));
  /* Beyond the built-in ops: one of xcclRedOpCreatePreMulSum's, run as a
   * sum of scaled inputs (redop_resolve names why any other is refused). */
  if (coll_has_op(a) && (unsigned)a->op >= xcclNumOps) TRY(redop_resolve(comm, a, &op->premul));
  if (coll_has_root(a)) TRY(op_check_rank(fn, "root", a->root, comm->nranks));
  TRY(op_check_count(fn, a->count, esize, (size_t)comm->nranks, a->type));
  coll_elems(a, comm->nranks, comm->rank);
  op_coll_sizes(a, esize, comm->nchannels);
  TRY(op_check_buffer(fn, "sendbuff", a->sendbuff, a->send_elems, esize));
  TRY(op_check_buffer(fn, "recvbuff", a->recvbuff, a->recv_elems, esize));
  TRY(check_overlap(comm, a));
  return op_check_usable(fn, comm, stream);
}

xcclResult_t op_prepare_coll(struct xcclComm *comm, group_op_t *op, void *stream, int *on_device_p) {
  coll_args_t *a = &op->coll;
  /* Field by field: an initializer would clear the whole struct first (a
   * string store that starts slowly), on every small call. */
  op->kind = GROUP_COLL, op->comm = comm, op->seq = 0, op->peer = -1, op->buf = NULL, op->bytes = 0, op->scratch = 0;
  op->premul.on = 0, op->premul.scratch = NULL;
  *on_device_p = 0;
  xcclResult_t res = coll_check(comm, op, stream);
#ifdef XCCL_HAVE_CUDA
  cuda_buf_t bufs[2] = {{"sendbuff", a->sendbuff, a->send_elems * a->esize},
                        {"recvbuff", a->recvbuff, a->recv_elems * a->esize}};
  if (res == xcclSuccess) res = enqueue_cuda_where(a->name, bufs, 2, stream, on_device_p);
  if (res == xcclSuccess && *on_device_p && op->premul.on)
    res = err_set(xcclInvalidUsage, LOG_COLL, "%s: PreMulSum ops run on host buffers only for now", a->name);
#endif
  res = op_number(comm, res, a->name, a->count, a->type, coll_has_op(a) ? (int)a->op : -1, a->root, &op->seq);
  if (res != xcclSuccess) return res;
  int in_windows = comm->site.direct && !comm->site.direct_forced && !*on_device_p &&
                   atomic_load(&comm->windows_shared) && coll_in_windows(comm, a);
  a->algo = op_pick(comm, a->coll, a->bytes, in_windows);
  op->bytes = a->bytes;
  comm_count_op(comm, a->coll, a->algo);
  TRACE(COLL, "%s #%llu count %zu %s %s", a->name, (unsigned long long)op->seq, a->count, kern_type_name(a->type),
        algo_name(a->algo));
  return xcclSuccess;
}

/* The checks of the user's own send or receive. */
static xcclResult_t p2p_check(const struct xcclComm *comm, const group_op_t *op, void *stream, size_t *esize_p) {
  const coll_args_t *a = &op->coll;
  TRY(op_check_type(a->name, a->type, esize_p));
  TRY(op_check_rank(a->name, "peer", op->peer, comm->nranks));
  TRY(op_check_count(a->name, a->count, *esize_p, 1, a->type));
  TRY(op_check_usable(a->name, comm, stream));
  return op_check_buffer(a->name, "buff", op->buf, a->count, *esize_p);
}

xcclResult_t op_prepare_p2p(struct xcclComm *comm, group_op_t *op, void *stream, uint64_t seq, int *on_device_p) {
  coll_args_t *a = &op->coll;
  op->comm = comm, op->seq = seq;
  op->premul.on = 0, op->premul.scratch = NULL;
  a->op = xcclNumOps, a->root = -1, a->algo = ALGO_RING, a->sendbuff = a->recvbuff = NULL;
  a->send_elems = a->recv_elems = 0;
  *on_device_p = 0;
  size_t esize = a->esize; /* a part: its collective's, checked with it */
  xcclResult_t res = seq ? xcclSuccess : p2p_check(comm, op, stream, &esize);
  if (res == xcclSuccess) op_coll_sizes(a, esize, comm->nchannels), op->bytes = a->bytes;
#ifdef XCCL_HAVE_CUDA
  cuda_buf_t cb = {"buff", op->buf, op->bytes};
  if (res == xcclSuccess) res = enqueue_cuda_where(a->name, &cb, 1, stream, on_device_p);
#endif
  if (res != xcclSuccess || seq) return res;
  op->seq = ++comm->seq;
  comm_count_op(comm, op->kind == GROUP_SEND ? COMM_STATS_SEND : COMM_STATS_RECV, COMM_STATS_P2P);
  return xcclSuccess;
}
