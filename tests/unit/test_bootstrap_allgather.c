/*
 * test_bootstrap_allgather.c — bootstrap_allgather (src/bootstrap/bootstrap_allgather.c),
 * Bruck's all-gather over point-to-point messages, on k = 1..9, 16 and 17
 * ranks, each a thread of this process with its own bootstrap (root, listener
 * and messages all real, over loopback).
 *
 * Every rank fills its block with bytes that say whose block and which byte
 * it is; after the call every position must hold exactly its owner's bytes,
 * and the call must have taken ceil(log2 k) rounds. Sizes: 1, 13 (not a
 * multiple of anything) and 1000 bytes, back to back, so that a rank that runs
 * ahead into the next call cannot be taken for one still in this one; then
 * with messages cut into chunks of 7 bytes. Failures: ranks passing different
 * sizes name each other; a peer that never calls is named after the timeout;
 * the abort flag ends a wait at once.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap.h"
#include "bootstrap_conn.h"
#include "clock.h"
#include "error.h"
#include "test_util.h"

#define MAX_K 17

typedef struct {
  int rank, k;
  const bs_id_t *id;
  pthread_barrier_t *barrier;
  void (*body)(bootstrap_t *bs, int rank, int k, void *arg);
  void *arg;
  _Atomic int abort_flag;
} rank_t;

static int ceil_log2(int k) {
  int n = 0;
  while ((1 << n) < k) n++;
  return n;
}

static uint8_t pattern(int owner, size_t byte, int call) { return (uint8_t)(owner * 31 + byte * 7 + call * 101 + 1); }

static void *rank_main(void *p) {
  rank_t *rk = p;
  bootstrap_t *bs = NULL;
  xcclResult_t res = bootstrap_init(rk->id, rk->rank, rk->k, 20.0, &rk->abort_flag, &bs);
  CHECK(res == xcclSuccess, "k=%d rank %d: bootstrap_init: %s", rk->k, rk->rank, err_last());
  if (res == xcclSuccess) rk->body(bs, rk->rank, rk->k, rk->arg);
  pthread_barrier_wait(rk->barrier); /* no rank leaves while another may still need it */
  bootstrap_close(bs);
  return NULL;
}

/* Runs body on k ranks, each on its own thread, then closes them. */
static void run_ranks(int k, void (*body)(bootstrap_t *, int, int, void *), void *arg) {
  bs_id_t id;
  memset(&id, 0, sizeof(id));
  char ifname[64];
  XCHECK(sock_pick_interface(&id.root, ifname, sizeof(ifname)));
  CHECK(bs_random(id.secret, sizeof(id.secret)) == 0 && bs_random(&id.job, sizeof(id.job)) == 0, "random bytes");
  XCHECK(bootstrap_root_start(&id, 20.0));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)k);
  rank_t rk[MAX_K];
  pthread_t th[MAX_K];
  for (int r = 0; r < k; r++) {
    rk[r] = (rank_t){.rank = r, .k = k, .id = &id, .barrier = &barrier, .body = body, .arg = arg};
    atomic_init(&rk[r].abort_flag, 0);
    pthread_create(&th[r], NULL, rank_main, &rk[r]);
  }
  for (int r = 0; r < k; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&barrier);
}

/* One all-gather of size-byte blocks, checked at every position. */
static void gather_checked(bootstrap_t *bs, int rank, int k, size_t size, int call) {
  uint8_t *all = malloc((size_t)k * size + 1);
  memset(all, 0xee, (size_t)k * size);
  for (size_t b = 0; b < size; b++) all[(size_t)rank * size + b] = pattern(rank, b, call);
  xcclResult_t res = bootstrap_allgather(bs, all, size);
  CHECK(res == xcclSuccess, "k=%d rank %d size %zu: %s", k, rank, size, err_last());
  int wrong = 0;
  for (int o = 0; o < k && res == xcclSuccess; o++)
    for (size_t b = 0; b < size; b++)
      if (all[(size_t)o * size + b] != pattern(o, b, call)) {
        if (wrong++ == 0)
          CHECK(0, "k=%d rank %d size %zu: block of rank %d byte %zu is %u, expected %u", k, rank, size, o, b,
                all[(size_t)o * size + b], pattern(o, b, call));
      }
  CHECK(wrong == 0, "k=%d rank %d size %zu: %d wrong bytes", k, rank, size, wrong);
  CHECK(bootstrap_allgather_rounds(bs) == ceil_log2(k), "k=%d rank %d: %d rounds, expected %d", k, rank,
        bootstrap_allgather_rounds(bs), ceil_log2(k));
  free(all);
}

