/*
 * test_fault.c — xccl fails loudly and in time instead of hanging.
 *
 * The program is its own launcher: the parent makes a unique id (so the
 * bootstrap root runs in the parent), re-executes itself once per rank with
 * the id in XCCL_UNIQUE_ID, and judges how each rank ended.
 *
 *   kill      rank 2 of 4 is killed (SIGKILL) in the middle of an all-reduce:
 *             the others must return an error within XCCL_TIMEOUT + grace,
 *             naming the operation, its sequence number and a peer rank.
 *   stop      rank 1 of 3 stops (SIGSTOP) mid-all-reduce: the others must
 *             time out after XCCL_TIMEOUT and name the peer they waited on.
 *   hostile   before the ranks start, the parent opens a silent connection,
 *             sends garbage, and sends a hello forged without the secret to
 *             the bootstrap port: the job must still complete, and the root
 *             must have logged each refusal.
 *   missing   3 of 4 ranks start: each must fail init after XCCL_TIMEOUT with
 *             a message naming the missing rank 3.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_msg.h"
#include "clock.h"
#include "sock.h"
#include "test_util.h"
#include "xccl.h"

#define TIMEOUT_S 4.0
#define GRACE_S 6.0

static double now_s(void) { return (double)clock_ns() / 1e9; }

/* ---- Ranks ---- */

static volatile int op_started;

static void *killer(void *arg) {
  int sig = *(int *)arg;
  while (!op_started) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  struct timespec ts = {0, 20 * 1000000}; /* well inside the all-reduce */
  nanosleep(&ts, NULL);
  raise(sig);
  return NULL;
}

/* A rank: init, a few good all-reduces, then a long one during which the
 * victim dies or stops. Survivors exit 0 when the failure was reported
 * properly, 1 otherwise. */
static int rank_main(const char *mode, int rank, int victim) {
  xcclComm_t comm;
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  if (strcmp(mode, "missing") == 0) {
    const char *msg = xcclGetLastError(NULL);
    if (r == xcclSuccess) return fprintf(stderr, "rank %d: init succeeded with a rank missing\n", rank), 1;
    if (!strstr(msg, "missing rank 3"))
      return fprintf(stderr, "rank %d: init failed (%s) but does not name the missing rank: %s\n", rank,
                     xcclGetErrorString(r), msg), 1;
    printf("rank %d: init failed as it should: %s\n", rank, msg);
    return 0;
  }
  if (r != xcclSuccess) return fprintf(stderr, "rank %d: init: %s\n", rank, xcclGetLastError(NULL)), 1;
  size_t count = 8u << 20; /* 32 MiB: takes a while on loopback */
  float *buf = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) buf[i] = 1.0f;
  for (int i = 0; i < 3; i++) {
    if (xcclAllReduce(buf, buf, 1024, xcclFloat32, xcclSum, comm, NULL) != xcclSuccess)
      return fprintf(stderr, "rank %d: warm-up failed: %s\n", rank, xcclGetLastError(comm)), 1;
  }
  pthread_t t;
  int sig = strcmp(mode, "kill") == 0 ? SIGKILL : SIGSTOP;
  if (rank == victim) pthread_create(&t, NULL, killer, &sig);
  if (strcmp(mode, "hostile") == 0) {
    for (size_t i = 0; i < count; i++) buf[i] = 1.0f; /* the warm-up summed the first 1024 in place */
    r = xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL);
    int nranks;
    xcclCommCount(comm, &nranks);
    int ok = r == xcclSuccess && buf[0] == (float)nranks && buf[count - 1] == (float)nranks;
    xcclCommDestroy(comm);
    free(buf);
    if (!ok) fprintf(stderr, "rank %d: all-reduce after hostile connections failed\n", rank);
    return ok ? 0 : 1;
  }
  double t0 = now_s();
  op_started = 1;
  /* Several operations: the victim may die between two of them. */
  for (int i = 0; i < 50 && r == xcclSuccess; i++) r = xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL);
  double dt = now_s() - t0;
  const char *msg = xcclGetLastError(comm);
  int bad = 0;
  if (r == xcclSuccess) bad = fprintf(stderr, "rank %d: no error although rank %d died\n", rank, victim);
  else if (dt > TIMEOUT_S + GRACE_S) bad = fprintf(stderr, "rank %d: error came after %.1f s\n", rank, dt);
  else if (!strstr(msg, "allreduce #") || !strstr(msg, "rank "))
    bad = fprintf(stderr, "rank %d: message does not name operation and peer: %s\n", rank, msg);
  else if (r != xcclTimeout && r != xcclRemoteError)
    bad = fprintf(stderr, "rank %d: expected a timeout or a remote error, got %s\n", rank, xcclGetErrorString(r));
  /* A neighbour of a stopped rank times out and names it; the others learn
   * of it when that neighbour closes its connections, which they name. */
  printf("rank %d: %s after %.2f s: %s\n", rank, xcclGetErrorString(r), dt, msg);
  /* A second call on the failed communicator is refused, not hung. */
  xcclResult_t r2 = xcclAllReduce(buf, buf, 1, xcclFloat32, xcclSum, comm, NULL);
  if (r2 == xcclSuccess) bad = fprintf(stderr, "rank %d: a failed communicator accepted more work\n", rank);
  xcclCommAbort(comm);
  free(buf);
  return bad ? 1 : 0;
}

/* ---- The parent ---- */

