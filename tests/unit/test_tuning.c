/*
 * test_tuning.c — XCCL_ALGO parsing and the cost model's choices.
 */
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "error.h"
#include "test_util.h"
#include "tuning.h"

static void expect_forced(const char *text, int coll, int algo) {
  int f[COLL_NKINDS];
  xcclResult_t r = tuning_parse(text, f);
  CHECK(r == xcclSuccess, "XCCL_ALGO=%s refused: %s", text, err_last());
  if (r == xcclSuccess) CHECK(f[coll] == algo, "XCCL_ALGO=%s: collective %d got %d, want %d", text, coll, f[coll], algo);
}

static void expect_refused(const char *text, const char *words) {
  int f[COLL_NKINDS] = {7, 7, 7, 7, 7, 7};
  xcclResult_t r = tuning_parse(text, f);
  CHECK(r == xcclInvalidUsage, "XCCL_ALGO=%s accepted", text);
  CHECK(strstr(err_last(), words) != NULL, "XCCL_ALGO=%s: message '%s' lacks '%s'", text, err_last(), words);
  CHECK(f[0] == 7 && f[COLL_NKINDS - 1] == 7, "XCCL_ALGO=%s: output written on failure", text);
}

/* Ranks taking turns on too few cores (tuning_site_hosts' cpus): the most
 * crowded host's ranks per core, every link priced by it, and the picks it
 * changes on 8 ranks of one host with 2 cores (measured there: rd at 16 KiB
 * where the plain table says rab). */
typedef struct {
  uint64_t hash;
  algo_cpus_t cpus;
} peer_t;

/* tuning_site_hosts on the hosts of peers (told apart by hash, as init's
 * comm_hosts_make does), with their CPUs or (with_cpus 0) none. */
static void site_hosts(algo_site_t *site, const peer_t *peers, int n, int with_cpus) {
  int forced[COLL_NKINDS];
  tuning_parse("", forced);
  void *mem = malloc(hier_layout_bytes(n));
  CHECK(mem != NULL, "out of memory");
  if (!mem) return;
  const hier_layout_t *l = hier_layout_make(n, &peers[0].hash, sizeof(peers[0]), mem);
  CHECK(tuning_site_hosts(site, l, with_cpus ? &peers[0].cpus : NULL, sizeof(peers[0]), 1, forced) == xcclSuccess,
        "%s", err_last());
  CHECK(site->layout == l, "the site does not point at the layout it was given");
  free(mem);
  site->layout = NULL;
}

static double share_of(peer_t *peers, int n, algo_site_t *site) {
  *site = (algo_site_t){.link[ALGO_LINK_LOCAL] = {0.5e-6, 7e9}};
  site_hosts(site, peers, n, 1);
  return site->cpu_share;
}

static void check_cpu_share(const int *none, size_t slot) {
  peer_t peers[8];
  for (int r = 0; r < 8; r++) peers[r] = (peer_t){42, {0, 2}}; /* 8 unbound ranks on 2 CPUs */
  algo_site_t plain = {.link[ALGO_LINK_LOCAL] = {0.5e-6, 7e9}}, site;
  site_hosts(&plain, peers, 8, 0);
  const algo_link_t *pl = &plain.link[ALGO_LINK_LOCAL], *sl = &site.link[ALGO_LINK_LOCAL];
  CHECK(pl->alpha_s == 0.5e-6 && pl->beta_bps == 7e9, "no CPUs given, yet the links changed");
  CHECK(share_of(peers, 8, &site) == 4, "8 ranks on 2 cores: share %g, want 4", site.cpu_share);
  CHECK(sl->alpha_s > 10 * pl->alpha_s && sl->beta_bps == pl->beta_bps / 4, "shared cores: alpha %g beta %g",
        sl->alpha_s, sl->beta_bps);
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 16384, 8, slot, &plain) == ALGO_RAB, "plain table at 16 KiB: not rab");
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 16384, 8, slot, &site) == ALGO_RD, "2 cores at 16 KiB: not rd");
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 256u << 10, 8, slot, &site) == ALGO_RAB, "2 cores at 256 KiB: not rab");
  /* Bound a core each (mpirun's default): 8 distinct CPUs, no sharing. */
  for (int r = 0; r < 8; r++) peers[r].cpus = (algo_cpus_t){r, 1};
  CHECK(share_of(peers, 8, &site) == 1 && sl->alpha_s == pl->alpha_s, "a core each: share %g", site.cpu_share);
  /* Two sockets of 4 cores, 4 ranks bound to each: 8 CPUs. */
  for (int r = 0; r < 8; r++) peers[r].cpus = (algo_cpus_t){r < 4 ? 0 : 4, 4};
  CHECK(share_of(peers, 8, &site) == 1, "a socket per 4 ranks: share %g", site.cpu_share);
  /* An unknown count (0) changes nothing. */
  for (int r = 0; r < 8; r++) peers[r].cpus = (algo_cpus_t){0, r == 5 ? 0 : 2};
  CHECK(share_of(peers, 8, &site) == 1, "a count unknown: share %g", site.cpu_share);
  /* Two hosts of 4 ranks: the most crowded decides (host 2: 4 ranks on 1 CPU). */
  for (int r = 0; r < 8; r++) peers[r] = (peer_t){1 + r / 4, r < 4 ? (algo_cpus_t){r, 1} : (algo_cpus_t){3, 1}};
  CHECK(share_of(peers, 8, &site) == 4 && site.link[ALGO_LINK_NET].alpha_s > ALGO_ALPHA_S, "hosts of 4, one on 1 CPU: share %g",
        site.cpu_share);
}

