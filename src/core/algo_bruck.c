/*
 * algo_bruck.c — Bruck's all-to-all (host_bruck.h): ceil(log2 k) exchanges
 * with partners at distances 2^j, over the algorithms' own connections
 * (COMM_P2P_ALGO), one work item. For small blocks on many ranks, where
 * pairwise's k - 1 messages per rank cost more than the blocks' bytes.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_bruck.h"

/*
 * For k ranks, blocks of B bytes and slots of S bytes: round j moves the
 * n_j blocks whose number has bit j set (about k/2) in ceil(n_j B / S)
 * pieces, and a round starts when the one before it is in, so
 *   steps = sum_j ceil(n_j B / S),  bytes = sum_j n_j B
 * on the site's flat link (about ceil(log2 k) steps and k/2 log2 k blocks,
 * against pairwise's k - 1 of each).
 */
static void bruck_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                       algo_work_t *work_p) {
  (void)coll;
  double b = (double)bytes, k = nranks, s = (double)slot, steps = 0, moved = 0;
  for (int j = 0, r = host_bruck_rounds((int)k); j < r; j++) {
    double round = (double)host_bruck_round_blocks((int)k, j) * b;
    steps += round > 0 ? ceil(round / s) : 1;
    moved += round;
  }
  algo_work_flat(work_p, site, steps, moved);
}

/* The item and its working memory (host_bruck_item). */
static size_t bruck_item_all(const coll_args_t *a, const struct xcclComm *comm) {
  return host_bruck_item_bytes(comm->nranks) + host_bruck_work_bytes(a->count, a->type, comm->nranks);
}

/* One operation's scratch: the item and its working memory, then its
 * arguments (algo_partner_args). */
static size_t bruck_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  return bruck_item_all(a, comm) + algo_partner_args_bytes(comm);
}

static int bruck_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  bruck_item_t *it = scratch;
  void *args_mem = (char *)scratch + bruck_item_all(a, comm);
  host_bruck_item(it, algo_partner_args(a, comm, args_mem), &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &it->base;
  return 1;
}

/* To rank + 2^j and from rank - 2^j, one round each. */
static void bruck_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_t *s = &peers_p->set[0];
  s->nsend = s->nrecv = host_bruck_partners(nranks, rank, s->send, s->recv);
}

const algo_desc_t algo_bruck = {
    .name = "bruck",
    .colls = 1u << COLL_ALLTOALL,
    .work = bruck_work,
    .max_items = 1,
    .scratch_bytes = bruck_scratch_bytes,
    .build = bruck_build,
    .peers = bruck_peers,
};
