/*
 * comm_dump.c — each communicator's in-flight state record (comm_dump.h):
 * kept in a list the XCCL_DUMP_SIGNAL watcher walks, collected from the
 * engine's kern_state_t and the communicator's peers into a dump_info_t,
 * which src/observe/dump.c writes as JSON.
 */
#include "comm_dump.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "reduce.h"
#include "tuning.h"

struct dump_slot {
  struct dump_slot *prev_rec, *next_rec; /* in dump_list, under dump_lock */
  kern_state_t state;
  /* Fixed once registered: */
  uint64_t id;
  int rank, nranks, prev, next; /* channel 0's neighbours, the comm's prev and next */
  int nchannels;
  int chan_prev[XCCL_MAX_CHANNELS], chan_next[XCCL_MAX_CHANNELS]; /* each channel's own (issue 24) */
  const comm_peer_info_t *peers;                                  /* the communicator's, unchanged after init */
  char host[COMM_HOST_BYTES];
  /* The first failure, set once before `failed` (release): */
  _Atomic int failed;
  int fail_here; /* fail is this communicator's; 0: another of its group failed */
  kern_failure_t fail;
  char fail_msg[ERR_MSG_MAX];
};
typedef struct dump_slot dump_slot_t;

/* Every registered record, for the signal's dumps. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static dump_slot_t *dump_list;

static uint64_t ts_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *fail_kind_name(kern_fail_kind_t k) {
  switch (k) {
    case KERN_FAIL_TIMEOUT:
      return "timeout";
    case KERN_FAIL_CONN:
      return "conn";
    case KERN_FAIL_ABORT:
      return "abort";
    case KERN_FAIL_PROTOCOL:
      return "protocol";
    case KERN_FAIL_CHECKSUM:
      return "checksum";
    default:
      return "none";
  }
}

/* A wait's peer: ring items name none (-1): their channel's previous rank
 * for data, its next for room. */
static int resolve_peer(const dump_slot_t *d, int peer, int is_recv, int channel) {
  if (peer >= 0) return peer;
  if (channel >= 0 && channel < d->nchannels) return is_recv ? d->chan_prev[channel] : d->chan_next[channel];
  return is_recv ? d->prev : d->next;
}

static void collect_where(dump_wait_t *w, const dump_slot_t *d, int peer, int is_recv, int channel, uint64_t step,
                          uint64_t loop, int action, int item) {
  w->peer = resolve_peer(d, peer, is_recv, channel);
  w->is_recv = is_recv, w->channel = channel, w->step = step, w->loop = loop, w->action = action, w->item = item;
}

/* d's state now into out (a large struct: the caller's, not the stack's of
 * a small thread). */
