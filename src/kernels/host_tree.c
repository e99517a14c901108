/* host_tree.c — the double binary tree as host work items (host_tree.h). */
#include "host_tree.h"

#include <stddef.h>
#include <string.h>

#include "kern_recv.h"
#include "reduce.h"

static tree_item_t *to_tree(kern_item_t *it) { return (tree_item_t *)((char *)it - offsetof(tree_item_t, base)); }

/* The root of the in-order tree over lo..hi (1-based): the number there
 * with the most trailing zeros, the high bits lo and hi share followed by
 * the highest bit where they differ. */
static int range_root(int lo, int hi) {
  if (lo == hi) return lo;
  int d = lo ^ hi, top = 1;
  while (top * 2 <= d) top *= 2;
  return hi & ~(top - 1);
}

static int mod(long v, int n) { return (int)(((v % n) + n) % n); }

/* The map of tree t: rank -> index (0-based) and back. */
typedef struct {
  int n, sign, shift;
} tree_map_t;

static int to_index(const tree_map_t *m, int r) { return mod((long)m->sign * r + m->shift, m->n); }
static int to_rank(const tree_map_t *m, int v) { return mod((long)m->sign * (v - m->shift), m->n); }

void host_tree_links(int nranks, int rank, int t, int root, tree_links_t *out) {
  int n = nranks, top = range_root(1, n) - 1;
  tree_map_t m = {n, 1, t ? 1 : 0};
  if (root >= 0) m = t ? (tree_map_t){n, -1, top + root} : (tree_map_t){n, 1, top - root};
  *out = (tree_links_t){.parent = -1, .child = {-1, -1}};
  for (int d = 1; d < n; d *= 2) out->depth++;
  int u = to_index(&m, rank) + 1, lo = 1, hi = n, parent = 0;
  for (;;) {
    int r = range_root(lo, hi);
    if (u == r) break;
    parent = r;
    if (u < r)
      hi = r - 1;
    else
      lo = r + 1;
  }
  if (parent) out->parent = to_rank(&m, parent - 1);
  if (lo < u) out->child[out->nchild++] = to_rank(&m, range_root(lo, u - 1) - 1);
  if (u < hi) out->child[out->nchild++] = to_rank(&m, range_root(u + 1, hi) - 1);
}

/* Elements of piece p. */
static size_t piece_elems(const tree_item_t *t, uint64_t p) {
  size_t off = (size_t)p * t->piece_elems, left = t->args->count - off;
  return left < t->piece_elems ? left : t->piece_elems;
}

/* The climb of the next piece, if the children's pieces are in and the
 * parent has room. */
static int tree_up(tree_item_t *t, kern_failure_t *fail) {
  const tree_args_t *a = t->args;
  const tree_links_t *l = &a->links;
  int children_in = 1;
  for (int c = 0; c < l->nchild; c++) children_in &= slot_fifo_ready(a->up_recv[c], *a->up_recv_step[c]) != 0;
  if (!tree_up_may(children_in, l->parent < 0 || slot_fifo_room(a->up_send, *a->up_send_step))) return 0;
  size_t esize = xcclTypeSize(a->type), n = piece_elems(t, t->up), bytes = n * esize;
  size_t at = (a->off + (size_t)t->up * t->piece_elems) * esize;
  for (int c = 0; c < l->nchild; c++)
    if (!kern_recv_check(a->up_recv[c], *a->up_recv_step[c], bytes, fail)) {
      fail->peer = l->child[c];
      return -1;
    }
  const char *in = (const char *)a->sendbuff + at;
  char *dst = l->parent >= 0 ? slot_fifo_slot(a->up_send, *a->up_send_step) : (char *)a->recvbuff + at;
  if (l->nchild == 0) {
    if (dst != in) memcpy(dst, in, bytes);
  } else {
    kern_reduce(dst, in, slot_fifo_slot(a->up_recv[0], *a->up_recv_step[0]), n, a->type, a->op);
    if (l->nchild > 1) kern_reduce(dst, dst, slot_fifo_slot(a->up_recv[1], *a->up_recv_step[1]), n, a->type, a->op);
  }
  if (l->parent < 0 && a->op == xcclAvg) kern_divide(dst, dst, n, a->type, a->nranks);
  for (int c = 0; c < l->nchild; c++) slot_fifo_release(a->up_recv[c], (*a->up_recv_step[c])++);
  if (l->parent >= 0) slot_fifo_send(a->up_send, (*a->up_send_step)++, bytes, t->base.env->fault);
  t->up++;
  return 1;
}

/* The descent of the next piece, if the parent's piece is in (the root:
 * its climb is done) and the children have room. */
