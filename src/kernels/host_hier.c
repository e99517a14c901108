/* host_hier.c — the hierarchical all-reduce as a host work item (host_hier.h). */
#include "host_hier.h"

#include <stdint.h>
#include <string.h>

#include "kern_recv.h"
#include "reduce.h"

static hier_item_t *to_hier(kern_item_t *it) { return (hier_item_t *)((char *)it - offsetof(hier_item_t, base)); }

/* ---- The layout ---- */

static size_t hash_slots(int nranks) {
  size_t n = 16;
  while (n < 2 * (size_t)nranks) n *= 2;
  return n;
}

size_t hier_layout_bytes(int nranks) {
  size_t ints = 4 * (size_t)nranks + 1 + hash_slots(nranks);
  return (sizeof(hier_layout_t) + ints * sizeof(int) + 7) & ~(size_t)7;
}

static uint64_t hash_at(const void *host_hash, size_t stride, int r) {
  uint64_t v;
  memcpy(&v, (const char *)host_hash + (size_t)r * stride, sizeof(v));
  return v;
}

hier_layout_t *hier_layout_make(int nranks, const void *host_hash, size_t stride, void *mem) {
  hier_layout_t *l = mem;
  int *host_of = (int *)(l + 1), *local_of = host_of + nranks, *first = local_of + nranks, *ranks = first + nranks + 1;
  int *table = ranks + nranks; /* open addressing: the lowest rank of each host seen, -1 empty */
  size_t nslots = hash_slots(nranks);
  memset(table, 0xff, nslots * sizeof(int));
  int nhosts = 0;
  memset(first, 0, ((size_t)nranks + 1) * sizeof(int));
  for (int r = 0; r < nranks; r++) {
    uint64_t h = hash_at(host_hash, stride, r);
    size_t i = (size_t)(h ^ (h >> 29)) * 0x9E3779B97F4A7C15ull >> 7 & (nslots - 1);
    while (table[i] >= 0 && hash_at(host_hash, stride, table[i]) != h) i = (i + 1) & (nslots - 1);
    if (table[i] < 0) table[i] = r, host_of[r] = nhosts++;
    else host_of[r] = host_of[table[i]];
    local_of[r] = first[host_of[r] + 1]++; /* counts, for now */
  }
  for (int h = 0; h < nhosts; h++) first[h + 1] += first[h];
  int shards = 0;
  for (int r = 0; r < nranks; r++) {
    int h = host_of[r], g = first[h + 1] - first[h];
    ranks[first[h] + local_of[r]] = r;
    if (g > shards) shards = g;
  }
  *l = (hier_layout_t){.nranks = nranks,
                       .nhosts = nhosts,
                       .shards = shards,
                       .host_of = host_of,
                       .local_of = local_of,
                       .host_first = first,
                       .host_ranks = ranks};
  return l;
}

/* The ring of shard s: the owners on the hosts after and before mine. */
static int ring_next(const hier_layout_t *l, int host, int s) { return hier_owner(l, (host + 1) % l->nhosts, s); }
static int ring_prev(const hier_layout_t *l, int host, int s) {
  return hier_owner(l, (host + l->nhosts - 1) % l->nhosts, s);
}

void hier_tree_links(const hier_layout_t *l, int h, int s, tree_links_t *out) {
  int H = l->nhosts, rot = s % H;
  host_tree_links(H, (h - rot + H) % H, 0, -1, out);
  /* positions back to hosts, then to the hosts' owners of s */
  if (out->parent >= 0) out->parent = hier_owner(l, (out->parent + rot) % H, s);
  for (int c = 0; c < out->nchild; c++) out->child[c] = hier_owner(l, (out->child[c] + rot) % H, s);
}

/* The neighbours of host h's owner of shard s between hosts, in (2)'s
 * shapes of inter: ring next and previous, tree parent and children, into
 * p (5 at most, repeats kept); how many. */
