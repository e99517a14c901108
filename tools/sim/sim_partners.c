/*
 * sim_partners.c — the collectives that exchange with partners over the
 * algorithms' own connections, replayed event by event:
 *   rd:  each rank's actions are host_rd_item's own (act[], host_rd.h),
 *        run piece by piece (pieces of a slot of XCCL_ALGO_CHUNK_SIZE);
 *   rab: each rank's streams are host_rab_item's own (host_rab.h) for s's
 *        collective (all-reduce, or the reduce-scatter's halving and the
 *        all-gather's doubling alone, with their fold), and a stream's next
 *        piece moves when host_rab_stream_may says so: the kernel's
 *        dependency rule, not a copy of it.
 * The items are built over stand-in fifos that only carry slot_size; no
 * data moves. A message's tag says which exchange it belongs to, so the
 * receiver counts arrivals per partner (rd) or per level (rab).
 *
 * The window: a send waits for a free slot on its connection (per partner
 * for rd, per level for rab, whose levels each have one partner), and a
 * receive frees the sender's slot (sim_credit, the same tag): sim.h's
 * sim_conn_t and sim_conn_move, which sim_hier.c's streams use too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_rab.h"
#include "host_rd.h"
#include "sim.h"
#include "sim_stand_in.h"

int stand_in_make(stand_in_t *si, const sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  memset(si, 0, sizeof(*si));
  si->fifo.slot_size = s->peer_slot;
  si->fifos = malloc(k * sizeof(*si->fifos));
  si->steps = malloc(k * sizeof(*si->steps));
  if (!si->fifos || !si->steps) return free(si->fifos), free(si->steps), -1;
  for (size_t i = 0; i < k; i++) si->fifos[i] = &si->fifo, si->steps[i] = &si->step;
  si->a = (partner_args_t){.coll = s->coll,
                           .count = s->count,
                           .type = stand_in_type(s->esize),
                           .op = xcclSum,
                           .nranks = s->c.nranks,
                           .send_fifo = si->fifos,
                           .recv_fifo = si->fifos,
                           .send_step = si->steps,
                           .recv_step = si->steps};
  return 0;
}

void stand_in_free(stand_in_t *si) { free(si->fifos), free(si->steps); }


/* ---- recursive doubling ---- */

#define RD_MAX_PARTNERS 40

typedef struct {
  rd_item_t *item;  /* [rank] */
  uint32_t *piece;  /* [rank]: the piece under way */
  sim_conn_t *conn; /* [rank * RD_MAX_PARTNERS + partner index]: the connection with each */
  int *npart;       /* [rank] */
  int *part;        /* [rank * RD_MAX_PARTNERS + i]: host_rd_partners' list */
  uint32_t npieces;
  stand_in_t si;
} rd_state_t;

static double rd_msgs(const sim_t *s) {
  int k = s->c.nranks, levels = 0;
  while ((2 << levels) <= k) levels++;
  double pieces = s->count ? (double)((s->count + stand_in_piece_elems(s) - 1) / stand_in_piece_elems(s)) : 0;
  return pieces * k * (levels + 2);
}

static void rd_teardown(sim_t *s) {
  rd_state_t *st = s->state;
  if (!st) return;
  free(st->item), free(st->piece), free(st->conn), free(st->npart), free(st->part);
  stand_in_free(&st->si);
  free(st);
  s->state = NULL;
}

static int rd_setup(sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  rd_state_t *st = calloc(1, sizeof(*st));
  s->state = st;
  if (!st || stand_in_make(&st->si, s) != 0) goto fail;
  st->item = malloc(k * sizeof(rd_item_t));
  st->piece = calloc(k, sizeof(uint32_t));
  st->conn = calloc(k * RD_MAX_PARTNERS, sizeof(sim_conn_t));
  st->npart = calloc(k, sizeof(int));
  st->part = calloc(k * RD_MAX_PARTNERS, sizeof(int));
  if (!st->item || !st->piece || !st->conn || !st->npart || !st->part) goto fail;
  st->npieces = (uint32_t)((s->count + stand_in_piece_elems(s) - 1) / stand_in_piece_elems(s));
  for (size_t r = 0; r < k; r++) {
    st->si.a.rank = (int)r;
    host_rd_item(&st->item[r], &st->si.a, &st->si.env, 0);
    st->npart[r] = host_rd_partners((int)k, (int)r, &st->part[r * RD_MAX_PARTNERS]);
  }
  s->expect = k;
  return 0;
fail:
  fprintf(stderr, "xccl-sim: rd: out of memory for %zu ranks\n", k);
  if (st) rd_teardown(s);
  return -1;
}

static int rd_partner_index(const rd_state_t *st, int r, int peer) {
  const int *p = &st->part[(size_t)r * RD_MAX_PARTNERS];
  for (int i = 0; i < st->npart[r]; i++)
    if (p[i] == peer) return i;
  return 0;
}

static void rd_advance(sim_t *s, rd_state_t *st, int r) {
  rd_item_t *it = &st->item[r];
  if (st->piece[r] == st->npieces) return;
  size_t pe = stand_in_piece_elems(s);
  while (st->piece[r] < st->npieces) {
    size_t off = (size_t)st->piece[r] * pe, n = s->count - off < pe ? s->count - off : pe;
    while (it->base.action < it->nact) {
      int kind = it->act[it->base.action].kind, peer = it->act[it->base.action].peer;
      sim_conn_t *cn = &st->conn[(size_t)r * RD_MAX_PARTNERS + (size_t)rd_partner_index(st, r, peer)];
      int is_recv = kind == RD_RECV_REDUCE || kind == RD_RECV_COPY;
      if ((is_recv || kind == RD_SEND) && !sim_conn_move(s, cn, r, peer, 0, is_recv, n * s->esize)) return;
      it->base.action++;
    }
    st->piece[r]++;
    it->base.action = 0;
  }
  sim_finish(s);
}

