/*
 * test_tree_rooted.c — broadcast and reduce on the double binary tree
 * (issue 25), run with XCCL_ALGO=tree: its trees are rooted at the
 * operation's root, so their connections are made per root as roots come.
 *
 * usage: test_tree_rooted MODE [N]   with MODE one of
 *   roots     (under xccl-run) broadcasts and reduces over a sequence of
 *             roots, each after another on a different root, in and out of
 *             place, some in one group, with tree all-reduces between them;
 *             every result checked, and what each rank sent to each peer in
 *             every single operation against the rooted trees' formula
 *   init_all N (one process) the same collectives on every root over the N
 *             comms of xcclCommInitAll, grouped from one thread: their
 *             connections are made at init, for every root
 *
 * The trees are built here by brute force from the design (host_tree.h):
 * the in-order binary tree of 1..k (a range's root is its element with the
 * most trailing zeros), rank r at index (r - R + top) mod k in tree 0 and
 * (R - r + top) mod k in tree 1 for root R, top the index of the tree's root.
 * Tree 0 carries the first count - count/2 elements, tree 1 the rest; a
 * broadcast sends a rank's part of each tree to each child there, a reduce
 * sends it to the parent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "xccl.h"

#define MAXR 64

static int nranks, rank;

/* u (1-based) of rank r in tree t rooted at root, k ranks. */
static int tree_u(int k, int t, int root, int r) {
  int top = 1;
  while (top * 2 <= k) top *= 2;
  top -= 1; /* the in-order tree of 1..k is rooted at its largest power of two */
  int v = t == 0 ? r - root + top : root - r + top;
  return ((v % k) + k) % k + 1;
}

/* Bytes rank sends to each peer in a broadcast (is_bcast) or reduce of
 * count int32 from root, into want[]. */
static void rooted_want(int is_bcast, int root, size_t count, uint64_t *want) {
  int parent[MAXR + 1] = {0};
  test_inorder_parents(1, nranks, 0, parent);
  size_t part[2] = {count - count / 2, count / 2};
  for (int q = 0; q < nranks; q++) want[q] = 0;
  for (int t = 0; t < 2; t++) {
    int me = tree_u(nranks, t, root, rank);
    CHECK((parent[me] == 0) == (rank == root), "tree %d here: rank %d at the top or not, root %d", t, rank, root);
    for (int q = 0; q < nranks; q++) {
      int u = tree_u(nranks, t, root, q);
      int to = is_bcast ? parent[u] == me : parent[me] == u;
      if (q != rank && to) want[q] += part[t] * sizeof(int32_t);
    }
  }
}

static uint32_t bcast_value(int root, size_t i, int salt) {
  uint64_t x = (uint64_t)root * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull + (uint64_t)salt;
  x ^= x >> 31;
  return (uint32_t)(x * 0x94d049bb133111ebull >> 32);
}

static int32_t red_value(int r, size_t i, int salt) {
  return (int32_t)((r * 7919 + (int)(i % 100003) * 31 + salt) % 2001) - 1000;
}

static int32_t red_sum(size_t i, int salt) {
  int64_t s = 0;
  for (int r = 0; r < nranks; r++) s += red_value(r, i, salt);
  return (int32_t)s;
}

/* One operation's buffers and what to check. */
typedef struct {
  int is_bcast, root, inplace, salt;
  size_t count;
  int32_t *send, *recv;
} op_t;

static void op_prepare(op_t *o, int me) {
  o->send = malloc((o->count ? o->count : 1) * sizeof(int32_t));
  o->recv = o->inplace ? o->send : malloc((o->count ? o->count : 1) * sizeof(int32_t));
  for (size_t i = 0; i < o->count; i++) {
    o->send[i] =
        o->is_bcast ? (me == o->root ? (int32_t)bcast_value(o->root, i, o->salt) : -7) : red_value(me, i, o->salt);
    if (!o->inplace) o->recv[i] = -5;
  }
}

static xcclResult_t op_issue(const op_t *o, xcclComm_t comm) {
  if (o->is_bcast) return xcclBroadcast(o->send, o->recv, o->count, xcclInt32, o->root, comm, NULL);
  return xcclReduce(o->send, o->recv, o->count, xcclInt32, xcclSum, o->root, comm, NULL);
}

static void op_check(op_t *o, int me, const char *what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < o->count; i++) {
    int32_t want;
    if (o->is_bcast)
      want = (int32_t)bcast_value(o->root, i, o->salt);
    else if (me == o->root)
      want = red_sum(i, o->salt);
    else
      want = o->inplace ? red_value(me, i, o->salt) : -5; /* a non-root's recvbuff is left alone */
    if (o->recv[i] != want && bad++ == 0) first = i;
  }
  CHECK(bad == 0, "%s: rank %d: %s root %d count %zu%s: %zu wrong elements, first [%zu] = %d", what, me,
        o->is_bcast ? "broadcast" : "reduce", o->root, o->count, o->inplace ? " in place" : "", bad, first,
        o->recv[first]);
  if (!o->inplace) free(o->recv);
  free(o->send);
}

