/* host_rab.c — Rabenseifner's all-reduce, reduce-scatter and all-gather as
 * a host work item (host_rab.h). */
#include "host_rab.h"

#include <stdint.h>
#include <string.h>

#include "reduce.h"

/* What a stream's pieces do. */
enum {
  RAB_RS_SEND,   /* reduce-scatter: my partial blocks to the partner */
  RAB_RS_RECV,   /* the partner's partial blocks, reduced into mine */
  RAB_AG_SEND,   /* all-gather: my final blocks to the partner */
  RAB_AG_RECV,   /* the partner's final blocks, copied into recvbuff */
  RAB_FOLD_SEND, /* odd rank of a pair: my input to my partner */
  RAB_FOLD_RECV, /* even rank: my partner's input, reduced into mine (copied, all-gather) */
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

/* Block b's first element: all-reduce, count/p2 per block; reduce-scatter
 * and all-gather, the share of the first real rank b stands for. */
static size_t blk_off(const rab_item_t *r, int b) {
  if (r->args->coll != COLL_ALLREDUCE) return (size_t)rab_real(b, r->args->nranks - r->p2) * r->args->count;
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
 * all-gather's from the last level, the fold's return (a reduce-scatter
 * has no all-gather streams, an all-gather no reduce-scatter ones). */
static const rab_stream_t *rs_send(const rab_item_t *r, int s) { return &r->st[(r->fold > 0) + 2 * s]; }
static const rab_stream_t *rs_recv(const rab_item_t *r, int s) { return rs_send(r, s) + 1; }
static const rab_stream_t *ag_send(const rab_item_t *r, int s) { return &r->st[r->ag0 + 2 * (r->levels - 1 - s)]; }
static const rab_stream_t *ag_recv(const rab_item_t *r, int s) { return ag_send(r, s) + 1; }

static void stream_add(rab_item_t *r, int kind, int level, int peer, int base, int high, int width, int falling,
                       size_t skip, size_t skip_len) {
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
                       .skip = skip,
                       .skip_len = skip_len,
                       .total = blk_off(r, first + width) - blk_off(r, first) - skip_len};
}

static int stream_complete(const rab_stream_t *st) { return st->done == st->total; }

/* The walk position just past the stream's next n elements. */
static size_t walk_end(const rab_stream_t *st, size_t n) {
  size_t e = st->done + n;
  return e <= st->skip ? e : e + st->skip_len;
}

/* Elements of kept_s (the blocks at distance < 2^(L-1-s)) reduced over my
 * half so far, in falling distance; s = -1: the fold's (everything is
 * ready when nothing folds in). */
static size_t reduced(const rab_item_t *r, int s) {
  if (s >= 0) return rs_recv(r, s)->done;
  return r->fold == 1 ? r->st[0].done : SIZE_MAX;
}

/* Elements of my own block final, as a prefix of it: what the last
 * reduce-scatter level reduced; in an all-gather my share from the start,
 * then my fold partner's as it comes in. */
static size_t own_final(const rab_item_t *r) {
  if (r->args->coll != COLL_ALLGATHER) return rs_recv(r, r->levels - 1)->done;
  size_t mine = blk_len(r, r->newrank);
  return r->fold > 0 ? mine - r->st[0].total + r->st[0].done : mine;
}

/* Elements of kept_s final, as a prefix of rising distance: my own block,
 * then what each all-gather level s' > s brought, from the last level up.
 * s = -1: the whole buffer (a reduce-scatter's: my block). */
static size_t final_prefix(const rab_item_t *r, int s) {
  size_t got = own_final(r);
  if (r->args->coll == COLL_REDUCESCATTER) return got;
  for (int t = r->levels - 2; t >= s; t--)
    if (got == ag_send(r, t + 1)->total) got += ag_recv(r, t + 1)->done;
  return got;
}

/* 1 if the next n elements of st may move: what they are made of is done. */
static int stream_may(const rab_item_t *r, const rab_stream_t *st, size_t n) {
  int s = st->level, ag_only = r->args->coll == COLL_ALLGATHER;
  switch (st->kind) {
    case RAB_RS_SEND:
      return reduced(r, s - 1) >= st->done + n;
    case RAB_RS_RECV: /* kept_s comes after send_s in the level above's order */
      return reduced(r, s - 1) >= rs_send(r, s)->total + st->done + n;
    case RAB_AG_SEND: /* after the reduce-scatter's messages on the same fifo */
      return (ag_only || stream_complete(rs_send(r, s))) && final_prefix(r, s) >= st->done + n;
    case RAB_AG_RECV: /* the fifo's reduce-scatter messages first; send_s is free once sent */
      return ag_only || (stream_complete(rs_send(r, s)) && stream_complete(rs_recv(r, s)));
    case RAB_BACK_SEND:
      return final_prefix(r, -1) >= walk_end(st, n);
    case RAB_BACK_RECV: /* recvbuff may be (in) sendbuff */
      return stream_complete(&r->st[0]);
    default:
      return 1;
  }
}

int host_rab_stream_may(const rab_item_t *it, int i, size_t n) { return stream_may(it, &it->st[i], n); }

/* Element e of the buffer in the input, and in acc (host_rab.h). */
static const char *in_elem(const rab_item_t *r, size_t e) {
  return r->in + (e - r->in_at) * xcclTypeSize(r->args->type);
}
static char *acc_elem(const rab_item_t *r, size_t e) { return r->acc + (e - r->acc_at) * xcclTypeSize(r->args->type); }

/* Elements [e, e + n) of acc are final sums: xcclAvg divides them, and a
 * reduce-scatter copies what of them is this rank's share out. */
static void rs_final(rab_item_t *r, size_t e, size_t n) {
  const partner_args_t *a = r->args;
  size_t es = xcclTypeSize(a->type);
  char *p = acc_elem(r, e);
  if (a->op == xcclAvg) kern_divide(p, p, n, a->type, a->nranks);
  if (a->coll != COLL_REDUCESCATTER) return;
  size_t lo = e > r->out_at ? e : r->out_at, hi = e + n < r->out_at + a->count ? e + n : r->out_at + a->count;
  if (lo < hi) memcpy(r->out + (lo - r->out_at) * es, acc_elem(r, lo), (hi - lo) * es);
}

/* Moves the next n elements of st between the buffers and slot. */
static void stream_move(rab_item_t *r, rab_stream_t *st, char *slot, size_t n) {
  const partner_args_t *a = r->args;
  size_t es = xcclTypeSize(a->type);
  /* The partial values a level starts from: the input, but where the fold
   * or an earlier level already reduced into acc. */
  int from_in = st->kind == RAB_FOLD_SEND || st->kind == RAB_FOLD_RECV ||
                ((st->kind == RAB_RS_SEND || st->kind == RAB_RS_RECV) && st->level == 0 && r->fold != 1);
  int reduce = st->kind == RAB_RS_RECV || (st->kind == RAB_FOLD_RECV && a->coll != COLL_ALLGATHER);
  int last = st->kind == RAB_RS_RECV && st->level == r->levels - 1;
  size_t skip_end = st->skip + st->skip_len;
  for (size_t pos = 0; pos < n;) {
    int b = stream_block(st, st->blk);
    size_t len = blk_len(r, b), take = len - st->within;
    if (take == 0) {
      st->blk++, st->within = 0;
      continue;
    }
    if (st->walked >= st->skip && st->walked < skip_end) { /* a share this stream leaves out */
      take = take < skip_end - st->walked ? take : skip_end - st->walked;
      st->within += take, st->walked += take;
      continue;
    }
    if (take > n - pos) take = n - pos;
    if (st->walked < st->skip && take > st->skip - st->walked) take = st->skip - st->walked;
    size_t e = blk_off(r, b) + st->within;
    char *s = slot + pos * es;
    if (!st->is_recv) {
      memcpy(s, from_in ? in_elem(r, e) : acc_elem(r, e), take * es);
    } else if (reduce) {
      kern_reduce(acc_elem(r, e), from_in ? in_elem(r, e) : acc_elem(r, e), s, take, a->type, a->op);
      if (last) rs_final(r, e, take);
    } else {
      memcpy(acc_elem(r, e), s, take * es);
    }
    pos += take, st->within += take, st->walked += take;
  }
  st->done += n;
}

/* ---- The engine's operations ---- */

/* The kernel's view of the item's streams (kern_stream.h). */
static int may(const kern_item_t *it, int i, size_t n) {
  return host_rab_stream_may((const rab_item_t *)((const char *)it - offsetof(rab_item_t, base)), i, n);
}

static void move(kern_item_t *it, int i, char *slot, size_t n) {
  rab_item_t *r = to_rab(it);
  stream_move(r, &r->st[i], slot, n);
}

static kern_streams_t streams(rab_item_t *r) {
  return (kern_streams_t){(char *)r->st, sizeof(r->st[0]), r->nst, r->piece_elems, xcclTypeSize(r->args->type),
                          may,           move,       NULL};
}

static int rab_step(kern_item_t *it, kern_failure_t *fail) {
  rab_item_t *r = to_rab(it);
  if (r->nst == 0) { /* one rank: the input is the result */
    if (r->args->sendbuff != r->args->recvbuff)
      memcpy(r->args->recvbuff, r->args->sendbuff, r->args->count * xcclTypeSize(r->args->type));
    it->finished = 1;
    return 1;
  }
  const partner_args_t *a = r->args;
  if (!r->placed && a->coll == COLL_ALLGATHER) { /* my share to its place, unless it is there */
    size_t bytes = a->count * xcclTypeSize(a->type);
    char *to = (char *)a->recvbuff + (size_t)a->rank * bytes;
    if (to != (const char *)a->sendbuff) memcpy(to, a->sendbuff, bytes);
  }
  r->placed = 1;
  kern_streams_t s = streams(r);
  return kern_streams_step(it, &s, fail);
}

static slot_fifo_t *rab_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  kern_streams_t s = streams(to_rab(it));
  return kern_streams_waiting(it, &s, step_p, is_recv_p);
}

