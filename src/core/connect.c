/*
 * connect.c — the one connect loop (transport.h's steps) and the two sets of
 * connections made with it: each channel's ring at init, and the
 * point-to-point connections made the first time a group sends to or
 * receives from a peer. Every rank of a pair reaches the loop for the same
 * connections (a send on one side is a receive on the other), and the
 * bootstrap serves incoming messages while it waits, so no order is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "comm.h"
#include "connect.h"
#include "config.h"
#include "log.h"
#include "net_select.h"

#define RING_TAG_WHERE 0x53484d00u /* + channel: where the receive side of a ring connection is */
#define RING_TAG_ACK 0x53484b00u   /* + channel: set up, you may unlink */
#define P2P_TAG_WHERE 0x50325031u  /* + set: "this is where to send me your data" */
#define P2P_TAG_ACK 0x50324b31u    /* + set: "mapped your segment, unlink it" */

/* One direction of one connection to make, and where its owner keeps it. */
typedef struct {
  transport_conn_t *conn;
  slot_fifo_t **fifo_p; /* the data movers' pointer: set once connected */
  _Atomic int *ready_p; /* set to 1 once connected; NULL: none */
  int peer, is_send, dev;
  int channel; /* ring channel, -1: point-to-point */
  size_t slot_size;
  uint32_t tag, ack_tag;
  int done, started;
  char desc[160]; /* the peer, for messages */
} conn_req_t;

static transport_peer_t req_peer(struct xcclComm *comm, const conn_req_t *r) {
  return (transport_peer_t){.rank = comm->rank,
                            .peer = r->peer,
                            .host_hash = comm->peers[comm->rank].host_hash,
                            .peer_host_hash = comm->peers[r->peer].host_hash,
                            .pidns = comm->peers[comm->rank].pidns,
                            .peer_pidns = comm->peers[r->peer].pidns,
                            .uid = comm->peers[comm->rank].uid,
                            .peer_uid = comm->peers[r->peer].uid,
                            .slot_size = r->slot_size,
                            .net_dev = r->dev,
                            .net = comm->net,
                            .net_key = comm->net_key,
                            .proxy = comm->proxy,
                            .bell = &comm->bell,
                            .peer_desc = r->desc};
}

/* Says which connection res is about. */
static xcclResult_t req_failed(const conn_req_t *r, xcclResult_t res) {
  if (r->channel >= 0)
    return err_prefix(res, "channel %d: %s %s", r->channel, r->is_send ? "connecting to" : "accepting", r->desc);
  return err_prefix(res, "connecting to %s %s", r->is_send ? "send to" : "receive from", r->desc);
}

/* Steps 1 and 2: the receive sides set up and say where; the send sides
 * learn where, set up and acknowledge. */
static xcclResult_t conns_setup(struct xcclComm *comm, conn_req_t *reqs, int n) {
  for (int i = 0; i < n; i++) {
    conn_req_t *r = &reqs[i];
    if (r->is_send) continue;
    transport_peer_t tp = req_peer(comm, r);
    transport_where_t w;
    xcclResult_t res = transport_recv_setup(&tp, r->conn, &w);
    if (res == xcclSuccess) res = bootstrap_send(comm->bs, r->peer, r->tag, &w, sizeof(w));
    if (res != xcclSuccess) return req_failed(r, res);
  }
  for (int i = 0; i < n; i++) {
    conn_req_t *r = &reqs[i];
    if (!r->is_send) continue;
    transport_peer_t tp = req_peer(comm, r);
    transport_where_t w;
    xcclResult_t res = bootstrap_recv(comm->bs, r->peer, r->tag, &w, sizeof(w));
    if (res == xcclSuccess) res = transport_send_setup(&tp, r->conn, &w);
    if (res == xcclSuccess && r->conn->transport->ack) res = bootstrap_send(comm->bs, r->peer, r->ack_tag, "", 1);
    if (res != xcclSuccess) return req_failed(r, res);
  }
  return xcclSuccess;
}

