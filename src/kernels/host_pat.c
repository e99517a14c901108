/* host_pat.c — PAT's all-gather and reduce-scatter as a host work item
 * (host_pat.h). */
#include "host_pat.h"

#include <stdint.h>
#include <string.h>

#include "reduce.h"

static pat_item_t *to_pat(kern_item_t *it) { return (pat_item_t *)((char *)it - offsetof(pat_item_t, base)); }
static const pat_item_t *to_pat_const(const kern_item_t *it) {
  return (const pat_item_t *)((const char *)it - offsetof(pat_item_t, base));
}

int host_pat_dims(int nranks) {
  int d = 0;
  while (d < 31 && (1 << d) < nranks) d++;
  return d;
}

size_t host_pat_blocks(int nranks, int dim) {
  size_t k = nranks > 0 ? (size_t)nranks : 0, low = (size_t)1 << dim;
  return k > low ? (k - 1 - low) / (2 * low) + 1 : 0;
}

int host_pat_partners(int nranks, int rank, int *send, int *recv) {
  int dims = host_pat_dims(nranks);
  for (int s = 0; s < dims; s++) {
    int d = 1 << s; /* < nranks */
    send[s] = (rank + d) % nranks;
    recv[s] = (rank - d + nranks) % nranks;
  }
  return dims;
}

/* Even offsets in [2, nranks): the reduce-scatter's accumulators. */
static size_t pat_accs(int nranks) { return nranks > 2 ? (size_t)(nranks - 1) / 2 : 0; }

size_t host_pat_width(coll_kind_t coll, size_t count, size_t esize, int nranks, size_t work_cap) {
  if (count == 0) return 1;
  size_t accs = pat_accs(nranks);
  if (coll != COLL_REDUCESCATTER || accs == 0 || esize == 0) return count;
  size_t w = work_cap / (accs * esize);
  if (w == 0) w = 1;
  return w < count ? w : count;
}

size_t host_pat_item_bytes(int nranks) {
  size_t bytes = sizeof(pat_item_t) + (size_t)(2 * host_pat_dims(nranks)) * sizeof(pat_stream_t);
  return (bytes + 7) & ~(size_t)7;
}

size_t host_pat_work_bytes(coll_kind_t coll, size_t count, xcclDataType_t type, int nranks, size_t work_cap) {
  if (coll != COLL_REDUCESCATTER) return 0;
  size_t es = xcclTypeSize(type);
  size_t bytes = pat_accs(nranks) * host_pat_width(coll, count, es, nranks, work_cap) * es;
  return (bytes + 7) & ~(size_t)7;
}

/* ---- Where a stream is ---- */

/* Element e of a stream: chunk c, the m-th offset of its walk, column w of
 * the chunk, which is wc columns wide. */
typedef struct {
  size_t c, m, w, wc;
} pat_at_t;

static size_t chunk_width(const pat_item_t *p, size_t c) {
  if (c >= p->chunks) return 0;
  size_t left = p->args->count - c * p->width;
  return left < p->width ? left : p->width;
}

static pat_at_t locate(const pat_item_t *p, const pat_stream_t *st, size_t e) {
  size_t per = st->nblk * p->width, c = e / per, wc = chunk_width(p, c), r = e - c * per;
  return (pat_at_t){c, r / wc, r % wc, wc};
}

static size_t offset_of(const pat_stream_t *st, size_t m) {
  return ((size_t)st->odd << st->dim) + (m << (st->dim + 1));
}

/* Elements of stream x's walk at or before (chunk c, offset o, column w):
 * its whole earlier chunks, in chunk c its offsets below o, and at o (when
 * it walks o) the columns up to w. Rises with (c, o, w). */
static size_t prefix(const pat_item_t *p, const pat_stream_t *x, size_t c, size_t o, size_t w) {
  size_t base = (size_t)x->odd << x->dim, step = (size_t)2 << x->dim, before = 0, at = 0;
  if (o > base) before = (o - base + step - 1) / step;
  if (before > x->nblk) before = x->nblk;
  if (o >= base && (o - base) % step == 0 && (o - base) / step < x->nblk) at = w + 1;
  return c * x->nblk * p->width + before * chunk_width(p, c) + at;
}

