/*
 * comm_handle.c — the communicator's handle: the registry of live handles,
 * acquire and release, recording a call's error on it, failing it, and the
 * helpers every layer above asks of a communicator (peer descriptions, the
 * host hash, the CUDA device). The bottom of src/core: it calls nothing of
 * the layers above (src/core/layers.txt); observers hear of errors and
 * failures through comm->obs (comm.h).
 */
#include "comm.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "connect.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h"
#endif
#include "log.h"
#include "registry.h"

/* ---- Registry: a handle is used only while it is live ---- */

#define COMM_DEAD_MEMORY 64

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xcclComm **live;
static int nlive, live_cap;
/* The last COMM_DEAD_MEMORY freed communicators keep their struct (only the
 * struct: its members are released) so that malloc cannot hand the same
 * address to a new communicator while an old handle may still be in use:
 * a stale handle is then always refused with the reason. */
static struct {
  struct xcclComm *ptr;
  const char *how;
} dead[COMM_DEAD_MEMORY];
static int dead_next;

/* Bumped by every removal (under registry_lock, seq_cst), so that a thread
 * may trust its last lookup while nothing has left the registry since
 * (comm_acquire_in's fast path). */
static _Atomic uint64_t registry_gen;
static _Thread_local struct {
  const struct xcclComm *comm;
  uint64_t gen;
} registry_seen;

static int registry_find(const struct xcclComm *comm) {
  for (int i = 0; i < nlive; i++)
    if (live[i] == comm) return i;
  return -1;
}

xcclResult_t registry_add(struct xcclComm *comm) {
  pthread_mutex_lock(&registry_lock);
  if (nlive == live_cap) {
    int cap = live_cap ? 2 * live_cap : 16;
    struct xcclComm **l = realloc(live, sizeof(*l) * (size_t)cap);
    if (!l) {
      pthread_mutex_unlock(&registry_lock);
      return err_set(xcclSystemError, LOG_INIT, "out of memory for the communicator registry");
    }
    live = l;
    live_cap = cap;
  }
  live[nlive++] = comm;
  pthread_mutex_unlock(&registry_lock);
  return xcclSuccess;
}

/* Takes comm out of the registry so that no new call can start on it. */
int registry_remove(struct xcclComm *comm) {
  pthread_mutex_lock(&registry_lock);
  int i = registry_find(comm);
  if (i >= 0) live[i] = live[--nlive], atomic_fetch_add(&registry_gen, 1);
  pthread_mutex_unlock(&registry_lock);
  return i >= 0;
}

/* The struct of a freed communicator goes into the dead ring; the one it
 * pushes out is released for real. */
void registry_bury(struct xcclComm *comm, const char *how) {
  pthread_mutex_lock(&registry_lock);
  struct xcclComm *evicted = dead[dead_next].ptr;
  dead[dead_next].ptr = comm;
  dead[dead_next].how = how;
  dead_next = (dead_next + 1) % COMM_DEAD_MEMORY;
  pthread_mutex_unlock(&registry_lock);
  free(evicted);
}

static xcclResult_t registry_refuse(const void *comm) {
  const char *how = NULL;
  for (int i = 0; i < COMM_DEAD_MEMORY; i++)
    if (comm && dead[i].ptr == comm) how = dead[i].how;
  if (!comm) return err_set(xcclInvalidArgument, LOG_COLL, "comm is NULL");
  if (how) return err_set(xcclInvalidArgument, LOG_COLL, "communicator %p was %s; it cannot be used again", comm, how);
  return err_set(xcclInvalidArgument, LOG_COLL, "%p is not a live communicator (never created, or freed)", comm);
}

