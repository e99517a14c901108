/* api.c — the small public calls: version, last error, queries, counters
 * (xcclGetErrorString is src/base's, error.c). */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "comm.h"
#include "connect.h"
#include "encryption.h"
#include "log.h"

xcclResult_t xcclGetVersion(int *version) {
  if (!version) return err_set(xcclInvalidArgument, LOG_INIT, "xcclGetVersion: version is NULL");
  *version = XCCL_VERSION_CODE;
  return xcclSuccess;
}

xcclResult_t xcclSetEncryption(xcclEncryptionMode_t mode, const char *psk) {
  return encryption_set((int)mode, psk, "xcclSetEncryption");
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
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED | COMM_SUSPENDED));
  xcclResult_t r = count ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommCount: count is NULL");
  if (count) *count = comm->nranks;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommUserRank(const xcclComm_t comm, int *rank) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED | COMM_SUSPENDED));
  xcclResult_t r = rank ? xcclSuccess : err_set(xcclInvalidArgument, LOG_COLL, "xcclCommUserRank: rank is NULL");
  if (rank) *rank = comm->rank;
  comm_release(comm);
  return comm_record(comm, r);
}

xcclResult_t xcclCommSetTimeout(xcclComm_t comm, double seconds) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED | COMM_SUSPENDED));
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