/* The stream of dimension dim and direction: dimensions in the order they
 * run (the all-gather's from the highest), send then receive. */
static const pat_stream_t *stream_of(const pat_item_t *p, int dim, int is_recv) {
  int pos = p->args->coll == COLL_ALLGATHER ? p->dims - 1 - dim : dim;
  return &p->st[2 * pos + is_recv];
}

/* 1 if stream x has moved every element of its walk up to (c, o, w). */
static int reached(const pat_item_t *p, const pat_stream_t *x, size_t c, size_t o, size_t w) {
  return x->done >= prefix(p, x, c, o, w);
}

/* host_pat.h's rules, for the piece whose last element is done + n - 1. */
static int stream_may(const pat_item_t *p, const pat_stream_t *st, size_t n) {
  pat_at_t at = locate(p, st, st->done + n - 1);
  size_t o = offset_of(st, at.m);
  if (p->args->coll == COLL_ALLGATHER) {
    if (st->is_recv) return 1; /* each share lands in its own place, read by nobody yet */
    for (int t = st->dim + 1; t < p->dims; t++)
      if (!reached(p, stream_of(p, t, 1), at.c, o, at.w)) return 0;
    return 1;
  }
  if (!st->is_recv) {
    for (int j = 0; j < st->dim; j++)
      if (!reached(p, stream_of(p, j, 1), at.c, o, at.w)) return 0;
    return 1;
  }
  if (st->dim > 0) return reached(p, stream_of(p, st->dim - 1, 1), at.c, o, at.w);
  for (int t = 1; at.c > 0 && t < p->dims; t++) /* receive 0 starts the chunk's accumulators */
    if (!reached(p, stream_of(p, t, 0), at.c - 1, o, at.w)) return 0;
  return 1;
}

int host_pat_stream_may(const pat_item_t *it, int i, size_t n) { return stream_may(it, &it->st[i], n); }

size_t host_pat_next(const pat_item_t *it, int i) {
  const pat_stream_t *st = &it->st[i];
  size_t per = st->nblk * it->width, end = (st->done / per + 1) * per;
  if (end > st->total) end = st->total;
  return end - st->done < it->piece_elems ? end - st->done : it->piece_elems;
}

/* ---- Moving data ---- */

/* The accumulator of even offset o (>= 2), column w of the chunk. */
static char *acc_at(const pat_item_t *p, size_t o, size_t w) {
  return p->acc + ((o / 2 - 1) * p->width + w) * xcclTypeSize(p->args->type);
}

/* n elements at (o, col) between slot and the buffers, for st. */
static void move_run(pat_item_t *p, const pat_stream_t *st, size_t o, size_t col, size_t w, char *slot, size_t n) {
  const partner_args_t *a = p->args;
  size_t es = xcclTypeSize(a->type), k = (size_t)a->nranks, q = (size_t)a->rank, B = a->count;
  if (a->coll == COLL_ALLGATHER) { /* offset o holds rank q - o's share */
    char *at = (char *)a->recvbuff + (((q + k - o) % k) * B + col) * es;
    if (st->is_recv)
      memcpy(at, slot, n * es);
    else
      memcpy(slot, at, n * es);
    return;
  }
  /* Reduce-scatter: offset o holds a partial sum for rank q + o. */
  const char *in = (const char *)a->sendbuff + (((q + o) % k) * B + col) * es;
  if (!st->is_recv) { /* an accumulator where dimension 0 brought something, else the input */
    memcpy(slot, st->dim > 0 && o + 1 < k ? acc_at(p, o, w) : in, n * es);
    return;
  }
  char *to = o == 0 ? (char *)a->recvbuff + col * es : acc_at(p, o, w);
  kern_reduce(to, st->dim == 0 ? in : to, slot, n, a->type, a->op);
  if (o == 0 && st->dim == p->dims - 1 && a->op == xcclAvg) kern_divide(to, to, n, a->type, a->nranks);
}

/* Moves the next n elements of st (one chunk's at most) between the
 * buffers and slot. */
