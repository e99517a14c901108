/*
 * sim_pat.c — PAT's all-gather and reduce-scatter (host_pat.h) replayed:
 * each rank's item as host_pat_item builds it over the stand-in fifos, a
 * piece of host_pat_next's length moving when host_pat_stream_may (the
 * kernel's rule) allows and its connection has a message or a free slot,
 * as pat_step tries its streams in order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "host_pat.h"
#include "sim.h"
#include "sim_stand_in.h"

#define PAT_MAX_TAGS 32 /* one per dimension */

typedef struct {
  char *items; /* k items of item_bytes */
  size_t item_bytes;
  sim_conn_t *conn; /* [rank * PAT_MAX_TAGS + dim]: that dimension's connections, either way */
  unsigned char *finished;
  stand_in_t si;
} pat_state_t;

static pat_item_t *pat_at(pat_state_t *st, int r) { return (pat_item_t *)(st->items + (size_t)r * st->item_bytes); }

/* Every rank's pieces: per dimension, per chunk, ceil(its part / a piece). */
static double pat_msgs(const sim_t *s) {
  int k = s->c.nranks;
  size_t piece = stand_in_piece_elems(s), count = s->count ? s->count : 1;
  size_t w = host_pat_width(s->coll, count, s->esize, k, PAT_WORK_BYTES), chunks = (count + w - 1) / w;
  size_t last = count - (chunks - 1) * w;
  double msgs = 0;
  for (int d = 0, dims = host_pat_dims(k); d < dims; d++) {
    size_t n = host_pat_blocks(k, d);
    msgs += (double)(chunks - 1) * (double)((n * w + piece - 1) / piece) + (double)((n * last + piece - 1) / piece);
  }
  return (double)k * msgs;
}

static void pat_teardown(sim_t *s) {
  pat_state_t *st = s->state;
  if (!st) return;
  free(st->items), free(st->conn), free(st->finished);
  stand_in_free(&st->si);
  free(st);
  s->state = NULL;
}

static int pat_setup(sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  pat_state_t *st = calloc(1, sizeof(*st));
  s->state = st;
  if (!st || stand_in_make(&st->si, s) != 0) goto fail;
  /* The items only: no data moves, so no accumulators behind them. */
  st->item_bytes = host_pat_item_bytes((int)k);
  st->items = malloc(k * st->item_bytes);
  st->conn = calloc(k * PAT_MAX_TAGS, sizeof(sim_conn_t));
  st->finished = calloc(k, 1);
  if (!st->items || !st->conn || !st->finished) goto fail;
  for (size_t r = 0; r < k; r++) {
    st->si.a.rank = (int)r;
    host_pat_item(pat_at(st, (int)r), &st->si.a, &st->si.env, 0, PAT_WORK_BYTES);
  }
  s->expect = k;
  return 0;
fail:
  fprintf(stderr, "xccl-sim: pat: out of memory for %zu ranks\n", k);
  if (st) pat_teardown(s);
  return -1;
}

/* Moves rank r's streams as pat_step would, until none can. A dimension's
 * send and receive have different partners (the same one on 2 ranks), so
 * each direction of a dimension's tag is its own connection. */
static void pat_advance(sim_t *s, pat_state_t *st, int r) {
  if (st->finished[r]) return;
  pat_item_t *it = pat_at(st, r);
  int moved = 1, left = 0;
  while (moved) {
    moved = 0, left = 0;
    for (int i = 0; i < it->nst; i++) {
      pat_stream_t *x = &it->st[i];
      if (x->done == x->total) continue;
      left = 1;
      size_t n = host_pat_next(it, i);
      if (!host_pat_stream_may(it, i, n)) continue;
      sim_conn_t *cn = &st->conn[(size_t)r * PAT_MAX_TAGS + (size_t)x->dim];
      if (!sim_conn_move(s, cn, r, x->peer, x->dim, x->is_recv, n * s->esize)) continue;
      x->done += n;
      moved = 1;
    }
  }
  if (!left || it->base.finished) {
    st->finished[r] = 1;
    sim_finish(s);
  }
}

static void pat_start(sim_t *s) {
  pat_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) pat_advance(s, st, r);
}

static void pat_deliver(sim_t *s, const sim_ev_t *e) {
  pat_state_t *st = s->state;
  sim_conn_arrive(&st->conn[(size_t)e->dst * PAT_MAX_TAGS + (size_t)e->tag], e);
  pat_advance(s, st, e->dst);
}

const sim_sched_t sim_pat = {
    .name = "pat",
    .msgs = pat_msgs,
    .setup = pat_setup,
    .start = pat_start,
    .deliver = pat_deliver,
    .teardown = pat_teardown,
};
