/* algo.c — the algorithm table (algo.h). */
#include "algo.h"

#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "connect.h"
#include "error.h"
#include "log.h"

const algo_desc_t *const algo_table[ALGO_COUNT] = {
#define ALGO_TABLE_ENTRY(E, n) [ALGO_##E] = &algo_##n,
    XCCL_ALGO_LIST(ALGO_TABLE_ENTRY)
#undef ALGO_TABLE_ENTRY
};

void algo_peers_none(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)nranks, (void)rank, (void)site;
  memset(peers_p, 0, sizeof(*peers_p));
}

const char *algo_name(algo_t a) { return (unsigned)a < ALGO_COUNT ? algo_table[a]->name : "?"; }

int algo_serves(algo_t a, coll_kind_t coll) { return (algo_table[a]->colls >> coll) & 1u; }

/* Keeps the peers of v[0..*n) whose connection d[peer] is not ready. */
static void keep_unready(int *v, int *n, const comm_p2p_t *d) {
  int k = 0;
  for (int i = 0; i < *n; i++)
    if (!d[v[i]].ready) v[k++] = v[i];
  *n = k;
}

void algo_peers_missing(const struct xcclComm *comm, algo_t a, const coll_args_t *op, algo_peers_t *peers_p) {
  const algo_desc_t *d = algo_table[a];
  memset(peers_p, 0, sizeof(*peers_p));
  if (!d->op_peers) {
    if (!(comm->algo_connected & (1u << a))) d->peers(comm->nranks, comm->rank, &comm->site, peers_p);
    return;
  }
  if (op == NULL && (comm->algo_connected & (1u << a))) return;
  d->op_peers(op, comm->nranks, comm->rank, &comm->site, peers_p);
  for (int s = 0; s < ALGO_PEER_SETS; s++) {
    algo_peer_set_t *ps = &peers_p->set[s];
    keep_unready(ps->send, &ps->nsend, comm->p2p_send[COMM_P2P_ALGO + s]);
    keep_unready(ps->recv, &ps->nrecv, comm->p2p_recv[COMM_P2P_ALGO + s]);
  }
}

size_t algo_slot(algo_t a, size_t ring_slot, size_t peer_slot) {
  return algo_table[a]->peers == algo_peers_none || peer_slot == 0 ? ring_slot : peer_slot;
}

int algo_peers_count(const algo_peers_t *p) {
  int n = 0;
  for (int s = 0; s < ALGO_PEER_SETS; s++) n += p->set[s].nsend + p->set[s].nrecv;
  return n;
}

xcclResult_t algo_connect(struct xcclComm *comm, algo_t a, const coll_args_t *op) {
  algo_peers_t p;
  algo_peers_missing(comm, a, op, &p);
  /* An operation's connections are not all the algorithm's: only `peers`
   * (op_peers NULL) or op_peers' union (op NULL) sets the bit. */
  int all = !algo_table[a]->op_peers || op == NULL;
  for (int s = 0; s < ALGO_PEER_SETS; s++) {
    const algo_peer_set_t *ps = &p.set[s];
    if (ps->nsend + ps->nrecv == 0) continue;
    xcclResult_t res = comm_connect_p2p(comm, COMM_P2P_ALGO + s, ps->send, ps->nsend, ps->recv, ps->nrecv);
    if (res != xcclSuccess) return res;
  }
  if (all) comm->algo_connected |= 1u << a;
  return xcclSuccess;
}

void algo_peer_fifos(struct xcclComm *comm, int set, slot_fifo_t **fifo, uint64_t **steps) {
  int k = comm->nranks;
  memset(fifo, 0, 2 * (size_t)k * sizeof(fifo[0]));
  memset(steps, 0, 2 * (size_t)k * sizeof(steps[0]));
  for (int p = 0; p < k; p++) {
    comm_p2p_t *s = &comm->p2p_send[COMM_P2P_ALGO + set][p], *r = &comm->p2p_recv[COMM_P2P_ALGO + set][p];
    if (s->ready) fifo[p] = s->fifo, steps[p] = &s->step;
    if (r->ready) fifo[k + p] = r->fifo, steps[k + p] = &r->step;
  }
}

/* algo_partner_args' memory: the arguments, then their fifo tables. */
typedef struct {
  partner_args_t args;
  slot_fifo_t *fifo[]; /* 2k: send, then receive; then 2k uint64_t *: their steps */
} partner_mem_t;

