/*
 * sim_boot.c — init's all-gather of the peer info (comm.c: one
 * comm_peer_info_t per rank, bootstrap_allgather) over the modelled
 * network, two ways:
 *   ring:  k-1 steps; in step j a rank sends the block it received in
 *          step j-1 (its own in step 1) to the next rank, and receives one
 *          from the previous (the bootstrap's all-gather before Bruck);
 *   bruck: ceil(log2 k) rounds (bootstrap_allgather.c); in round i, d = 2^i,
 *          a rank sends its first min(d, k-d) blocks to rank r-d, then
 *          waits for as many from rank r+d; a round's bytes above
 *          BOOT_CHUNK go in several messages.
 * Each message is one bootstrap_send: a new connection and the receiver's
 * challenge before the frame, BOOT_HANDSHAKE link latencies, then its bytes
 * and BOOT_FRAME_BYTES of headers and MAC. Between hosts the messages take
 * NIC 0 of each host (the bootstrap's one interface), inside a host the
 * local link (--local-*). Both are folded as sim_ring.c folds the ring: every
 * rank does the same, so only host 0's ranks run, and a message to rank q
 * is delivered to host 0's rank q % G, over host 0's receive side.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "sim.h"
#include "sim_boot.h"

#define BOOT_HANDSHAKE 3 /* connect (a round trip) and the challenge, one-way latencies */
#define BOOT_FRAME_BYTES 64
#define BOOT_CHUNK ((size_t)(64u << 20) - 64) /* bootstrap_allgather.c's AG_CHUNK_DEFAULT */

typedef struct {
  int bruck;
  size_t block;       /* bytes per rank */
  int *got;           /* [index]: ring: blocks received; bruck: rounds finished */
  uint32_t *chunks;   /* [index * 32 + round]: bruck's messages in, per round */
  int rounds;
} boot_state_t;

static int boot_rounds(int k) {
  int n = 0;
  while ((1 << n) < k) n++;
  return n;
}

/* Sends `bytes` of data from host 0's rank i to rank dst (folded). */
static void boot_send(sim_t *s, int i, int dst, int tag, size_t bytes, int nth) {
  int to = dst % s->c.gpus;
  double lat = sim_host(s, i) == sim_host(s, dst) ? s->c.nvl_lat : s->c.nic_lat;
  sim_send_via(s, i, dst, to, to, tag, bytes + BOOT_FRAME_BYTES, 0, (double)(BOOT_HANDSHAKE * (nth + 1)) * lat);
}

static size_t bruck_bytes(const sim_t *s, const boot_state_t *st, int round) {
  int d = 1 << round, k = s->c.nranks, cnt = d < k - d ? d : k - d;
  return (size_t)cnt * st->block;
}

static uint32_t bruck_chunks(size_t bytes) { return bytes ? (uint32_t)((bytes + BOOT_CHUNK - 1) / BOOT_CHUNK) : 1; }

static void bruck_round(sim_t *s, boot_state_t *st, int i) {
  int k = s->c.nranks;
  for (;;) {
    int round = st->got[i];
    if (round == st->rounds) return;
    size_t bytes = bruck_bytes(s, st, round);
    uint32_t n = bruck_chunks(bytes);
    uint32_t *ch = &st->chunks[(size_t)i * 32 + (size_t)round]; /* bit 31: sent; the rest: messages in */
    if (!(*ch & 1u << 31)) {
      for (uint32_t c = 0; c < n; c++) {
        size_t len = bytes - (size_t)c * BOOT_CHUNK < BOOT_CHUNK ? bytes - (size_t)c * BOOT_CHUNK : BOOT_CHUNK;
        boot_send(s, i, (i - (1 << round) % k + k) % k, round, len, (int)c);
      }
    }
    *ch |= 1u << 31;
    if ((*ch & ~(1u << 31)) < n) return;
    st->got[i]++;
    if (st->got[i] == st->rounds) sim_finish(s);
  }
}

static int boot_setup(sim_t *s, int bruck) {
  size_t g = (size_t)s->c.gpus;
  boot_state_t *st = calloc(1, sizeof(*st));
  if (!st) return -1;
  st->bruck = bruck;
  st->block = s->bytes;
  st->rounds = boot_rounds(s->c.nranks);
  st->got = calloc(g, sizeof(int));
  st->chunks = calloc(g * 32, sizeof(uint32_t));
  if (!st->got || !st->chunks) return free(st->got), free(st->chunks), free(st), -1;
  s->state = st;
  s->expect = g;
  return 0;
}
static int ring_setup(sim_t *s) { return boot_setup(s, 0); }
static int bruck_setup(sim_t *s) { return boot_setup(s, 1); }

