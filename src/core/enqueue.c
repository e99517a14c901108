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
  const char *name; /* "allreduce" */
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  xcclDataType_t type;
  xcclRedOp_t op;
} coll_args_t;

static xcclResult_t check_buffer(const char *fn, const char *what, const void *p, size_t bytes, size_t esize) {
  if (bytes == 0) return xcclSuccess;
  if (!p) return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s is NULL with count > 0", fn, what);
  if ((uintptr_t)p % esize)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is not aligned to the %zu-byte element size", fn, what,
                   p, esize);
  return xcclSuccess;
}

static xcclResult_t coll_check(xcclComm_t comm, const coll_args_t *a, int has_op, void *stream) {
  const char *fn = a->name;
  if ((unsigned)a->type >= xcclNumTypes)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown datatype %d (valid: 0..%d)", fn, (int)a->type,
                   xcclNumTypes - 1);
  if (has_op && (unsigned)a->op >= xcclNumOps)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown reduction op %d (valid: 0..%d)", fn, (int)a->op,
                   xcclNumOps - 1);
  size_t esize = xcclTypeSize(a->type);
  if (a->count > (SIZE_MAX / 2) / esize)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: count %zu of %s overflows the address space", fn, a->count,
                   kern_type_name(a->type));
  size_t bytes = a->count * esize;
  TRY(check_buffer(fn, "sendbuff", a->sendbuff, bytes, esize));
  TRY(check_buffer(fn, "recvbuff", a->recvbuff, bytes, esize));
  const char *s = a->sendbuff, *r = a->recvbuff;
  if (bytes && s != r && s < r + bytes && r < s + bytes)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: sendbuff %p and recvbuff %p overlap without being equal (in place needs sendbuff == recvbuff)",
                   fn, a->sendbuff, a->recvbuff);
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

/* The sentence for a kernel that stopped early. */
static xcclResult_t coll_failure(xcclComm_t comm, const coll_args_t *a, uint64_t seq, xcclResult_t res,
                                 const kern_failure_t *f) {
  char where[200], peer[160];
  snprintf(where, sizeof(where), "%s #%llu (count %zu %s %s) on rank %d: channel %d, loop %llu step %d", a->name,
           (unsigned long long)seq, a->count, kern_type_name(a->type), kern_op_name(a->op), comm->rank, f->channel,
           (unsigned long long)f->loop, f->action);
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
                     "%s: %s sent %zu bytes where %zu were expected: the ranks called %s with different counts or "
                     "datatypes",
                     where, peer, f->got_bytes, f->want_bytes, a->name);
    default:
      return err_set(xcclInternalError, LOG_COLL, "%s: failed (%s)", where, xcclGetErrorString(res));
  }
}

xcclResult_t xcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, xcclDataType_t datatype,
                           xcclRedOp_t op, xcclComm_t comm, void *stream) {
  coll_args_t a = {"allreduce", sendbuff, recvbuff, count, datatype, op};
  TRY(comm_acquire(comm));
  xcclResult_t res = coll_check(comm, &a, 1, stream);
  if (res != xcclSuccess) goto out;
  uint64_t seq = ++comm->seq;
  size_t bytes = count * xcclTypeSize(datatype);
  TRACE(COLL, "allreduce #%llu count %zu %s %s", (unsigned long long)seq, count, kern_type_name(datatype),
        kern_op_name(op));
  if (comm->nranks == 1 || count == 0) {
    if (bytes && sendbuff != recvbuff) memcpy(recvbuff, sendbuff, bytes);
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
  ring_args_t ra = {.sendbuff = sendbuff, .recvbuff = recvbuff, .count = count, .type = datatype, .op = op,
                    .nranks = comm->nranks, .position = comm->rank, .nchannels = nch,
                    .channels = chans, .timeout_s = comm->timeout_s, .abort_flag = &comm->abort_flag,
                    .spin_count = comm->spin_count, .bell = &comm->bell, .progress = proxy_progress, .wait = proxy_wait,
                    .progress_ctx = comm->proxy};
  kern_failure_t fail;
  proxy_op_begin(comm->proxy);
  res = host_ring_allreduce(&ra, &fail);
  proxy_op_end(comm->proxy);
  if (res != xcclSuccess) {
    res = coll_failure(comm, &a, seq, res, &fail);
    comm->failed = res;
    /* Tell the peers at once instead of letting them wait for their timeout. */
    proxy_shutdown_connections(comm->proxy);
  }
out:
  comm_release(comm);
  return comm_record(comm, res);
}
