/*
 * comm_stats.c — a communicator's numbers for XCCL_STATS_FILE (comm_stats.h):
 * its source in src/observe/stats.c and the function that fills it.
 */
#include "comm_stats.h"

#include <stdlib.h>

#include "connect.h"
#include "proxy.h"
#include "transport.h"
#include "tuning.h"

static const char *op_label(int op) {
  static const char *const p2p_names[] = {"gather", "scatter", "alltoallv", "send", "recv"};
  return op < COLL_NKINDS ? tuning_coll_name((coll_kind_t)op) : p2p_names[op - COLL_NKINDS];
}

static const char *algo_label(int algo) { return algo == COMM_STATS_P2P ? "p2p" : algo_name((algo_t)algo); }

static const char *fail_reason(int kind, xcclResult_t res) {
  switch (kind) {
    case KERN_FAIL_TIMEOUT:
      return "timeout";
    case KERN_FAIL_CONN:
      return "connection";
    case KERN_FAIL_ABORT:
      return "abort";
    case KERN_FAIL_PROTOCOL:
      return "mismatch";
    case KERN_FAIL_CHECKSUM:
      return "checksum";
    default:
      break;
  }
  switch (res) {
    case xcclTimeout:
      return "timeout";
    case xcclRemoteError:
      return "remote";
    case xcclSystemError:
      return "system";
    case xcclInvalidUsage:
      return "usage";
    default:
      return "error";
  }
}

static stats_state_t live_state(struct xcclComm *comm) {
  if (atomic_load_explicit(&comm->failed, memory_order_acquire) != xcclSuccess) return STATS_FAILED;
  int life = atomic_load(&comm->life);
  return life == COMM_FINALIZED ? STATS_FINALIZED : life == COMM_REVOKED ? STATS_REVOKED : STATS_READY;
}

/* stats_fill_fn: reads comm's counters and its fifos' byte counts. */
static void comm_stats_fill(void *ctx, stats_comm_t *snap) {
  struct xcclComm *comm = ctx;
  struct comm_stats *s = comm->stats;
  snap->state = live_state(comm);
  if (snap->state == STATS_FAILED) {
    int noted = atomic_load_explicit(&s->fail_noted, memory_order_acquire);
    snap->fail_reason = fail_reason(noted ? s->fail_kind : KERN_FAIL_NONE, atomic_load(&comm->failed));
    snap->fail_peer = noted ? s->fail_peer : -1;
  }
  snap->wait_s = (double)atomic_load_explicit(&s->wait_ns, memory_order_relaxed) / 1e9;
  snap->errors = atomic_load_explicit(&s->errors, memory_order_relaxed);
  snap->timeouts = atomic_load_explicit(&s->timeouts, memory_order_relaxed);
  for (int op = 0; op < COMM_STATS_NOPS; op++)
    for (int a = 0; a <= ALGO_COUNT && snap->nops < snap->max_ops; a++) {
      uint64_t n = atomic_load_explicit(&s->ops[op][a], memory_order_relaxed);
      if (n) snap->ops[snap->nops++] = (stats_ops_t){op_label(op), algo_label(a), n};
    }
  /* Suspended, the connections may be going or gone (xcclCommSuspend). */
  int conns = atomic_load(&comm->life) != COMM_SUSPENDED;
  for (int peer = 0; conns && peer < comm->nranks; peer++) {
    if (peer == comm->rank) continue;
    for (int t = 0; t < transport_count() && snap->nlinks < snap->max_links; t++) {
      uint64_t sent = 0, recv = 0;
      comm_peer_bytes_on(comm, peer, transport_at(t), &sent, &recv);
      if (sent || recv) snap->links[snap->nlinks++] = (stats_link_t){peer, transport_at(t)->name, sent, recv};
    }
  }
}

void comm_stats_start(struct xcclComm *comm, uint64_t comm_id) {
  if (!stats_enabled()) return;
  struct comm_stats *s = calloc(1, sizeof(*s));
  if (!s) return;
  s->fail_peer = -1;
  int max_links = comm->nranks * transport_count();
  s->source = stats_add(comm_id, comm->rank, comm->nranks, comm->name, COMM_STATS_NOPS * (ALGO_COUNT + 1), max_links,
                        comm_stats_fill, comm);
  if (!s->source) {
    free(s);
    return;
  }
  comm->stats = s;
  comm->env.wait_ns = &s->wait_ns;
  comm_stats_proxy(comm);
}

void comm_stats_proxy(struct xcclComm *comm) {
  if (comm->stats && comm->proxy) proxy_set_tick(comm->proxy, stats_tick, NULL);
}

void comm_stats_stop(struct xcclComm *comm) {
  struct comm_stats *s = comm->stats;
  if (!s) return;
  if (comm->proxy) proxy_set_tick(comm->proxy, NULL, NULL);
  stats_remove(s->source, atomic_load(&comm->abort_flag) ? STATS_ABORTED : STATS_DESTROYED);
  comm->env.wait_ns = NULL;
  comm->stats = NULL;
  free(s);
}

void comm_stats_error(struct xcclComm *comm) {
  if (comm->stats) comm_stats_bump(&comm->stats->errors);
}

void comm_stats_note(struct xcclComm *comm, const kern_failure_t *f, int peer) {
  struct comm_stats *s = comm->stats;
  if (!s || atomic_load(&s->fail_noted)) return;
  s->fail_kind = (int)f->kind;
  s->fail_peer = f->kind == KERN_FAIL_ABORT ? -1 : peer; /* an abort is no peer's doing */
  atomic_store_explicit(&s->fail_noted, 1, memory_order_release);
}

void comm_stats_failed(struct xcclComm *comm, xcclResult_t res) {
  struct comm_stats *s = comm->stats;
  if (!s) return;
  if (res == xcclTimeout) comm_stats_bump(&s->timeouts);
  stats_write();
}
