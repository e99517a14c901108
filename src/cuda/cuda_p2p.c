/*
 * cuda_p2p.c — the CUDA p2p transport (cuda_p2p.h): slots in the receiving
 * GPU's memory for device operations over shared-memory connections.
 *
 * Per fifo and side, this process keeps an entry: where its slots are here,
 * and whether it mapped (producer) or allocated (consumer) them. The
 * connection's header in shared memory (shm_conn.h) carries the exchange in
 * dev_state: the consumer offers or says why not, the producer takes or
 * declines; dev_closed tells the consumer at teardown that the producer no
 * longer maps them.
 */
#include "cuda_p2p.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "shm_conn.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(((shm_conn_hdr_t *)0)->dev_handle),
               "a CUDA IPC handle must fit the connection's dev_handle (shm_conn.h)");

#define P2P_FREE_WAIT_S 1.0 /* at comm_free, how long a consumer waits for its producer to let go */

typedef struct p2p_ent {
  struct p2p_ent *next;
  xcclComm_t comm;
  slot_fifo_t *f;
  shm_conn_hdr_t *hdr; /* the connection's, as this process maps it */
  int producer, peer, channel;
  int settled; /* consumer: offered or said why not; producer: took, declined, or met a refusal */
  char *dev;   /* the data area in this process (device-visible); NULL: none */
  int opened;  /* producer: dev came from cudaIpcOpenMemHandle */
  char *owned; /* producer in the consumer's process: the area, handed over when the consumer's comm went first */
  size_t bytes;
} p2p_ent_t;

static pthread_mutex_t ents_lock = PTHREAD_MUTEX_INITIALIZER;
static p2p_ent_t *ents;

static p2p_ent_t *ent_find_locked(const slot_fifo_t *f, int producer) {
  p2p_ent_t *e = ents;
  while (e && !(e->f == f && e->producer == producer)) e = e->next;
  return e;
}

