/*
 * test_ring_plan.c — the ring schedule as the CUDA kernel walks it
 * (ring_schedule.h's iterator), checked on the host against the host twin
 * (host_ring.c). Needs no GPU.
 *
 * k ranks live in this process, one ring of in-memory slot fifos per channel,
 * and the host engine drives them all from one thread. A rank is either the
 * host twin (host_ring_items) or a "device twin": an engine item that takes
 * exactly the decisions dev_coll.cu takes — ring_iter_action for the flags,
 * block, offsets and message size, ring_iter_next to move on, one fused
 * reduce-(divide)-store per action — with host memcpy and kern_reduce where
 * the kernel has its thread-block loops. Three runs per case (every rank
 * host, every rank device twin, the two alternating) must leave the same
 * bytes in every receive buffer, and each connection's step counters where
 * ring_iter_count_steps says the kernel leaves them, since the device path
 * advances them by that count before the kernel runs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host_engine.h"
#include "host_ring.h"
#include "reduce.h"
#include "ring_schedule.h"
#include "slots.h"
#include "test_util.h"
#include "xccl.h"

#define MAX_K 5
#define MAX_CH 3

static const char *const coll_names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce"};

/* ---- the device twin: dev_coll.cu's kcu_run_ring, one action per step ---- */

typedef struct {
  kern_item_t base;
  const ring_args_t *a;
  ring_iter_t it;
  unsigned char tmp[1 << 16]; /* the fused result of one block */
} twin_item_t;

static twin_item_t *to_twin(kern_item_t *it) { return (twin_item_t *)it; }

static int twin_step(kern_item_t *b, kern_failure_t *fail) {
  twin_item_t *t = to_twin(b);
  const ring_args_t *a = t->a;
  ring_channel_t *ch = &a->channels[b->channel];
  size_t esize = xcclTypeSize(a->type), in_off, out_off, n;
  int flags = ring_iter_action(&t->it, ch->ring, &in_off, &out_off, &n);
  size_t bytes = n * esize;
  if ((flags & RING_RECV) && !slot_fifo_ready(ch->recv, *ch->recv_step)) return 0;
  if ((flags & RING_SEND) && !slot_fifo_room(ch->send, *ch->send_step)) return 0;
  if ((flags & RING_RECV) && slot_fifo_size(ch->recv, *ch->recv_step) != bytes) {
    fail->got_bytes = slot_fifo_size(ch->recv, *ch->recv_step);
    fail->want_bytes = bytes;
    return -1;
  }
  const char *in = (flags & RING_INPUT) ? (const char *)a->sendbuff + in_off * esize : NULL;
  char *out = (flags & RING_OUTPUT) ? (char *)a->recvbuff + out_off * esize : NULL;
  char *snd = (flags & RING_SEND) ? slot_fifo_slot(ch->send, *ch->send_step) : NULL;
  const char *rcv = (flags & RING_RECV) ? slot_fifo_slot(ch->recv, *ch->recv_step) : NULL;
  if (flags & RING_REDUCE) { /* r = recv op in, divided at the final step of avg, into out and the send slot */
    CHECK(bytes <= sizeof(t->tmp), "block of %zu bytes exceeds the twin's buffer", bytes);
    kern_reduce(t->tmp, rcv, in, n, a->type, a->op);
    if ((flags & RING_FINAL) && a->op == xcclAvg) kern_divide(t->tmp, t->tmp, n, a->type, a->nranks);
    if (out) memcpy(out, t->tmp, bytes);
    if (snd) memcpy(snd, t->tmp, bytes);
  } else {
    const char *src = rcv ? rcv : in;
    if (out && out != src) memcpy(out, src, bytes);
    if (snd) memcpy(snd, src, bytes);
  }
  if (flags & RING_SEND) slot_fifo_publish(ch->send, (*ch->send_step)++, bytes);
  if (flags & RING_RECV) slot_fifo_release(ch->recv, (*ch->recv_step)++);
  b->action = t->it.action;
  b->loop = t->it.loop;
  ring_iter_next(&t->it);
  b->finished = t->it.done;
  return 1;
}

static slot_fifo_t *twin_waiting(kern_item_t *b, uint64_t *step_p, int *is_recv_p) {
  twin_item_t *t = to_twin(b);
  ring_channel_t *ch = &t->a->channels[b->channel];
  size_t i, o, n;
  int flags = ring_iter_action(&t->it, ch->ring, &i, &o, &n);
  *is_recv_p = (flags & RING_RECV) && !slot_fifo_ready(ch->recv, *ch->recv_step);
  *step_p = *is_recv_p ? *ch->recv_step : *ch->send_step;
  return *is_recv_p ? ch->recv : ch->send;
}

static const kern_item_ops_t twin_ops = {.step = twin_step, .waiting = twin_waiting};