static void dump_collect(dump_slot_t *d, const char *reason, dump_info_t *out) {
  kern_state_copy_t s;
  kern_state_snapshot(&d->state, &s);
  memset(out, 0, sizeof(*out));
  out->reason = reason;
  out->realtime_ns = ts_ns(CLOCK_REALTIME), out->monotonic_ns = ts_ns(CLOCK_MONOTONIC);
  snprintf(out->host, sizeof(out->host), "%s", d->host);
  out->id = d->id;
  out->rank = d->rank, out->nranks = d->nranks, out->prev = d->prev, out->next = d->next;
  int failed = atomic_load_explicit(&d->failed, memory_order_acquire);
  int run = s.run_state >= 0 && s.run_state <= KERN_STATE_FAILED ? s.run_state : KERN_STATE_RUNNING;
  out->run = run == KERN_STATE_IDLE ? DUMP_RUN_IDLE : run == KERN_STATE_FAILED ? DUMP_RUN_FAILED : DUMP_RUN_RUNNING;
  out->done = s.done_seq;
  out->total_waits = s.nwaits;
  out->torn = s.torn;
  if (run != KERN_STATE_IDLE) {
    out->op_name = s.op_name; /* a static string */
    out->seq = s.seq, out->count = s.count;
    out->type = kern_type_name((xcclDataType_t)s.type);
    out->redop = s.redop >= 0 && s.redop < xcclNumOps ? kern_op_name((xcclRedOp_t)s.redop) : NULL;
    out->algo = s.algo >= 0 && s.algo < ALGO_COUNT ? algo_name((algo_t)s.algo) : NULL;
    out->root = s.root, out->op_peer = s.peer, out->nops = s.nops;
    out->started_ns = s.nwaits > 0 ? s.start_ns : 0; /* set when it first waited */
  }
  int nw = run == KERN_STATE_IDLE ? 0 : s.nwaits < KERN_STATE_WAITS ? s.nwaits : KERN_STATE_WAITS;
  int named[DUMP_PEERS], nnamed = 0;
  for (int k = 0; k < nw && k < DUMP_WAITS; k++) {
    dump_wait_t *w = &out->waits[out->nwaits++];
    collect_where(w, d, s.waits[k].peer, s.waits[k].is_recv, s.waits[k].channel, s.waits[k].step, s.waits[k].loop,
                  s.waits[k].action, s.waits[k].item);
    w->since_ns = s.waits[k].since_ns;
    named[nnamed++] = w->peer;
  }
  if (failed) {
    const kern_failure_t *f = &d->fail;
    out->failed = 1;
    if (d->fail_here) { /* else another communicator of its group failed: kind "other" */
      out->fail_kind = fail_kind_name(f->kind);
      collect_where(&out->fail, d, f->peer, f->waiting_on_recv, f->channel, f->step, f->loop, f->action, f->item);
      named[nnamed++] = out->fail.peer;
    }
    snprintf(out->error, sizeof(out->error), "%s", d->fail_msg);
  }
  named[nnamed++] = d->prev;
  named[nnamed++] = d->next;
  for (int k = 0; k < nnamed; k++) {
    int p = named[k], dup = p < 0 || p >= d->nranks || p == d->rank;
    for (int j = 0; j < k && !dup; j++) dup = named[j] == p;
    if (dup || !d->peers) continue;
    dump_peer_t *pr = &out->peers[out->npeers++];
    pr->rank = p, pr->pid = d->peers[p].pid;
    snprintf(pr->host, sizeof(pr->host), "%s", d->peers[p].host);
  }
}

/* XCCL_DUMP_SIGNAL, on the watcher thread: every record, under the lock
 * (dump_unregister waits for it). */
static void dump_all(const char *reason) {
  static dump_info_t info; /* one watcher thread, under dump_lock */
  pthread_mutex_lock(&dump_lock);
  for (dump_slot_t *d = dump_list; d; d = d->next_rec) {
    char path[4096];
    dump_collect(d, reason, &info);
    int err = dump_write(&info, path, sizeof(path));
    if (err)
      WARN(COLL, "rank %d: XCCL_DUMP_SIGNAL: could not write the in-flight state to %s: %s", d->rank, path,
           strerror(err));
    else
      WARN(COLL, "rank %d: XCCL_DUMP_SIGNAL: in-flight state written to %s", d->rank, path);
  }
  pthread_mutex_unlock(&dump_lock);
}

/* ---- Records ---- */

xcclResult_t dump_register(struct xcclComm *comm, uint64_t comm_id) {
  dump_start(dump_all);
  dump_slot_t *d = calloc(1, sizeof(*d));
  if (!d) return err_set(xcclSystemError, LOG_INIT, "out of memory for a state record");
  d->id = comm_id;
  d->rank = comm->rank;
  d->nranks = comm->nranks;
  d->prev = comm->prev;
  d->next = comm->next;
  d->nchannels = comm->channels ? comm->nchannels : 0;
  for (int c = 0; c < d->nchannels; c++)
    d->chan_prev[c] = comm->channels[c].prev, d->chan_next[c] = comm->channels[c].next;
  d->peers = comm->peers;
  snprintf(d->host, sizeof(d->host), "%s", comm->peers ? comm->peers[comm->rank].host : "");
  comm->dump = d;
  comm->env.state = &d->state;
  pthread_mutex_lock(&dump_lock);
  d->next_rec = dump_list;
  if (dump_list) dump_list->prev_rec = d;
  dump_list = d;
  pthread_mutex_unlock(&dump_lock);
  return xcclSuccess;
}

void dump_unregister(struct xcclComm *comm) {
  dump_slot_t *d = comm->dump;
  if (!d) return;
  pthread_mutex_lock(&dump_lock); /* a dump of it under way ends first */
  if (d->prev_rec) d->prev_rec->next_rec = d->next_rec;
  else dump_list = d->next_rec;
  if (d->next_rec) d->next_rec->prev_rec = d->prev_rec;
  pthread_mutex_unlock(&dump_lock);
  comm->env.state = NULL;
  comm->dump = NULL;
  free(d);
}

