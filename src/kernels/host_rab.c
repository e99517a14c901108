/* host_rab.c — Rabenseifner's all-reduce as a host work item (host_rab.h). */
#include "host_rab.h"

#include <stdint.h>
#include <string.h>

#include "kern_recv.h"
#include "reduce.h"

/* What a stream's pieces do. */
enum {
  RAB_RS_SEND,   /* reduce-scatter: my partial blocks to the partner */
  RAB_RS_RECV,   /* the partner's partial blocks, reduced into mine */
  RAB_AG_SEND,   /* all-gather: my final blocks to the partner */
  RAB_AG_RECV,   /* the partner's final blocks, copied into recvbuff */
  RAB_FOLD_SEND, /* odd rank of a pair: my input to my partner */
  RAB_FOLD_RECV, /* even rank: my partner's input, reduced into mine */
  RAB_BACK_SEND, /* even rank: the result to my partner */
  RAB_BACK_RECV  /* odd rank: the result from my partner */
};

static rab_item_t *to_rab(kern_item_t *it) { return (rab_item_t *)((char *)it - offsetof(rab_item_t, base)); }

static int pow2_floor(int k) {
  int p = 1;
  while (p <= k / 2) p *= 2;
  return p;
}

/* The rank numbered n among the p2 that halve and double (r pairs fold). */
static int rab_real(int n, int r) { return n < r ? 2 * n : n + r; }

int host_rab_partners(int nranks, int rank, int *peers) {
  int p2 = pow2_floor(nranks), r = nranks - p2, n = 0, me = rank - r;
  if (rank < 2 * r) {
    peers[n++] = rank ^ 1;
    if (rank & 1) return n;
    me = rank / 2;
  }
  for (int h = p2 / 2; h >= 1; h /= 2) peers[n++] = rab_real(me ^ h, r);
  return n;
}

/* ---- Blocks and streams ---- */

static size_t blk_off(const rab_item_t *r, int b) {
  size_t q = r->args->count / (size_t)r->p2, rem = r->args->count % (size_t)r->p2;
  return (size_t)b * q + ((size_t)b < rem ? (size_t)b : rem);
}

static size_t blk_len(const rab_item_t *r, int b) { return blk_off(r, b + 1) - blk_off(r, b); }

static int stream_block(const rab_stream_t *st, int j) {
  return st->base ^ (st->high | (st->falling ? st->width - 1 - j : j));
}

/* A halving rank's streams in the order data flows through them (the
 * order rab_step tries them and rab_waiting names the first blocked one):
 * the fold's, the reduce-scatter's send and receive per level from 0, the
 * all-gather's from the last level, the fold's return. */
static const rab_stream_t *rs_send(const rab_item_t *r, int s) { return &r->st[(r->fold > 0) + 2 * s]; }
static const rab_stream_t *rs_recv(const rab_item_t *r, int s) { return rs_send(r, s) + 1; }
static const rab_stream_t *ag_send(const rab_item_t *r, int s) {
  return rs_send(r, r->levels) + 2 * (r->levels - 1 - s);
}
static const rab_stream_t *ag_recv(const rab_item_t *r, int s) { return ag_send(r, s) + 1; }

static void stream_add(rab_item_t *r, int kind, int level, int peer, int base, int high, int width, int falling) {
  const partner_args_t *a = r->args;
  rab_stream_t *st = &r->st[r->nst++];
  int is_recv = kind == RAB_RS_RECV || kind == RAB_AG_RECV || kind == RAB_FOLD_RECV || kind == RAB_BACK_RECV;
  /* The blocks base ^ high ^ j' for j' < width are an aligned run. */
  int first = (base ^ high) & ~(width - 1);
  *st = (rab_stream_t){.f = is_recv ? a->recv_fifo[peer] : a->send_fifo[peer],
                       .step = is_recv ? a->recv_step[peer] : a->send_step[peer],
                       .peer = peer,
                       .kind = kind,
                       .level = level,
                       .is_recv = is_recv,
                       .base = base,
                       .high = high,
                       .width = width,
                       .falling = falling,
                       .total = blk_off(r, first + width) - blk_off(r, first)};
}

static int stream_complete(const rab_stream_t *st) { return st->done == st->total; }

/* Elements of kept_s (the blocks at distance < 2^(L-1-s)) reduced over my
 * half so far, in falling distance; s = -1: the fold's (everything is
 * ready when nothing folds in). */