/* Why a live handle in state `life` (comm_life_t) is refused by comm_acquire_in. */
static xcclResult_t life_refuse(struct xcclComm *comm, int life) {
  const char *n = comm->name[0] ? " " : "", *name = comm->name;
  switch (life) {
    case COMM_INITIALIZING:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "communicator %p%s%s (rank %d of %d) is still initializing; poll xcclCommGetAsyncError until it "
                     "returns something other than xcclInProgress before using it",
                     (void *)comm, n, name, comm->rank, comm->nranks);
    case COMM_INIT_FAILED:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "communicator %p%s%s (rank %d of %d): its init failed (xcclCommGetAsyncError returns %s); destroy "
                     "or abort it",
                     (void *)comm, n, name, comm->rank, comm->nranks, xcclGetErrorString(comm->init_result));
    case COMM_FINALIZED:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "communicator %p%s%s (rank %d of %d) was finalized (xcclCommFinalize): it takes no further "
                     "operation; destroy it",
                     (void *)comm, n, name, comm->rank, comm->nranks);
    case COMM_REVOKED:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "communicator %p%s%s (rank %d of %d) was revoked (xcclCommRevoke): it takes no further "
                     "operation; shrink, split or destroy it",
                     (void *)comm, n, name, comm->rank, comm->nranks);
    case COMM_SUSPENDED:
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "communicator %p%s%s (rank %d of %d) is suspended (xcclCommSuspend): call xcclCommResume first",
                     (void *)comm, n, name, comm->rank, comm->nranks);
    default:
      return err_set(xcclInvalidUsage, LOG_COLL, "communicator %p is not ready for this call", (void *)comm);
  }
}

/* Without the lock, for a handle this thread found live and nothing has
 * left the registry since: busy goes up, and then the generation is looked
 * at again. A removal bumps the generation and then waits for busy to drop
 * (comm_wait_idle); both sides store before they load, seq_cst, so either
 * the remover sees this call busy and waits for it, or this call sees the
 * generation move and takes the lock. The struct outlives its removal in
 * the dead ring, so the increment never lands in freed memory. */
static int acquire_fast(struct xcclComm *comm, unsigned states) {
  uint64_t g = atomic_load(&registry_gen);
  if (!comm || registry_seen.comm != comm || registry_seen.gen != g) return 0;
  atomic_fetch_add(&comm->busy, 1);
  if (atomic_load(&registry_gen) == g && ((unsigned)atomic_load_explicit(&comm->life, memory_order_acquire) & states))
    return 1;
  atomic_fetch_sub(&comm->busy, 1);
  return 0;
}

xcclResult_t comm_acquire_in(xcclComm_t comm, unsigned states) {
  if (acquire_fast(comm, states)) return xcclSuccess;
  pthread_mutex_lock(&registry_lock);
  int found = comm && registry_find(comm) >= 0;
  int life = found ? atomic_load_explicit(&comm->life, memory_order_acquire) : 0;
  int ok = found && ((unsigned)life & states);
  if (ok) atomic_fetch_add(&comm->busy, 1);
  if (found) registry_seen.comm = comm, registry_seen.gen = atomic_load(&registry_gen);
  xcclResult_t r = ok ? xcclSuccess : found ? life_refuse(comm, life) : registry_refuse(comm);
  /* The refusal is comm's last error too (xcclGetLastError(comm)), as
   * comm_record would make it; an init's own error stays. */
  if (!ok && found && life != COMM_INITIALIZING && life != COMM_INIT_FAILED) {
    pthread_mutex_lock(&comm->err_lock);
    snprintf(comm->last_error, sizeof(comm->last_error), "%s", err_last());
    pthread_mutex_unlock(&comm->err_lock);
  }
  pthread_mutex_unlock(&registry_lock);
  return r;
}

xcclResult_t comm_acquire(xcclComm_t comm) { return comm_acquire_in(comm, COMM_READY); }

void comm_release(xcclComm_t comm) { atomic_fetch_sub(&comm->busy, 1); }

int comm_acquire_quiet(xcclComm_t comm) {
  pthread_mutex_lock(&registry_lock);
  int found = comm && registry_find(comm) >= 0;
  if (found) atomic_fetch_add(&comm->busy, 1);
  pthread_mutex_unlock(&registry_lock);
  return found;
}

xcclResult_t registry_refuse_locked(const void *comm) {
  pthread_mutex_lock(&registry_lock);
  xcclResult_t r = registry_refuse(comm);
  pthread_mutex_unlock(&registry_lock);
  return r;
}

