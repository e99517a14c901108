/*
 * enqueue.c — collective entry points: check every argument, run the
 * algorithm, and turn a kernel's failure into a sentence that names the
 * operation, its sequence number, the step, and the peer.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "log.h"
#include "reduce.h"

#define COLL_BYTES_PER_CHANNEL (128 * 1024)

typedef struct {
  const char *name; /* "allreduce", for messages */
  ring_coll_t coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;                  /* the schedule's count (see host_ring.h) */
  size_t send_elems, recv_elems; /* what this rank reads and writes; 0 = unused here */
  xcclDataType_t type;
  xcclRedOp_t op; /* xcclNumOps when the collective has none */
  int root;       /* -1 when the collective has none */
} coll_args_t;

static int coll_has_op(const coll_args_t *a) { return a->coll == RING_COLL_ALLREDUCE || a->coll == RING_COLL_REDUCESCATTER || a->coll == RING_COLL_REDUCE; }
static int coll_has_root(const coll_args_t *a) { return a->coll == RING_COLL_BROADCAST || a->coll == RING_COLL_REDUCE; }

static xcclResult_t check_buffer(const char *fn, const char *what, const void *p, size_t elems, size_t esize) {
  if (elems == 0) return xcclSuccess;
  if (!p) return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL with count > 0", fn, what);
  if ((uintptr_t)p % esize)
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
    case RING_COLL_ALLGATHER:
      if (s == r + own) return xcclSuccess;
      rule = "sendbuff == recvbuff + rank * sendcount";
      break;
    case RING_COLL_REDUCESCATTER:
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
  size_t esize = xcclTypeSize(a->type);
  if (a->count > (SIZE_MAX / 2) / esize / (size_t)comm->nranks)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", fn, a->count,
                   kern_type_name(a->type));
  TRY(check_buffer(fn, "sendbuff", a->sendbuff, a->send_elems, esize));
  TRY(check_buffer(fn, "recvbuff", a->recvbuff, a->recv_elems, esize));
  TRY(check_overlap(comm, a, esize));
  if (stream)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: stream %p given, but this build of xccl has no CUDA support: pass NULL for host buffers", fn,
                   stream);
  if (comm->failed)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: the communicator failed in an earlier operation (%s); destroy or abort it and make a new one",
                   fn, comm->last_error);
  return xcclSuccess;
}

/* "allreduce #3 (count 10 float32 sum)", "broadcast #4 (count 10 int8 root 2)". */
static void coll_describe(xcclComm_t comm, const coll_args_t *a, uint64_t seq, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s #%llu (count %zu %s", a->name, (unsigned long long)seq, a->count,
                   kern_type_name(a->type));
  if (coll_has_op(a)) n += snprintf(buf + n, len - (size_t)n, " %s", kern_op_name(a->op));
  if (coll_has_root(a)) n += snprintf(buf + n, len - (size_t)n, " root %d", a->root);
  snprintf(buf + n, len - (size_t)n, ") on rank %d", comm->rank);
}

/* The sentence for a kernel that stopped early. */
static xcclResult_t coll_failure(xcclComm_t comm, const coll_args_t *a, uint64_t seq, xcclResult_t res,
                                 const kern_failure_t *f) {
  char what[200], where[300], peer[160];
  coll_describe(comm, a, seq, what, sizeof(what));
  snprintf(where, sizeof(where), "%s: channel %d, loop %llu step %d", what, f->channel, (unsigned long long)f->loop,
           f->action);
  int p = f->waiting_on_recv ? comm->prev : comm->next;
  comm_peer_desc(comm, p, peer, sizeof(peer));
  switch (f->kind) {
    case KERN_FAIL_TIMEOUT:
      if (f->waiting_on_recv)
        return err_set(res, LOG_COLL, "%s: no data from %s for XCCL_TIMEOUT=%g s", where, peer, comm->timeout_s);
      return err_set(res, LOG_COLL, "%s: %s did not take data for XCCL_TIMEOUT=%g s", where, peer, comm->timeout_s);
    case KERN_FAIL_CONN:
      return err_set(res, LOG_COLL, "%s: %s", where, f->msg);
    case KERN_FAIL_ABORT:
      return err_set(xcclRemoteError, LOG_COLL, "%s: the communicator was aborted", where);
    case KERN_FAIL_PROTOCOL:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "%s: %s sent %zu bytes where %zu were expected: the ranks called %s with different counts, "
                     "datatypes or roots",
                     where, peer, f->got_bytes, f->want_bytes, a->name);
    default:
      return err_set(xcclInternalError, LOG_COLL, "%s: failed (%s)", where, xcclGetErrorString(res));
  }
}

