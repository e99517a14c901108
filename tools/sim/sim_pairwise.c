/*
 * sim_pairwise.c — all-to-all as pairwise's sends and receives (enqueue.c's
 * p2p_coll): every rank sends its k-1 blocks at once, in pairwise order (to
 * r + i, from r - i), each a stream of slot-sized pieces on its own
 * connection with the ring's slots (XCCL_CHUNK_SIZE, as the user's
 * point-to-point connections have). A connection per ordered pair: k^2 of
 * them, so it stops at PAIRWISE_MAX_RANKS.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

#define PAIRWISE_MAX_RANKS 8192

typedef struct {
  sim_conn_t *conn; /* [rank * k + peer]: sends to peer, arrivals from it */
  size_t *sent, *got; /* [rank * k + i]: pieces sent to r + i, received from r - i */
  int *left;          /* [rank]: streams not done */
  size_t pieces;
} pairwise_state_t;

static size_t pieces_of(const sim_t *s) {
  size_t bytes = s->count * s->esize, slot = s->ring_slot ? s->ring_slot : 1;
  return bytes ? (bytes + slot - 1) / slot : 1;
}

static double pairwise_msgs(const sim_t *s) {
  double k = s->c.nranks;
  return k > PAIRWISE_MAX_RANKS ? 1e300 : k * (k - 1) * (double)pieces_of(s);
}

static void pairwise_teardown(sim_t *s) {
  pairwise_state_t *st = s->state;
  if (!st) return;
  free(st->conn), free(st->sent), free(st->got), free(st->left);
  free(st);
  s->state = NULL;
}

static int pairwise_setup(sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  if (k > PAIRWISE_MAX_RANKS) {
    fprintf(stderr, "xccl-sim: pairwise: %zu ranks need %zu connections; it replays at most %d ranks\n", k, k * k,
            PAIRWISE_MAX_RANKS);
    return -1;
  }
  pairwise_state_t *st = calloc(1, sizeof(*st));
  s->state = st;
  if (!st) goto fail;
  st->conn = calloc(k * k, sizeof(sim_conn_t));
  st->sent = calloc(k * k, sizeof(size_t));
  st->got = calloc(k * k, sizeof(size_t));
  st->left = malloc(k * sizeof(int));
  if (!st->conn || !st->sent || !st->got || !st->left) goto fail;
  for (size_t r = 0; r < k; r++) st->left[r] = 2 * (int)(k - 1);
  st->pieces = pieces_of(s);
  s->expect = k;
  return 0;
fail:
  fprintf(stderr, "xccl-sim: pairwise: out of memory for %zu ranks\n", k);
  if (st) pairwise_teardown(s);
  return -1;
}

/* Moves what rank r's streams can, in pairwise order, until none can. */
static void pairwise_advance(sim_t *s, pairwise_state_t *st, int r) {
  int k = s->c.nranks, moved = 1;
  size_t bytes = s->count * s->esize, slot = s->ring_slot ? s->ring_slot : bytes;
  while (moved && st->left[r] > 0) {
    moved = 0;
    for (int i = 1; i < k; i++) {
      for (int is_recv = 0; is_recv < 2; is_recv++) {
        int peer = is_recv ? (r - i + k) % k : (r + i) % k;
        size_t *n = is_recv ? &st->got[(size_t)r * k + i] : &st->sent[(size_t)r * k + i];
        if (*n == st->pieces) continue;
        size_t piece = *n + 1 < st->pieces ? slot : bytes - (st->pieces - 1) * slot;
        if (!sim_conn_move(s, &st->conn[(size_t)r * k + peer], r, peer, 0, is_recv, bytes ? piece : 0)) continue;
        if (++*n == st->pieces && --st->left[r] == 0) sim_finish(s);
        moved = 1;
      }
    }
  }
}

static void pairwise_start(sim_t *s) {
  pairwise_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) pairwise_advance(s, st, r);
}

static void pairwise_deliver(sim_t *s, const sim_ev_t *e) {
  pairwise_state_t *st = s->state;
  sim_conn_arrive(&st->conn[(size_t)e->dst * (size_t)s->c.nranks + (size_t)e->src], e);
  pairwise_advance(s, st, e->dst);
}

const sim_sched_t sim_pairwise = {
    .name = "pairwise",
    .msgs = pairwise_msgs,
    .setup = pairwise_setup,
    .start = pairwise_start,
    .deliver = pairwise_deliver,
    .teardown = pairwise_teardown,
};
