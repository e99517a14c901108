/*
 * sim_hier.c — the hierarchical all-reduce (host_hier.h), replayed: the
 * layout is hier_layout_make's over the modelled ranks' host hashes
 * (sim_host_hash, the ones sim_site_make gives tuning_site_hosts), each rank's
 * streams of phases (1) and (3) are the ones host_hier_item builds (peers,
 * shards' lengths, and the `after` / `reduce_after` order between them), and
 * phase (2) runs, per owned shard in rising order, either ring_schedule.h's
 * iterator on the ring of that shard's owners (hier_owner on the next and
 * previous host), as host_hier.c's ring_start sets it up, or the shard's
 * tree (hier_tree_links, as host_hier.c's tree_start), a piece at a time by
 * host_tree.h's tree_down_may and tree_up_may (host_tree.c's own rule);
 * which of the two by algo_hier_inter_tree, as hier's build chooses, on the
 * site that xccl-sim's tuner prices (sim_site_make: the cluster's links;
 * XCCL_HIER_INTER).
 *
 * Per rank, as host_hier.c's hier_step: (1)'s streams until all are done;
 * then (3)'s receives whenever they can, (2)'s rings one after the other,
 * and once they are done (3)'s sends. A stream's piece may move when
 * hier_stream_may (host_hier.h: the kernel's own rule, that the stream
 * before it on the fifo is complete and the receive that reduces the same
 * shard before it is ahead) allows and its connection has a message in
 * (receives) or a free slot (sends). Every connection is one per partner
 * (COMM_P2P_ALGO, NIC of channel net_p2p_channel), a sim_conn_t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "host_hier.h"
#include "sim.h"
#include "tuning.h"
#include "sim_stand_in.h"

typedef struct {
  size_t total, done; /* elements */
  int32_t after, reduce_after; /* indices among the rank's streams, as host_hier_item made them */
  int16_t pidx;                /* the peer's index among the rank's partners */
  int16_t is_recv;
} hs_t;

typedef struct {
  int sfirst, n1, n3r, n3s; /* streams: (1) sends and receives, (3) receives, (3) sends */
  int pfirst, npart;
  int phase, cur, ring_on, nown, host, me, g;
  int next_p, prev_p; /* the current ring's neighbours, as partner indices */
  ring_iter_t it;
  int par_p, ch_p[2], nch; /* the current tree's parent (-1: the root) and children, as partner indices */
  uint32_t up, down, npieces; /* the current tree's pieces climbed, descended, in all */
} hrank_t;

typedef struct {
  void *layout_mem;
  const hier_layout_t *l;
  hrank_t *rank;
  hs_t *st;
  int *part;       /* [pfirst + i]: partner ranks */
  sim_conn_t *conn; /* [pfirst + i]: the connection with each */
  size_t piece;               /* elements per piece: a slot of XCCL_ALGO_CHUNK_SIZE */
  int tree;                   /* (2) as trees */
} hier_state_t;

/* 1 if (2) runs as trees: hier_build's choice (algo_hier.c), at the site
 * xccl-sim's tuner prices (sim_site_make). */
static int hier_tree(const sim_t *s) {
  return algo_hier_inter_tree(s->bytes, algo_slot(ALGO_HIER, s->ring_slot, s->site->peer_slot), s->site);
}

/*
 * The fold (s->symmetric), for (2) as rings: xccl-sim's cluster has
 * `gpus` ranks on every host, so hier_layout_make numbers hosts and local
 * ranks in rank order, shard j's owner on every host is its local rank j,
 * and every host runs the same streams of (1) and (3) and the same rings of
 * (2) at the same times: the rings are H positions that each send to the
 * next host, a rotation of the hosts maps the cluster onto itself. So only
 * host 0's ranks run; (1) and (3) stay inside it, exactly as in the full
 * replay, and in (2) what an owner sends to its next host is delivered to
 * itself as what its previous host sent it (and its credits for the
 * previous host to itself as its next host's), over its own NIC out and in
 * (sim_send_via), which every host's NIC carries alike in the full replay.
 * The NIC of a message between hosts is net_p2p_channel's, min(rank, peer)
 * % channels, the same for every host's pair where the channels divide the
 * GPUs per host; only then does it fold. Exact but for two things: a ring's
 * blocks (ring_schedule.h) may differ by one alignment unit between
 * positions (the host is the position), and host 0's stand for all, as in
 * sim_ring.c's fold; and events at the same time are taken in send order,
 * which the fold keeps per host but not across hosts. tests/tools/sim.sh
 * checks the fold against the full replay on 4 hosts x 8 (equal times). The tree does not fold (its positions differ, root and
 * leaves); it sends few messages between hosts (each piece once up and once
 * down each of H-1 edges per shard), and its phases (1) and (3) replay in
 * full.
 */
