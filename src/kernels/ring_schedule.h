/*
 * ring_schedule.h — the step schedules of the ring collectives, shared by
 * the host twin (host_ring.c) and, later, the CUDA kernels: pure functions of
 * (collective, ring size k, position r, root), no memory access.
 *
 * A loop of a ring collective is a fixed list of actions; each action may
 * receive a slot from the previous rank, combine it with a block of the
 * input, write a block of the output, and send a slot to the next rank.
 * Blocks are numbered 0..k-1 (ring positions); what a block is in memory is
 * the executor's business (see host_ring.c).
 *
 * all-reduce, 2k-1 actions, each rank sends 2(k-1) of k blocks per loop:
 *   j = 0            send               block r-1  (input)
 *   1 <= j <= k-2    recv-reduce-send   block r-1-j
 *   j = k-1          recv-reduce-output-send block r (final: avg divides here)
 *   k <= j <= 2k-3   recv-output-send   block r-(j-k+1)
 *   j = 2k-2         recv-output        block r+1
 * all-gather, k actions, sends k-1 blocks:
 *   j = 0            output-send        block r (this rank's input)
 *   1 <= j <= k-2    recv-output-send   block r-j
 *   j = k-1          recv-output        block r+1
 * reduce-scatter, k actions, sends k-1 blocks:
 *   j = 0            send               block r-1
 *   1 <= j <= k-2    recv-reduce-send   block r-1-j
 *   j = k-1          recv-reduce-output block r (final)
 * broadcast, a chain from the root along the ring, 1 action per loop:
 *   root: output-send; middle: recv-output-send; last (root-1): recv-output
 * reduce, a chain that ends at the root, 1 action per loop:
 *   first (root+1): send; middle: recv-reduce-send; root: recv-reduce-output (final)
 */
#ifndef XCCL_KERNELS_RING_SCHEDULE_H
#define XCCL_KERNELS_RING_SCHEDULE_H

#ifdef __CUDACC__
#define RING_HD __host__ __device__
#else
#define RING_HD
#endif

typedef enum {
  RING_COLL_ALLREDUCE = 0,
  RING_COLL_ALLGATHER,
  RING_COLL_REDUCESCATTER,
  RING_COLL_BROADCAST,
  RING_COLL_REDUCE,
  RING_COLL_NCOLLS
} ring_coll_t;

enum {
  RING_SEND = 1 << 0,   /* sends a slot to the next rank */
  RING_RECV = 1 << 1,   /* consumes a slot from the previous rank */
  RING_REDUCE = 1 << 2, /* combines the received slot with the input block */
  RING_OUTPUT = 1 << 3, /* writes the block to the output */
  RING_FINAL = 1 << 4,  /* the block's reduction completes here (avg divides) */
  RING_INPUT = 1 << 5   /* reads the input block (without RING_RECV: the source) */
};

static inline RING_HD int ring_mod(int a, int k) { return ((a % k) + k) % k; }

/* Actions per loop. k >= 2. */
static inline RING_HD int ring_nactions(ring_coll_t coll, int k) {
  switch (coll) {
    case RING_COLL_ALLREDUCE: return 2 * k - 1;
    case RING_COLL_ALLGATHER:
    case RING_COLL_REDUCESCATTER: return k;
    default: return 1;
  }
}

/* Flags of action j for position r, and the block it works on. */
static inline RING_HD int ring_action(ring_coll_t coll, int k, int r, int root, int j, int *block_p) {
  switch (coll) {
    case RING_COLL_ALLREDUCE:
      if (j == 0) return *block_p = ring_mod(r - 1, k), RING_INPUT | RING_SEND;
      if (j < k - 1) return *block_p = ring_mod(r - 1 - j, k), RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND;
      if (j == k - 1)
        return *block_p = r, RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT | RING_SEND;
      *block_p = ring_mod(r - (j - k + 1), k);
      return j < 2 * k - 2 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    case RING_COLL_ALLGATHER:
      if (j == 0) return *block_p = r, RING_INPUT | RING_OUTPUT | RING_SEND;
      *block_p = ring_mod(r - j, k);
      return j < k - 1 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    case RING_COLL_REDUCESCATTER:
      if (j == 0) return *block_p = ring_mod(r - 1, k), RING_INPUT | RING_SEND;
      if (j < k - 1) return *block_p = ring_mod(r - 1 - j, k), RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND;
      return *block_p = r, RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT;
    case RING_COLL_BROADCAST: {
      int d = ring_mod(r - root, k);
      *block_p = 0;
      if (d == 0) return RING_INPUT | RING_OUTPUT | RING_SEND;
      return d < k - 1 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    }
    case RING_COLL_REDUCE: {
      int d = ring_mod(r - root - 1, k);
      *block_p = 0;
      if (d == 0) return RING_INPUT | RING_SEND;
      return d < k - 1 ? (RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND)
                       : (RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT);
    }
    default: return *block_p = 0, 0;
  }
}

#endif
