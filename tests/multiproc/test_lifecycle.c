/*
 * test_lifecycle.c — communicators made from communicators, configured and
 * non-blocking init, inits inside a group, xcclCommInitAll, finalize and
 * revoke (issue 16).
 *
 * usage: test_lifecycle MODE [N]   with MODE one of
 *   split        (under xccl-run) splits by parity, one color, all colors,
 *                NOCOLOR on some, reversed keys, a split of a split, config
 *                inherited vs a non-blocking split polled to completion;
 *                every new comm runs an all-reduce checked against its members
 *   split_missing (under xccl-run, >= 2 ranks) the last rank never calls
 *                xcclCommSplit: the others get xcclTimeout naming it
 *   nonblocking  (under xccl-run) xcclCommInitRankConfig with blocking = 0,
 *                polled with xcclCommGetAsyncError; refused while initializing
 *   abort_init   (one process) abort and destroy of comms whose peers never come
 *   group_init N (one process, one thread) N ranks' comms made in one group,
 *                then one grouped all-reduce over all of them
 *   init_all N   (one process) xcclCommInitAll, then the same all-reduce
 *   init_all_refused N  (one process, XCCL_ALGO=bogus) InitAll fails, comms untouched
 *   finalize     (one process) finalized comms refuse operations, destroy works
 *   revoke       (one process) revoke stops a collective blocked on another
 *                thread; afterwards ops are refused, shrink and split work
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"
#include "xccl.h"

#define COUNT 4099 /* not a multiple of anything, so chunk edges are crossed */
#define MAXR 64

static int nranks, rank;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int has(const char *text, const char *word) { return text && strstr(text, word) != NULL; }

/* What rank r puts in element i: summed over a set of ranks, exact. */
static int32_t contrib(int r, size_t i) { return (int32_t)((r + 1) * (int)(i % 7 + 1)); }

/* All-reduce on comm (this process's old rank `me`), checked against the sum
 * over `members` (old ranks). */
static void check_allreduce(xcclComm_t comm, int me, const int *members, int nm, const char *what) {
  int32_t *s = malloc(COUNT * sizeof(int32_t)), *r = malloc(COUNT * sizeof(int32_t));
  for (size_t i = 0; i < COUNT; i++) s[i] = contrib(me, i), r[i] = -1;
  xcclResult_t res = xcclAllReduce(s, r, COUNT, xcclInt32, xcclSum, comm, NULL);
  CHECK(res == xcclSuccess, "%s: all-reduce -> %s: %s", what, xcclGetErrorString(res), xcclGetLastError(comm));
  int sum = 0;
  for (int k = 0; k < nm; k++) sum += members[k] + 1;
  size_t bad = 0;
  for (size_t i = 0; i < COUNT && res == xcclSuccess; i++) bad += r[i] != (int32_t)(sum * (int)(i % 7 + 1));
  CHECK(bad == 0, "%s: %zu wrong elements (r[0] = %d, want %d)", what, bad, r[0], sum);
  free(s);
  free(r);
}

/* ---- split (several processes) ---- */

typedef int (*color_fn)(int r, int n);
typedef int (*key_fn)(int r, int n);

static int c_parity(int r, int n) { (void)n; return r % 2; }
static int c_one(int r, int n) { (void)r, (void)n; return 0; }
static int c_each(int r, int n) { (void)n; return r; }
static int c_some_none(int r, int n) { (void)n; return r % 3 == 1 ? XCCL_SPLIT_NOCOLOR : 7; }
static int k_rank(int r, int n) { (void)n; return r; }
static int k_reverse(int r, int n) { return n - r; }
static int k_same(int r, int n) { (void)r, (void)n; return 0; }

