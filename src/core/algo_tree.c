/*
 * algo_tree.c — the double binary tree (host_tree.h): all-reduce in
 * 2 log2(k) hops instead of the ring's 2(k-1), broadcast and reduce in
 * log2(k) instead of k-1, each of the two trees on its own set of
 * connections (COMM_P2P_ALGO, COMM_P2P_ALGO2), one work item each.
 *
 * Broadcast and reduce run on trees rooted at their root, so their
 * connections depend on it: op_peers gives one operation's, and the launch
 * makes those not made yet before the operation (algo.h), per root as it
 * comes. A communicator whose ranks share a process cannot connect lazily
 * (comm.c's comm_connect_algos): there it makes at init the union over
 * every root and all-reduce, which is small: in every one of these trees
 * a rank's parent and children lie 2^j away in index, and the maps of
 * host_tree_links shift or mirror the index, so the union is the ranks
 * r +- 2^j (mod k), at most 2 ceil(log2 k) per set.
 */
#include <math.h>
#include <string.h>

#include "algo.h"
#include "comm.h"
#include "host_tree.h"

/*
 * For k ranks, B bytes and slots of S bytes: each tree carries B/2 in
 * ceil(B/(2S)) pieces over depth = ceil(log2 k) levels (priced so: see
 * tree_work), pipelined, on the site's flat link.
 *   all-reduce: up and back down, 2 depth + pieces - 1 steps; a rank
 *     interior in one tree and a leaf in the other sends 3 + 1 pieces for
 *     every piece of each tree: 2B bytes.
 *   broadcast (the descent), reduce (the climb): the root is the top of
 *     both trees and one thread runs both, so it takes every piece of
 *     both, ceil(B/S), one after the other: depth + ceil(B/S) - 1 steps.
 *     It has two children in each tree (one on 2 ranks) and sends them
 *     (broadcast) or receives from them (reduce) 2B in all, B on 2 ranks;
 *     no other rank moves more. Against the ring's chain of k-1 hops and B
 *     (algo_ring.c): the same on 2 ranks (the ring, the earlier entry,
 *     keeps them), the ring on 3, the tree for small buffers from 4 ranks
 *     on, the ring for large ones.
 */
static void tree_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                      algo_work_t *work_p) {
  double b = (double)bytes, k = nranks, s = (double)slot;
  /* ceil(log2 k), though the tree is floor(log2 k) deep (host_tree.h):
   * measured on 3, 5 and 6 ranks (shm, 8 B - 4 KiB), the tree took as long
   * as rd's log2(p2) + 2 steps or longer, which ceil prices and floor does
   * not (it would pick the tree there, 1.05-1.6x slower). Each rank works
   * for both trees, and a rank interior in both does more than one hop's
   * work per level. */
  int depth = 0;
  for (int d = 1; d < (int)k; d *= 2) depth++;
  if (coll == COLL_ALLREDUCE) {
    algo_work_flat(work_p, site, 2 * depth + (b > 0 ? ceil(b / (2 * s)) : 1) - 1 /* pieces per tree */, 2 * b);
    return;
  }
  /* both trees' pieces through the root */
  double pieces = (b > 0 ? ceil(b / s) : 1) - 1;
  /* Between hosts the root's further pieces follow its first with
   * XCCL_STEPS slots in flight, so each waits out a fraction of the
   * network's latency, as rab's and PAT's do (xccl-sim, 4 x 8, 512 KiB
   * broadcast: 35 us, priced so 39 where the full latency per piece gave 57,
   * above the ring's 48). Inside one host the crossovers stay as measured;
   * on 2 ranks the tree is the ring's one hop and is priced as the ring
   * prices it (the ring's pieces are not windowed yet). */
  if (site->flat == ALGO_LINK_NET && k > 2) pieces /= XCCL_STEPS;
  algo_work_flat(work_p, site, depth + pieces, (k > 2 ? 2 : 1) * b);
}

typedef struct {
  tree_args_t args[2];
  tree_item_t items[2];
} tree_launch_t;

static size_t tree_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a, (void)comm;
  return sizeof(tree_launch_t);
}

/* Tree t's connections to its parent and children, from its set. */
static void tree_fifos(struct xcclComm *comm, int set, tree_args_t *ta) {
  const tree_links_t *l = &ta->links;
  comm_p2p_t *send = comm->p2p_send[COMM_P2P_ALGO + set], *recv = comm->p2p_recv[COMM_P2P_ALGO + set];
  if (l->parent >= 0) {
    ta->up_send = send[l->parent].fifo, ta->up_send_step = &send[l->parent].step;
    ta->down_recv = recv[l->parent].fifo, ta->down_recv_step = &recv[l->parent].step;
  }
  for (int c = 0; c < l->nchild; c++) {
    int p = l->child[c];
    ta->up_recv[c] = recv[p].fifo, ta->up_recv_step[c] = &recv[p].step;
    ta->down_send[c] = send[p].fifo, ta->down_send_step[c] = &send[p].step;
  }
}

/* The trees' root: broadcast's and reduce's, -1 for all-reduce. */
static int tree_root(const coll_args_t *a) { return a->coll == COLL_ALLREDUCE ? -1 : a->root; }

static int tree_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  tree_launch_t *l = scratch;
  /* Tree 0 takes the larger half: a single element climbs one tree only. */
  size_t half = a->count - a->count / 2;
  for (int t = 0; t < 2; t++) {
    tree_args_t *ta = &l->args[t];
    *ta = (tree_args_t){.coll = a->coll,
                        .sendbuff = a->sendbuff,
                        .recvbuff = a->recvbuff,
                        .off = t ? half : 0,
                        .count = t ? a->count - half : half,
                        .type = a->type,
                        .op = a->op,
                        .nranks = comm->nranks,
                        .rank = comm->rank,
                        .root = tree_root(a)};
    host_tree_links(comm->nranks, comm->rank, t, ta->root, &ta->links);
    tree_fifos(comm, t, ta);
    host_tree_item(&l->items[t], ta, &comm->env, lane0 + (t ? ALGO_LANE_PEERS2 : ALGO_LANE_PEERS));
    l->items[t].base.channel = t;
    items[t] = &l->items[t].base;
  }
  return 2;
}

/* Both directions with the parent and the children of tree t, rooted at
 * root, added to set t. */
static void tree_add_links(int nranks, int rank, int root, algo_peers_t *peers_p) {
  for (int t = 0; t < 2; t++) {
    tree_links_t l;
    algo_peer_set_t *s = &peers_p->set[t];
    host_tree_links(nranks, rank, t, root, &l);
    /* Never full: the union is at most 2 ceil(log2 k) (the header). */
    if (l.parent >= 0) (void)algo_peer_set_add(s, l.parent);
    for (int c = 0; c < l.nchild; c++) (void)algo_peer_set_add(s, l.child[c]);
  }
}

/* One operation's trees, or (a NULL) all-reduce's and every root's. */
static void tree_op_peers(const coll_args_t *a, int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  if (a) {
    tree_add_links(nranks, rank, tree_root(a), peers_p);
    return;
  }
  for (int root = -1; root < nranks; root++) tree_add_links(nranks, rank, root, peers_p);
}

static void tree_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  tree_op_peers(NULL, nranks, rank, site, peers_p);
}

const algo_desc_t algo_tree = {
    .name = "tree",
    .colls = 1u << COLL_ALLREDUCE | 1u << COLL_BROADCAST | 1u << COLL_REDUCE,
    .work = tree_work,
    .max_items = 2,
    .scratch_bytes = tree_scratch_bytes,
    .build = tree_build,
    .peers = tree_peers,
    .op_peers = tree_op_peers,
};
