/*
 * algo_rd.c — recursive doubling (host_rd.h): all-reduce in log2(k)
 * exchanges with partners, over connections of its own (COMM_P2P_ALGO),
 * one work item.
 */
#include <math.h>
#include <string.h>

#include "algo.h"
#include "comm.h"

static int log2_floor(int k) {
  int l = 0;
  while ((2 << l) <= k) l++;
  return l;
}

/* For k ranks, B bytes and slots of S bytes: `steps` = log2(p2) (+2 if k
 * is not a power of two) exchanges of the whole buffer, one slot-sized
 * piece after the other: ceil(B/S) steps ALPHA + steps B / BETA. */
static double rd_cost(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site) {
  (void)coll;
  double b = (double)bytes, s = (double)(slot ? slot : 1);
  double pieces = b > 0 ? ceil(b / s) : 1;
  int steps = log2_floor(nranks) + ((nranks & (nranks - 1)) ? 2 : 0);
  return pieces * steps * site->alpha_s + steps * b / site->beta_bps;
}

/* One operation's scratch: per peer, the connection to send to it and to
 * receive from it (NULL where none) and their step counters. */
typedef struct {
  rd_args_t args;
  rd_item_t item;
  slot_fifo_t *fifo[]; /* 2 * nranks: send, then receive; then 2 * nranks uint64_t *: their steps */
} rd_launch_t;

static size_t rd_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  return sizeof(rd_launch_t) + 2 * (size_t)comm->nranks * (sizeof(slot_fifo_t *) + sizeof(uint64_t *));
}

static int rd_build(const coll_args_t *a, struct xcclComm *comm, int lane0, void *scratch, kern_item_t **items) {
  rd_launch_t *l = scratch;
  int k = comm->nranks;
  uint64_t **steps = (uint64_t **)&l->fifo[2 * k];
  algo_peer_fifos(comm, 0, l->fifo, steps);
  rd_args_t *ra = &l->args;
  *ra = (rd_args_t){.sendbuff = a->sendbuff, .recvbuff = a->recvbuff, .count = a->count, .type = a->type,
                    .op = a->op, .nranks = k, .rank = comm->rank, .send_fifo = l->fifo, .recv_fifo = l->fifo + k,
                    .send_step = steps, .recv_step = steps + k};
  host_rd_item(&l->item, ra, &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &l->item.base;
  return 1;
}

/* Both directions with each partner. */
static void rd_peers(int nranks, int rank, algo_peers_t *peers_p) {
  algo_peer_set_t *s = &peers_p->set[0];
  int n = host_rd_partners(nranks, rank, s->send);
  memcpy(s->recv, s->send, (size_t)n * sizeof(int));
  s->nsend = s->nrecv = n;
}

const algo_desc_t algo_rd = {
    .name = "rd",
    .colls = 1u << COLL_ALLREDUCE,
    .cost = rd_cost,
    .max_items = 1,
    .scratch_bytes = rd_scratch_bytes,
    .build = rd_build,
    .peers = rd_peers,
};
