/*
 * test_pat.c — PAT's schedule (host_pat.h) on its own: the offsets each
 * dimension moves cover [1, k) once for every k up to 70,000, and the
 * kernel's items, k of them in this one thread over in-memory fifos, run
 * all-gathers and reduce-scatters to the right result on 1 to 33 ranks:
 * tiny slots (pieces span shares, shares span pieces), tiny working memory
 * (the reduce-scatter in many chunks), in place and not, integer sums
 * (exact), max and avg. Each rank sends n_s shares to rank + 2^s and (k-1)
 * in all: the bytes algo_pat's work states (cost_work), which is also
 * checked here.
 */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "host_pat.h"
#include "slots.h"
#include "test_util.h"

#define MAXK 33

static void check_offsets(void) {
  for (int k = 1; k <= 70000; k += k < 300 ? 1 : 997) {
    size_t sum = 0;
    int dims = host_pat_dims(k);
    CHECK((1 << dims) >= k && (dims == 0 || (1 << (dims - 1)) < k), "%d ranks: %d dimensions", k, dims);
    for (int d = 0; d < dims; d++) {
      size_t n = host_pat_blocks(k, d), want = 0;
      for (int o = 1; k <= 4096 && o < k; o++) want += (o & -o) == (1 << d);
      CHECK(n >= 1 && (k > 4096 || n == want), "%d ranks, dimension %d: %zu offsets, want %zu", k, d, n, want);
      sum += n;
    }
    CHECK(sum == (size_t)(k - 1), "%d ranks: the dimensions move %zu offsets, not k - 1", k, sum);
    int send[32], recv[32];
    CHECK(host_pat_partners(k, k - 1, send, recv) == dims, "partners");
    for (int d = 0; d < dims; d++)
      CHECK(send[d] == (k - 1 + (1 << d)) % k && recv[d] == (k - 1 - (1 << d) + k) % k, "%d ranks: partners of %d", k, d);
  }
}

/* k ranks in one thread: fifo[a * MAXK + b] carries a's messages to b. */
typedef struct {
  int k;
  slot_fifo_t *fifo[MAXK * MAXK];
  uint64_t sstep[MAXK * MAXK], rstep[MAXK * MAXK];
  slot_fifo_t *send_f[MAXK][MAXK], *recv_f[MAXK][MAXK];
  uint64_t *send_s[MAXK][MAXK], *recv_s[MAXK][MAXK];
  partner_args_t a[MAXK];
  void *mem[MAXK];
} world_t;

static void world_make(world_t *w, int k, size_t slot) {
  memset(w, 0, sizeof(*w));
  w->k = k;
  for (int q = 0; q < k; q++) {
    int send[32], recv[32], dims = host_pat_partners(k, q, send, recv);
    for (int d = 0; d < dims; d++) {
      int p = send[d];
      slot_fifo_t *f = w->fifo[q * MAXK + p];
      if (!f) f = w->fifo[q * MAXK + p] = slot_fifo_create(slot);
      CHECK(f != NULL, "fifo");
      w->send_f[q][p] = w->recv_f[p][q] = f;
      w->send_s[q][p] = &w->sstep[q * MAXK + p];
      w->recv_s[p][q] = &w->rstep[q * MAXK + p];
    }
    (void)recv;
  }
}

static void world_free(world_t *w) {
  for (int i = 0; i < MAXK * MAXK; i++) slot_fifo_destroy(w->fifo[i]);
  for (int q = 0; q < w->k; q++) free(w->mem[q]);
}

/* Input element i of rank q's buffer (for the all-gather its share). */
static int32_t input(int q, size_t i) { return (int32_t)((q * 31 + (int)(i % 97) * 7) % 1000) - 300; }

/* One collective on every rank at once: the items stepped in turn until all
 * are done; 0 if they stopped moving first. */
