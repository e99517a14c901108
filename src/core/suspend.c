/*
 * suspend.c — xcclCommSuspend, xcclCommResume and xcclCommMemStats (xccl.h).
 *
 * A suspended communicator is COMM_SUSPENDED: the handle refuses every
 * operation (comm_acquire) until resume. With XCCL_SUSPEND_MEM its
 * connections go as at teardown — the proxy first (its thread, the sockets
 * and its per-connection state), then the fifos (shared-memory segments,
 * the network's slot buffers) — and resume makes them again as init does
 * (comm_connect_rings, and the algorithms' own where ranks share a process;
 * the others come back lazily, at their first use). Both sides of every
 * connection start from step 0 again, so results are those of a fresh
 * communicator. Registrations and windows are not connections: they stay.
 *
 * Releasing is collective: every rank first waits for its own calls to end,
 * then all of them meet in a bootstrap all-gather, and only then does any
 * rank release. So no rank still writes into a segment, or reads a socket,
 * that its peer frees. The all-gather has the bootstrap's deadline and
 * stops at abort: a rank that died is an error, not a hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "algo.h"
#include "clock.h"
#include "comm.h"
#include "reg.h"
#include "rma.h"
#include "comm_stats.h"
#include "comm_trace.h"
#include "connect.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h"
#endif
#include "group.h"
#include "init.h"
#include "log.h"

#define SUSPEND_MAGIC 0x53555350 /* "SUSP": what every rank sends in the all-gather */

typedef struct {
  int32_t magic;
  int32_t flags;
} suspend_word_t;

/* Every rank is idle in xcclCommSuspend with the same flags; else (another
 * bootstrap exchange met this one) an error naming the first that is not. */
static xcclResult_t suspend_agree(struct xcclComm *comm, int flags) {
  suspend_word_t *all = calloc((size_t)comm->nranks, sizeof(*all));
  if (!all) return err_set(xcclSystemError, LOG_INIT, "out of memory for %d ranks", comm->nranks);
  all[comm->rank] = (suspend_word_t){SUSPEND_MAGIC, flags};
  xcclResult_t res = bootstrap_allgather(comm->bs, all, sizeof(*all));
  for (int r = 0; res == xcclSuccess && r < comm->nranks; r++)
    if (all[r].magic != SUSPEND_MAGIC || all[r].flags != flags) {
      char d[160];
      res = err_set(xcclInvalidUsage, LOG_INIT,
                    "%s is not in xcclCommSuspend with this rank's flags 0x%x: XCCL_SUSPEND_MEM is collective, every "
                    "rank suspends together",
                    comm_peer_desc(comm, r, d, sizeof(d)), (unsigned)flags);
    }
  free(all);
  return res;
}

/* Frees the proxy and every connection, in teardown's order (comm_free). */
static void conns_drop(struct xcclComm *comm) {
#ifdef XCCL_HAVE_CUDA
  enqueue_cuda_comm_free(comm); /* the fifos leave CUDA before they go; made again at the next device launch */
#endif
  rma_comm_stop(comm);        /* the one-sided progress thread reads the connections */
  proxy_destroy(comm->proxy); /* stops the thread, closes the sockets, before the fifos go */
  comm->proxy = NULL;
  comm->env.progress_ctx = NULL;
  algo_conns_gone(comm); /* what the algorithms keep of the fifos */
  comm_free_conns(comm);
}

/* Releases comm's connections and proxy; comm idle on every rank. */
static void suspend_release(struct xcclComm *comm) {
  int conns;
  uint64_t bytes;
  comm_conn_memory(comm, &conns, &bytes);
  comm->released_algos = comm->algo_connected;
  conns_drop(comm);
  comm->conns_released = 1;
  INFO(INIT, "rank %d of %d: suspended: released %d connection(s), %.1f MiB of slots, and the proxy", comm->rank,
       comm->nranks, conns, (double)bytes / (1 << 20));
}

/* Makes comm's connections again, as init does. On failure releases what
 * it made, so comm is as suspend_release left it. */
static xcclResult_t resume_remake(struct xcclComm *comm) {
  uint64_t t0 = clock_ns();
  xcclResult_t res = comm_connect_rings(comm);
  if (res == xcclSuccess) {
    comm->env.progress_ctx = comm->proxy;
    comm_stats_proxy(comm);
    comm_trace_proxy(comm);
    res = comm_connect_algos(comm);
  }
  if (res == xcclSuccess) res = win_rma_reconnect(comm); /* and their progress thread */
  /* The algorithms that had all their connections: they have them again
   * (others make theirs at first use, as after init). */
  for (int a = 0; res == xcclSuccess && a < ALGO_COUNT; a++)
    if (comm->released_algos & (1u << a)) res = algo_connect(comm, (algo_t)a, NULL);
  if (res != xcclSuccess) {
    conns_drop(comm);
    return res;
  }
  int conns;
  uint64_t bytes;
  comm_conn_memory(comm, &conns, &bytes);
  INFO(INIT, "rank %d of %d: resumed in %.1f ms: %d connection(s), %.1f MiB of slots", comm->rank, comm->nranks,
       (double)(clock_ns() - t0) / 1e6, conns, (double)bytes / (1 << 20));
  return xcclSuccess;
}