static void twin_items(const ring_args_t *a, const kern_env_t *env, int lane0, twin_item_t *items) {
  size_t esize = xcclTypeSize(a->type);
  for (int c = 0; c < a->nchannels; c++) {
    twin_item_t *t = &items[c];
    memset(&t->base, 0, sizeof(t->base));
    t->a = a;
    t->base.ops = &twin_ops;
    t->base.env = env;
    t->base.lane = lane0 + c;
    t->base.peer = -1;
    t->base.channel = c;
    t->base.sends = a->channels[c].send;
    t->base.send_step = a->channels[c].send_step;
    ring_iter_init(&t->it, a->coll, a->nranks, a->channels[c].position, a->channels[c].root, a->count, esize,
                   a->channels[c].send->slot_size, a->nchannels, c);
    t->base.finished = t->it.done;
  }
}

/* ---- one case, three ways ---------------------------------------------------- */

typedef struct {
  coll_kind_t coll;
  int k, nch, root; /* root: a ring position */
  size_t count, slot_size;
  xcclDataType_t type;
  xcclRedOp_t op;
  int permuted; /* ring positions map to ranks in another order */
} plan_case_t;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

/* Runs the case with rank positions whose bit in `twins` is set as device
 * twins; leaves each position's receive buffer in out[p] (malloc'ed). */
static void run_case(const plan_case_t *pc, unsigned twins, unsigned char *out[MAX_K], size_t *out_bytes) {
  int k = pc->k, nch = pc->nch;
  size_t es = xcclTypeSize(pc->type), count = pc->count;
  int ring_map[MAX_K];
  for (int p = 0; p < k; p++) ring_map[p] = pc->permuted ? (p * 2 + 1) % k : p;
  if (pc->permuted && k % 2 == 0)
    for (int p = 0; p < k; p++) ring_map[p] = k - 1 - p; /* a permutation for even k too */
  size_t send_n = count, recv_n = count;
  if (pc->coll == COLL_ALLGATHER) recv_n = count * (size_t)k;
  if (pc->coll == COLL_REDUCESCATTER) send_n = count * (size_t)k;
  slot_fifo_t *fifo[MAX_K][MAX_CH]; /* from position p to p + 1 */
  uint64_t send_step[MAX_K][MAX_CH], recv_step[MAX_K][MAX_CH];
  ring_channel_t chans[MAX_K][MAX_CH];
  ring_args_t args[MAX_K];
  unsigned char *sendbuf[MAX_K];
  static ring_item_t hitems[MAX_K][MAX_CH];
  static twin_item_t titems[MAX_K][MAX_CH];
  kern_item_t *items[MAX_K * MAX_CH];
  int nitems = 0;
  slot_bell_t bell = {0};
  _Atomic int abort_flag = 0;
  kern_env_t env = {.timeout_s = 20, .abort_flag = &abort_flag, .bell = &bell};
  for (int p = 0; p < k; p++)
    for (int c = 0; c < nch; c++) {
      fifo[p][c] = slot_fifo_create(pc->slot_size);
      send_step[p][c] = recv_step[p][c] = 0;
    }
  for (int p = 0; p < k; p++) {
    int rank = ring_map[p];
    for (int c = 0; c < nch; c++)
      chans[p][c] = (ring_channel_t){fifo[p][c],
                                     fifo[(p + k - 1) % k][c],
                                     &send_step[p][c],
                                     &recv_step[p][c],
                                     .position = p,
                                     .root = pc->root,
                                     .ring = pc->permuted ? ring_map : NULL};
    sendbuf[p] = malloc(send_n * es + 1);
    out[p] = calloc(recv_n * es + 1, 1);
    for (size_t i = 0; i < send_n * es; i++) sendbuf[p][i] = (unsigned char)mix((uint64_t)rank * 1000003u + i);
    int has_send = pc->coll != COLL_BROADCAST || p == pc->root;
    int has_recv = pc->coll != COLL_REDUCE || p == pc->root;
    args[p] = (ring_args_t){.coll = pc->coll,
                            .sendbuff = has_send ? sendbuf[p] : NULL,
                            .recvbuff = has_recv ? out[p] : NULL,
                            .count = count,
                            .type = pc->type,
                            .op = pc->op,
                            .nranks = k,
                            .nchannels = nch,
                            .channels = chans[p]};
    if (twins & (1u << p)) {
      twin_items(&args[p], &env, p * 64, titems[p]);
      for (int c = 0; c < nch; c++) items[nitems++] = &titems[p][c].base;
    } else {
      host_ring_items(&args[p], &env, p * 64, hitems[p]);
      for (int c = 0; c < nch; c++) items[nitems++] = &hitems[p][c].base;
    }
  }
  kern_failure_t fail;
  xcclResult_t r = kern_run(items, nitems, &fail);
  CHECK(r == xcclSuccess,
        "%s k=%d nch=%d count=%zu %s twins=%#x: kern_run failed (%d, kind %d, item %d, got %zu want %zu)",
        coll_names[pc->coll], k, nch, count, kern_type_name(pc->type), twins, (int)r, (int)fail.kind, fail.item,
        fail.got_bytes, fail.want_bytes);
  /* The counters end where the device path moves them before it launches. */
  for (int p = 0; p < k; p++)
    for (int c = 0; c < nch; c++) {
      ring_iter_t it;
      uint64_t sends, recvs;
      ring_iter_init(&it, pc->coll, k, p, pc->root, count, es, pc->slot_size, nch, c);
      ring_iter_count_steps(&it, &sends, &recvs);
      CHECK(send_step[p][c] == sends && recv_step[p][c] == recvs,
            "%s k=%d nch=%d count=%zu slot %zu, position %d channel %d: steps sent %llu received %llu, counted "
            "%llu and %llu",
            coll_names[pc->coll], k, nch, count, pc->slot_size, p, c, (unsigned long long)send_step[p][c],
            (unsigned long long)recv_step[p][c], (unsigned long long)sends, (unsigned long long)recvs);
    }
  for (int p = 0; p < k; p++) {
    free(sendbuf[p]);
    for (int c = 0; c < nch; c++) slot_fifo_destroy(fifo[p][c]);
  }
  *out_bytes = recv_n * es;
}

