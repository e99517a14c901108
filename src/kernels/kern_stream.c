/* kern_stream.c — the pass, the wait and the drain of items made of
 * streams (kern_stream.h). */
#include "kern_stream.h"

#include "kern_recv.h"

static int complete(const kern_stream_t *st) { return st->done == st->total; }

/* The next piece of stream i, if it may move and its fifo is ready. 1 if
 * it moved, 0 if not, -1 on a bad message. */
static int piece(kern_item_t *it, const kern_streams_t *s, int i, kern_failure_t *fail) {
  kern_stream_t *st = kern_stream_at(s, i);
  if (complete(st)) return 0;
  size_t n = kern_stream_next(it, s, i, st), bytes = n * s->esize;
  if (!s->may(it, i, n)) return 0;
  int gate = kern_fifo_gate(st->f, *st->step, st->is_recv, bytes, st->peer, fail);
  if (gate <= 0) return gate;
  s->move(it, i, slot_fifo_slot(st->f, *st->step), n);
  if (st->is_recv)
    slot_fifo_release(st->f, (*st->step)++);
  else
    slot_fifo_send(st->f, (*st->step)++, bytes, it->env->fault);
  return 1;
}

int kern_streams_step(kern_item_t *it, const kern_streams_t *s, kern_failure_t *fail) {
  int moved = 0, left = 0;
  for (int i = 0; i < s->n; i++) {
    kern_stream_t *st = kern_stream_at(s, i);
    int m = piece(it, s, i, fail);
    if (m < 0) {
      it->peer = st->peer, it->action = i;
      return -1;
    }
    if (m) moved = 1, it->action = i, it->loop = st->done / s->piece_elems;
    left |= !complete(st);
  }
  it->finished = !left;
  return moved;
}

slot_fifo_t *kern_streams_waiting(kern_item_t *it, const kern_streams_t *s, uint64_t *step_p, int *is_recv_p) {
  kern_stream_t *any = NULL;
  for (int i = 0; i < s->n; i++) {
    kern_stream_t *st = kern_stream_at(s, i);
    int blocked;
    if (it->finished) { /* draining: a send the transport has not taken */
      blocked = !st->is_recv && !slot_fifo_taken(st->f, *st->step);
    } else {
      if (complete(st)) continue;
      if (!any) any = st;
      blocked = s->may(it, i, kern_stream_next(it, s, i, st)) &&
                (st->is_recv ? !slot_fifo_ready(st->f, *st->step) : !slot_fifo_room(st->f, *st->step));
    }
    if (blocked) {
      any = st;
      break;
    }
  }
  if (!any) return NULL;
  it->peer = any->peer;
  *is_recv_p = any->is_recv;
  *step_p = it->finished ? atomic_load(&any->f->head) : *any->step;
  return any->f;
}

int kern_streams_drained(const kern_streams_t *s) {
  for (int i = 0; i < s->n; i++) {
    const kern_stream_t *st = kern_stream_at(s, i);
    if (!st->is_recv && !slot_fifo_taken(st->f, *st->step)) return 0;
  }
  return 1;
}