/* The members of r's color (old ranks) in new-rank order; returns how many. */
static int expect_members(int r, int n, color_fn cf, key_fn kf, int *out) {
  int m = 0, c = cf(r, n);
  if (c == XCCL_SPLIT_NOCOLOR) return 0;
  for (int q = 0; q < n; q++)
    if (cf(q, n) == c) out[m++] = q;
  for (int i = 1; i < m; i++) /* insertion sort by (key, rank) */
    for (int j = i; j > 0 && (kf(out[j - 1], n) > kf(out[j], n) ||
                              (kf(out[j - 1], n) == kf(out[j], n) && out[j - 1] > out[j])); j--) {
      int t = out[j];
      out[j] = out[j - 1], out[j - 1] = t;
    }
  return m;
}

/* Splits comm (whose ranks are old ranks 0..n-1 here: `me` is this one's)
 * and checks the new comm; returns it (NULL for no color). */
static xcclComm_t split_case(xcclComm_t comm, int me, int n, color_fn cf, key_fn kf, const char *what) {
  xcclComm_t nc = (xcclComm_t)(uintptr_t)0x5e5e5e50;
  xcclResult_t res = xcclCommSplit(comm, cf(me, n), kf(me, n), &nc, NULL);
  CHECK(res == xcclSuccess, "%s: split -> %s: %s", what, xcclGetErrorString(res), xcclGetLastError(comm));
  if (res != xcclSuccess) return NULL;
  int members[MAXR], m = expect_members(me, n, cf, kf, members);
  if (m == 0) {
    CHECK(nc == NULL, "%s: NOCOLOR gave comm %p", what, (void *)nc);
    return NULL;
  }
  int got_n = -1, got_r = -1, want_r = -1;
  for (int i = 0; i < m; i++)
    if (members[i] == me) want_r = i;
  XCHECK(xcclCommCount(nc, &got_n));
  XCHECK(xcclCommUserRank(nc, &got_r));
  CHECK(got_n == m && got_r == want_r, "%s: rank %d of %d, want %d of %d", what, got_r, got_n, want_r, m);
  check_allreduce(nc, me, members, m, what);
  return nc;
}