static int inter_neighbours(const hier_layout_t *l, int h, int s, unsigned inter, int *p) {
  int n = 0;
  if (inter & HIER_INTER_RING) p[n++] = ring_next(l, h, s), p[n++] = ring_prev(l, h, s);
  if (inter & HIER_INTER_TREE) {
    tree_links_t t;
    hier_tree_links(l, h, s, &t);
    if (t.parent >= 0) p[n++] = t.parent;
    for (int c = 0; c < t.nchild; c++) p[n++] = t.child[c];
  }
  return n;
}

int host_hier_partners(const hier_layout_t *l, int rank, unsigned inter, int *peers, int max) {
  int h = l->host_of[rank], g = hier_host_size(l, h), me = l->local_of[rank], n = 0;
#define ADD(p) (n < max ? (void)(peers[n] = (p)) : (void)0, n++)
  for (int j = 0; j < g; j++)
    if (j != me) ADD(l->host_ranks[l->host_first[h] + j]);
  if (l->nhosts < 2) return n;
  /* The neighbours of my shards between hosts, each once (they live on
   * other hosts, so never among the ranks above): a neighbour counts where
   * it first appears, over my shards in rising order. */
  for (int s = me; s < l->shards; s += g) {
    int p[5], np = inter_neighbours(l, h, s, inter, p);
    for (int i = 0; i < np; i++) {
      int seen = 0;
      for (int j = 0; j < i && !seen; j++) seen = p[j] == p[i];
      for (int t = me; t < s && !seen; t += g) {
        int q[5], nq = inter_neighbours(l, h, t, inter, q);
        for (int j = 0; j < nq && !seen; j++) seen = q[j] == p[i];
      }
      if (!seen) ADD(p[i]);
    }
  }
#undef ADD
  return n;
}

/* ---- Shards and streams ---- */

static size_t shard_off(const hier_item_t *r, int s) {
  size_t q = r->args->count / (size_t)r->layout->shards, rem = r->args->count % (size_t)r->layout->shards;
  return (size_t)s * q + ((size_t)s < rem ? (size_t)s : rem);
}

static size_t shard_len(const hier_item_t *r, int s) { return shard_off(r, s + 1) - shard_off(r, s); }

/* The local index of the j-th other rank of my host (j < g - 1). */
static int other(const hier_item_t *r, int j) { return j < r->me ? j : j + 1; }
static int local_rank(const hier_item_t *r, int j) {
  return r->layout->host_ranks[r->layout->host_first[r->host] + j];
}

static hier_stream_t *p1_send(hier_item_t *r) { return r->st; }
static hier_stream_t *p1_recv(hier_item_t *r) { return r->st + r->n1s; }
static hier_stream_t *p3_send(hier_item_t *r) { return p1_recv(r) + r->n1r; }
static hier_stream_t *p3_recv(hier_item_t *r) { return p3_send(r) + r->n3s; }

static hier_stream_t *stream_add(hier_item_t *r, int is_recv, int peer, int shard, int after, int reduce_after) {
  const partner_args_t *a = r->args;
  hier_stream_t *st = &r->st[r->n1s + r->n1r + r->n3s + r->n3r];
  *st = (hier_stream_t){.f = is_recv ? a->recv_fifo[peer] : a->send_fifo[peer],
                        .step = is_recv ? a->recv_step[peer] : a->send_step[peer],
                        .peer = peer,
                        .is_recv = is_recv,
                        .after = after,
                        .reduce_after = reduce_after,
                        .off = shard_off(r, shard),
                        .total = shard_len(r, shard)};
  return st;
}

static int complete(const hier_stream_t *st) { return st->done == st->total; }

/* 1 if the next n elements of st may move. */
static int stream_may(const hier_item_t *r, const hier_stream_t *st, size_t n) {
  const hier_stream_t *prior = st->reduce_after >= 0 ? &r->st[st->reduce_after] : NULL;
  int after_complete = st->after < 0 || complete(&r->st[st->after]);
  return hier_stream_may(after_complete, prior != NULL, prior ? prior->done : 0, st->done, n);
}

