/* api.c — the small public calls: version, errors, queries, counters; and
 * xcclCommShrink, whose agreement between ranks is bootstrap_shrink. */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "comm.h"
#include "group.h"
#include "log.h"

xcclResult_t xcclGetVersion(int *version) {
  if (!version) return err_set(xcclInvalidArgument, LOG_INIT, "xcclGetVersion: version is NULL");
  *version = XCCL_VERSION_CODE;
  return xcclSuccess;
}

const char *xcclGetErrorString(xcclResult_t result) {
  switch (result) {
    case xcclSuccess:
      return "no error";
    case xcclUnhandledCudaError:
      return "unhandled cuda error (run with XCCL_DEBUG=INFO for details)";
    case xcclSystemError:
      return "unhandled system error (run with XCCL_DEBUG=INFO for details)";
    case xcclInternalError:
      return "internal error - please report this issue to the xccl developers";
    case xcclInvalidArgument:
      return "invalid argument (run with XCCL_DEBUG=WARN for details)";
    case xcclInvalidUsage:
      return "invalid usage (run with XCCL_DEBUG=WARN for details)";
    case xcclRemoteError:
      return "remote process exited or there was a network error";
    case xcclInProgress:
      return "xccl operation in progress";
    case xcclTimeout:
      return "operation timed out (XCCL_TIMEOUT)";
    default:
      return "unknown result code";
  }
}

const char *xcclGetLastError(xcclComm_t comm) {
  if (comm_acquire_quiet(comm)) {
    /* The string stays valid until the communicator is destroyed. */
    const char *msg = comm->last_error;
    comm_release(comm);
    return msg;
  }
  return err_last();
}

xcclResult_t xcclCommCount(const xcclComm_t comm, int *count) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t r = count ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommCount: count is NULL");
  if (count) *count = comm->nranks;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommUserRank(const xcclComm_t comm, int *rank) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t r = rank ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommUserRank: rank is NULL");
  if (rank) *rank = comm->rank;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommSetTimeout(xcclComm_t comm, double seconds) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t r = xcclSuccess;
  if (!(seconds > 0) || seconds > 1e9) /* also refuses NaN */
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommSetTimeout: %g s is not a timeout (give 0 < seconds <= 1e9)",
                seconds);
  else {
    comm->timeout_s = comm->env.timeout_s = seconds;
    bootstrap_set_timeout(comm->bs, seconds); /* lazy connection set-up, XCCL_CHECK, shrink */
  }
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t *asyncError) {
  TRY(comm_acquire_in(comm, COMM_ANY));
  xcclResult_t r = xcclSuccess;
  int life = atomic_load_explicit(&comm->life, memory_order_acquire);
  if (!asyncError) {
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAsyncError: asyncError is NULL");
  } else if (life == COMM_INITIALIZING || life == COMM_INIT_FAILED) {
    *asyncError = comm->init_result; /* xcclInProgress until the background init ends */
  } else if (life == COMM_REVOKED) {
    *asyncError = xcclSuccess; /* what revoke stopped is not an error of the communicator */
  } else {
    /* A failed operation leaves the comm failed; a peer closing while the
     * comm is idle is not an error until an operation needs that peer. */
    *asyncError = comm->failed;
  }
  comm_release(comm);
  return comm_record(comm, r);
}

void comm_peer_bytes_on(struct xcclComm *comm, int peer, const xccl_transport_v1_t *tr, uint64_t *sent_p,
                        uint64_t *recv_p) {
  uint64_t sent = 0, recv = 0;
  for (int c = 0; comm->channels && c < comm->nchannels; c++) {
    const comm_channel_t *ch = &comm->channels[c];
    if (ch->next == peer && (!tr || ch->send_conn.transport == tr)) sent += atomic_load(&ch->send->bytes);
    if (ch->prev == peer && (!tr || ch->recv_conn.transport == tr)) recv += atomic_load(&ch->recv->bytes);
  }
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    comm_p2p_t *s = &comm->p2p_send[set][peer], *r = &comm->p2p_recv[set][peer];
    if (s->ready && (!tr || s->conn.transport == tr)) sent += atomic_load(&s->fifo->bytes);
    if (r->ready && (!tr || r->conn.transport == tr)) recv += atomic_load(&r->fifo->bytes);
  }
  *sent_p = sent;
  *recv_p = recv;
}

void comm_peer_bytes(struct xcclComm *comm, int peer, uint64_t *sent_p, uint64_t *recv_p) {
  comm_peer_bytes_on(comm, peer, NULL, sent_p, recv_p);
}

