/*
 * test_shrink.c — xcclCommShrink: survivors of a dead rank carry on in a
 * smaller communicator, and every way of calling it wrong fails clearly.
 *
 * The program is both the test and its ranks. As the test
 * (`test_shrink XCCL_RUN MODE`) it runs `xccl-run -n 4 -p <itself> --rank
 * MODE`, echoes and reads what the ranks print, and judges:
 *
 *   kill    XCCL_FAULT kills rank 2 in its third all-reduce. The survivors
 *           must get an error within XCCL_TIMEOUT, shrink to 3 ranks
 *           excluding 2, abort the old communicator, and run checked
 *           all-reduces on the new one (more than three: a fault rule that
 *           followed the number 2 to its new owner would kill it). Then a
 *           second shrink to 2 ranks excludes (new) rank 1, which calls it
 *           anyway and must get xcclInvalidArgument; the 3-rank
 *           communicator must still work after being shrunk, and destroying
 *           it must not disturb the 2-rank one. xccl-run must end with rank
 *           2's SIGKILL (137), and each survivor must print PASS.
 *   errors  4 live ranks: refused arguments (NULL newcomm, bad counts, ranks
 *           out of range or repeated, the caller itself) that change
 *           nothing; lists that differ between survivors (each fails
 *           promptly, naming both lists); a shrink that excludes nobody; and
 *           last, a rank that the others exclude calling with a list of its
 *           own (it must fail, the others must get their communicator). The
 *           old communicator works throughout. Every rank must print PASS.
 *   abort   ranks 1-3 shrink while rank 0, which would lead, never calls:
 *           xcclCommAbort from another thread must end their wait at once.
 *
 * Each rank prints how long each xcclCommShrink took. Before the ranks run,
 * the test checks the shrink messages' encoding (bootstrap_msg.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_msg.h"
#include "test_util.h"
#include "xccl.h"

#define NRANKS 4
#define TIMEOUT_S 5.0     /* XCCL_TIMEOUT of the ranks */
#define SLACK_S 2.0       /* scheduling on a loaded machine */
#define RUN_LIMIT_S 150.0 /* the whole xccl-run */
#define SENTINEL ((xcclComm_t)(uintptr_t)0x5e5e5e50)

/* ---- Ranks ---- */

static int me = -1; /* rank in the communicator the process started with */

#define allreduce_checked(comm, count, it, weight, what) test_allreduce_checked(comm, me, count, it, weight, what)
#define expect_size(comm, nranks, rank, what) test_expect_size(comm, me, nranks, rank, what)

/* A call that must be refused before anything is sent: code, message, and
 * *newcomm untouched. */
static void expect_refused(xcclComm_t comm, const int *ex, int n, int null_out, xcclResult_t code, const char *word) {
  xcclComm_t nc = SENTINEL;
  xcclResult_t r = xcclCommShrink(comm, ex, n, null_out ? NULL : &nc);
  const char *msg = xcclGetLastError(comm);
  CHECK(r == code && strstr(msg, word) && nc == SENTINEL,
        "rank %d: shrink (count %d) -> %s, newcomm %p: '%s' (want '%s')", me, n, xcclGetErrorString(r), (void *)nc, msg,
        word);
}