char *cuda_p2p_area(const slot_fifo_t *f, int producer) {
  pthread_mutex_lock(&ents_lock);
  p2p_ent_t *e = ent_find_locked(f, producer);
  char *dev = e ? e->dev : NULL;
  shm_conn_hdr_t *hdr = e ? e->hdr : NULL;
  pthread_mutex_unlock(&ents_lock);
  if (dev && !producer && atomic_load_explicit(&hdr->dev_state, memory_order_acquire) == SHM_DEV_DECLINED)
    dev = NULL; /* the producer never writes there */
  return dev;
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

static int peer_gone(const p2p_ent_t *e) { return slot_fifo_side_gone(e->f, !e->producer); }

/* The consumer's offer: a data area in its GPU's memory, exported.
 * UNOFFERED with a note when it cannot. (Nothing in it is read before a
 * header marks it written, so it needs no clearing.) */
static void offer(p2p_ent_t *e) {
  shm_conn_hdr_t *hdr = e->hdr;
  cudaError_t err = cudaSuccess;
  const char *why = NULL;
  cudaIpcMemHandle_t h;
  char *dev = NULL;
  e->bytes = slot_fifo_area_bytes(e->f);
  if (config_bool(CFG_P2P_DISABLE)) {
    why = "XCCL_P2P_DISABLE=1";
  } else {
    if ((err = cudaMalloc((void **)&dev, e->bytes)) != cudaSuccess) why = "cudaMalloc";
    if (!why && (err = cudaIpcGetMemHandle(&h, dev)) != cudaSuccess) why = "cudaIpcGetMemHandle";
  }
  if (why) {
    if (err != cudaSuccess) cudaGetLastError();
    if (dev) cudaFree(dev);
    snprintf(hdr->dev_note, sizeof(hdr->dev_note), "rank %d did not offer GPU memory: %s%s%s", e->comm->rank, why,
             err != cudaSuccess ? " failed: " : "", err != cudaSuccess ? cudaGetErrorString(err) : "");
    atomic_store_explicit(&hdr->dev_state, SHM_DEV_UNOFFERED, memory_order_release);
    return;
  }
  memcpy(hdr->dev_handle, &h, sizeof(h));
  hdr->dev_addr = (uint64_t)(uintptr_t)dev;
  e->dev = dev;
  atomic_store_explicit(&hdr->dev_state, SHM_DEV_OFFERED, memory_order_release);
}

/* In the consumer's own process its area is used at its address, which a
 * kernel on another GPU reaches only through peer access. */
static cudaError_t same_process_access(const void *dev, const char **why) {
  struct cudaPointerAttributes at;
  int here = 0, can = 0;
  cudaError_t err = cudaPointerGetAttributes(&at, dev);
  if (err == cudaSuccess) err = cudaGetDevice(&here);
  if (err != cudaSuccess || at.device == here) return *why = err != cudaSuccess ? "cudaPointerGetAttributes" : NULL, err;
  if ((err = cudaDeviceCanAccessPeer(&can, here, at.device)) != cudaSuccess) return *why = "cudaDeviceCanAccessPeer", err;
  if (!can) return *why = "peer access between the two GPUs (cudaDeviceCanAccessPeer says no)", cudaSuccess;
  err = cudaDeviceEnablePeerAccess(at.device, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) err = cudaSuccess, cudaGetLastError();
  if (err != cudaSuccess) *why = "cudaDeviceEnablePeerAccess";
  return err;
}

/* The producer's answer to an offer: map the consumer's area (its own
 * address in the same process), or decline with a note. 0 when the offer
 * was withdrawn meanwhile. */
static int answer(p2p_ent_t *e) {
  slot_fifo_t *f = e->f;
  shm_conn_hdr_t *hdr = e->hdr;
  void *dev = NULL;
  cudaError_t err = cudaSuccess;
  const char *why = NULL;
  int32_t offered = SHM_DEV_OFFERED;
  if (!atomic_compare_exchange_strong(&hdr->dev_state, &offered, SHM_DEV_OPENING)) return 0; /* withdrawn */
  if (config_bool(CFG_P2P_DISABLE)) {
    why = "XCCL_P2P_DISABLE=1";
  } else if (slot_fifo_side_is_me(f, 0)) {
    dev = (void *)(uintptr_t)hdr->dev_addr; /* IPC cannot open a handle in its own process */
    err = same_process_access(dev, &why);
  } else {
    cudaIpcMemHandle_t h;
    memcpy(&h, hdr->dev_handle, sizeof(h));
    if ((err = cudaIpcOpenMemHandle(&dev, h, cudaIpcMemLazyEnablePeerAccess)) != cudaSuccess)
      why = "cudaIpcOpenMemHandle";
    else
      e->opened = 1;
  }
  if (why) {
    if (err != cudaSuccess) cudaGetLastError();
    snprintf(hdr->dev_note, sizeof(hdr->dev_note), "rank %d cannot map the peer GPU's memory: %s%s%s", e->comm->rank,
             why, err != cudaSuccess ? " failed: " : "", err != cudaSuccess ? cudaGetErrorString(err) : "");
    atomic_store_explicit(&hdr->dev_state, SHM_DEV_DECLINED, memory_order_release);
    return 1;
  }
  e->dev = dev;
  atomic_store_explicit(&hdr->dev_state, SHM_DEV_TAKEN, memory_order_release);
  return 1;
}

static void log_settled(const p2p_ent_t *e) {
  char desc[256];
  const slot_fifo_t *f = e->f;
  size_t bytes = slot_fifo_area_bytes(f);
  if (e->dev && e->producer)
    INFO(COLL, "rank %d: device operations on the %s write their data into the peer GPU's memory (CUDA IPC, %zu bytes)",
         e->comm->rank, ent_desc(e, desc, sizeof(desc)), bytes);
  else if (e->dev)
    INFO(COLL, "rank %d: offered a GPU data area for the %s (CUDA IPC, %zu bytes)", e->comm->rank,
         ent_desc(e, desc, sizeof(desc)), bytes);
  else
    INFO(COLL, "rank %d: device operations on the %s move their data through mapped host memory: %s", e->comm->rank,
         ent_desc(e, desc, sizeof(desc)), e->hdr->dev_note);
}

xcclResult_t cuda_p2p_settle(const cuda_p2p_need_t *needs, int n) {
  for (int i = 0; i < n; i++) {
    const cuda_p2p_need_t *d = &needs[i];
    shm_conn_hdr_t *hdr = shm_conn_hdr(d->conn);
    if (!hdr) continue; /* not a shared-memory connection: nothing to exchange */
    pthread_mutex_lock(&ents_lock);
    p2p_ent_t *e = ent_find_locked(d->conn->fifo, d->producer);
    if (!e && (e = calloc(1, sizeof(*e)))) {
      *e = (p2p_ent_t){.next = ents, .comm = d->comm, .f = d->conn->fifo, .hdr = hdr, .producer = d->producer,
                       .peer = d->peer, .channel = d->channel};
      ents = e;
    }
    pthread_mutex_unlock(&ents_lock);
    if (!e) return err_set(xcclSystemError, LOG_COLL, "out of memory for GPU slot set-up");
    if (e->settled) continue;
    /* Only this thread, which holds the communicator, moves this entry. */
    if (!e->producer) {
      offer(e);
    } else {
      int s = atomic_load_explicit(&e->hdr->dev_state, memory_order_acquire);
      if (s == SHM_DEV_NONE) continue; /* no offer yet: the slots this time */
      if (s == SHM_DEV_OFFERED && !answer(e)) continue;
    }
    e->settled = 1;
    log_settled(e);
  }
  return xcclSuccess;
}

/* Teardown, consumer side: may the area be freed? Withdraws an offer not
 * taken; otherwise waits (until `deadline`) for the producer to let go. */
static int may_free(p2p_ent_t *e, uint64_t deadline) {
  shm_conn_hdr_t *hdr = e->hdr;
  for (;;) {
    int32_t s = SHM_DEV_OFFERED;
    if (atomic_compare_exchange_strong(&hdr->dev_state, &s, SHM_DEV_UNOFFERED)) return 1;
    if (s == SHM_DEV_DECLINED || s == SHM_DEV_UNOFFERED) return 1;
    if (s == SHM_DEV_TAKEN && atomic_load_explicit(&hdr->dev_closed, memory_order_acquire)) return 1;
    if (peer_gone(e)) return 1; /* its mappings went with it */
    if (clock_ns() > deadline) return 0;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/* A producer in this process that still uses consumer entry e's area takes
 * it over, to free it when its own communicator goes. */
static int hand_over(p2p_ent_t *e) {
  if (!slot_fifo_side_is_me(e->f, 1)) return 0;
  pthread_mutex_lock(&ents_lock);
  p2p_ent_t *p = ent_find_locked(e->f, 1);
  int taken = p && p->dev == e->dev;
  if (taken) p->owned = e->dev;
  pthread_mutex_unlock(&ents_lock);
  return taken;
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
    if (e->dev) atomic_store_explicit(&e->hdr->dev_closed, 1, memory_order_release);
    if (e->owned) cudaFree(e->owned), cudaGetLastError();
  }
  /* An aborting rank does not wait: its peers may be stopped or stuck. */
  int aborting = atomic_load(&comm->abort_flag) != 0;
  double wait_s = aborting ? 0 : comm->timeout_s < P2P_FREE_WAIT_S ? comm->timeout_s : P2P_FREE_WAIT_S;
  uint64_t deadline = clock_ns() + (uint64_t)(wait_s * 1e9);
  for (p2p_ent_t *e = mine; e; e = e->next) {
    if (e->producer || !e->dev || hand_over(e)) continue;
    if (!may_free(e, deadline)) {
      char desc[256];
      INFO(COLL,
           "rank %d: keeping %zu bytes of GPU memory (the data area of the %s) until this process ends: rank %d "
           "still mapped it %g s after this communicator went (it lets go when it destroys or aborts its own), "
           "and CUDA leaves freeing memory another process maps undefined",
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
