/* host_bruck.c — Bruck's all-to-all as a host work item (host_bruck.h). */
#include "host_bruck.h"

#include <stdint.h>
#include <string.h>

static bruck_item_t *to_bruck(kern_item_t *it) { return (bruck_item_t *)((char *)it - offsetof(bruck_item_t, base)); }

int host_bruck_rounds(int nranks) {
  int r = 0;
  while (r < 31 && (1 << r) < nranks) r++;
  return r;
}

int host_bruck_partners(int nranks, int rank, int *send, int *recv) {
  int rounds = host_bruck_rounds(nranks);
  for (int j = 0; j < rounds; j++) {
    int d = (1 << j) % nranks;
    send[j] = (rank + d) % nranks;
    recv[j] = (rank - d + nranks) % nranks;
  }
  return rounds;
}

/* Of the numbers in [0, n), those with bit j set: whole periods of 2^(j+1)
 * give 2^j each, the last part what lies past its first 2^j. */
size_t host_bruck_round_blocks(int nranks, int round) {
  size_t n = (size_t)nranks, half = (size_t)1 << round, period = half * 2;
  size_t rest = n % period;
  return n / period * half + (rest > half ? rest - half : 0);
}

/* The m-th number (from 0, rising) with bit j set. */
static int round_block(int j, size_t m) {
  size_t low = m & (((size_t)1 << j) - 1);
  return (int)(((m >> j) << (j + 1)) | ((size_t)1 << j) | low);
}

static int lowest_bit(int i) { return __builtin_ctz((unsigned)i); }
static int highest_bit(int i) { return 31 - __builtin_clz((unsigned)i); }

static int stream_complete(const bruck_stream_t *st) { return st->done == st->total; }

/* 1 if the next n elements of st may move: a send once every earlier round
 * is in, a receive once its round's send has read the blocks it writes. */
static int stream_may(const bruck_item_t *b, const bruck_stream_t *st, size_t n) {
  if (st->is_recv) return b->st[2 * st->round].done >= st->done + n;
  for (int j = 0; j < st->round; j++)
    if (!stream_complete(&b->st[2 * j + 1])) return 0;
  return 1;
}

int host_bruck_stream_may(const bruck_item_t *it, int i, size_t n) { return stream_may(it, &it->st[i], n); }

/* Where element w of block i is, for st's direction (host_bruck.h). */
static char *block_at(const bruck_item_t *b, const bruck_stream_t *st, int i) {
  const partner_args_t *a = b->args;
  size_t bytes = a->count * xcclTypeSize(a->type);
  int k = a->nranks, q = a->rank;
  if (!st->is_recv && lowest_bit(i) == st->round) return (char *)a->sendbuff + (size_t)((q + i) % k) * bytes;
  if (st->is_recv && highest_bit(i) == st->round) return (char *)a->recvbuff + (size_t)((q - i + k) % k) * bytes;
  return b->work + (size_t)i * bytes;
}

/* Moves the next n elements of st between the blocks and slot. */
static void stream_move(bruck_item_t *b, bruck_stream_t *st, char *slot, size_t n) {
  size_t es = xcclTypeSize(b->args->type), B = b->args->count;
  for (size_t pos = 0; pos < n;) {
    size_t e = st->done + pos, m = e / B, w = e % B, take = B - w;
    if (take > n - pos) take = n - pos;
    char *at = block_at(b, st, round_block(st->round, m)) + w * es;
    if (st->is_recv)
      memcpy(at, slot + pos * es, take * es);
    else
      memcpy(slot + pos * es, at, take * es);
    pos += take;
  }
  st->done += n;
}

/* ---- The engine's operations ---- */

/* The kernel's view of the item's streams (kern_stream.h). */
static int may(const kern_item_t *it, int i, size_t n) {
  const bruck_item_t *b = (const bruck_item_t *)((const char *)it - offsetof(bruck_item_t, base));
  return stream_may(b, &b->st[i], n);
}

static void move(kern_item_t *it, int i, char *slot, size_t n) {
  bruck_item_t *b = to_bruck(it);
  stream_move(b, &b->st[i], slot, n);
}

static kern_streams_t streams(bruck_item_t *b) {
  return (kern_streams_t){(char *)b->st, sizeof(b->st[0]), b->nst, b->piece_elems, xcclTypeSize(b->args->type), may,
                          move, NULL};
}

static int bruck_step(kern_item_t *it, kern_failure_t *fail) {
  bruck_item_t *b = to_bruck(it);
  const partner_args_t *a = b->args;
  if (!b->placed) { /* the own block: a copy */
    size_t bytes = a->count * xcclTypeSize(a->type), own = (size_t)a->rank * bytes;
    memcpy((char *)a->recvbuff + own, (const char *)a->sendbuff + own, bytes);
    b->placed = 1;
    if (b->nst == 0) return it->finished = 1, 1; /* one rank */
  }
  kern_streams_t s = streams(b);
  return kern_streams_step(it, &s, fail);
}

static slot_fifo_t *bruck_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  kern_streams_t s = streams(to_bruck(it));
  return kern_streams_waiting(it, &s, step_p, is_recv_p);
}

static int bruck_drained(kern_item_t *it) {
  kern_streams_t s = streams(to_bruck(it));
  return kern_streams_drained(&s);
}

static const kern_item_ops_t bruck_ops = {.step = bruck_step, .waiting = bruck_waiting, .drained = bruck_drained};

size_t host_bruck_item_bytes(int nranks) {
  size_t bytes = sizeof(bruck_item_t) + (size_t)(2 * host_bruck_rounds(nranks)) * sizeof(bruck_stream_t);
  return (bytes + 7) & ~(size_t)7;
}

size_t host_bruck_work_bytes(size_t count, xcclDataType_t type, int nranks) {
  return (count * xcclTypeSize(type) * (size_t)nranks + 7) & ~(size_t)7;
}

void host_bruck_item(bruck_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane) {
  memset(it, 0, host_bruck_item_bytes(a->nranks));
  it->args = a;
  kern_item_init(&it->base, &bruck_ops, env, lane);
  it->work = (char *)it + host_bruck_item_bytes(a->nranks);
  it->rounds = host_bruck_rounds(a->nranks);
  int send[32], recv[32];
  host_bruck_partners(a->nranks, a->rank, send, recv);
  for (int j = 0; j < it->rounds; j++) {
    size_t total = host_bruck_round_blocks(a->nranks, j) * a->count;
    it->st[it->nst++] = (bruck_stream_t){
        .f = a->send_fifo[send[j]], .step = a->send_step[send[j]], .peer = send[j], .round = j, .total = total};
    it->st[it->nst++] = (bruck_stream_t){.f = a->recv_fifo[recv[j]],
                                         .step = a->recv_step[recv[j]],
                                         .peer = recv[j],
                                         .round = j,
                                         .is_recv = 1,
                                         .total = total};
  }
  size_t es = xcclTypeSize(a->type);
  it->piece_elems = it->nst ? it->st[0].f->slot_size / es : a->count;
  if (it->piece_elems == 0) it->piece_elems = 1;
  it->base.finished = a->count == 0;
}
