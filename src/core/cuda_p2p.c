/*
 * cuda_p2p.c — the CUDA p2p transport (cuda_p2p.h): slots in the receiving
 * GPU's memory for device operations over shared-memory connections.
 *
 * Per fifo and side, this process keeps an entry: where its slots are here,
 * and whether it mapped (producer) or allocated (consumer) them. The fifo's
 * dev_state in shared memory carries the exchange (slots.h): the consumer
 * offers or says why not, the producer takes or declines; dev_closed tells
 * the consumer at teardown that the producer no longer maps them.
 */
#include "cuda_p2p.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "clock.h"
#include "config.h"
#include "log.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(((slot_fifo_t *)0)->dev_handle),
               "a CUDA IPC handle must fit the fifo's dev_handle (slots.h)");

#define P2P_FREE_WAIT_S 5.0 /* at comm_free, how long a consumer waits for its producer to let go */

typedef struct p2p_ent {
  struct p2p_ent *next;
  xcclComm_t comm;
  slot_fifo_t *f;
  int producer, peer, channel;
  int settled; /* consumer: offered or said why not; producer: took, declined, or met a refusal */
  char *dev;   /* the slots in this process (device-visible); NULL: the fifo's own */
  int opened;  /* producer: dev came from cudaIpcOpenMemHandle */
  size_t bytes;
} p2p_ent_t;

static pthread_mutex_t ents_lock = PTHREAD_MUTEX_INITIALIZER;
static p2p_ent_t *ents;

static p2p_ent_t *ent_find_locked(const slot_fifo_t *f, int producer) {
  p2p_ent_t *e = ents;
  while (e && !(e->f == f && e->producer == producer)) e = e->next;
  return e;
}

void cuda_p2p_view(const slot_fifo_t *f, int producer, char **slot0_p, char **dev0_p, uint64_t *dev_from_p) {
  pthread_mutex_lock(&ents_lock);
  p2p_ent_t *e = ent_find_locked(f, producer);
  char *dev = e ? e->dev : NULL;
  pthread_mutex_unlock(&ents_lock);
  if (!dev) return;
  if (producer) {
    *slot0_p = dev;
    return;
  }
  int s = atomic_load_explicit(&((slot_fifo_t *)f)->dev_state, memory_order_acquire);
  if (s == SLOT_DEV_DECLINED) return; /* the producer never writes there */
  *dev0_p = dev;
  *dev_from_p = s == SLOT_DEV_TAKEN ? f->dev_from : ~0ull;
}

/* "ring channel 1 to rank 3 (host h pid N at a)" for messages. */
static const char *ent_desc(const p2p_ent_t *e, char *buf, size_t len) {
  char peer[160];
  comm_peer_desc(e->comm, e->peer, peer, sizeof(peer));
  if (e->channel >= 0)
    snprintf(buf, len, "ring channel %d %s %s", e->channel, e->producer ? "to" : "from", peer);
  else
    snprintf(buf, len, "point-to-point connection %s %s", e->producer ? "to" : "from", peer);
  return buf;
}

static int peer_gone(const p2p_ent_t *e) {
  int32_t pid = e->producer ? e->f->consumer_pid : e->f->producer_pid;
  return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

/* A stream per device for zeroing offered slots (made once: offers are few). */
static cudaError_t zero_stream(cudaStream_t *s_p) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static cudaStream_t streams[64];
  int d = 0;
  cudaError_t err = cudaGetDevice(&d);
  if (err != cudaSuccess) return err;
  if (d < 0 || d >= 64) return cudaErrorInvalidDevice;
  pthread_mutex_lock(&mu);
  if (!streams[d]) err = cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking);
  *s_p = streams[d];
  pthread_mutex_unlock(&mu);
  return err;
}

/* The consumer's offer: its GPU's memory for the slots, zeroed (no slot
 * looks published), exported. UNOFFERED with a note when it cannot. */
