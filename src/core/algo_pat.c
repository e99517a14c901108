/*
 * algo_pat.c — PAT, parallel aggregated trees (host_pat.h): all-gather and
 * reduce-scatter in ceil(log2 k) steps with the ring's bytes, over the
 * algorithms' own connections (COMM_P2P_ALGO; Bruck's partners), one work
 * item. For many ranks, where the ring's k - 1 hops cost more than the
 * shares' bytes, on any rank count: no fold as rab's halves need when k is
 * not a power of two, and the reduce-scatter's working memory bounded
 * (PAT_WORK_BYTES) where rab's takes the whole buffer.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_pat.h"

/*
 * For k ranks, shares of B bytes and slots of S bytes: dimension s moves
 * n_s shares (about k / 2^(s+1); n_0 = floor(k/2)), k - 1 in all, each
 * stream cut into pieces of at most a slot that never span a chunk (the
 * all-gather is one chunk; the reduce-scatter's are W = PAT_WORK_BYTES /
 * floor((k-1)/2) bytes of each share, at least one byte). A dimension's
 * pieces go as soon as what they are made of is in, so the dimensions
 * overlap as rab's levels do: one pipeline over the longest stream's
 * pieces, behind the other dimensions' first ones; and a chunk's
 * accumulators are taken again only once the chunk before has gone through
 * every dimension, so each chunk after the first waits one chain of
 * ceil(log2 k) steps (xccl-sim: 36 us per chunk on 1,024 ranks of 3 us
 * links, 46 on 8,192):
 *   steps = ceil(log2 k) - 1 + max_s pieces_s + (chunks - 1) ceil(log2 k),
 *   bytes = (k - 1) B
 * on the site's flat link, where pieces_s = sum over chunks of
 * ceil(n_s W_chunk / S). On k a power of two and one chunk (every
 * all-gather) that is rab's half exactly (n_0 B = T/2); otherwise rab adds
 * its fold's 2 steps and T bytes, and pat its chunks' chains.
 */
static void pat_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                     algo_work_t *work_p) {
  double b = (double)bytes, s = (double)slot;
  double w = bytes ? (double)host_pat_width(coll, bytes, 1, nranks, PAT_WORK_BYTES) : 1;
  double chunks = bytes ? ceil(b / w) : 1, last = b - (chunks - 1) * w, longest = 1;
  int dims = host_pat_dims(nranks), g = algo_levels_g(site);
  double local = 0, net = 0, rails = algo_rails(site);
  for (int d = 0; d < dims; d++) {
    double n = (double)host_pat_blocks(nranks, d);
    double pieces = (chunks - 1) * ceil(n * w / s) + ceil(n * last / s);
    if (pieces > longest) longest = pieces;
    /* Between hosts of G ranks each: dimension d's partner is 2^d ranks on,
     * so 2^d of a host's ranks (all G from 2^d >= G on) send across, over
     * the host's rails, and the others inside. */
    double across = (1 << d) < g ? (double)(1 << d) : g;
    if (across < g) local += n * b;
    net += n * b * ceil(across / rails);
  }
  if (g) {
    /* Every dimension has a rank that crosses, so each costs the network's
     * latency; the pieces after a stream's first follow it with XCCL_STEPS
     * slots in flight (as rab's levels), and the links carry at once. The
     * replay overlaps more: a dimension starts once its first piece is in,
     * so part of the chain passes while the bytes move (xccl-sim, 128 x 8,
     * 8 MiB all-gather: 184 us where this prices 221 and rab 214, replayed
     * 218); max(chain, bytes) overshoots the other way at 512 KiB. */
    algo_work_levels(work_p, 0, local, dims + (longest - 1) / XCCL_STEPS + (chunks - 1) * dims, net, 1);
    return;
  }
  algo_work_flat(work_p, site, dims - 1 + longest + (chunks - 1) * dims, (nranks - 1.0) * b);
}

/* The item and its working memory (host_pat_item). */
static size_t pat_item_all(const coll_args_t *a, const struct xcclComm *comm) {
  return host_pat_item_bytes(comm->nranks) +
         host_pat_work_bytes(a->coll, a->count, a->type, comm->nranks, PAT_WORK_BYTES);
}

/* One operation's scratch: the item and its working memory, then its
 * arguments (algo_partner_args). */
static size_t pat_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  return pat_item_all(a, comm) + algo_partner_args_bytes(comm);
}

static int pat_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  pat_item_t *it = scratch;
  void *args_mem = (char *)scratch + pat_item_all(a, comm);
  host_pat_item(it, algo_partner_args(a, comm, args_mem), &comm->env, lane0 + ALGO_LANE_PEERS, PAT_WORK_BYTES);
  items[0] = &it->base;
  return 1;
}

/* To rank + 2^s and from rank - 2^s, one dimension each. */
static void pat_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_t *s = &peers_p->set[0];
  s->nsend = s->nrecv = host_pat_partners(nranks, rank, s->send, s->recv);
}

const algo_desc_t algo_pat = {
    .name = "pat",
    .colls = 1u << COLL_REDUCESCATTER | 1u << COLL_ALLGATHER,
    .work = pat_work,
    .max_items = 1,
    .scratch_bytes = pat_scratch_bytes,
    .build = pat_build,
    .peers = pat_peers,
};
