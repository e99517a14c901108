/*
 * trace.c — XCCL_TRACE: a communicator's ring of events as Chrome
 * trace-event JSON, written with jansson (trace.h).
 */
#include "trace.h"

#include <errno.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

enum { LANE_CALLS = 0, LANE_WAITS = 1, LANE_NET_SEND = 2, LANE_NET_RECV = 3, LANE_CHANNEL0 = 10 };

int trace_enabled(void) { return config_str(CFG_TRACE)[0] != '\0'; }

trace_ring_t *trace_ring_new(void) {
  uint64_t cap = (uint64_t)config_int(CFG_TRACE_EVENTS);
  trace_ring_t *r = calloc(1, sizeof(*r) + cap * sizeof(trace_event_t));
  if (!r) {
    WARN(INIT, "out of memory for XCCL_TRACE's %llu events: this communicator is not traced", (unsigned long long)cap);
    return NULL;
  }
  r->cap = cap;
  return r;
}

static int lane_of(const trace_event_t *e) {
  switch (e->kind) {
    case TRACE_COLL: return LANE_CALLS;
    case TRACE_WAIT: return LANE_WAITS;
    case TRACE_NET_SEND: return LANE_NET_SEND;
    case TRACE_NET_RECV: return LANE_NET_RECV;
    default: return LANE_CHANNEL0 + (e->channel > 0 ? e->channel : 0);
  }
}

/* The rank an event names: its own peer, or its channel's ring neighbour. */
static int peer_of(const trace_meta_t *m, const trace_event_t *e) {
  if (e->peer >= 0 || !m->prev || m->nchannels <= 0) return e->peer;
  int c = e->channel >= 0 && e->channel < m->nchannels ? e->channel : 0;
  return e->is_recv ? m->prev[c] : m->next[c];
}

/* The event's name, category and arguments. */
static json_t *event_json(const trace_meta_t *m, const trace_event_t *e) {
  int pid = m->rank, peer = peer_of(m, e);
  const char *name = "step", *cat = "step";
  json_t *args;
  switch (e->kind) {
    case TRACE_COLL:
      name = e->name ? e->name : "?";
      cat = "call";
      args = json_pack("{s:I, s:s, s:I, s:I, s:s}", "seq", (json_int_t)e->seq, "algorithm", e->algo ? e->algo : "",
                       "count", (json_int_t)e->count, "bytes", (json_int_t)e->bytes, "datatype",
                       e->dtype ? e->dtype : "");
      if (args && e->user_tag) json_object_set_new(args, "tag", json_integer((json_int_t)e->user_tag));
      break;
    case TRACE_WAIT:
      name = "wait";
      cat = "wait";
      args = json_pack("{s:i, s:s, s:i}", "peer", peer, "direction", e->is_recv ? "recv" : "send", "channel",
                       e->channel);
      break;
    case TRACE_NET_SEND:
    case TRACE_NET_RECV:
      name = e->kind == TRACE_NET_SEND ? "net send" : "net recv";
      cat = "net";
      args = json_pack("{s:i, s:I, s:I}", "peer", peer, "step", (json_int_t)e->seq, "bytes", (json_int_t)e->bytes);
      break;
    default:
      args = json_pack("{s:i, s:I, s:I, s:I}", "peer", peer, "loop", (json_int_t)e->seq, "actions",
                       (json_int_t)e->count, "bytes", (json_int_t)e->bytes);
      break;
  }
  return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat, "ph", "X", "ts",
                   (double)e->ts_ns / 1e3, "dur", (double)e->dur_ns / 1e3, "pid", pid, "tid", lane_of(e), "args",
                   args ? args : json_object());
}

static json_t *meta_event(const char *what, int pid, int tid, const char *name) {
  return json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid, "tid", tid, "args", "name",
                   name);
}

/* Copies ring's complete events into out (cap of them); returns how many. */
static uint64_t ring_copy(trace_ring_t *r, trace_event_t *out, uint64_t *dropped_p) {
  uint64_t next = atomic_load_explicit(&r->next, memory_order_acquire);
  uint64_t first = next > r->cap ? next - r->cap : 0, n = 0, skipped = 0;
  for (uint64_t i = first; i < next; i++) {
    trace_event_t *e = &r->ev[i % r->cap];
    if (atomic_load_explicit(&e->stamp, memory_order_acquire) != i + 1) {
      skipped++;
      continue;
    }
    memcpy(&out[n], e, sizeof(*e));
    if (atomic_load_explicit(&e->stamp, memory_order_acquire) != i + 1) skipped++; /* overwritten meanwhile */
    else n++;
  }
  *dropped_p = first + skipped;
  return n;
}