static int tree_down(tree_item_t *t, kern_failure_t *fail) {
  const tree_args_t *a = t->args;
  const tree_links_t *l = &a->links;
  int children_room = 1;
  for (int c = 0; c < l->nchild; c++) children_room &= slot_fifo_room(a->down_send[c], *a->down_send_step[c]) != 0;
  if (!tree_down_may(t->do_up, t->up, t->down, l->parent < 0 || slot_fifo_ready(a->down_recv, *a->down_recv_step),
                     children_room))
    return 0;
  size_t esize = xcclTypeSize(a->type), n = piece_elems(t, t->down), bytes = n * esize;
  size_t at = (a->off + (size_t)t->down * t->piece_elems) * esize;
  char *out = (char *)a->recvbuff + at;
  const char *src = out; /* all-reduce's root: its climb left the result there */
  if (l->parent >= 0) {
    if (!kern_recv_check(a->down_recv, *a->down_recv_step, bytes, fail)) {
      fail->peer = l->parent;
      return -1;
    }
    src = slot_fifo_slot(a->down_recv, *a->down_recv_step);
  } else if (a->coll == COLL_BROADCAST) {
    src = (const char *)a->sendbuff + at;
  }
  if (out != src) memcpy(out, src, bytes);
  for (int c = 0; c < l->nchild; c++) {
    memcpy(slot_fifo_slot(a->down_send[c], *a->down_send_step[c]), out, bytes);
    slot_fifo_send(a->down_send[c], (*a->down_send_step[c])++, bytes, t->base.env->fault);
  }
  if (l->parent >= 0) slot_fifo_release(a->down_recv, (*a->down_recv_step)++);
  t->down++;
  return 1;
}

static void tree_check_done(tree_item_t *t) {
  t->base.finished = (!t->do_up || t->up == t->npieces) && (!t->do_down || t->down == t->npieces);
  t->base.loop = t->do_down ? t->down : t->up;
  t->base.action = t->do_up && t->up < t->npieces ? 0 : 1;
}

static int tree_step(kern_item_t *it, kern_failure_t *fail) {
  tree_item_t *t = to_tree(it);
  int moved = 0, r;
  if (t->do_down && t->down < t->npieces) {
    if ((r = tree_down(t, fail)) < 0) return -1;
    moved |= r;
  }
  if (t->do_up && t->up < t->npieces) {
    if ((r = tree_up(t, fail)) < 0) return -1;
    moved |= r;
  }
  tree_check_done(t);
  return moved;
}

typedef struct {
  slot_fifo_t *f;
  uint64_t *step;
  int peer, is_recv;
} tree_wait_t;

static slot_fifo_t *tree_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  tree_item_t *t = to_tree(it);
  const tree_args_t *a = t->args;
  const tree_links_t *l = &a->links;
  /* A receive not in, else a send without room, else (finished) a send the
   * transport has not taken. */
  tree_wait_t w[6];
  int nw = 0;
#define WAIT(F, S, P, R) (w[nw++] = (tree_wait_t){(F), (S), (P), (R)})
  int up = t->do_up && t->up < t->npieces, down = t->do_down && t->down < t->npieces;
  if (up)
    for (int c = 0; c < l->nchild; c++) WAIT(a->up_recv[c], a->up_recv_step[c], l->child[c], 1);
  if (down && l->parent >= 0) WAIT(a->down_recv, a->down_recv_step, l->parent, 1);
  if (l->parent >= 0 && (up || it->finished)) WAIT(a->up_send, a->up_send_step, l->parent, 0);
  if (down || it->finished)
    for (int c = 0; c < l->nchild; c++) WAIT(a->down_send[c], a->down_send_step[c], l->child[c], 0);
#undef WAIT
  for (int i = 0; i < nw; i++) {
    int blocked = w[i].is_recv   ? !slot_fifo_ready(w[i].f, *w[i].step)
                  : it->finished ? !slot_fifo_taken(w[i].f, *w[i].step)
                                 : !slot_fifo_room(w[i].f, *w[i].step);
    if (!blocked) continue;
    it->peer = w[i].peer;
    *is_recv_p = w[i].is_recv;
    *step_p = it->finished ? atomic_load(&w[i].f->head) : *w[i].step;
    return w[i].f;
  }
  return NULL;
}

static int tree_drained(kern_item_t *it) {
  tree_item_t *t = to_tree(it);
  const tree_args_t *a = t->args;
  if (t->do_up && a->links.parent >= 0 && !slot_fifo_taken(a->up_send, *a->up_send_step)) return 0;
  for (int c = 0; t->do_down && c < a->links.nchild; c++)
    if (!slot_fifo_taken(a->down_send[c], *a->down_send_step[c])) return 0;
  return 1;
}

static const kern_item_ops_t tree_ops = {.step = tree_step, .waiting = tree_waiting, .drained = tree_drained};

void host_tree_item(tree_item_t *it, const tree_args_t *a, const kern_env_t *env, kern_lane_t lane) {
  memset(it, 0, sizeof(*it));
  it->args = a;
  kern_item_init(&it->base, &tree_ops, env, lane);
  it->do_up = a->coll != COLL_BROADCAST;
  it->do_down = a->coll != COLL_REDUCE;
  const tree_links_t *l = &a->links;
  slot_fifo_t *any =
      l->parent >= 0 ? (it->do_up ? a->up_send : a->down_recv) : (it->do_up ? a->up_recv[0] : a->down_send[0]);
  size_t esize = xcclTypeSize(a->type);
  it->piece_elems = any ? any->slot_size / esize : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->npieces = a->count ? (a->count + it->piece_elems - 1) / it->piece_elems : 0;
  tree_check_done(it);
}