static void mode_split(xcclComm_t comm) {
  struct {
    const char *name;
    color_fn c;
    key_fn k;
  } cases[] = {{"parity", c_parity, k_rank}, {"one color, keys reversed", c_one, k_reverse},
               {"every rank its color", c_each, k_same}, {"NOCOLOR on some", c_some_none, k_reverse}};
  xcclComm_t parity = NULL;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) { /* one after another on the same parent */
    xcclComm_t nc = split_case(comm, rank, nranks, cases[i].c, cases[i].k, cases[i].name);
    if (i == 0) parity = nc;
    else if (nc) XCHECK(xcclCommDestroy(nc));
  }
  if (parity) { /* a split of a split: halves of each parity class, keys reversed */
    int pn = 0, pr = 0;
    XCHECK(xcclCommCount(parity, &pn));
    XCHECK(xcclCommUserRank(parity, &pr));
    xcclComm_t nc = NULL;
    int color = pr < (pn + 1) / 2;
    XCHECK(xcclCommSplit(parity, color, -pr, &nc, NULL));
    int members[MAXR], m = 0; /* old ranks of the same parity and half, by descending parity rank */
    for (int q = nranks - 1; q >= 0; q--) {
      int qpr = q / 2; /* its rank in the parity comm (keys were ranks) */
      int qpn = (nranks - q % 2 + 1) / 2;
      if (q % 2 == rank % 2 && (qpr < (qpn + 1) / 2) == color) members[m++] = q;
    }
    int got_n = -1, got_r = -1, want_r = -1;
    for (int i = 0; i < m; i++)
      if (members[i] == rank) want_r = i;
    XCHECK(xcclCommCount(nc, &got_n));
    XCHECK(xcclCommUserRank(nc, &got_r));
    CHECK(got_n == m && got_r == want_r, "split of a split: rank %d of %d, want %d of %d", got_r, got_n, want_r, m);
    check_allreduce(nc, rank, members, m, "split of a split");
    XCHECK(xcclCommDestroy(nc));
    XCHECK(xcclCommDestroy(parity));
  }
  /* A non-blocking split polled to completion, and its own split with a
   * NULL config, which inherits blocking = 0 (and the name). */
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "nb-split";
  xcclComm_t nb = NULL;
  xcclResult_t res = xcclCommSplit(comm, 0, rank, &nb, &cfg);
  CHECK(res == xcclInProgress || res == xcclSuccess, "non-blocking split -> %s: %s", xcclGetErrorString(res),
        xcclGetLastError(comm));
  xcclResult_t async = xcclInProgress;
  long polls = 0;
  double t0 = now_s();
  while (nb && async == xcclInProgress && now_s() - t0 < 60) {
    XCHECK(xcclCommGetAsyncError(nb, &async));
    polls += async == xcclInProgress;
  }
  CHECK(async == xcclSuccess, "non-blocking split ended with %s: %s", xcclGetErrorString(async), xcclGetLastError(nb));
  int all[MAXR];
  for (int q = 0; q < nranks; q++) all[q] = q;
  if (async == xcclSuccess) check_allreduce(nb, rank, all, nranks, "non-blocking split");
  xcclComm_t inh = NULL;
  res = xcclCommSplit(nb, 0, -rank, &inh, NULL);
  CHECK(res == xcclInProgress, "split with NULL config of a non-blocking comm -> %s (want xcclInProgress): %s",
        xcclGetErrorString(res), xcclGetLastError(nb));
  async = xcclInProgress;
  while (inh && async == xcclInProgress && now_s() - t0 < 60) XCHECK(xcclCommGetAsyncError(inh, &async));
  CHECK(async == xcclSuccess, "inherited split ended with %s", xcclGetErrorString(async));
  int ir = -1;
  if (inh && async == xcclSuccess) {
    XCHECK(xcclCommUserRank(inh, &ir));
    CHECK(ir == nranks - 1 - rank, "inherited split: rank %d, want %d (keys reversed)", ir, nranks - 1 - rank);
    check_allreduce(inh, rank, all, nranks, "inherited non-blocking split");
  }
  printf("rank %d: non-blocking split polled %ld times in progress\n", rank, polls);
  if (inh) XCHECK(xcclCommDestroy(inh));
  if (nb) XCHECK(xcclCommDestroy(nb));
  check_allreduce(comm, rank, all, nranks, "parent after every split");
}

/* ---- split_missing ---- */

static void mode_split_missing(xcclComm_t comm) {
  int all[MAXR];
  for (int q = 0; q < nranks; q++) all[q] = q;
  if (rank != nranks - 1) {
    XCHECK(xcclCommSetTimeout(comm, 2));
    xcclComm_t nc = (xcclComm_t)(uintptr_t)0x5e5e5e50;
    double t0 = now_s();
    xcclResult_t res = xcclCommSplit(comm, 0, rank, &nc, NULL);
    char want[64];
    snprintf(want, sizeof(want), "rank %d did not call xcclCommSplit", nranks - 1);
    CHECK(res == xcclTimeout, "split with a rank missing -> %s, want xcclTimeout", xcclGetErrorString(res));
    CHECK(has(xcclGetLastError(comm), want), "its message '%s' lacks '%s'", xcclGetLastError(comm), want);
    CHECK(nc == (xcclComm_t)(uintptr_t)0x5e5e5e50, "a failed split wrote *newcomm");
    CHECK(now_s() - t0 < 15, "the failed split took %.1f s", now_s() - t0);
    XCHECK(xcclCommSetTimeout(comm, 60));
  }
  check_allreduce(comm, rank, all, nranks, "parent after a failed split"); /* the missing rank waits here */
}

/* ---- nonblocking (several processes) ---- */