static void mode_kill(xcclComm_t comm) {
  for (int it = 1; it <= 2; it++) allreduce_checked(comm, 4096, it, 10, "before the fault");
  size_t count = 1u << 20;
  float *buf = calloc(count, sizeof(float));
  double t0 = test_now_s();
  xcclResult_t r = xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL);
  double dt = test_now_s() - t0;
  free(buf);
  CHECK(me != 2, "rank 2 outlived XCCL_FAULT's kill");
  CHECK(r != xcclSuccess, "rank %d: all-reduce #3 succeeded although rank 2 died", me);
  CHECK(dt < TIMEOUT_S + SLACK_S, "rank %d: the error came after %.2f s, XCCL_TIMEOUT is %g s", me, dt, TIMEOUT_S);
  printf("rank %d: all-reduce #3 failed after %.2f s: %s\n", me, dt, xcclGetLastError(comm));

  /* Right after the error: shrink, and let the old communicator go. */
  int ex[1] = {2};
  xcclComm_t c3 = SENTINEL;
  t0 = test_now_s();
  r = xcclCommShrink(comm, ex, 1, &c3);
  dt = test_now_s() - t0;
  CHECK(r == xcclSuccess, "rank %d: shrink excluding rank 2 -> %s: %s", me, xcclGetErrorString(r),
        xcclGetLastError(comm));
  CHECK(xcclCommAbort(comm) == xcclSuccess, "rank %d: abort of the failed communicator: %s", me,
        xcclGetLastError(NULL));
  if (r != xcclSuccess) return;
  printf("rank %d: shrink to 3 ranks took %.1f ms\n", me, dt * 1e3);
  int r3 = me - (me > 2);
  expect_size(c3, 3, r3, "the 3-rank communicator");
  for (int it = 1; it <= 6; it++) /* 1000 floats go by recursive doubling, 300000 by the ring */
    allreduce_checked(c3, it % 2 ? 1000 : 300000, it, 1 + 2 + 4, "on the 3-rank communicator");

  /* Again, on a healthy communicator: (new) rank 1 goes, and calls anyway. */
  int ex2[1] = {1};
  xcclComm_t c2 = SENTINEL;
  t0 = test_now_s();
  r = xcclCommShrink(c3, ex2, 1, &c2);
  dt = test_now_s() - t0;
  if (r3 == 1) {
    CHECK(r == xcclInvalidArgument && c2 == SENTINEL && strstr(xcclGetLastError(c3), "is in excludeRanks"),
          "rank %d: an excluded rank's shrink -> %s, newcomm %p: %s", me, xcclGetErrorString(r), (void *)c2,
          xcclGetLastError(c3));
  } else {
    CHECK(r == xcclSuccess, "rank %d: shrink to 2 ranks -> %s: %s", me, xcclGetErrorString(r), xcclGetLastError(c3));
    if (r == xcclSuccess) {
      printf("rank %d: shrink to 2 ranks took %.1f ms\n", me, dt * 1e3);
      expect_size(c2, 2, r3 == 0 ? 0 : 1, "the 2-rank communicator");
    }
  }
  allreduce_checked(c3, 200000, 9, 1 + 2 + 4, "on the 3-rank communicator after its shrink");
  CHECK(xcclCommDestroy(c3) == xcclSuccess, "rank %d: destroy the 3-rank communicator: %s", me, xcclGetLastError(NULL));
  if (r3 == 1 || r != xcclSuccess) return;
  for (int it = 1; it <= 4; it++) allreduce_checked(c2, it % 2 ? 777 : 250000, it, 1 + 4, "on the 2-rank communicator");
  CHECK(xcclCommDestroy(c2) == xcclSuccess, "rank %d: destroy the 2-rank communicator: %s", me, xcclGetLastError(NULL));
}