/* Step 3: connect and accept until all are made, XCCL_TIMEOUT passes or
 * the communicator is aborted. */
static xcclResult_t conns_progress(struct xcclComm *comm, conn_req_t *reqs, int n, const char *doing) {
  uint64_t deadline = clock_deadline(comm->timeout_s);
  for (int pending = n; pending > 0;) {
    int moved = 0;
    for (int i = 0; i < n; i++) {
      conn_req_t *r = &reqs[i];
      if (r->done) continue;
      transport_peer_t tp = req_peer(comm, r);
      xcclResult_t res =
          (r->is_send ? r->conn->transport->connect : r->conn->transport->accept)(&tp, r->conn, &r->done);
      if (res != xcclSuccess) return req_failed(r, res);
      if (r->done) pending--, moved = 1;
    }
    if (!pending || moved) continue;
    if (atomic_load(&comm->abort_flag)) return err_set(xcclRemoteError, LOG_INIT, "aborted while %s", doing);
    if (clock_expired(deadline)) {
      const conn_req_t *r = reqs;
      while (r->done) r++;
      if (r->channel < 0)
        return err_set(xcclTimeout, LOG_INIT, "point-to-point connections not made within XCCL_TIMEOUT=%g s",
                       comm->timeout_s);
      return err_set(xcclTimeout, LOG_INIT, "channel %d: no connection %s %s within XCCL_TIMEOUT=%g s", r->channel,
                     r->is_send ? "to" : "from", r->desc, comm->timeout_s);
    }
    bootstrap_serve(comm->bs); /* a peer may be sending us its where or ack meanwhile */
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return xcclSuccess;
}

/* Makes the n connections of reqs (transport.h's steps 1 to 5). On failure
 * the connections not started yet are released; a started one is kept as
 * made (whatever moves its data may already use it). */
static xcclResult_t conns_make(struct xcclComm *comm, conn_req_t *reqs, int n, const char *doing) {
  xcclResult_t res = conns_setup(comm, reqs, n);
  if (res == xcclSuccess) res = conns_progress(comm, reqs, n, doing);
  for (int i = 0; i < n && res == xcclSuccess; i++) { /* 4. the acknowledgements */
    conn_req_t *r = &reqs[i];
    if (r->is_send || !r->conn->transport->ack) continue;
    char ack;
    res = bootstrap_recv(comm->bs, r->peer, r->ack_tag, &ack, 1);
    if (res == xcclSuccess)
      r->conn->transport->acked(r->conn);
    else
      req_failed(r, res);
  }
  for (int i = 0; i < n && res == xcclSuccess; i++) { /* 5. data may move */
    conn_req_t *r = &reqs[i];
    transport_peer_t tp = req_peer(comm, r);
    res = r->conn->transport->start(&tp, r->conn);
    if (res != xcclSuccess)
      req_failed(r, res);
    else
      r->started = 1;
  }
  for (int i = 0; i < n; i++) {
    conn_req_t *r = &reqs[i];
    if (!r->started) {
      transport_conn_free(r->conn);
      continue;
    }
    *r->fifo_p = r->conn->fifo;
    if (r->ready_p) *r->ready_p = 1;
  }
  return res;
}

/* ---- The ring channels ---- */

xcclResult_t comm_connect_rings(struct xcclComm *comm) {
  int n = comm->nchannels;
  TRY(transport_check_config());
  conn_req_t *reqs = calloc((size_t)(2 * n), sizeof(*reqs));
  if (!reqs) return err_set(xcclSystemError, LOG_INIT, "out of memory for %d channels", n);
  for (int c = 0; c < n; c++) {
    comm_channel_t *ch = &comm->channels[c];
    reqs[2 * c] = (conn_req_t){.conn = &ch->send_conn,
                               .fifo_p = &ch->send,
                               .peer = ch->next,
                               .is_send = 1,
                               .dev = comm->chan_send_dev[c],
                               .channel = c,
                               .slot_size = comm->peers[comm->rank].chunk_size,
                               .tag = RING_TAG_WHERE + (uint32_t)c,
                               .ack_tag = RING_TAG_ACK + (uint32_t)c};
    reqs[2 * c + 1] = reqs[2 * c];
    reqs[2 * c + 1].conn = &ch->recv_conn, reqs[2 * c + 1].fifo_p = &ch->recv;
    reqs[2 * c + 1].peer = ch->prev, reqs[2 * c + 1].is_send = 0, reqs[2 * c + 1].dev = comm->chan_dev[c];
    comm_peer_desc(comm, ch->next, reqs[2 * c].desc, sizeof(reqs[2 * c].desc));
    comm_peer_desc(comm, ch->prev, reqs[2 * c + 1].desc, sizeof(reqs[2 * c + 1].desc));
  }
  xcclResult_t res = xcclSuccess;
  const xccl_transport_v1_t *must = transport_required();
  for (int i = 0; must && i < 2 * n && res == xcclSuccess; i++) {
    transport_peer_t peer = req_peer(comm, &reqs[i]);
    if (!must->can_connect(&peer))
      res = err_set(xcclInvalidUsage, LOG_INIT,
                    "XCCL_TRANSPORT=%s, but rank %d's ring neighbours are not all on its host", must->name, comm->rank);
  }
  if (res == xcclSuccess && !comm->proxy) res = proxy_create(comm->net, &comm->fault, &comm->proxy);
  if (res == xcclSuccess) res = conns_make(comm, reqs, 2 * n, "connecting channels");
  if (res == xcclSuccess) res = proxy_start(comm->proxy);
  for (int t = 0; res == xcclSuccess && t < transport_count(); t++) {
    const xccl_transport_v1_t *tr = transport_at(t);
    int ns = 0, nr = 0;
    for (int c = 0; c < n; c++)
      ns += comm->channels[c].send_conn.transport == tr, nr += comm->channels[c].recv_conn.transport == tr;
    if (tr->shared && (ns || nr))
      INFO(INIT, "rank %d: %d of %d channels to rank %d and %d from rank %d through %s", comm->rank, ns, n, comm->next,
           nr, comm->prev, tr->what);
  }
  free(reqs);
  return res;
}

/* ---- Point-to-point connections ---- */

static int seen_before(const int *peers, int i) {
  for (int j = 0; j < i; j++)
    if (peers[j] == peers[i]) return 1;
  return 0;
}

/* A request for each connection of peers[0..np) the set does not have. */
static int p2p_reqs(struct xcclComm *comm, int set, int is_send, const int *peers, int np, conn_req_t *reqs) {
  comm_p2p_t *d = is_send ? comm->p2p_send[set] : comm->p2p_recv[set];
  /* The user's sends carry whatever they are given; the algorithms' own
   * connections small messages or many at once (XCCL_ALGO_CHUNK_SIZE); the
   * one-sided calls' are made between every pair (XCCL_RMA_CHUNK_SIZE). */
  size_t slot = set == COMM_P2P_USER || !comm->site.peer_slot ? comm->peers[comm->rank].chunk_size
                                                               : comm->site.peer_slot;
  if (set == COMM_P2P_RMA) slot = config_size(CFG_RMA_CHUNK_SIZE);
  int k = 0;
  for (int i = 0; i < np; i++) {
    int p = peers[i];
    if (d[p].ready || seen_before(peers, i)) continue;
    reqs[k] = (conn_req_t){.conn = &d[p].conn,
                           .fifo_p = &d[p].fifo,
                           .ready_p = &d[p].ready,
                           .peer = p,
                           .is_send = is_send,
                           .dev = comm_p2p_dev(comm, p),
                           .channel = -1,
                           .slot_size = slot,
                           .tag = P2P_TAG_WHERE + (uint32_t)set,
                           .ack_tag = P2P_TAG_ACK + (uint32_t)set};
    comm_peer_desc(comm, p, reqs[k].desc, sizeof(reqs[k].desc));
    k++;
  }
  return k;
}

xcclResult_t comm_connect_p2p(struct xcclComm *comm, int set, const int *send_peers, int nsend, const int *recv_peers,
                              int nrecv) {
  conn_req_t *reqs = calloc((size_t)(nsend + nrecv) + 1, sizeof(*reqs));
  if (!reqs) return err_set(xcclSystemError, LOG_INIT, "out of memory for point-to-point set-up");
  int n = p2p_reqs(comm, set, 0, recv_peers, nrecv, reqs);
  n += p2p_reqs(comm, set, 1, send_peers, nsend, reqs + n);
  xcclResult_t res = conns_make(comm, reqs, n, "making point-to-point connections");
  free(reqs);
  if (res == xcclSuccess && n > 0) {
    int conns;
    uint64_t bytes;
    comm_conn_memory(comm, &conns, &bytes);
    INFO(INIT, "rank %d: %d more connection(s) of set %d; now %d, %.1f MiB of slots", comm->rank, n, set,
         conns, (double)bytes / (1 << 20));
  }
  return res;
}

/* ---- Every connection of a communicator ---- */

void comm_each_conn(struct xcclComm *comm, void (*fn)(void *ctx, transport_conn_t *conn, int producer), void *ctx) {
  for (int c = 0; comm->channels && c < comm->nchannels; c++) {
    if (comm->channels[c].send) fn(ctx, &comm->channels[c].send_conn, 1);
    if (comm->channels[c].recv) fn(ctx, &comm->channels[c].recv_conn, 0);
  }
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    for (int p = 0; comm->p2p_send[set] && comm->p2p_recv[set] && p < comm->nranks; p++) {
      if (comm->p2p_send[set][p].fifo) fn(ctx, &comm->p2p_send[set][p].conn, 1);
      if (comm->p2p_recv[set][p].fifo) fn(ctx, &comm->p2p_recv[set][p].conn, 0);
    }
  }
}