static size_t reduced(const rab_item_t *r, int s) {
  if (s >= 0) return rs_recv(r, s)->done;
  return r->fold == 1 ? r->st[0].done : SIZE_MAX;
}

/* Elements of kept_s final, as a prefix of rising distance: my own block
 * from the last reduce-scatter level, then what each all-gather level
 * s' > s brought, from the last level up. s = -1: the whole buffer. */
static size_t final_prefix(const rab_item_t *r, int s) {
  size_t got = rs_recv(r, r->levels - 1)->done;
  for (int t = r->levels - 2; t >= s; t--)
    if (got == ag_send(r, t + 1)->total) got += ag_recv(r, t + 1)->done;
  return got;
}

/* 1 if the next n elements of st may move: what they are made of is done. */
static int stream_may(const rab_item_t *r, const rab_stream_t *st, size_t n) {
  int s = st->level;
  switch (st->kind) {
    case RAB_RS_SEND:
      return reduced(r, s - 1) >= st->done + n;
    case RAB_RS_RECV: /* kept_s comes after send_s in the level above's order */
      return reduced(r, s - 1) >= rs_send(r, s)->total + st->done + n;
    case RAB_AG_SEND: /* after the reduce-scatter's messages on the same fifo */
      return stream_complete(rs_send(r, s)) && final_prefix(r, s) >= st->done + n;
    case RAB_AG_RECV: /* the fifo's reduce-scatter messages first; send_s is free once sent */
      return stream_complete(rs_send(r, s)) && stream_complete(rs_recv(r, s));
    case RAB_BACK_SEND:
      return final_prefix(r, -1) >= st->done + n;
    case RAB_BACK_RECV: /* recvbuff may be sendbuff */
      return stream_complete(&r->st[0]);
    default:
      return 1;
  }
}

int host_rab_stream_may(const rab_item_t *it, int i, size_t n) { return stream_may(it, &it->st[i], n); }

/* Moves the next n elements of st between the buffers and slot. */
static void stream_move(rab_item_t *r, rab_stream_t *st, char *slot, size_t n) {
  const partner_args_t *a = r->args;
  size_t es = xcclTypeSize(a->type);
  char *acc = a->recvbuff;
  /* The partial values a level starts from: the input, but where the fold
   * or an earlier level already reduced into recvbuff. */
  const char *mine = (st->level > 0 || r->fold == 1) ? acc : (const char *)a->sendbuff;
  if (st->kind == RAB_FOLD_SEND || st->kind == RAB_FOLD_RECV) mine = a->sendbuff;
  if (st->kind == RAB_AG_SEND || st->kind == RAB_BACK_SEND) mine = acc;
  int last = st->kind == RAB_RS_RECV && st->level == r->levels - 1 && a->op == xcclAvg;
  for (size_t pos = 0; pos < n;) {
    int b = stream_block(st, st->blk);
    size_t len = blk_len(r, b);
    if (st->within == len) {
      st->blk++, st->within = 0;
      continue;
    }
    size_t take = len - st->within < n - pos ? len - st->within : n - pos;
    size_t at = (blk_off(r, b) + st->within) * es;
    char *s = slot + pos * es;
    if (!st->is_recv) {
      memcpy(s, mine + at, take * es);
    } else if (st->kind == RAB_RS_RECV || st->kind == RAB_FOLD_RECV) {
      kern_reduce(acc + at, mine + at, s, take, a->type, a->op);
      if (last) kern_divide(acc + at, acc + at, take, a->type, a->nranks);
    } else {
      memcpy(acc + at, s, take * es);
    }
    pos += take, st->within += take;
  }
  st->done += n;
}

/* The next piece of st, if it may move and its fifo is ready. 1 if it
 * moved, 0 if not, -1 on a bad message. */
static int stream_step(rab_item_t *r, rab_stream_t *st, kern_failure_t *fail) {
  if (stream_complete(st)) return 0;
  size_t n = st->total - st->done < r->piece_elems ? st->total - st->done : r->piece_elems;
  size_t bytes = n * xcclTypeSize(r->args->type);
  if (!stream_may(r, st, n)) return 0;
  if (st->is_recv) {
    if (!slot_fifo_ready(st->f, *st->step)) return 0;
    if (!kern_recv_check(st->f, *st->step, bytes, fail)) {
      fail->peer = st->peer;
      return -1;
    }
  } else if (!slot_fifo_room(st->f, *st->step)) {
    return 0;
  }
  stream_move(r, st, slot_fifo_slot(st->f, *st->step), n);
  if (st->is_recv)
    slot_fifo_release(st->f, (*st->step)++);
  else
    slot_fifo_send(st->f, (*st->step)++, bytes, r->base.env->fault);
  return 1;
}

