/*
 * test_simulate.c — the price behind xcclGroupSimulateEnd (cost.h's
 * cost_estimate_s): estimates grow with the bytes and the ranks, differ by
 * algorithm the way their shapes say (recursive doubling wins small
 * all-reduces, the ring large ones), shared memory is cheaper than the
 * network, and the tuner's choice is the cheapest estimate.
 */
#include <math.h>

#include "test_util.h"
#include "cost.h"
#include "tuning.h"

#define SLOT (512u << 10)

static const coll_kind_t colls[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL};

int main(void) {
  /* One site per link of the table: every rank on one host over shared
   * memory, direct and line allowed; and ranks spread over the network. */
  const algo_site_t sites[TUNING_NLINKS] = {
      [TUNING_LINK_SHM] = {.link[ALGO_LINK_LOCAL] = tuning_links[TUNING_LINK_SHM],
                           .direct = 1,
                           .line = 1,
                           .zero_copy = 1,
                           .zero_agreed = 1},
      [TUNING_LINK_NET] = {.flat = ALGO_LINK_NET, .link[ALGO_LINK_NET] = tuning_links[TUNING_LINK_NET]},
  };
  const algo_site_t *shm = &sites[TUNING_LINK_SHM], *net = &sites[TUNING_LINK_NET];
  for (int l = 0; l < TUNING_NLINKS; l++)
    CHECK(tuning_links[l].alpha_s > 0 && tuning_links[l].beta_bps > 0, "link %d has no constants", l);
  CHECK(tuning_links[TUNING_LINK_SHM].alpha_s < tuning_links[TUNING_LINK_NET].alpha_s &&
            tuning_links[TUNING_LINK_SHM].beta_bps > tuning_links[TUNING_LINK_NET].beta_bps,
        "shared memory is not faster than the network");

  /* Monotone in bytes, for every algorithm and collective it serves, on
   * each link; strictly growing over a factor of 4, up to where it can no
   * longer run (line past 12 bytes; direct and line on the network). */
  for (int a = 0; a < ALGO_COUNT; a++)
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
      if (!algo_serves((algo_t)a, colls[c])) continue;
      for (int l = 0; l < TUNING_NLINKS; l++)
        for (int k = 2; k <= 16; k++) {
          double prev = 0;
          for (size_t b = 8; b <= (64u << 20); b *= 4) {
            double t = cost_estimate_s((algo_t)a, colls[c], b, k, SLOT, &sites[l]);
            if (isinf(t)) break;
            CHECK(t > prev, "%s coll %d link %d k %d: %zu bytes %g s, not above %g", algo_name((algo_t)a),
                  (int)colls[c], l, k, b, t, prev);
            prev = t;
          }
        }
    }

  /* Growing with the ranks (at a fixed size per rank's schedule), the ring
   * (all-to-all: pairwise, the ring has none). */
  for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++)
    for (int k = 2; k < 16; k++) {
      algo_t a = colls[c] == COLL_ALLTOALL ? ALGO_PAIRWISE : ALGO_RING;
      double t = cost_estimate_s(a, colls[c], 1 << 20, k, SLOT, net);
      double u = cost_estimate_s(a, colls[c], 1 << 20, k + 1, SLOT, net);
      CHECK(u > t, "%s coll %d: %d ranks %g s, %d ranks %g s", algo_name(a), (int)colls[c], k, t, k + 1, u);
    }
  double rd4 = cost_estimate_s(ALGO_RD, COLL_ALLREDUCE, 4096, 4, SLOT, net);
  double rd8 = cost_estimate_s(ALGO_RD, COLL_ALLREDUCE, 4096, 8, SLOT, net);
  CHECK(rd8 > rd4, "rd: 8 ranks %g s, 4 ranks %g s", rd8, rd4);

  /* Ring and recursive doubling differ: few large steps beat many small
   * ones for small all-reduces, and the ring's bandwidth wins large ones. */
  for (int l = 0; l < TUNING_NLINKS; l++) {
    double ring_s = cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 64, 8, SLOT, &sites[l]);
    double rd_s = cost_estimate_s(ALGO_RD, COLL_ALLREDUCE, 64, 8, SLOT, &sites[l]);
    double ring_l = cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 64u << 20, 8, SLOT, &sites[l]);
    double rd_l = cost_estimate_s(ALGO_RD, COLL_ALLREDUCE, 64u << 20, 8, SLOT, &sites[l]);
    CHECK(rd_s < ring_s, "link %d, 64 B on 8 ranks: rd %g s not below ring %g s", l, rd_s, ring_s);
    CHECK(ring_l < rd_l, "link %d, 64 MiB on 8 ranks: ring %g s not below rd %g s", l, ring_l, rd_l);
    /* The ring's 64 B all-reduce on 8 ranks: 14 steps, essentially latency. */
    CHECK(fabs(ring_s - 14 * tuning_links[l].alpha_s) < 0.01 * ring_s, "ring 64 B: %g s", ring_s);
  }

  /* Many ranks: the tree's small all-reduce is latency over 2 ceil(log2 k)
   * levels, far below the ring's 2(k-1) steps; large, the ring's bandwidth. */
  for (int k = 64; k <= 65536; k *= 16) {
    int depth = 0;
    while ((1 << depth) < k) depth++;
    double tree_s = cost_estimate_s(ALGO_TREE, COLL_ALLREDUCE, 8, k, SLOT, net);
    double ring_s = cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 8, k, SLOT, net);
    CHECK(fabs(tree_s - 2 * depth * tuning_links[TUNING_LINK_NET].alpha_s) < 0.01 * tree_s, "tree 8 B on %d: %g s",
          k, tree_s);
    CHECK(tree_s * 10 < ring_s, "8 B on %d ranks: tree %g s not far below ring %g s", k, tree_s, ring_s);
  }
  CHECK(cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 256u << 20, 8, SLOT, net) <
            cost_estimate_s(ALGO_TREE, COLL_ALLREDUCE, 256u << 20, 8, SLOT, net),
        "256 MiB on 8 ranks: the ring should beat the tree");

  /* Shared memory below the network, everywhere. */
  for (size_t b = 8; b <= (64u << 20); b *= 16)
    CHECK(cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, b, 4, SLOT, shm) <
              cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, b, 4, SLOT, net),
          "%zu bytes: shm not below net", b);

  /* On either site the tuner's pick is the cheapest estimate (the same
   * price: test_cost.c checks it end to end). */
  int none[COLL_NKINDS] = {-1, -1, -1, -1, -1, -1};
  for (int l = 0; l < TUNING_NLINKS; l++)
    for (int k = 2; k <= 16; k++)
      for (size_t b = 8; b <= (64u << 20); b *= 8) {
        algo_t pick = tuning_pick(none, COLL_ALLREDUCE, b, k, SLOT, &sites[l]), best = ALGO_RING;
        double best_s = HUGE_VAL;
        for (int a = 0; a < ALGO_COUNT; a++) {
          if (!algo_serves((algo_t)a, COLL_ALLREDUCE)) continue;
          double t = cost_estimate_s((algo_t)a, COLL_ALLREDUCE, b, k, SLOT, &sites[l]);
          if (t < best_s) best = (algo_t)a, best_s = t;
        }
        CHECK(pick == best, "link %d, k %d, %zu bytes: tuner picks %s, the cheapest estimate is %s", l, k, b,
              algo_name(pick), algo_name(best));
      }

  /* One rank: a copy, growing with the bytes; p2p: latency plus bytes. */
  CHECK(cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 1 << 20, 1, SLOT, net) <
            cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, 1 << 22, 1, SLOT, net),
        "one rank");
  CHECK(cost_p2p_s(8, ALGO_LINK_NET, net) >= tuning_links[TUNING_LINK_NET].alpha_s, "p2p latency");
  CHECK(cost_p2p_s(1 << 20, ALGO_LINK_LOCAL, shm) < cost_p2p_s(1 << 22, ALGO_LINK_LOCAL, shm), "p2p");
  return test_finish("simulate");
}