static int hier_can_fold(const sim_t *s) {
  return s->c.hosts >= 2 && s->c.nchannels > 0 && s->c.gpus % s->c.nchannels == 0 && !hier_tree(s);
}

/* The ranks replayed: host 0's when folded. */
static int hier_nrep(const sim_t *s) { return s->symmetric ? s->c.gpus : s->c.nranks; }

static int hier_make_layout(const sim_t *s, void **mem_p, const hier_layout_t **l_p) {
  int k = s->c.nranks;
  uint64_t *hash = malloc((size_t)k * sizeof(*hash));
  void *mem = malloc(hier_layout_bytes(k));
  if (!hash || !mem) return free(hash), free(mem), -1;
  for (int r = 0; r < k; r++) hash[r] = sim_host_hash(s->c.gpus, r);
  *l_p = hier_layout_make(k, hash, sizeof(*hash), mem);
  *mem_p = mem;
  free(hash);
  return 0;
}

/* host_hier.c's shard_off: G shards, the first count % G one longer. */
static size_t shard_off(const sim_t *s, int shards, int sh) {
  size_t q = s->count / (size_t)shards, rem = s->count % (size_t)shards;
  return (size_t)sh * q + ((size_t)sh < rem ? (size_t)sh : rem);
}

static double hier_msgs(const sim_t *s) {
  double H = s->c.hosts, G = s->c.gpus, k = s->c.nranks, slot = (double)s->peer_slot / (double)s->esize;
  double shard = (double)s->count / G, pieces = shard > slot ? shard / slot + 1 : 1;
  double loops = shard / (H * slot) + 1;
  /* the tree: every edge of each shard's tree carries each piece up and down */
  if (s->symmetric) k = G; /* host 0's ranks */
  double inter = hier_tree(s) ? G * 2 * (H - 1) * pieces : k * 2 * (H - 1) * loops;
  return k * 2 * (G - 1) * pieces + (H > 1 ? inter : 0);
}

static void hier_teardown(sim_t *s) {
  hier_state_t *st = s->state;
  if (!st) return;
  free(st->layout_mem), free(st->rank), free(st->st), free(st->part), free(st->conn);
  free(st);
  s->state = NULL;
}

static int pidx_of(const hier_state_t *st, int r, int peer) {
  const hrank_t *q = &st->rank[r];
  for (int i = 0; i < q->npart; i++)
    if (st->part[q->pfirst + i] == peer) return i;
  return -1;
}

static int hier_setup(sim_t *s) {
  int k = hier_nrep(s);
  hier_state_t *st = calloc(1, sizeof(*st));
  stand_in_t si;
  hier_item_t *item = NULL;
  size_t item_cap = 0;
  s->state = st;
  if (!st || hier_make_layout(s, &st->layout_mem, &st->l) != 0) goto oom;
  if (stand_in_make(&si, s) != 0) goto oom;
  st->tree = hier_tree(s);
  unsigned inter = st->tree ? HIER_INTER_TREE : HIER_INTER_RING;
  const hier_layout_t *l = st->l;
  st->rank = calloc((size_t)k, sizeof(hrank_t));
  if (!st->rank) goto oom_si;
  size_t nst = 0, npart = 0;
  for (int r = 0; r < k; r++) {
    size_t b = host_hier_item_bytes(l, r);
    item_cap = b > item_cap ? b : item_cap;
    nst += (b - sizeof(hier_item_t)) / sizeof(hier_stream_t);
    npart += (size_t)host_hier_partners(l, r, inter, NULL, 0);
  }
  item = malloc(item_cap);
  st->st = malloc((nst ? nst : 1) * sizeof(hs_t));
  st->part = malloc((npart ? npart : 1) * sizeof(int));
  st->conn = calloc(npart ? npart : 1, sizeof(sim_conn_t));
  if (!item || !st->st || !st->part || !st->conn) goto oom_si;
  size_t sat = 0, pat = 0;
  for (int r = 0; r < k; r++) {
    hrank_t *q = &st->rank[r];
    q->pfirst = (int)pat;
    q->npart = host_hier_partners(l, r, inter, &st->part[pat], (int)(npart - pat));
    pat += (size_t)q->npart;
    si.a.rank = r;
    host_hier_item(item, &si.a, l, &si.env, 0, st->tree);
    q->sfirst = (int)sat;
    q->n1 = item->n1s + item->n1r, q->n3s = item->n3s, q->n3r = item->n3r;
    q->nown = item->nown, q->host = item->host, q->me = item->me, q->g = item->g;
    /* the kernel's order: (1) sends, (1) receives, (3) sends, (3) receives */
    int n = item->n1s + item->n1r + item->n3s + item->n3r;
    for (int i = 0; i < n; i++) {
      const hier_stream_t *x = &item->st[i];
      st->st[sat + (size_t)i] = (hs_t){.total = x->total,
                                       .after = x->after,
                                       .reduce_after = x->reduce_after,
                                       .pidx = (int16_t)pidx_of(st, r, x->peer),
                                       .is_recv = (int16_t)x->is_recv};
    }
    sat += (size_t)n;
    st->piece = item->piece_elems;
  }
  free(item);
  stand_in_free(&si);
  s->expect = (uint64_t)k;
  return 0;
oom_si:
  stand_in_free(&si);
oom:
  free(item);
  fprintf(stderr, "xccl-sim: hier: out of memory for %d ranks\n", k);
  hier_teardown(s);
  return -1;
}

