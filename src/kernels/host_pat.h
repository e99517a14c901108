/*
 * host_pat.h — PAT (parallel aggregated trees): all-gather and
 * reduce-scatter in ceil(log2 k) steps that move the ring's bytes, (k-1)
 * shares per rank, with working memory bounded whatever the size.
 *
 * Every rank's share travels a binomial tree of its own, the k trees being
 * one tree shifted by rank, and the trees' edges of one step are
 * aggregated into one stream between two ranks. Dimension s joins rank q
 * to q + 2^s: each rank sends to q + 2^s and receives from q - 2^s (mod k),
 * the partners of Bruck's rounds (host_bruck.h). Offsets say where a share
 * is relative to a rank; dimension s moves the offsets whose lowest set bit
 * is s, n_s = host_pat_blocks(k, s) of them:
 *   O_s = { 2^s + m 2^(s+1) : m < n_s }   ("odd": lowest bit s)
 *   E_s = { m 2^(s+1)       : m < n_s }   (E_s + 2^s = O_s)
 * and every offset in [1, k) lies in exactly one O_s, so a rank sends and
 * receives k-1 shares in all.
 *
 * All-gather, dimensions from the highest down: offset o on rank q is rank
 * q - o's share. Dimension s sends E_s (offset 0, my share, and what higher
 * dimensions brought) to q + 2^s, where each lands 2^s further, in O_s;
 * so the far partners carry one share and the nearest k/2. Every share is
 * read from and written to its place in recvbuff: no working memory.
 *
 * Reduce-scatter, dimensions from 0 up, the same trees with the edges
 * reversed: offset o on rank q holds a partial sum for rank q + o.
 * Dimension s sends O_s to q + 2^s, where each is reduced into its offset
 * less 2^s, in E_s; offset 0 is the result, written to recvbuff. Partial
 * sums wait in accumulators, one per even offset, until the dimension of
 * their lowest bit sends them. To keep that memory bounded the shares are
 * cut into chunks of `width` elements (columns): the whole schedule runs
 * on chunk 0's columns of every share, then chunk 1's..., each accumulator
 * holding one chunk's width.
 *
 * Streams: one per dimension and direction, walking chunk by chunk, in
 * each chunk its offsets rising, in each offset the chunk's columns; a
 * piece never spans two chunks (host_pat_next). Rules (host_pat_stream_may):
 *   all-gather send s: what the receives of dimensions above s put in
 *     recvbuff up to the piece's last offset and column;
 *   reduce-scatter send s: what every receive below s reduced up to there;
 *   reduce-scatter receive j: receive j-1 reduced up to there first (the
 *     sum runs input, dimension 0, 1, ... in that order, and receive 0
 *     starts each accumulator), and receive 0 of chunk c writes an
 *     accumulator only once its send of chunk c-1 has read it.
 * Every rule looks at lower dimensions (reduce-scatter) or higher ones
 * (all-gather) in the same chunk, or at the chunk before, so no stream
 * waits on itself.
 */
#ifndef XCCL_KERNELS_HOST_PAT_H
#define XCCL_KERNELS_HOST_PAT_H

#include <stddef.h>

#include "host_engine.h"
#include "host_partners.h"
#include "kern_stream.h"

/* The most bytes of accumulators a reduce-scatter keeps (but one element
 * per accumulator where they do not fit): larger shares run in chunks. */
#define PAT_WORK_BYTES ((size_t)1 << 20)

/* One direction of one dimension. */
typedef struct {
  union {
    kern_stream_t io;
    struct {
      KERN_STREAM_FIELDS
    };
  };
  int dim;
  int odd;     /* walks O_dim (else E_dim) */
  size_t nblk; /* offsets per chunk: n_dim */
} pat_stream_t;

typedef struct {
  kern_item_t base;
  const partner_args_t *args; /* count: one share's elements; coll: COLL_ALLGATHER or COLL_REDUCESCATTER */
  int dims;
  int placed;        /* all-gather: my share is in recvbuff; one rank: the copy is done */
  size_t width;      /* columns per chunk */
  size_t chunks;     /* ceil(count / width) */
  char *acc;         /* reduce-scatter: an accumulator of width elements per even offset in [2, k) */
  size_t piece_elems;
  int nst;
  pat_stream_t st[]; /* 2 per dimension, send then receive, in the order the dimensions run */
} pat_item_t;

/* The dimensions on nranks ranks: ceil(log2 nranks). */
int host_pat_dims(int nranks);

/* n_s: offsets in [1, nranks) whose lowest set bit is dim, what dimension
 * dim moves per chunk column. */
size_t host_pat_blocks(int nranks, int dim);

/* Ranks rank sends to (send[s] = rank + 2^s) and receives from (recv[s] =
 * rank - 2^s) per dimension, mod nranks; returns the dimensions. */
int host_pat_partners(int nranks, int rank, int *send, int *recv);

/* Columns per chunk of a collective of count elements of esize bytes on
 * nranks: count for the all-gather; the reduce-scatter's accumulators take
 * at most max(work_cap, one element each). */
size_t host_pat_width(coll_kind_t coll, size_t count, size_t esize, int nranks, size_t work_cap);

/* The bytes of a pat_item_t on nranks ranks (a multiple of 8). */
size_t host_pat_item_bytes(int nranks);

/* Its working memory for coll of count elements of type on nranks: the
 * reduce-scatter's accumulators (a multiple of 8; 0 for the all-gather). */
size_t host_pat_work_bytes(coll_kind_t coll, size_t count, xcclDataType_t type, int nranks, size_t work_cap);

/* Sets up it for one all-gather or reduce-scatter of a (which, like the
 * fifos, outlives it). it: host_pat_item_bytes + host_pat_work_bytes bytes
 * for the same work_cap, aligned as malloc's; the memory after the item is
 * its working memory. */
void host_pat_item(pat_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane, size_t work_cap);

/* Elements of stream it->st[i]'s next piece: at most a slot, never past
 * its chunk. For tools that replay the schedule (xccl-sim), as the kernel
 * cuts it. */
size_t host_pat_next(const pat_item_t *it, int i);

/* 1 if the next n elements of stream it->st[i] may move (the rule the
 * kernel applies before it looks at a fifo). Reads only the streams'
 * counters; for tools that replay the schedule. */
int host_pat_stream_may(const pat_item_t *it, int i, size_t n);

#endif