/* Moves the next n elements of st between the buffers and slot. kind: 1, a
 * receive of (1) (reduce), else a copy. */
static void stream_move(hier_item_t *r, hier_stream_t *st, char *slot, size_t n, int reduce) {
  const partner_args_t *a = r->args;
  size_t es = xcclTypeSize(a->type), at = (st->off + st->done) * es;
  char *acc = (char *)a->recvbuff + at;
  if (!st->is_recv) {
    /* (1) sends my input; (3) my shard's result */
    memcpy(slot, reduce ? (const char *)a->sendbuff + at : acc, n * es);
  } else if (reduce) {
    const char *mine = st->reduce_after < 0 ? (const char *)a->sendbuff + at : acc;
    kern_reduce(acc, mine, slot, n, a->type, a->op == xcclAvg ? xcclSum : a->op);
  } else {
    memcpy(acc, slot, n * es);
  }
  st->done += n;
}

/* The next piece of st, if it may move and its fifo is ready. 1 if it
 * moved, 0 if not, -1 on a bad message. */
static int stream_step(hier_item_t *r, hier_stream_t *st, int reduce, kern_failure_t *fail) {
  if (complete(st)) return 0;
  size_t n = st->total - st->done < r->piece_elems ? st->total - st->done : r->piece_elems;
  size_t bytes = n * xcclTypeSize(r->args->type);
  if (!stream_may(r, st, n)) return 0;
  int gate = kern_fifo_gate(st->f, *st->step, st->is_recv, bytes, st->peer, fail);
  if (gate <= 0) return gate;
  stream_move(r, st, slot_fifo_slot(st->f, *st->step), n, reduce);
  if (st->is_recv)
    slot_fifo_release(st->f, (*st->step)++);
  else
    slot_fifo_send(st->f, (*st->step)++, bytes, r->base.env->fault);
  return 1;
}

/* Steps streams [from, from + n); *left_p |= one is not complete. 1 if one
 * moved, 0 if not, -1 on failure. */
static int streams_step(hier_item_t *r, hier_stream_t *from, int n, int reduce, int *left_p, kern_failure_t *fail) {
  int moved = 0;
  for (int i = 0; i < n; i++) {
    hier_stream_t *st = &from[i];
    int m = stream_step(r, st, reduce, fail);
    if (m < 0) {
      r->base.peer = st->peer, r->base.action = r->phase;
      return -1;
    }
    moved |= m;
    *left_p |= !complete(st);
  }
  return moved;
}

/* ---- (2): one ring per owned shard ---- */

static int own_shard(const hier_item_t *r, int c) { return r->me + c * r->g; }

/* Divides owned shard c by k for xcclAvg: its sum is final. */
static void shard_final(hier_item_t *r, int c) {
  const partner_args_t *a = r->args;
  if (a->op != xcclAvg) return;
  int s = own_shard(r, c);
  char *p = (char *)a->recvbuff + shard_off(r, s) * xcclTypeSize(a->type);
  kern_divide(p, p, shard_len(r, s), a->type, a->nranks);
}

/* Sets up the ring of owned shard c (H > 1). */
static void ring_start(hier_item_t *r, int c) {
  const partner_args_t *a = r->args;
  const hier_layout_t *l = r->layout;
  int s = own_shard(r, c), next = ring_next(l, r->host, s), prev = ring_prev(l, r->host, s);
  size_t at = shard_off(r, s) * xcclTypeSize(a->type);
  /* With no one else on my host, (1) left my input where it was. */
  const char *in = (r->g > 1 ? (const char *)a->recvbuff : (const char *)a->sendbuff) + at;
  r->chan = (ring_channel_t){.send = a->send_fifo[next],
                             .recv = a->recv_fifo[prev],
                             .send_step = a->send_step[next],
                             .recv_step = a->recv_step[prev],
                             .position = r->host};
  r->ring = (ring_args_t){.coll = COLL_ALLREDUCE,
                          .sendbuff = in,
                          .recvbuff = (char *)a->recvbuff + at,
                          .count = shard_len(r, s),
                          .type = a->type,
                          .op = a->op == xcclAvg ? xcclSum : a->op,
                          .nranks = l->nhosts,
                          .nchannels = 1,
                          .channels = &r->chan};
  host_ring_items(&r->ring, r->base.env, r->base.lane, &r->ring_item);
  r->ring_on = 1;
}

