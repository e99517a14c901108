/* host_p2p.c — send and receive work items (host_p2p.h). */
#include "host_p2p.h"

#include "kern_recv.h"

#include <stddef.h>
#include <string.h>

static p2p_item_t *to_p2p_item(kern_item_t *it) { return (p2p_item_t *)((char *)it - offsetof(p2p_item_t, base)); }

static int p2p_step(kern_item_t *it, kern_failure_t *fail) {
  p2p_item_t *p = to_p2p_item(it);
  slot_fifo_t *f = p->fifo;
  size_t n = p->bytes - p->off < f->slot_size ? p->bytes - p->off : f->slot_size;
  int s = (int)(*p->step % XCCL_STEPS);
  if (p->is_send) {
    if (!slot_fifo_room(f, *p->step)) return 0;
    memcpy(slot_fifo_slot(f, (uint64_t)s), p->buf + p->off, n);
    slot_fifo_send(f, (*p->step)++, n, it->env->fault);
  } else {
    if (!slot_fifo_ready(f, *p->step)) return 0;
    if (!kern_recv_check(f, *p->step, n, fail)) return -1;
    memcpy(p->buf + p->off, slot_fifo_slot(f, (uint64_t)s), n);
    slot_fifo_release(f, (*p->step)++);
  }
  p->off += n;
  it->action++;
  it->finished = p->off == p->bytes;
  return 1;
}

static slot_fifo_t *p2p_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  p2p_item_t *p = to_p2p_item(it);
  *is_recv_p = !p->is_send;
  *step_p = *p->step;
  return p->fifo;
}

static const kern_item_ops_t p2p_ops = {.step = p2p_step, .waiting = p2p_waiting};

void host_p2p_item(p2p_item_t *it, const kern_env_t *env, kern_lane_t lane, int is_send, slot_fifo_t *fifo, uint64_t *step,
                   void *buf, size_t bytes) {
  memset(it, 0, sizeof(*it));
  kern_item_init(&it->base, &p2p_ops, env, lane);
  it->base.sends = is_send ? fifo : NULL;
  it->base.send_step = is_send ? step : NULL;
  it->base.finished = bytes == 0;
  it->is_send = is_send;
  it->fifo = fifo;
  it->step = step;
  it->buf = buf;
  it->bytes = bytes;
}