static int hexval(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

static void mode_nonblocking(void) {
  const char *hex = getenv("XCCL_UNIQUE_ID");
  if (!hex || strlen(hex) != 2 * XCCL_UNIQUE_ID_BYTES) test_skip("needs XCCL_UNIQUE_ID (run under xccl-run)");
  xcclUniqueId id;
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) id.internal[i] = (char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "nb-init";
  cfg.timeoutSeconds = 30;
  if (rank == 0) usleep(300000); /* the others then surely see their init in progress */
  xcclComm_t comm = NULL;
  xcclResult_t res = xcclCommInitRankConfig(&comm, nranks, id, rank, &cfg);
  CHECK(res == xcclInProgress, "non-blocking init -> %s: %s", xcclGetErrorString(res), xcclGetLastError(NULL));
  if (!comm) return;
  xcclResult_t async = xcclInProgress;
  long polls = 0;
  int refused_checked = 0;
  double t0 = now_s();
  while (async == xcclInProgress && now_s() - t0 < 60) {
    XCHECK(xcclCommGetAsyncError(comm, &async));
    if (async != xcclInProgress) break;
    polls++;
    if (!refused_checked) { /* while initializing, operations are refused with the reason */
      int32_t x = 1, y = 0;
      res = xcclAllReduce(&x, &y, 1, xcclInt32, xcclSum, comm, NULL);
      int n = -1;
      xcclResult_t rc = xcclCommCount(comm, &n);
      XCHECK(xcclCommGetAsyncError(comm, &async));
      if (async == xcclInProgress) { /* (the init may have ended between the calls) */
        CHECK(res == xcclInvalidUsage && has(xcclGetLastError(NULL), "still initializing"),
              "all-reduce while initializing -> %s: %s", xcclGetErrorString(res), xcclGetLastError(NULL));
        CHECK(rc == xcclInvalidUsage && n == -1, "xcclCommCount while initializing -> %s", xcclGetErrorString(rc));
        refused_checked = 1;
      }
    }
  }
  CHECK(async == xcclSuccess, "non-blocking init ended with %s: %s", xcclGetErrorString(async),
        xcclGetLastError(comm));
  CHECK(rank == 0 || polls > 0, "rank %d never saw its init in progress", rank);
  CHECK(rank == 0 || refused_checked, "rank %d never checked a call refused while initializing", rank);
  printf("rank %d: init in progress for %ld polls\n", rank, polls);
  int all[MAXR];
  for (int q = 0; q < nranks; q++) all[q] = q;
  if (async == xcclSuccess) check_allreduce(comm, rank, all, nranks, "non-blocking comm");
  XCHECK(xcclCommDestroy(comm));
}

/* The bootstrap roots of xcclGetUniqueId whose ranks never all came serve
 * until XCCL_TIMEOUT (4 s in these tests): the test waits for them, so that
 * the process does not exit under a thread still using OpenSSL. */
static void wait_roots_gone(void) {
  const char *t = getenv("XCCL_TIMEOUT");
  double s = t ? atof(t) : 0;
  if (s > 0 && s <= 10) usleep((useconds_t)((s + 1) * 1e6));
}

/* ---- abort_init (one process) ---- */

static void mode_abort_init(void) {
  xcclUniqueId id;
  XCHECK(xcclGetUniqueId(&id));
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  xcclComm_t comm = NULL;
  CHECK(xcclCommInitRankConfig(&comm, 2, id, 0, &cfg) == xcclInProgress, "init -> %s", xcclGetLastError(NULL));
  usleep(200000);
  xcclResult_t async = xcclSuccess;
  XCHECK(xcclCommGetAsyncError(comm, &async));
  CHECK(async == xcclInProgress, "init whose peer never comes: async %s", xcclGetErrorString(async));
  int n = -1;
  CHECK(xcclCommCount(comm, &n) == xcclInvalidUsage && has(xcclGetLastError(NULL), "still initializing"),
        "count while initializing: %s", xcclGetLastError(NULL));
  double t0 = now_s();
  XCHECK(xcclCommAbort(comm));
  CHECK(now_s() - t0 < 2.0, "abort of an initializing comm took %.2f s", now_s() - t0);
  CHECK(xcclCommGetAsyncError(comm, &async) == xcclInvalidArgument && has(xcclGetLastError(NULL), "aborted"),
        "the aborted handle: %s", xcclGetLastError(NULL));

  /* Destroy waits for the init, which fails at its timeout (2 s here). */
  XCHECK(xcclGetUniqueId(&id));
  cfg.timeoutSeconds = 2;
  CHECK(xcclCommInitRankConfig(&comm, 2, id, 1, &cfg) == xcclInProgress, "init -> %s", xcclGetLastError(NULL));
  t0 = now_s();
  XCHECK(xcclCommDestroy(comm));
  CHECK(now_s() - t0 < 10.0, "destroy of an initializing comm took %.2f s", now_s() - t0);

  /* A failed background init: the error and its sentence, then destroy. */
  XCHECK(xcclGetUniqueId(&id));
  CHECK(xcclCommInitRankConfig(&comm, 2, id, 1, &cfg) == xcclInProgress, "init -> %s", xcclGetLastError(NULL));
  async = xcclInProgress;
  t0 = now_s();
  while (async == xcclInProgress && now_s() - t0 < 30) XCHECK(xcclCommGetAsyncError(comm, &async));
  CHECK(async == xcclTimeout, "init without its peer ended with %s", xcclGetErrorString(async));
  CHECK(has(xcclGetLastError(comm), "init failed"), "its last error: '%s'", xcclGetLastError(comm));
  float x = 1;
  CHECK(xcclAllReduce(&x, &x, 1, xcclFloat32, xcclSum, comm, NULL) == xcclInvalidUsage &&
            has(xcclGetLastError(NULL), "init failed"),
        "all-reduce after a failed init: %s", xcclGetLastError(NULL));
  CHECK(has(xcclGetLastError(comm), "init failed") && has(xcclGetLastError(comm), "root"),
        "the comm's last error is still the init's: '%s'", xcclGetLastError(comm));
  XCHECK(xcclCommDestroy(comm));
  wait_roots_gone();
}

/* ---- group_init, init_all (one process) ---- */

/* One grouped all-reduce over all n comms (ranks 0..n-1) from this thread. */
static void grouped_allreduce(xcclComm_t *c, int n, const char *what) {
  int32_t *s[MAXR], *r[MAXR];
  XCHECK(xcclGroupStart());
  for (int i = 0; i < n; i++) {
    s[i] = malloc(COUNT * sizeof(int32_t));
    r[i] = malloc(COUNT * sizeof(int32_t));
    for (size_t k = 0; k < COUNT; k++) s[i][k] = contrib(i, k), r[i][k] = -1;
    XCHECK(xcclAllReduce(s[i], r[i], COUNT, xcclInt32, xcclSum, c[i], NULL));
  }
  xcclResult_t res = xcclGroupEnd();
  CHECK(res == xcclSuccess, "%s: grouped all-reduce -> %s: %s", what, xcclGetErrorString(res), xcclGetLastError(NULL));
  int sum = n * (n + 1) / 2;
  for (int i = 0; i < n; i++) {
    size_t bad = 0;
    for (size_t k = 0; k < COUNT && res == xcclSuccess; k++) bad += r[i][k] != (int32_t)(sum * (int)(k % 7 + 1));
    CHECK(bad == 0, "%s: rank %d: %zu wrong elements", what, i, bad);
    free(s[i]);
    free(r[i]);
  }
}

/* Sends around the ring of the n comms in one group from this thread:
 * the user connections are made first, one thread per comm. */
static void grouped_ring_p2p(xcclComm_t *c, int n, const char *what) {
  int32_t out[MAXR], in[MAXR];
  XCHECK(xcclGroupStart());
  for (int i = 0; i < n; i++) {
    out[i] = 1000 + i, in[i] = -1;
    XCHECK(xcclSend(&out[i], 1, xcclInt32, (i + 1) % n, c[i], NULL));
    XCHECK(xcclRecv(&in[i], 1, xcclInt32, (i + n - 1) % n, c[i], NULL));
  }
  xcclResult_t res = xcclGroupEnd();
  CHECK(res == xcclSuccess, "%s: grouped ring of sends -> %s: %s", what, xcclGetErrorString(res),
        xcclGetLastError(NULL));
  for (int i = 0; i < n && res == xcclSuccess; i++)
    CHECK(in[i] == 1000 + (i + n - 1) % n, "%s: rank %d received %d", what, i, in[i]);
}

static void check_ranks(xcclComm_t *c, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    int cn = -1, cr = -1;
    XCHECK(xcclCommCount(c[i], &cn));
    XCHECK(xcclCommUserRank(c[i], &cr));
    CHECK(cn == n && cr == i, "%s: comm %d is rank %d of %d", what, i, cr, cn);
  }
}

