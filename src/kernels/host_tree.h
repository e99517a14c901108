/*
 * host_tree.h — the double binary tree, the algorithm of many ranks: a
 * reduction climbs a tree of depth log2(k) and its result comes back down,
 * pipelined piece by piece, instead of the ring's 2(k-1) hops.
 *
 * The tree over k ranks is the in-order binary tree of 1..k: node u's
 * subtree is the range it splits, its root the number of the range with
 * the most trailing zeros. Leaves are the odd u. A rank r sits at
 * u = map(r) + 1. Two trees carry half of the data each; their maps
 * are chosen so that a rank interior in one is mostly a leaf in the other,
 * so every rank sends and receives about the same:
 *   - all-reduce: tree 0 is r -> r, tree 1 is r -> (r + 1) mod k;
 *   - broadcast and reduce from root R: both trees put R at their root,
 *     tree 0 by r -> (r - R + top) mod k, tree 1 by r -> (R - r + top) mod k,
 *     top the root's own index.
 *
 * Each tree is one work item, on connections of its own (tree 1's are a
 * second set: the two trees can share a pair of ranks). Per piece (a slot):
 *   up: reduce this rank's input with its children's pieces straight into
 *       the parent's slot (the root: into recvbuff, then xcclAvg's divide);
 *   down: the parent's piece (the root: its result, broadcast's input) into
 *       recvbuff and the children's slots.
 * Up and down run on separate cursors, so piece p goes down while p + 1
 * still climbs. All-reduce runs both, reduce the climb, broadcast the
 * descent. Every node combines its own value first, then its children's in
 * tree order, so the result does not depend on timing.
 */
#ifndef XCCL_KERNELS_HOST_TREE_H
#define XCCL_KERNELS_HOST_TREE_H

#include "host_engine.h"
#include "ring_schedule.h"

/* A rank's place in one tree: ranks, -1 where none. */
typedef struct {
  int parent;
  int child[2];
  int nchild;
  int depth; /* of the whole tree: levels below the root */
} tree_links_t;

/* Rank's place in tree t (0 or 1) of a collective over nranks; root is the
 * root of broadcast and reduce, -1 for all-reduce. */
void host_tree_links(int nranks, int rank, int t, int root, tree_links_t *out);

typedef struct {
  coll_kind_t coll; /* COLL_ALLREDUCE, COLL_BROADCAST or COLL_REDUCE */
  const void *sendbuff;
  void *recvbuff;
  size_t off, count; /* the tree's part of the buffers: elements [off, off + count) */
  xcclDataType_t type;
  xcclRedOp_t op;
  int nranks, rank, root; /* root: -1 for all-reduce */
  tree_links_t links;
  /* Connections to the parent and children (NULL where none), with their
   * persistent step counters. */
  slot_fifo_t *up_send, *up_recv[2], *down_recv, *down_send[2];
  uint64_t *up_send_step, *up_recv_step[2], *down_recv_step, *down_send_step[2];
} tree_args_t;

typedef struct {
  kern_item_t base;
  const tree_args_t *args;
  size_t piece_elems; /* a slot's worth */
  uint64_t up, down;  /* pieces done by each cursor */
  uint64_t npieces;
  int do_up, do_down;
} tree_item_t;

void host_tree_item(tree_item_t *it, const tree_args_t *a, const kern_env_t *env, kern_lane_t lane);

/* The rule of host_tree.c's tree_step, piece by piece, which xccl-sim's
 * replay of hier's trees (tools/sim/sim_hier.c) asks too. The descent of
 * piece `down` may go once the node's climb is past it (when it climbs:
 * do_up), its parent's piece is in (the root: parent_in 1) and every child
 * has a free slot; the climb of the next piece once every child's piece is
 * in and the parent has a free slot (the root: parent_room 1). tree_step
 * tries the descent first, then the climb. */
static inline int tree_down_may(int do_up, uint64_t up, uint64_t down, int parent_in, int children_room) {
  return (!do_up || down < up) && parent_in && children_room;
}
static inline int tree_up_may(int children_in, int parent_room) { return children_in && parent_room; }

#endif