xcclResult_t xcclCommGetPeerCounters(xcclComm_t comm, int peer, xcclPeerCounters_t *counters) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t r = xcclSuccess;
  if (!counters)
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetPeerCounters: counters is NULL");
  else if (peer < 0 || peer >= comm->nranks)
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetPeerCounters: peer %d is not in 0..%d", peer,
                comm->nranks - 1);
  else {
    uint64_t sent = 0, recv = 0;
    comm_peer_bytes(comm, peer, &sent, &recv);
    *counters = (xcclPeerCounters_t){.bytesSent = sent, .bytesRecv = recv};
  }
  comm_release(comm);
  return comm_record(comm, r);
}

/* ---- xcclCommShrink ---- */

/* Checks the arguments against comm; the list goes to *sorted_p ascending
 * (NULL when empty, else malloc'ed). */
static xcclResult_t shrink_check(const struct xcclComm *comm, const int *ex, int n, const xcclComm_t *newcomm,
                                 int **sorted_p) {
  int nr = comm->nranks;
  if (!newcomm) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: newcomm is NULL");
  if (n < 0 || n >= nr)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "xcclCommShrink: excludeCount=%d is not in 0..%d (the new communicator keeps at least one of the "
                   "%d ranks)",
                   n, nr - 1, nr);
  if (n > 0 && !ex)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: excludeRanks is NULL but excludeCount is %d", n);
  if (group_open())
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "xcclCommShrink: not allowed between xcclGroupStart and xcclGroupEnd (it waits for the others)");
  uint8_t *seen = calloc((size_t)nr, 1);
  int *sorted = n > 0 ? malloc(sizeof(int) * (size_t)n) : NULL;
  xcclResult_t res = xcclSuccess;
  if (!seen || (n > 0 && !sorted))
    res = err_set(xcclSystemError, LOG_INIT, "xcclCommShrink: out of memory for an exclude list of %d ranks", n);
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    if (ex[i] < 0 || ex[i] >= nr)
      res =
          err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommShrink: excludeRanks[%d] = %d is not a rank of this communicator (0..%d)", i, ex[i], nr - 1);
    else if (seen[ex[i]])
      res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: rank %d is in excludeRanks twice (again at [%d])",
                    ex[i], i);
    else
      seen[ex[i]] = 1;
  }
  if (res == xcclSuccess && seen[comm->rank])
    res = err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommShrink: rank %d is in excludeRanks: an excluded rank must not call xcclCommShrink (only "
                  "the ranks that stay do)",
                  comm->rank);
  for (int r = 0, k = 0; r < nr && res == xcclSuccess; r++)
    if (seen[r]) sorted[k++] = r;
  free(seen);
  if (res != xcclSuccess) {
    free(sorted);
    return res;
  }
  *sorted_p = sorted;
  return xcclSuccess;
}

xcclResult_t xcclCommShrink(xcclComm_t comm, const int *excludeRanks, int excludeCount, xcclComm_t *newcomm) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_REVOKED)); /* a revoked comm is what one shrinks */
  int rank = comm->rank, nranks = comm->nranks, job_rank = comm->fault.rank, *ex = NULL;
  uint64_t t0 = clock_ns();
  bs_id_t id;
  xcclResult_t res = shrink_check(comm, excludeRanks, excludeCount, newcomm, &ex);
  int checked = res == xcclSuccess;
  if (checked) res = bootstrap_shrink(comm->bs, ex, excludeCount, comm->timeout_s, &id);
  /* The new communicator needs nothing more of this one, which may be
   * aborted from now on without waiting for the new one's init. */
  comm_release(comm);
  int newrank = rank;
  for (int i = 0; i < excludeCount && ex; i++) newrank -= ex[i] < rank;
  free(ex);
  xcclComm_t nc = NULL;
  if (res == xcclSuccess) res = comm_init_shrunk(&nc, nranks - excludeCount, &id, newrank, job_rank);
  if (res != xcclSuccess) {
    if (checked) err_prefix(res, "xcclCommShrink on rank %d of %d", rank, nranks);
    return comm_record(comm, res);
  }
  INFO(INIT, "rank %d of %d: xcclCommShrink made communicator %p, rank %d of %d, in %.1f ms", rank, nranks, (void *)nc,
       newrank, nranks - excludeCount, (double)(clock_ns() - t0) / 1e6);
  *newcomm = nc;
  return xcclSuccess;
}