static void mode_errors(xcclComm_t comm) {
  allreduce_checked(comm, 1000, 1, 10, "at the start");
  /* Refused on the spot, whatever the others do. */
  int out_of_range[1] = {NRANKS}, negative[1] = {-1}, twice[2] = {1, 1}, all[NRANKS] = {0, 1, 2, 3}, self[1] = {me};
  expect_refused(comm, self, 1, 1, xcclInvalidArgument, "newcomm is NULL");
  expect_refused(comm, out_of_range, 1, 0, xcclInvalidArgument, "excludeRanks[0] = 4 is not a rank");
  expect_refused(comm, negative, 1, 0, xcclInvalidArgument, "excludeRanks[0] = -1 is not a rank");
  expect_refused(comm, twice, 2, 0, xcclInvalidArgument, "rank 1 is in excludeRanks twice");
  expect_refused(comm, all, NRANKS, 0, xcclInvalidArgument, "excludeCount=4 is not in 0..3");
  expect_refused(comm, all, -1, 0, xcclInvalidArgument, "excludeCount=-1");
  expect_refused(comm, NULL, 1, 0, xcclInvalidArgument, "excludeRanks is NULL");
  expect_refused(comm, self, 1, 0, xcclInvalidArgument, "is in excludeRanks");
  allreduce_checked(comm, 300000, 2, 10, "after refused shrinks");

  /* Survivors disagree: ranks 0 and 1 exclude {2}, rank 3 excludes {1, 2}
   * (rank 2 calls too and is refused). Each must fail promptly. */
  int ex2[1] = {2}, ex12[2] = {1, 2};
  xcclComm_t nc = SENTINEL;
  double t0 = test_now_s();
  xcclResult_t r = me == 3 ? xcclCommShrink(comm, ex12, 2, &nc) : xcclCommShrink(comm, ex2, 1, &nc);
  double dt = test_now_s() - t0;
  const char *msg = xcclGetLastError(comm);
  if (me == 2) {
    CHECK(r == xcclInvalidArgument && strstr(msg, "is in excludeRanks"), "rank 2: excluded rank's shrink -> %s: %s",
          xcclGetErrorString(r), msg);
  } else {
    CHECK(r == xcclInvalidUsage && strstr(msg, "same list") && strstr(msg, "{1, 2}") && strstr(msg, "{2}"),
          "rank %d: shrink with differing lists -> %s: '%s'", me, xcclGetErrorString(r), msg);
    CHECK(dt < TIMEOUT_S, "rank %d: differing lists took %.2f s to fail", me, dt);
    printf("rank %d: differing lists failed after %.1f ms: %s\n", me, dt * 1e3, msg);
  }
  CHECK(nc == SENTINEL, "rank %d: a failed shrink wrote newcomm", me);
  allreduce_checked(comm, 1000, 3, 10, "after a shrink with differing lists");

  /* Excluding nobody: a copy, independent of the original. */
  t0 = test_now_s();
  r = xcclCommShrink(comm, NULL, 0, &nc);
  dt = test_now_s() - t0;
  CHECK(r == xcclSuccess, "rank %d: shrink excluding nobody -> %s: %s", me, xcclGetErrorString(r),
        xcclGetLastError(comm));
  if (r == xcclSuccess) {
    printf("rank %d: shrink excluding nobody took %.1f ms\n", me, dt * 1e3);
    expect_size(nc, NRANKS, me, "the copy");
    allreduce_checked(nc, 300000, 4, 10, "on the copy");
    CHECK(xcclCommDestroy(nc) == xcclSuccess, "rank %d: destroy the copy: %s", me, xcclGetLastError(NULL));
    nc = SENTINEL;
  }
  allreduce_checked(comm, 1000, 5, 10, "after the copy was destroyed");

  /* Last (rank 3 may wait for an answer that never comes): ranks 0-2
   * exclude 3, rank 3 excludes 0 and sends its request to rank 1. */
  int ex3[1] = {3}, ex0[1] = {0};
  t0 = test_now_s();
  r = me == 3 ? xcclCommShrink(comm, ex0, 1, &nc) : xcclCommShrink(comm, ex3, 1, &nc);
  dt = test_now_s() - t0;
  msg = xcclGetLastError(comm);
  if (me == 3) {
    CHECK(r != xcclSuccess && nc == SENTINEL, "rank 3: shrink excluding 0, which the others keep -> %s",
          xcclGetErrorString(r));
    CHECK(dt < 2 * TIMEOUT_S + 5 + SLACK_S, "rank 3: its error came after %.2f s", dt);
    printf("rank 3: excluded by the others, its own list failed after %.1f ms (%s): %s\n", dt * 1e3,
           xcclGetErrorString(r), msg);
  } else {
    CHECK(r == xcclSuccess, "rank %d: shrink excluding 3 -> %s: %s", me, xcclGetErrorString(r), msg);
    if (r == xcclSuccess) {
      printf("rank %d: shrink to 3 ranks took %.1f ms\n", me, dt * 1e3);
      expect_size(nc, 3, me, "the 3-rank communicator");
      allreduce_checked(nc, 300000, 6, 1 + 2 + 3, "on the 3-rank communicator");
      CHECK(xcclCommDestroy(nc) == xcclSuccess, "rank %d: destroy: %s", me, xcclGetLastError(NULL));
    }
  }
  CHECK(xcclCommDestroy(comm) == xcclSuccess, "rank %d: destroy the first communicator: %s", me,
        xcclGetLastError(NULL));
}

