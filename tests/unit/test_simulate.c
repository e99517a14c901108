/*
 * test_simulate.c — the cost model behind xcclGroupSimulateEnd
 * (tuning_estimate_s): estimates grow with the bytes and the ranks, differ
 * by algorithm the way their shapes say (recursive doubling wins small
 * all-reduces, the ring large ones), shared memory is cheaper than the
 * network, and with one link's constants the model agrees with the tuner's
 * own choice.
 */
#include <math.h>

#include "test_util.h"
#include "tuning.h"

#define SLOT (512u << 10)

static const coll_kind_t colls[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL};

int main(void) {
  for (int l = 0; l < TUNING_NLINKS; l++)
    CHECK(tuning_links[l].alpha_s > 0 && tuning_links[l].beta_bps > 0, "link %d has no constants", l);
  CHECK(tuning_links[TUNING_LINK_SHM].alpha_s < tuning_links[TUNING_LINK_NET].alpha_s &&
            tuning_links[TUNING_LINK_SHM].beta_bps > tuning_links[TUNING_LINK_NET].beta_bps,
        "shared memory is not faster than the network");

  /* Monotone in bytes, for every algorithm and collective it serves, on
   * each link; strictly growing over a factor of 4. */
  for (int a = 0; a < ALGO_COUNT; a++)
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
      if (!algo_serves((algo_t)a, colls[c])) continue;
      for (int l = 0; l < TUNING_NLINKS; l++)
        for (int k = 2; k <= 16; k++) {
          double prev = 0;
          for (size_t b = 8; b <= (64u << 20); b *= 4) {
            double t = tuning_estimate_s((algo_t)a, colls[c], b, k, SLOT, (tuning_link_t)l);
            CHECK(t > prev, "%s coll %d link %d k %d: %zu bytes %g s, not above %g", algo_name((algo_t)a),
                  (int)colls[c], l, k, b, t, prev);
            prev = t;
          }
        }
    }

  /* Growing with the ranks (at a fixed size per rank's schedule). */
  for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++)
    for (int k = 2; k < 16; k++) {
      double t = tuning_estimate_s(ALGO_RING, colls[c], 1 << 20, k, SLOT, TUNING_LINK_NET);
      double u = tuning_estimate_s(ALGO_RING, colls[c], 1 << 20, k + 1, SLOT, TUNING_LINK_NET);
      CHECK(u > t, "ring coll %d: %d ranks %g s, %d ranks %g s", (int)colls[c], k, t, k + 1, u);
    }
  double rd4 = tuning_estimate_s(ALGO_RD, COLL_ALLREDUCE, 4096, 4, SLOT, TUNING_LINK_NET);
  double rd8 = tuning_estimate_s(ALGO_RD, COLL_ALLREDUCE, 4096, 8, SLOT, TUNING_LINK_NET);
  CHECK(rd8 > rd4, "rd: 8 ranks %g s, 4 ranks %g s", rd8, rd4);

  /* Ring and recursive doubling differ: few large steps beat many small
   * ones for small all-reduces, and the ring's bandwidth wins large ones. */
  for (int l = 0; l < TUNING_NLINKS; l++) {
    double ring_s = tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 64, 8, SLOT, (tuning_link_t)l);
    double rd_s = tuning_estimate_s(ALGO_RD, COLL_ALLREDUCE, 64, 8, SLOT, (tuning_link_t)l);
    double ring_l = tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 64u << 20, 8, SLOT, (tuning_link_t)l);
    double rd_l = tuning_estimate_s(ALGO_RD, COLL_ALLREDUCE, 64u << 20, 8, SLOT, (tuning_link_t)l);
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
    double tree_s = tuning_estimate_s(ALGO_TREE, COLL_ALLREDUCE, 8, k, SLOT, TUNING_LINK_NET);
    double ring_s = tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 8, k, SLOT, TUNING_LINK_NET);
    CHECK(fabs(tree_s - 2 * depth * tuning_links[TUNING_LINK_NET].alpha_s) < 0.01 * tree_s, "tree 8 B on %d: %g s",
          k, tree_s);
    CHECK(tree_s * 10 < ring_s, "8 B on %d ranks: tree %g s not far below ring %g s", k, tree_s, ring_s);
  }
  CHECK(tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 256u << 20, 8, SLOT, TUNING_LINK_NET) <
            tuning_estimate_s(ALGO_TREE, COLL_ALLREDUCE, 256u << 20, 8, SLOT, TUNING_LINK_NET),
        "256 MiB on 8 ranks: the ring should beat the tree");

  /* Shared memory below the network, everywhere. */
  for (size_t b = 8; b <= (64u << 20); b *= 16)
    CHECK(tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, b, 4, SLOT, TUNING_LINK_SHM) <
              tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, b, 4, SLOT, TUNING_LINK_NET),
          "%zu bytes: shm not below net", b);

  /* On the network link (the tuner's constants) the cheaper estimate is the
   * tuner's pick. */
  int none[COLL_NKINDS] = {-1, -1, -1, -1, -1, -1};
  const algo_site_t net = {.alpha_s = tuning_links[TUNING_LINK_NET].alpha_s,
                           .beta_bps = tuning_links[TUNING_LINK_NET].beta_bps};
  for (int k = 2; k <= 16; k++)
    for (size_t b = 8; b <= (64u << 20); b *= 8) {
      algo_t pick = tuning_pick(none, COLL_ALLREDUCE, b, k, SLOT, &net), best = ALGO_RING;
      double best_s = 1e30;
      for (int a = 0; a < ALGO_COUNT; a++) { /* direct and line need one host: not on the network */
        if (!algo_serves((algo_t)a, COLL_ALLREDUCE)) continue;
        double t = a == ALGO_DIRECT || a == ALGO_LINE
                       ? 1e30
                       : tuning_estimate_s((algo_t)a, COLL_ALLREDUCE, b, k, SLOT, TUNING_LINK_NET);
        if (t < best_s) best = (algo_t)a, best_s = t;
      }
      CHECK(pick == best, "k %d, %zu bytes: tuner picks %s, model's cheapest is %s", k, b, algo_name(pick),
            algo_name(best));
    }

  /* Every rank on one host, reading each other's memory: the pick is still
   * the cheapest estimate on the shared-memory link, now with direct and,
   * up to its 12 bytes, line among them. */
  const algo_site_t shm = {.alpha_s = tuning_links[TUNING_LINK_SHM].alpha_s,
                           .beta_bps = tuning_links[TUNING_LINK_SHM].beta_bps,
                           .direct = 1,
                           .line = 1,
                           .zero_copy = 1,
                           .zero_agreed = 1};
  for (int k = 2; k <= 16; k++)
    for (size_t b = 8; b <= (64u << 20); b *= 8) {
      algo_t pick = tuning_pick(none, COLL_ALLREDUCE, b, k, SLOT, &shm), best = ALGO_RING;
      double best_s = 1e30;
      for (int a = 0; a < ALGO_COUNT; a++) {
        if (!algo_serves((algo_t)a, COLL_ALLREDUCE) || (a == ALGO_LINE && b > 12)) continue;
        double t = tuning_estimate_s((algo_t)a, COLL_ALLREDUCE, b, k, SLOT, TUNING_LINK_SHM);
        if (t < best_s) best = (algo_t)a, best_s = t;
      }
      CHECK(pick == best, "shm, k %d, %zu bytes: tuner picks %s, model's cheapest is %s", k, b, algo_name(pick),
            algo_name(best));
    }

  /* One rank: a copy, growing with the bytes; p2p: latency plus bytes. */
  CHECK(tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 1 << 20, 1, SLOT, TUNING_LINK_NET) <
            tuning_estimate_s(ALGO_RING, COLL_ALLREDUCE, 1 << 22, 1, SLOT, TUNING_LINK_NET),
        "one rank");
  CHECK(tuning_p2p_estimate_s(8, TUNING_LINK_NET) >= tuning_links[TUNING_LINK_NET].alpha_s, "p2p latency");
  CHECK(tuning_p2p_estimate_s(1 << 20, TUNING_LINK_SHM) < tuning_p2p_estimate_s(1 << 22, TUNING_LINK_SHM), "p2p");
  return test_finish("simulate");
}