size_t algo_partner_args_bytes(const struct xcclComm *comm) {
  return sizeof(partner_mem_t) + 2 * (size_t)comm->nranks * (sizeof(slot_fifo_t *) + sizeof(uint64_t *));
}

const partner_args_t *algo_partner_args(const coll_args_t *a, struct xcclComm *comm, void *mem) {
  partner_mem_t *m = mem;
  int k = comm->nranks;
  uint64_t **steps = (uint64_t **)&m->fifo[2 * k];
  algo_peer_fifos(comm, 0, m->fifo, steps);
  m->args = (partner_args_t){.coll = a->coll,
                             .sendbuff = a->sendbuff,
                             .recvbuff = a->recvbuff,
                             .count = a->count,
                             .type = a->type,
                             .op = a->op,
                             .nranks = k,
                             .rank = comm->rank,
                             .send_fifo = m->fifo,
                             .recv_fifo = m->fifo + k,
                             .send_step = steps,
                             .recv_step = steps + k};
  return &m->args;
}

partner_args_t *algo_lone_args(const coll_args_t *a, struct xcclComm *comm, algo_t algo, const int *peers, int n,
                               algo_lone_t *lone) {
  if (lone->off || !(comm->algo_connected & (1u << algo))) return NULL;
  int remote = -1;
  for (int i = 0; i < n && remote < 0; i++) {
    const comm_p2p_t *s = &comm->p2p_send[COMM_P2P_ALGO][peers[i]], *r = &comm->p2p_recv[COMM_P2P_ALGO][peers[i]];
    if (!s->ready || !r->ready) return NULL; /* made as a pair: not yet */
    if (!s->fifo->shared || !r->fifo->shared) remote = peers[i];
  }
  if (remote >= 0 || !config_bool(CFG_LONE)) {
    lone->off = 1;
    if (remote >= 0)
      INFO(COLL, "rank %d: %s all-reduces take the group launch: partner rank %d is not in shared memory", comm->rank,
           algo_name(algo), remote);
    return NULL;
  }
  partner_args_t *pa = malloc(algo_partner_args_bytes(comm));
  if (!pa) return NULL;
  algo_partner_args(a, comm, pa); /* the arguments first, then their fifo tables */
  lone->args = pa;
  INFO(COLL,
       "rank %d: a lone %s all-reduce runs without a group launch (partners, all in shared memory: %d; "
       "XCCL_LONE=0 turns this off)",
       comm->rank, algo_name(algo), n);
  return pa;
}

void algo_lone_free(algo_lone_t *lone) {
  free(lone->args);
  lone->args = NULL;
}

xcclResult_t algo_states_make(struct xcclComm *comm) {
  for (int a = 0; a < ALGO_COUNT; a++) {
    size_t bytes = algo_table[a]->state_bytes;
    if (bytes && !(comm->algo_state[a] = calloc(1, bytes)))
      return err_set(xcclSystemError, LOG_INIT, "out of memory for %s's state", algo_name((algo_t)a));
  }
  return xcclSuccess;
}

void algo_states_free(struct xcclComm *comm) {
  for (int a = 0; a < ALGO_COUNT; a++) {
    if (!comm->algo_state[a]) continue;
    if (algo_table[a]->state_free) algo_table[a]->state_free(comm->algo_state[a]);
    free(comm->algo_state[a]);
    comm->algo_state[a] = NULL;
  }
}

void algo_conns_gone(struct xcclComm *comm) {
  comm->algo_connected = 0;
  for (int a = 0; a < ALGO_COUNT; a++)
    if (comm->algo_state[a] && algo_table[a]->state_conns_gone) algo_table[a]->state_conns_gone(comm->algo_state[a]);
}

void algo_peer_set_both(algo_peer_set_t *s, int n) {
  memcpy(s->recv, s->send, (size_t)n * sizeof(int));
  s->nsend = s->nrecv = n;
}

int algo_peer_set_add(algo_peer_set_t *s, int peer) {
  for (int i = 0; i < s->nsend; i++)
    if (s->send[i] == peer) return 1;
  if (s->nsend == ALGO_MAX_PEERS) return 0;
  s->send[s->nsend++] = peer;
  s->recv[s->nrecv++] = peer;
  return 1;
}