/* ---- The engine's operations ---- */

static int rab_step(kern_item_t *it, kern_failure_t *fail) {
  rab_item_t *r = to_rab(it);
  if (r->nst == 0) { /* one rank: the input is the result */
    if (r->args->sendbuff != r->args->recvbuff)
      memcpy(r->args->recvbuff, r->args->sendbuff, r->args->count * xcclTypeSize(r->args->type));
    it->finished = 1;
    return 1;
  }
  int moved = 0, left = 0;
  for (int i = 0; i < r->nst; i++) {
    rab_stream_t *st = &r->st[i];
    int m = stream_step(r, st, fail);
    if (m < 0) {
      it->peer = st->peer, it->action = i;
      return -1;
    }
    if (m) moved = 1, it->action = i, it->loop = st->done / r->piece_elems;
    left |= !stream_complete(st);
  }
  it->finished = !left;
  return moved;
}

static slot_fifo_t *rab_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  rab_item_t *r = to_rab(it);
  rab_stream_t *any = NULL;
  for (int i = 0; i < r->nst; i++) {
    rab_stream_t *st = &r->st[i];
    int blocked;
    if (it->finished) { /* draining: a send the transport has not taken */
      blocked = !st->is_recv && !slot_fifo_taken(st->f, *st->step);
    } else {
      if (stream_complete(st)) continue;
      if (!any) any = st;
      size_t n = st->total - st->done < r->piece_elems ? st->total - st->done : r->piece_elems;
      blocked = stream_may(r, st, n) &&
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

static int rab_drained(kern_item_t *it) {
  rab_item_t *r = to_rab(it);
  for (int i = 0; i < r->nst; i++)
    if (!r->st[i].is_recv && !slot_fifo_taken(r->st[i].f, *r->st[i].step)) return 0;
  return 1;
}

static const kern_item_ops_t rab_ops = {.step = rab_step, .waiting = rab_waiting, .drained = rab_drained};

size_t host_rab_item_bytes(int nranks) {
  int levels = 0;
  while ((2 << levels) <= nranks) levels++;
  return sizeof(rab_item_t) + (size_t)(4 * levels + 2) * sizeof(rab_stream_t);
}

void host_rab_item(rab_item_t *it, const partner_args_t *a, const kern_env_t *env, int lane) {
  memset(it, 0, host_rab_item_bytes(a->nranks));
  it->args = a;
  kern_item_init(&it->base, &rab_ops, env, lane);
  int k = a->nranks, q = a->rank, p2 = pow2_floor(k), r = k - p2;
  it->p2 = p2;
  while ((1 << it->levels) < p2) it->levels++;
  it->newrank = q < 2 * r ? (q & 1 ? -1 : q / 2) : q - r;
  it->fold = q < 2 * r ? (q & 1 ? -1 : 1) : 0;
  if (it->fold < 0) {
    int partner = (q - 1) / 2;
    stream_add(it, RAB_FOLD_SEND, -1, q - 1, partner, 0, p2, 1);
    stream_add(it, RAB_BACK_RECV, -1, q - 1, partner, 0, p2, 0);
  } else if (k > 1) {
    int n = it->newrank;
    if (it->fold > 0) stream_add(it, RAB_FOLD_RECV, -1, q + 1, n, 0, p2, 1);
    for (int s = 0; s < it->levels; s++) {
      int h = p2 >> (s + 1), peer = rab_real(n ^ h, r);
      stream_add(it, RAB_RS_SEND, s, peer, n, h, h, 1);
      stream_add(it, RAB_RS_RECV, s, peer, n, 0, h, 1);
    }
    for (int s = it->levels - 1; s >= 0; s--) {
      int h = p2 >> (s + 1), peer = rab_real(n ^ h, r);
      stream_add(it, RAB_AG_SEND, s, peer, n, 0, h, 0);
      stream_add(it, RAB_AG_RECV, s, peer, n, h, h, 0);
    }
    if (it->fold > 0) stream_add(it, RAB_BACK_SEND, -1, q + 1, n, 0, p2, 0);
  }
  size_t es = xcclTypeSize(a->type);
  it->piece_elems = it->nst ? it->st[0].f->slot_size / es : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->base.finished = a->count == 0;
}