/* Sets up the tree of owned shard c (H > 1): host_tree.h's all-reduce item
 * over the shard's owners, the connections with each its parent's and
 * children's. */
static void tree_start(hier_item_t *r, int c) {
  const partner_args_t *a = r->args;
  const hier_layout_t *l = r->layout;
  int s = own_shard(r, c);
  tree_args_t *t = &r->tree_args;
  *t = (tree_args_t){.coll = COLL_ALLREDUCE,
                     /* with no one else on my host, (1) left my input where it was */
                     .sendbuff = r->g > 1 ? a->recvbuff : a->sendbuff,
                     .recvbuff = a->recvbuff,
                     .off = shard_off(r, s),
                     .count = shard_len(r, s),
                     .type = a->type,
                     .op = a->op == xcclAvg ? xcclSum : a->op,
                     .nranks = l->nhosts,
                     .rank = r->host,
                     .root = -1};
  hier_tree_links(l, r->host, s, &t->links);
  int p = t->links.parent;
  if (p >= 0) {
    t->up_send = a->send_fifo[p], t->up_send_step = a->send_step[p];
    t->down_recv = a->recv_fifo[p], t->down_recv_step = a->recv_step[p];
  }
  for (int i = 0; i < t->links.nchild; i++) {
    int ch = t->links.child[i];
    t->up_recv[i] = a->recv_fifo[ch], t->up_recv_step[i] = a->recv_step[ch];
    t->down_send[i] = a->send_fifo[ch], t->down_send_step[i] = a->send_step[ch];
  }
  host_tree_item(&r->tree_item, t, r->base.env, r->base.lane);
  r->ring_on = 1;
}

/* The work item of (2) for the current shard. */
static kern_item_t *inter_item(hier_item_t *r) { return r->tree ? &r->tree_item.base : &r->ring_item.base; }

/* Runs the rings (or trees) of the owned shards one after the other. 1 if
 * one moved, 0 if not, -1 on failure; r->phase moves on when all are done. */
static int rings_step(hier_item_t *r, kern_failure_t *fail) {
  int moved = 0;
  while (r->cur < r->nown) {
    if (r->layout->nhosts < 2) { /* one host: (1) made the result */
      shard_final(r, r->cur++);
      continue;
    }
    if (!r->ring_on) (r->tree ? tree_start : ring_start)(r, r->cur);
    kern_item_t *ri = inter_item(r);
    while (!ri->finished) {
      int m = ri->ops->step(ri, fail);
      if (m < 0) {
        /* the tree's failure names its parent or child; the ring's, as before, the previous owner */
        r->base.peer = r->tree ? fail->peer : ring_prev(r->layout, r->host, own_shard(r, r->cur));
        r->base.action = 1, r->base.loop = ri->loop;
        return -1;
      }
      if (m == 0) return moved;
      moved = 1;
    }
    shard_final(r, r->cur++);
    r->ring_on = 0;
  }
  r->phase = 2;
  return 1;
}

/* 1 if every send of (2) to the neighbours of owned shard c was taken by
 * the transport (the ring sends to its next, the tree to its parent and
 * children); else 0, with the fifo and the peer not taken. */
static int inter_taken(hier_item_t *r, int c, slot_fifo_t **f_p, int *peer_p) {
  const partner_args_t *a = r->args;
  int p[5], np = inter_neighbours(r->layout, r->host, own_shard(r, c), r->tree ? HIER_INTER_TREE : HIER_INTER_RING, p);
  if (!r->tree) np = 1; /* the ring's next; its previous only sends to me */
  for (int i = 0; i < np; i++)
    if (!slot_fifo_taken(a->send_fifo[p[i]], *a->send_step[p[i]])) {
      *f_p = a->send_fifo[p[i]], *peer_p = p[i];
      return 0;
    }
  return 1;
}