static void offer(p2p_ent_t *e) {
  slot_fifo_t *f = e->f;
  cudaError_t err = cudaSuccess;
  const char *why = NULL;
  cudaIpcMemHandle_t h;
  cudaStream_t s = NULL;
  char *dev = NULL;
  e->bytes = (size_t)XCCL_STEPS * f->slot_stride;
  if (config_bool(CFG_P2P_DISABLE)) {
    why = "XCCL_P2P_DISABLE=1";
  } else {
    if ((err = cudaMalloc((void **)&dev, e->bytes)) != cudaSuccess) why = "cudaMalloc";
    if (!why && (err = zero_stream(&s)) != cudaSuccess) why = "cudaStreamCreate";
    if (!why && (err = cudaMemsetAsync(dev, 0, e->bytes, s)) != cudaSuccess) why = "cudaMemsetAsync";
    if (!why && (err = cudaStreamSynchronize(s)) != cudaSuccess) why = "cudaStreamSynchronize";
    if (!why && (err = cudaIpcGetMemHandle(&h, dev)) != cudaSuccess) why = "cudaIpcGetMemHandle";
  }
  if (why) {
    if (err != cudaSuccess) cudaGetLastError();
    if (dev) cudaFree(dev);
    snprintf(f->dev_note, sizeof(f->dev_note), "rank %d did not offer GPU memory: %s%s%s", e->comm->rank, why,
             err != cudaSuccess ? " failed: " : "", err != cudaSuccess ? cudaGetErrorString(err) : "");
    atomic_store_explicit(&f->dev_state, SLOT_DEV_UNOFFERED, memory_order_release);
    return;
  }
  memcpy(f->dev_handle, &h, sizeof(h));
  f->dev_addr = (uint64_t)(uintptr_t)dev;
  e->dev = dev;
  atomic_store_explicit(&f->dev_state, SLOT_DEV_OFFERED, memory_order_release);
}

/* The producer's answer to an offer: map the consumer's slots (the same
 * address in the same process) and write there from `step` on, or decline
 * with a note. */
static void answer(p2p_ent_t *e, uint64_t step) {
  slot_fifo_t *f = e->f;
  void *dev = NULL;
  cudaError_t err = cudaSuccess;
  const char *why = NULL;
  int32_t offered = SLOT_DEV_OFFERED;
  if (!atomic_compare_exchange_strong(&f->dev_state, &offered, SLOT_DEV_OPENING)) return; /* withdrawn */
  if (config_bool(CFG_P2P_DISABLE)) {
    why = "XCCL_P2P_DISABLE=1";
  } else if (f->consumer_pid == getpid()) {
    dev = (void *)(uintptr_t)f->dev_addr; /* IPC cannot open a handle in its own process */
  } else {
    cudaIpcMemHandle_t h;
    memcpy(&h, f->dev_handle, sizeof(h));
    if ((err = cudaIpcOpenMemHandle(&dev, h, cudaIpcMemLazyEnablePeerAccess)) != cudaSuccess)
      why = "cudaIpcOpenMemHandle";
    else
      e->opened = 1;
  }
  if (why) {
    if (err != cudaSuccess) cudaGetLastError();
    snprintf(f->dev_note, sizeof(f->dev_note), "rank %d cannot map the peer GPU's memory: %s%s%s", e->comm->rank,
             why, err != cudaSuccess ? " failed: " : "", err != cudaSuccess ? cudaGetErrorString(err) : "");
    atomic_store_explicit(&f->dev_state, SLOT_DEV_DECLINED, memory_order_release);
    return;
  }
  e->dev = dev;
  f->dev_from = step;
  atomic_store_explicit(&f->dev_state, SLOT_DEV_TAKEN, memory_order_release);
}

static void log_settled(const p2p_ent_t *e, uint64_t step) {
  char desc[256];
  const slot_fifo_t *f = e->f;
  size_t bytes = (size_t)XCCL_STEPS * f->slot_stride;
  if (e->dev && e->producer)
    INFO(COLL, "rank %d: device operations on the %s write the peer GPU's slots from step %llu on (CUDA IPC, %zu bytes)",
         e->comm->rank, ent_desc(e, desc, sizeof(desc)), (unsigned long long)step, bytes);
  else if (e->dev)
    INFO(COLL, "rank %d: offered GPU slots for the %s (CUDA IPC, %zu bytes)", e->comm->rank,
         ent_desc(e, desc, sizeof(desc)), bytes);
  else
    INFO(COLL, "rank %d: device operations on the %s use the slots in mapped host memory: %s", e->comm->rank,
         ent_desc(e, desc, sizeof(desc)), f->dev_note);
}