/* One piece of stream x of rank r, if it may move: 1 if it did. */
static int stream_step(sim_t *s, hier_state_t *st, int r, hs_t *all, hs_t *x) {
  if (x->done == x->total) return 0;
  size_t n = x->total - x->done < st->piece ? x->total - x->done : st->piece;
  const hs_t *prior = x->reduce_after >= 0 ? &all[x->reduce_after] : NULL;
  int after_complete = x->after < 0 || all[x->after].done == all[x->after].total;
  if (!hier_stream_may(after_complete, prior != NULL, prior ? prior->done : 0, x->done, n)) return 0;
  size_t at = (size_t)st->rank[r].pfirst + (size_t)x->pidx;
  if (!sim_conn_move(s, &st->conn[at], r, st->part[at], 0, x->is_recv, n * s->esize)) return 0;
  x->done += n;
  return 1;
}

static int streams_step(sim_t *s, hier_state_t *st, int r, int from, int n, int *left_p) {
  hs_t *all = &st->st[st->rank[r].sfirst];
  int moved = 0;
  for (int i = from; i < from + n; i++) {
    moved |= stream_step(s, st, r, all, &all[i]);
    *left_p |= all[i].done != all[i].total;
  }
  return moved;
}

/* Piece p of a shard of len elements: its bytes. */
static size_t piece_bytes(const sim_t *s, const hier_state_t *st, size_t len, uint32_t p) {
  size_t left = len - (size_t)p * st->piece;
  return (left < st->piece ? left : st->piece) * s->esize;
}

/* (2) as a tree, shard sh of len elements: host_tree.c's tree_step, the
 * descent of the next piece then the climb of the next, while either may
 * go. 1 if a message moved; q->it.done once both are through. */
static int tree_run(sim_t *s, hier_state_t *st, int r, int sh, size_t len) {
  hrank_t *q = &st->rank[r];
  sim_conn_t *c = &st->conn[q->pfirst];
  const int *part = &st->part[q->pfirst];
  if (!q->ring_on) {
    tree_links_t t;
    hier_tree_links(st->l, q->host, sh, &t);
    q->par_p = t.parent >= 0 ? pidx_of(st, r, t.parent) : -1;
    q->nch = t.nchild;
    for (int i = 0; i < t.nchild; i++) q->ch_p[i] = pidx_of(st, r, t.child[i]);
    q->up = q->down = 0;
    q->npieces = (uint32_t)((len + st->piece - 1) / st->piece);
    q->ring_on = 1;
  }
  int moved = 0;
  for (int m = 1; m;) {
    m = 0;
    if (q->down < q->npieces) {
      int room = 1;
      for (int i = 0; i < q->nch; i++) room &= sim_conn_ready(s, &c[q->ch_p[i]], 0);
      if (tree_down_may(1, q->up, q->down, q->par_p < 0 || sim_conn_ready(s, &c[q->par_p], 1), room)) {
        size_t b = piece_bytes(s, st, len, q->down);
        for (int i = 0; i < q->nch; i++) sim_conn_take(s, &c[q->ch_p[i]], r, part[q->ch_p[i]], 0, 0, b, -1);
        if (q->par_p >= 0) sim_conn_take(s, &c[q->par_p], r, part[q->par_p], 0, 1, 0, -1);
        q->down++, m = 1;
      }
    }
    if (q->up < q->npieces) {
      int in = 1;
      for (int i = 0; i < q->nch; i++) in &= sim_conn_ready(s, &c[q->ch_p[i]], 1);
      if (tree_up_may(in, q->par_p < 0 || sim_conn_ready(s, &c[q->par_p], 0))) {
        for (int i = 0; i < q->nch; i++) sim_conn_take(s, &c[q->ch_p[i]], r, part[q->ch_p[i]], 0, 1, 0, -1);
        if (q->par_p >= 0)
          sim_conn_take(s, &c[q->par_p], r, part[q->par_p], 0, 0, piece_bytes(s, st, len, q->up), -1);
        q->up++, m = 1;
      }
    }
    moved |= m;
  }
  q->it.done = q->up == q->npieces && q->down == q->npieces;
  return moved;
}