static int rab_drained(kern_item_t *it) {
  kern_streams_t s = streams(to_rab(it));
  return kern_streams_drained(&s);
}

static const kern_item_ops_t rab_ops = {.step = rab_step, .waiting = rab_waiting, .drained = rab_drained};

size_t host_rab_item_bytes(int nranks) {
  int levels = 0;
  while ((2 << levels) <= nranks) levels++;
  return sizeof(rab_item_t) + (size_t)(4 * levels + 2) * sizeof(rab_stream_t);
}

size_t host_rab_work_bytes(coll_kind_t coll, size_t count, xcclDataType_t type, int nranks, int rank) {
  int r = nranks - pow2_floor(nranks);
  if (coll != COLL_REDUCESCATTER || nranks < 2 || (rank < 2 * r && (rank & 1))) return 0;
  return (count * (size_t)nranks * xcclTypeSize(type) + 7) & ~(size_t)7;
}

/* Where the buffer's elements live (host_rab.h): the all-reduce's in
 * sendbuff and recvbuff; the all-gather's input is my share alone; the
 * reduce-scatter sums in the working memory after the item and writes my
 * share to recvbuff, where a folded rank's result comes straight in. */
static void rab_views(rab_item_t *it, const partner_args_t *a) {
  size_t mine = (size_t)a->rank * a->count;
  it->in = a->sendbuff;
  it->acc = a->recvbuff;
  if (a->coll == COLL_ALLGATHER) it->in_at = mine;
  if (a->coll != COLL_REDUCESCATTER) return;
  if (it->fold < 0) {
    it->acc_at = mine;
    return;
  }
  it->acc = (char *)it + host_rab_item_bytes(a->nranks);
  it->out = a->recvbuff;
  it->out_at = mine;
}

