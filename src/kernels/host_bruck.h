/*
 * host_bruck.h — Bruck's all-to-all, the algorithm of small blocks on many
 * ranks: ceil(log2 k) exchanges instead of the k - 1 of sending every block
 * straight to its rank, at the price of each block travelling up to
 * log2 k hops (about k/2 blocks per exchange).
 *
 * Blocks are numbered by how far they go: block i of rank q is what q sends
 * to rank (q + i) mod k. In round j (0 .. R-1, R = ceil(log2 k)) every rank
 * sends the blocks whose i has bit j set to rank q + 2^j and receives the
 * same-numbered blocks from rank q - 2^j, so that a block has gone i ranks
 * on after the round of i's highest bit, and block i on rank q then holds
 * what rank q - i sent to q. Both sides walk a round's blocks in rising i.
 *
 * Where a block is: before the round of its lowest bit, in sendbuff (it has
 * not moved); between its lowest and highest bits, in the working memory
 * after the item (k blocks, indexed by i); after the round of its highest
 * bit, in recvbuff at the rank it came from. A round's pieces may go once
 * every earlier round is in (a block sent in round j was last written in an
 * earlier round), and a round's receive may write a block once the round's
 * send has read it. Block 0 (a rank's own) is copied at the start.
 */
#ifndef XCCL_KERNELS_HOST_BRUCK_H
#define XCCL_KERNELS_HOST_BRUCK_H

#include <stddef.h>

#include "host_engine.h"
#include "host_partners.h"
#include "kern_stream.h"

/* One direction of one round: the pieces sent to, or received from, one
 * partner over the blocks whose number has bit `round` set. */
typedef struct {
  union {
    kern_stream_t io;
    struct {
      KERN_STREAM_FIELDS
    };
  };
  int round;
} bruck_stream_t;

typedef struct {
  kern_item_t base;
  const partner_args_t *args; /* count: one block's elements; coll: COLL_ALLTOALL */
  int rounds;
  int placed; /* the own block is in recvbuff */
  char *work; /* k blocks (host_bruck_work_bytes) */
  size_t piece_elems;
  int nst;
  bruck_stream_t st[]; /* 2 per round, send then receive: host_bruck_item_bytes */
} bruck_item_t;

/* The rounds on nranks ranks: ceil(log2 nranks). */
int host_bruck_rounds(int nranks);

/* The ranks rank sends to (send[j] = rank + 2^j) and receives from
 * (recv[j] = rank - 2^j) in each round, mod nranks; returns the rounds. */
int host_bruck_partners(int nranks, int rank, int *send, int *recv);

/* Blocks whose number in [1, nranks) has bit `round` set: what one round
 * sends and receives. */
size_t host_bruck_round_blocks(int nranks, int round);

/* The bytes of a bruck_item_t on nranks ranks (a multiple of 8). */
size_t host_bruck_item_bytes(int nranks);

/* Its working memory: nranks blocks of count elements (a multiple of 8
 * bytes). */
size_t host_bruck_work_bytes(size_t count, xcclDataType_t type, int nranks);

/* Sets up it for one all-to-all of a (which, like the fifos, outlives it).
 * it: host_bruck_item_bytes + host_bruck_work_bytes bytes, aligned as
 * malloc's; the memory after the item is its working memory. */
void host_bruck_item(bruck_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane);

/* 1 if the next n elements of stream it->st[i] may move (the rule
 * bruck_step applies before it looks at a fifo). Reads only the streams'
 * counters; for tools that replay the schedule (xccl-sim). */
int host_bruck_stream_may(const bruck_item_t *it, int i, size_t n);

#endif
