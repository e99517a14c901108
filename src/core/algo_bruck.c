/*
 * algo_bruck.c — Bruck's all-to-all (host_bruck.h): ceil(log2 k) exchanges
 * with partners at distances 2^j, over the algorithms' own connections
 * (COMM_P2P_ALGO), one work item. For small blocks on many ranks, where
 * pairwise's k - 1 messages per rank cost more than the blocks' bytes.
 */
#include <math.h>
#include <string.h>

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
/*
 * Between hosts of G ranks each (blocked), round j's partner is 2^j ranks
 * on: from 2^j >= G every rank's message crosses; below, only the 2^j
 * ranks at a host's end receive from the host before. A round waits for the
 * one before it at the sender, so the latency the busiest rank waits
 * through is the longest chain of receives back through the rounds, one
 * per round; of the rounds below G a chain can cross in only a few (an
 * edge that crosses lands at a host's start, whose next partner back is
 * inside: one of them for G a power of two), counted here for any G:
 * best[p] = the most crossings of a chain that ends at position p.
 */
static int bruck_local_crossings(int g, int rounds) {
  int best[64] = {0}, next[64];
  if (g > 64) return rounds; /* no such host: count every round as crossing */
  for (int j = 0; j < rounds && (1 << j) < g; j++) {
    int d = 1 << j;
    for (int p = 0; p < g; p++) next[p] = best[((p - d) % g + g) % g] + (p < d);
    memcpy(best, next, sizeof(int) * (size_t)g);
  }
  int most = 0;
  for (int p = 0; p < g; p++) most = best[p] > most ? best[p] : most;
  return most;
}

static void bruck_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                       algo_work_t *work_p) {
  (void)coll;
  double b = (double)bytes, k = nranks, s = (double)slot, steps = 0, moved = 0;
  int g = algo_levels_g(site), rounds = host_bruck_rounds((int)k);
  int crossings = g ? bruck_local_crossings(g, rounds) : 0;
  double local_steps = 0, local_bytes = 0, net_steps = 0, net_bytes = 0, rails = algo_rails(site);
  for (int j = 0; j < rounds; j++) {
    double round = (double)host_bruck_round_blocks((int)k, j) * b, pieces = round > 0 ? ceil(round / s) : 1;
    steps += pieces;
    moved += round;
    if (!g) continue;
    /* As PAT's dimensions (algo_pat.c): 2^j of a host's ranks send across
     * at once over its rails, the rest inside. */
    double across = (1 << j) < g ? (double)(1 << j) : g;
    if (across < g) local_bytes += round;
    net_bytes += round * ceil(across / rails);
    /* A round's pieces after its first follow with XCCL_STEPS slots in
     * flight (as PAT's and rab's levels). */
    double chain = 1 + (pieces - 1) / XCCL_STEPS;
    if ((1 << j) >= g || crossings-- > 0) net_steps += chain;
    else local_steps += chain;
  }
  if (g) algo_work_levels(work_p, local_steps, local_bytes, net_steps, net_bytes, 0);
  else algo_work_flat(work_p, site, steps, moved);
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
