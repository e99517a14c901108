/*
 * algo_tree.c — the double binary tree (host_tree.h): all-reduce in
 * 2 log2(k) hops instead of the ring's 2(k-1), each of the two trees on its
 * own set of connections (COMM_P2P_ALGO, COMM_P2P_ALGO2), one work item each.
 *
 * Broadcast and reduce need a tree rooted at their root, whose connections
 * depend on it; the algorithms' connections are made once per communicator
 * (algo.h), so only all-reduce, whose trees are fixed, runs here for now.
 */
#include <math.h>
#include <string.h>

#include "algo.h"
#include "comm.h"
#include "host_tree.h"

/*
 * For k ranks, B bytes and slots of S bytes: each tree carries B/2 in
 * ceil(B/(2S)) pieces that climb depth = ceil(log2 k) levels and come back
 * down, pipelined: (2 depth + pieces - 1) ALPHA. A rank interior in one
 * tree and a leaf in the other sends 3 + 1 pieces for every piece of each
 * tree: 2B in all, 2B / BETA.
 */
static double tree_cost(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site) {
  (void)coll;
  double b = (double)bytes, s = (double)(slot ? slot : 1);
  double pieces = b > 0 ? ceil(b / (2 * s)) : 1;
  int depth = 0;
  for (int d = 1; d < nranks; d *= 2) depth++;
  return (2 * depth + pieces - 1) * site->alpha_s + 2 * b / site->beta_bps;
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

static int tree_build(const coll_args_t *a, struct xcclComm *comm, int lane0, void *scratch, kern_item_t **items) {
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
                        .root = -1};
    host_tree_links(comm->nranks, comm->rank, t, -1, &ta->links);
    tree_fifos(comm, t, ta);
    host_tree_item(&l->items[t], ta, &comm->env, lane0 + (t ? ALGO_LANE_PEERS2 : ALGO_LANE_PEERS));
    l->items[t].base.channel = t;
    items[t] = &l->items[t].base;
  }
  return 2;
}

/* Both directions with the parent and the children, tree t in set t. */
static void tree_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  for (int t = 0; t < 2; t++) {
    tree_links_t l;
    algo_peer_set_t *s = &peers_p->set[t];
    host_tree_links(nranks, rank, t, -1, &l);
    int n = 0;
    if (l.parent >= 0) s->send[n++] = l.parent;
    for (int c = 0; c < l.nchild; c++) s->send[n++] = l.child[c];
    memcpy(s->recv, s->send, (size_t)n * sizeof(int));
    s->nsend = s->nrecv = n;
  }
}

const algo_desc_t algo_tree = {
    .name = "tree",
    .colls = 1u << COLL_ALLREDUCE,
    .cost = tree_cost,
    .max_items = 2,
    .scratch_bytes = tree_scratch_bytes,
    .build = tree_build,
    .peers = tree_peers,
};