/* A tree all-reduce between rooted ones: its trees are other ranks'. */
static void allreduce_check(xcclComm_t comm, size_t count) {
  int32_t *b = malloc(count * sizeof(int32_t));
  for (size_t i = 0; i < count; i++) b[i] = red_value(rank, i, 5);
  XCHECK(xcclAllReduce(b, b, count, xcclInt32, xcclSum, comm, NULL));
  size_t bad = 0;
  for (size_t i = 0; i < count; i++) bad += b[i] != red_sum(i, 5);
  CHECK(bad == 0, "rank %d: all-reduce between rooted trees: %zu wrong elements", rank, bad);
  free(b);
}

/* One operation alone, its result and the bytes sent to every peer. */
static void single(xcclComm_t comm, op_t o) {
  xcclPeerCounters_t before[MAXR], after[MAXR];
  uint64_t want[MAXR];
  rooted_want(o.is_bcast, o.root, o.count, want);
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  op_prepare(&o, rank);
  xcclResult_t res = op_issue(&o, comm);
  CHECK(res == xcclSuccess, "%s root %d: %s: %s", o.is_bcast ? "broadcast" : "reduce", o.root, xcclGetErrorString(res),
        xcclGetLastError(NULL));
  /* A call returns once the transport took its last slot: sends are exact. */
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  for (int p = 0; p < nranks; p++) {
    uint64_t sent = after[p].bytesSent - before[p].bytesSent;
    CHECK(sent == want[p], "rank %d: %s root %d count %zu: sent %llu bytes to rank %d, the trees say %llu", rank,
          o.is_bcast ? "broadcast" : "reduce", o.root, o.count, (unsigned long long)sent, p,
          (unsigned long long)want[p]);
  }
  op_check(&o, rank, "single");
}

static void mode_roots(xcclComm_t comm) {
  if (nranks > MAXR) test_skip("more ranks than this test counts");
  const size_t counts[] = {50153, 7, 1, 0}; /* several 64 KiB slots per tree; one; tree 0 only; none */
  int roots[] = {0, nranks - 1, 1 % nranks, nranks / 2, 0, 3 % nranks};
  int nroots = (int)(sizeof(roots) / sizeof(roots[0]));
  for (int i = 0; i < nroots; i++) {
    size_t count = counts[i % 4];
    single(comm, (op_t){.is_bcast = 1, .root = roots[i], .inplace = i & 1, .salt = i, .count = count});
    single(comm,
           (op_t){.is_bcast = 0, .root = roots[(i + 1) % nroots], .inplace = !(i & 1), .salt = i, .count = count});
    if (i == 2) allreduce_check(comm, 40000);
  }
  /* Every root, a large count once around. */
  for (int r = 0; r < nranks; r++) {
    single(comm, (op_t){.is_bcast = 0, .root = r, .salt = 100 + r, .count = 50153});
    single(comm, (op_t){.is_bcast = 1, .root = (r + 2) % nranks, .salt = 200 + r, .count = 50153});
  }
  /* Several roots in one group: their connections in one launch. */
  op_t g[3] = {{.is_bcast = 1, .root = nranks - 1, .salt = 31, .count = 30001},
               {.is_bcast = 0, .root = 2 % nranks, .salt = 32, .count = 30001},
               {.is_bcast = 1, .root = nranks / 2, .inplace = 1, .salt = 33, .count = 777}};
  XCHECK(xcclGroupStart());
  for (int i = 0; i < 3; i++) {
    op_prepare(&g[i], rank);
    XCHECK(op_issue(&g[i], comm));
  }
  xcclResult_t res = xcclGroupEnd();
  CHECK(res == xcclSuccess, "group of rooted trees: %s: %s", xcclGetErrorString(res), xcclGetLastError(NULL));
  for (int i = 0; i < 3; i++) op_check(&g[i], rank, "group");
  allreduce_check(comm, 999);
  if (rank == 0)
    printf("roots: %d ranks: broadcasts and reduces on %d roots, bytes per peer as the trees say\n", nranks, nranks);
}

static void mode_init_all(int n) {
  xcclComm_t c[MAXR];
  XCHECK(xcclCommInitAll(c, n, NULL));
  nranks = n;
  for (int root = 0; root < n; root++)
    for (int is_bcast = 0; is_bcast < 2; is_bcast++) {
      op_t o[MAXR];
      XCHECK(xcclGroupStart());
      for (int i = 0; i < n; i++) {
        o[i] = (op_t){.is_bcast = is_bcast, .root = root, .inplace = root & 1, .salt = root, .count = 20011};
        op_prepare(&o[i], i);
        XCHECK(op_issue(&o[i], c[i]));
      }
      xcclResult_t res = xcclGroupEnd();
      CHECK(res == xcclSuccess, "init_all: grouped %s root %d: %s: %s", is_bcast ? "broadcast" : "reduce", root,
            xcclGetErrorString(res), xcclGetLastError(NULL));
      for (int i = 0; i < n; i++) op_check(&o[i], i, "init_all");
    }
  for (int i = 0; i < n; i++) XCHECK(xcclCommDestroy(c[i]));
  printf("init_all: %d comms in one process: broadcast and reduce on every root\n", n);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "roots";
  char name[64];
  if (strcmp(mode, "init_all") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 1 || n > MAXR) return 2;
    mode_init_all(n);
    snprintf(name, sizeof(name), "tree_rooted init_all %d", n);
    return test_finish(name);
  }
  if (strcmp(mode, "roots") != 0) {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  mode_roots(comm);
  test_comm_end(comm);
  snprintf(name, sizeof(name), "tree_rooted %s rank %d/%d", mode, rank, nranks);
  return test_finish(name);
}