static int run(world_t *w, coll_kind_t coll, xcclRedOp_t op, size_t count, size_t cap, int in_place, int32_t **bufs) {
  static const kern_env_t env;
  int k = w->k;
  pat_item_t *it[MAXK];
  int32_t *sendb[MAXK];
  for (int q = 0; q < k; q++) {
    size_t all = count * (size_t)k;
    bufs[q] = malloc((all ? all : 1) * sizeof(int32_t));
    int32_t *in = malloc((all ? all : 1) * sizeof(int32_t));
    CHECK(bufs[q] && in, "memory");
    for (size_t i = 0; i < all; i++) in[i] = input(q, i);
    if (coll == COLL_ALLGATHER) {
      for (size_t i = 0; i < all; i++) bufs[q][i] = -1;
      if (in_place) memcpy(bufs[q] + (size_t)q * count, in, count * sizeof(int32_t));
    } else if (in_place) {
      memcpy(bufs[q], in, all * sizeof(int32_t));
    }
    sendb[q] = in;
    w->a[q] = (partner_args_t){.coll = coll,
                               .sendbuff = coll == COLL_ALLGATHER ? (in_place ? bufs[q] + (size_t)q * count : in)
                                                                  : (in_place ? bufs[q] : in),
                               .recvbuff = coll == COLL_REDUCESCATTER && in_place ? bufs[q] + (size_t)q * count : bufs[q],
                               .count = count,
                               .type = xcclInt32,
                               .op = op,
                               .nranks = k,
                               .rank = q,
                               .send_fifo = w->send_f[q],
                               .recv_fifo = w->recv_f[q],
                               .send_step = w->send_s[q],
                               .recv_step = w->recv_s[q]};
    free(w->mem[q]);
    w->mem[q] = malloc(host_pat_item_bytes(k) + host_pat_work_bytes(coll, count, xcclInt32, k, cap) + 8);
    it[q] = w->mem[q];
    host_pat_item(it[q], &w->a[q], &env, 0, cap);
  }
  /* Ranks step in turn, but each pass skips some at random, so messages
   * arrive in many orders; a pass that steps every rank and moves nothing
   * means they wait on each other. */
  static unsigned seed = 45;
  int done = 0, ok = 1;
  while (!done) {
    int moved = 0, every = rand_r(&seed) % 4 == 0;
    done = 1;
    for (int q = 0; q < k; q++) {
      if (it[q]->base.finished) continue;
      if (!every && rand_r(&seed) % 2) {
        done = 0;
        continue;
      }
      kern_failure_t fail = {0};
      int r = it[q]->base.ops->step(&it[q]->base, &fail);
      CHECK(r >= 0, "rank %d: a bad message", q);
      if (r < 0) return 0;
      moved |= r > 0;
      done &= it[q]->base.finished;
    }
    if (!done && !moved && every) {
      ok = 0;
      break;
    }
  }
  for (int q = 0; q < k; q++) free(sendb[q]);
  return ok;
}

/* The result of rank q at element i, as the collective defines it. */
static int32_t want(int k, coll_kind_t coll, xcclRedOp_t op, size_t count, int q, size_t i) {
  if (coll == COLL_ALLGATHER) return input((int)(i / count), i % count);
  int64_t v = op == xcclMax ? INT32_MIN : 0;
  for (int p = 0; p < k; p++) {
    int32_t x = input(p, (size_t)q * count + i);
    v = op == xcclMax ? (x > v ? x : v) : v + x;
  }
  return (int32_t)(op == xcclAvg ? v / k : v);
}

