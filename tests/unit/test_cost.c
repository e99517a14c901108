/*
 * test_cost.c — one price for one operation: for the same inputs,
 * tuning_pick's choice, xcclGroupSimulateEnd's estimate and xccl-sim's
 * model (its site, tools/sim/sim_site.c, priced by cost_estimate_s) give
 * the same algorithm and the same number. A second formula in any of them
 * makes the numbers part.
 */
#include <math.h>
#include <stdlib.h>

#include "comm.h"
#include "cost.h"
#include "sim.h"
#include "test_util.h"
#include "tuning.h"

#define K 4
#define MAXC (256u << 10) /* floats */

static const coll_kind_t colls[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_BROADCAST, COLL_REDUCE};

static int same(double a, double b) { return fabs(a - b) <= 1e-5 * fabs(b); } /* the estimate is a float */

static xcclResult_t issue(coll_kind_t c, float *s, float *r, size_t n, xcclComm_t comm) {
  switch (c) {
  case COLL_ALLREDUCE: return xcclAllReduce(s, r, n, xcclFloat32, xcclSum, comm, NULL);
  case COLL_ALLGATHER: return xcclAllGather(s, r, n, xcclFloat32, comm, NULL);
  case COLL_REDUCESCATTER: return xcclReduceScatter(s, r, n, xcclFloat32, xcclSum, comm, NULL);
  case COLL_BROADCAST: return xcclBroadcast(s, r, n, xcclFloat32, 0, comm, NULL);
  default: return xcclReduce(s, r, n, xcclFloat32, xcclSum, 0, comm, NULL);
  }
}

/* xcclGroupSimulateEnd on K ranks of one process: each rank's operation
 * priced as the tuner priced its pick, at the communicator's site (its
 * links, cores shared included); a send and its receive as two steps. */
static void check_simulate(xcclComm_t *comms, float *s, float *r) {
  const algo_site_t *site = &comms[0]->site;
  size_t chunk = comms[0]->peers[0].chunk_size;
  for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
    for (size_t n = 2; n <= MAXC / K; n *= 64) {
      float us = -1;
      CHECK(xcclGroupStart() == xcclSuccess, "group start");
      for (int k = 0; k < K; k++)
        CHECK(issue(colls[i], s + (size_t)k * MAXC, r + (size_t)k * MAXC, n, comms[k]) == xcclSuccess, "%s",
              xcclGetLastError(NULL));
      CHECK(xcclGroupSimulateEnd(&us) == xcclSuccess, "simulate: %s", xcclGetLastError(NULL));
      size_t bytes = n * sizeof(float);
      algo_t pick = tuning_pick(comms[0]->algo_forced, colls[i], bytes, K, chunk, site);
      double want = K * cost_estimate_s(pick, colls[i], bytes, K, chunk, site) * 1e6;
      CHECK(same(us, want), "coll %d of %zu B: simulate says %g us, the tuner's %s is priced %g us", (int)colls[i],
            bytes, us, algo_name(pick), want);
    }
  float us = -1;
  CHECK(xcclGroupStart() == xcclSuccess, "group start");
  CHECK(xcclSend(s, 4096, xcclFloat32, 1, comms[0], NULL) == xcclSuccess, "send");
  CHECK(xcclRecv(r, 4096, xcclFloat32, 0, comms[1], NULL) == xcclSuccess, "recv");
  CHECK(xcclGroupSimulateEnd(&us) == xcclSuccess, "simulate: %s", xcclGetLastError(NULL));
  double want = 2 * cost_p2p_s(4096 * sizeof(float), ALGO_LINK_LOCAL, site) * 1e6;
  CHECK(same(us, want), "send and receive: simulate says %g us, cost_p2p_s %g us", us, want);
}

/* xccl-sim's site for the same ranks (one host of K, the communicator's
 * links; what the simulator does not model, direct and line, copied): the
 * same pick and the same price for every algorithm. */