static json_t *meta_json(const trace_meta_t *m, uint64_t events, uint64_t dropped, uint64_t cap) {
  char comm[24];
  snprintf(comm, sizeof(comm), "%016llx", (unsigned long long)m->comm_id);
  return json_pack("{s:i, s:s, s:i, s:i, s:s, s:i, s:s, s:s, s:o, s:I, s:I, s:I, s:I}", "format", 1, "comm", comm,
                   "rank", m->rank, "nranks", m->nranks, "host", m->host ? m->host : "", "pid", m->pid, "state",
                   m->state ? m->state : "", "clock", "CLOCK_MONOTONIC", "clock_offset_ns",
                   m->offset_known ? json_integer((json_int_t)m->offset_ns) : json_null(), "clock_uncertainty_ns",
                   (json_int_t)m->uncertainty_ns, "events", (json_int_t)events, "dropped", (json_int_t)dropped,
                   "capacity", (json_int_t)cap);
}

static json_t *trace_json(const trace_meta_t *m, trace_ring_t *r) {
  trace_event_t *evs = malloc(r->cap * sizeof(*evs));
  json_t *list = json_array(), *root = NULL;
  if (!evs || !list) goto out;
  uint64_t dropped = 0, n = ring_copy(r, evs, &dropped);
  char pname[160];
  snprintf(pname, sizeof(pname), "rank %d (%s)", m->rank, m->host ? m->host : "?");
  int bad = json_array_append_new(list, meta_event("process_name", m->rank, 0, pname));
  bad |= json_array_append_new(list, json_pack("{s:s, s:s, s:i, s:{s:i}}", "name", "process_sort_index", "ph", "M",
                                               "pid", m->rank, "args", "sort_index", m->rank));
  static const char *const lanes[] = {"calls", "waits", "net send", "net recv"};
  for (int t = 0; t < 4; t++) bad |= json_array_append_new(list, meta_event("thread_name", m->rank, t, lanes[t]));
  unsigned char named[64] = {0};
  for (uint64_t i = 0; i < n && !bad; i++) {
    int lane = lane_of(&evs[i]);
    if (lane >= LANE_CHANNEL0 && lane - LANE_CHANNEL0 < 64 && !named[lane - LANE_CHANNEL0]) {
      char tname[32];
      snprintf(tname, sizeof(tname), "channel %d", lane - LANE_CHANNEL0);
      named[lane - LANE_CHANNEL0] = 1;
      bad |= json_array_append_new(list, meta_event("thread_name", m->rank, lane, tname));
    }
    bad |= json_array_append_new(list, event_json(m, &evs[i]));
  }
  json_t *meta = meta_json(m, n, dropped, r->cap);
  if (bad || !meta) {
    json_decref(meta);
    goto out;
  }
  root = json_pack("{s:o, s:s, s:O, s:o}", "traceEvents", list, "displayTimeUnit", "ns", "otherData", meta, "xccl",
                   meta);
  list = NULL; /* root's now (or freed by json_pack when it failed) */
out:
  json_decref(list);
  free(evs);
  return root;
}

int trace_write(const trace_meta_t *m, trace_ring_t *r) {
  char path[4096], tmp[4200];
  const char *dir = config_str(CFG_TRACE);
  snprintf(path, sizeof(path), "%s/xccl-trace-%016llx-r%d.json", dir, (unsigned long long)m->comm_id, m->rank);
  static _Atomic unsigned writes; /* two threads may write at once (a failure seen by the CUDA watcher) */
  snprintf(tmp, sizeof(tmp), "%s/.xccl-trace-%016llx-r%d.json.%d.%u", dir, (unsigned long long)m->comm_id, m->rank,
           (int)getpid(), atomic_fetch_add(&writes, 1));
  json_t *root = trace_json(m, r);
  if (!root) {
    WARN(INIT, "rank %d: out of memory for XCCL_TRACE's file %s: not written", m->rank, path);
    return -1;
  }
  int rc = json_dump_file(root, tmp, JSON_COMPACT);
  int err = errno;
  json_decref(root);
  if (rc != 0 || rename(tmp, path) != 0) {
    if (rc == 0) err = errno;
    unlink(tmp);
    WARN(INIT, "rank %d: cannot write XCCL_TRACE's file %s: %s; the job goes on without it", m->rank, path,
         strerror(err ? err : EIO));
    return -1;
  }
  INFO(INIT, "rank %d: timeline written to %s", m->rank, path);
  return 0;
}
