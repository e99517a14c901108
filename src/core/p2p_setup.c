/*
 * p2p_setup.c — point-to-point connections, made the first time a group
 * sends to or receives from a peer outside the ring. The receiving side
 * listens and sends its handle through the bootstrap; the sending side
 * receives it and connects. Every rank of the pair reaches this code in the
 * same group (a send on one side is a receive on the other), and the
 * bootstrap serves incoming messages while it waits, so no order is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm.h"
#include "log.h"
#include "net_select.h"

#define P2P_TAG_HANDLE 0x50325031u /* + set: "this is where to send me your data" */
#define P2P_TAG_ACK 0x50324b31u    /* + set: "mapped your segment, unlink it" */

/* What the receiving side tells the sender: a socket handle, or the name of
 * a shared-memory segment holding the receive fifo. */
typedef struct {
  char kind; /* 'N' socket, 'S' shared memory */
  unsigned char data[NET_HANDLE_PUBLIC];
} p2p_where_t;

static int seen_before(const int *peers, int i) {
  for (int j = 0; j < i; j++)
    if (peers[j] == peers[i]) return 1;
  return 0;
}

/* A connected socket comm gets a local fifo and goes to the proxy, which
 * owns it from then on (*net_comm_p is cleared). */
static xcclResult_t p2p_adopt(struct xcclComm *comm, comm_p2p_t *d, void **net_comm_p, int is_send, int peer,
                              const char *desc) {
  size_t slot = comm->peers[comm->rank].chunk_size;
  if (!(d->fifo = slot_fifo_create(slot))) return err_set(xcclSystemError, LOG_INIT, "out of memory for slots");
  xcclResult_t res = (is_send ? proxy_add_send : proxy_add_recv)(comm->proxy, d->fifo, *net_comm_p, peer, desc,
                                                                 &comm->bell);
  if (res == xcclSuccess) *net_comm_p = NULL, d->ready = 1;
  return res;
}

