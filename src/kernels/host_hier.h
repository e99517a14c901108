/*
 * host_hier.h — the hierarchical all-reduce, for ranks that span hosts:
 * (1) inside each host a reduce-scatter, so that each rank owns shards of
 * the buffer; (2) between hosts, per shard, an all-reduce among the ranks
 * that own it, one per host, as a ring (the bandwidth-optimal one: a rank
 * sends 2(H-1)/H of each shard it owns, the only bytes that cross hosts);
 * (3) inside each host an all-gather of the shards.
 *
 * Layout. Hosts are numbered in order of their lowest rank, a host's ranks
 * in rank order (their local index). The buffer is G shards, G the most
 * ranks any host has (count/G elements, the first count % G one longer).
 * On a host of g ranks, shard s belongs to local rank s % g: every shard
 * has exactly one owner on every host, and a rank on a smaller host owns
 * several (on a host of one rank, all of them). One host: (2) is empty;
 * one rank per host: (1) and (3) are, and (2) is the plain ring.
 *
 * (1) A rank sends each shard it does not own to its owner; an owner
 *     reduces its own input and its peers' contributions into recvbuff, in
 *     local-index order whatever order they arrive in (fixed order: the
 *     same bits from run to run).
 * (2) For each shard it owns, in rising shard order, an all-reduce among
 *     the shard's owners over the owner's partial sum, either
 *     - a ring (host_ring.h's item, on a ring of H positions: the owner on
 *       host h+1 is next, on host h-1 previous): 2(H-1) latency steps, the
 *       fewest bytes; or
 *     - a tree (host_tree.h's item, all-reduce: reduce up, broadcast down,
 *       pipelined in slots; 2 ceil(log2 H) latency steps), on the in-order
 *       tree of host_tree_links over H positions, rotated by the shard (host
 *       h at position (h - s) mod H), so that a host is interior in some
 *       shards' trees and a leaf in others' (hier_tree_links);
 *     the same for every shard of one operation, chosen by its size on every
 *     rank alike (algo_hier.c). Every owner of a shard processes its shards
 *     in the same rising order, so rings or trees that share a pair of
 *     ranks use its connection one after the other and in the same order
 *     at both ends.
 * (3) An owner sends each shard it owns to every other rank of its host;
 *     the others copy it into recvbuff. xcclAvg divides once, by k, on the
 *     owner, before (3): sums in (1) and (2).
 * Each shard's result is made on its ring and copied everywhere: every rank
 * ends with the same bits.
 *
 * Each piece of a stream is one slot (a stream is one shard to one peer);
 * the streams of one phase all run at once, the phases one after the
 * other (the receives of (3) may start once (1) is done).
 */
#ifndef XCCL_KERNELS_HOST_HIER_H
#define XCCL_KERNELS_HOST_HIER_H

#include <stddef.h>

#include "host_engine.h"
#include "host_partners.h"
#include "host_ring.h"
#include "host_tree.h"

/* Where the ranks are: the same on every rank. */
typedef struct {
  int nranks, nhosts;
  int shards;            /* G: the most ranks on one host */
  const int *host_of;    /* rank -> host */
  const int *local_of;   /* rank -> its index among its host's ranks */
  const int *host_first; /* host -> its first entry of host_ranks (nhosts + 1 entries) */
  const int *host_ranks; /* the ranks of host 0, then host 1, ... each in rank order */
} hier_layout_t;

/* The ranks on host h: how many, and which (hier_host_size of them, in rank order). */
static inline int hier_host_size(const hier_layout_t *l, int h) { return l->host_first[h + 1] - l->host_first[h]; }
static inline const int *hier_host_ranks(const hier_layout_t *l, int h) { return l->host_ranks + l->host_first[h]; }
/* The rank of host h that owns shard s. */
static inline int hier_owner(const hier_layout_t *l, int h, int s) {
  return l->host_ranks[l->host_first[h] + s % hier_host_size(l, h)];
}
/* How many shards rank owns. */
static inline int hier_owned(const hier_layout_t *l, int rank) {
  int g = hier_host_size(l, l->host_of[rank]), me = l->local_of[rank];
  return (l->shards - me + g - 1) / g;
}