static void rd_start(sim_t *s) {
  rd_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) {
    st->item[r].base.action = 0;
    if (st->npieces == 0)
      sim_finish(s);
    else
      rd_advance(s, st, r);
  }
}

static void rd_deliver(sim_t *s, const sim_ev_t *e) {
  rd_state_t *st = s->state;
  sim_conn_arrive(&st->conn[(size_t)e->dst * RD_MAX_PARTNERS + (size_t)rd_partner_index(st, e->dst, e->src)], e);
  rd_advance(s, st, e->dst);
}

const sim_sched_t sim_rd = {
    .name = "rd",
    .msgs = rd_msgs,
    .setup = rd_setup,
    .start = rd_start,
    .deliver = rd_deliver,
    .teardown = rd_teardown,
};

/* ---- Rabenseifner ---- */

#define RAB_MAX_TAGS 40 /* the fold (0) and each level (s + 1) */

typedef struct {
  char *items;       /* k items of item_bytes */
  size_t item_bytes;
  sim_conn_t *conn;  /* [rank * RAB_MAX_TAGS + tag]: the connection with the tag's partner */
  unsigned char *finished;
  unsigned char *lo; /* [rank]: its streams before this one are complete */
  stand_in_t si;
} rab_state_t;

static rab_item_t *rab_at(rab_state_t *st, int r) { return (rab_item_t *)(st->items + (size_t)r * st->item_bytes); }

/* A rank sends about the buffer's pieces per half (the reduce-scatter's and
 * all-gather's buffer: k shares), plus a partial piece per level and the
 * fold's. */
static double rab_msgs(const sim_t *s) {
  int k = s->c.nranks, levels = 0, halves = s->coll == COLL_ALLREDUCE ? 2 : 1;
  while ((2 << levels) <= k) levels++;
  double elems = s->coll == COLL_ALLREDUCE ? (double)s->count : (double)s->count * k;
  double pieces = ceil(elems / (double)stand_in_piece_elems(s));
  return (double)k * (halves * (pieces + levels) + 2);
}

static void rab_teardown(sim_t *s) {
  rab_state_t *st = s->state;
  if (!st) return;
  free(st->items), free(st->conn), free(st->finished), free(st->lo);
  stand_in_free(&st->si);
  free(st);
  s->state = NULL;
}

static int rab_setup(sim_t *s) {
  size_t k = (size_t)s->c.nranks;
  rab_state_t *st = calloc(1, sizeof(*st));
  s->state = st;
  if (!st || stand_in_make(&st->si, s) != 0) goto fail;
  st->item_bytes = host_rab_item_bytes((int)k);
  st->items = malloc(k * st->item_bytes);
  st->conn = calloc(k * RAB_MAX_TAGS, sizeof(sim_conn_t));
  st->finished = calloc(k, 1);
  st->lo = calloc(k, 1);
  if (!st->items || !st->conn || !st->finished || !st->lo) goto fail;
  for (size_t r = 0; r < k; r++) {
    st->si.a.rank = (int)r;
    host_rab_item(rab_at(st, (int)r), &st->si.a, &st->si.env, 0);
  }
  s->expect = k;
  return 0;
fail:
  fprintf(stderr, "xccl-sim: rab: out of memory for %zu ranks\n", k);
  if (st) rab_teardown(s);
  return -1;
}

/* Moves rank r's streams as host_rab.c's rab_step would, until none can. */
static void rab_advance(sim_t *s, rab_state_t *st, int r) {
  if (st->finished[r]) return;
  rab_item_t *it = rab_at(st, r);
  int moved = 1, left = 0;
  while (moved) {
    moved = 0, left = 0;
    while (st->lo[r] < it->nst && it->st[st->lo[r]].done == it->st[st->lo[r]].total) st->lo[r]++;
    for (int i = st->lo[r]; i < it->nst; i++) {
      rab_stream_t *x = &it->st[i];
      if (x->done == x->total) continue;
      left = 1;
      size_t n = x->total - x->done < it->piece_elems ? x->total - x->done : it->piece_elems;
      if (!host_rab_stream_may(it, i, n)) continue;
      int tag = x->level + 1;
      sim_conn_t *cn = &st->conn[(size_t)r * RAB_MAX_TAGS + (size_t)tag];
      if (!sim_conn_move(s, cn, r, x->peer, tag, x->is_recv, n * s->esize)) continue;
      x->done += n;
      moved = 1;
    }
  }
  if (!left || it->base.finished) {
    st->finished[r] = 1;
    sim_finish(s);
  }
}

static void rab_start(sim_t *s) {
  rab_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) rab_advance(s, st, r);
}

static void rab_deliver(sim_t *s, const sim_ev_t *e) {
  rab_state_t *st = s->state;
  sim_conn_arrive(&st->conn[(size_t)e->dst * RAB_MAX_TAGS + (size_t)e->tag], e);
  rab_advance(s, st, e->dst);
}

const sim_sched_t sim_rab = {
    .name = "rab",
    .msgs = rab_msgs,
    .setup = rab_setup,
    .start = rab_start,
    .deliver = rab_deliver,
    .teardown = rab_teardown,
};
