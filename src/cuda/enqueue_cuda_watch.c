/*
 * enqueue_cuda_watch.c — the watcher thread of the CUDA device path
 * (enqueue_cuda_int.h): one per process, it carries every launch to its end.
 * While a launch runs it drives the communicators' proxies (the kernel
 * cannot), passes the abort flag on to the kernel, and marks a shared-memory
 * fifo failed when the process on its other side is gone; when every block
 * has said it is done it turns a failure into the communicators' error and
 * releases them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "enqueue_cuda_int.h"
#include "log.h"
#include "thread.h"

_Atomic int cuda_flights_total;

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;
static cuda_flight_t *incoming;
static int watch_started;

void cuda_flight_free(cuda_flight_t *f) {
  if (f->done_ev) cudaEventDestroy(f->done_ev), cudaGetLastError();
  if (f->rec) cuda_rec_put(f->rec);
  free(f->ops);
  free(f->work_op);
  free(f->fifos);
  free(f->comms);
  free(f->states);
  free(f);
}

/* The sentence for a launch that failed, on the watcher's thread; then the
 * communicators fail the way group.c fails them. */
static void flight_report(cuda_flight_t *f) {
  int b = -1;
  for (int i = 0; i < f->nblocks; i++) { /* the block that met the failure, not one that stopped for it */
    int k = f->status[i].kind;
    if (k != KCU_FAIL_NONE && (b < 0 || (f->status[b].kind == KCU_FAIL_ABORT && k != KCU_FAIL_ABORT))) b = i;
  }
  xcclResult_t res = xcclInternalError;
  if (b < 0) {
    res =
        err_set(xcclInternalError, LOG_COLL, "a device launch of %d operation(s) failed without saying where", f->nops);
  } else {
    kcu_status_t st = f->status[b];
    int w = st.work >= 0 && st.work < f->nwork ? st.work : 0;
    const group_op_t *op = &f->ops[f->work_op[w]].op;
    xcclComm_t comm = op->comm;
    char what[240], where[320], peer[160];
    group_op_describe(op, what, sizeof(what));
    if (op->kind == GROUP_COLL)
      snprintf(where, sizeof(where), "%s: ring on the GPU, channel %d, loop %llu step %d", what, f->work[w].channel,
               (unsigned long long)st.loop, st.action);
    else
      snprintf(where, sizeof(where), "%s: slot %d (on the GPU)", what, st.action);
    const comm_channel_t *wch = &comm->channels[f->work[w].channel];
    int p = op->kind != GROUP_COLL ? op->peer : st.waiting_on_recv ? wch->prev : wch->next;
    comm_peer_desc(comm, p, peer, sizeof(peer));
    slot_fifo_t *wf = f->fifos[2 * w + (st.waiting_on_recv ? 1 : 0)];
    switch (st.kind) {
      case KCU_FAIL_TIMEOUT:
        res = st.waiting_on_recv ? err_set(xcclTimeout, LOG_COLL, "%s: no data from %s for XCCL_TIMEOUT=%g s", where,
                                           peer, comm->timeout_s)
                                 : err_set(xcclTimeout, LOG_COLL, "%s: %s did not take data for XCCL_TIMEOUT=%g s",
                                           where, peer, comm->timeout_s);
        break;
      case KCU_FAIL_CONN:
        res = err_set(st.conn_result ? (xcclResult_t)st.conn_result : xcclRemoteError, LOG_COLL, "%s: %s", where,
                      wf && atomic_load(&wf->error) ? wf->error_msg : "the connection failed");
        break;
      case KCU_FAIL_ABORT:
        res = err_set(xcclRemoteError, LOG_COLL, "%s: the communicator was aborted", where);
        break;
      default:
        res = err_set(xcclInvalidUsage, LOG_COLL,
                      "%s: %s sent %llu bytes where %llu were expected: the ranks called %s with different counts, "
                      "datatypes or roots",
                      where, peer, (unsigned long long)st.got_bytes, (unsigned long long)st.want_bytes, op->coll.name);
    }
  }
  for (int c = 0; c < f->ncomms; c++) {
    xcclComm_t comm = f->comms[c];
    comm_record(comm, res); /* before comm_fail: who sees the comm failed finds the message there */
    comm_fail(comm, res, err_last());
  }
}

/* One look at a launch in flight: the abort flag passed on, the proxy
 * driven, dead shared-memory peers noticed. Returns 1 if the proxy moved
 * anything. */
static int flight_poll(cuda_flight_t *f, uint64_t now) {
  int moved = 0;
  for (int c = 0; c < f->ncomms; c++) {
    xcclComm_t comm = f->comms[c];
    if (atomic_load_explicit(&comm->abort_flag, memory_order_relaxed)) {
      atomic_store_explicit((_Atomic uint32_t *)&f->hdr->abort, 1, memory_order_release);
      if (!f->abort_seen) f->abort_seen = now;
    }
    const kern_env_t *e = &comm->env;
    if (e->progress && e->progress_ctx) moved |= e->progress(e->progress_ctx);
    if (e->wait && e->progress_ctx) moved |= e->wait(e->progress_ctx, 0); /* receives: a poll() that does not sleep */
  }
  if (now < f->next_liveness) return moved;
  f->next_liveness = now + CUDA_LIVENESS_NS;
  /* A kernel that faults (an illegal address, a device error) never says
   * it is done: its event says so instead. */
  cudaError_t e = f->done_ev && !f->cuda_err ? cudaEventQuery(f->done_ev) : cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) {
    cudaGetLastError();
    f->cuda_err = e;
  }
  /* A peer process that dies closes nothing: mark its fifo failed, which
   * the kernel sees, as the host engine would notice it. */
  for (int i = 0; i < 2 * f->nwork; i++) {
    slot_fifo_t *q = f->fifos[i];
    int32_t pid = q && q->shared ? slot_fifo_side_pid(q, i % 2) : 0;
    if (q && q->shared && slot_fifo_side_gone(q, i % 2) && !atomic_load(&q->error)) {
      char msg[SLOT_ERROR_MAX];
      snprintf(msg, sizeof(msg), "the peer process (pid %d) on the other side of shared memory is gone", (int)pid);
      slot_fifo_fail(q, xcclRemoteError, msg);
    }
  }
  return moved;
}

