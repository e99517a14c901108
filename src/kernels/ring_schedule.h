/*
 * ring_schedule.h — the step schedules of the ring collectives, shared by
 * the host twin (host_ring.c) and the CUDA kernels (dev_coll.cu): pure
 * functions of (collective, ring size k, position r, root) and of the
 * channel's geometry, no memory access. Everything here compiles as host C
 * and as CUDA device code (XCCL_HD, hd.h).
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

#include <stddef.h>
#include <stdint.h>

#include "hd.h"

typedef enum {
  COLL_ALLREDUCE = 0,
  COLL_ALLGATHER,
  COLL_REDUCESCATTER,
  COLL_BROADCAST,
  COLL_REDUCE,
  COLL_ALLTOALL, /* no ring schedule: all-to-all's algorithms are pairwise and bruck (algo.h) */
  COLL_NKINDS
} coll_kind_t;

enum {
  RING_SEND = 1 << 0,   /* sends a slot to the next rank */
  RING_RECV = 1 << 1,   /* consumes a slot from the previous rank */
  RING_REDUCE = 1 << 2, /* combines the received slot with the input block */
  RING_OUTPUT = 1 << 3, /* writes the block to the output */
  RING_FINAL = 1 << 4,  /* the block's reduction completes here (avg divides) */
  RING_INPUT = 1 << 5   /* reads the input block (without RING_RECV: the source) */
};

static inline XCCL_HD int ring_mod(int a, int k) { return ((a % k) + k) % k; }

/* Actions per loop. k >= 2. */
static inline XCCL_HD int ring_nactions(coll_kind_t coll, int k) {
  switch (coll) {
    case COLL_ALLREDUCE: return 2 * k - 1;
    case COLL_ALLGATHER:
    case COLL_REDUCESCATTER: return k;
    default: return 1;
  }
}

/* Flags of action j for position r, and the block it works on. */
static inline XCCL_HD int ring_action(coll_kind_t coll, int k, int r, int root, int j, int *block_p) {
  switch (coll) {
    case COLL_ALLREDUCE:
      if (j == 0) return *block_p = ring_mod(r - 1, k), RING_INPUT | RING_SEND;
      if (j < k - 1) return *block_p = ring_mod(r - 1 - j, k), RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND;
      if (j == k - 1)
        return *block_p = r, RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT | RING_SEND;
      *block_p = ring_mod(r - (j - k + 1), k);
      return j < 2 * k - 2 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    case COLL_ALLGATHER:
      if (j == 0) return *block_p = r, RING_INPUT | RING_OUTPUT | RING_SEND;
      *block_p = ring_mod(r - j, k);
      return j < k - 1 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    case COLL_REDUCESCATTER:
      if (j == 0) return *block_p = ring_mod(r - 1, k), RING_INPUT | RING_SEND;
      if (j < k - 1) return *block_p = ring_mod(r - 1 - j, k), RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND;
      return *block_p = r, RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT;
    case COLL_BROADCAST: {
      int d = ring_mod(r - root, k);
      *block_p = 0;
      if (d == 0) return RING_INPUT | RING_OUTPUT | RING_SEND;
      return d < k - 1 ? (RING_RECV | RING_OUTPUT | RING_SEND) : (RING_RECV | RING_OUTPUT);
    }
    case COLL_REDUCE: {
      int d = ring_mod(r - root - 1, k);
      *block_p = 0;
      if (d == 0) return RING_INPUT | RING_SEND;
      return d < k - 1 ? (RING_RECV | RING_INPUT | RING_REDUCE | RING_SEND)
                       : (RING_RECV | RING_INPUT | RING_REDUCE | RING_FINAL | RING_OUTPUT);
    }
    default: return *block_p = 0, 0;
  }
}

/* ---- geometry: which elements a channel, a loop and a block cover ---------
 *
 * Memory of block b at loop position o (channel c covers [cb, cb + cl) of
 * the count): all-reduce splits each loop into k blocks of `per` elements at
 * cb + o + b*per; all-gather reads its own piece at cb + o and writes block b
 * at ring[b]*count + cb + o; reduce-scatter the other way round; broadcast
 * and reduce move cb + o. A loop's blocks fit one slot each. Every rank
 * computes the same numbers, so the sizes of the messages match.
 */

#define RING_ALIGN_BYTES 64 /* block boundaries fall on cache lines */
/* A collective is split over one channel per RING_BYTES_PER_CHANNEL bytes
 * (at least one, at most the communicator's channels): small messages gain
 * nothing from more rings, only more hops to wait on. */
#define RING_BYTES_PER_CHANNEL ((size_t)128 * 1024)

static inline XCCL_HD size_t ring_align_elems(size_t esize) {
  return RING_ALIGN_BYTES / esize ? RING_ALIGN_BYTES / esize : 1;
}

/* Channels a collective of `bytes` uses on a communicator with `nchannels`. */
static inline XCCL_HD int ring_nchannels_for(size_t bytes, int nchannels) {
  size_t want = bytes / RING_BYTES_PER_CHANNEL;
  return want < 1 ? 1 : (want < (size_t)nchannels ? (int)want : nchannels);
}

/* Elements of channel c for count elements over nchannels: [*off_p, *off_p + *len_p). */
static inline XCCL_HD void ring_sched_channel_range(size_t count, size_t esize, int nchannels, int c, size_t *off_p,
                                                    size_t *len_p) {
  size_t align = ring_align_elems(esize);
  size_t per = (count + (size_t)nchannels - 1) / (size_t)nchannels;
  per = (per + align - 1) / align * align;
  size_t off = per * (size_t)c;
  *off_p = off < count ? off : count;
  *len_p = off < count ? (count - off < per ? count - off : per) : 0;
}

