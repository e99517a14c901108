/*
 * test_scatter_gather.c — the reduce-scatter and all-gather algorithms of
 * few steps, run under xccl-run with the algorithm forced (XCCL_ALGO=
 * reducescatter:ALGO,allgather:ALGO): what each rank sends to each peer,
 * against the schedule's formula, with the results checked (the
 * conformance matrix is test_collectives.c's); and the tuner's pick.
 *
 * usage: test_scatter_gather bytes rab|pat
 *        test_scatter_gather pick       (no XCCL_ALGO) pat for 8 bytes
 *            from 4 ranks on, where ceil(log2 k) steps beat the ring's
 *            k - 1 (and tie rab's on a power of two, pat the earlier
 *            entry); rank 0 prints the picks
 *
 * rab: Rabenseifner's halves (host_rab.h). p2 is the largest power of two
 * <= k, r = k - p2, S one rank's share in bytes. Rank 2i+1 (i < r) folds
 * into rank 2i; the p2 others are numbered n (2i -> i, q >= 2r -> q - r),
 * and block n is the shares of the ranks n stands for (2S for n < r, else
 * S). At each level, h = p2/2 ... 1, rank n exchanges with n ^ h:
 *   reduce-scatter: sends the blocks n ^ d, d in [h, 2h); the folded rank
 *                   sends its whole input (kS) in, and gets its share (S) back
 *   all-gather:     sends the blocks n ^ d, d in [0, h); the folded rank
 *                   sends its share (S) in, and gets the k-1 others back
 * so on k = p2 every rank sends (k-1)S in all, the ring's bytes, over log2 k
 * partners.
 *
 * pat: PAT (host_pat.h). For each d = 2^s < k, rank q sends to q + d the
 * n_s shares whose offset in [1, k) has lowest set bit s (n_s =
 * floor((k-1-d)/2d) + 1), nothing to any other rank: (k-1)S in all on any
 * k, which is also what the cost model's work (cost_work) says.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "test_util.h"
#include "xccl.h"

static int nranks, rank;
static const char *tested = "rab"; /* the algorithm under test */

static int pow2_below(int k) {
  int p = 1;
  while (p * 2 <= k) p *= 2;
  return p;
}

/* The rank numbered n among the p2 that halve (r pairs fold), and its block
 * in shares. */
static int real_rank(int n, int r) { return n < r ? 2 * n : n + r; }
static uint64_t block_shares(int n, int r) { return n < r ? 2 : 1; }

/* want[p]: the bytes this rank sends p in one reduce-scatter (gather = 0)
 * or all-gather (gather = 1) of shares of S bytes, by rab and by pat. */
static void want_rab(int gather, uint64_t S, uint64_t *want) {
  int p2 = pow2_below(nranks), r = nranks - p2;
  memset(want, 0, (size_t)nranks * sizeof(*want));
  if (rank < 2 * r && rank % 2) {
    want[rank - 1] = gather ? S : (uint64_t)nranks * S;
    return;
  }
  int n = rank < 2 * r ? rank / 2 : rank - r;
  if (rank < 2 * r) want[rank + 1] = gather ? (uint64_t)(nranks - 1) * S : S;
  for (int h = p2 / 2; h >= 1; h /= 2) {
    int lo = gather ? 0 : h, hi = gather ? h : 2 * h;
    for (int d = lo; d < hi; d++) want[real_rank(n ^ h, r)] += block_shares(n ^ d, r) * S;
  }
}

static void want_pat(uint64_t S, uint64_t *want) {
  memset(want, 0, (size_t)nranks * sizeof(*want));
  for (int d = 1; d < nranks; d *= 2) want[(rank + d) % nranks] += (uint64_t)((nranks - 1 - d) / (2 * d) + 1) * S;
}

/* The bytes the cost model says a rank moves (pat's work on one host). */
static double model_pat(int gather, size_t S) {
  if (nranks < 2) return 0; /* nothing to move (the work is for 2 or more) */
  algo_site_t site = {.flat = ALGO_LINK_LOCAL, .link[ALGO_LINK_LOCAL] = {0.5e-6, 7e9}};
  algo_work_t w;
  cost_work(ALGO_PAT, gather ? COLL_ALLGATHER : COLL_REDUCESCATTER, S, nranks, 65536, &site, &w);
  CHECK(w.ok, "pat's work refused %d ranks", nranks);
  return w.bytes[ALGO_LINK_LOCAL];
}

/* Input element i of rank q: small integers, so float sums are exact. */
static float input(int q, size_t i) { return (float)((q * 7 + (int)(i % 13)) % 11 - 5); }

/* Runs one reduce-scatter or all-gather of `share` float32 per rank (in
 * place for the all-gather), checks its result and that this rank sent
 * each peer want[] bytes; returns what it sent in all. */