xcclResult_t comm_record(xcclComm_t comm, xcclResult_t res) {
  if (res == xcclSuccess || res == xcclInProgress) return res;
  pthread_mutex_lock(&registry_lock);
  int life = comm && registry_find(comm) >= 0 ? atomic_load(&comm->life) : 0;
  /* While a background init runs, and after it failed, comm's last error is
   * the init's own (a refused call's is the thread's). */
  if (life && life != COMM_INITIALIZING && life != COMM_INIT_FAILED) {
    /* An operation that xcclCommRevoke stopped: say so, whatever stopped it. */
    if (atomic_load(&comm->revoked) && !strstr(err_last(), "revoked"))
      err_prefix(res, "communicator %p (rank %d of %d) was revoked (xcclCommRevoke)", (void *)comm, comm->rank,
                 comm->nranks);
    pthread_mutex_lock(&comm->err_lock);
    snprintf(comm->last_error, sizeof(comm->last_error), "%s", err_last());
    pthread_mutex_unlock(&comm->err_lock);
    comm->obs->error(comm);
  }
  pthread_mutex_unlock(&registry_lock);
  return res;
}

/* ---- Helpers ---- */

const char *comm_peer_desc(const struct xcclComm *comm, int peer, char *buf, size_t len) {
  if (comm->peers && peer >= 0 && peer < comm->nranks) {
    /* The bootstrap address tells nodes apart where host names do not (containers, namespaces). */
    char at[SOCK_ADDR_STRLEN + 4] = "";
    const sock_addr_t *a = comm->bs ? bootstrap_addr(comm->bs, peer) : NULL;
    if (a && a->sa.sa_family != AF_UNSPEC) {
      char s[SOCK_ADDR_STRLEN];
      sock_addr_str(a, s, sizeof(s));
      char *port = strrchr(s, ':');
      if (port && port != s) *port = '\0';
      snprintf(at, sizeof(at), " at %s", s);
    }
    snprintf(buf, len, "rank %d (host %s pid %u%s)", peer, comm->peers[peer].host, comm->peers[peer].pid, at);
  } else
    snprintf(buf, len, "rank %d", peer);
  return buf;
}

uint64_t comm_host_hash(char *host_p, size_t len) {
  char host[COMM_HOST_BYTES] = "", ns[128] = "";
  gethostname(host, sizeof(host) - 1);
  snprintf(host_p, len, "%s", host);
  /* Two network namespaces are two hosts to xccl (as they are on a test
   * rig); XCCL_HOSTID replaces both. */
  if (*config_str(CFG_HOSTID)) {
    snprintf(ns, sizeof(ns), "hostid:%s", config_str(CFG_HOSTID));
    host[0] = '\0';
  } else {
    ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
    if (n > 0) ns[n] = '\0';
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = host; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  for (const char *p = ns; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h;
}

/* A background init (comm.c's comm_start) ends before the handle goes. */
void comm_init_join(struct xcclComm *comm) {
  pthread_mutex_lock(&comm->init_lock);
  if (comm->init_running) {
    pthread_join(comm->init_thread, NULL);
    comm->init_running = 0;
  }
  pthread_mutex_unlock(&comm->init_lock);
}

/* ---- The CUDA device, failure ---- */

int comm_cuda_built(void) {
#ifdef XCCL_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

/* The device bound at the first device call, else the one init made current
 * (xcclCommInitAll, or a split of such a comm), else the calling thread's:
 * init does not ask CUDA itself, so that a process that never uses a device
 * never starts the CUDA runtime (a fork()ed child could not use it). */
int comm_cuda_device(const struct xcclComm *comm) {
#ifdef XCCL_HAVE_CUDA
  int bound = comm_cuda_bound_device(comm);
  return bound >= 0 ? bound : comm->cuda_dev >= 0 ? comm->cuda_dev : comm_cuda_current_device();
#else
  (void)comm;
  return -1;
#endif
}

void comm_fail(struct xcclComm *comm, xcclResult_t res, const char *msg) {
  if (!atomic_exchange(&comm->fail_claimed, 1)) { /* the first failure is the one to report */
    snprintf(comm->fail_msg, sizeof(comm->fail_msg), "%s", msg);
    atomic_store_explicit(&comm->failed, res, memory_order_release);
  }
  proxy_shutdown_connections(comm->proxy);
  char why[SLOT_ERROR_MAX];
  snprintf(why, sizeof(why), "rank %d gave up after a failure of its own", comm->rank);
  comm_break_shm(comm, why);
  comm->obs->failed(comm, res); /* the metrics and the timeline show it now, before anyone destroys it */
}

