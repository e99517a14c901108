/*
 * sim_tree.c — the double binary tree, replayed: parents and children from
 * host_tree_links (host_tree.h), all-reduce's trees or broadcast's and
 * reduce's rooted at s->root; the halves as algo_tree.c splits them (tree 0
 * the larger), each half's pieces and cursors those of the item
 * host_tree_item builds for it over a stand-in fifo of
 * XCCL_ALGO_CHUNK_SIZE: all-reduce climbs and descends, reduce only climbs,
 * broadcast only descends. Per piece, as host_tree.c: a rank climbs once
 * every child's piece is in (the root then has the result), and descends
 * once its parent's piece is in (the root: once it climbed, or at once
 * where there is no climb); the cursors move independently. Event by event.
 *
 * The window: each tree has its own connections (algo_tree.c: COMM_P2P_ALGO
 * and ALGO2). A rank climbs only with a free slot towards its parent and
 * then frees its children's; it descends only with a free slot towards
 * every child and then frees its parent's (host_tree.c's order).
 */
#include <stdio.h>
#include <stdlib.h>

#include "host_tree.h"
#include "sim.h"
#include "sim_stand_in.h"

typedef struct {
  tree_links_t l;
  uint32_t up, down;       /* pieces sent up, and down */
  uint32_t in_up[2], in_down; /* pieces in from each child, and from the parent */
  uint32_t up_freed, down_freed[2]; /* of those sent, consumed by the parent, by each child */
} tree_node_t;

/* What host_tree_item makes of each half: the same on every rank. */
typedef struct {
  size_t piece;    /* elements per piece */
  size_t count[2]; /* elements of each tree */
  uint32_t npieces[2];
  int do_up, do_down; /* the climb runs, the descent runs */
} tree_geom_t;

typedef struct {
  tree_geom_t g;
  tree_node_t *node;      /* [rank * 2 + tree] */
  unsigned char *left;    /* trees a rank has still to finish */
} tree_state_t;

enum { TAG_UP = 0, TAG_DOWN = 1 }; /* tag = tree * 2 + direction */

static int tree_can_fold(const sim_t *s) {
  (void)s;
  return 0;
}

/* The trees' root: broadcast's and reduce's, -1 for all-reduce (algo_tree.c). */
static int tree_root(const sim_t *s) { return s->coll == COLL_ALLREDUCE ? -1 : s->root; }

/* s's halves as algo_tree.c cuts them, each built into rank 0's item. */
static void tree_geom(const sim_t *s, tree_geom_t *g) {
  size_t half = s->count - s->count / 2; /* algo_tree.c: tree 0 the larger half */
  slot_fifo_t fifo = {.slot_size = s->peer_slot};
  kern_env_t env = {0};
  for (int t = 0; t < 2; t++) {
    tree_args_t a = {.coll = s->coll,
                     .count = t ? s->count - half : half,
                     .type = stand_in_type(s->esize),
                     .op = xcclSum,
                     .nranks = s->c.nranks,
                     .root = tree_root(s),
                     .up_send = &fifo,
                     .up_recv = {&fifo, &fifo},
                     .down_recv = &fifo,
                     .down_send = {&fifo, &fifo}};
    host_tree_links(a.nranks, 0, t, a.root, &a.links);
    tree_item_t it;
    host_tree_item(&it, &a, &env, 0);
    g->count[t] = a.count;
    g->npieces[t] = (uint32_t)it.npieces;
    g->piece = it.piece_elems;
    g->do_up = it.do_up, g->do_down = it.do_down;
  }
}

static double tree_msgs(const sim_t *s) {
  tree_geom_t g;
  tree_geom(s, &g);
  /* every edge: once per direction that runs */
  return (double)(g.do_up + g.do_down) * (s->c.nranks - 1) * ((double)g.npieces[0] + g.npieces[1]);
}