/* ---- The engine's operations ---- */

static int hier_step(kern_item_t *it, kern_failure_t *fail) {
  hier_item_t *r = to_hier(it);
  const partner_args_t *a = r->args;
  if (a->nranks == 1) { /* the input is the result */
    if (a->sendbuff != a->recvbuff) memcpy(a->recvbuff, a->sendbuff, a->count * xcclTypeSize(a->type));
    it->finished = 1;
    return 1;
  }
  int moved = 0, left = 0, m;
  if (r->phase == 0) {
    if ((m = streams_step(r, p1_send(r), r->n1s + r->n1r, 1, &left, fail)) < 0) return -1;
    moved |= m;
    if (left) return moved;
    r->phase = 1;
  }
  left = 0;
  if ((m = streams_step(r, p3_recv(r), r->n3r, 0, &left, fail)) < 0) return -1;
  moved |= m;
  if (r->phase == 1) {
    if ((m = rings_step(r, fail)) < 0) return -1;
    moved |= m;
  }
  if (r->phase == 2) {
    if ((m = streams_step(r, p3_send(r), r->n3s, 0, &left, fail)) < 0) return -1;
    moved |= m;
    if (!left) r->phase = 3, it->finished = 1;
  }
  it->action = r->phase;
  return moved;
}

/* The first stream of a running phase that waits on its fifo. */
static hier_stream_t *blocked_in(hier_item_t *r, hier_stream_t *from, int n) {
  for (int i = 0; i < n; i++) {
    hier_stream_t *st = &from[i];
    if (complete(st)) continue;
    size_t pn = st->total - st->done < r->piece_elems ? st->total - st->done : r->piece_elems;
    if (stream_may(r, st, pn) &&
        (st->is_recv ? !slot_fifo_ready(st->f, *st->step) : !slot_fifo_room(st->f, *st->step)))
      return st;
  }
  return NULL;
}

static slot_fifo_t *hier_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  hier_item_t *r = to_hier(it);
  hier_stream_t *st = NULL;
  if (it->finished) { /* draining: a send the transport has not taken */
    for (int i = 0; i < r->n1s + r->n1r + r->n3s + r->n3r && !st; i++)
      if (!r->st[i].is_recv && !slot_fifo_taken(r->st[i].f, *r->st[i].step)) st = &r->st[i];
    slot_fifo_t *f = NULL;
    int peer = -1;
    for (int c = 0; !st && r->layout->nhosts > 1 && c < r->nown; c++)
      if (!inter_taken(r, c, &f, &peer)) {
        *is_recv_p = 0, *step_p = atomic_load(&f->head), it->peer = peer;
        return f;
      }
    if (!st) return NULL;
    *is_recv_p = 0, *step_p = atomic_load(&st->f->head);
    it->peer = st->peer;
    return st->f;
  }
  if (r->phase == 0) st = blocked_in(r, p1_send(r), r->n1s + r->n1r);
  if (!st && r->phase == 1 && r->ring_on) {
    kern_item_t *ri = inter_item(r);
    slot_fifo_t *f = ri->ops->waiting(ri, step_p, is_recv_p);
    it->peer = r->tree                  ? ri->peer
               : f == r->chan.send ? ring_next(r->layout, r->host, own_shard(r, r->cur))
                                   : ring_prev(r->layout, r->host, own_shard(r, r->cur));
    return f;
  }
  if (!st && r->phase >= 1) st = blocked_in(r, p3_recv(r), r->n3r);
  if (!st && r->phase == 2) st = blocked_in(r, p3_send(r), r->n3s);
  if (!st) return NULL;
  it->peer = st->peer;
  *is_recv_p = st->is_recv;
  *step_p = *st->step;
  return st->f;
}