static void check_case(const plan_case_t *pc) {
  unsigned char *ref[MAX_K], *got[MAX_K];
  size_t bytes = 0, b2 = 0;
  unsigned all = (1u << pc->k) - 1, alternate = 0x15u & all;
  run_case(pc, 0, ref, &bytes);
  const unsigned modes[2] = {all, alternate};
  for (int m = 0; m < 2; m++) {
    run_case(pc, modes[m], got, &b2);
    for (int p = 0; p < pc->k; p++) {
      CHECK(memcmp(ref[p], got[p], bytes) == 0,
            "%s k=%d nch=%d count=%zu slot %zu %s %s root %d%s, twins %#x: position %d's result differs from the host "
            "twin's",
            coll_names[pc->coll], pc->k, pc->nch, pc->count, pc->slot_size, kern_type_name(pc->type),
            kern_op_name(pc->op), pc->root, pc->permuted ? " permuted" : "", modes[m], p);
      free(got[p]);
    }
  }
  for (int p = 0; p < pc->k; p++) free(ref[p]);
}

/* The channels' ranges cover [0, count) one after the other. */
static void check_channel_ranges(void) {
  const size_t counts[] = {0, 1, 2, 15, 16, 17, 63, 64, 65, 1000, 4097, 1 << 20};
  const size_t sizes[] = {1, 2, 4, 8};
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
    for (size_t s = 0; s < 4; s++)
      for (int nch = 1; nch <= 5; nch++) {
        size_t end = 0;
        for (int c = 0; c < nch; c++) {
          size_t off, len;
          ring_sched_channel_range(counts[i], sizes[s], nch, c, &off, &len);
          CHECK(off == end, "count %zu esize %zu nch %d c %d: starts at %zu, not %zu", counts[i], sizes[s], nch, c, off,
                end);
          end = off + len;
        }
        CHECK(end == counts[i], "count %zu esize %zu nch %d: channels end at %zu", counts[i], sizes[s], nch, end);
      }
  CHECK(ring_nchannels_for(0, 4) == 1 && ring_nchannels_for(RING_BYTES_PER_CHANNEL * 3, 2) == 2 &&
            ring_nchannels_for(RING_BYTES_PER_CHANNEL * 3, 8) == 3,
        "ring_nchannels_for");
  CHECK(p2p_nsteps(0, 64) == 0 && p2p_nsteps(1, 64) == 1 && p2p_nsteps(64, 64) == 1 && p2p_nsteps(65, 64) == 2 &&
            p2p_step_bytes(65, 64, 1) == 1 && p2p_step_bytes(128, 64, 1) == 64,
        "p2p_nsteps / p2p_step_bytes");
}

int main(void) {
  check_channel_ranges();
  const xcclDataType_t types[] = {xcclInt8, xcclFloat16, xcclFloat32, xcclFloat64, xcclFloat8e4m3, xcclUint64};
  const xcclRedOp_t ops[] = {xcclSum, xcclAvg, xcclMax, xcclProd, xcclMin, xcclAvg};
  const size_t counts[] = {1, 7, 64, 1000, 5003};
  const size_t slots[] = {64, 256, 4096};
  int ncases = 0;
  for (int coll = 0; coll <= COLL_REDUCE; coll++) /* the ring's (all-to-all has none) */
    for (int k = 2; k <= MAX_K; k++)
      for (int nch = 1; nch <= MAX_CH; nch++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
          /* Type, op, slot size, root and ring order vary with the case, so
           * every one of them meets every collective without a full product. */
          size_t v = (size_t)coll * 7 + (size_t)k * 3 + (size_t)nch + ci * 5;
          plan_case_t pc = {.coll = (coll_kind_t)coll,
                            .k = k,
                            .nch = nch,
                            .root = (int)(v % (size_t)k),
                            .count = counts[ci],
                            .slot_size = slots[v % 3],
                            .type = types[v % 6],
                            .op = ops[(v / 6) % 6],
                            .permuted = (int)(v % 2)};
          check_case(&pc);
          ncases++;
        }
  printf("test_ring_plan: %d cases, each as host twin, device twin and both alternating\n", ncases);
  return test_finish("test_ring_plan");
}