static void boot_start(sim_t *s) {
  boot_state_t *st = s->state;
  for (int i = 0; i < s->c.gpus; i++) {
    if (s->c.nranks < 2) {
      sim_finish(s);
    } else if (st->bruck) {
      bruck_round(s, st, i);
    } else {
      boot_send(s, i, (i + 1) % s->c.nranks, 1, st->block, 0);
    }
  }
}

static void boot_deliver(sim_t *s, const sim_ev_t *e) {
  boot_state_t *st = s->state;
  int i = e->dst;
  if (st->bruck) {
    st->chunks[(size_t)i * 32 + (size_t)e->tag]++;
    bruck_round(s, st, i);
    return;
  }
  /* ring: step e->tag's block is in; pass it on unless it was the last */
  if (++st->got[i] == s->c.nranks - 1) {
    sim_finish(s);
    return;
  }
  boot_send(s, i, (i + 1) % s->c.nranks, e->tag + 1, st->block, 0);
}

static void boot_teardown(sim_t *s) {
  boot_state_t *st = s->state;
  free(st->got), free(st->chunks), free(st);
  s->state = NULL;
}

static int boot_no_fold(const sim_t *s) {
  (void)s;
  return 1;
}
static double boot_msgs(const sim_t *s) { return (double)s->c.gpus * s->c.nranks; }

static const sim_sched_t boot_ring = {.name = "ring",
                                      .can_fold = boot_no_fold,
                                      .msgs = boot_msgs,
                                      .setup = ring_setup,
                                      .start = boot_start,
                                      .deliver = boot_deliver,
                                      .teardown = boot_teardown};
static const sim_sched_t boot_bruck = {.name = "bruck",
                                       .can_fold = boot_no_fold,
                                       .msgs = boot_msgs,
                                       .setup = bruck_setup,
                                       .start = boot_start,
                                       .deliver = boot_deliver,
                                       .teardown = boot_teardown};

size_t sim_boot_block_bytes(void) { return sizeof(comm_peer_info_t); }

int sim_bootstrap(const sim_cluster_t *c, int json) {
  const sim_sched_t *ways[2] = {&boot_ring, &boot_bruck};
  int k = c->nranks, rc = 0;
  size_t block = sim_boot_block_bytes();
  if (!json)
    printf("# xccl-sim: bootstrap all-gather of the peer info (%zu B per rank) on %d hosts x %d = %d ranks; "
           "a message: %d latencies of handshake, then %d B of frame and its data; NIC %.0f Gb/s %.2f us, "
           "inside a host %.0f Gb/s %.2f us\n"
           "# %-6s %8s %12s %14s %12s\n",
           block, c->hosts, c->gpus, k, BOOT_HANDSHAKE, BOOT_FRAME_BYTES, c->nic_bps * 8 / 1e9, c->nic_lat * 1e6,
           c->nvl_bps * 8 / 1e9, c->nvl_lat * 1e6, "way", "steps", "time_ms", "bytes/rank", "msgs");
  else
    printf("[");
  for (int w = 0; w < 2; w++) {
    sim_t s;
    memset(&s, 0, sizeof(s));
    s.c = *c;
    s.c.window = 0;
    s.bytes = block;
    if (sim_run(&s, ways[w]) != 0) {
      rc = 1;
      continue;
    }
    int steps = w ? boot_rounds(k) : k - 1;
    double sent = (double)(k - 1) * (double)block; /* each rank sends k-1 blocks either way */
    char algo[32];
    snprintf(algo, sizeof(algo), "bootstrap_%s", ways[w]->name);
    if (json)
      sim_json_row(json_pack("{s:s, s:i, s:i, s:I, s:f, s:I, s:I}", "algo", algo, "ranks", k, "steps", steps,
                             "block_bytes", (json_int_t)block, "time_us", s.end * 1e6, "bytes_per_rank",
                             (json_int_t)llround(sent), "msgs", (json_int_t)s.nmsgs),
                   w == 0);
    else
      printf("  %-6s %8d %12.3f %14.0f %12llu\n", ways[w]->name, steps, s.end * 1e3, sent,
             (unsigned long long)s.nmsgs);
  }
  if (json) printf("\n]\n");
  return rc;
}
