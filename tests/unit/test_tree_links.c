/*
 * test_tree_links.c — the double binary tree's shape (host_tree.h), for
 * every rank count up to 1,100 and a few up to 65,536: each tree is one
 * tree over all ranks (parent and child agree, one root, every rank reaches
 * it), of depth ceil(log2 k) at most; the two all-reduce trees share few
 * interior ranks; broadcast and reduce's trees are rooted at their root.
 * Over all-reduce's trees and every root's, a rank's parents and children
 * lie 2^j away (mod k), so the union of a rank's links (what ranks of one
 * process connect at init, algo_tree.c) is at most 2 ceil(log2 k) per tree.
 */
#include <stdlib.h>
#include <string.h>

#include "host_tree.h"
#include "test_util.h"

static int ceil_log2(int k) {
  int d = 0;
  while ((1 << d) < k) d++;
  return d;
}

/* Tree t of k ranks rooted at root (-1: all-reduce's); returns how many
 * ranks are interior (have a child). interior[r] set for those. */
static int check_tree(int k, int t, int root, char *interior) {
  tree_links_t *l = malloc(sizeof(*l) * (size_t)k);
  int roots = 0, ninterior = 0, bad = 0;
  for (int r = 0; r < k; r++) host_tree_links(k, r, t, root, &l[r]);
  for (int r = 0; r < k && !bad; r++) {
    interior[r] = l[r].nchild > 0;
    ninterior += interior[r];
    if (l[r].parent < 0) {
      roots++;
      if (root >= 0 && r != root) {
        CHECK(0, "k %d tree %d: rank %d is a root, not %d", k, t, r, root);
        bad = 1;
      }
    } else {
      const tree_links_t *p = &l[l[r].parent];
      int found = 0;
      for (int c = 0; c < p->nchild; c++) found |= p->child[c] == r;
      if (!found) {
        CHECK(0, "k %d tree %d: %d's parent %d does not list it", k, t, r, l[r].parent);
        bad = 1;
      }
    }
    for (int c = 0; c < l[r].nchild && !bad; c++)
      if (l[r].child[c] < 0 || l[r].child[c] >= k || l[l[r].child[c]].parent != r) {
        CHECK(0, "k %d tree %d: %d's child %d does not name it parent", k, t, r, l[r].child[c]);
        bad = 1;
      }
    /* The way up ends at the root within depth steps. */
    int up = r, steps = 0;
    while (l[up].parent >= 0 && steps <= k) up = l[up].parent, steps++;
    if (!bad && (steps > ceil_log2(k) || steps > l[r].depth)) {
      CHECK(0, "k %d tree %d: rank %d is %d steps from the root, depth %d", k, t, r, steps, l[r].depth);
      bad = 1;
    }
  }
  if (!bad) CHECK(roots == 1, "k %d tree %d: %d roots", k, t, roots);
  free(l);
  return ninterior;
}

static void check_k(int k) {
  char *in0 = malloc((size_t)k), *in1 = malloc((size_t)k);
  check_tree(k, 0, -1, in0);
  check_tree(k, 1, -1, in1);
  int both = 0;
  for (int r = 0; r < k; r++) both += in0[r] && in1[r];
  /* Interior in one and a leaf in the other, but for a handful at the
   * edges (the trees of 1..k are not all perfect). */
  CHECK(both <= 2 + ceil_log2(k), "k %d: %d ranks interior in both all-reduce trees", k, both);
  int roots[] = {0, k / 2, k - 1};
  for (int i = 0; i < 3; i++)
    for (int t = 0; t < 2; t++) check_tree(k, t, roots[i], in0);
  free(in0);
  free(in1);
}

/* 1 if d or -d (mod k) is a power of two. */
static int pow2_apart(int k, int d) {
  int a = ((d % k) + k) % k, b = (k - a) % k;
  return (a && !(a & (a - 1))) || (b && !(b & (b - 1)));
}

/* Every link of every tree of k ranks (all-reduce's and each root's) joins
 * ranks a power of two apart, and no rank has more than 2 ceil(log2 k)
 * distinct neighbours per tree over all of them. */
static void check_union(int k) {
  char *seen = calloc((size_t)k * (size_t)k, 1); /* seen[r * k + q]: q neighbours r, this tree */
  for (int t = 0; t < 2; t++) {
    memset(seen, 0, (size_t)k * (size_t)k);
    int bad = 0;
    for (int root = -1; root < k && !bad; root++)
      for (int r = 0; r < k && !bad; r++) {
        tree_links_t l;
        host_tree_links(k, r, t, root, &l);
        if (l.parent < 0) continue;
        if (!pow2_apart(k, l.parent - r)) {
          CHECK(0, "k %d tree %d root %d: %d's parent %d not a power of two away", k, t, root, r, l.parent);
          bad = 1;
        }
        seen[(size_t)r * (size_t)k + (size_t)l.parent] = seen[(size_t)l.parent * (size_t)k + (size_t)r] = 1;
      }
    for (int r = 0; r < k && !bad; r++) {
      int n = 0;
      for (int q = 0; q < k; q++) n += seen[(size_t)r * (size_t)k + (size_t)q];
      if (n > 2 * ceil_log2(k)) {
        CHECK(0, "k %d tree %d: rank %d has %d neighbours over every root", k, t, r, n);
        bad = 1;
      }
    }
  }
  free(seen);
}

int main(void) {
  for (int k = 1; k <= 1100; k++) check_k(k);
  for (int k = 1; k <= 200; k++) check_union(k);
  check_union(1000);
  int big[] = {4096, 8191, 65536};
  for (int i = 0; i < 3; i++) check_k(big[i]);
  return test_finish("tree_links");
}
