/* api.c — the small public calls: version, errors, queries, counters. */
#include <stdio.h>

#include "comm.h"
#include "log.h"

xcclResult_t xcclGetVersion(int *version) {
  if (!version) return err_set(xcclInvalidArgument, LOG_INIT, "xcclGetVersion: version is NULL");
  *version = XCCL_VERSION_CODE;
  return xcclSuccess;
}

const char *xcclGetErrorString(xcclResult_t result) {
  switch (result) {
    case xcclSuccess: return "no error";
    case xcclUnhandledCudaError: return "unhandled cuda error (run with XCCL_DEBUG=INFO for details)";
    case xcclSystemError: return "unhandled system error (run with XCCL_DEBUG=INFO for details)";
    case xcclInternalError: return "internal error - please report this issue to the xccl developers";
    case xcclInvalidArgument: return "invalid argument (run with XCCL_DEBUG=WARN for details)";
    case xcclInvalidUsage: return "invalid usage (run with XCCL_DEBUG=WARN for details)";
    case xcclRemoteError: return "remote process exited or there was a network error";
    case xcclInProgress: return "xccl operation in progress";
    case xcclTimeout: return "operation timed out (XCCL_TIMEOUT)";
    default: return "unknown result code";
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
  TRY(comm_acquire(comm));
  xcclResult_t r = count ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommCount: count is NULL");
  if (count) *count = comm->nranks;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommUserRank(const xcclComm_t comm, int *rank) {
  TRY(comm_acquire(comm));
  xcclResult_t r = rank ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommUserRank: rank is NULL");
  if (rank) *rank = comm->rank;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t *asyncError) {
  TRY(comm_acquire(comm));
  xcclResult_t r = xcclSuccess;
  if (!asyncError) {
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommGetAsyncError: asyncError is NULL");
  } else {
    /* A failed operation leaves the comm failed; a peer closing while the
     * comm is idle is not an error until an operation needs that peer. */
    *asyncError = comm->failed;
  }
  comm_release(comm);
  return comm_record(comm, r);
}

void comm_peer_bytes(struct xcclComm *comm, int peer, uint64_t *sent_p, uint64_t *recv_p) {
  uint64_t sent = 0, recv = 0;
  for (int c = 0; comm->channels && c < comm->nchannels; c++) {
    if (comm->next == peer) sent += atomic_load(&comm->channels[c].send->bytes);
    if (comm->prev == peer) recv += atomic_load(&comm->channels[c].recv->bytes);
  }
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    comm_p2p_t *s = &comm->p2p_send[set][peer], *r = &comm->p2p_recv[set][peer];
    if (s->ready) sent += atomic_load(&s->fifo->bytes);
    if (r->ready) recv += atomic_load(&r->fifo->bytes);
  }
  *sent_p = sent;
  *recv_p = recv;
}

xcclResult_t xcclCommGetPeerCounters(xcclComm_t comm, int peer, xcclPeerCounters_t *counters) {
  TRY(comm_acquire(comm));
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