/* The layout of nranks ranks whose hosts are told apart by host_hash (one
 * 64-bit value per rank, `stride` bytes apart), into mem (hier_layout_bytes
 * of it, aligned as malloc's); the result points into mem. */
size_t hier_layout_bytes(int nranks);
hier_layout_t *hier_layout_make(int nranks, const void *host_hash, size_t stride, void *mem);

/* Phase (2)'s shapes, as a mask of what a communicator may run. */
enum { HIER_INTER_RING = 1, HIER_INTER_TREE = 2 };

/* The place in shard s's tree (phase (2), tree variant) of its owner on
 * host h: host_tree_links' all-reduce tree 0 over the H hosts, host h at
 * position (h - s) mod H, its parent and children given as ranks (their
 * owners of s). */
void hier_tree_links(const hier_layout_t *l, int h, int s, tree_links_t *out);

/* The distinct ranks rank exchanges with (both directions with each): the
 * other ranks of its host, then, per shard it owns, its neighbours on the
 * shard's ring (inter & HIER_INTER_RING) and tree (inter & HIER_INTER_TREE).
 * Writes at most max of them to peers; returns how many there are (more
 * than max: peers holds the first max). */
int host_hier_partners(const hier_layout_t *l, int rank, unsigned inter, int *peers, int max);

/* One direction of one shard with one peer. */
typedef struct {
  slot_fifo_t *f;
  uint64_t *step;
  int peer, is_recv;
  int after;        /* the stream on the same fifo that goes first, -1: none */
  int reduce_after; /* (1) receives: the stream that reduces the same shard before, -1: the first */
  size_t off, total, done; /* the shard's first element; its elements; moved so far */
} hier_stream_t;

/* The order between a rank's streams: the next n elements of a stream that
 * has moved `done` may move once the stream before it on its fifo is
 * complete (after_complete; 1 when there is none) and, when one reduces the
 * same shard before it (has_prior), that one has moved prior_done >= done +
 * n. host_hier.c's stream_step and xccl-sim's replay (tools/sim/sim_hier.c)
 * both ask this. */
static inline int hier_stream_may(int after_complete, int has_prior, size_t prior_done, size_t done, size_t n) {
  return after_complete && (!has_prior || prior_done >= done + n);
}

typedef struct {
  kern_item_t base;
  const partner_args_t *args;
  const hier_layout_t *layout;
  int host, g, me, nown; /* my host, its size, my local index, shards I own */
  int phase;             /* 0: (1); 1: (2); 2: (3); 3: done */
  int cur;               /* (2): the owned shard whose ring or tree runs (shard me + cur * g) */
  int ring_on;           /* ring_item (tree_item when tree) is set up for shard cur */
  int tree;              /* (2) runs as trees, not rings */
  size_t piece_elems;
  int n1s, n1r, n3s, n3r; /* streams of each kind, in this order in st */
  ring_args_t ring;
  ring_channel_t chan;
  ring_item_t ring_item;
  tree_args_t tree_args;
  tree_item_t tree_item;
  hier_stream_t st[];
} hier_item_t;

/* The bytes of rank's hier_item_t on layout l (a multiple of 8). */
size_t host_hier_item_bytes(const hier_layout_t *l, int rank);

/* Sets up it (host_hier_item_bytes of memory) for one all-reduce of a on
 * layout l (which, like a and the fifos, outlive it): a->nranks and a->rank
 * are the communicator's, a's fifo tables hold the connections of
 * host_hier_partners; tree: phase (2) as trees (every rank of the
 * operation must pass the same). */
void host_hier_item(hier_item_t *it, const partner_args_t *a, const hier_layout_t *l, const kern_env_t *env,
                    kern_lane_t lane, int tree);

#endif
