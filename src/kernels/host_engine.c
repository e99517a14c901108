/*
 * host_engine.c — the loop that drives host work items (host_engine.h).
 */
#include "host_engine.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

#define SPIN_FREE_POLLS 64

/* An earlier item on the same lane has actions left. */
static int lane_blocked(kern_item_t *const *items, int i) {
  for (int j = 0; j < i; j++)
    if (items[j]->lane == items[i]->lane && !items[j]->finished) return 1;
  return 0;
}

static int drained(kern_item_t *it) {
  if (it->ops->drained) return it->ops->drained(it);
  return !it->sends || slot_fifo_taken(it->sends, *it->send_step);
}

/* What an idle item waits on: the fifo (or NULL), and where, in fail's
 * fields (channel, peer, waiting_on_recv, action, loop, step). */
static slot_fifo_t *item_wait(kern_item_t *it, kern_failure_t *fail) {
  uint64_t step = 0;
  int on_recv = 0;
  slot_fifo_t *f;
  if (it->finished) { /* draining: waiting for the transport to take the last sends */
    f = it->sends;
    step = f ? *it->send_step : 0;
  } else {
    f = it->ops->waiting(it, &step, &on_recv);
  }
  fail->channel = it->channel;
  fail->peer = it->peer;
  fail->waiting_on_recv = on_recv;
  fail->action = it->action;
  fail->loop = it->loop;
  fail->step = step;
  return f;
}

/* Why is an idle item idle? Non-zero (fail filled in) to stop. */
static int item_check(kern_item_t *it, uint64_t now, kern_failure_t *fail) {
  slot_fifo_t *f = item_wait(it, fail);
  uint64_t step = fail->step;
  int on_recv = fail->waiting_on_recv;
  /* Only the fifo waited on counts: another may have failed because its
   * peer finished and closed, which is not an error here. The proxy
   * publishes what it moved before it marks a fifo failed, so after seeing
   * the error look at the counter again: the data may be there. */
  int err = f ? atomic_load_explicit(&f->error, memory_order_acquire) : 0;
  /* A shared-memory peer that dies closes nothing: look for it. It may have
   * published what we wait for and then exited, so look before the counter. */
  int32_t pid = f && f->shared ? slot_fifo_side_pid(f, on_recv) : 0;
  int gone = f && f->shared && slot_fifo_side_gone(f, on_recv);
  if (err || gone) {
    if (on_recv ? slot_fifo_ready(f, step) /* the kernels' own test: tail may run ahead of a skipped slot */
                : atomic_load_explicit(&f->head, memory_order_acquire) + (it->finished ? 0 : XCCL_STEPS) > step)
      return 0; /* the slot is ready after all: the next pass moves it */
    fail->kind = KERN_FAIL_CONN;
    fail->conn_result = err ? err : xcclRemoteError;
    if (err)
      memcpy(fail->msg, f->error_msg, sizeof(fail->msg));
    else
      snprintf(fail->msg, sizeof(fail->msg), "the peer process (pid %d) on the other side of shared memory is gone",
               (int)pid);
    return 1;
  }
  if (it->env->abort_flag && atomic_load_explicit(it->env->abort_flag, memory_order_relaxed)) {
    fail->kind = KERN_FAIL_ABORT;
    return 1;
  }
  if (now - it->last_progress_ns > (uint64_t)(it->env->timeout_s * 1e9)) {
    fail->kind = KERN_FAIL_TIMEOUT;
    return 1;
  }
  return 0;
}

/* A connection of items[failed] failed: which other item had waited
 * longest (moved least recently) by now, if long enough to matter. */
