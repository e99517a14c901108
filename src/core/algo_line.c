/*
 * algo_line.c — the all-reduce of a few bytes between the ranks of one host
 * through the cache lines each pair shares (host_line.h): one exchange,
 * whatever the number of ranks, over the algorithms' own connections
 * (COMM_P2P_ALGO, both ways with every peer), whose fifos hold the lines.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"
#include "host_line.h"

/* One exchange in which a rank writes k - 1 lines and reads k - 1, priced
 * in steps of the link: LINE_STEP_FRAC for the first peer (one shared line
 * against the slots' data, tail and head lines: host_line.h's figures),
 * LINE_PEER_FRAC for each further peer, whose lines a rank writes and
 * reads one after the other. Measured here (2-core VM, 8 B, xccl-perf
 * alternating with --algo rd): see the note of issue 29. */
#define LINE_STEP_FRAC 0.75
#define LINE_PEER_FRAC 0.25

/* The steps above, and the k - 1 inputs each rank reads, on the site's flat
 * link; only where the site allows it, up to .max_bytes. */
static void line_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                      algo_work_t *work_p) {
  (void)coll, (void)slot;
  if (!site->line || bytes > LINE_MAX_BYTES || nranks > LINE_MAX_RANKS) return;
  algo_work_flat(work_p, site, LINE_STEP_FRAC + LINE_PEER_FRAC * (nranks - 2), (nranks - 1) * (double)bytes);
}

/* What line keeps on a communicator (comm->algo_state[ALGO_LINE]): its
 * lone item's partner arguments, and the number of the last line all-reduce
 * (each rank counts alike). */
typedef struct {
  algo_lone_t lone;
  uint64_t seq;
} line_state_t;

static void line_state_free(void *state) { algo_lone_free(&((line_state_t *)state)->lone); }

static size_t line_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return sizeof(line_item_t) + algo_partner_args_bytes(comm);
}

static int line_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  line_item_t *it = scratch;
  line_state_t *st = comm->algo_state[ALGO_LINE];
  host_line_item(it, algo_partner_args(a, comm, it + 1), ++st->seq, &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &it->base;
  return 1;
}

/* Both directions with every other rank. */
static void line_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_t *s = &peers_p->set[0];
  int n = 0;
  for (int p = 0; p < nranks && n < ALGO_MAX_PEERS; p++)
    if (p != rank) s->send[n++] = p;
  algo_peer_set_both(s, n);
}

/* A lone all-reduce (algo_desc_t.lone): the partner arguments kept in
 * line's state (algo_lone_args, every other rank a partner). */
static kern_item_t *line_lone(const coll_args_t *a, struct xcclComm *comm, void *mem) {
  line_state_t *st = comm->algo_state[ALGO_LINE];
  partner_args_t *pa = st->lone.args;
  if (!pa) {
    algo_peers_t peers = {0};
    line_peers(comm->nranks, comm->rank, &comm->site, &peers);
    const algo_peer_set_t *s = &peers.set[0];
    if (!(pa = algo_lone_args(a, comm, ALGO_LINE, s->send, s->nsend, &st->lone))) return NULL;
  }
  algo_lone_set(pa, a);
  _Static_assert(sizeof(line_item_t) <= ALGO_LONE_BYTES, "line's item outgrew ALGO_LONE_BYTES");
  host_line_item(mem, pa, ++st->seq, &comm->env, ALGO_LANE_PEERS);
  return &((line_item_t *)mem)->base;
}

const algo_desc_t algo_line = {
    .name = "line",
    .colls = 1u << COLL_ALLREDUCE,
    .work = line_work,
    .max_items = 1,
    .scratch_bytes = line_scratch_bytes,
    .build = line_build,
    .peers = line_peers,
    .lone = line_lone,
    .max_bytes = LINE_MAX_BYTES,
    .state_bytes = sizeof(line_state_t),
    .state_free = line_state_free,
    .state_conns_gone = line_state_free, /* the lone item's partner arguments name the fifos */
};