static void check_sim(const algo_site_t *site) {
  sim_cluster_t c = {.hosts = 1, .gpus = K, .nranks = K, .nchannels = 1, .nics = 1};
  c.nvl_lat = site->link[ALGO_LINK_LOCAL].alpha_s, c.nvl_bps = site->link[ALGO_LINK_LOCAL].beta_bps;
  c.nic_lat = site->link[ALGO_LINK_NET].alpha_s, c.nic_bps = site->link[ALGO_LINK_NET].beta_bps;
  algo_site_t ss;
  CHECK(sim_site_make(&c, site->peer_slot, &ss) == 0, "sim_site_make: %s", xcclGetLastError(NULL));
  ss.direct = site->direct, ss.direct_forced = site->direct_forced, ss.zero_copy = site->zero_copy;
  ss.line = site->line;
  CHECK(ss.flat == site->flat, "xccl-sim prices one-level algorithms on class %d, the communicator on %d", ss.flat,
        site->flat);
  int none[COLL_NKINDS] = {-1, -1, -1, -1, -1, -1};
  for (int c2 = 0; c2 < COLL_NKINDS; c2++)
    for (size_t b = 4; b <= (64u << 20); b *= 8) {
      CHECK(tuning_pick(none, (coll_kind_t)c2, b, K, 512u << 10, &ss) ==
                tuning_pick(none, (coll_kind_t)c2, b, K, 512u << 10, site),
            "coll %d of %zu B: xccl-sim and the communicator pick apart", c2, b);
      for (int a = 0; a < ALGO_COUNT; a++) {
        double x = cost_estimate_s((algo_t)a, (coll_kind_t)c2, b, K, 512u << 10, &ss);
        double y = cost_estimate_s((algo_t)a, (coll_kind_t)c2, b, K, 512u << 10, site);
        CHECK(x == y, "%s coll %d of %zu B: xccl-sim %g s, the communicator %g s", algo_name((algo_t)a), c2, b, x, y);
      }
    }
  sim_site_free(&ss);
}

/* Across hosts hier is priced by its own two levels, not as a ring: work
 * on both classes of link, which the price adds up. */
static void check_hier(void) {
  sim_cluster_t c = {.hosts = 4, .gpus = 8, .nranks = 32, .nvl_lat = 1e-6, .nvl_bps = 450e9, .nic_lat = 3e-6,
                     .nic_bps = 50e9};
  algo_site_t ss;
  CHECK(sim_site_make(&c, 0, &ss) == 0, "sim_site_make: %s", xcclGetLastError(NULL));
  for (size_t b = 8; b <= (256u << 20); b *= 16) {
    algo_work_t w;
    cost_work(ALGO_HIER, COLL_ALLREDUCE, b, 32, 512u << 10, &ss, &w);
    CHECK(w.ok && w.steps[ALGO_LINK_LOCAL] > 0 && w.steps[ALGO_LINK_NET] > 0, "%zu B: hier's work is not two-level", b);
    double parts = w.steps[0] * c.nvl_lat + w.bytes[0] / c.nvl_bps + w.steps[1] * c.nic_lat + w.bytes[1] / c.nic_bps;
    double t = cost_estimate_s(ALGO_HIER, COLL_ALLREDUCE, b, 32, 512u << 10, &ss);
    CHECK(same(t, parts), "%zu B: hier priced %g s, its work %g s", b, t, parts);
    CHECK(t != cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, b, 32, 512u << 10, &ss), "%zu B: hier priced as the ring", b);
  }
  sim_site_free(&ss);
}

/* Across hosts in blocks of G ranks, one-level algorithms are priced per
 * level: rd's first log2 G rounds and the ring's hops inside a host on the
 * host's link, the rest on the NICs, a host's G senders over its rails; the
 * ring's hops all carry at once (the slowest class bounds it). Hosts whose
 * ranks interleave cannot be told apart by level: all on the network. */