static uint64_t run_checked(xcclComm_t comm, int gather, size_t share) {
  const char *coll = gather ? "allgather" : "reducescatter", *algo = NULL;
  XCHECK(xcclCommGetAlgorithm(comm, coll, share, xcclFloat32, &algo));
  CHECK(strcmp(algo, tested) == 0, "%s runs %s, not %s (XCCL_ALGO=reducescatter:%s,allgather:%s?)", coll, algo,
        tested, tested, tested);
  int pat = strcmp(tested, "pat") == 0;
  size_t k = (size_t)nranks, all = share * k;
  float *send = malloc(all * sizeof(float)), *recv = malloc(all * sizeof(float));
  CHECK(send && recv, "out of memory");
  for (size_t i = 0; i < all; i++) send[i] = input(rank, i);
  for (size_t i = 0; i < share; i++) recv[(size_t)rank * share + i] = input(rank, i);
  xcclPeerCounters_t before[64], after[64];
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  if (gather)
    XCHECK(xcclAllGather(recv + (size_t)rank * share, recv, share, xcclFloat32, comm, NULL));
  else
    XCHECK(xcclReduceScatter(send, recv, share, xcclFloat32, xcclSum, comm, NULL));
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  size_t bad = 0;
  for (size_t i = 0; i < (gather ? all : share); i++) {
    float want = 0;
    if (gather) {
      want = input((int)(i / share), i % share);
    } else {
      for (int q = 0; q < nranks; q++) want += input(q, (size_t)rank * share + i);
    }
    if (recv[i] != want && bad++ == 0)
      CHECK(0, "%s: element %zu is %g, expected %g", coll, i, (double)recv[i], (double)want);
  }
  CHECK(bad == 0, "%s: %zu wrong elements", coll, bad);
  uint64_t want[64], total = 0;
  if (pat)
    want_pat(share * sizeof(float), want);
  else
    want_rab(gather, share * sizeof(float), want);
  for (int p = 0; p < nranks; p++) {
    uint64_t sent = after[p].bytesSent - before[p].bytesSent;
    total += sent;
    CHECK(sent == want[p], "%s: sent %llu bytes to rank %d, expected %llu", coll, (unsigned long long)sent, p,
          (unsigned long long)want[p]);
  }
  if (pat) {
    double model = model_pat(gather, share * sizeof(float));
    CHECK((double)total == model, "%s: sent %llu bytes in all, the model %.0f", coll, (unsigned long long)total, model);
  }
  free(send);
  free(recv);
  return total;
}

static void mode_bytes(xcclComm_t comm) {
  if (nranks > 64) test_skip("more ranks than this test counts");
  /* Shares of 3 x 16 Ki float32 (192 KiB), several of the algorithms'
   * 64 KiB slots: pieces span blocks and levels overlap. pat: one float
   * more (pieces span shares unevenly), and 300001 (1.2 MB), whose
   * reduce-scatter runs in chunks from 3 ranks on (PAT_WORK_BYTES over
   * floor((k-1)/2) accumulators). */
  int pat = strcmp(tested, "pat") == 0;
  const size_t shares[] = {3 * 16384 + (size_t)pat, 300001};
  for (int i = 0; i < 1 + pat; i++) {
    uint64_t rs = run_checked(comm, 0, shares[i]), ag = run_checked(comm, 1, shares[i]);
    if (rank == 0)
      printf("%s bytes: %d ranks, %zu-byte shares: rank 0 sent %llu (reduce-scatter), %llu (all-gather)%s\n",
             tested, nranks, shares[i] * sizeof(float), (unsigned long long)rs, (unsigned long long)ag,
             pat ? ", as the model" : "");
  }
}

static void mode_pick(xcclComm_t comm) {
  static const char *colls[] = {"allgather", "reducescatter"};
  for (int c = 0; c < 2; c++)
    for (size_t count = 2; count <= (1u << 20); count *= 32) {
      const char *algo = NULL;
      XCHECK(xcclCommGetAlgorithm(comm, colls[c], count, xcclFloat32, &algo));
      if (rank == 0) printf("pick: %d ranks, %s of %zu-byte shares: %s\n", nranks, colls[c], count * 4, algo);
      /* A few bytes from 4 ranks on: PAT's ceil(log2 k) steps against the
       * ring's k - 1; on a power of two rab's half costs the same and,
       * earlier in the table, keeps it; elsewhere rab's fold adds 2. */
      const char *want = (nranks & (nranks - 1)) == 0 ? "rab" : "pat";
      if (count == 2 && nranks >= 4)
        CHECK(strcmp(algo, want) == 0, "%s of 8 bytes on %d ranks: %s, not %s", colls[c], nranks, algo, want);
    }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "bytes";
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  if (argc > 2) tested = argv[2];
  if (strcmp(mode, "bytes") == 0) {
    mode_bytes(comm);
  } else if (strcmp(mode, "pick") == 0) {
    mode_pick(comm);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  test_comm_end(comm);
  char name[64];
  snprintf(name, sizeof(name), "scatter_gather %s %s rank %d/%d", mode, tested, rank, nranks);
  return test_finish(name);
}