static void note_also(kern_item_t *const *items, int n, int failed, uint64_t now, kern_failure_t *fail) {
  double half_s = items[failed]->env->timeout_s / 2;
  int best = -1;
  for (int i = 0; i < n; i++) {
    kern_item_t *it = items[i];
    if (i == failed || it->done || it->progressed || !it->last_progress_ns || (!it->finished && lane_blocked(items, i)))
      continue;
    if (half_s <= 0 || (double)(now - it->last_progress_ns) < half_s * 1e9) continue;
    if (best < 0 || it->last_burst < items[best]->last_burst) best = i;
  }
  if (best < 0) return;
  kern_failure_t w;
  item_wait(items[best], &w);
  fail->also_item = best;
  fail->also_peer = w.peer;
  fail->also_channel = w.channel;
  fail->also_recv = w.waiting_on_recv;
  fail->also_ns = now - items[best]->last_progress_ns;
}

/* ---- The state record (kern_state_t): touched only when items stop and resume ---- */

/* Adds item i's wait (described by w, as item_check filled it) to its
 * environment's record; the first wait of a pass opens the record. */
static void state_note(kern_item_t *it, int i, const kern_failure_t *w, uint64_t t0) {
  kern_state_t *s = it->env->state;
  if (!s) return;
  if (!(atomic_load_explicit(&s->gen, memory_order_relaxed) & 1)) { /* we are the only writer */
    kern_state_write_begin(s);
    atomic_store_explicit(&s->nwaits, 0, memory_order_release);
    atomic_store_explicit(&s->start_ns, t0, memory_order_release);
  }
  int k = atomic_load_explicit(&s->nwaits, memory_order_relaxed);
  if (k < KERN_STATE_WAITS) {
    kern_wait_t *e = &s->waits[k];
    atomic_store_explicit(&e->item, i, memory_order_release);
    atomic_store_explicit(&e->peer, w->peer, memory_order_release);
    atomic_store_explicit(&e->channel, w->channel, memory_order_release);
    atomic_store_explicit(&e->is_recv, w->waiting_on_recv, memory_order_release);
    atomic_store_explicit(&e->action, w->action, memory_order_release);
    atomic_store_explicit(&e->loop, w->loop, memory_order_release);
    atomic_store_explicit(&e->step, w->step, memory_order_release);
    atomic_store_explicit(&e->since_ns, it->last_progress_ns, memory_order_release);
  }
  atomic_store_explicit(&s->nwaits, k + 1, memory_order_release);
}

/* Closes the records state_note opened. */
static void state_close(kern_item_t *const *items, int n) {
  for (int i = 0; i < n; i++) {
    kern_state_t *s = items[i]->env->state;
    if (s && (atomic_load_explicit(&s->gen, memory_order_relaxed) & 1)) kern_state_write_end(s);
  }
}

/* The items move again: no waits (each record once). */
static void state_clear(kern_item_t *const *items, int n) {
  for (int i = 0; i < n; i++) {
    kern_state_t *s = items[i]->env->state;
    if (!s || !atomic_load_explicit(&s->nwaits, memory_order_relaxed)) continue;
    kern_state_write_begin(s);
    atomic_store_explicit(&s->nwaits, 0, memory_order_release);
    kern_state_write_end(s);
  }
}

