/*
 * test_grow.c — xcclCommGrow and xcclCommGetUniqueId: ranks join a
 * communicator, as more ranks or as the replacement of a dead one, and every
 * way of calling them wrong is refused before anything is sent.
 *
 * The program is both the test and its ranks. As the test
 * (`test_grow XCCL_RUN MODE`) it runs `xccl-run -n 4 -p <itself> --rank
 * MODE` and judges what the ranks print:
 *
 *   more     ranks 0-2 split off a 3-rank communicator; its rank 0 hands out
 *            a grow id, carried to all over the 4-rank one; first the refused
 *            calls (a rank of the communicator passing a number, nranks not
 *            above 3, NULL arguments, an id of xcclGetUniqueId, an id of
 *            another communicator, inside a group; a joiner's rank out of
 *            3..3, a corrupted id), then ranks 0-2 grow it to 4 with rank 3
 *            joining: everyone keeps or takes its number and checked
 *            all-reduces run on the grown and, still, on the old one. Before
 *            it joins, rank 3 tries once with the id's secret changed (and its
 *            checksum made anew, as a forger would): it must be refused at
 *            once, and the grow must not be disturbed.
 *   replace  ranks 0-2 run a job; rank 3 is a spare, outside it. Rank 1 is
 *            killed (SIGKILL); the survivors see the error, shrink to 2 and
 *            hand a grow id to the spare through a file (as a launcher's
 *            store would carry it); the spare joins as rank 2 and checked
 *            all-reduces run on the 3 ranks. Each prints how long it took
 *            from the error to the grown communicator.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_msg.h"
#include "test_util.h"
#include "xccl.h"

#define NRANKS 4
#define TIMEOUT_S 5.0     /* XCCL_TIMEOUT of the ranks */
#define RUN_LIMIT_S 150.0 /* the whole xccl-run */
#define SENTINEL ((xcclComm_t)(uintptr_t)0x5e5e5e50)

static int me = -1; /* rank in the 4-rank communicator the process started with */

/* A grow that must be refused before anything is sent: code, a word of the
 * message, *newcomm untouched. */
static void expect_refused(xcclComm_t comm, int nranks, const xcclUniqueId *id, int rank, int null_out,
                           xcclResult_t code, const char *word) {
  xcclComm_t nc = SENTINEL;
  xcclResult_t r = xcclCommGrow(comm, nranks, id, rank, null_out ? NULL : &nc, NULL);
  const char *msg = xcclGetLastError(comm);
  CHECK(r == code && strstr(msg, word) && nc == SENTINEL,
        "rank %d: grow (nranks %d, rank %d) -> %s, newcomm %p: '%s' (want %s and '%s')", me, nranks, rank,
        xcclGetErrorString(r), (void *)nc, msg, xcclGetErrorString(code), word);
}

static void refused_in_comm(xcclComm_t sub, xcclComm_t world, const xcclUniqueId *id) {
  expect_refused(sub, 4, id, me, 0, xcclInvalidArgument, "passes -1 and keeps its number");
  expect_refused(sub, 3, id, -1, 0, xcclInvalidArgument, "needs more");
  expect_refused(sub, 4, NULL, -1, 0, xcclInvalidArgument, "uniqueId is NULL");
  expect_refused(sub, 4, id, -1, 1, xcclInvalidArgument, "newcomm is NULL");
  xcclUniqueId plain, other;
  XCHECK(xcclGetUniqueId(&plain));
  expect_refused(sub, 4, &plain, -1, 0, xcclInvalidArgument, "made by xcclGetUniqueId");
  XCHECK(xcclCommGetUniqueId(world, &other));
  expect_refused(sub, 5, &other, -1, 0, xcclInvalidArgument, "another communicator");
  XCHECK(xcclGroupStart());
  expect_refused(sub, 4, id, -1, 0, xcclInvalidUsage, "xcclGroupStart");
  XCHECK(xcclGroupEnd());
  CHECK(xcclCommGetUniqueId(sub, NULL) == xcclInvalidArgument, "rank %d: xcclCommGetUniqueId(NULL) accepted", me);
}

