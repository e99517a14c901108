/*
 * comm_trace.c — a communicator's timeline for XCCL_TRACE (comm_trace.h):
 * its ring, its clock offset to rank 0, its operations' events and when
 * the file is written.
 */
#include "comm_trace.h"

#include <stdlib.h>
#include <unistd.h>

#include "algo.h"
#include "bootstrap.h"
#include "log.h"
#include "proxy.h"
#include "reduce.h"

#define TRACE_TAG_PING 0x54524350u /* "TRCP": rank 0's ping, answered with the peer's clock */
#define TRACE_TAG_RESULT 0x54524352u /* "TRCR": rank 0 tells the peer its offset and uncertainty */
#define TRACE_PINGS 8

/* Rank 0's side with peer: the ping-pong of the smallest round trip gives
 * offset = t_peer - (t_send + t_recv) / 2, good to half that round trip. */
static xcclResult_t offset_measure(bootstrap_t *bs, int peer, int64_t result[2]) {
  uint64_t best = UINT64_MAX;
  for (int k = 0; k < TRACE_PINGS; k++) {
    uint64_t t1 = clock_ns(), tp = 0;
    TRY(bootstrap_send(bs, peer, TRACE_TAG_PING, &t1, sizeof(t1)));
    TRY(bootstrap_recv(bs, peer, TRACE_TAG_PING, &tp, sizeof(tp)));
    uint64_t t2 = clock_ns();
    if (t2 - t1 < best) {
      best = t2 - t1;
      result[0] = (int64_t)(tp - (t1 + (t2 - t1) / 2));
      result[1] = (int64_t)(best / 2);
    }
  }
  return bootstrap_send(bs, peer, TRACE_TAG_RESULT, result, 2 * sizeof(int64_t));
}

/* A peer's side: answer each ping with its clock, then learn the result. */
static xcclResult_t offset_answer(bootstrap_t *bs, int64_t result[2]) {
  for (int k = 0; k < TRACE_PINGS; k++) {
    uint64_t t = 0;
    TRY(bootstrap_recv(bs, 0, TRACE_TAG_PING, &t, sizeof(t)));
    t = clock_ns();
    TRY(bootstrap_send(bs, 0, TRACE_TAG_PING, &t, sizeof(t)));
  }
  return bootstrap_recv(bs, 0, TRACE_TAG_RESULT, result, 2 * sizeof(int64_t));
}

/* Every rank that traces, with rank 0 when it traces too (the peer info
 * says who does, so a rank set differently waits on nobody). */
static void offset_exchange(struct xcclComm *comm, struct comm_trace *t) {
  if (comm->rank == 0) {
    t->offset_known = 1; /* rank 0's clock is the reference */
    for (int r = 1; r < comm->nranks; r++) {
      int64_t result[2];
      if (!comm->peers[r].trace) continue;
      if (offset_measure(comm->bs, r, result) != xcclSuccess)
        WARN(INIT, "rank 0: XCCL_TRACE's clock offset to rank %d was not measured: %s", r, err_last());
    }
    return;
  }
  if (!comm->peers[0].trace) {
    WARN(INIT, "rank %d: XCCL_TRACE is set here but not on rank 0: its timeline has no clock offset", comm->rank);
    return;
  }
  int64_t result[2];
  if (offset_answer(comm->bs, result) != xcclSuccess) {
    WARN(INIT, "rank %d: XCCL_TRACE's clock offset to rank 0 was not measured: %s", comm->rank, err_last());
    return;
  }
  t->offset_known = 1;
  t->offset_ns = result[0];
  t->uncertainty_ns = (uint64_t)result[1];
}

void comm_trace_start(struct xcclComm *comm, uint64_t comm_id) {
  if (!trace_enabled()) return;
  struct comm_trace *t = calloc(1, sizeof(*t));
  if (t) t->ring = trace_ring_new();
  if (!t || !t->ring) {
    free(t);
    return;
  }
  t->comm_id = comm_id;
  if (comm->nranks > 1) offset_exchange(comm, t);
  else t->offset_known = 1;
  comm->trace = t;
  comm->env.trace = t->ring;
  comm_trace_proxy(comm);
}

void comm_trace_proxy(struct xcclComm *comm) {
  if (comm->trace && comm->proxy) proxy_set_trace(comm->proxy, comm->trace->ring);
}

void comm_trace_ops(struct xcclComm *comm, const group_op_t *ops, int n, uint64_t t0) {
  uint64_t now = clock_ns();
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i];
    if (op->comm != comm || !comm->trace) continue;
    uint64_t idx;
    trace_event_t *e = trace_ring_claim(op->comm->trace->ring, &idx);
    e->kind = TRACE_COLL;
    e->ts_ns = t0;
    e->dur_ns = now - t0;
    e->seq = op->seq;
    e->count = op->coll.count;
    e->bytes = op->bytes;
    e->name = op->coll.name;
    e->algo = op->kind == GROUP_COLL ? algo_name(op->coll.algo) : "p2p";
    e->dtype = kern_type_name(op->coll.type);
    e->peer = op->kind == GROUP_COLL ? -1 : op->peer;
    e->channel = -1;
    e->is_recv = op->kind == GROUP_RECV;
    e->user_tag = op->user_tag;
    trace_ring_commit(e, idx);
  }
}

static void trace_file(struct xcclComm *comm, const char *state) {
  struct comm_trace *t = comm->trace;
  int nch = comm->channels ? comm->nchannels : 0;
  int *prev = nch ? calloc((size_t)nch * 2, sizeof(int)) : NULL, *next = prev ? prev + nch : NULL;
  for (int c = 0; prev && c < nch; c++) {
    prev[c] = comm->channels[c].prev;
    next[c] = comm->channels[c].next;
  }
  trace_meta_t m = {.comm_id = t->comm_id,
                    .rank = comm->rank,
                    .nranks = comm->nranks,
                    .host = comm->peers ? comm->peers[comm->rank].host : "",
                    .pid = (int)getpid(),
                    .state = state,
                    .offset_known = t->offset_known,
                    .offset_ns = t->offset_ns,
                    .uncertainty_ns = t->uncertainty_ns,
                    .nchannels = prev ? nch : 0,
                    .prev = prev,
                    .next = next};
  trace_write(&m, t->ring);
  free(prev);
}

void comm_trace_failed(struct xcclComm *comm) {
  if (comm->trace) trace_file(comm, "failed");
}

void comm_trace_stop(struct xcclComm *comm) {
  struct comm_trace *t = comm->trace;
  if (!t) return;
  int failed = atomic_load(&comm->failed) != xcclSuccess;
  trace_file(comm, failed ? "failed" : atomic_load(&comm->abort_flag) ? "aborted" : "destroyed");
  comm->env.trace = NULL;
  comm->trace = NULL;
  free(t->ring);
  free(t);
}
