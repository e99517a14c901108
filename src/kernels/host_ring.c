/*
 * host_ring.c — the host twin of the ring collective kernels: all-reduce,
 * all-gather, reduce-scatter, and the broadcast and reduce chains. The
 * schedule (which action, which block) is ring_schedule.h's; this file maps
 * blocks to memory and moves the bytes.
 *
 * Each channel is a small state machine (loop position, action index) so
 * that one thread can drive all channels at once: an action runs as soon as
 * its receive slot is filled and its send slot is free, otherwise the thread
 * moves on to the next channel. Pipelining comes from the 8 slots of each
 * fifo: a rank may run up to 8 sends ahead of its successor.
 *
 * Which elements a channel, loop and block cover is ring_schedule.h's
 * ring_iter_t, the same code the CUDA kernel runs, so the host tests walk
 * the device's geometry.
 */
#include <stddef.h>
#include <string.h>

#include "host_ring.h"
#include "kern_recv.h"
#include "reduce.h"
#include "ring_schedule.h"

static ring_item_t *to_ring_item(kern_item_t *it) { return (ring_item_t *)((char *)it - offsetof(ring_item_t, base)); }

/* Runs the channel's next action if its slots are ready. */
static int ring_step(kern_item_t *it, kern_failure_t *fail) {
  ring_item_t *r = to_ring_item(it);
  const ring_args_t *a = r->args;
  ring_channel_t *ch = &a->channels[it->channel];
  int k = a->nranks;
  size_t esize = xcclTypeSize(a->type), in_off, out_off, n;
  int flags = ring_iter_action(&r->iter, ch->ring, &in_off, &out_off, &n);
  if ((flags & RING_RECV) && !slot_fifo_ready(ch->recv, *ch->recv_step)) return 0;
  if ((flags & RING_SEND) && !slot_fifo_room(ch->send, *ch->send_step)) return 0;

  size_t bytes = n * esize;
  const char *in = (flags & RING_INPUT) ? (const char *)a->sendbuff + in_off * esize : NULL;
  char *out = (flags & RING_OUTPUT) ? (char *)a->recvbuff + out_off * esize : NULL;
  char *send_slot = (flags & RING_SEND) ? slot_fifo_slot(ch->send, *ch->send_step) : NULL;
  const char *recv_slot = NULL;
  if (flags & RING_RECV) {
    int rs = (int)(*ch->recv_step % XCCL_STEPS);
    recv_slot = slot_fifo_slot(ch->recv, (uint64_t)rs);
    if (!kern_recv_check(ch->recv, *ch->recv_step, bytes, fail)) return -1;
  }

  if (flags & RING_REDUCE) {
    char *dst = out ? out : send_slot; /* reduce once, into where it goes first */
    kern_reduce(dst, recv_slot, in, n, a->type, a->op);
    if ((flags & RING_FINAL) && a->op == xcclAvg) kern_divide(dst, dst, n, a->type, k);
    if (out && send_slot) memcpy(send_slot, out, bytes);
  } else {
    const char *src = recv_slot ? recv_slot : in;
    if (out && out != src) memcpy(out, src, bytes); /* equal when in place */
    if (send_slot) memcpy(send_slot, src, bytes);
  }

  if (flags & RING_SEND) slot_fifo_send(ch->send, (*ch->send_step)++, bytes, it->env->fault);
  if (flags & RING_RECV) slot_fifo_release(ch->recv, (*ch->recv_step)++);

  ring_iter_next(&r->iter);
  it->action = r->iter.action;
  it->loop = r->iter.loop;
  it->finished = r->iter.done;
  return 1;
}

static slot_fifo_t *ring_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  ring_item_t *r = to_ring_item(it);
  const ring_args_t *a = r->args;
  ring_channel_t *ch = &a->channels[it->channel];
  int block;
  int flags = ring_action(a->coll, a->nranks, ch->position, ch->root, it->action, &block);
  *is_recv_p = (flags & RING_RECV) && !slot_fifo_ready(ch->recv, *ch->recv_step);
  *step_p = *is_recv_p ? *ch->recv_step : *ch->send_step;
  return *is_recv_p ? ch->recv : ch->send;
}

static const kern_item_ops_t ring_ops = {.step = ring_step, .waiting = ring_waiting};

void host_ring_items(const ring_args_t *a, const kern_env_t *env, kern_lane_t first_lane, ring_item_t *items) {
  size_t esize = xcclTypeSize(a->type);
  for (int c = 0; c < a->nchannels; c++) {
    ring_item_t *r = &items[c];
    memset(r, 0, sizeof(*r));
    r->args = a;
    kern_item_init(&r->base, &ring_ops, env, first_lane + c);
    r->base.channel = c;
    r->base.sends = a->channels[c].send;
    r->base.send_step = a->channels[c].send_step;
    ring_iter_init(&r->iter, a->coll, a->nranks, a->channels[c].position, a->channels[c].root, a->count, esize,
                   a->channels[c].send->slot_size, a->nchannels, c);
    r->base.finished = r->iter.done;
  }
}