static void refused_joiner(const xcclUniqueId *id) {
  expect_refused(NULL, 4, id, 1, 0, xcclInvalidArgument, "takes a rank from 3");
  expect_refused(NULL, 4, id, 4, 0, xcclInvalidArgument, "takes a rank from 3");
  expect_refused(NULL, 4, id, -1, 0, xcclInvalidArgument, "takes a rank from 3");
  expect_refused(NULL, 3, id, 3, 0, xcclInvalidArgument, "needs more");
  xcclUniqueId bad = *id;
  bad.internal[40] ^= 1; /* inside the secret: the checksum must catch it */
  expect_refused(NULL, 4, &bad, 3, 0, xcclInvalidArgument, "corrupted");
}

/* The id with another secret and a right checksum: the root's challenge
 * cannot be authentic to it, so it must fail fast, naming the bootstrap. */
static void forged_joiner(const xcclUniqueId *id) {
  bs_id_t b;
  char why[160];
  CHECK(bs_id_decode(id, &b, why, sizeof(why)) == 0, "rank %d: the grow id does not decode: %s", me, why);
  b.secret[0] ^= 0x5a;
  xcclUniqueId forged;
  bs_id_encode(&b, &forged);
  xcclComm_t nc = SENTINEL;
  double t0 = test_now_s();
  xcclResult_t r = xcclCommGrow(NULL, 4, &forged, 3, &nc, NULL);
  double dt = test_now_s() - t0;
  CHECK(r != xcclSuccess && nc == SENTINEL && dt < 2.0, "rank %d: a forged secret -> %s after %.2f s: %s", me,
        xcclGetErrorString(r), dt, xcclGetLastError(NULL));
  printf("rank %d: the forged id was refused in %.1f ms: %s\n", me, dt * 1e3, xcclGetLastError(NULL));
}

static void mode_more(xcclComm_t world) {
  xcclComm_t sub = NULL, big = NULL;
  XCHECK(xcclCommSplit(world, me < 3 ? 0 : XCCL_SPLIT_NOCOLOR, me, &sub, NULL));
  xcclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (me == 0) XCHECK(xcclCommGetUniqueId(sub, &id));
  XCHECK(xcclBroadcast(&id, &id, sizeof(id), xcclUint8, 0, world, NULL));
  if (sub) {
    refused_in_comm(sub, world, &id);
    test_allreduce_checked(sub, me, 300000, 1, 1 + 2 + 3, "on the 3-rank communicator after refused grows");
  } else {
    refused_joiner(&id);
    forged_joiner(&id);
  }
  double t0 = test_now_s();
  if (sub)
    XCHECK(xcclCommGrow(sub, 4, &id, -1, &big, NULL));
  else
    XCHECK(xcclCommGrow(NULL, 4, &id, 3, &big, NULL));
  printf("rank %d: grew 3 -> 4 in %.1f ms\n", me, (test_now_s() - t0) * 1e3);
  test_expect_size(big, me, 4, me, "the grown communicator");
  for (int it = 1; it <= 4; it++)
    test_allreduce_checked(big, me, it % 2 ? 1000 : 300000, it, 1 + 2 + 3 + 4, "on the grown communicator");
  if (sub) {
    test_allreduce_checked(sub, me, 1000, 5, 1 + 2 + 3, "on the 3-rank communicator after its grow");
    test_comm_end(sub);
  }
  test_comm_end(big);
  test_comm_end(world);
}

/* The file a launcher's store stands in for: written whole (renamed), read
 * by the spare within a deadline (test_wait_file). */
static void id_put(const char *path, const xcclUniqueId *id) {
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  CHECK(f && fwrite(id, sizeof(*id), 1, f) == 1 && fclose(f) == 0 && rename(tmp, path) == 0,
        "rank %d: cannot write %s: %s", me, path, strerror(errno));
}

