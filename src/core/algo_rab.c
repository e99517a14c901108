/*
 * algo_rab.c — Rabenseifner's all-reduce (host_rab.h): a reduce-scatter by
 * recursive halving and an all-gather by recursive doubling, over the
 * algorithms' own connections (COMM_P2P_ALGO), one work item. Each half
 * alone serves the reduce-scatter and the all-gather.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_rab.h"

/*
 * For k ranks, slots of S bytes, p2 the largest power of two <= k and a
 * buffer of T bytes (all-reduce: B, the bytes given; reduce-scatter and
 * all-gather: kB, B one rank's share): log2(p2) exchanges per half (+2 for
 * the fold when k is not a power of two) whose pieces overlap from level to
 * level, pipelined over the pieces of the largest stream, ceil(T/(2S)) (the
 * first level's half; ceil(T/S) when the whole buffer folds in or goes
 * back), steps and bytes on the site's flat link:
 *   all-reduce      2 log2(p2) [+2] + pieces - 1 steps, 2(p2-1)/p2 T [+2T] bytes
 *   reduce-scatter  log2(p2) [+2] + pieces - 1 steps, (p2-1)/p2 T [+T+B] bytes
 *   all-gather      log2(p2) [+2] + pieces - 1 steps, (p2-1)/p2 T [+T] bytes
 * the bytes those of a rank that takes a folded partner: (p2-1)/p2 T per
 * half, and for the fold the partner's input in (T, or B for the
 * all-gather) and its result out (T, B for the reduce-scatter, (k-1)B for
 * the all-gather).
 */
static void rab_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                     algo_work_t *work_p) {
  double b = (double)bytes, k = nranks, s = (double)slot;
  int p2 = 1, levels = 0;
  while (p2 <= (int)k / 2) p2 *= 2, levels++;
  int folded = p2 != (int)k, halves = coll == COLL_ALLREDUCE ? 2 : 1;
  double t = coll == COLL_ALLREDUCE ? b : b * k;
  double fold = coll == COLL_ALLREDUCE ? 2 * t : coll == COLL_REDUCESCATTER ? t + b : t;
  double pieces = (t > 0 ? ceil(t / (folded ? s : 2 * s)) : 1) - 1;
  int g = algo_levels_g(site), lg = 0;
  while ((1 << (lg + 1)) <= g) lg++;
  if (g && !folded && (1 << lg) == g) {
    /* Halving starts at distance p2/2: the first levels - log2 G cross
     * hosts (t/2 + t/4 .. = t (1 - G/p2)), all G ranks at once over the
     * rails; the last log2 G stay inside (t (G - 1)/p2); doubling back
     * the same. */
    /* A level's further pieces follow its first with XCCL_STEPS slots in
     * flight, so they wait out a fraction of the network's latency each. */
    algo_work_levels(work_p, halves * lg, halves * t * (g - 1.0) / p2, halves * (levels - lg) + pieces / XCCL_STEPS,
                     halves * t * (1 - (double)g / p2) * g / algo_rails(site), 0);
    return;
  }
  algo_work_flat(work_p, site, halves * levels + (folded ? 2 : 0) + pieces,
                 halves * (p2 - 1.0) / p2 * t + (folded ? fold : 0));
}

/* The item with its working memory (host_rab_item). */
static size_t rab_item_all(const coll_args_t *a, const struct xcclComm *comm) {
  return host_rab_item_bytes(comm->nranks) + host_rab_work_bytes(a->coll, a->count, a->type, comm->nranks, comm->rank);
}

/* One operation's scratch: the item and its working memory, then its
 * arguments (algo_partner_args). */
static size_t rab_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  return rab_item_all(a, comm) + algo_partner_args_bytes(comm);
}

static int rab_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  rab_item_t *it = scratch;
  void *args_mem = (char *)scratch + rab_item_all(a, comm);
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
    .colls = 1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER | 1u << COLL_ALLGATHER,
    .work = rab_work,
    .max_items = 1,
    .scratch_bytes = rab_scratch_bytes,
    .build = rab_build,
    .peers = rab_peers,
};
