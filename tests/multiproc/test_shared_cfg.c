/*
 * test_shared_cfg.c — the settings every rank must share (the S entries of
 * src/base/config.h) are compared at init. xccl-run gives every rank the same
 * environment, so rank 1 sets XCCL_<VAR>=VALUE itself before its first xccl
 * call (the configuration is read once per process, at first use).
 *
 *   test_shared_cfg mismatch VAR=VALUE  init fails on every rank within 1 s with
 *       xcclInvalidUsage, saying "rank 1 (...) runs with XCCL_VAR=VALUE but
 *       rank 0 (...) with XCCL_VAR=(unset): every rank must use the same value"
 *       (VALUE as the message shows it: numbers as parsed)
 *   test_shared_cfg agree VAR=VALUE     init succeeds and an all-reduce is right: a
 *       setting each rank may have of its own, or a shared one whose value
 *       equals the default
 *   test_shared_cfg refused VAR=VALUE   VALUE is one rank 1's own checks refuse
 *       (malformed, or not served here): rank 1 fails with its reason, naming
 *       XCCL_VAR, and every other rank within 1 s with "rank 1 (...) cannot
 *       take part: " and that reason, instead of waiting for it
 *   test_shared_cfg covered VAR...      one process: VAR... are exactly the S
 *       entries of the table, so a new S entry cannot go without a test
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "slots.h"
#include "test_util.h"
#include "xccl.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int covered(int n, char **names) {
  for (int id = 0; id < CFG_COUNT; id++) {
    int listed = 0;
    for (int i = 0; i < n; i++) listed |= strcmp(names[i], config_table[id].name) == 0;
    CHECK(listed == (config_table[id].shared >= 0), "XCCL_%s is %s in config.h but %s in the tests' list",
          config_table[id].name, config_table[id].shared >= 0 ? "shared" : "not shared", listed ? "is" : "is not");
  }
  return test_finish("shared_cfg covered");
}

static void expect_mismatch(int rank, xcclResult_t res, double took, const char *var, const char *value) {
  const char *msg = xcclGetLastError(NULL);
  char theirs[256], ours[256];
  snprintf(theirs, sizeof(theirs), ") runs with XCCL_%s=%s but rank 0 (", var, value);
  snprintf(ours, sizeof(ours), " with XCCL_%s=(unset): every rank must use the same value", var);
  CHECK(res == xcclInvalidUsage, "rank %d: init with XCCL_%s=%s on rank 1 returned %s: %s", rank, var, value,
        xcclGetErrorString(res), msg);
  CHECK(strstr(msg, "rank 1 (") && strstr(msg, theirs) && strstr(msg, ours),
        "rank %d: the message does not name XCCL_%s, both ranks and both values: %s", rank, var, msg);
  CHECK(took < 1.0, "rank %d: init took %.3f s to fail (more than 1 s)", rank, took);
  printf("rank %d: init refused in %.3f s: %s\n", rank, took, msg);
}

static void expect_refused(int rank, xcclResult_t res, double took, const char *var) {
  const char *msg = xcclGetLastError(NULL);
  char named[96];
  snprintf(named, sizeof(named), "XCCL_%s", var);
  CHECK(res != xcclSuccess, "rank %d: init succeeded though rank 1 refuses its XCCL_%s", rank, var);
  CHECK(strstr(msg, named) != NULL, "rank %d: the message does not name %s: %s", rank, named, msg);
  if (rank != 1)
    CHECK(strstr(msg, "rank 1 (") && strstr(msg, "cannot take part: "),
          "rank %d: the message does not say that rank 1 cannot take part: %s", rank, msg);
  CHECK(took < 1.0, "rank %d: init took %.3f s to fail (more than 1 s)", rank, took);
  printf("rank %d: init refused in %.3f s: %s\n", rank, took, msg);
}

/* A setting the bootstrap itself depends on (XCCL_TLS): rank 1 fails at
 * once naming it, and tells the root, which fails the others at once with
 * rank 1's host and the setting. */
static void expect_bootstrap_refused(int rank, xcclResult_t res, double took, const char *var) {
  const char *msg = xcclGetLastError(NULL);
  CHECK(res != xcclSuccess, "rank %d: init succeeded though rank 1 sets XCCL_%s", rank, var);
  CHECK(strstr(msg, var) != NULL, "rank %d: the message does not name XCCL_%s: %s", rank, var, msg);
  if (rank != 1)
    CHECK(strstr(msg, "a rank on host ") != NULL, "rank %d: the message does not name rank 1's host: %s", rank, msg);
  CHECK(took < 1.0, "rank %d: init took %.3f s to fail (more than 1 s)", rank, took);
  printf("rank %d: init refused in %.3f s: %s\n", rank, took, msg);
}

static void expect_agree(xcclComm_t comm, int rank, int nranks) {
  enum { N = 4096 };
  static float buf[N];
  for (int i = 0; i < N; i++) buf[i] = (float)(rank + 1) * (float)(i % 7);
  XCHECK(xcclAllReduce(buf, buf, N, xcclFloat32, xcclSum, comm, NULL));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += buf[i] != (float)(nranks * (nranks + 1) / 2) * (float)(i % 7);
  CHECK(wrong == 0, "rank %d: %d wrong elements", rank, wrong);
  XCHECK(xcclCommDestroy(comm));
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "covered") == 0) return covered(argc - 2, argv + 2);
  char var[64];
  const char *eq = argc == 3 ? strchr(argv[2], '=') : NULL;
  if (!eq || eq - argv[2] >= (long)sizeof(var) || (strcmp(argv[1], "mismatch") != 0 && strcmp(argv[1], "agree") != 0 &&
                                                   strcmp(argv[1], "refused") != 0 &&
                                                   strcmp(argv[1], "bootstrap") != 0)) {
    fprintf(stderr, "usage: test_shared_cfg mismatch|agree|refused|bootstrap VAR=VALUE | covered VAR...\n");
    return 2;
  }
  const char *mode = argv[1], *value = eq + 1;
  snprintf(var, sizeof(var), "%.*s", (int)(eq - argv[2]), argv[2]);
  /* Before any xccl call: the configuration is read at first use. */
  const char *r = getenv("XCCL_RANK");
  int rank = r ? atoi(r) : -1;
  char name[96];
  snprintf(name, sizeof(name), "XCCL_%s", var);
  if (strcmp(mode, "agree") != 0 && getenv(name)) test_skip("the environment sets the variable on every rank");
  if (rank == 1) setenv(name, value, 1);
  if (strcmp(var, "CHECKSUM") == 0 && !slot_checksum_available())
    test_skip("XCCL_CHECKSUM=1 needs ISA-L, which this build lacks");

  xcclComm_t comm = NULL;
  double t0 = now_s();
  xcclResult_t res = xcclCommInitFromEnv(&comm);
  double took = now_s() - t0;
  int nranks = 0;
  if (strcmp(mode, "mismatch") == 0 || strcmp(mode, "refused") == 0 || strcmp(mode, "bootstrap") == 0) {
    if (mode[0] == 'm')
      expect_mismatch(rank, res, took, var, value);
    else if (mode[0] == 'r')
      expect_refused(rank, res, took, var);
    else
      expect_bootstrap_refused(rank, res, took, var);
    if (res == xcclSuccess) xcclCommDestroy(comm);
  } else {
    XCHECK(res);
    XCHECK(xcclCommCount(comm, &nranks));
    expect_agree(comm, rank, nranks);
  }
  snprintf(name, sizeof(name), "shared_cfg %s %s rank %d", mode, var, rank);
  return test_finish(name);
}
