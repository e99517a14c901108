/*
 * kern_stream.h — what the items made of streams share (Rabenseifner's,
 * host_rab.h; Bruck's, host_bruck.h; PAT's, host_pat.h): a stream is one
 * direction of one exchange, the slot-sized pieces it sends to or receives
 * from one peer on one fifo. The item keeps its streams in an array, each
 * element starting with its kern_stream_t, and says what a piece is made of
 * (may), what moving one does (move) and, if it cuts them itself, how long
 * the next is (next); the pass over the streams, the wait a dump names and
 * the drain are the same for every such item.
 */
#ifndef XCCL_KERNELS_KERN_STREAM_H
#define XCCL_KERNELS_KERN_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "host_engine.h"
#include "slots.h"

/* The fields, once: a stream type puts them first, in a union with a
 * kern_stream_t, so that its own code names them directly. */
#define KERN_STREAM_FIELDS                  \
  slot_fifo_t *f;                           \
  uint64_t *step;                           \
  int peer; /* the rank at the other end */ \
  int is_recv;                              \
  size_t total, done; /* elements of the stream, and moved so far */

typedef struct {
  KERN_STREAM_FIELDS
} kern_stream_t;

/* 1 if the next n elements of stream i may move: what they are made of is done. */
typedef int kern_stream_may_fn(const kern_item_t *it, int i, size_t n);
/* Moves the next n elements of stream i between the item's buffers and
 * slot, and counts them in its `done`. */
typedef void kern_stream_move_fn(kern_item_t *it, int i, char *slot, size_t n);
/* Elements of stream i's next piece, for an item that cuts its pieces
 * itself (at most piece_elems, and more than 0 while the stream is not
 * complete). */
typedef size_t kern_stream_next_fn(const kern_item_t *it, int i);

typedef struct {
  char *streams; /* n elements of stride bytes, each starting with its kern_stream_t */
  size_t stride;
  int n;
  size_t piece_elems, esize;
  kern_stream_may_fn *may;
  kern_stream_move_fn *move;
  kern_stream_next_fn *next; /* optional; NULL: piece_elems, or what is left */
} kern_streams_t;

static inline kern_stream_t *kern_stream_at(const kern_streams_t *s, int i) {
  return (kern_stream_t *)(s->streams + (size_t)i * s->stride);
}

/* Elements of stream i's next piece (st: kern_stream_at(s, i)). */
static inline size_t kern_stream_next(const kern_item_t *it, const kern_streams_t *s, int i, const kern_stream_t *st) {
  if (s->next) return s->next(it, i);
  size_t left = st->total - st->done;
  return left < s->piece_elems ? left : s->piece_elems;
}

/* One pass of an item's step: each stream in order moves its next piece if
 * it may and its fifo is ready (a receive checked by kern_recv_check).
 * Returns 1 if a piece moved, 0 if none could, -1 on a bad message (it->peer
 * and it->action name the stream); sets it->finished when every stream is
 * complete. */
int kern_streams_step(kern_item_t *it, const kern_streams_t *s, kern_failure_t *fail);

/* The engine's `waiting`: the first stream that may move but for its fifo,
 * in array order (the order data flows through them, so the ranks around a
 * stopped one point at it), else the first incomplete one; once finished, a
 * send the transport has not taken. */
slot_fifo_t *kern_streams_waiting(kern_item_t *it, const kern_streams_t *s, uint64_t *step_p, int *is_recv_p);

/* The engine's `drained`: every send taken by the transport. */
int kern_streams_drained(const kern_streams_t *s);

#endif
