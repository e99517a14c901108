/*
 * algo_rd.c — recursive doubling (host_rd.h): all-reduce in log2(k)
 * exchanges with partners, over connections of its own (COMM_P2P_ALGO),
 * one work item.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"

static int log2_floor(int k) {
  int l = 0;
  while ((2 << l) <= k) l++;
  return l;
}

/* For k ranks, B bytes and slots of S bytes: `steps` = log2(p2) (+2 if k
 * is not a power of two) exchanges of the whole buffer, one slot-sized
 * piece after the other: ceil(B/S) x `steps` steps and `steps` B bytes,
 * on the site's flat link. */
static void rd_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                    algo_work_t *work_p) {
  (void)coll;
  double b = (double)bytes, s = (double)slot;
  double pieces = b > 0 ? ceil(b / s) : 1;
  int steps = log2_floor(nranks) + ((nranks & (nranks - 1)) ? 2 : 0);
  int g = algo_levels_g(site);
  if (g && !(g & (g - 1))) {
    /* Partners at distance 1, 2, .. G/2 share the host (G a power of two,
     * hosts in blocks of G): log2 G rounds inside, the rest (and a fold's
     * two) between hosts, where all G ranks send at once over the rails. */
    int local = log2_floor(g), net = steps - local;
    algo_work_levels(work_p, pieces * local, local * b, pieces * net, net * b * g / algo_rails(site), 0);
    return;
  }
  algo_work_flat(work_p, site, pieces * steps, steps * b);
}

/* One operation's scratch: the item, then its arguments (algo_partner_args). */
static size_t rd_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return sizeof(rd_item_t) + algo_partner_args_bytes(comm);
}

static int rd_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  rd_item_t *it = scratch;
  host_rd_item(it, algo_partner_args(a, comm, it + 1), &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &it->base;
  return 1;
}

/* What rd keeps on a communicator (comm->algo_state[ALGO_RD]): its lone
 * item's partner arguments. */
typedef struct {
  algo_lone_t lone;
} rd_state_t;

static void rd_state_free(void *state) { algo_lone_free(&((rd_state_t *)state)->lone); }

/* A lone all-reduce (algo_desc_t.lone): the partner arguments kept in rd's
 * state (algo_lone_args), the item's schedule laid out per call. */
static kern_item_t *rd_lone(const coll_args_t *a, struct xcclComm *comm, void *mem) {
  rd_state_t *st = comm->algo_state[ALGO_RD];
  partner_args_t *pa = st->lone.args;
  if (!pa) {
    int peers[ALGO_MAX_PEERS], n = host_rd_partners(comm->nranks, comm->rank, peers);
    if (!(pa = algo_lone_args(a, comm, ALGO_RD, peers, n, &st->lone))) return NULL;
  }
  algo_lone_set(pa, a);
  _Static_assert(sizeof(rd_item_t) <= ALGO_LONE_BYTES, "rd's item outgrew ALGO_LONE_BYTES");
  host_rd_item(mem, pa, &comm->env, ALGO_LANE_PEERS);
  return &((rd_item_t *)mem)->base;
}

/* Both directions with each partner. */
static void rd_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_both(&peers_p->set[0], host_rd_partners(nranks, rank, peers_p->set[0].send));
}

const algo_desc_t algo_rd = {
    .name = "rd",
    .colls = 1u << COLL_ALLREDUCE,
    .work = rd_work,
    .max_items = 1,
    .scratch_bytes = rd_scratch_bytes,
    .build = rd_build,
    .peers = rd_peers,
    .lone = rd_lone,
    .state_bytes = sizeof(rd_state_t),
    .state_free = rd_state_free,
    .state_conns_gone = rd_state_free, /* the lone item's partner arguments name the fifos */
};
