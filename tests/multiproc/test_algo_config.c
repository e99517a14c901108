/*
 * test_algo_config.c — choosing algorithms per communicator (issue 25):
 * config->algo forces them for one communicator and its NULL-config splits,
 * xcclCommGetAlgorithm says what the tuner runs, xcclGetAlgorithms what
 * serves a collective. Run under xccl-run with 4 ranks or more and
 * XCCL_NCHANNELS=1, so that a ring rank sends to one peer.
 *
 * That the forced algorithm is the one that runs is seen in the traffic: an
 * all-reduce sends to one peer under the ring, to log2(k) peers under
 * recursive doubling (k a power of two).
 */
#include <string.h>

#include "test_util.h"

static int rank, nranks;

/* Peers this rank sent bytes to during one all-reduce of count floats. */
static int peers_sent_to(xcclComm_t comm, size_t count) {
  xcclPeerCounters_t before[64], after[64];
  float *buf = calloc(count, sizeof(float));
  for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1);
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  XCHECK(xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL));
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  float want = (float)nranks * (float)(nranks + 1) / 2;
  CHECK(buf[0] == want && buf[count - 1] == want, "all-reduce gave %g, %g; want %g", buf[0], buf[count - 1], want);
  free(buf);
  int n = 0;
  for (int p = 0; p < nranks; p++) n += after[p].bytesSent > before[p].bytesSent;
  return n;
}

static xcclComm_t split_with(xcclComm_t parent, const char *algo, xcclResult_t *res_p) {
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.algo = algo;
  xcclComm_t nc = NULL;
  *res_p = xcclCommSplit(parent, 0, rank, &nc, &cfg);
  return *res_p == xcclSuccess ? nc : NULL;
}

static void check_algorithm(xcclComm_t comm, const char *coll, size_t count, const char *want, const char *what) {
  const char *got = NULL;
  XCHECK(xcclCommGetAlgorithm(comm, coll, count, xcclFloat32, &got));
  CHECK(got && strcmp(got, want) == 0, "%s: %s of %zu floats runs %s, want %s", what, coll, count, got ? got : "?",
        want);
}

static void check_lists(xcclComm_t comm) {
  const char *names[16];
  int n = 16, ring = 0, rd = 0;
  XCHECK(xcclGetAlgorithms("allreduce", names, &n));
  for (int i = 0; i < n && i < 16; i++) ring |= !strcmp(names[i], "ring"), rd |= !strcmp(names[i], "rd");
  CHECK(n >= 3 && ring && rd, "allreduce's algorithms: %d, ring %d rd %d", n, ring, rd);
  int m = 0;
  XCHECK(xcclGetAlgorithms("allgather", NULL, &m));
  CHECK(m >= 1 && m < n, "allgather has %d algorithms, allreduce %d", m, n);
  int k = 4;
  CHECK(xcclGetAlgorithms("gather", names, &k) == xcclInvalidArgument, "gather has no algorithms");
  CHECK(strstr(xcclGetLastError(NULL), "\"gather\" is not one with algorithms") != NULL, "%s",
        xcclGetLastError(NULL));
  CHECK(xcclGetAlgorithms("allreduce", NULL, NULL) == xcclInvalidArgument, "NULL count");
  const char *got = "unchanged";
  CHECK(xcclCommGetAlgorithm(comm, "scatter", 8, xcclFloat32, &got) == xcclInvalidArgument &&
            !strcmp(got, "unchanged"),
        "scatter: no algorithm to report, nothing written");
  /* All-to-all's two; on this few ranks pairwise for any size (Bruck pays
   * from some 40 ranks on). */
  k = 4;
  XCHECK(xcclGetAlgorithms("alltoall", names, &k));
  CHECK(k == 2 && !strcmp(names[0], "pairwise") && !strcmp(names[1], "bruck"), "alltoall's algorithms: %d", k);
  XCHECK(xcclCommGetAlgorithm(comm, "alltoall", 8, xcclFloat32, &got));
  CHECK(!strcmp(got, "pairwise"), "alltoall of 8 floats on %d ranks: %s, not pairwise", nranks, got);
  CHECK(xcclCommGetAlgorithm(comm, "allreduce", 8, (xcclDataType_t)99, &got) == xcclInvalidArgument, "bad type");
  CHECK(xcclCommGetAlgorithm(comm, "allreduce", 8, xcclFloat32, NULL) == xcclInvalidArgument, "NULL algorithm");
}