static void body_sizes(bootstrap_t *bs, int rank, int k, void *arg) {
  (void)arg;
  gather_checked(bs, rank, k, 1, 0);
  gather_checked(bs, rank, k, 13, 1);
  gather_checked(bs, rank, k, 1000, 2);
  bs->ag_chunk_max = 7; /* a round in several messages */
  gather_checked(bs, rank, k, 13, 3);
  bs->ag_chunk_max = 0;
  gather_checked(bs, rank, k, 8, 4);
}

/* Rank 1 passes 16-byte blocks, the others 8: the ranks that receive from
 * it, and it, fail naming each other; the rest time out naming a peer. */
typedef struct {
  xcclResult_t res[3];
  char msg[3][ERR_MSG_MAX];
} mismatch_t;

static void body_mismatch(bootstrap_t *bs, int rank, int k, void *arg) {
  mismatch_t *m = arg;
  (void)k;
  uint8_t all[3 * 16] = {0};
  bootstrap_set_timeout(bs, 2.0);
  m->res[rank] = bootstrap_allgather(bs, all, rank == 1 ? 16 : 8);
  snprintf(m->msg[rank], sizeof(m->msg[rank]), "%s", err_last());
}

static void test_mismatch(void) {
  mismatch_t m;
  memset(&m, 0, sizeof(m));
  run_ranks(3, body_mismatch, &m);
  for (int r = 0; r < 3; r++) CHECK(m.res[r] != xcclSuccess, "rank %d: all-gather of mismatched sizes succeeded", r);
  /* round 1: rank 0 receives from rank 1, rank 1 from rank 2 */
  CHECK(m.res[0] == xcclRemoteError && strstr(m.msg[0], "rank 1 gathers blocks of 16 bytes where rank 0 has 8") &&
            strstr(m.msg[0], "mismatched xccl builds"),
        "rank 0: %s", m.msg[0]);
  CHECK(m.res[1] == xcclRemoteError && strstr(m.msg[1], "rank 2 gathers blocks of 8 bytes where rank 1 has 16"),
        "rank 1: %s", m.msg[1]);
  /* rank 2 is left waiting on one of the two that stopped (which one depends on timing) */
  CHECK(m.res[2] == xcclTimeout && strstr(m.msg[2], "round 2 of 2") &&
            (strstr(m.msg[2], "from rank 1 took longer") || strstr(m.msg[2], "to rank 0 took longer")),
        "rank 2: %s", m.msg[2]);
}

/* Rank 1 never calls: rank 0 fails after the timeout naming it, or at once
 * when its abort flag is set. */
typedef struct {
  int use_abort;
  rank_t *rank0;
  xcclResult_t res;
  double secs;
  char msg[ERR_MSG_MAX];
} absent_t;

static void *raise_abort(void *p) {
  _Atomic int *flag = p;
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_store(flag, 1);
  return NULL;
}

static void body_absent(bootstrap_t *bs, int rank, int k, void *arg) {
  absent_t *a = arg;
  (void)k;
  if (rank != 0) return;
  uint8_t all[2 * 4] = {0};
  bootstrap_set_timeout(bs, a->use_abort ? 30.0 : 1.0);
  pthread_t t;
  if (a->use_abort) pthread_create(&t, NULL, raise_abort, (void *)bs->abort_flag);
  uint64_t t0 = clock_ns();
  a->res = bootstrap_allgather(bs, all, 4);
  a->secs = (double)(clock_ns() - t0) / 1e9;
  snprintf(a->msg, sizeof(a->msg), "%s", err_last());
  if (a->use_abort) pthread_join(t, NULL);
}

static void test_absent(int use_abort) {
  absent_t a = {.use_abort = use_abort};
  run_ranks(2, body_absent, &a);
  if (use_abort) {
    CHECK(a.res == xcclRemoteError && strstr(a.msg, "aborted") && strstr(a.msg, "rank 1"), "abort: %d %s", a.res,
          a.msg);
    CHECK(a.secs < 5.0, "abort took %.1f s", a.secs);
  } else {
    CHECK(a.res == xcclTimeout && strstr(a.msg, "rank 1"), "timeout: %d %s", a.res, a.msg);
    CHECK(a.secs >= 0.9 && a.secs < 10.0, "timeout after %.1f s, expected about 1", a.secs);
  }
}

int main(void) {
  setenv("XCCL_SOCKET_IFNAME", "lo", 0);
  const int ks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17};
  for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) run_ranks(ks[i], body_sizes, NULL);
  test_mismatch();
  test_absent(0);
  test_absent(1);
  return test_finish("test_bootstrap_allgather");
}