void kern_state_snapshot(kern_state_t *s, kern_state_copy_t *out) {
  /* A writer on another thread finishes within a few stores; one this
   * handler interrupted never does: give up after a bounded number of tries. */
  for (int tries = 0; tries < 1000; tries++) {
    uint64_t g1 = atomic_load_explicit(&s->gen, memory_order_acquire);
    uint64_t info = atomic_load_explicit(&s->op_info, memory_order_acquire);
    uint64_t where = atomic_load_explicit(&s->op_where, memory_order_acquire);
    out->op_name = atomic_load_explicit(&s->op_name, memory_order_acquire);
    out->seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    out->count = atomic_load_explicit(&s->count, memory_order_acquire);
    out->done_seq = atomic_load_explicit(&s->done_seq, memory_order_acquire);
    out->start_ns = atomic_load_explicit(&s->start_ns, memory_order_acquire);
    out->run_state = (int)(info & 0xff);
    out->type = (int)(info >> 8 & 0xff);
    out->redop = (int)(int8_t)(info >> 16 & 0xff);
    out->algo = (int)(int8_t)(info >> 24 & 0xff);
    out->nops = (int)(uint32_t)(info >> 32);
    out->root = (int32_t)(uint32_t)where;
    out->peer = (int32_t)(uint32_t)(where >> 32);
    out->nwaits = atomic_load_explicit(&s->nwaits, memory_order_acquire);
    for (int k = 0; k < KERN_STATE_WAITS; k++) {
      kern_wait_t *e = &s->waits[k];
      out->waits[k].item = atomic_load_explicit(&e->item, memory_order_acquire);
      out->waits[k].peer = atomic_load_explicit(&e->peer, memory_order_acquire);
      out->waits[k].channel = atomic_load_explicit(&e->channel, memory_order_acquire);
      out->waits[k].is_recv = atomic_load_explicit(&e->is_recv, memory_order_acquire);
      out->waits[k].action = atomic_load_explicit(&e->action, memory_order_acquire);
      out->waits[k].loop = atomic_load_explicit(&e->loop, memory_order_acquire);
      out->waits[k].step = atomic_load_explicit(&e->step, memory_order_acquire);
      out->waits[k].since_ns = atomic_load_explicit(&e->since_ns, memory_order_acquire);
    }
    uint64_t g2 = atomic_load_explicit(&s->gen, memory_order_relaxed); /* after the acquire loads above */
    out->torn = g1 != g2 || (g1 & 1);
    if (!out->torn) return;
  }
}

/* Calls progress once per distinct environment. */
static int progress_all(kern_item_t *const *items, int n) {
  int moved = 0;
  for (int i = 0; i < n; i++) {
    const kern_env_t *e = items[i]->env;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = items[j]->env == e;
    if (!seen && e->progress) moved |= e->progress(e->progress_ctx);
  }
  return moved;
}

/* A stall that began at since (idle_since) ended now: its time goes to the
 * environment's wait counter (one writer: the thread that runs env's
 * operations, so a plain add). */
static void stall_counted(const kern_env_t *env, uint64_t since) {
  uint64_t t = clock_ns() - since;
  atomic_store_explicit(env->wait_ns, atomic_load_explicit(env->wait_ns, memory_order_relaxed) + t,
                        memory_order_relaxed);
}

/* What a stall waits on, for its TRACE_WAIT event: the first item that
 * waits on a fifo. */
typedef struct {
  int peer, channel, is_recv;
} stall_trace_t;

static void stall_trace_begin(kern_item_t *const *items, int n, stall_trace_t *st) {
  *st = (stall_trace_t){.peer = -1, .channel = -1};
  for (int i = 0; i < n; i++) {
    kern_item_t *it = items[i];
    if (it->done || (!it->finished && lane_blocked(items, i))) continue;
    uint64_t step = 0;
    if (!it->finished) it->ops->waiting(it, &step, &st->is_recv);
    st->peer = it->peer;
    st->channel = it->channel;
    return;
  }
}

/* The stall that began at since ended (a move, or the failure it ends in). */
static void stall_traced(trace_ring_t *tr, uint64_t since, const stall_trace_t *st) {
  trace_ring_add(tr, TRACE_WAIT, since, clock_ns(), st->peer, st->channel, 0, 0, 0, st->is_recv);
}

/* A burst of `runs` actions of it began at t (its send fifo had sent0
 * bytes); returns the time it ended. */
static uint64_t step_traced(trace_ring_t *tr, const kern_item_t *it, uint64_t t, uint64_t sent0, uint64_t loop0,
                            int runs) {
  uint64_t sent = it->sends ? atomic_load_explicit(&it->sends->bytes, memory_order_relaxed) - sent0 : 0;
  uint64_t end = clock_ns();
  trace_ring_add(tr, TRACE_STEP, t, end, it->peer, it->channel, loop0, (uint64_t)runs, sent, 0);
  return end;
}