int main(void) {
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  if (nranks < 4 || nranks > 64 || (nranks & (nranks - 1)))
    test_skip("needs a power of two of ranks, 4 to 64 (recursive doubling's partners)");
  check_lists(comm);

  /* Forced per communicator: the traffic shows which algorithm ran. */
  xcclResult_t res;
  xcclComm_t ring = split_with(comm, "allreduce:ring", &res), rd = split_with(comm, "ALLREDUCE:RD", &res);
  if (ring && rd) {
    int log2k = 0;
    while ((1 << log2k) < nranks) log2k++;
    check_algorithm(ring, "allreduce", 1 << 20, "ring", "config->algo ring");
    check_algorithm(rd, "allreduce", 1 << 20, "rd", "config->algo rd");
    /* Broadcast not forced: the model's pick, as on the parent (the tree
     * on 4 or more ranks for a few bytes, algo_tree.c). */
    const char *model = NULL;
    XCHECK(xcclCommGetAlgorithm(comm, "broadcast", 8, xcclFloat32, &model));
    check_algorithm(rd, "broadcast", 8, model, "config->algo rd, broadcast not forced");
    CHECK(strcmp(model, "rd") != 0, "the parent's broadcast runs rd");
    int pr = peers_sent_to(ring, 4096), prd = peers_sent_to(rd, 4096);
    CHECK(pr == 1 && prd == log2k, "all-reduce sent to %d peers on the ring comm (want 1), %d on rd's (want %d)", pr,
          prd, log2k);
    /* A NULL-config split inherits the algorithms. */
    xcclComm_t child = NULL;
    XCHECK(xcclCommSplit(rd, 0, -rank, &child, NULL));
    check_algorithm(child, "allreduce", 1 << 20, "rd", "split of the rd comm");
    CHECK(peers_sent_to(child, 4096) == log2k, "the rd comm's split does not run rd");
    XCHECK(xcclCommDestroy(child));
  }
  CHECK(ring && rd, "splits with config->algo failed: %s", xcclGetLastError(NULL));
  if (ring) XCHECK(xcclCommDestroy(ring));
  if (rd) XCHECK(xcclCommDestroy(rd));

  /* Words XCCL_ALGO refuses, refused on each rank before it meets the others. */
  const char *bad[] = {"allreduce:trie", "gather:ring", "allgather:rd"};
  for (int i = 0; i < 3; i++) {
    xcclComm_t nc = split_with(comm, bad[i], &res);
    CHECK(res == xcclInvalidArgument && !nc && strstr(xcclGetLastError(NULL), "config->algo") != NULL,
          "config->algo = %s -> %s: %s", bad[i], xcclGetErrorString(res), xcclGetLastError(NULL));
  }
  /* Ranks that disagree: every rank fails, saying so. */
  xcclComm_t mixed = split_with(comm, rank == nranks - 1 ? "allreduce:rd" : "allreduce:ring", &res);
  CHECK(res == xcclInvalidUsage && !mixed && strstr(xcclGetLastError(NULL), "different config->algo") != NULL,
        "disagreeing config->algo -> %s: %s", xcclGetErrorString(res), xcclGetLastError(NULL));
  if (mixed) XCHECK(xcclCommDestroy(mixed));

  CHECK(peers_sent_to(comm, 16) >= 1, "the parent after the refusals");
  XCHECK(xcclCommDestroy(comm));
  return test_finish("algo_config");
}
