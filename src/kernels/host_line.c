/* host_line.c — the all-reduce of a few bytes through shared cache lines as a host work item (host_line.h). */
#include "host_line.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kern_recv.h"
#include "reduce.h"

static line_item_t *to_line(kern_item_t *it) { return (line_item_t *)((char *)it - offsetof(line_item_t, base)); }

/* memcpy of at most LINE_MAX_BYTES, the commonest sizes as moves of their
 * own instead of a call into libc (2% of an 8-byte all-reduce's profile). */
static inline void line_copy(void *d, const void *s, size_t n) {
  switch (n) {
    case 4:
      memcpy(d, s, 4);
      break;
    case 8:
      memcpy(d, s, 8);
      break;
    default:
      memcpy(d, s, n);
  }
}

/* Rank q's input: this rank's own buffer, q's half of the line they share,
 * or q's message in the slots (released once the reduction has read it). */
static const void *line_input(const line_item_t *l, int q) {
  const partner_args_t *a = l->args;
  if (q == a->rank) return a->sendbuff;
  if (!host_line_shared(a, q)) return slot_fifo_slot(a->recv_fifo[q], *a->recv_step[q]);
  int side;
  const slot_line_t *ln = host_line_of(a, q, &side);
  return ln->side[!side].data[l->seq & 1];
}

/* This rank's input to every peer, as far as the slots have room: into its
 * half of each line (XCCL_FAULT's rules applied as to a send on the fifo to
 * that peer), or as a message. 1: all sent. */
static int line_send(line_item_t *l, const kern_env_t *env, size_t bytes) {
  const partner_args_t *a = l->args;
  if (l->next_send >= a->nranks) return 1; /* the polls that follow: nothing to look up */
  int faults = fault_enabled();
  for (; l->next_send < a->nranks; l->next_send++) {
    int p = l->next_send, side;
    if (p == a->rank) continue;
    if (!host_line_shared(a, p)) {
      slot_fifo_t *f = a->send_fifo[p];
      uint64_t *step = a->send_step[p];
      if (!slot_fifo_room(f, *step)) return 0;
      memcpy(slot_fifo_slot(f, *step), a->sendbuff, bytes);
      slot_fifo_send(f, (*step)++, bytes, env->fault);
      continue;
    }
    slot_line_t *ln = host_line_of(a, p, &side);
    unsigned char *d = ln->side[side].data[l->seq & 1];
    line_copy(d, a->sendbuff, bytes);
    if (faults && !slot_fifo_fault_send(a->send_fifo[p], env->fault, d, bytes)) continue;
    slot_fifo_count(a->send_fifo[p], bytes); /* the peer counters count what a line carries too */
    slot_line_publish(host_line_fifo(a, p), &ln->side[side].seq, l->seq);
  }
  return 1;
}

/* Has peer p's input come? 1: yes; 0: not yet; -1: a bad message (fail). */
static int line_arrived(const line_item_t *l, int p, size_t bytes, kern_failure_t *fail) {
  const partner_args_t *a = l->args;
  if (!host_line_shared(a, p)) return kern_fifo_gate(a->recv_fifo[p], *a->recv_step[p], 1, bytes, p, fail);
  int side;
  slot_line_t *ln = host_line_of(a, p, &side);
  return atomic_load_explicit(&ln->side[!side].seq, memory_order_acquire) >= l->seq;
}

static int line_step(kern_item_t *it, kern_failure_t *fail) {
  line_item_t *l = to_line(it);
  const partner_args_t *a = l->args;
  size_t esize = kern_type_size(a->type), bytes = a->count * esize;
  int from_send = l->next_send, from = l->next;
  if (!line_send(l, it->env, bytes)) return l->next_send != from_send;
  it->action = 1;
  for (; l->next < a->nranks; l->next++) {
    if (l->next == a->rank) continue;
    int rc = line_arrived(l, l->next, bytes, fail);
    if (rc < 0) return -1;
    if (rc == 0) return l->next != from || l->next_send != from_send;
  }
  /* Every input is here: reduce them in rank order, into a copy first (the
   * output may be this rank's input). */
  _Alignas(16) unsigned char acc[LINE_MAX_BYTES], in[LINE_MAX_BYTES];
  line_copy(acc, line_input(l, 0), bytes);
  for (int q = 1; q < a->nranks; q++) {
    const void *x = line_input(l, q);
    if ((uintptr_t)x & (esize - 1)) line_copy(in, x, bytes), x = in; /* data[1] of a half is 4-byte aligned */
    kern_reduce(acc, acc, x, a->count, a->type, a->op);
  }
  if (a->op == xcclAvg) kern_divide(acc, acc, a->count, a->type, a->nranks);
  line_copy(a->recvbuff, acc, bytes);
  for (int p = 0; p < a->nranks; p++)
    if (p != a->rank && !host_line_shared(a, p)) slot_fifo_release(a->recv_fifo[p], (*a->recv_step[p])++);
  it->action = 2;
  it->finished = 1;
  return 1;
}

/* Waiting for room to send to a peer through the slots, or on the lowest
 * peer whose input has not come: its fifo to this rank, whose error flag
 * and process the engine checks (for a line, the step is that fifo's next,
 * which no message fills while the peer is in this operation). */
/* The lowest peer a message to which the transport has not taken yet
 * (a pair on the slots, over a network); -1: none. */
static int line_untaken(const partner_args_t *a) {
  for (int p = 0; p < a->nranks; p++)
    if (p != a->rank && !slot_fifo_taken(a->send_fifo[p], *a->send_step[p])) return p;
  return -1;
}

static slot_fifo_t *line_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  line_item_t *l = to_line(it);
  const partner_args_t *a = l->args;
  if (it->finished) { /* draining */
    int p = line_untaken(a);
    *is_recv_p = 0;
    if (p < 0) return NULL;
    it->peer = p;
    *step_p = atomic_load(&a->send_fifo[p]->head);
    return a->send_fifo[p];
  }
  int p = l->next_send < a->nranks ? l->next_send : l->next;
  *is_recv_p = l->next_send >= a->nranks;
  if (p >= a->nranks || p == a->rank) return NULL;
  it->peer = p;
  *step_p = *is_recv_p ? *a->recv_step[p] : *a->send_step[p];
  return *is_recv_p ? a->recv_fifo[p] : a->send_fifo[p];
}

static int line_drained(kern_item_t *it) { return line_untaken(to_line(it)->args) < 0; }

/* Asleep on the half of the line that the lowest peer not seen yet writes;
 * 0 where the wait is on a fifo's counters, which the engine sleeps on. */
static int line_sleep(kern_item_t *it, int timeout_us) {
  line_item_t *l = to_line(it);
  const partner_args_t *a = l->args;
  int p = l->next, side;
  if (l->next_send < a->nranks || p >= a->nranks || p == a->rank || !host_line_shared(a, p)) return 0;
  slot_line_t *ln = host_line_of(a, p, &side);
  uint64_t seen = atomic_load_explicit(&ln->side[!side].seq, memory_order_acquire);
  if (seen < l->seq) slot_line_wait(host_line_fifo(a, p), &ln->side[!side].seq, seen, timeout_us);
  return 1;
}

static const kern_item_ops_t line_ops = {
    .step = line_step, .waiting = line_waiting, .drained = line_drained, .sleep = line_sleep};

void host_line_item(line_item_t *it, const partner_args_t *a, uint64_t seq, const kern_env_t *env, kern_lane_t lane) {
  *it = (line_item_t){.args = a, .seq = seq};
  kern_item_init(&it->base, &line_ops, env, lane);
  it->base.finished = a->count == 0;
}