static void check_case(int k, coll_kind_t coll, xcclRedOp_t op, size_t count, size_t slot, size_t cap, int in_place) {
  world_t *w = malloc(sizeof(*w));
  CHECK(w != NULL, "memory");
  world_make(w, k, slot);
  int32_t *bufs[MAXK];
  const char *name = coll == COLL_ALLGATHER ? "all-gather" : "reduce-scatter";
  int ok = run(w, coll, op, count, cap, in_place, bufs);
  CHECK(ok, "%s, %d ranks, %zu elements, slot %zu, cap %zu: stopped before the end", name, k, count, slot, cap);
  for (int q = 0; ok && q < k; q++) {
    const int32_t *out = coll == COLL_REDUCESCATTER && in_place ? bufs[q] + (size_t)q * count : bufs[q];
    size_t n = coll == COLL_ALLGATHER ? count * (size_t)k : count, bad = 0;
    for (size_t i = 0; i < n; i++) {
      int32_t x = want(k, coll, op, count, q, i);
      if (out[i] != x && bad++ == 0)
        CHECK(0, "%s op %d, %d ranks, %zu elements, slot %zu, cap %zu%s: rank %d element %zu is %d, want %d", name,
              (int)op, k, count, slot, cap, in_place ? ", in place" : "", q, i, out[i], x);
    }
    /* Bytes: n_s shares to rank + 2^s, (k-1) shares in all, the work's. */
    uint64_t total = 0;
    for (int d = 0, dims = host_pat_dims(k); d < dims; d++) {
      uint64_t sent = atomic_load(&w->send_f[q][(q + (1 << d)) % k]->bytes);
      CHECK(sent == host_pat_blocks(k, d) * count * sizeof(int32_t), "%s, %d ranks: rank %d sent %llu in dimension %d",
            name, k, q, (unsigned long long)sent, d);
      total += sent;
    }
    CHECK(total == (uint64_t)(k - 1) * count * sizeof(int32_t), "%s, %d ranks: rank %d sent %llu", name, k, q,
          (unsigned long long)total);
  }
  for (int q = 0; q < k; q++) free(bufs[q]);
  world_free(w);
  free(w);
}

/* The work's bytes are (k-1) shares, its steps ceil(log2 k) at one piece. */
static void check_work(void) {
  algo_site_t site = {.flat = ALGO_LINK_NET, .link[ALGO_LINK_NET] = {ALGO_ALPHA_S, ALGO_BETA_BPS}};
  for (int k = 2; k <= 9; k++)
    for (int c = 0; c < 2; c++) {
      coll_kind_t coll = c ? COLL_REDUCESCATTER : COLL_ALLGATHER;
      algo_work_t w;
      cost_work(ALGO_PAT, coll, 4096, k, 65536, &site, &w);
      CHECK(w.ok && w.bytes[ALGO_LINK_NET] == (k - 1) * 4096.0, "%d ranks: work bytes %g", k, w.bytes[ALGO_LINK_NET]);
      CHECK(w.steps[ALGO_LINK_NET] == host_pat_dims(k), "%d ranks: %g steps at one piece", k, w.steps[ALGO_LINK_NET]);
    }
}

int main(void) {
  check_offsets();
  check_work();
  static const struct {
    size_t count, slot, cap;
  } shapes[] = {
      {1, 4096, PAT_WORK_BYTES}, {7, 16, PAT_WORK_BYTES}, {1000, 256, PAT_WORK_BYTES}, {1000, 256, 64},
      {777, 64, 4},              {0, 64, PAT_WORK_BYTES},
  };
  for (int k = 1; k <= MAXK; k += k < 10 ? 1 : 11)
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
      for (int in_place = 0; in_place < 2; in_place++) {
        check_case(k, COLL_ALLGATHER, xcclSum, shapes[s].count, shapes[s].slot, shapes[s].cap, in_place);
        check_case(k, COLL_REDUCESCATTER, xcclSum, shapes[s].count, shapes[s].slot, shapes[s].cap, in_place);
      }
  for (int k = 2; k <= 7; k++) {
    check_case(k, COLL_REDUCESCATTER, xcclMax, 333, 128, 32, 0);
    check_case(k, COLL_REDUCESCATTER, xcclAvg, 333, 128, 32, 1);
  }
  return test_finish("pat");
}