void host_rab_item(rab_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane) {
  memset(it, 0, host_rab_item_bytes(a->nranks));
  it->args = a;
  kern_item_init(&it->base, &rab_ops, env, lane);
  int k = a->nranks, q = a->rank, p2 = pow2_floor(k), r = k - p2;
  it->p2 = p2;
  while ((1 << it->levels) < p2) it->levels++;
  it->newrank = q < 2 * r ? (q & 1 ? -1 : q / 2) : q - r;
  it->fold = q < 2 * r ? (q & 1 ? -1 : 1) : 0;
  rab_views(it, a);
  /* The fold's streams: into the even rank, the whole buffer falling (the
   * all-gather's, the odd rank's share: the second of the even rank's
   * block); back, the whole buffer rising (the reduce-scatter's, the odd
   * rank's share; the all-gather's, all but that share). */
  size_t B = a->count;
  int rs = a->coll != COLL_ALLGATHER, ag = a->coll != COLL_REDUCESCATTER;
  int in_w = rs ? p2 : 1, back_w = ag ? p2 : 1;
  size_t in_skip = rs ? 0 : B, back_at = a->coll == COLL_ALLGATHER ? B : 0, back_skip = ag && rs ? 0 : B;
  if (it->fold < 0) {
    int partner = (q - 1) / 2;
    stream_add(it, RAB_FOLD_SEND, -1, q - 1, partner, 0, in_w, 1, 0, in_skip);
    stream_add(it, RAB_BACK_RECV, -1, q - 1, partner, 0, back_w, 0, back_at, back_skip);
  } else if (k > 1) {
    int n = it->newrank;
    if (it->fold > 0) stream_add(it, RAB_FOLD_RECV, -1, q + 1, n, 0, in_w, 1, 0, in_skip);
    for (int s = 0; rs && s < it->levels; s++) {
      int h = p2 >> (s + 1), peer = rab_real(n ^ h, r);
      stream_add(it, RAB_RS_SEND, s, peer, n, h, h, 1, 0, 0);
      stream_add(it, RAB_RS_RECV, s, peer, n, 0, h, 1, 0, 0);
    }
    it->ag0 = it->nst;
    for (int s = it->levels - 1; ag && s >= 0; s--) {
      int h = p2 >> (s + 1), peer = rab_real(n ^ h, r);
      stream_add(it, RAB_AG_SEND, s, peer, n, 0, h, 0, 0, 0);
      stream_add(it, RAB_AG_RECV, s, peer, n, h, h, 0, 0, 0);
    }
    if (it->fold > 0) stream_add(it, RAB_BACK_SEND, -1, q + 1, n, 0, back_w, 0, back_at, back_skip);
  }
  size_t es = xcclTypeSize(a->type);
  it->piece_elems = it->nst ? it->st[0].f->slot_size / es : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->base.finished = a->count == 0;
}