int main(void) {
  int none[COLL_NKINDS];
  CHECK(tuning_parse("", none) == xcclSuccess, "empty XCCL_ALGO refused");
  for (int c = 0; c < COLL_NKINDS; c++) CHECK(none[c] == -1, "collective %d forced by an empty XCCL_ALGO", c);

  expect_forced("rd", COLL_ALLREDUCE, ALGO_RD);
  expect_forced("rd", COLL_BROADCAST, -1); /* rd does not serve broadcast: left to the model */
  expect_forced("ring", COLL_REDUCESCATTER, ALGO_RING);
  expect_forced("allreduce:rd", COLL_ALLREDUCE, ALGO_RD);
  expect_forced("allreduce:rd", COLL_ALLGATHER, -1);
  expect_forced("ALLREDUCE:RING,broadcast:ring", COLL_ALLREDUCE, ALGO_RING);
  expect_forced("ALLREDUCE:RING,broadcast:ring", COLL_BROADCAST, ALGO_RING);

  expect_forced("tree", COLL_ALLREDUCE, ALGO_TREE);
  expect_forced("tree", COLL_REDUCE, ALGO_TREE); /* all-reduce, broadcast and reduce */
  expect_forced("tree", COLL_BROADCAST, ALGO_TREE);
  expect_forced("tree", COLL_ALLGATHER, -1);
  expect_forced("broadcast:tree,reduce:tree", COLL_REDUCE, ALGO_TREE);
  expect_forced("broadcast:tree,reduce:tree", COLL_ALLREDUCE, -1);
  expect_forced("rab", COLL_ALLREDUCE, ALGO_RAB);
  expect_forced("allreduce:rab", COLL_ALLREDUCE, ALGO_RAB);
  expect_forced("reducescatter:rab,allgather:rab", COLL_REDUCESCATTER, ALGO_RAB);
  expect_forced("reducescatter:rab,allgather:rab", COLL_ALLGATHER, ALGO_RAB);
  expect_forced("rab", COLL_REDUCE, -1); /* rab serves all-reduce, reduce-scatter and all-gather */
  expect_refused("broadcast:rab", "rab does not serve broadcast");
  expect_forced("pat", COLL_ALLGATHER, ALGO_PAT);
  expect_forced("reducescatter:pat", COLL_REDUCESCATTER, ALGO_PAT);
  expect_forced("pat", COLL_ALLREDUCE, -1); /* pat serves all-gather and reduce-scatter */
  expect_refused("allreduce:pat", "pat does not serve allreduce");
  expect_refused("trie", "'trie' is not an algorithm");
  expect_refused("allgather:tree", "tree does not serve allgather");
  expect_refused("allreduce:ringg", "not an algorithm");
  expect_refused("alreduce:ring", "'alreduce' is not a collective");
  expect_refused("broadcast:rd", "rd does not serve broadcast");
  expect_forced("alltoall:bruck", COLL_ALLTOALL, ALGO_BRUCK);
  expect_forced("bruck", COLL_ALLTOALL, ALGO_BRUCK);
  expect_forced("bruck", COLL_ALLREDUCE, -1);
  expect_forced("pairwise", COLL_ALLTOALL, ALGO_PAIRWISE);
  expect_forced("ring", COLL_ALLTOALL, -1); /* the ring has no all-to-all */
  expect_refused("alltoall:ring", "ring does not serve alltoall");
  expect_refused("allreduce:bruck", "bruck does not serve allreduce (it serves alltoall)");

  /* The model: small all-reduces go to recursive doubling (fewer steps),
   * large ones to the ring (pipelined, and it moves 2(k-1)/k of the buffer
   * instead of log2 k times it). */
  const size_t slot = 512 * 1024;
  const algo_site_t net = {.flat = ALGO_LINK_NET, .link[ALGO_LINK_NET] = {ALGO_ALPHA_S, ALGO_BETA_BPS}};
  for (int k = 2; k <= 64; k++) {
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, k, slot, &net) == ALGO_RD, "%d ranks, 8 B: not rd", k);
    /* On many ranks the tree's fewer hops pay for its larger share of bytes;
     * on 64, Rabenseifner's 12 exchanges over 64 pieces of the first half
     * (75 steps) beat the ring's 126 hops over 2 loops (127 steps), the
     * bytes being the ring's: the model makes it cheaper there. */
    algo_t big = tuning_pick(none, COLL_ALLREDUCE, 64u << 20, k, slot, &net);
    CHECK(big == ALGO_RING || (k > 32 && big == ALGO_TREE) || (k == 64 && big == ALGO_RAB),
          "%d ranks, 64 MiB: %s, not ring", k, algo_name(big));
    /* A few bytes of all-gather or reduce-scatter: PAT takes ceil(log2 k)
     * steps where the ring takes k-1 hops and Rabenseifner's half log2(p2)
     * (+2 for the fold), the same bytes; on a tie (2 and 3 ranks) the ring,
     * the earlier entry, and on a power of two rab, earlier than PAT. */
    int dims = 0;
    while ((1 << dims) < k) dims++;
    algo_t few = dims >= k - 1 ? ALGO_RING : (1 << dims) == k ? ALGO_RAB : ALGO_PAT;
    CHECK(tuning_pick(none, COLL_ALLGATHER, 8, k, slot, &net) == few, "%d ranks all-gather: not %s", k,
          algo_name(few));
    CHECK(tuning_pick(none, COLL_REDUCESCATTER, 8, k, slot, &net) == few, "%d ranks reduce-scatter: not %s", k,
          algo_name(few));
  }
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, 1, slot, &net) == ALGO_RING, "1 rank");
  CHECK(tuning_pick(none, COLL_ALLTOALL, 8, 1, slot, &net) == ALGO_PAIRWISE, "1 rank all-to-all: not pairwise");
  /* Broadcast and reduce: the tree's log2 k hops beat the ring's chain of
   * k-1 for small buffers from 4 ranks on; never on 2 (the same one hop:
   * a tie, which the ring takes) nor 3; large buffers stay on the ring, which
   * moves B where the tree's root moves 2B. */
  for (int c = COLL_BROADCAST; c <= COLL_REDUCE; c++) {
    for (int k = 2; k <= 64; k++) {
      algo_t small = tuning_pick(none, (coll_kind_t)c, 8, k, slot, &net);
      CHECK(small == (k >= 4 ? ALGO_TREE : ALGO_RING), "%d ranks, 8 B collective %d: %s", k, c, algo_name(small));
      algo_t big = tuning_pick(none, (coll_kind_t)c, 64u << 20, k, slot, &net);
      CHECK(big == ALGO_RING, "%d ranks, 64 MiB collective %d: %s, not ring", k, c, algo_name(big));
    }
    CHECK(tuning_pick(none, (coll_kind_t)c, 2u << 20, 2, slot, &net) == ALGO_RING, "2 ranks, 2 MiB %d", c);
  }
  /* Rabenseifner between rd and the ring on a power of two of ranks: it
   * moves the ring's bytes in 2 log2 k exchanges, where rd moves the buffer
   * log2 k times (1 MiB on 8 ranks: 6 + 1 - 1 steps against rd's 2 x 3 and
   * the ring's 14). Where the fold doubles its bytes (6 ranks) it does not. */
  for (int k = 4; k <= 64; k *= 2)
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 1u << 20, k, slot, &net) == ALGO_RAB, "%d ranks, 1 MiB: %s, not rab", k,
          algo_name(tuning_pick(none, COLL_ALLREDUCE, 1u << 20, k, slot, &net)));
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 1u << 20, 6, slot, &net) != ALGO_RAB, "6 ranks, 1 MiB: rab");
  /* The crossover from rd to the ring moves up with the rank count (more ring
   * hops to save), whatever the tree does between them. */
  size_t prev = 0;
  for (int k = 3; k <= 9; k++) {
    size_t lo = 8, hi = 64u << 20;
    while (hi - lo > 8) {
      size_t mid = lo + (hi - lo) / 2;
      if (cost_estimate_s(ALGO_RD, COLL_ALLREDUCE, mid, k, slot, &net) <
          cost_estimate_s(ALGO_RING, COLL_ALLREDUCE, mid, k, slot, &net))
        lo = mid;
      else
        hi = mid;
    }
    if (k == 4 || k == 8) CHECK(lo > prev, "crossover at %d ranks (%zu B) not above the one before (%zu B)", k, lo, prev);
    if (k == 4 || k == 8) prev = lo;
    printf("crossover rd -> ring at %d ranks: %zu bytes\n", k, lo);
  }
  /* One host whose ranks read each other's memory: direct for large
   * collectives it serves, never for small ones nor for reduce; forced by
   * XCCL_SHM_COPY=single/zero; never where the ranks cannot read each other. */
  const algo_site_t shm = {.link[ALGO_LINK_LOCAL] = {0.5e-6, 7e9}, .direct = 1, .zero_copy = 1, .zero_agreed = 1};
  algo_site_t shm_forced = shm, shm_no = shm, shm_cma = shm;
  shm_forced.direct_forced = 1, shm_forced.zero_agreed = 0;
  shm_no.direct = 0;
  shm_cma.zero_agreed = 0; /* malloc'd buffers: single copy, slower than the slots where it was measured */
  for (int k = 2; k <= 8; k++) {
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 16u << 20, k, slot, &shm) == ALGO_DIRECT, "%d ranks, 16 MiB: not direct",
          k);
    CHECK(tuning_pick(none, COLL_ALLGATHER, 16u << 20, k, slot, &shm) == ALGO_DIRECT, "%d ranks all-gather", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, k, slot, &shm) == ALGO_RD, "%d ranks, 8 B on shm: not rd", k);
    CHECK(tuning_pick(none, COLL_REDUCE, 16u << 20, k, slot, &shm) == ALGO_RING, "%d ranks reduce: not ring", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, k, slot, &shm_forced) == ALGO_DIRECT, "%d ranks, forced", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 16u << 20, k, slot, &shm_no) != ALGO_DIRECT, "%d ranks, no CMA", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 64u << 20, k, slot, &shm_cma) != ALGO_DIRECT, "%d ranks, single copy", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 16u << 20, k, slot, &net) != ALGO_DIRECT, "%d ranks, network", k);
  }
  /* All-to-all: pairwise's k-1 messages are in flight at once, each further
   * one costing its issue; Bruck's ceil(log2 k) rounds each cost a latency.
   * A few bytes go to Bruck only on many ranks (from 64 here; never up to
   * 32, where pairwise won every measured size), large blocks never (its
   * k/2 log2 k blocks per rank against pairwise's k-1). */
  for (int k = 2; k <= 256; k++) {
    algo_t small = tuning_pick(none, COLL_ALLTOALL, 8, k, slot, &net);
    if (k <= 32) CHECK(small == ALGO_PAIRWISE, "%d ranks, 8 B all-to-all: %s", k, algo_name(small));
    if (k >= 64) CHECK(small == ALGO_BRUCK, "%d ranks, 8 B all-to-all: %s", k, algo_name(small));
    algo_t big = tuning_pick(none, COLL_ALLTOALL, 1u << 20, k, slot, &net);
    CHECK(big == ALGO_PAIRWISE, "%d ranks, 1 MiB all-to-all: %s", k, algo_name(big));
  }
  /* The line all-reduce: where the site allows it (one host on shared
   * memory), all-reduces of up to 12 bytes on 2 to 8 ranks (on 16, rd's 4
   * steps cost less than 15 lines); never past 12 bytes, elsewhere, nor for
   * other collectives. Forced, it takes what it can hold and leaves the
   * rest to the model. */
  algo_site_t line = shm;
  line.line = 1;
  for (int k = 2; k <= 8; k++) {
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, k, slot, &line) == ALGO_LINE, "%d ranks, 8 B: not line", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 12, k, slot, &line) == ALGO_LINE, "%d ranks, 12 B: not line", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 16, k, slot, &line) != ALGO_LINE, "%d ranks, 16 B: line", k);
    CHECK(tuning_pick(none, COLL_BROADCAST, 8, k, slot, &line) != ALGO_LINE, "%d ranks, broadcast: line", k);
    CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, k, slot, &shm) != ALGO_LINE, "%d ranks, site without line", k);
  }
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, 16, slot, &line) == ALGO_RD, "16 ranks, 8 B: not rd");
  CHECK(tuning_pick(none, COLL_ALLREDUCE, 8, 65, slot, &line) != ALGO_LINE, "65 ranks: line");
  expect_forced("line", COLL_ALLREDUCE, ALGO_LINE);
  expect_refused("broadcast:line", "line does not serve broadcast");
  int forced[COLL_NKINDS];
  tuning_parse("allreduce:line", forced);
  CHECK(tuning_pick(forced, COLL_ALLREDUCE, 12, 4, slot, &line) == ALGO_LINE, "forced line: 12 B not line");
  CHECK(tuning_pick(forced, COLL_ALLREDUCE, 16, 4, slot, &line) == ALGO_RD, "forced line: 16 B not the model's rd");
  tuning_parse("allreduce:ring", forced);
  CHECK(tuning_pick(forced, COLL_ALLREDUCE, 8, 16, slot, &net) == ALGO_RING, "forced ring ignored");
  check_cpu_share(none, slot);
  return test_finish("tuning");
}