static void mode_group_init(int n) {
  xcclUniqueId id;
  xcclComm_t c[MAXR];
  XCHECK(xcclGetUniqueId(&id));
  XCHECK(xcclGroupStart());
  for (int i = 0; i < n; i++) {
    xcclResult_t res = xcclCommInitRank(&c[i], n, id, i);
    CHECK(res == xcclSuccess, "init of rank %d in a group -> %s", i, xcclGetErrorString(res));
  }
  xcclResult_t res = xcclGroupEnd();
  CHECK(res == xcclSuccess, "group of %d inits -> %s: %s", n, xcclGetErrorString(res), xcclGetLastError(NULL));
  if (res != xcclSuccess) return;
  check_ranks(c, n, "group init");
  grouped_allreduce(c, n, "group init");
  grouped_allreduce(c, n, "group init, again");
  grouped_ring_p2p(c, n, "group init");
  grouped_ring_p2p(c, n, "group init, connected");
  for (int i = 0; i < n; i++) XCHECK(xcclCommDestroy(c[i]));

  /* A group whose init cannot finish: xcclGroupEnd returns its error. */
  XCHECK(xcclGetUniqueId(&id));
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.timeoutSeconds = 1;
  XCHECK(xcclGroupStart());
  XCHECK(xcclCommInitRankConfig(&c[0], 2, id, 0, &cfg)); /* rank 1 never comes */
  res = xcclGroupEnd();
  CHECK(res == xcclTimeout && has(xcclGetLastError(NULL), "init"), "group with a failing init -> %s: %s",
        xcclGetErrorString(res), xcclGetLastError(NULL));
  XCHECK(xcclCommDestroy(c[0]));
  wait_roots_gone();
}

