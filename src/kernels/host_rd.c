/* host_rd.c — recursive-doubling all-reduce as a host work item (host_rd.h). */
#include "host_rd.h"

#include "kern_recv.h"

#include <stddef.h>
#include <string.h>

#include "reduce.h"

static rd_item_t *to_rd(kern_item_t *it) { return (rd_item_t *)((char *)it - offsetof(rd_item_t, base)); }

static int pow2_floor(int k) {
  int p = 1;
  while (p * 2 <= k) p *= 2;
  return p;
}

int host_rd_partners(int nranks, int rank, int *peers) {
  int p2 = pow2_floor(nranks), n = 0;
  if (rank >= p2) {
    peers[n++] = rank - p2;
    return n;
  }
  if (rank < nranks - p2) peers[n++] = rank + p2;
  for (int s = 1; s < p2; s <<= 1) peers[n++] = rank ^ s;
  return n;
}

static void rd_plan(rd_item_t *r) {
  const partner_args_t *a = r->args;
  int k = a->nranks, me = a->rank, p2 = pow2_floor(k), n = 0;
#define ACT(kd, pr) (r->act[n].kind = (kd), r->act[n].peer = (pr), n++)
  ACT(RD_INIT, -1);
  if (me >= p2) {
    ACT(RD_SEND, me - p2);
    ACT(RD_RECV_COPY, me - p2);
  } else {
    if (me < k - p2) ACT(RD_RECV_REDUCE, me + p2);
    for (int s = 1; s < p2; s <<= 1) {
      ACT(RD_SEND, me ^ s);
      ACT(RD_RECV_REDUCE, me ^ s);
    }
    ACT(RD_FINAL, -1);
    if (me < k - p2) ACT(RD_SEND, me + p2);
  }
#undef ACT
  r->nact = n;
}

static void rd_start_piece(rd_item_t *r) {
  const partner_args_t *a = r->args;
  size_t esize = kern_type_size(a->type);
  size_t slot_elems = a->send_fifo[r->act[1].peer]->slot_size / esize;
  r->piece = a->count - r->off < slot_elems ? a->count - r->off : slot_elems;
  r->base.action = 0;
}

static int rd_step(kern_item_t *it, kern_failure_t *fail) {
  rd_item_t *r = to_rd(it);
  const partner_args_t *a = r->args;
  size_t esize = kern_type_size(a->type), bytes = r->piece * esize;
  char *acc = (char *)a->recvbuff + r->off * esize;
  int kind = r->act[it->action].kind, peer = r->act[it->action].peer;
  switch (kind) {
    case RD_INIT: {
      const char *in = (const char *)a->sendbuff + r->off * esize;
      if (in != acc) memcpy(acc, in, bytes);
      break;
    }
    case RD_FINAL:
      if (a->op == xcclAvg) kern_divide(acc, acc, r->piece, a->type, a->nranks);
      break;
    case RD_SEND: {
      slot_fifo_t *f = a->send_fifo[peer];
      uint64_t *step = a->send_step[peer];
      if (!slot_fifo_room(f, *step)) return 0;
      int s = (int)(*step % XCCL_STEPS);
      memcpy(slot_fifo_slot(f, (uint64_t)s), acc, bytes);
      slot_fifo_send(f, (*step)++, bytes, it->env->fault);
      break;
    }
    default: { /* a receive */
      slot_fifo_t *f = a->recv_fifo[peer];
      uint64_t *step = a->recv_step[peer];
      if (!slot_fifo_ready(f, *step)) return 0;
      int s = (int)(*step % XCCL_STEPS);
      if (!kern_recv_check(f, *step, bytes, fail)) return -1;
      if (kind == RD_RECV_COPY)
        memcpy(acc, slot_fifo_slot(f, (uint64_t)s), bytes);
      else if (a->rank < peer) /* lower rank's operand first: same bits on both */
        kern_reduce(acc, acc, slot_fifo_slot(f, (uint64_t)s), r->piece, a->type, a->op);
      else
        kern_reduce(acc, slot_fifo_slot(f, (uint64_t)s), acc, r->piece, a->type, a->op);
      slot_fifo_release(f, (*step)++);
    }
  }
  if (++it->action == r->nact) {
    r->off += r->piece;
    it->loop++;
    if (r->off >= a->count)
      it->finished = 1;
    else
      rd_start_piece(r);
  }
  return 1;
}

static slot_fifo_t *rd_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  rd_item_t *r = to_rd(it);
  if (it->finished) { /* draining: the first send the transport has not taken */
    *is_recv_p = 0;
    for (int i = 0; i < r->nact; i++) {
      int p = r->act[i].peer;
      if (r->act[i].kind != RD_SEND) continue;
      if (atomic_load_explicit(&r->args->send_fifo[p]->head, memory_order_acquire) < *r->args->send_step[p]) {
        it->peer = p;
        *step_p = atomic_load(&r->args->send_fifo[p]->head);
        return r->args->send_fifo[p];
      }
    }
    return NULL;
  }
  int kind = r->act[it->action].kind, peer = r->act[it->action].peer;
  *is_recv_p = kind == RD_RECV_REDUCE || kind == RD_RECV_COPY;
  it->peer = peer;
  if (peer < 0) return NULL;
  *step_p = *is_recv_p ? *r->args->recv_step[peer] : *r->args->send_step[peer];
  return *is_recv_p ? r->args->recv_fifo[peer] : r->args->send_fifo[peer];
}

static int rd_drained(kern_item_t *it) {
  rd_item_t *r = to_rd(it);
  for (int i = 0; i < r->nact; i++) {
    if (r->act[i].kind != RD_SEND) continue;
    int p = r->act[i].peer;
    if (!slot_fifo_taken(r->args->send_fifo[p], *r->args->send_step[p])) return 0;
  }
  return 1;
}

static const kern_item_ops_t rd_ops = {.step = rd_step, .waiting = rd_waiting, .drained = rd_drained};

void host_rd_item(rd_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane) {
  memset(it, 0, offsetof(rd_item_t, act)); /* act[] is written up to nact by rd_plan: a lone call's 600 bytes */
  it->args = a;
  kern_item_init(&it->base, &rd_ops, env, lane);
  rd_plan(it);
  it->base.finished = a->count == 0;
  if (!it->base.finished) rd_start_piece(it);
}