xcclResult_t xcclCommSuspend(xcclComm_t comm, int flags) {
  TRY(comm_acquire(comm)); /* a suspended one is refused here, saying so */
  xcclResult_t res = xcclSuccess;
  int mem = flags & XCCL_SUSPEND_MEM;
  int expect = COMM_READY;
  if (flags & ~XCCL_SUSPEND_MEM) {
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommSuspend: flags 0x%x: only XCCL_SUSPEND_MEM (0x%x) is known",
                  (unsigned)flags, XCCL_SUSPEND_MEM);
    goto out;
  }
  if (mem && group_open()) {
    res = err_set(xcclInvalidUsage, LOG_INIT,
                  "xcclCommSuspend: XCCL_SUSPEND_MEM is not allowed between xcclGroupStart and xcclGroupEnd (it waits "
                  "for the other ranks)");
    goto out;
  }
  if (atomic_exchange(&comm->resuming, 1)) {
    res = err_set(xcclInvalidUsage, LOG_INIT, "xcclCommSuspend: another thread suspends or resumes communicator %p",
                  (void *)comm);
    goto out;
  }
  if (!atomic_compare_exchange_strong(&comm->life, &expect, COMM_SUSPENDED)) {
    res = err_set(xcclInvalidUsage, LOG_INIT, "xcclCommSuspend: communicator %p was suspended, finalized or revoked "
                  "meanwhile", (void *)comm);
    goto unlock;
  }
  /* Operations are refused from here; those already issued (device work
   * in flight holds the communicator busy) finish first. */
  if (comm_wait_calls(comm, 1, clock_deadline(comm->timeout_s)) != 0) {
    res = err_set(xcclTimeout, LOG_INIT,
                  "xcclCommSuspend on rank %d: operations were still running after XCCL_TIMEOUT=%g s; the "
                  "communicator is not suspended",
                  comm->rank, comm->timeout_s);
    atomic_store(&comm->life, COMM_READY);
    goto unlock;
  }
  if (mem) {
    res = comm->nranks > 1 ? suspend_agree(comm, flags) : xcclSuccess;
    if (res == xcclSuccess) res = rma_comm_quiesce(comm); /* puts on their way land first */
    /* Released even when they did not agree: some rank may have, and
     * resume then makes every connection again. Unmapping a segment and
     * closing a socket never harm a peer's memory (it keeps its mapping). */
    suspend_release(comm);
    if (res != xcclSuccess) {
      err_prefix(res, "xcclCommSuspend on rank %d of %d (the communicator stays suspended)", comm->rank, comm->nranks);
      goto unlock;
    }
  }
  if (!mem)
    INFO(INIT, "rank %d of %d: communicator %p suspended, its connections kept (no XCCL_SUSPEND_MEM)", comm->rank,
         comm->nranks, (void *)comm);
unlock:
  atomic_store(&comm->resuming, 0);
out:
  comm_release(comm);
  return comm_record(comm, res);
}

xcclResult_t xcclCommResume(xcclComm_t comm) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_SUSPENDED));
  xcclResult_t res = xcclSuccess;
  if (atomic_exchange(&comm->resuming, 1)) {
    res = err_set(xcclInvalidUsage, LOG_INIT, "xcclCommResume: another thread suspends or resumes communicator %p",
                  (void *)comm);
    goto out;
  }
  if (atomic_load(&comm->life) != COMM_SUSPENDED) {
    res = err_set(xcclInvalidUsage, LOG_INIT, "xcclCommResume: communicator %p (rank %d of %d) is not suspended",
                  (void *)comm, comm->rank, comm->nranks);
  } else if (comm_wait_calls(comm, 1, clock_deadline(comm->timeout_s)) != 0) { /* queries, xcclCommMemStats */
    res = err_set(xcclTimeout, LOG_INIT, "xcclCommResume on rank %d: calls on other threads still ran after "
                  "XCCL_TIMEOUT=%g s", comm->rank, comm->timeout_s);
  } else if (comm->conns_released && group_open()) {
    res = err_set(xcclInvalidUsage, LOG_INIT,
                  "xcclCommResume: not allowed between xcclGroupStart and xcclGroupEnd (it waits for the other ranks)");
  } else if (comm->conns_released && comm->nranks > 1 && (res = resume_remake(comm)) != xcclSuccess) {
    err_prefix(res, "xcclCommResume on rank %d of %d (the communicator stays suspended: destroy it)", comm->rank,
               comm->nranks);
  } else {
    comm->conns_released = 0;
    atomic_store(&comm->life, COMM_READY);
  }
  atomic_store(&comm->resuming, 0);
out:
  comm_release(comm);
  return comm_record(comm, res);
}

xcclResult_t xcclCommMemStats(xcclComm_t comm, xcclCommMemStat_t stat, uint64_t *value) {
  unsigned states = COMM_READY | COMM_SUSPENDED | COMM_FINALIZED | COMM_REVOKED;
  TRY(comm_acquire_in(comm, states));
  /* A suspend or resume on another thread changes the connections: it sets
   * resuming, then waits for the calls in progress (this one) to end, so
   * this call reads them before it starts or after it ends, never during. */
  uint64_t deadline = clock_deadline(2 * comm->timeout_s);
  while (atomic_load(&comm->resuming)) {
    comm_release(comm);
    if (clock_expired(deadline))
      return err_set(xcclTimeout, LOG_INIT, "xcclCommMemStats: a suspend or resume of communicator %p did not end "
                     "within 2 x XCCL_TIMEOUT", (void *)comm);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    TRY(comm_acquire_in(comm, states));
  }
  xcclResult_t res = xcclSuccess;
  int conns;
  uint64_t bytes = 0;
  comm_conn_memory(comm, &conns, &bytes);
  if (!value) {
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommMemStats: value is NULL");
  } else {
    switch (stat) {
      case xcclStatMemSuspend:
      case xcclStatMemTotal: /* Persist is 0 */
        *value = bytes;
        break;
      case xcclStatMemSuspended:
        *value = (uint64_t)comm->conns_released;
        break;
      case xcclStatMemPersist:
        *value = 0;
        break;
      default:
        res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommMemStats: stat %d is not an xcclCommMemStat_t",
                      (int)stat);
    }
  }
  comm_release(comm);
  return comm_record(comm, res);
}
