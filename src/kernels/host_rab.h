/*
 * host_rab.h — Rabenseifner's all-reduce, the algorithm of mid-sized
 * buffers: a reduce-scatter by recursive halving, then an all-gather by
 * recursive doubling, so that a rank moves 2(p2-1)/p2 of the buffer (as
 * the ring does) in 2 log2(p2) exchanges (as against the ring's 2(k-1)).
 * Each half alone is the reduce-scatter (the halving) and the all-gather
 * (the doubling) of NCCL's semantics.
 *
 * Ranks. p2 is the largest power of two <= k and r = k - p2. The first 2r
 * ranks pair up: the odd one of each pair (2i+1) hands its input to its
 * even partner (2i) first, takes no other part, and gets its result back
 * from it at the end (the fold). The p2 others, numbered n = i for rank 2i
 * (i < r) and n = q - r for rank q >= 2r, run the halving and doubling
 * among themselves.
 *
 * Blocks. The buffer is p2 blocks; block b ends on the rank numbered b.
 * All-reduce: count/p2 elements each, the first count % p2 one longer.
 * Reduce-scatter and all-gather (count: one rank's share, the buffer k of
 * them in rank order): block b is the shares of the real ranks n = b stands
 * for, 2b and 2b+1 for b < r, b + r otherwise, so it starts at share
 * rab_real(b) and the halving leaves every share on its own rank or its
 * fold partner, in NCCL's order with no permutation. At level s (0 .. L-1,
 * L = log2 p2, h = p2 >> (s+1)) rank n exchanges with n ^ h: in the
 * reduce-scatter it sends the blocks b whose distance d = b ^ n lies in
 * [h, 2h) and reduces the partner's contribution into those in [0, h); in
 * the all-gather it sends [0, h) (now final) and receives [h, 2h). The last
 * reduce-scatter level finishes block n: xcclAvg divides there, once. Each
 * block's result is computed on one rank and copied to all the others, so
 * every rank ends with the same bits.
 *
 * The fold by collective: all-reduce, the odd rank's whole input in, the
 * whole result back; reduce-scatter, the whole input in, the odd rank's
 * share back; all-gather, the odd rank's share in, every share but its own
 * back. The reduce-scatter sums in working memory that follows the item
 * (host_rab_work_bytes: recvbuff holds one share) and copies the rank's
 * own share out as the last level finishes it; the all-gather first copies
 * the rank's input to its place in recvbuff, and works there.
 *
 * Pipelining. Every exchange is a stream of slot-sized pieces, each side
 * walking the blocks in one order both agree on: the reduce-scatter in
 * falling distance from the receiver, the all-gather (and the fold's
 * return) in rising distance from the sender. In those orders what level
 * s+1 sends is the first part of what level s reduces (and in the
 * all-gather, what a level sends is a prefix of what earlier levels made
 * final), so a level's piece goes out as soon as the pieces it comes from
 * are in: the levels overlap like the ring's hops instead of running one
 * after the other. A piece may span several blocks; no empty message is
 * ever sent (both sides skip a stream of no elements).
 */
#ifndef XCCL_KERNELS_HOST_RAB_H
#define XCCL_KERNELS_HOST_RAB_H

#include <stddef.h>

#include "host_engine.h"
#include "host_partners.h"
#include "kern_stream.h"

/* One direction of one exchange: the pieces sent to, or received from, one
 * partner, over the blocks base ^ (high | j') for j' in [0, width), walked
 * with j' = j (rising) or width - 1 - j (falling), less the elements at
 * walk positions [skip, skip + skip_len) (a fold partner's share, for the
 * reduce-scatter and all-gather). */
typedef struct {
  union {
    kern_stream_t io; /* f, step, peer (the partner), is_recv, total, done */
    struct {
      KERN_STREAM_FIELDS
    };
  };
  int kind;  /* what a piece does (host_rab.c) */
  int level; /* s, -1 for the fold and its return */
  int base, high, width, falling;
  size_t skip, skip_len;
  int blk; /* cursor: the j of the block under way, elements into it, and into the walk */
  size_t within, walked;
} rab_stream_t;

typedef struct {
  kern_item_t base;
  const partner_args_t *args;
  int p2, levels;
  int ag0;    /* the first all-gather stream (st[]) */
  int placed; /* all-gather: the input is in its place in recvbuff */
  /* Where element e of the buffer (count, or count * k shares) lives: in
   * the input, at in + (e - in_at) elements; in acc, the partial sums and
   * results, at acc + (e - acc_at); in out (reduce-scatter), this rank's
   * share, at out + (e - out_at). */
  const char *in;
  char *acc, *out;
  size_t in_at, acc_at, out_at;
  int newrank; /* n, -1 for a rank that folds into its partner */
  int fold;    /* 1: receives its partner's input and returns the result; -1: sends and gets; 0 */
  size_t piece_elems;
  int nst;
  rab_stream_t st[]; /* 4 per level (two per exchange), 2 for the fold: host_rab_item_bytes */
} rab_item_t;

/* The partners rank talks to on nranks ranks, written to peers (at most
 * 1 + log2 nranks); returns how many. Both directions are used with each. */
int host_rab_partners(int nranks, int rank, int *peers);

/* The bytes of a rab_item_t on nranks ranks (a multiple of 8). */
size_t host_rab_item_bytes(int nranks);

/* The working memory (a multiple of 8 bytes) a rab item for coll needs after
 * it on rank of nranks, count the schedule's count: the partial sums of a
 * reduce-scatter on a rank that halves (count * nranks elements), else 0. */
size_t host_rab_work_bytes(coll_kind_t coll, size_t count, xcclDataType_t type, int nranks, int rank);

/* Sets up it for one all-reduce, reduce-scatter or all-gather (a->coll) of
 * a (which, like the fifos, outlives it). it: host_rab_item_bytes(a->nranks)
 * + host_rab_work_bytes(a's) bytes, aligned as malloc's; the item uses the
 * memory after its first part as its working memory. */
void host_rab_item(rab_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane);

/* 1 if the next n elements of stream it->st[i] may move: what they are made
 * of is done (the rule rab_step applies before it looks at a fifo). Reads
 * only the streams' counters; for tools that replay the schedule (xccl-sim). */
int host_rab_stream_may(const rab_item_t *it, int i, size_t n);

#endif
