/*
 * trace_ring.h — a fixed ring of plain timeline events (XCCL_TRACE), filled
 * on the data path without locks or allocation.
 *
 * Writers are the thread that runs a communicator's operations (its
 * collectives, the kernels' steps, their waits) and whichever thread moves
 * its network connections (the proxy thread, or a caller in proxy_progress):
 * each claims the next index with one atomic add, fills the record and
 * stamps it (index + 1, a release store). When the ring is full the oldest
 * events are overwritten (drop-oldest): a reader keeps the newest `cap` and
 * counts the rest as dropped. A reader (src/observe/trace.c, at destroy,
 * abort or failure) takes only records whose stamp is the index it expects,
 * before and after its copy, so one a writer was overwriting is skipped.
 *
 * Timestamps are clock_ns() (CLOCK_MONOTONIC). Strings are static.
 */
#ifndef XCCL_BASE_TRACE_RING_H
#define XCCL_BASE_TRACE_RING_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum {
  TRACE_COLL = 1, /* one operation of the user's: name, algo, dtype, seq, count, bytes */
  TRACE_STEP,     /* actions a host-kernel item ran in one go: channel, peer, seq (its loop), count (actions), bytes sent */
  TRACE_WAIT,     /* the caller stalled on a peer: channel, peer, is_recv */
  TRACE_NET_SEND, /* a network send, from post to completion: peer, seq (the connection's step), bytes */
  TRACE_NET_RECV  /* a network receive, from post to completion: peer, seq, bytes */
} trace_kind_t;

typedef struct {
  _Atomic uint64_t stamp; /* index + 1 once written; 0 while being written */
  uint64_t ts_ns, dur_ns;
  uint64_t bytes;
  uint64_t seq;
  uint64_t count;
  const char *name, *algo, *dtype; /* TRACE_COLL */
  uint64_t user_tag;               /* TRACE_COLL: the caller's tag (op_record.h), 0: none */
  int32_t peer;                    /* -1: the ring neighbour (previous for a receive, next for a send) */
  int16_t channel;
  uint8_t kind;
  uint8_t is_recv;
} trace_event_t;

typedef struct trace_ring {
  _Atomic uint64_t next; /* events claimed so far */
  uint64_t cap;
  trace_event_t ev[];
} trace_ring_t;

/* The record for the next event: fill it, then trace_ring_commit. */
static inline trace_event_t *trace_ring_claim(trace_ring_t *r, uint64_t *idx_p) {
  uint64_t i = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
  trace_event_t *e = &r->ev[i % r->cap];
  atomic_store_explicit(&e->stamp, 0, memory_order_relaxed);
  *idx_p = i;
  return e;
}

static inline void trace_ring_commit(trace_event_t *e, uint64_t idx) {
  atomic_store_explicit(&e->stamp, idx + 1, memory_order_release);
}

/* One event of kind with its time span and the fields most kinds have. */
static inline void trace_ring_add(trace_ring_t *r, trace_kind_t kind, uint64_t ts_ns, uint64_t end_ns, int peer,
                                  int channel, uint64_t seq, uint64_t count, uint64_t bytes, int is_recv) {
  uint64_t i;
  trace_event_t *e = trace_ring_claim(r, &i);
  e->kind = (uint8_t)kind;
  e->ts_ns = ts_ns;
  e->dur_ns = end_ns > ts_ns ? end_ns - ts_ns : 0;
  e->peer = peer;
  e->channel = (int16_t)channel;
  e->seq = seq;
  e->count = count;
  e->bytes = bytes;
  e->is_recv = (uint8_t)is_recv;
  e->name = e->algo = e->dtype = 0;
  e->user_tag = 0;
  trace_ring_commit(e, i);
}

#endif