static void mode_replace(xcclComm_t world) {
  const char *dir = getenv("TEST_GROW_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/grow.id", dir ? dir : "/tmp");
  xcclComm_t job = NULL, small = NULL, grown = NULL;
  XCHECK(xcclCommSplit(world, me < 3 ? 0 : XCCL_SPLIT_NOCOLOR, me, &job, NULL));
  xcclUniqueId id;
  if (!job) { /* the spare */
    CHECK(test_wait_file(path, &id, sizeof(id), 4 * TIMEOUT_S + 30) == 0, "rank %d: no grow id in %s", me, path);
    double t0 = test_now_s();
    XCHECK(xcclCommGrow(NULL, 3, &id, 2, &grown, NULL));
    printf("rank %d: joined as rank 2 in %.1f ms\n", me, (test_now_s() - t0) * 1e3);
    test_expect_size(grown, me, 3, 2, "the grown communicator");
  } else {
    test_allreduce_checked(job, me, 4096, 1, 1 + 2 + 3, "before the fault");
    if (me == 1) raise(SIGKILL);
    float x = 1;
    xcclResult_t r = xcclSuccess;
    for (int i = 0; i < 100 && r == xcclSuccess; i++) r = xcclAllReduce(&x, &x, 1, xcclFloat32, xcclSum, job, NULL);
    CHECK(r != xcclSuccess, "rank %d: all-reduces with a dead rank succeeded", me);
    double t0 = test_now_s();
    const int dead = 1;
    XCHECK(xcclCommShrink(job, &dead, 1, &small));
    double t1 = test_now_s();
    if (me == 0) {
      XCHECK(xcclCommGetUniqueId(small, &id));
      id_put(path, &id);
    }
    XCHECK(xcclBroadcast(&id, &id, sizeof(id), xcclUint8, 0, small, NULL));
    XCHECK(xcclCommGrow(small, 3, &id, -1, &grown, NULL));
    double t2 = test_now_s();
    printf("rank %d: recovered: shrink %.1f ms, grow %.1f ms (the spare's start included)\n", me, (t1 - t0) * 1e3,
           (t2 - t1) * 1e3);
    test_expect_size(grown, me, 3, me == 0 ? 0 : 1, "the grown communicator");
  }
  int mine = -1;
  xcclCommUserRank(grown, &mine);
  for (int it = 1; it <= 4; it++)
    test_allreduce_checked(grown, mine, it % 2 ? 777 : 250000, it, 1 + 2 + 3, "on the grown communicator");
  test_comm_end(grown);
  if (small) test_comm_end(small);
  if (job) xcclCommAbort(job);
  xcclCommAbort(world); /* it holds the dead rank */
}

static int rank_main(const char *mode) {
  xcclComm_t world;
  XCHECK(xcclCommInitFromEnv(&world));
  XCHECK(xcclCommUserRank(world, &me));
  if (strcmp(mode, "replace") == 0)
    mode_replace(world);
  else
    mode_more(world);
  if (test_failures == 0) printf("rank %d: PASS\n", me);
  fflush(stdout);
  return test_failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--rank") == 0) return rank_main(argv[2]);
  if (argc != 3 || (strcmp(argv[2], "more") != 0 && strcmp(argv[2], "replace") != 0)) {
    fprintf(stderr, "usage: %s XCCL_RUN more|replace\n", argv[0]);
    return 2;
  }
  const char *run = argv[1], *mode = argv[2];
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (sl <= 0) return fprintf(stderr, "test_grow: readlink /proc/self/exe: %s\n", strerror(errno)), 1;
  self[sl] = '\0';
  char t[32], dir[] = "/tmp/xccl-grow-XXXXXX";
  snprintf(t, sizeof(t), "%g", TIMEOUT_S);
  setenv("XCCL_TIMEOUT", t, 1);
  unsetenv("XCCL_FAULT");
  if (!mkdtemp(dir)) return fprintf(stderr, "test_grow: mkdtemp: %s\n", strerror(errno)), 1;
  setenv("TEST_GROW_DIR", dir, 1);
  char *argv_run[] = {(char *)run, "-n", "4", "-p", "--grace", "30", "--timeout", "140", self, "--rank", (char *)mode,
                      NULL};
  int code;
  char *out = test_run_capture(argv_run, RUN_LIMIT_S, &code);
  char path[64];
  snprintf(path, sizeof(path), "%s/grow.id", dir);
  unlink(path);
  rmdir(dir);
  int killed = strcmp(mode, "replace") == 0; /* rank 1's SIGKILL is xccl-run's status */
  test_judge_ranks(out, code, killed ? 128 + SIGKILL : 0, NRANKS, killed ? 1 : -1);
  char name[64];
  snprintf(name, sizeof(name), "test_grow %s", mode);
  return test_finish(name);
}