typedef struct {
  int conns;
  uint64_t recv_bytes;
} conn_tally_t;

/* A receive side's fifo is this rank's memory; so is a send side's that is
 * not shared (the network transport's, which the proxy sends from). A
 * shared-memory sender maps its receiver's segment: the receiver counts it. */
static void tally_one(void *ctx, transport_conn_t *conn, int producer) {
  conn_tally_t *t = ctx;
  t->conns++;
  if (conn->fifo && (!producer || !conn->fifo->shared)) t->recv_bytes += comm_conn_bytes(conn->fifo->slot_size);
}

uint64_t comm_conn_bytes(size_t slot_size) { return slot_fifo_bytes(slot_size); }

void comm_conn_memory(struct xcclComm *comm, int *nconns, uint64_t *recv_bytes) {
  conn_tally_t t = {0, 0};
  comm_each_conn(comm, tally_one, &t);
  *nconns = t.conns, *recv_bytes = t.recv_bytes;
}

static void break_one(void *msg, transport_conn_t *conn, int producer) {
  (void)producer;
  if (conn->fifo && conn->fifo->shared) slot_fifo_fail(conn->fifo, xcclRemoteError, msg);
}

void comm_break_shm(struct xcclComm *comm, const char *msg) { comm_each_conn(comm, break_one, (void *)msg); }

static void p2p_forget(comm_p2p_t *d) {
  atomic_store(&d->ready, 0);
  transport_conn_free(&d->conn);
  d->fifo = NULL;
  d->step = 0;
}

void comm_free_conns(struct xcclComm *comm) {
  for (int c = 0; comm->channels && c < comm->nchannels; c++) {
    comm_channel_t *ch = &comm->channels[c];
    ch->send = ch->recv = NULL;
    ch->send_step = ch->recv_step = 0;
    transport_conn_free(&ch->send_conn);
    transport_conn_free(&ch->recv_conn);
  }
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    for (int r = 0; comm->p2p_send[set] && comm->p2p_recv[set] && r < comm->nranks; r++) {
      p2p_forget(&comm->p2p_send[set][r]);
      p2p_forget(&comm->p2p_recv[set][r]);
    }
  }
}