/* One rank: what the collective leaves in recvbuff is sendbuff (or nothing). */
static void coll_single_rank(const coll_args_t *a, size_t esize) {
  size_t bytes = a->recv_elems * esize;
  if (bytes && a->sendbuff && a->sendbuff != a->recvbuff) memcpy(a->recvbuff, a->sendbuff, bytes);
}

static xcclResult_t coll_run(xcclComm_t comm, const coll_args_t *a, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = coll_check(comm, a, stream);
  if (res != xcclSuccess) goto out;
  uint64_t seq = ++comm->seq;
  size_t esize = xcclTypeSize(a->type);
  size_t bytes = a->count * esize;
  TRACE(COLL, "%s #%llu count %zu %s", a->name, (unsigned long long)seq, a->count, kern_type_name(a->type));
  if (a->count == 0) goto out;
  if (comm->nranks == 1) {
    coll_single_rank(a, esize);
    goto out;
  }
  /* Small messages gain nothing from more rings, only more hops to wait on:
   * one channel per COLL_BYTES_PER_CHANNEL, at least one. Every rank computes
   * the same number from the same count. */
  size_t want = bytes / COLL_BYTES_PER_CHANNEL;
  int nch = want < 1 ? 1 : (want < (size_t)comm->nchannels ? (int)want : comm->nchannels);
  ring_channel_t chans[XCCL_MAX_CHANNELS];
  for (int c = 0; c < nch; c++) {
    comm_channel_t *ch = &comm->channels[c];
    chans[c] = (ring_channel_t){&ch->send, &ch->recv, &ch->send_step, &ch->recv_step};
  }
  ring_args_t ra = {.coll = a->coll, .sendbuff = a->sendbuff, .recvbuff = a->recvbuff, .count = a->count,
                    .type = a->type, .op = a->op, .nranks = comm->nranks, .position = comm->rank,
                    .root = a->root < 0 ? 0 : a->root, .nchannels = nch, .channels = chans,
                    .timeout_s = comm->timeout_s, .abort_flag = &comm->abort_flag, .spin_count = comm->spin_count,
                    .bell = &comm->bell, .progress = proxy_progress, .wait = proxy_wait,
                    .progress_ctx = comm->proxy};
  kern_failure_t fail;
  proxy_op_begin(comm->proxy);
  res = host_ring_run(&ra, &fail);
  proxy_op_end(comm->proxy);
  if (res != xcclSuccess) {
    res = coll_failure(comm, a, seq, res, &fail);
    comm->failed = res;
    /* Tell the peers at once instead of letting them wait for their timeout. */
    proxy_shutdown_connections(comm->proxy);
  }
out:
  comm_release(comm);
  return comm_record(comm, res);
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
  coll_args_t a = {"allreduce", RING_COLL_ALLREDUCE, sendbuff, recvbuff, count, count, count, datatype, op, -1};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, xcclDataType_t datatype,
                           xcclComm_t comm, void *stream) {
  size_t n = (size_t)coll_nranks(comm);
  size_t total = sendcount <= SIZE_MAX / n ? sendcount * n : SIZE_MAX;
  coll_args_t a = {"allgather", RING_COLL_ALLGATHER, sendbuff, recvbuff, sendcount, sendcount, total, datatype,
                   xcclNumOps, -1};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, xcclDataType_t datatype,
                               xcclRedOp_t op, xcclComm_t comm, void *stream) {
  size_t n = (size_t)coll_nranks(comm);
  size_t total = recvcount <= SIZE_MAX / n ? recvcount * n : SIZE_MAX;
  coll_args_t a = {"reducescatter", RING_COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, total, recvcount, datatype,
                   op, -1};
  if (n == 1) a.send_elems = recvcount;
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, int root,
                           xcclComm_t comm, void *stream) {
  int is_root = coll_rank(comm) == root;
  coll_args_t a = {"broadcast", RING_COLL_BROADCAST, is_root ? sendbuff : NULL, recvbuff, count, is_root ? count : 0,
                   count, datatype, xcclNumOps, root};
  return coll_run(comm, &a, stream);
}

xcclResult_t xcclBcast(void *buff, size_t count, xcclDataType_t datatype, int root, xcclComm_t comm, void *stream) {
  return xcclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

xcclResult_t xcclReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype, xcclRedOp_t op,
                        int root, xcclComm_t comm, void *stream) {
  int is_root = coll_rank(comm) == root;
  coll_args_t a = {"reduce", RING_COLL_REDUCE, sendbuff, is_root ? recvbuff : NULL, count, count, is_root ? count : 0,
                   datatype, op, root};
  return coll_run(comm, &a, stream);
}