static int tree_setup(sim_t *s) {
  int k = s->c.nranks;
  tree_state_t *st = calloc(1, sizeof(*st));
  if (!st) goto fail;
  tree_geom(s, &st->g);
  st->node = calloc((size_t)k * 2, sizeof(tree_node_t));
  st->left = calloc((size_t)k, 1);
  if (!st->node || !st->left) goto fail;
  for (int r = 0; r < k; r++)
    for (int t = 0; t < 2; t++) host_tree_links(k, r, t, tree_root(s), &st->node[(size_t)r * 2 + t].l);
  s->state = st;
  s->expect = (uint64_t)k;
  return 0;
fail:
  if (st) free(st->node), free(st->left);
  free(st);
  fprintf(stderr, "xccl-sim: tree: out of memory for %d ranks\n", k);
  return -1;
}

static size_t piece_bytes(const sim_t *s, const tree_state_t *st, int t, uint32_t p) {
  size_t off = (size_t)p * st->g.piece, left = st->g.count[t] - off;
  return (left < st->g.piece ? left : st->g.piece) * s->esize;
}

/* Moves rank r's tree t as far as its pieces allow. */
static void tree_advance(sim_t *s, tree_state_t *st, int r, int t) {
  tree_node_t *n = &st->node[(size_t)r * 2 + t];
  const tree_geom_t *g = &st->g;
  uint32_t up_end = g->do_up ? g->npieces[t] : 0, down_end = g->do_down ? g->npieces[t] : 0;
  int moved = 1;
  if (n->up == up_end && n->down == down_end) return;
  while (moved) {
    moved = 0;
    if (n->up < up_end) {
      int ready = 1;
      for (int c = 0; c < n->l.nchild; c++) ready &= n->in_up[c] > n->up;
      if (n->l.parent >= 0) ready &= sim_room(s, n->up, n->up_freed);
      if (ready) {
        for (int c = 0; c < n->l.nchild; c++) sim_credit(s, r, n->l.child[c], n->l.child[c], t * 2 + TAG_UP);
        if (n->l.parent >= 0)
          sim_send(s, r, n->l.parent, n->l.parent, t * 2 + TAG_UP, piece_bytes(s, st, t, n->up), -1);
        n->up++, moved = 1;
      }
    }
    int room = 1;
    for (int c = 0; c < n->l.nchild; c++) room &= sim_room(s, n->down, n->down_freed[c]);
    if (room && n->down < down_end && (n->l.parent < 0 ? !g->do_up || n->down < n->up : n->in_down > n->down)) {
      if (n->l.parent >= 0) sim_credit(s, r, n->l.parent, n->l.parent, t * 2 + TAG_DOWN);
      for (int c = 0; c < n->l.nchild; c++)
        sim_send(s, r, n->l.child[c], n->l.child[c], t * 2 + TAG_DOWN, piece_bytes(s, st, t, n->down), -1);
      n->down++, moved = 1;
    }
  }
  if (n->up == up_end && n->down == down_end && --st->left[r] == 0) sim_finish(s);
}

static void tree_start(sim_t *s) {
  tree_state_t *st = s->state;
  for (int r = 0; r < s->c.nranks; r++) {
    st->left[r] = 2;
    for (int t = 0; t < 2; t++) {
      if (st->g.npieces[t] == 0) { /* an empty half: done at once */
        if (--st->left[r] == 0) sim_finish(s);
        continue;
      }
      tree_advance(s, st, r, t);
    }
  }
}

static void tree_deliver(sim_t *s, const sim_ev_t *e) {
  tree_state_t *st = s->state;
  int t = e->tag / 2;
  tree_node_t *n = &st->node[(size_t)e->dst * 2 + t];
  if (e->credit && e->tag % 2 == TAG_UP)
    n->up_freed++;
  else if (e->credit)
    n->down_freed[n->l.child[0] == e->src ? 0 : 1]++;
  else if (e->tag % 2 == TAG_DOWN)
    n->in_down++;
  else
    n->in_up[n->l.child[0] == e->src ? 0 : 1]++;
  tree_advance(s, st, e->dst, t);
}

static void tree_teardown(sim_t *s) {
  tree_state_t *st = s->state;
  free(st->node);
  free(st->left);
  free(st);
  s->state = NULL;
}

const sim_sched_t sim_tree = {
    .name = "tree",
    .can_fold = tree_can_fold,
    .msgs = tree_msgs,
    .setup = tree_setup,
    .start = tree_start,
    .deliver = tree_deliver,
    .teardown = tree_teardown,
};