static void mode_init_all(int n) {
  xcclComm_t c[MAXR];
  XCHECK(xcclCommInitAll(c, n, NULL));
  check_ranks(c, n, "xcclCommInitAll");
  grouped_allreduce(c, n, "xcclCommInitAll");
  grouped_ring_p2p(c, n, "xcclCommInitAll");
  for (int i = 0; i < n; i++) XCHECK(xcclCommDestroy(c[i]));
  int devs[MAXR];
  for (int i = 0; i < n; i++) devs[i] = n - 1 - i;
  XCHECK(xcclCommInitAll(c, n, devs));
  int dev = -5;
  XCHECK(xcclCommCuDevice(c[0], &dev));
  CHECK(dev >= -1, "xcclCommCuDevice: %d", dev);
  grouped_allreduce(c, n, "xcclCommInitAll with devlist");
  for (int i = 0; i < n; i++) XCHECK(xcclCommDestroy(c[i]));
}

/* Run with a setting every rank refuses (XCCL_ALGO=bogus): InitAll fails
 * with the reason and leaves comms untouched. */
static void mode_init_all_refused(int n) {
  xcclComm_t c[MAXR];
  for (int i = 0; i < n; i++) c[i] = (xcclComm_t)(uintptr_t)0x5e5e5e50;
  double t0 = now_s();
  xcclResult_t res = xcclCommInitAll(c, n, NULL);
  CHECK(res != xcclSuccess && has(xcclGetLastError(NULL), "xcclCommInitAll") && has(xcclGetLastError(NULL), "ALGO"),
        "InitAll with XCCL_ALGO=bogus -> %s: '%s'", xcclGetErrorString(res), xcclGetLastError(NULL));
  for (int i = 0; i < n; i++) CHECK(c[i] == (xcclComm_t)(uintptr_t)0x5e5e5e50, "a failed InitAll wrote comms[%d]", i);
  CHECK(now_s() - t0 < 10, "the failed InitAll took %.1f s", now_s() - t0);
}

