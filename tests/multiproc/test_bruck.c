/*
 * test_bruck.c — Bruck's all-to-all, run with XCCL_ALGO=alltoall:bruck under
 * xccl-run: results block by block, what each rank sends to each peer
 * against the algorithm's formula, and the all-to-all inside
 * a group beside an all-reduce (the conformance matrix is test_p2p.c's
 * alltoall mode under the same XCCL_ALGO).
 *
 * usage: test_bruck (under xccl-run)
 *
 * The formula. Block i of rank q is what q sends to q + i (mod k). In round
 * j, for each d = 2^j < k, q sends to q + d every block whose number i in
 * [1, k) has bit j set: B bytes per such block, nothing to any other rank
 * (and as many from q - d).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "xccl.h"

static int nranks, rank;

/* Element e of the block src sends dst. */
static int32_t value(int src, int dst, size_t e) { return (int32_t)(src * 1000003 + dst * 7919 + (int)(e % 9973)); }

/* want[p]: bytes to p in one all-to-all of B-byte blocks. */
static void want_bytes(uint64_t B, uint64_t *want) {
  memset(want, 0, (size_t)nranks * sizeof(*want));
  for (int d = 1; d < nranks; d *= 2) {
    uint64_t blocks = 0;
    for (int i = 1; i < nranks; i++) blocks += (i & d) != 0;
    want[(rank + d) % nranks] += blocks * B;
  }
}

/* One all-to-all of count int32 per block (in a group with an all-reduce
 * when grouped): its blocks, and the bytes to and from every peer. */
static void run_checked(xcclComm_t comm, size_t count, int grouped) {
  const char *algo = NULL;
  XCHECK(xcclCommGetAlgorithm(comm, "alltoall", count, xcclInt32, &algo));
  CHECK(strcmp(algo, "bruck") == 0, "alltoall of %zu runs %s, not bruck (XCCL_ALGO=alltoall:bruck?)", count, algo);
  size_t k = (size_t)nranks, all = count * k;
  int32_t *send = malloc(all * sizeof(int32_t)), *recv = malloc(all * sizeof(int32_t));
  CHECK(send && recv, "out of memory");
  for (int p = 0; p < nranks; p++)
    for (size_t e = 0; e < count; e++) send[(size_t)p * count + e] = value(rank, p, e);
  memset(recv, 0xa5, all * sizeof(int32_t));
  int32_t sum = rank, total = 0;
  xcclPeerCounters_t before[64], after[64];
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  if (grouped) XCHECK(xcclGroupStart());
  XCHECK(xcclAllToAll(send, recv, count, xcclInt32, comm, NULL));
  if (grouped) XCHECK(xcclAllReduce(&sum, &total, 1, xcclInt32, xcclSum, comm, NULL));
  if (grouped) XCHECK(xcclGroupEnd());
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  size_t bad = 0;
  for (int p = 0; p < nranks; p++)
    for (size_t e = 0; e < count; e++) {
      int32_t got = recv[(size_t)p * count + e], want = value(p, rank, e);
      if (got != want && bad++ == 0)
        CHECK(0, "count %zu: element %zu of the block from rank %d is %d, expected %d", count, e, p, got, want);
    }
  CHECK(bad == 0, "count %zu: %zu wrong elements", count, bad);
  if (grouped) CHECK(total == nranks * (nranks - 1) / 2, "grouped all-reduce gave %d", total);
  uint64_t want[64];
  want_bytes(count * sizeof(int32_t), want);
  for (int p = 0; p < nranks && !grouped; p++) { /* grouped: the all-reduce's bytes are in the counters too */
    uint64_t sent = after[p].bytesSent - before[p].bytesSent;
    CHECK(sent == want[p], "count %zu: sent %llu bytes to rank %d, expected %llu", count, (unsigned long long)sent, p,
          (unsigned long long)want[p]);
  }
  free(send);
  free(recv);
}

static void run_all(xcclComm_t comm) {
  if (nranks > 64) test_skip("more ranks than this test counts");
  /* 1 and 13 elements: one piece per round; 40000 (160 KB blocks): rounds
   * of several 64 KiB pieces, pieces that span blocks. */
  static const size_t counts[] = {1, 13, 40000};
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) run_checked(comm, counts[i], 0);
  run_checked(comm, 13, 1);
  if (rank == 0) printf("bruck bytes: %d ranks, counts 1, 13, 40000 and 13 in a group: checked\n", nranks);
}

int main(void) {
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  run_all(comm);
  test_comm_end(comm);
  char name[64];
  snprintf(name, sizeof(name), "bruck rank %d/%d", rank, nranks);
  return test_finish(name);
}
