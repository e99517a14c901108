/*
 * algo_hier.c — the hierarchical all-reduce (host_hier.h), for ranks that
 * span hosts: a reduce-scatter inside each host, an all-reduce of each
 * shard among its owners, one per host, as a ring or a tree, and an
 * all-gather inside each host; one work item over the algorithms' own
 * connections (COMM_P2P_ALGO).
 *
 * Between hosts the ring sends the fewest bytes, 2(H-1)/H of a shard per
 * shard a rank owns (2(H-1)/H · B/g per rank where every host has g ranks,
 * the least any all-reduce sends between H hosts), in 2(H-1) latency steps;
 * the tree takes 2 ceil(log2 H) steps for about 2B per host. Each call
 * takes the cheaper by the model below (algo_hier_inter_tree), unless
 * XCCL_HIER_INTER forces one.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "cost.h"
#include "host_hier.h"

/*
 * H hosts, G = site->local_max shards of B/G bytes, slots of S bytes, a
 * rank owning at most `owned` shards (one where every host has G ranks):
 *   (1) and (3), inside a host (ALGO_LINK_LOCAL): g-1 peers at once (one
 *       latency, each further message its issue, ALGO_MSG_ISSUE), a
 *       shard's pieces pipelined, f = site->hier_local_frac of the buffer
 *       in (and out):
 *         2 (1 + (G-2) ALGO_MSG_ISSUE + ceil(B/(G S)) - 1) steps, 2 f B bytes
 *   (2), between hosts (ALGO_LINK_NET), one all-reduce per owned shard,
 *       one after the other; the host's ranks send theirs at once over the
 *       host's rails (algo_rails: its owners' NICs, one where it has one):
 *     ring: a rank sends 2(H-1)/H B/G per shard it owns, 2(H-1)/H B per host:
 *         owned (2(H-1) + ceil(B/(G H S)) - 1) steps, 2(H-1)/H B bytes
 *     tree: depth d = ceil(log2 H), a shard's pieces pipelined up and down;
 *       an interior owner sends a piece up and to two children, a leaf
 *       one; the trees are rotated per shard (hier_tree_links), so a host's
 *       G owners are leaves in about half of their trees: about 2B per host:
 *         owned (2d + ceil(B/(G S)) - 1) steps, 2 B bytes
 * It cannot run on one host (it is a reduce-scatter and an all-gather that
 * cost more than the ring's), where every host has one rank (it is the
 * ring), nor where some rank would need more connections than an algorithm
 * gets.
 */
static void hier_net_work(int tree, double b, double s, const algo_site_t *site, algo_work_t *work_p) {
  double H = site->nhosts, G = site->local_max, shard = b / G;
  work_p->ok = 1;
  if (tree) {
    int d = 0;
    for (int n = 1; n < site->nhosts; n *= 2) d++;
    work_p->steps[ALGO_LINK_NET] = site->hier_owned * (2.0 * d + (b > 0 ? ceil(shard / s) : 1) - 1);
    /* and each of the 2d hops takes a whole piece in before it passes it
     * on, an interior owner's NIC two of them (its two children's, up; to
     * its two children, down) */
    work_p->bytes[ALGO_LINK_NET] = 2 * b / algo_rails(site) + 4.0 * d * fmin(shard, s);
  } else {
    work_p->steps[ALGO_LINK_NET] = site->hier_owned * (2 * (H - 1) + (b > 0 ? ceil(shard / (H * s)) : 1) - 1);
    work_p->bytes[ALGO_LINK_NET] = 2 * (H - 1) / H * b / algo_rails(site);
  }
}

/* The price of (2) alone, as trees or as rings. */
static double hier_net_price(int tree, double b, double s, const algo_site_t *site) {
  algo_work_t w = {0};
  hier_net_work(tree, b, s, site, &w);
  return cost_price(&w, site);
}

int algo_hier_inter_tree(size_t bytes, size_t slot, const algo_site_t *site) {
  if (!(site->hier_inter & HIER_INTER_TREE)) return 0;
  if (!(site->hier_inter & HIER_INTER_RING)) return 1;
  double b = (double)bytes, s = (double)(slot ? slot : 1);
  return hier_net_price(1, b, s, site) < hier_net_price(0, b, s, site);
}

static void hier_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                      algo_work_t *work_p) {
  (void)coll, (void)nranks;
  if (!site->layout || site->nhosts < 2 || site->local_max < 2 || !site->hier_peers_ok) return;
  double b = (double)bytes, s = (double)slot, G = site->local_max;
  double local_pieces = b > 0 ? ceil(b / G / s) : 1;
  hier_net_work(algo_hier_inter_tree(bytes, slot, site), b, s, site, work_p);
  work_p->steps[ALGO_LINK_LOCAL] = 2 * (1 + (G - 2) * ALGO_MSG_ISSUE + local_pieces - 1);
  work_p->bytes[ALGO_LINK_LOCAL] = 2 * site->hier_local_frac * b;
}

/* One operation's scratch: the item, then its arguments (algo_partner_args). */
static size_t hier_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return host_hier_item_bytes(comm->site.layout, comm->rank) + algo_partner_args_bytes(comm);
}

static int hier_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  hier_item_t *it = scratch;
  void *args_mem = (char *)scratch + host_hier_item_bytes(comm->site.layout, comm->rank);
  /* the size and slot the tuner priced it at (op.h), so every rank chooses alike */
  size_t slot = algo_slot(ALGO_HIER, comm->peers[comm->rank].chunk_size, comm->site.peer_slot);
  int tree = algo_hier_inter_tree(a->bytes, slot, &comm->site);
  host_hier_item(it, algo_partner_args(a, comm, args_mem), comm->site.layout, &comm->env, lane0 + ALGO_LANE_PEERS,
                 tree);
  items[0] = &it->base;
  return 1;
}

/* Both directions with the other ranks of the host and the ring or tree
 * neighbours (both where XCCL_HIER_INTER leaves the choice to each call) of
 * the rank's shards (tuning_site_hosts refuses a layout that needs more
 * than ALGO_MAX_PEERS where hier is forced). */
static void hier_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)nranks;
  if (!site->layout) return;
  int n = host_hier_partners(site->layout, rank, site->hier_inter, peers_p->set[0].send, ALGO_MAX_PEERS);
  algo_peer_set_both(&peers_p->set[0], n < ALGO_MAX_PEERS ? n : ALGO_MAX_PEERS);
}

const algo_desc_t algo_hier = {
    .name = "hier",
    .colls = 1u << COLL_ALLREDUCE,
    .work = hier_work,
    .max_items = 1,
    .scratch_bytes = hier_scratch_bytes,
    .build = hier_build,
    .peers = hier_peers,
};