/* ---- finalize, revoke (one process) ---- */

static void mode_finalize(void) {
  xcclComm_t c[2];
  XCHECK(xcclCommInitAll(c, 2, NULL));
  grouped_allreduce(c, 2, "before finalize");
  for (int i = 0; i < 2; i++) XCHECK(xcclCommFinalize(c[i]));
  float x = 1;
  CHECK(xcclAllReduce(&x, &x, 1, xcclFloat32, xcclSum, c[0], NULL) == xcclInvalidUsage &&
            has(xcclGetLastError(NULL), "finalized"),
        "all-reduce after finalize: %s", xcclGetLastError(NULL));
  CHECK(xcclCommFinalize(c[0]) == xcclInvalidUsage, "finalize twice accepted");
  int n = 0;
  XCHECK(xcclCommCount(c[1], &n)); /* queries still answer */
  for (int i = 0; i < 2; i++) XCHECK(xcclCommDestroy(c[i]));
}

typedef struct {
  xcclComm_t comm;
  xcclResult_t res;
  double took;
  char msg[1024];
  int color, key;
  xcclComm_t out;
} job_t;

static void *blocked_allreduce(void *arg) {
  job_t *j = arg;
  static int32_t s[COUNT], r[COUNT];
  double t0 = now_s();
  j->res = xcclAllReduce(s, r, COUNT, xcclInt32, xcclSum, j->comm, NULL);
  j->took = now_s() - t0;
  snprintf(j->msg, sizeof(j->msg), "%s", xcclGetLastError(NULL));
  return NULL;
}

static void *split_job(void *arg) {
  job_t *j = arg;
  j->res = xcclCommSplit(j->comm, j->color, j->key, &j->out, NULL);
  snprintf(j->msg, sizeof(j->msg), "%s", xcclGetLastError(NULL));
  return NULL;
}

