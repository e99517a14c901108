/*
 * algo_ring.c — the ring algorithm: every collective, on the communicator's
 * ring channels (host_ring.h).
 */
#include <math.h>

#include "algo.h"

/*
 * For k ranks, B bytes and slots of S bytes (ring_schedule.h's steps):
 *   all-reduce: 2(k-1) steps of B/k, pipelined over ceil(B/(kS)) loops:
 *     (2(k-1) + loops - 1) ALPHA + 2(k-1)/k B / BETA
 *   all-gather, reduce-scatter (B: one rank's block): k-1 steps per loop,
 *     ceil(B/S) loops: (k-1 + loops - 1) ALPHA + (k-1) B / BETA
 *   broadcast, reduce: a chain of k-1 hops, ceil(B/S) pieces:
 *     (k-1 + loops - 1) ALPHA + B / BETA
 * Only all-reduce has another algorithm to compare with today.
 */
static double ring_cost(ring_coll_t coll, size_t bytes, int nranks, size_t slot) {
  double k = nranks, b = (double)bytes, s = (double)(slot ? slot : 1);
  if (coll == RING_COLL_ALLREDUCE) {
    double loops = b > 0 ? ceil(b / (k * s)) : 1;
    return (2 * (k - 1) + loops - 1) * ALGO_ALPHA_S + 2 * (k - 1) / k * b / ALGO_BETA_BPS;
  }
  double loops = b > 0 ? ceil(b / s) : 1;
  int gathers = coll == RING_COLL_ALLGATHER || coll == RING_COLL_REDUCESCATTER;
  return (k - 1 + loops - 1) * ALGO_ALPHA_S + (gathers ? k - 1 : 1) * b / ALGO_BETA_BPS;
}

const algo_desc_t algo_ring = {
    .name = "ring",
    .colls = (1u << RING_COLL_NCOLLS) - 1,
    .cost = ring_cost,
};
