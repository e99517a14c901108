/*
 * algo_hier.c — the hierarchical all-reduce (host_hier.h), for ranks that
 * span hosts: a reduce-scatter inside each host, a ring all-reduce of each
 * shard among its owners, one per host, and an all-gather inside each host;
 * one work item over the algorithms' own connections (COMM_P2P_ALGO).
 *
 * Between hosts it runs rings only (not recursive doubling for small
 * buffers): the bytes that cross hosts are then 2(H-1)/H of a shard per
 * shard a rank owns, 2(H-1)/H · B/g per rank where every host has g ranks,
 * the least any all-reduce sends between H hosts; the tuner leaves small
 * buffers to rd and the tree, which cost fewer steps there.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_hier.h"

/*
 * H hosts, G = site->local_max shards of B/G bytes, slots of S bytes, a
 * rank owning at most `owned` shards (one where every host has G ranks):
 *   (1) and (3), inside a host: g-1 peers at once, a shard's pieces
 *       pipelined, f = site->hier_local_frac of the buffer in (and out):
 *         2 ((G-1 + ceil(B/(G S)) - 1) ALPHA_local + f B / BETA_local)
 *   (2), between hosts: one ring per owned shard, one after the other; a
 *       rank sends 2(H-1)/H B/G per shard it owns, and the host's ranks
 *       send theirs at once over the host's one link, 2(H-1)/H B in all (as
 *       the flat ring's model prices its one crossing per host):
 *         owned (2(H-1) + ceil(B/(G H S)) - 1) ALPHA_net + 2(H-1)/H B / BETA_net
 * HUGE_VAL on one host (it is a reduce-scatter and an all-gather that cost
 * more than the ring's), where every host has one rank (it is the ring),
 * and where some rank would need more connections than an algorithm gets.
 */
static double hier_cost(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site) {
  (void)coll, (void)nranks;
  if (!site->layout || site->nhosts < 2 || site->local_max < 2 || !site->hier_peers_ok) return HUGE_VAL;
  double b = (double)bytes, s = (double)(slot ? slot : 1), H = site->nhosts, G = site->local_max;
  double shard = b / G;
  double local_pieces = b > 0 ? ceil(shard / s) : 1, ring_loops = b > 0 ? ceil(shard / (H * s)) : 1;
  double local = 2 * ((G - 1 + local_pieces - 1) * site->local_alpha_s + site->hier_local_frac * b / site->local_beta_bps);
  double net = site->hier_owned * (2 * (H - 1) + ring_loops - 1) * site->net_alpha_s +
               2 * (H - 1) / H * b / site->net_beta_bps;
  return local + net;
}

/* One operation's scratch: the item, then its arguments (algo_partner_args). */
static size_t hier_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return host_hier_item_bytes(comm->site.layout, comm->rank) + algo_partner_args_bytes(comm);
}

static int hier_build(const coll_args_t *a, struct xcclComm *comm, int lane0, void *scratch, kern_item_t **items) {
  hier_item_t *it = scratch;
  void *args_mem = (char *)scratch + host_hier_item_bytes(comm->site.layout, comm->rank);
  host_hier_item(it, algo_partner_args(a, comm, args_mem), comm->site.layout, &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &it->base;
  return 1;
}

/* Both directions with the other ranks of the host and the ring neighbours
 * of the rank's shards (tuning_site_hosts refuses a layout that needs more
 * than ALGO_MAX_PEERS where hier is forced). */
static void hier_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)nranks;
  if (!site->layout) return;
  int n = host_hier_partners(site->layout, rank, peers_p->set[0].send, ALGO_MAX_PEERS);
  algo_peer_set_both(&peers_p->set[0], n < ALGO_MAX_PEERS ? n : ALGO_MAX_PEERS);
}

const algo_desc_t algo_hier = {
    .name = "hier",
    .colls = 1u << COLL_ALLREDUCE,
    .cost = hier_cost,
    .max_items = 1,
    .scratch_bytes = hier_scratch_bytes,
    .build = hier_build,
    .peers = hier_peers,
};