static void mode_revoke(void) {
  xcclComm_t c[2];
  XCHECK(xcclCommInitAll(c, 2, NULL));
  grouped_allreduce(c, 2, "before revoke");
  /* Rank 0 blocks in an all-reduce that rank 1 never calls. */
  job_t j = {.comm = c[0]};
  pthread_t t;
  pthread_create(&t, NULL, blocked_allreduce, &j);
  usleep(300000);
  double t0 = now_s();
  xcclResult_t res = xcclCommRevoke(c[0], 0);
  CHECK(res == xcclSuccess, "revoke -> %s: %s", xcclGetErrorString(res), xcclGetLastError(NULL));
  pthread_join(t, NULL);
  CHECK(now_s() - t0 < 5.0, "revoke took %.2f s", now_s() - t0);
  CHECK(j.res != xcclSuccess && has(j.msg, "revoked"), "the blocked all-reduce -> %s after %.2f s: '%s'",
        xcclGetErrorString(j.res), j.took, j.msg);
  xcclResult_t async = xcclInternalError;
  XCHECK(xcclCommGetAsyncError(c[0], &async));
  CHECK(async == xcclSuccess, "async error after revoke: %s", xcclGetErrorString(async));
  float x = 1;
  CHECK(xcclAllReduce(&x, &x, 1, xcclFloat32, xcclSum, c[0], NULL) == xcclInvalidUsage &&
            has(xcclGetLastError(NULL), "revoked"),
        "all-reduce after revoke: %s", xcclGetLastError(NULL));
  CHECK(xcclCommRevoke(c[0], 0) == xcclSuccess, "revoke twice: %s", xcclGetLastError(NULL));
  XCHECK(xcclCommRevoke(c[1], 0)); /* an idle comm */
  /* Both revoked comms split into one new comm of both ranks (two threads:
   * a split waits for every rank), which works. */
  job_t sj[2] = {{.comm = c[0], .color = 0, .key = 1}, {.comm = c[1], .color = 0, .key = 0}};
  pthread_t st[2];
  for (int i = 0; i < 2; i++) pthread_create(&st[i], NULL, split_job, &sj[i]);
  for (int i = 0; i < 2; i++) pthread_join(st[i], NULL);
  for (int i = 0; i < 2; i++)
    CHECK(sj[i].res == xcclSuccess, "split of revoked comm %d -> %s: %s", i, xcclGetErrorString(sj[i].res), sj[i].msg);
  if (sj[0].res == xcclSuccess && sj[1].res == xcclSuccess) {
    xcclComm_t nc[2] = {sj[1].out, sj[0].out}; /* keys reversed the ranks */
    check_ranks(nc, 2, "split of revoked comms");
    grouped_allreduce(nc, 2, "split of revoked comms");
    for (int i = 0; i < 2; i++) XCHECK(xcclCommDestroy(nc[i]));
  }
  /* Shrink works too: rank 0 alone. */
  xcclComm_t sc = NULL;
  int ex = 1;
  res = xcclCommShrink(c[0], &ex, 1, &sc);
  CHECK(res == xcclSuccess, "shrink of a revoked comm -> %s: %s", xcclGetErrorString(res), xcclGetLastError(c[0]));
  if (sc) {
    int one[1] = {0};
    check_allreduce(sc, 0, one, 1, "shrunk revoked comm");
    XCHECK(xcclCommDestroy(sc));
  }
  XCHECK(xcclCommDestroy(c[0]));
  XCHECK(xcclCommAbort(c[1]));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODE [N]\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 1 || n > MAXR) {
    fprintf(stderr, "N=%d is not in 1..%d\n", n, MAXR);
    return 2;
  }
  int multi = !strcmp(mode, "split") || !strcmp(mode, "split_missing");
  if (multi) {
    xcclComm_t comm;
    XCHECK(xcclCommInitFromEnv(&comm));
    XCHECK(xcclCommCount(comm, &nranks));
    XCHECK(xcclCommUserRank(comm, &rank));
    if (nranks > MAXR) test_skip("more ranks than this test knows");
    if (!strcmp(mode, "split")) mode_split(comm);
    else if (nranks < 2) test_skip("split_missing needs 2 ranks or more");
    else mode_split_missing(comm);
    XCHECK(xcclCommDestroy(comm));
  } else if (!strcmp(mode, "nonblocking")) {
    const char *r = getenv("XCCL_RANK"), *s = getenv("XCCL_NRANKS");
    if (!r || !s) test_skip("needs XCCL_RANK and XCCL_NRANKS (run under xccl-run)");
    rank = atoi(r), nranks = atoi(s);
    mode_nonblocking();
  } else if (!strcmp(mode, "abort_init")) {
    mode_abort_init();
  } else if (!strcmp(mode, "group_init")) {
    mode_group_init(n);
  } else if (!strcmp(mode, "init_all")) {
    mode_init_all(n);
  } else if (!strcmp(mode, "init_all_refused")) {
    mode_init_all_refused(n);
  } else if (!strcmp(mode, "finalize")) {
    mode_finalize();
  } else if (!strcmp(mode, "revoke")) {
    mode_revoke();
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  return test_finish(mode);
}
