/*
 * sim_bruck.c — Bruck's all-to-all (host_bruck.h) replayed: each rank's
 * item as host_bruck_item builds it over the stand-in fifos, a piece moving
 * when host_bruck_stream_may (the kernel's rule) allows and its connection
 * has a message or a free slot, as bruck_step tries its streams in order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "host_bruck.h"
#include "sim.h"
#include "sim_stand_in.h"

#define BRUCK_MAX_TAGS 32 /* one per round */

typedef struct {
  char *items; /* k items of item_bytes */
  size_t item_bytes;
  sim_conn_t *conn; /* [rank * BRUCK_MAX_TAGS + round]: the connection of that round, either way */
  unsigned char *finished;
  stand_in_t si;
} bruck_state_t;

static bruck_item_t *bruck_at(bruck_state_t *st, int r) {
  return (bruck_item_t *)(st->items + (size_t)r * st->item_bytes);
}


static double bruck_msgs(const sim_t *s) {
  double msgs = 0;
  for (int j = 0, r = host_bruck_rounds(s->c.nranks); j < r; j++) {
    size_t elems = host_bruck_round_blocks(s->c.nranks, j) * s->count;
    msgs += (double)((elems + stand_in_piece_elems(s) - 1) / stand_in_piece_elems(s));
  }
  return (double)s->c.nranks * msgs;
}

static void bruck_teardown(sim_t *s) {
  bruck_state_t *st = s->state;
  if (!st) return;
  free(st->items), free(st->conn), free(st->finished);
  stand_in_free(&st->si);
  free(st);
  s->state = NULL;
}

static int bruck_setup(sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  bruck_state_t *st = calloc(1, sizeof(*st));
  s->state = st;
  if (!st || stand_in_make(&st->si, s) != 0) goto fail;
  st->item_bytes = host_bruck_item_bytes((int)k);
  st->items = malloc(k * st->item_bytes);
  st->conn = calloc(k * BRUCK_MAX_TAGS, sizeof(sim_conn_t));
  st->finished = calloc(k, 1);
  if (!st->items || !st->conn || !st->finished) goto fail;
  for (size_t r = 0; r < k; r++) {
    st->si.a.rank = (int)r;
    host_bruck_item(bruck_at(st, (int)r), &st->si.a, &st->si.env, 0);
  }
  s->expect = k;
  return 0;
fail:
  fprintf(stderr, "xccl-sim: bruck: out of memory for %zu ranks\n", k);
  if (st) bruck_teardown(s);
  return -1;
}

/* Moves rank r's streams as bruck_step would, until none can. A round's
 * send and receive have different partners (the same one on 2 ranks), so
 * each direction of a round's tag is its own connection. */
static void bruck_advance(sim_t *s, bruck_state_t *st, int r) {
  if (st->finished[r]) return;
  bruck_item_t *it = bruck_at(st, r);
  int moved = 1, left = 0;
  while (moved) {
    moved = 0, left = 0;
    for (int i = 0; i < it->nst; i++) {
      bruck_stream_t *x = &it->st[i];
      if (x->done == x->total) continue;
      left = 1;
      size_t n = x->total - x->done < it->piece_elems ? x->total - x->done : it->piece_elems;
      if (!host_bruck_stream_may(it, i, n)) continue;
      sim_conn_t *cn = &st->conn[(size_t)r * BRUCK_MAX_TAGS + (size_t)x->round];
      if (!sim_conn_move(s, cn, r, x->peer, x->round, x->is_recv, n * s->esize)) continue;
      x->done += n;
      moved = 1;
    }
  }
  if (!left || it->base.finished) {
    st->finished[r] = 1;
    sim_finish(s);
  }
}

static void bruck_start(sim_t *s) {
  bruck_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) bruck_advance(s, st, r);
}

static void bruck_deliver(sim_t *s, const sim_ev_t *e) {
  bruck_state_t *st = s->state;
  sim_conn_arrive(&st->conn[(size_t)e->dst * BRUCK_MAX_TAGS + (size_t)e->tag], e);
  bruck_advance(s, st, e->dst);
}

const sim_sched_t sim_bruck = {
    .name = "bruck",
    .msgs = bruck_msgs,
    .setup = bruck_setup,
    .start = bruck_start,
    .deliver = bruck_deliver,
    .teardown = bruck_teardown,
};
