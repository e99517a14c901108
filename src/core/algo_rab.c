/*
 * algo_rab.c — Rabenseifner's all-reduce (host_rab.h): a reduce-scatter by
 * recursive halving and an all-gather by recursive doubling, over the
 * algorithms' own connections (COMM_P2P_ALGO), one work item.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_rab.h"

/*
 * For k ranks, B bytes and slots of S bytes, p2 the largest power of two
 * <= k: 2 log2(p2) exchanges (+2 for the fold when k is not a power of two)
 * whose pieces overlap from level to level, pipelined over the pieces of
 * the largest stream, ceil(B/(2S)) (the first level's half; ceil(B/S) when
 * the whole buffer folds in):
 *   (2 log2(p2) [+2] + pieces - 1) ALPHA + (2(p2-1)/p2 [+2]) B / BETA
 * the bytes those of a rank that takes a folded partner: 2(p2-1)/p2 B in
 * the halving and doubling, B in and B back out for the fold.
 */
static double rab_cost(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site) {
  (void)coll;
  int p2 = 1, levels = 0;
  while (p2 <= nranks / 2) p2 *= 2, levels++;
  int folded = p2 != nranks;
  double b = (double)bytes, s = (double)(slot ? slot : 1);
  double pieces = b > 0 ? ceil(b / (folded ? s : 2 * s)) : 1;
  double steps = 2 * levels + (folded ? 2 : 0) + pieces - 1;
  double moved = 2.0 * (p2 - 1) / p2 * b + (folded ? 2 * b : 0);
  return steps * site->alpha_s + moved / site->beta_bps;
}

/* One operation's scratch: the item, then its arguments (algo_partner_args). */
static size_t rab_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return host_rab_item_bytes(comm->nranks) + algo_partner_args_bytes(comm);
}

static int rab_build(const coll_args_t *a, struct xcclComm *comm, int lane0, void *scratch, kern_item_t **items) {
  rab_item_t *it = scratch;
  void *args_mem = (char *)scratch + host_rab_item_bytes(comm->nranks);
  host_rab_item(it, algo_partner_args(a, comm, args_mem), &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &it->base;
  return 1;
}

/* Both directions with each partner: the fold's, and one per level. */
static void rab_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_both(&peers_p->set[0], host_rab_partners(nranks, rank, peers_p->set[0].send));
}

const algo_desc_t algo_rab = {
    .name = "rab",
    .colls = 1u << COLL_ALLREDUCE,
    .cost = rab_cost,
    .max_items = 1,
    .scratch_bytes = rab_scratch_bytes,
    .build = rab_build,
    .peers = rab_peers,
};
