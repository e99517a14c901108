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
 * Memory of block b at loop position o (channel c covers [cb, cb + cl) of
 * the count): all-reduce splits each loop into k blocks of `per` elements at
 * cb + o + b*per; all-gather reads its own piece at cb + o and writes block b
 * at b*count + cb + o; reduce-scatter the other way round; broadcast and
 * reduce move cb + o.
 */
#include <string.h>

#include "clock.h"
#include "host_ring.h"
#include "reduce.h"
#include "ring_schedule.h"

#define RING_ALIGN_BYTES 64 /* chunk boundaries fall on cache lines */

typedef struct {
  size_t base, count; /* the channel's elements */
  size_t loop_off;    /* elements of the channel done by earlier loops */
  size_t per;         /* elements per block in the current loop */
  uint64_t loop;
  int action;
  int draining; /* all actions ran; waiting for the proxy to take the last sends */
  int done;
  int progressed; /* since the last idle check */
  uint64_t last_progress_ns;
} chan_state_t;

void ring_channel_range(size_t count, size_t elem_size, int nchannels, int c, size_t *off_p, size_t *len_p) {
  size_t align = RING_ALIGN_BYTES / elem_size ? RING_ALIGN_BYTES / elem_size : 1;
  size_t per = (count + (size_t)nchannels - 1) / (size_t)nchannels;
  per = (per + align - 1) / align * align;
  size_t off = per * (size_t)c;
  *off_p = off < count ? off : count;
  *len_p = off < count ? (count - off < per ? count - off : per) : 0;
}