/* Adds a wait on peer for connection set-up (once per peer and direction). */
static void connect_wait(kern_state_t *s, int peer, int is_recv, uint64_t now) {
  int k = atomic_load_explicit(&s->nwaits, memory_order_relaxed);
  for (int j = 0; j < k && j < KERN_STATE_WAITS; j++)
    if (atomic_load_explicit(&s->waits[j].peer, memory_order_relaxed) == peer &&
        atomic_load_explicit(&s->waits[j].is_recv, memory_order_relaxed) == is_recv)
      return;
  if (k < KERN_STATE_WAITS) {
    kern_wait_t *e = &s->waits[k];
    atomic_store_explicit(&e->item, -1, memory_order_release);
    atomic_store_explicit(&e->peer, peer, memory_order_release);
    atomic_store_explicit(&e->channel, -1, memory_order_release);
    atomic_store_explicit(&e->is_recv, is_recv, memory_order_release);
    atomic_store_explicit(&e->action, -1, memory_order_release);
    atomic_store_explicit(&e->loop, 0, memory_order_release);
    atomic_store_explicit(&e->step, 0, memory_order_release);
    atomic_store_explicit(&e->since_ns, now, memory_order_release);
  }
  atomic_store_explicit(&s->nwaits, k + 1, memory_order_release);
}

static int int_in(const int *v, int n, int x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}

void dump_connect_begin(struct xcclComm *comm, const group_op_t *ops, int n) {
  kern_state_t *s = comm->env.state;
  uint64_t now = clock_ns();
  kern_state_write_begin(s);
  atomic_store_explicit(&s->nwaits, 0, memory_order_release);
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i];
    if (op->comm != comm) continue;
    if (op->kind == GROUP_COLL) {
      algo_peers_t p;
      algo_peers_missing(comm, op->coll.algo, &op->coll, &p);
      for (int q = 0; q < ALGO_PEER_SETS; q++) {
        const algo_peer_set_t *ps = &p.set[q];
        for (int k = 0; k < ps->nrecv; k++) connect_wait(s, ps->recv[k], 1, now);
        for (int k = 0; k < ps->nsend; k++) /* a peer it also receives from is there already */
          if (!int_in(ps->recv, ps->nrecv, ps->send[k])) connect_wait(s, ps->send[k], 0, now);
      }
    } else if (op->kind != GROUP_COLL && op->peer != comm->rank) {
      int send = op->kind == GROUP_SEND;
      const comm_p2p_t *p = send ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
      if (!p->ready) connect_wait(s, op->peer, !send, now);
    }
  }
  kern_state_write_end(s);
}

void dump_connect_end(struct xcclComm *comm) {
  kern_state_t *s = comm->env.state;
  kern_state_write_begin(s);
  atomic_store_explicit(&s->nwaits, 0, memory_order_release);
  kern_state_write_end(s);
}

void dump_op_failed(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg) {
  dump_slot_t *d = comm->dump;
  kern_state_t *s = &d->state;
  if (!atomic_load_explicit(&d->failed, memory_order_relaxed)) { /* the first failure is the one to keep */
    d->fail = *f;
    d->fail_here = here;
    snprintf(d->fail_msg, sizeof(d->fail_msg), "%s", msg ? msg : "");
    atomic_store_explicit(&d->failed, 1, memory_order_release);
  }
  kern_state_write_begin(s);
  uint64_t info = atomic_load_explicit(&s->op_info, memory_order_relaxed);
  atomic_store_explicit(&s->op_info, kern_op_info_with_state(info, KERN_STATE_FAILED), memory_order_release);
  kern_state_write_end(s);
  /* A stall is what dumps are for; a usage error or an abort says all in its message. */
  kern_fail_kind_t kind = f->kind;
  if (!dump_dir() || (kind != KERN_FAIL_TIMEOUT && kind != KERN_FAIL_CONN)) return;
  dump_info_t *out = malloc(sizeof(*out));
  char path[4096];
  if (!out) {
    WARN(COLL, "rank %d: out of memory for the in-flight state dump", comm->rank);
    return;
  }
  dump_collect(d, kind == KERN_FAIL_TIMEOUT ? "timeout" : "error", out);
  int err = dump_write(out, path, sizeof(path));
  free(out);
  if (err)
    WARN(COLL, "rank %d: could not write the in-flight state to %s: %s", comm->rank, path, strerror(err));
  else
    WARN(COLL, "rank %d: in-flight state written to %s (xccl-stuck %s names the rank everyone waits on)", comm->rank,
         path, dump_dir());
}