static pid_t spawn_rank(const char *self, const char *mode, int rank, int nranks, const char *idhex) {
  pid_t pid = fork();
  if (pid == 0) {
    char r[16], n[16], t[16];
    snprintf(r, sizeof(r), "%d", rank);
    snprintf(n, sizeof(n), "%d", nranks);
    snprintf(t, sizeof(t), "%g", TIMEOUT_S);
    setenv("XCCL_RANK", r, 1);
    setenv("XCCL_NRANKS", n, 1);
    setenv("XCCL_UNIQUE_ID", idhex, 1);
    setenv("XCCL_TIMEOUT", t, 1);
    unsetenv("XCCL_DEBUG_FILE");
    unsetenv("XCCL_DEBUG");
    execl(self, self, mode, "--rank", r, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* Talks to the root like an attacker without the secret would. */
static void hostile_connections(const sock_addr_t *root, int *fds) {
  uint64_t dl = clock_deadline(2.0);
  /* 1: silent */
  CHECK(sock_connect_retry(root, &fds[0], dl, NULL) == xcclSuccess, "connect to the root");
  /* 2: garbage */
  if (sock_connect_retry(root, &fds[1], dl, NULL) == xcclSuccess) {
    char junk[64];
    memset(junk, 'A', sizeof(junk));
    sock_send_all(fds[1], junk, sizeof(junk), dl, NULL);
  }
  /* 3: a hello for rank 0, signed with the wrong key */
  if (sock_connect_retry(root, &fds[2], dl, NULL) == xcclSuccess) {
    uint8_t challenge[BS_HDR_BYTES + BS_NONCE_BYTES + BS_MAC_BYTES];
    sock_recv_all(fds[2], challenge, sizeof(challenge), dl, NULL);
    uint8_t key[BS_SECRET_BYTES] = {1, 2, 3};
    bs_hello_t h = {.rank = 0, .nranks = 4, .addr = *root, .pid = 1};
    snprintf(h.host, sizeof(h.host), "intruder");
    uint8_t hello[BS_HELLO_BYTES], frame[BS_HDR_BYTES + BS_HELLO_BYTES + BS_MAC_BYTES];
    bs_hello_encode(&h, hello);
    bs_frame_build(frame, BS_HELLO, hello, BS_HELLO_BYTES, key, challenge + BS_HDR_BYTES);
    sock_send_all(fds[2], frame, sizeof(frame), dl, NULL);
  }
}

static int count_in_file(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[2048];
  int n = 0;
  while (f && fgets(line, sizeof(line), f))
    if (strstr(line, needle)) n++;
  if (f) fclose(f);
  return n;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "kill";
  int nranks = strcmp(mode, "stop") == 0 ? 3 : 4, victim = strcmp(mode, "stop") == 0 ? 1 : 2;
  if (argc > 3 && strcmp(argv[2], "--rank") == 0) return rank_main(mode, atoi(argv[3]), victim);

  char logpath[] = "/tmp/xccl-fault-log-XXXXXX";
  int logfd = mkstemp(logpath);
  close(logfd);
  setenv("XCCL_DEBUG_FILE", logpath, 1); /* the root, in this process, logs refusals here */
  setenv("XCCL_DEBUG", "INFO", 1);        /* the refusals after a host's first are INFO */
  char t[16];
  snprintf(t, sizeof(t), "%g", TIMEOUT_S);
  setenv("XCCL_TIMEOUT", t, 1);
  xcclUniqueId id;
  XCHECK(xcclGetUniqueId(&id));
  char idhex[2 * XCCL_UNIQUE_ID_BYTES + 1];
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) sprintf(idhex + 2 * i, "%02x", (unsigned char)id.internal[i]);

  int hostile_fds[3] = {-1, -1, -1};
  if (strcmp(mode, "hostile") == 0) {
    bs_id_t bid;
    char why[256];
    CHECK(bs_id_decode(&id, &bid, why, sizeof(why)) == 0, "decode our own id: %s", why);
    hostile_connections(&bid.root, hostile_fds);
  }
  int start = strcmp(mode, "missing") == 0 ? nranks - 1 : nranks;
  pid_t pids[8];
  for (int r = 0; r < start; r++) pids[r] = spawn_rank("/proc/self/exe", mode, r, nranks, idhex);

  double t0 = now_s();
  for (int r = 0; r < start; r++) {
    int st;
    if (strcmp(mode, "stop") == 0 && r == victim) continue;
    waitpid(pids[r], &st, 0);
    if (r == victim && strcmp(mode, "kill") == 0) {
      CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the victim was not killed (status 0x%x)", st);
    } else {
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d ended with status 0x%x", r, st);
    }
  }
  if (strcmp(mode, "stop") == 0) { /* the stopped rank: wake it up and let it finish or fail */
    kill(pids[victim], SIGCONT);
    int st;
    waitpid(pids[victim], &st, 0);
  }
  double dt = now_s() - t0;
  CHECK(dt < TIMEOUT_S * 2 + 2 * GRACE_S, "the job took %.1f s to end", dt);
  if (strcmp(mode, "hostile") == 0) {
    /* Give the root a moment to finish its loop, then read what it logged. */
    struct timespec ts = {0, 200 * 1000000};
    nanosleep(&ts, NULL);
    int refused = count_in_file(logpath, "refused a connection");
    CHECK(refused >= 2, "the root logged %d refusals, expected the garbage and the forged hello (log %s)", refused,
          logpath);
    CHECK(count_in_file(logpath, "failed authentication") >= 1, "no authentication failure logged");
    /* One WARN per source host: hostile traffic cannot flood the log. */
    int warned = count_in_file(logpath, "WARN BOOTSTRAP bootstrap.c"), later = count_in_file(logpath, "from that host)");
    CHECK(warned == 1 && later >= 1, "the root WARNed %d refusals and logged %d later ones at INFO: one WARN per host "
          "expected (log %s)", warned, later, logpath);
    for (int i = 0; i < 3; i++) sock_close(&hostile_fds[i]);
  }
  unlink(logpath);
  char name[64];
  snprintf(name, sizeof(name), "fault %s", mode);
  return test_finish(name);
}