static void chan_start_loop(const ring_args_t *a, chan_state_t *s, size_t chunk_elems, size_t align) {
  size_t rem = s->count - s->loop_off, per = rem;
  if (a->coll == RING_COLL_ALLREDUCE) { /* the loop's elements are split k ways */
    per = (rem + (size_t)a->nranks - 1) / (size_t)a->nranks;
    per = (per + align - 1) / align * align;
  }
  s->per = per < chunk_elems ? per : chunk_elems;
  s->action = 0;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Element offsets of block b in the input and output, and its length. */
static void block_geometry(const ring_args_t *a, const chan_state_t *s, int b, size_t *in_p, size_t *out_p,
                           size_t *n_p) {
  size_t o = s->loop_off, blk = (size_t)b * a->count;
  if (a->coll == RING_COLL_ALLREDUCE) {
    size_t first = min_sz(o + (size_t)b * s->per, s->count);
    *n_p = min_sz(s->count - first, s->per);
    *in_p = *out_p = s->base + first;
    return;
  }
  *n_p = min_sz(s->count - o, s->per);
  *in_p = *out_p = s->base + o;
  if (a->coll == RING_COLL_ALLGATHER) *out_p += blk;
  if (a->coll == RING_COLL_REDUCESCATTER) *in_p += blk;
}

/* Runs the channel's next action if its slots are ready. Returns 1 when it
 * ran, 0 when it must wait, -1 on a protocol error (fail filled in). */
static int chan_step(const ring_args_t *a, int c, chan_state_t *s, size_t esize, kern_failure_t *fail) {
  ring_channel_t *ch = &a->channels[c];
  int k = a->nranks, block;
  int flags = ring_action(a->coll, k, a->position, a->root, s->action, &block);
  if ((flags & RING_RECV) &&
      atomic_load_explicit(&ch->recv->tail, memory_order_acquire) <= *ch->recv_step)
    return 0;
  if ((flags & RING_SEND) &&
      atomic_load_explicit(&ch->send->head, memory_order_acquire) + XCCL_STEPS <= *ch->send_step)
    return 0;

  size_t in_off, out_off, n;
  block_geometry(a, s, block, &in_off, &out_off, &n);
  size_t bytes = n * esize;
  const char *in = (flags & RING_INPUT) ? (const char *)a->sendbuff + in_off * esize : NULL;
  char *out = (flags & RING_OUTPUT) ? (char *)a->recvbuff + out_off * esize : NULL;
  char *send_slot = (flags & RING_SEND) ? ch->send->slots[*ch->send_step % XCCL_STEPS] : NULL;
  const char *recv_slot = NULL;
  if (flags & RING_RECV) {
    int rs = (int)(*ch->recv_step % XCCL_STEPS);
    recv_slot = ch->recv->slots[rs];
    if (ch->recv->sizes[rs] != bytes) {
      fail->kind = KERN_FAIL_PROTOCOL;
      fail->channel = c;
      fail->waiting_on_recv = 1;
      fail->action = s->action;
      fail->loop = s->loop;
      fail->got_bytes = ch->recv->sizes[rs];
      fail->want_bytes = bytes;
      return -1;
    }
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

  if (flags & RING_SEND) {
    ch->send->sizes[*ch->send_step % XCCL_STEPS] = bytes;
    atomic_store_explicit(&ch->send->tail, ++*ch->send_step, memory_order_release);
  }
  if (flags & RING_RECV) atomic_store_explicit(&ch->recv->head, ++*ch->recv_step, memory_order_release);
  return 1;
}

/* Checks why an idle channel is idle. Returns non-zero (fail filled) to stop. */
static int chan_check(const ring_args_t *a, int c, const chan_state_t *s, uint64_t now, kern_failure_t *fail) {
  ring_channel_t *ch = &a->channels[c];
  int block;
  int flags = s->draining ? RING_SEND : ring_action(a->coll, a->nranks, a->position, a->root, s->action, &block);
  int on_recv = (flags & RING_RECV) &&
                atomic_load_explicit(&ch->recv->tail, memory_order_acquire) <= *ch->recv_step;
  slot_fifo_t *f = on_recv ? ch->recv : ch->send;
  fail->channel = c;
  fail->waiting_on_recv = on_recv;
  fail->action = s->action;
  fail->loop = s->loop;
  /* Only the fifo waited on counts: the other direction may have failed
   * because the peer finished and closed, which is not an error here. The
   * proxy publishes what it received before it marks a fifo failed, so after
   * seeing the error, look at the counter again: the data may be there. */
  int err = atomic_load_explicit(&f->error, memory_order_acquire);
  if (err && on_recv && atomic_load_explicit(&ch->recv->tail, memory_order_acquire) > *ch->recv_step) err = 0;
  if (err && !on_recv &&
      atomic_load_explicit(&ch->send->head, memory_order_acquire) + (s->draining ? 0 : XCCL_STEPS) > *ch->send_step)
    err = 0;
  if (err) {
    fail->kind = KERN_FAIL_CONN;
    fail->conn_result = err;
    memcpy(fail->msg, f->error_msg, sizeof(fail->msg));
    return 1;
  }
  if (a->abort_flag && atomic_load_explicit(a->abort_flag, memory_order_relaxed)) {
    fail->kind = KERN_FAIL_ABORT;
    return 1;
  }
  if (now - s->last_progress_ns > (uint64_t)(a->timeout_s * 1e9)) {
    fail->kind = KERN_FAIL_TIMEOUT;
    return 1;
  }
  return 0;
}

xcclResult_t host_ring_run(const ring_args_t *a, kern_failure_t *fail) {
  enum { MAX_CH = 64 };
  chan_state_t st[MAX_CH];
  size_t esize = xcclTypeSize(a->type);
  size_t align = RING_ALIGN_BYTES / esize;
  memset(fail, 0, sizeof(*fail));
  if (a->nchannels > MAX_CH) return xcclInternalError;
  int remaining = 0;
  uint64_t now = clock_ns();
  for (int c = 0; c < a->nchannels; c++) {
    chan_state_t *s = &st[c];
    memset(s, 0, sizeof(*s));
    ring_channel_range(a->count, esize, a->nchannels, c, &s->base, &s->count);
    s->last_progress_ns = now;
    s->done = s->count == 0;
    if (!s->done) {
      size_t chunk_elems = a->channels[c].send->slot_size / esize / align * align;
      chan_start_loop(a, s, chunk_elems, align);
      remaining++;
    }
  }
  const int nactions = ring_nactions(a->coll, a->nranks);
  const size_t loop_factor = a->coll == RING_COLL_ALLREDUCE ? (size_t)a->nranks : 1;
  int idle = 0;
  while (remaining > 0) {
    uint32_t seen = slot_bell_seen(a->bell); /* before looking, so no ring is missed */
    int moved = 0;
    for (int c = 0; c < a->nchannels; c++) {
      chan_state_t *s = &st[c];
      if (s->done) continue;
      int rc;
      if (s->draining) {
        /* The operation is complete only when the proxy has taken every slot
         * it sent: returning earlier could let the caller destroy the
         * communicator with data still in the slots. */
        ring_channel_t *ch = &a->channels[c];
        if (atomic_load_explicit(&ch->send->head, memory_order_acquire) >= *ch->send_step) {
          s->done = 1;
          remaining--;
          moved = 1;
        }
        continue;
      }
      while (!s->draining && (rc = chan_step(a, c, s, esize, fail)) != 0) {
        if (rc < 0) return xcclRemoteError;
        moved = s->progressed = 1;
        if (++s->action < nactions) continue;
        s->loop_off += s->per * loop_factor;
        s->loop++;
        if (s->loop_off >= s->count) {
          s->draining = 1;
        } else {
          size_t chunk_elems = a->channels[c].send->slot_size / esize / align * align;
          chan_start_loop(a, s, chunk_elems, align);
        }
      }
    }
    if (moved) {
      if (a->progress) a->progress(a->progress_ctx);
      idle = 0;
      continue;
    }
    if (++idle < a->spin_count) continue;
    if (a->progress && a->progress(a->progress_ctx)) {
      idle = 0;
      continue;
    }
    now = clock_ns();
    for (int c = 0; c < a->nchannels; c++) {
      chan_state_t *s = &st[c];
      if (s->done) continue;
      if (s->progressed) s->last_progress_ns = now, s->progressed = 0;
      if (chan_check(a, c, s, now, fail)) {
        switch (fail->kind) {
          case KERN_FAIL_TIMEOUT: return xcclTimeout;
          case KERN_FAIL_CONN: return (xcclResult_t)fail->conn_result;
          default: return xcclRemoteError;
        }
      }
    }
    if (a->wait)
      a->wait(a->progress_ctx, 1000);
    else
      slot_bell_wait(a->bell, seen, 1000);
  }
  return xcclSuccess;
}