static int hier_drained(kern_item_t *it) {
  hier_item_t *r = to_hier(it);
  for (int i = 0; i < r->n1s + r->n1r + r->n3s + r->n3r; i++)
    if (!r->st[i].is_recv && !slot_fifo_taken(r->st[i].f, *r->st[i].step)) return 0;
  /* (2)'s sends: every ring next (tree parent and children) of my shards. */
  slot_fifo_t *f;
  int peer;
  if (r->layout->nhosts > 1)
    for (int c = 0; c < r->nown; c++)
      if (!inter_taken(r, c, &f, &peer)) return 0;
  return 1;
}

static const kern_item_ops_t hier_ops = {.step = hier_step, .waiting = hier_waiting, .drained = hier_drained};

size_t host_hier_item_bytes(const hier_layout_t *l, int rank) {
  int g = hier_host_size(l, l->host_of[rank]), nown = hier_owned(l, rank);
  size_t n = 2 * (size_t)(l->shards - nown) + 2 * (size_t)nown * (size_t)(g - 1);
  return (sizeof(hier_item_t) + n * sizeof(hier_stream_t) + 7) & ~(size_t)7;
}

void host_hier_item(hier_item_t *it, const partner_args_t *a, const hier_layout_t *l, const kern_env_t *env,
                    kern_lane_t lane, int tree) {
  memset(it, 0, sizeof(*it));
  it->args = a;
  it->layout = l;
  it->tree = tree;
  kern_item_init(&it->base, &hier_ops, env, lane);
  int q = a->rank, G = l->shards;
  it->host = l->host_of[q], it->g = hier_host_size(l, it->host), it->me = l->local_of[q];
  it->nown = hier_owned(l, q);
  int g = it->g, me = it->me, nown = it->nown, others = g - 1;
  /* (1) sends: each shard I do not own, to its owner; shards s and s + g go
   * to the same owner, in that order. Indexed by the streams before. */
  for (int s = 0, i = 0; s < G; s++) {
    if (s % g == me) continue;
    stream_add(it, 0, local_rank(it, s % g), s, s >= g ? i - (g - 1) : -1, -1);
    it->n1s++, i++;
  }
  /* (1) receives: per owned shard c, one per other local rank j, reduced in
   * j's order; the fifo from j carries my shards in rising order. */
  for (int c = 0; c < nown; c++)
    for (int j = 0; j < others; j++) {
      int idx = it->n1s + it->n1r, after = c ? idx - others : -1, red = j ? idx - 1 : -1;
      stream_add(it, 1, local_rank(it, other(it, j)), own_shard(it, c), after, red);
      it->n1r++;
    }
  /* (3) sends: each owned shard to each other local rank. */
  for (int c = 0; c < nown; c++)
    for (int j = 0; j < others; j++) {
      int idx = it->n1s + it->n1r + it->n3s;
      stream_add(it, 0, local_rank(it, other(it, j)), own_shard(it, c), c ? idx - others : -1, -1);
      it->n3s++;
    }
  /* (3) receives: each shard I do not own, from its owner. */
  for (int s = 0, i = 0; s < G; s++) {
    if (s % g == me) continue;
    int idx = it->n1s + it->n1r + it->n3s + it->n3r;
    stream_add(it, 1, local_rank(it, s % g), s, s >= g ? idx - (g - 1) : -1, -1);
    it->n3r++, i++;
  }
  size_t es = xcclTypeSize(a->type);
  slot_fifo_t *any = it->n1s ? it->st[0].f : NULL;
  if (!any && l->nhosts > 1 && nown) {
    int p[5];
    inter_neighbours(l, it->host, own_shard(it, 0), tree ? HIER_INTER_TREE : HIER_INTER_RING, p);
    any = a->send_fifo[p[0]];
  }
  it->piece_elems = any ? any->slot_size / es : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->base.finished = a->count == 0;
}