static void check_levels(void) {
  sim_cluster_t c = {.hosts = 4, .gpus = 8, .nranks = 32, .nvl_lat = 1e-6, .nvl_bps = 450e9, .nic_lat = 3e-6,
                     .nic_bps = 50e9, .nics = 8, .nchannels = 8};
  algo_site_t ss;
  CHECK(sim_site_make(&c, 0, &ss) == 0, "sim_site_make: %s", xcclGetLastError(NULL));
  CHECK(ss.blocked && ss.nics == 8, "4 hosts x 8 in blocks: blocked %d, nics %d", ss.blocked, ss.nics);
  size_t b = 64u << 20, slot = 512u << 10;
  algo_work_t w;
  cost_work(ALGO_RD, COLL_ALLREDUCE, 8, 32, slot, &ss, &w);
  CHECK(w.steps[ALGO_LINK_LOCAL] == 3 && w.steps[ALGO_LINK_NET] == 2, "rd on 4x8: %g steps inside, %g between hosts",
        w.steps[ALGO_LINK_LOCAL], w.steps[ALGO_LINK_NET]);
  CHECK(w.bytes[ALGO_LINK_NET] == 2 * 8.0 * 8 / 8, "rd on 4x8: %g bytes per NIC for 8 B", w.bytes[ALGO_LINK_NET]);
  cost_work(ALGO_RING, COLL_ALLREDUCE, b, 32, slot, &ss, &w);
  double moved = 2 * 31.0 / 32 * (double)b;
  CHECK(w.pipelined && w.bytes[ALGO_LINK_LOCAL] == moved && w.bytes[ALGO_LINK_NET] == moved / 8,
        "ring on 4x8: %g bytes inside, %g per NIC, pipelined %d", w.bytes[ALGO_LINK_LOCAL], w.bytes[ALGO_LINK_NET],
        w.pipelined);
  double slowest = fmax(moved / c.nvl_bps, moved / 8 / c.nic_bps);
  double want = w.steps[0] * c.nvl_lat + w.steps[1] * c.nic_lat + slowest;
  CHECK(same(cost_price(&w, &ss), want), "ring on 4x8 priced %g s, its work %g s", cost_price(&w, &ss), want);
  sim_site_free(&ss);

  /* Interleaved: rank r on host r % 4. */
  int k = 32, forced[COLL_NKINDS] = {-1, -1, -1, -1, -1, -1};
  uint64_t hash[32];
  for (int r = 0; r < k; r++) hash[r] = 1000 + (uint64_t)(r % 4);
  void *mem = malloc(hier_layout_bytes(k));
  algo_site_t is = {.flat = ALGO_LINK_NET, .nics = 8};
  CHECK(mem && tuning_site_hosts(&is, hier_layout_make(k, hash, sizeof(*hash), mem), NULL, 0, 1, forced) == xcclSuccess,
        "tuning_site_hosts: %s", xcclGetLastError(NULL));
  CHECK(!is.blocked, "hosts that interleave their ranks are not blocked");
  cost_work(ALGO_RD, COLL_ALLREDUCE, 8, 32, slot, &is, &w);
  CHECK(w.steps[ALGO_LINK_LOCAL] == 0 && w.steps[ALGO_LINK_NET] == 5, "rd over interleaved hosts: %g + %g steps",
        w.steps[ALGO_LINK_LOCAL], w.steps[ALGO_LINK_NET]);
  free(mem);
}

int main(void) {
  check_hier();
  check_levels();
  xcclComm_t comms[K];
  if (xcclCommInitAll(comms, K, NULL) != xcclSuccess) {
    CHECK(0, "xcclCommInitAll: %s", xcclGetLastError(NULL));
    return test_finish("cost");
  }
  float *s = calloc((size_t)K * MAXC, sizeof(float)), *r = calloc((size_t)K * MAXC, sizeof(float));
  CHECK(s && r, "out of memory");
  if (s && r) {
    check_simulate(comms, s, r);
    check_sim(&comms[0]->site);
  }
  free(s);
  free(r);
  for (int k = 0; k < K; k++) xcclCommDestroy(comms[k]);
  return test_finish("cost");
}