/* One channel of one ring collective, walked action by action. The fields
 * are the iterator's; executors read loop, action and done for messages. */
typedef struct {
  coll_kind_t coll;
  int k, r, root;         /* ring size, this rank's position, the root's position */
  size_t count;           /* the schedule's count (per rank block for all-gather and reduce-scatter) */
  size_t elem_base, elems; /* the channel's elements */
  size_t align, chunk;    /* elements per cache line, per slot (a multiple of align) */
  size_t loop_off;        /* elements of the channel done by earlier loops */
  size_t per;             /* elements per block in the current loop */
  int action;             /* index in the loop, 0 .. ring_nactions - 1 */
  uint64_t loop;
  int done;
} ring_iter_t;

static inline XCCL_HD void ring_iter_start_loop(ring_iter_t *it) {
  size_t rem = it->elems - it->loop_off, per = rem;
  if (it->coll == COLL_ALLREDUCE) { /* the loop's elements are split k ways */
    per = (rem + (size_t)it->k - 1) / (size_t)it->k;
    per = (per + it->align - 1) / it->align * it->align;
  }
  it->per = per < it->chunk ? per : it->chunk;
  it->action = 0;
}

/* Channel c of nchannels, with slots of slot_size bytes. Done at once when
 * the channel has no elements. */
static inline XCCL_HD void ring_iter_init(ring_iter_t *it, coll_kind_t coll, int k, int r, int root, size_t count,
                                          size_t esize, size_t slot_size, int nchannels, int c) {
  it->coll = coll;
  it->k = k;
  it->r = r;
  it->root = root;
  it->count = count;
  it->align = ring_align_elems(esize);
  it->chunk = slot_size / esize / it->align * it->align;
  ring_sched_channel_range(count, esize, nchannels, c, &it->elem_base, &it->elems);
  it->loop_off = 0;
  it->loop = 0;
  it->per = 0;
  it->action = 0;
  it->done = it->elems == 0;
  if (!it->done) ring_iter_start_loop(it);
}

/*
 * The current action: returns its flags and sets the element offsets of its
 * block in the input and in the output, and its length (possibly 0: the
 * last blocks of a short all-reduce loop are empty, and still sent). ring maps
 * ring positions to ranks (whose block of all-gather and reduce-scatter it
 * is); NULL: the identity.
 */
static inline XCCL_HD int ring_iter_action(const ring_iter_t *it, const int *ring, size_t *in_p, size_t *out_p,
                                           size_t *n_p) {
  int b;
  int flags = ring_action(it->coll, it->k, it->r, it->root, it->action, &b);
  size_t o = it->loop_off;
  if (it->coll == COLL_ALLREDUCE) {
    size_t first = o + (size_t)b * it->per;
    first = first < it->elems ? first : it->elems;
    *n_p = it->elems - first < it->per ? it->elems - first : it->per;
    *in_p = *out_p = it->elem_base + first;
    return flags;
  }
  size_t blk = (size_t)(ring ? ring[b] : b) * it->count;
  *n_p = it->elems - o < it->per ? it->elems - o : it->per;
  *in_p = *out_p = it->elem_base + o;
  if (it->coll == COLL_ALLGATHER) *out_p += blk;
  if (it->coll == COLL_REDUCESCATTER) *in_p += blk;
  return flags;
}

/* Moves to the next action; sets done after the last. */
static inline XCCL_HD void ring_iter_next(ring_iter_t *it) {
  if (++it->action < ring_nactions(it->coll, it->k)) return;
  it->loop_off += it->per * (it->coll == COLL_ALLREDUCE ? (size_t)it->k : 1);
  it->loop++;
  if (it->loop_off >= it->elems)
    it->done = 1;
  else
    ring_iter_start_loop(it);
}

/* Messages the channel sends and receives over the whole collective: what
 * it moves its connections' step counters by. */
static inline XCCL_HD void ring_iter_count_steps(const ring_iter_t *start, uint64_t *sends_p, uint64_t *recvs_p) {
  ring_iter_t it = *start;
  uint64_t loops = 0, sends = 0, recvs = 0;
  while (!it.done) { /* the loops, without walking their actions */
    it.loop_off += it.per * (it.coll == COLL_ALLREDUCE ? (size_t)it.k : 1);
    loops++;
    if (it.loop_off >= it.elems)
      it.done = 1;
    else
      ring_iter_start_loop(&it);
  }
  for (int j = 0; j < ring_nactions(start->coll, start->k); j++) {
    int b;
    int flags = ring_action(start->coll, start->k, start->r, start->root, j, &b);
    sends += (flags & RING_SEND) != 0;
    recvs += (flags & RING_RECV) != 0;
  }
  *sends_p = loops * sends;
  *recvs_p = loops * recvs;
}

/* ---- point to point: a buffer cut into slots ------------------------------ */

/* Messages a send or receive of `bytes` takes with slots of slot_size bytes
 * (none for 0 bytes), and the size of message i. */
static inline XCCL_HD uint64_t p2p_nsteps(size_t bytes, size_t slot_size) {
  return (uint64_t)((bytes + slot_size - 1) / slot_size);
}

static inline XCCL_HD size_t p2p_step_bytes(size_t bytes, size_t slot_size, uint64_t i) {
  size_t off = (size_t)i * slot_size;
  return bytes - off < slot_size ? bytes - off : slot_size;
}

#endif