static void *abort_later(void *comm) {
  struct timespec ts = {0, 300 * 1000000};
  nanosleep(&ts, NULL);
  CHECK(xcclCommAbort(comm) == xcclSuccess, "rank %d: abort from another thread: %s", me, xcclGetLastError(NULL));
  return NULL;
}

static void mode_abort(xcclComm_t comm) {
  allreduce_checked(comm, 1000, 1, 10, "at the start");
  if (me == 0) { /* leads, but never calls: the others wait until their communicator is aborted */
    struct timespec ts = {1, 500 * 1000000};
    nanosleep(&ts, NULL);
    CHECK(xcclCommDestroy(comm) == xcclSuccess, "rank 0: destroy: %s", xcclGetLastError(NULL));
    return;
  }
  pthread_t t;
  pthread_create(&t, NULL, abort_later, comm);
  xcclComm_t nc = SENTINEL;
  double t0 = test_now_s();
  xcclResult_t r = xcclCommShrink(comm, NULL, 0, &nc);
  double dt = test_now_s() - t0;
  pthread_join(t, NULL);
  const char *msg = xcclGetLastError(NULL);
  CHECK(r == xcclRemoteError && nc == SENTINEL && strstr(msg, "aborted"), "rank %d: shrink during abort -> %s: %s", me,
        xcclGetErrorString(r), msg);
  CHECK(dt < 0.3 + SLACK_S, "rank %d: the abort ended the shrink after %.2f s", me, dt);
  printf("rank %d: abort ended the shrink after %.0f ms: %s\n", me, dt * 1e3, msg);
}

static int rank_main(const char *mode) {
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommUserRank(comm, &me));
  if (strcmp(mode, "kill") == 0)
    mode_kill(comm);
  else if (strcmp(mode, "abort") == 0)
    mode_abort(comm);
  else
    mode_errors(comm);
  if (test_failures == 0) printf("rank %d: PASS\n", me);
  fflush(stdout);
  return test_failures ? 1 : 0;
}

/* ---- The shrink messages (bootstrap_msg.h), before any rank runs ---- */

