/*
 * algo_rd.c — recursive doubling (host_rd.h): all-reduce in log2(k)
 * exchanges with partners.
 */
#include <math.h>

#include "algo.h"

static int log2_floor(int k) {
  int l = 0;
  while ((2 << l) <= k) l++;
  return l;
}

/* For k ranks, B bytes and slots of S bytes: `steps` = log2(p2) (+2 if k
 * is not a power of two) exchanges of the whole buffer, one slot-sized
 * piece after the other: ceil(B/S) steps ALPHA + steps B / BETA. */
static double rd_cost(ring_coll_t coll, size_t bytes, int nranks, size_t slot) {
  (void)coll;
  double b = (double)bytes, s = (double)(slot ? slot : 1);
  double pieces = b > 0 ? ceil(b / s) : 1;
  int steps = log2_floor(nranks) + ((nranks & (nranks - 1)) ? 2 : 0);
  return pieces * steps * ALGO_ALPHA_S + steps * b / ALGO_BETA_BPS;
}

const algo_desc_t algo_rd = {
    .name = "rd",
    .colls = 1u << RING_COLL_ALLREDUCE,
    .cost = rd_cost,
};
