/*
 * ring_schedule.h — the step schedule of ring all-reduce, shared by the host
 * twin (host_ring_allreduce.c) and, later, the CUDA kernels: pure functions
 * of (nranks, position, step), no memory access.
 *
 * One loop of the ring moves nranks chunks; it has 2k-1 actions on k ranks:
 *   j = 0            send              chunk r-1  (from the input)
 *   1 <= j <= k-2    recv-reduce-send  chunk r-1-j
 *   j = k-1          recv-reduce-copy-send chunk r (now final: to the output)
 *   k <= j <= 2k-3   recv-copy-send    chunk r-(j-k+1)
 *   j = 2k-2         recv-copy         chunk r+1
 * so each rank sends 2(k-1) chunks of the k per loop: 2(k-1)/k of the buffer.
 */
#ifndef XCCL_KERNELS_RING_SCHEDULE_H
#define XCCL_KERNELS_RING_SCHEDULE_H

#ifdef __CUDACC__
#define RING_HD __host__ __device__
#else
#define RING_HD
#endif

enum {
  RING_SEND = 1 << 0,    /* sends a slot to the next rank */
  RING_RECV = 1 << 1,    /* consumes a slot from the previous rank */
  RING_REDUCE = 1 << 2,  /* combines the received slot with the input */
  RING_OUTPUT = 1 << 3,  /* writes the chunk to the output buffer */
  RING_FINAL = 1 << 4    /* the chunk's reduction completes here (avg divides) */
};

static inline RING_HD int ring_mod(int a, int k) { return ((a % k) + k) % k; }

static inline RING_HD int ring_allreduce_nactions(int k) { return 2 * k - 1; }

/* Flags of action j, and the chunk (0..k-1) it works on, for position r. */
static inline RING_HD int ring_allreduce_action(int k, int r, int j, int *chunk_p) {
  if (j == 0) {
    *chunk_p = ring_mod(r - 1, k);
    return RING_SEND;
  }
  if (j < k - 1) {
    *chunk_p = ring_mod(r - 1 - j, k);
    return RING_RECV | RING_REDUCE | RING_SEND;
  }
  if (j == k - 1) {
    *chunk_p = r;
    return RING_RECV | RING_REDUCE | RING_FINAL | RING_OUTPUT | RING_SEND;
  }
  *chunk_p = ring_mod(r - (j - k + 1), k);
  return j < 2 * k - 2 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
}

#endif
