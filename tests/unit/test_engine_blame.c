/* test_engine_blame.c — which wait the host engine (kern_run) names when a
 * launch stops. The engine reads the clock only when every item stalls, so
 * all items that stalled since the last look time out together; it must
 * name the one that stalled first (the rank's direct wait on a stopped
 * peer), not the first in item order (a wait on a live peer that is itself
 * stuck behind it). And when a connection fails because a peer gave up,
 * the failure carries the wait this rank had been in for longer.
 *
 * Items here are real engine items over real fifos with no transport: each
 * moves a set number of times and then waits forever on its own fifo. */
#include <string.h>
#include <time.h>

#include "host_engine.h"
#include "test_util.h"

typedef struct {
  kern_item_t it; /* first: the engine's pointer is ours */
  slot_fifo_t fifo;
  int moves_left; /* steps it may still take, one per pass */
  int moved_this_pass;
} fake_item_t;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One step per pass, so items that move longer stall later. */
static int fake_step(kern_item_t *it, kern_failure_t *fail) {
  (void)fail;
  fake_item_t *f = (fake_item_t *)it;
  if (f->moves_left <= 0 || f->moved_this_pass) {
    f->moved_this_pass = 0;
    return 0;
  }
  f->moves_left--;
  f->moved_this_pass = 1;
  it->loop++;
  return 1;
}

static slot_fifo_t *fake_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  *step_p = 0;
  *is_recv_p = 1;
  return &((fake_item_t *)it)->fifo;
}

static const kern_item_ops_t fake_ops = {.step = fake_step, .waiting = fake_waiting};

/* The environment's wait: sleeps, and at fail_after_ns after the first
 * wait marks fail_fifo failed as the proxy does when a peer closes. */
static struct {
  uint64_t first_ns, fail_after_ns;
  slot_fifo_t *fail_fifo;
} clock_ctl;

static int env_wait(void *ctx, int timeout_us) {
  (void)ctx;
  uint64_t now = mono_ns();
  if (!clock_ctl.first_ns) clock_ctl.first_ns = now;
  if (clock_ctl.fail_fifo && now - clock_ctl.first_ns >= clock_ctl.fail_after_ns &&
      !atomic_load(&clock_ctl.fail_fifo->error)) {
    snprintf(clock_ctl.fail_fifo->error_msg, SLOT_ERROR_MAX, "receiving from rank 9: connection closed by the peer");
    atomic_store(&clock_ctl.fail_fifo->error, (int)xcclRemoteError);
  }
  struct timespec ts = {0, (long)timeout_us * 1000};
  nanosleep(&ts, NULL);
  return 0;
}

static int env_progress(void *ctx) {
  (void)ctx;
  return 0;
}

/* Runs items whose peers are peers[i] and which move moves[i] times; the
 * fifo of item fail_item (-1: none) fails fail_after_s into the run. */
static xcclResult_t run(int n, const int *peers, const int *moves, int fail_item, double fail_after_s,
                        kern_failure_t *fail) {
  static fake_item_t items[4];
  kern_item_t *ptrs[4];
  static slot_bell_t bell;
  kern_env_t env = {.timeout_s = 0.3, .bell = &bell, .wait = env_wait, .progress = env_progress};
  memset(&clock_ctl, 0, sizeof(clock_ctl));
  for (int i = 0; i < n; i++) {
    memset(&items[i], 0, sizeof(items[i]));
    kern_item_init(&items[i].it, &fake_ops, &env, kern_lane_comm(0) + i); /* each its own lane */
    items[i].it.peer = peers[i];
    items[i].it.channel = i;
    items[i].moves_left = moves[i];
    ptrs[i] = &items[i].it;
  }
  if (fail_item >= 0) {
    clock_ctl.fail_fifo = &items[fail_item].fifo;
    clock_ctl.fail_after_ns = (uint64_t)(fail_after_s * 1e9);
  }
  return kern_run(ptrs, n, fail);
}

/* Both time out in one look; the item that stopped moving first is named,
 * whether it comes first or last. */
static void test_timeout_names_first_stalled(void) {
  kern_failure_t f;
  int peers[3] = {3, 0, 5};
  int moves_a[3] = {2, 40, 40}; /* item 0 stalls first */
  CHECK(run(3, peers, moves_a, -1, 0, &f) == xcclTimeout, "three items that stall time out");
  CHECK(f.kind == KERN_FAIL_TIMEOUT && f.item == 0 && f.peer == 3 && f.channel == 0,
        "item 0 stalled first: named item %d (peer %d, channel %d), kind %d", f.item, f.peer, f.channel, (int)f.kind);
  int moves_b[3] = {40, 40, 2}; /* item 2 stalls first */
  CHECK(run(3, peers, moves_b, -1, 0, &f) == xcclTimeout, "three items that stall time out");
  CHECK(f.kind == KERN_FAIL_TIMEOUT && f.item == 2 && f.peer == 5 && f.channel == 2,
        "item 2 stalled first: named item %d (peer %d, channel %d)", f.item, f.peer, f.channel);
  CHECK(f.also_ns == 0, "a timeout carries no second wait");
}

/* A connection that fails after most of the timeout: the failure is that
 * connection's, and it carries the other item's long wait. */
static void test_conn_carries_long_wait(void) {
  kern_failure_t f;
  int peers[2] = {3, 0};
  int moves[2] = {2, 40};
  xcclResult_t r = run(2, peers, moves, 1, 0.25, &f);
  CHECK(r == xcclRemoteError && f.kind == KERN_FAIL_CONN && f.item == 1, "item 1's connection failed: %d kind %d item %d",
        (int)r, (int)f.kind, f.item);
  CHECK(strstr(f.msg, "connection closed") != NULL, "the fifo's sentence is kept: %s", f.msg);
  CHECK(f.also_ns >= 150000000ull && f.also_item == 0 && f.also_peer == 3 && f.also_channel == 0 && f.also_recv == 1,
        "the long wait on peer 3 is carried: item %d peer %d channel %d recv %d after %.3f s", f.also_item, f.also_peer,
        f.also_channel, f.also_recv, (double)f.also_ns / 1e9);
  /* Early: the other wait is short and says nothing. */
  r = run(2, peers, moves, 1, 0.02, &f);
  CHECK(r == xcclRemoteError && f.kind == KERN_FAIL_CONN && f.item == 1, "an early failure is the connection's");
  CHECK(f.also_ns == 0, "a wait shorter than half the timeout is not carried (%.3f s)", (double)f.also_ns / 1e9);
}

int main(void) {
  test_timeout_names_first_stalled();
  test_conn_carries_long_wait();
  return test_finish("engine_blame");
}
