/*
 * sim_ring.c — the ring, replayed: each channel's actions come from
 * ring_schedule.h's iterator (ring_iter_init/action/next), the channels as
 * algo_ring.c splits a collective (ring_nchannels_for over the
 * communicator's channels, ring slots of XCCL_CHUNK_SIZE).
 *
 * Channel c's ring (as topo_plan_join makes it on a uniform cluster): hosts
 * in order, inside each host the GPUs from c on, so it enters a host at GPU c
 * and leaves from GPU c - 1, host to host over NIC c (rails).
 *
 * Folded (s->symmetric): every host runs the same schedule at the same
 * times on a uniform cluster, so only host 0's positions run; what the last
 * of them sends to host 1 is delivered to host 0's first, over host 0's NIC
 * out and host 1's NIC in. 2(k-1) steps at 65,536 ranks then cost 8 ranks'
 * messages, not 65,536's. Block sizes differ by at most one alignment unit
 * between positions, which the fold ignores.
 *
 * The window: a position sends while its connection to the next has a free
 * slot (host_ring.c checks room before it moves), and frees the previous
 * position's slot when it consumes the message (credit tag: the channel).
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

typedef struct {
  ring_iter_t it;
  uint32_t arrived; /* messages in from the previous position, not yet used */
  uint32_t sent, freed; /* to the next position: messages sent, and consumed there */
} ring_pos_t;

typedef struct {
  int nch, npos;
  ring_pos_t *pos; /* [channel * npos + position] */
} ring_state_t;

static int ring_rank(const sim_t *s, int c, int p) {
  int g = s->c.gpus;
  return (p / g) * g + (c % g + p % g) % g;
}

/* Where the root sits on channel c (ring_rank's inverse; algo_ring.c's
 * comm_ring_pos). */
static int ring_root_pos(const sim_t *s, int c) {
  int g = s->c.gpus, host = s->root / g, gpu = s->root % g;
  return host * g + (gpu - c % g + g) % g;
}

static int ring_can_fold(const sim_t *s) {
  return s->c.hosts >= 2 && (s->coll == COLL_ALLREDUCE || s->coll == COLL_ALLGATHER || s->coll == COLL_REDUCESCATTER);
}

static int ring_nch(const sim_t *s) { return ring_nchannels_for(s->count * s->esize, s->c.nchannels); }

static void ring_init_pos(const sim_t *s, ring_iter_t *it, int c, int p, int nch) {
  ring_iter_init(it, s->coll, s->c.nranks, p, ring_root_pos(s, c), s->count, s->esize, s->ring_slot, nch, c);
}

static double ring_msgs(const sim_t *s) {
  int nch = ring_nch(s), npos = s->symmetric ? s->c.gpus : s->c.nranks;
  double n = 0;
  for (int c = 0; c < nch; c++) {
    ring_iter_t it;
    uint64_t sends, recvs;
    ring_init_pos(s, &it, c, 0, nch);
    ring_iter_count_steps(&it, &sends, &recvs);
    n += (double)sends * npos;
  }
  return n;
}

static int ring_setup(sim_t *s) {
  ring_state_t *st = calloc(1, sizeof(*st));
  if (!st) goto fail;
  st->nch = ring_nch(s);
  st->npos = s->symmetric ? s->c.gpus : s->c.nranks;
  st->pos = calloc((size_t)st->nch * (size_t)st->npos, sizeof(ring_pos_t));
  if (!st->pos) goto fail;
  for (int c = 0; c < st->nch; c++)
    for (int p = 0; p < st->npos; p++) ring_init_pos(s, &st->pos[(size_t)c * st->npos + p].it, c, p, st->nch);
  s->state = st;
  s->expect = (uint64_t)st->nch * (uint64_t)st->npos;
  return 0;
fail:
  if (st) free(st->pos);
  free(st);
  fprintf(stderr, "xccl-sim: ring: out of memory for %d positions\n", s->c.nranks);
  return -1;
}

/* Runs position p of channel c as far as its messages allow. */
static void ring_advance(sim_t *s, ring_state_t *st, int c, int p) {
  ring_pos_t *rp = &st->pos[(size_t)c * st->npos + p];
  if (rp->it.done) return;
  int k = s->c.nranks, src = ring_rank(s, c, p);
  while (!rp->it.done) {
    size_t in, out, n;
    int flags = ring_iter_action(&rp->it, NULL, &in, &out, &n);
    if ((flags & RING_RECV) && rp->arrived == 0) return;
    if ((flags & RING_SEND) && !sim_room(s, rp->sent, rp->freed)) return;
    if (flags & RING_RECV) { /* the previous position (folded: the last one runs it) */
      rp->arrived--;
      int prev = p == 0 ? k - 1 : p - 1;
      sim_credit(s, src, ring_rank(s, c, prev), p == 0 ? st->npos - 1 : p - 1, c);
    }
    if (flags & RING_SEND) {
      int q = p + 1 == k ? 0 : p + 1, to = q == st->npos ? 0 : q;
      rp->sent++;
      sim_send(s, src, ring_rank(s, c, q), to, c, n * s->esize, c);
    }
    ring_iter_next(&rp->it);
  }
  sim_finish(s);
}

static void ring_start(sim_t *s) {
  ring_state_t *st = s->state;
  for (int c = 0; c < st->nch; c++)
    for (int p = 0; p < st->npos; p++) {
      if (st->pos[(size_t)c * st->npos + p].it.done) /* nothing to move (fewer elements than ranks) */
        sim_finish(s);
      else
        ring_advance(s, st, c, p);
    }
}

static void ring_deliver(sim_t *s, const sim_ev_t *e) {
  ring_state_t *st = s->state;
  ring_pos_t *rp = &st->pos[(size_t)e->tag * st->npos + e->dst];
  if (e->credit)
    rp->freed++;
  else
    rp->arrived++;
  ring_advance(s, st, e->tag, e->dst);
}

static void ring_teardown(sim_t *s) {
  ring_state_t *st = s->state;
  free(st->pos);
  free(st);
  s->state = NULL;
}

const sim_sched_t sim_ring = {
    .name = "ring",
    .can_fold = ring_can_fold,
    .msgs = ring_msgs,
    .setup = ring_setup,
    .start = ring_start,
    .deliver = ring_deliver,
    .teardown = ring_teardown,
};