static void stream_move(pat_item_t *p, pat_stream_t *st, char *slot, size_t n) {
  size_t es = xcclTypeSize(p->args->type);
  pat_at_t at = locate(p, st, st->done);
  for (size_t pos = 0; pos < n;) {
    size_t take = at.wc - at.w < n - pos ? at.wc - at.w : n - pos;
    move_run(p, st, offset_of(st, at.m), at.c * p->width + at.w, at.w, slot + pos * es, take);
    pos += take, at.w += take;
    if (at.w == at.wc) at.w = 0, at.m++;
  }
  st->done += n;
}

/* ---- The engine's operations ---- */

static int may(const kern_item_t *it, int i, size_t n) { return host_pat_stream_may(to_pat_const(it), i, n); }

static void move(kern_item_t *it, int i, char *slot, size_t n) {
  pat_item_t *p = to_pat(it);
  stream_move(p, &p->st[i], slot, n);
}

static size_t next(const kern_item_t *it, int i) { return host_pat_next(to_pat_const(it), i); }

static kern_streams_t streams(pat_item_t *p) {
  return (kern_streams_t){.streams = (char *)p->st,
                          .stride = sizeof(p->st[0]),
                          .n = p->nst,
                          .piece_elems = p->piece_elems,
                          .esize = xcclTypeSize(p->args->type),
                          .may = may,
                          .move = move,
                          .next = next};
}

static int pat_step(kern_item_t *it, kern_failure_t *fail) {
  pat_item_t *p = to_pat(it);
  const partner_args_t *a = p->args;
  if (!p->placed) { /* the all-gather's own share, or one rank's copy */
    size_t bytes = a->count * xcclTypeSize(a->type);
    char *to = a->coll == COLL_ALLGATHER ? (char *)a->recvbuff + (size_t)a->rank * bytes
                                         : p->nst == 0 ? (char *)a->recvbuff : NULL;
    if (to && to != (const char *)a->sendbuff) memcpy(to, a->sendbuff, bytes);
    p->placed = 1;
    if (p->nst == 0) return it->finished = 1, 1;
  }
  kern_streams_t s = streams(p);
  return kern_streams_step(it, &s, fail);
}

static slot_fifo_t *pat_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  kern_streams_t s = streams(to_pat(it));
  return kern_streams_waiting(it, &s, step_p, is_recv_p);
}

static int pat_drained(kern_item_t *it) {
  kern_streams_t s = streams(to_pat(it));
  return kern_streams_drained(&s);
}

static const kern_item_ops_t pat_ops = {.step = pat_step, .waiting = pat_waiting, .drained = pat_drained};

void host_pat_item(pat_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane, size_t work_cap) {
  memset(it, 0, host_pat_item_bytes(a->nranks));
  it->args = a;
  kern_item_init(&it->base, &pat_ops, env, lane);
  size_t es = xcclTypeSize(a->type);
  it->dims = host_pat_dims(a->nranks);
  it->width = host_pat_width(a->coll, a->count, es, a->nranks, work_cap);
  it->chunks = (a->count + it->width - 1) / it->width;
  it->acc = (char *)it + host_pat_item_bytes(a->nranks);
  int send[32], recv[32], ag = a->coll == COLL_ALLGATHER;
  host_pat_partners(a->nranks, a->rank, send, recv);
  for (int pos = 0; pos < it->dims; pos++) {
    int s = ag ? it->dims - 1 - pos : pos;
    size_t nb = host_pat_blocks(a->nranks, s), total = nb * a->count;
    it->st[it->nst++] = (pat_stream_t){.f = a->send_fifo[send[s]],
                                       .step = a->send_step[send[s]],
                                       .peer = send[s],
                                       .total = total,
                                       .dim = s,
                                       .odd = !ag,
                                       .nblk = nb};
    it->st[it->nst++] = (pat_stream_t){.f = a->recv_fifo[recv[s]],
                                       .step = a->recv_step[recv[s]],
                                       .peer = recv[s],
                                       .is_recv = 1,
                                       .total = total,
                                       .dim = s,
                                       .odd = ag,
                                       .nblk = nb};
  }
  it->piece_elems = it->nst && es ? it->st[0].f->slot_size / es : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->base.finished = a->count == 0;
}