xcclResult_t cuda_p2p_settle(const cuda_p2p_need_t *needs, int n) {
  for (int i = 0; i < n; i++) {
    const cuda_p2p_need_t *d = &needs[i];
    pthread_mutex_lock(&ents_lock);
    p2p_ent_t *e = ent_find_locked(d->f, d->producer);
    if (!e && (e = calloc(1, sizeof(*e)))) {
      *e = (p2p_ent_t){.next = ents, .comm = d->comm, .f = d->f, .producer = d->producer, .peer = d->peer,
                       .channel = d->channel};
      ents = e;
    }
    pthread_mutex_unlock(&ents_lock);
    if (!e) return err_set(xcclSystemError, LOG_COLL, "out of memory for GPU slot set-up");
    if (e->settled) continue;
    /* Only this thread, which holds the communicator, moves this entry. */
    if (!e->producer) {
      offer(e);
    } else {
      int s = atomic_load_explicit(&e->f->dev_state, memory_order_acquire);
      if (s == SLOT_DEV_NONE) continue; /* no offer yet: the fifo's own slots this time */
      if (s == SLOT_DEV_OFFERED) answer(e, d->step);
    }
    e->settled = 1;
    log_settled(e, d->step);
  }
  return xcclSuccess;
}

/* Teardown, consumer side: may the slots be freed? Withdraws an offer not
 * taken; otherwise waits (until `deadline`) for the producer to let go. */
static int may_free(p2p_ent_t *e, uint64_t deadline) {
  slot_fifo_t *f = e->f;
  for (;;) {
    int32_t s = SLOT_DEV_OFFERED;
    if (atomic_compare_exchange_strong(&f->dev_state, &s, SLOT_DEV_UNOFFERED)) return 1;
    if (s == SLOT_DEV_DECLINED || s == SLOT_DEV_UNOFFERED) return 1;
    if (s == SLOT_DEV_TAKEN && atomic_load_explicit(&f->dev_closed, memory_order_acquire)) return 1;
    if (peer_gone(e)) return 1; /* its mappings went with it */
    if (clock_ns() > deadline) return 0;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

void cuda_p2p_comm_free(xcclComm_t comm) {
  p2p_ent_t *mine = NULL;
  pthread_mutex_lock(&ents_lock);
  for (p2p_ent_t **pp = &ents; *pp;) {
    p2p_ent_t *e = *pp;
    if (e->comm != comm) {
      pp = &e->next;
      continue;
    }
    *pp = e->next;
    e->next = mine;
    mine = e;
  }
  pthread_mutex_unlock(&ents_lock);
  /* Producers let go first, so that two ranks that consume from each other
   * never wait on each other here. */
  for (p2p_ent_t *e = mine; e; e = e->next) {
    if (!e->producer) continue;
    if (e->opened) cudaIpcCloseMemHandle(e->dev), cudaGetLastError();
    if (e->dev) atomic_store_explicit(&e->f->dev_closed, 1, memory_order_release);
  }
  double wait_s = comm->timeout_s < P2P_FREE_WAIT_S ? comm->timeout_s : P2P_FREE_WAIT_S;
  uint64_t deadline = clock_ns() + (uint64_t)(wait_s * 1e9);
  for (p2p_ent_t *e = mine; e; e = e->next) {
    if (e->producer || !e->dev) continue;
    if (!may_free(e, deadline)) {
      char desc[256];
      WARN(COLL,
           "rank %d: keeping %zu bytes of GPU memory (the slots of the %s): rank %d still maps them after %g s, and "
           "freeing memory another process maps is undefined in CUDA; destroy the communicator on every rank",
           comm->rank, e->bytes, ent_desc(e, desc, sizeof(desc)), e->peer, wait_s);
      continue;
    }
    cudaFree(e->dev);
    cudaGetLastError();
  }
  while (mine) {
    p2p_ent_t *next = mine->next;
    free(mine);
    mine = next;
  }
}