static int flight_done(const cuda_flight_t *f) {
  if (f->cuda_err) return 1;
  for (int b = 0; b < f->nblocks; b++)
    if (!f->block_done[b]) return 0;
  atomic_thread_fence(memory_order_acquire); /* the statuses were written before the done words */
  return 1;
}

/* A kernel that died on the GPU: every communicator of the launch fails. */
static void flight_report_cuda(cuda_flight_t *f) {
  char what[240];
  group_op_describe(&f->ops[0].op, what, sizeof(what));
  xcclResult_t res = err_set(xcclUnhandledCudaError, LOG_COLL,
                             "%s: the collective kernel (%d operation(s)) failed on the GPU: %s (%s); an error of "
                             "this kind is sticky: this process's CUDA context cannot be used any more",
                             what, f->nops, cudaGetErrorString(f->cuda_err), cudaGetErrorName(f->cuda_err));
  for (int c = 0; c < f->ncomms; c++) {
    comm_record(f->comms[c], res); /* first, as above */
    comm_fail(f->comms[c], res, err_last());
  }
}

static void flight_finish(cuda_flight_t *f) {
  if (f->cuda_err)
    flight_report_cuda(f);
  else if (atomic_load_explicit((_Atomic uint32_t *)&f->hdr->failed, memory_order_acquire))
    flight_report(f);
  for (int c = 0; c < f->ncomms; c++) {
    proxy_op_end(f->comms[c]->proxy);
    atomic_fetch_sub(&f->states[c]->inflight, 1);
    comm_release(f->comms[c]);
  }
  atomic_fetch_sub(&cuda_flights_total, 1);
  cuda_flight_free(f);
}

/* Launches let go of unfinished: their records stay, for a kernel that may
 * still start (it then stops at once); on a list, not lost. */
static cuda_flight_t *abandoned;

/* An aborted launch whose kernel has not ended a while after the abort
 * never started (a started one sees the abort within microseconds): its
 * stream waits on other work. Its communicators are let go, so that abort
 * returns; the kernel, if it starts later, finds the abort word up before
 * it touches anything of theirs. */
static int flight_abandon(cuda_flight_t *f, uint64_t now) {
  double grace_s = f->comms[0]->timeout_s < CUDA_ABORT_GRACE_S ? f->comms[0]->timeout_s : CUDA_ABORT_GRACE_S;
  if (!f->abort_seen || now - f->abort_seen < (uint64_t)(grace_s * 1e9)) return 0;
  char what[240];
  group_op_describe(&f->ops[0].op, what, sizeof(what));
  INFO(COLL,
       "%s: its kernel had not run %g s after the abort (its stream waits on other work): the communicator "
       "is let go; the kernel, if it starts later, stops at once",
       what, grace_s);
  for (int c = 0; c < f->ncomms; c++) {
    proxy_op_end(f->comms[c]->proxy);
    atomic_fetch_sub(&f->states[c]->inflight, 1);
    comm_release(f->comms[c]);
  }
  atomic_fetch_sub(&cuda_flights_total, 1);
  f->next = abandoned;
  abandoned = f;
  return 1;
}

static void *watch_main(void *arg) {
  cuda_flight_t *mine = NULL;
  unsigned idle = 0;
  for (;;) {
    pthread_mutex_lock(&watch_lock);
    while (!incoming && !mine) pthread_cond_wait(&watch_cond, &watch_lock);
    while (incoming) {
      cuda_flight_t *f = incoming;
      incoming = f->next;
      f->next = mine;
      mine = f;
    }
    pthread_mutex_unlock(&watch_lock);
    uint64_t now = clock_ns();
    int moved = 0;
    for (cuda_flight_t **pp = &mine; *pp;) {
      cuda_flight_t *f = *pp;
      moved |= flight_poll(f, now);
      if (flight_done(f)) {
        *pp = f->next;
        flight_finish(f);
        moved = 1;
      } else if (flight_abandon(f, now)) {
        *pp = f->next; /* flight_abandon keeps it */
        moved = 1;
      } else {
        pp = &f->next;
      }
    }
    /* Poll hard while things move (the proxy's latency is ours), then nap:
     * a kernel waiting on a slow peer needs no core. */
    if (moved) {
      idle = 0;
    } else if (++idle > 2000) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    } else if (idle > 200) {
      sched_yield();
    }
  }
  return arg;
}

xcclResult_t cuda_watch_start(void) {
  pthread_mutex_lock(&watch_lock);
  int rc = 0;
  if (!watch_started) {
    rc = thread_start_detached(watch_main, NULL);
    watch_started = rc == 0;
  }
  pthread_mutex_unlock(&watch_lock);
  if (rc)
    return err_set(xcclSystemError, LOG_COLL, "cannot start the thread that watches device work: %s", strerror(rc));
  return xcclSuccess;
}

void cuda_watch_add(cuda_flight_t *f) {
  pthread_mutex_lock(&watch_lock);
  f->next = incoming;
  incoming = f;
  pthread_cond_signal(&watch_cond);
  pthread_mutex_unlock(&watch_lock);
}