xcclResult_t kern_run(kern_item_t *const *items, int n, kern_failure_t *fail) {
  memset(fail, 0, offsetof(kern_failure_t, msg));
  fail->msg[0] = '\0';
  /* The clock is first read when the items stall (a small operation never
   * does): the deadline counts from there, a spin of spin_ns later at most. */
  uint64_t now = 0, t0 = 0, bursts = 0;
  int remaining = 0, single_env = 1, tracing = 0;
  for (int i = 0; i < n; i++) {
    kern_item_t *it = items[i];
    it->done = it->finished && drained(it);
    it->progressed = 0;
    it->last_progress_ns = now;
    it->last_burst = 0;
    remaining += !it->done;
    single_env &= it->env == items[0]->env;
    tracing |= it->env->trace != NULL;
  }
  /* Idle: poll for spin_ns (yielding the core between polls when the ranks
   * outnumber the cores), then sleep until a peer or the transport wakes us.
   * After a sleep that found nothing, sleep again without spinning. */
  int idle = 0, slept = 0;
  int noted = 0; /* the waits of this stall are in the state records */
  uint64_t idle_since = 0;
  uint64_t stall_since = 0; /* when the stall that a move ends began (for env->wait_ns); 0: none */
  stall_trace_t stall_tr = {0}; /* XCCL_TRACE: what the stall waits on */
  while (remaining > 0) {
    const kern_env_t *env0 = items[0]->env;
    uint32_t seen = slot_bell_seen(env0->bell); /* before looking, so no ring is missed */
    int moved = 0;
    /* XCCL_TRACE: one clock read per pass, and one when a burst ends; a
     * burst starts at the later of the two (only polls come between). */
    uint64_t t_trace = tracing ? clock_ns() : 0;
    for (int i = 0; i < n; i++) {
      kern_item_t *it = items[i];
      if (it->done) continue;
      if (!it->finished) {
        if (lane_blocked(items, i)) continue;
        int rc, runs = 0;
        trace_ring_t *tr = it->env->trace;
        uint64_t sent0 = tr && it->sends ? atomic_load_explicit(&it->sends->bytes, memory_order_relaxed) : 0;
        uint64_t loop0 = it->loop;
        while (!it->finished && (rc = it->ops->step(it, fail)) != 0) {
          if (rc < 0) {
            fail->item = i;
            fail->peer = it->peer; /* -1: the ring's previous rank, which the caller knows */
            /* CONN: an item that reads peers' memory itself (host_direct.c) found it gone. */
            if (fail->kind != KERN_FAIL_CHECKSUM && fail->kind != KERN_FAIL_CONN) fail->kind = KERN_FAIL_PROTOCOL;
            fail->channel = it->channel;
            fail->action = it->action;
            fail->loop = it->loop;
            fail->waiting_on_recv = 1;
            if (fail->kind == KERN_FAIL_CONN) return (xcclResult_t)fail->conn_result;
            return fail->kind == KERN_FAIL_CHECKSUM ? xcclRemoteError : xcclInvalidUsage;
          }
          moved = it->progressed = 1;
          runs++;
        }
        if (runs) it->last_burst = ++bursts;
        if (tr && runs) t_trace = step_traced(tr, it, t_trace, sent0, loop0, runs);
      }
      /* The operation is complete only when the transport has taken every
       * slot it sent: returning earlier could let the caller destroy the
       * communicator with data still in the slots. */
      if (it->finished && drained(it)) {
        it->done = 1;
        remaining--;
        moved = 1;
      }
    }
    if (moved) {
      progress_all(items, n);
      if (stall_since && items[0]->env->wait_ns) stall_counted(items[0]->env, stall_since);
      if (stall_since && items[0]->env->trace) stall_traced(items[0]->env->trace, stall_since, &stall_tr);
      stall_since = 0;
      idle = slept = 0;
      if (noted) state_clear(items, n), noted = 0;
      continue;
    }
    /* The first polls are free of clock reads (a peer usually answers within
     * them; a clock read costs as much as a poll); then the clock every 16. */
    if (++idle == SPIN_FREE_POLLS) {
      idle_since = clock_ns();
      if (!stall_since) {
        stall_since = idle_since;
        if (env0->trace) stall_trace_begin(items, n, &stall_tr);
      }
    }
    if (!slept && env0->spin_ns) {
      if (env0->yield) sched_yield();
      if (idle <= SPIN_FREE_POLLS || idle % 16 != 0 || clock_ns() - idle_since < env0->spin_ns) continue;
    }
    if (progress_all(items, n)) {
      idle = slept = 0;
      continue;
    }
    now = clock_ns();
    if (!t0) t0 = now;
    int late = -1; /* the timed-out item that moved least recently */
    for (int i = 0; i < n; i++) {
      kern_item_t *it = items[i];
      if (it->done) continue;
      if (!it->last_progress_ns) it->last_progress_ns = now;
      if (it->progressed || (!it->finished && lane_blocked(items, i))) {
        it->last_progress_ns = now; /* a queued item's clock starts when it can run */
        if (it->progressed && !noted) { /* it moved before this stall and waits now */
          item_wait(it, fail);
          state_note(it, i, fail, t0);
        }
        it->progressed = 0;
        continue;
      }
      int stop = item_check(it, now, fail);
      if (!noted) state_note(it, i, fail, t0);
      if (stop && fail->kind == KERN_FAIL_TIMEOUT) {
        if (late < 0 || it->last_burst < items[late]->last_burst) late = i;
        continue;
      }
      if (stop) {
        fail->item = i;
        if (fail->kind == KERN_FAIL_CONN) note_also(items, n, i, now, fail);
        state_close(items, n);
        if (stall_since && env0->trace) stall_traced(env0->trace, stall_since, &stall_tr); /* the wait it ends in */
        switch (fail->kind) {
          case KERN_FAIL_TIMEOUT: return xcclTimeout;
          case KERN_FAIL_CONN: return (xcclResult_t)fail->conn_result;
          default: return xcclRemoteError;
        }
      }
    }
    if (late >= 0) { /* a timeout: described again, as the item that stalled first */
      memset(fail, 0, offsetof(kern_failure_t, msg));
      fail->msg[0] = '\0';
      if (!item_check(items[late], now, fail)) fail->kind = KERN_FAIL_TIMEOUT;
      fail->item = late;
      state_close(items, n);
      if (stall_since && env0->trace) stall_traced(env0->trace, stall_since, &stall_tr);
      return fail->kind == KERN_FAIL_TIMEOUT ? xcclTimeout
             : fail->kind == KERN_FAIL_CONN  ? (xcclResult_t)fail->conn_result
                                             : xcclRemoteError;
    }
    if (!noted) state_close(items, n), noted = 1;
    slot_fifo_t *wf = NULL;
    kern_item_t *sleeper = NULL;
    uint64_t wstep = 0;
    int wrecv = 0;
    for (int i = 0; i < n && !wf; i++) { /* the first item that waits on a fifo */
      kern_item_t *it = items[i];
      if (it->done || (!it->finished && lane_blocked(items, i))) continue;
      if (it->finished && it->sends) wf = it->sends, wstep = *it->send_step;
      else wf = it->ops->waiting(it, &wstep, &wrecv); /* draining items with several fifos say which */
      if (wf && !it->finished && it->ops->sleep) sleeper = it;
    }
    if (sleeper && sleeper->ops->sleep(sleeper, 1000)) {
      /* slept on what it waits on */
    } else if (wf && wf->shared) {
      /* Shared memory: the peer's kernel moves the counter and wakes us. */
      slot_fifo_wait(wf, wrecv, atomic_load(wrecv ? &wf->tail : &wf->head), 1000);
    } else if (single_env && env0->wait) {
      env0->wait(env0->progress_ctx, 1000);
    } else if (single_env) {
      slot_bell_wait(env0->bell, seen, 1000);
    } else { /* several communicators: take turns, briefly */
      for (int i = 0; i < n; i++) {
        const kern_env_t *e = items[i]->env;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = items[j]->env == e;
        if (!dup && e->wait) e->wait(e->progress_ctx, 100);
      }
    }
    slept = 1;
    idle = 0;
  }
  return xcclSuccess;
}