/* (2): the rings (or trees) of r's owned shards, one after the other; phase
 * 2 once all are done. 1 if a message moved. */
static int rings_step(sim_t *s, hier_state_t *st, int r) {
  hrank_t *q = &st->rank[r];
  const hier_layout_t *l = st->l;
  int H = l->nhosts, moved = 0;
  while (H > 1 && q->cur < q->nown) {
    int sh = q->me + q->cur * q->g;
    if (st->tree) {
      moved |= tree_run(s, st, r, sh, shard_off(s, l->shards, sh + 1) - shard_off(s, l->shards, sh));
      if (!q->it.done) return moved;
      q->cur++, q->ring_on = 0;
      continue;
    }
    if (!q->ring_on) {
      size_t len = shard_off(s, l->shards, sh + 1) - shard_off(s, l->shards, sh);
      ring_iter_init(&q->it, COLL_ALLREDUCE, H, q->host, 0, len, s->esize, s->peer_slot, 1, 0);
      q->next_p = pidx_of(st, r, hier_owner(l, (q->host + 1) % H, sh));
      q->prev_p = pidx_of(st, r, hier_owner(l, (q->host + H - 1) % H, sh));
      q->ring_on = 1;
    }
    size_t nx = (size_t)q->pfirst + (size_t)q->next_p, pv = (size_t)q->pfirst + (size_t)q->prev_p;
    sim_conn_t *next = &st->conn[nx], *prev = &st->conn[pv];
    while (!q->it.done) {
      size_t in, out, n;
      int flags = ring_iter_action(&q->it, NULL, &in, &out, &n);
      if ((flags & RING_RECV) && !sim_conn_ready(s, prev, 1)) return moved;
      if ((flags & RING_SEND) && !sim_conn_ready(s, next, 0)) return moved;
      if (s->symmetric) { /* the fold (above): both ends are r, told apart by the tag */
        if (flags & RING_RECV) prev->in--, sim_credit(s, r, st->part[pv], r, q->next_p + 1);
        if (flags & RING_SEND)
          next->sent++, sim_send_via(s, r, st->part[nx], r, r, q->prev_p + 1, n * s->esize, -1, 0);
      } else {
        if (flags & RING_RECV) sim_conn_take(s, prev, r, st->part[pv], 0, 1, 0, -1);
        if (flags & RING_SEND) sim_conn_take(s, next, r, st->part[nx], 0, 0, n * s->esize, -1);
      }
      ring_iter_next(&q->it);
      moved = 1;
    }
    q->cur++, q->ring_on = 0;
  }
  q->phase = 2;
  return 1;
}

static void hier_advance(sim_t *s, hier_state_t *st, int r) {
  hrank_t *q = &st->rank[r];
  for (int moved = 1; moved && q->phase < 3;) {
    int left = 0;
    moved = 0;
    if (q->phase == 0) {
      moved |= streams_step(s, st, r, 0, q->n1, &left);
      if (left) continue;
      q->phase = 1;
    }
    left = 0;
    moved |= streams_step(s, st, r, q->n1 + q->n3s, q->n3r, &left);
    if (q->phase == 1) moved |= rings_step(s, st, r);
    if (q->phase == 2) {
      moved |= streams_step(s, st, r, q->n1, q->n3s, &left);
      if (!left) q->phase = 3, sim_finish(s);
    }
  }
}

static void hier_start(sim_t *s) {
  hier_state_t *st = s->state;
  for (int r = 0; r < hier_nrep(s); r++) {
    if (s->count == 0) {
      st->rank[r].phase = 3, sim_finish(s);
      continue;
    }
    hier_advance(s, st, r);
  }
}

static void hier_deliver(sim_t *s, const sim_ev_t *e) {
  hier_state_t *st = s->state;
  /* tag: the partner's index + 1 where the fold names it (a message or
   * credit of r to itself), else 0: the sender is the partner */
  int pidx = e->tag > 0 ? e->tag - 1 : pidx_of(st, e->dst, e->src);
  sim_conn_arrive(&st->conn[(size_t)st->rank[e->dst].pfirst + (size_t)pidx], e);
  hier_advance(s, st, e->dst);
}

const sim_sched_t sim_hier = {
    .name = "hier",
    .can_fold = hier_can_fold,
    .msgs = hier_msgs,
    .setup = hier_setup,
    .start = hier_start,
    .deliver = hier_deliver,
    .teardown = hier_teardown,
};