xcclResult_t comm_connect_p2p(struct xcclComm *comm, int set, const int *send_peers, int nsend, const int *recv_peers,
                              int nrecv) {
  int n = comm->nranks;
  comm_p2p_t *psend = comm->p2p_send[set], *precv = comm->p2p_recv[set];
  uint32_t tag = P2P_TAG_HANDLE + (uint32_t)set;
  void **listens = calloc((size_t)n, sizeof(void *));
  void **send_comms = calloc((size_t)n, sizeof(void *));
  void **recv_comms = calloc((size_t)n, sizeof(void *));
  net_handle_t *handles = calloc((size_t)n, sizeof(net_handle_t));
  xcclResult_t res = xcclSuccess;
  if (!listens || !send_comms || !recv_comms || !handles) {
    res = err_set(xcclSystemError, LOG_INIT, "out of memory for point-to-point set-up");
    goto out;
  }
  char desc[160];
  size_t slot = comm->peers[comm->rank].chunk_size;
  /* 1. Receiving side: a shared-memory fifo for a peer on this host (when
   * /dev/shm has room), else a socket listener; tell the peer where. */
  for (int i = 0; i < nrecv && res == xcclSuccess; i++) {
    int p = recv_peers[i];
    if (precv[p].ready || seen_before(recv_peers, i)) continue;
    p2p_where_t w = {.kind = 'N'};
    if (comm_shm_allowed(comm, p)) {
      err_quiet(1);
      if (shm_seg_create(slot_fifo_bytes(slot), &precv[p].seg) == xcclSuccess) {
        /* Laid out before the peer hears of it: it may write at once. */
        precv[p].fifo = slot_fifo_init_at(precv[p].seg.base, slot);
        precv[p].fifo->shared = 1;
        slot_fifo_side_set(precv[p].fifo, 0);
        w.kind = 'S';
        snprintf((char *)w.data, sizeof(w.data), "%s", precv[p].seg.name);
      }
      err_quiet(0);
    }
    if (w.kind == 'N') {
      net_handle_t h;
      res = comm->net->listen(comm_p2p_dev(comm, p), &h, &listens[p]);
      memcpy(w.data, h.data, NET_HANDLE_PUBLIC);
    }
    if (res == xcclSuccess) res = bootstrap_send(comm->bs, p, tag, &w, sizeof(w));
    if (res != xcclSuccess) err_prefix(res, "connecting to receive from %s", comm_peer_desc(comm, p, desc, sizeof(desc)));
  }
  /* 2. Sending side: learn where; map the segment, or start connecting. */
  for (int i = 0; i < nsend && res == xcclSuccess; i++) {
    int p = send_peers[i];
    if (psend[p].ready || seen_before(send_peers, i)) continue;
    p2p_where_t w;
    res = bootstrap_recv(comm->bs, p, tag, &w, sizeof(w));
    if (res == xcclSuccess && w.kind == 'S') {
      w.data[sizeof(w.data) - 1] = '\0';
      res = shm_seg_open((const char *)w.data, slot_fifo_bytes(slot), &psend[p].seg);
      if (res == xcclSuccess) {
        psend[p].fifo = psend[p].seg.base;
        slot_fifo_side_set(psend[p].fifo, 1);
        psend[p].ready = 1;
        res = bootstrap_send(comm->bs, p, P2P_TAG_ACK + (uint32_t)set, "", 1);
      }
    } else if (res == xcclSuccess) {
      memset(&handles[p], 0, sizeof(handles[p]));
      memcpy(handles[p].data, w.data, NET_HANDLE_PUBLIC);
    }
    if (res != xcclSuccess) err_prefix(res, "connecting to send to %s", comm_peer_desc(comm, p, desc, sizeof(desc)));
  }
  /* 3. Both at once until every connection is made. */
  uint64_t deadline = clock_deadline(comm->timeout_s);
  for (int pending = 1; res == xcclSuccess && pending;) {
    pending = 0;
    for (int i = 0; i < nsend && res == xcclSuccess; i++) {
      int p = send_peers[i];
      if (psend[p].ready || send_comms[p] || seen_before(send_peers, i)) continue; /* ready: shared memory */
      res = comm->net->connect(comm_p2p_dev(comm, p), &handles[p], &send_comms[p]);
      pending |= !send_comms[p];
    }
    for (int i = 0; i < nrecv && res == xcclSuccess; i++) {
      int p = recv_peers[i];
      if (!listens[p] || recv_comms[p]) continue;
      res = comm->net->accept(listens[p], &recv_comms[p]);
      pending |= !recv_comms[p];
    }
    if (res == xcclSuccess && pending) {
      if (clock_expired(deadline))
        res = err_set(xcclTimeout, LOG_INIT, "point-to-point connections not made within XCCL_TIMEOUT=%g s",
                      comm->timeout_s);
      else if (atomic_load(&comm->abort_flag))
        res = err_set(xcclRemoteError, LOG_INIT, "aborted while making point-to-point connections");
      bootstrap_serve(comm->bs); /* a peer may be sending us its handle or ack meanwhile */
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  /* 4. Shared memory, receiving side: the fifo is in the segment; once the
   * sender has it mapped, the name goes. */
  for (int i = 0; i < nrecv && res == xcclSuccess; i++) {
    int p = recv_peers[i];
    if (precv[p].ready || !precv[p].seg.base || seen_before(recv_peers, i)) continue;
    char ack;
    res = bootstrap_recv(comm->bs, p, P2P_TAG_ACK + (uint32_t)set, &ack, 1);
    if (res == xcclSuccess) shm_seg_unlink(&precv[p].seg), precv[p].ready = 1;
  }
  /* 5. Sockets: hand them to the proxy with their fifos. */
  for (int p = 0; p < n && res == xcclSuccess; p++) {
    comm_peer_desc(comm, p, desc, sizeof(desc));
    if (send_comms[p]) res = p2p_adopt(comm, &psend[p], &send_comms[p], 1, p, desc);
    if (recv_comms[p] && res == xcclSuccess) res = p2p_adopt(comm, &precv[p], &recv_comms[p], 0, p, desc);
  }
out:
  for (int p = 0; handles && p < n; p++) {
    if (send_comms && send_comms[p]) comm->net->close_send(send_comms[p]);
    else if (res != xcclSuccess && handles) comm->net->connect_abandon(&handles[p]);
    if (res != xcclSuccess && !precv[p].ready && precv[p].seg.base) shm_seg_close(&precv[p].seg), precv[p].fifo = NULL;
    if (recv_comms && recv_comms[p]) comm->net->close_recv(recv_comms[p]);
    if (listens && listens[p]) comm->net->close_listen(listens[p]);
  }
  free(listens);
  free(send_comms);
  free(recv_comms);
  free(handles);
  return res;
}