static void check_messages(void) {
  int ex[3] = {1, 4, 6}, got[8];
  int n = -1;
  char why[256];
  size_t len = 0;
  bs_shrink_msg_t m = {.kind = BS_SHRINK_JOIN, .nonce = 0x1122334455667788ull, .nranks = 8}, d;
  uint8_t *b = bs_shrink_encode(&m, ex, 3, &len);
  CHECK(b && bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) == 0 && d.kind == BS_SHRINK_JOIN &&
            d.nonce == m.nonce && d.nranks == 8 && n == 3 && got[0] == 1 && got[1] == 4 && got[2] == 6,
        "JOIN round trip: %s", why);
  CHECK(b && bs_shrink_decode(b, len - 1, &d, got, 8, &n, why, sizeof(why)) != 0, "a truncated JOIN was read");
  CHECK(b && bs_shrink_decode(b, len, &d, got, 2, &n, why, sizeof(why)) != 0, "a JOIN longer than its room was read");
  free(b);
  int unsorted[2] = {4, 1}, all[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  b = bs_shrink_encode(&m, unsorted, 2, &len);
  CHECK(b && bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) != 0 && strstr(why, "ascending"),
        "an unsorted JOIN was read (%s)", why);
  free(b);
  b = bs_shrink_encode(&m, all, 8, &len);
  CHECK(b && bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) != 0, "a JOIN excluding every rank was read");
  free(b);
  bs_shrink_msg_t go = {.kind = BS_SHRINK_GO, .nonce = 7, .nranks = 3, .job = 99};
  go.root.sin.sin_family = AF_INET;
  go.root.sin.sin_port = htons(4242);
  go.root.sin.sin_addr.s_addr = htonl(0x7f000001);
  memset(go.salt, 0xab, sizeof(go.salt));
  b = bs_shrink_encode(&go, NULL, 0, &len);
  CHECK(b && bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) == 0 && d.kind == BS_SHRINK_GO && d.job == 99 &&
            d.nranks == 3 && sock_addr_port(&d.root) == 4242 && memcmp(d.salt, go.salt, sizeof(go.salt)) == 0,
        "GO round trip: %s", why);
  free(b);
  bs_shrink_msg_t fail = {.kind = BS_SHRINK_FAIL, .nonce = 7, .nranks = 8, .code = xcclInvalidUsage};
  snprintf(fail.text, sizeof(fail.text), "lists differ\n");
  b = bs_shrink_encode(&fail, NULL, 0, &len);
  CHECK(b && bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) == 0 && d.code == xcclInvalidUsage &&
            strcmp(d.text, "lists differ?") == 0,
        "FAIL round trip (control characters made '?'): '%s' %s", d.text, why);
  b[20] = 0; /* result code 0 is not a failure */
  CHECK(bs_shrink_decode(b, len, &d, got, 8, &n, why, sizeof(why)) != 0, "a FAIL with code 0 was read");
  free(b);
  uint8_t p1[BS_SECRET_BYTES] = {1}, p2[BS_SECRET_BYTES] = {2}, c1[BS_SECRET_BYTES], c1b[BS_SECRET_BYTES],
          c2[BS_SECRET_BYTES];
  bs_derive_child_secret(p1, go.salt, c1);
  bs_derive_child_secret(p1, go.salt, c1b);
  bs_derive_child_secret(p2, go.salt, c2);
  CHECK(memcmp(c1, c1b, sizeof(c1)) == 0 && memcmp(c1, c2, sizeof(c1)) != 0 && memcmp(c1, go.salt, sizeof(c1)) != 0,
        "child secrets: same parent and salt must agree, another parent must differ");
}

/* ---- The test: xccl-run the ranks and judge ---- */

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--rank") == 0) return rank_main(argv[2]);
  if (argc != 3 || (strcmp(argv[2], "kill") != 0 && strcmp(argv[2], "errors") != 0 && strcmp(argv[2], "abort") != 0)) {
    fprintf(stderr, "usage: %s XCCL_RUN kill|errors|abort\n", argv[0]);
    return 2;
  }
  const char *run = argv[1], *mode = argv[2];
  check_messages();
  if (access(run, X_OK) != 0) {
    fprintf(stderr, "test_shrink: xccl-run %s: %s\n", run, strerror(errno));
    return 1;
  }
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (sl <= 0) return fprintf(stderr, "test_shrink: readlink /proc/self/exe: %s\n", strerror(errno)), 1;
  self[sl] = '\0';
  char t[32];
  snprintf(t, sizeof(t), "%g", TIMEOUT_S);
  setenv("XCCL_TIMEOUT", t, 1);
  if (strcmp(mode, "kill") == 0)
    setenv("XCCL_FAULT", "rank=2,op=allreduce,seq=3,action=kill", 1);
  else
    unsetenv("XCCL_FAULT");

  char *argv_run[] = {(char *)run, "-n", "4", "-p", "--grace", "30", "--timeout", "140", self, "--rank", (char *)mode, NULL};
  int code;
  char *out = test_run_capture(argv_run, RUN_LIMIT_S, &code);
  int killed = strcmp(mode, "kill") == 0; /* rank 2's SIGKILL is xccl-run's status */
  test_judge_ranks(out, code, killed ? 128 + SIGKILL : 0, NRANKS, killed ? 2 : -1);
  char name[64];
  snprintf(name, sizeof(name), "test_shrink %s", mode);
  return test_finish(name);
}
