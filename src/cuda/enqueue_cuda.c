/*
 * enqueue_cuda.c — the CUDA device path (enqueue_cuda.h): where a call's
 * buffers live, the device operations of a group, and building and
 * launching the collective kernel's work; what a launch settles first is in
 * enqueue_cuda_prep.c, the watcher thread that carries each launch to its
 * end in enqueue_cuda_watch.c.
 *
 * Lifecycle of a launch: the calling thread registers the communicator's
 * fifos with CUDA (once per fifo), lays the work out in a mapped host record
 * (one thread block per lane, work in issue order), advances the
 * connections' step counters past what the kernel will use, enqueues the
 * kernel and hands the launch to the watcher, which holds the communicator
 * busy until every block has said it is done. While it waits the watcher
 * drives the proxy (the kernel cannot), passes the abort flag on, and marks a
 * shared-memory fifo failed when the process on its other side is gone.
 */
#include "enqueue_cuda.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cuda_gdr.h"
#include "cuda_p2p.h"
#include "enqueue_cuda_int.h"
#include "kern_cuda.h"
#include "log.h"
#include "reduce.h"
#include "ring_schedule.h"
#include "slots.h"

_Static_assert(KCU_STEPS == XCCL_STEPS && KCU_SLOT_HDR == SLOT_HDR_BYTES && sizeof(slot_hdr_t) == KCU_SLOT_HDR &&
                   offsetof(slot_hdr_t, seq) == 0 && offsetof(slot_hdr_t, size) == 8,
               "the kernels' view of a slot (kern_cuda.h) no longer matches slots.h");
_Static_assert(KCU_SIZE_GPU == SLOT_SIZE_GPU, "kern_cuda.h's GPU-data mark is slots.h's");
_Static_assert(KCU_FAIL_TIMEOUT == (int)KERN_FAIL_TIMEOUT && KCU_FAIL_CONN == (int)KERN_FAIL_CONN &&
                   KCU_FAIL_ABORT == (int)KERN_FAIL_ABORT && KCU_FAIL_PROTOCOL == (int)KERN_FAIL_PROTOCOL,
               "kern_cuda.h's failure kinds are host_engine.h's");

/* ---- is CUDA usable in this process ---------------------------------------- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int cuda_usable;
static char cuda_why[192];

static void cuda_probe(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(cuda_why, sizeof(cuda_why), "%s, %s", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError(); /* not the application's error to find later */
  } else if (n == 0) {
    snprintf(cuda_why, sizeof(cuda_why), "the CUDA driver reports no device");
  } else {
    cuda_usable = 1;
  }
}

/* The first and the last page of [p, p + bytes) are mapped here. */
static int host_mapped(const void *p, size_t bytes) {
  /* A training loop passes the same few buffers every call, and two mincore
   * calls per buffer would double a small all-reduce's latency: the last
   * ranges found mapped, per thread, answer without a system call. */
  enum { SEEN = 8 };
  static _Thread_local struct { uintptr_t first, last; } seen[SEEN];
  static _Thread_local unsigned next_seen;
  static uintptr_t pg;
  if (!pg) pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t)p & ~(pg - 1), last = ((uintptr_t)p + (bytes ? bytes - 1 : 0)) & ~(pg - 1);
  for (int i = 0; i < SEEN; i++)
    if (seen[i].first && seen[i].first <= first && last <= seen[i].last) return 1;
  unsigned char v;
  if (mincore((void *)first, pg, &v) != 0 || mincore((void *)last, pg, &v) != 0) return 0;
  seen[next_seen % SEEN].first = first;
  seen[next_seen % SEEN].last = last;
  next_seen++;
  return 1;
}

typedef enum { MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE } mem_kind_t;

/* What CUDA knows of p; *dev_p: the address the device uses (NULL: none). */
static xcclResult_t mem_kind(const char *fn, const char *what, const void *p, size_t bytes, int cur_dev,
                             mem_kind_t *kind_p, void **dev_p) {
  struct cudaPointerAttributes at;
  cudaError_t e = cudaPointerGetAttributes(&at, p);
  *dev_p = NULL;
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (host_mapped(p, bytes)) return *kind_p = MEM_PAGEABLE, xcclSuccess;
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: %s %p is neither host memory nor memory CUDA knows (%s)", fn,
                   what, p, cudaGetErrorString(e));
  }
  switch (at.type) {
    case cudaMemoryTypeDevice:
      if (at.device != cur_dev)
        return err_set(xcclInvalidArgument, LOG_COLL,
                       "%s: %s %p is memory of CUDA device %d, but the current device is %d: call cudaSetDevice(%d) "
                       "before the call, or pass memory of device %d",
                       fn, what, p, at.device, cur_dev, at.device, cur_dev);
      *dev_p = at.devicePointer ? at.devicePointer : (void *)p;
      return *kind_p = MEM_DEVICE, xcclSuccess;
    case cudaMemoryTypeManaged:
      *dev_p = (void *)p;
      return *kind_p = MEM_DEVICE, xcclSuccess;
    case cudaMemoryTypeHost: /* page-locked: the device reaches it when it is mapped */
      *dev_p = at.devicePointer;
      return *kind_p = at.devicePointer ? MEM_PINNED : MEM_PAGEABLE, xcclSuccess;
    default:
      return *kind_p = MEM_PAGEABLE, xcclSuccess;
  }
}

xcclResult_t enqueue_cuda_where(const char *fn, const cuda_buf_t *bufs, int n, void *stream, int *on_device_p) {
  pthread_once(&probe_once, cuda_probe);
  if (!cuda_usable) {
    if (stream)
      return err_set(xcclInvalidArgument, LOG_COLL,
                     "%s: stream %p given, but this process has no CUDA support (%s): device buffers need a CUDA "
                     "driver and device; host buffers take stream NULL",
                     fn, stream, cuda_why);
    for (int i = 0; i < n; i++)
      if (bufs[i].bytes && !host_mapped(bufs[i].ptr, bufs[i].bytes))
        return err_set(xcclInvalidArgument, LOG_COLL,
                       "%s: %s %p is not host memory, and this process has no CUDA support (%s): device buffers "
                       "need a CUDA driver and device",
                       fn, bufs[i].what, bufs[i].ptr, cuda_why);
    *on_device_p = 0;
    return xcclSuccess;
  }
  int cur = 0;
  cudaError_t e = cudaGetDevice(&cur);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return err_set(xcclUnhandledCudaError, LOG_COLL, "%s: cudaGetDevice failed: %s", fn, cudaGetErrorString(e));
  }
  const cuda_buf_t *dev = NULL, *pageable = NULL;
  int pinned = 0;
  for (int i = 0; i < n; i++) {
    if (!bufs[i].bytes) continue;
    mem_kind_t k = MEM_PAGEABLE;
    void *d = NULL;
    TRY(mem_kind(fn, bufs[i].what, bufs[i].ptr, bufs[i].bytes, cur, &k, &d));
    if (k == MEM_DEVICE && !dev) dev = &bufs[i];
    if (k == MEM_PAGEABLE && !pageable) pageable = &bufs[i];
    pinned += k == MEM_PINNED;
  }
  if (dev && pageable)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: %s %p is device memory but %s %p is pageable host memory: one call takes device memory (or "
                   "page-locked host memory) throughout, or host memory throughout",
                   fn, dev->what, dev->ptr, pageable->what, pageable->ptr);
  if (!dev && stream && pageable)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: stream %p given, but %s %p is pageable host memory: host buffers take stream NULL (the call "
                   "returns when the result is in place); device buffers take a stream",
                   fn, stream, pageable->what, pageable->ptr);
  *on_device_p = dev != NULL || (stream != NULL && pinned > 0);
  return xcclSuccess;
}

/* The address the device uses for p (page-locked host memory may have its own). */
static void *dev_addr(const void *p) {
  if (!p) return NULL;
  struct cudaPointerAttributes at;
  if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
    cudaGetLastError();
    return (void *)p;
  }
  return at.devicePointer ? at.devicePointer : (void *)p;
}

/* ---- per-communicator device state ------------------------------------------ */

/* comm->cuda: made on the communicator's first launch, read by the threads
 * that call on it (the watcher has its own pointers, in each flight). */
static cuda_comm_t *state_find(xcclComm_t comm) { return atomic_load_explicit(&comm->cuda, memory_order_acquire); }

/* comm's state, made on its first launch (from the calling thread, which
 * holds comm). */
static xcclResult_t state_get(xcclComm_t comm, int device, cuda_comm_t **st_p) {
  cuda_comm_t *s = state_find(comm);
  if (s) {
    if (s->device != device)
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "rank %d: this communicator runs its device work on CUDA device %d, but the current device is %d: "
                     "call cudaSetDevice(%d) before using it",
                     comm->rank, s->device, device, s->device);
    *st_p = s;
    return xcclSuccess;
  }
  if (!(s = calloc(1, sizeof(*s)))) return err_set(xcclSystemError, LOG_COLL, "out of memory for device state");
  s->comm = comm;
  s->device = device;
  size_t rb = sizeof(int) * (size_t)comm->nranks * (size_t)(comm->nchannels > 0 ? comm->nchannels : 1);
  cudaError_t e = cudaHostAlloc((void **)&s->ring_host, rb, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer((void **)&s->ring_dev, s->ring_host, 0);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->last, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (s->ring_host) cudaFreeHost(s->ring_host);
    free(s);
    return err_set(xcclUnhandledCudaError, LOG_COLL,
                   "rank %d: cannot set up device state (%zu bytes of mapped host "
                   "memory and an event): %s",
                   comm->rank, rb, cudaGetErrorString(e));
  }
  if (comm->ring) memcpy(s->ring_host, comm->ring, rb); /* every channel's ring, one after another */
  atomic_store_explicit(&comm->cuda, s, memory_order_release);
  *st_p = s;
  return xcclSuccess;
}

void enqueue_cuda_comm_free(xcclComm_t comm) {
  cuda_comm_t *s = atomic_exchange(&comm->cuda, NULL);
  if (!s) return;
  cuda_p2p_comm_free(comm);
  cuda_gdr_comm_free(comm);
  for (int i = 0; i < s->nregs; i++)
    if (s->regs[i].owned) cudaHostUnregister(s->regs[i].host);
  cudaFreeHost(s->ring_host);
  cudaEventDestroy(s->last);
  cudaGetLastError();
  free(s->regs);
  free(s);
}

/* The device's address of [p, p + bytes), registering it on first use. */
static xcclResult_t state_map(cuda_comm_t *s, void *p, size_t bytes, char **dev_p) {
  char *c = p;
  for (int i = 0; i < s->nregs; i++) {
    cuda_reg_t *r = &s->regs[i];
    if (c >= r->host && c + bytes <= r->host + r->bytes) return *dev_p = r->dev + (c - r->host), xcclSuccess;
  }
  if (s->nregs == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    cuda_reg_t *n = realloc(s->regs, sizeof(*n) * (size_t)cap);
    if (!n) return err_set(xcclSystemError, LOG_COLL, "out of memory for fifo registrations");
    s->regs = n;
    s->cap = cap;
  }
  cuda_reg_t r = {.host = c, .bytes = bytes, .owned = 1};
  cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (e == cudaErrorHostMemoryAlreadyRegistered) {
    /* Someone registered a page of it already: usable only if that covers
     * all of it, in one piece. */
    struct cudaPointerAttributes a0, a1;
    cudaGetLastError();
    r.owned = 0;
    e = cudaPointerGetAttributes(&a0, p);
    if (e == cudaSuccess) e = cudaPointerGetAttributes(&a1, c + bytes - 1);
    if (e == cudaSuccess && (a0.type != cudaMemoryTypeHost || a1.type != cudaMemoryTypeHost || !a0.devicePointer ||
                             (char *)a1.devicePointer - (char *)a0.devicePointer != (ptrdiff_t)(bytes - 1)))
      e = cudaErrorHostMemoryAlreadyRegistered;
  }
  if (e == cudaSuccess) e = cudaHostGetDevicePointer((void **)&r.dev, p, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (r.owned) cudaHostUnregister(p);
    return err_set(xcclUnhandledCudaError, LOG_COLL,
                   "rank %d: cannot map the slot fifo at %p (%zu bytes) for the GPU (cudaHostRegister): %s",
                   s->comm->rank, p, bytes, cudaGetErrorString(e));
  }
  s->regs[s->nregs++] = r;
  *dev_p = r.dev;
  return xcclSuccess;
}

/* The device's view of conn's fifo (kern_cuda.h), for its producer or its consumer. */
static xcclResult_t fifo_view(cuda_comm_t *s, const transport_conn_t *conn, int producer, kcu_fifo_t *v) {
  slot_fifo_t *f = conn->fifo;
  char *dev = NULL, *h = (char *)f;
  TRY(state_map(s, f, slot_fifo_bytes(f->slot_size), &dev));
  v->tail = (uint64_t *)(dev + ((char *)&f->tail - h));
  v->head = (uint64_t *)(dev + ((char *)&f->head - h));
  v->bytes = (uint64_t *)(dev + ((char *)&f->bytes - h));
  v->error = (int *)(dev + ((char *)&f->error - h));
  v->slot0 = dev + f->data_off;
  /* The GPU data area: CUDA IPC (cuda_p2p.h) or GPUDirect RDMA (cuda_gdr.h). */
  v->gpu0 = f->shared ? cuda_p2p_area(f, producer) : cuda_gdr_area(conn);
  v->stride = f->slot_stride;
  v->slot_size = f->slot_size;
  v->shared = f->shared;
  return xcclSuccess;
}

/* ---- launch records: mapped host memory, reused ---------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_rec_t *pool;

static cuda_rec_t *rec_get(size_t bytes, cudaError_t *e) {
  pthread_mutex_lock(&pool_lock);
  cuda_rec_t **pp = &pool, *r;
  while (*pp && (*pp)->cap < bytes) pp = &(*pp)->next;
  if ((r = *pp)) *pp = r->next;
  pthread_mutex_unlock(&pool_lock);
  if (r) return r;
  if (!(r = calloc(1, sizeof(*r)))) return *e = cudaErrorMemoryAllocation, NULL;
  r->cap = (bytes + 65535) / 65536 * 65536;
  *e = cudaHostAlloc((void **)&r->host, r->cap, cudaHostAllocMapped | cudaHostAllocPortable);
  if (*e == cudaSuccess) *e = cudaHostGetDevicePointer((void **)&r->dev, r->host, 0);
  if (*e != cudaSuccess) {
    cudaGetLastError();
    if (r->host) cudaFreeHost(r->host);
    free(r);
    return NULL;
  }
  return r;
}

void cuda_rec_put(cuda_rec_t *r) {
  pthread_mutex_lock(&pool_lock);
  r->next = pool;
  pool = r;
  pthread_mutex_unlock(&pool_lock);
}

/* ---- the group's device operations ------------------------------------------ */

static _Thread_local dev_op_t *dq; /* queued since xcclGroupStart */
static _Thread_local int dq_n, dq_cap;
static _Thread_local xcclComm_t *hq; /* communicators the open group has host operations on */
static _Thread_local int hq_n, hq_cap;

static int grow(void **arr, int *cap, int n, size_t size) {
  if (n < *cap) return 1;
  int c = *cap ? 2 * *cap : 16;
  void *a = realloc(*arr, size * (size_t)c);
  if (!a) return 0;
  *arr = a;
  *cap = c;
  return 1;
}

static xcclResult_t cuda_launch(const dev_op_t *ops, int n);

xcclResult_t enqueue_cuda_submit(const group_op_t *op, void *stream) {
  dev_op_t d = {.op = *op, .stream = (cudaStream_t)stream};
  d.op.coll.sendbuff = dev_addr(op->coll.sendbuff);
  d.op.coll.recvbuff = dev_addr(op->coll.recvbuff);
  d.op.buf = dev_addr(op->buf);
  d.op.coll.algo = ALGO_RING; /* the device runs the ring only */
  if (op->comm->nranks == 1 && op->kind == GROUP_COLL) { /* what the collective leaves in recvbuff is sendbuff (or nothing) */
    const coll_args_t *a = &d.op.coll;
    size_t bytes = a->recv_elems * a->esize;
    cudaError_t e = cudaSuccess;
    if (bytes && a->sendbuff && a->sendbuff != a->recvbuff)
      e = cudaMemcpyAsync(a->recvbuff, a->sendbuff, bytes, cudaMemcpyDefault, d.stream);
    if (e == cudaSuccess) return xcclSuccess;
    cudaGetLastError();
    return err_set(xcclUnhandledCudaError, LOG_COLL, "%s #%llu on rank 0 of 1: the copy on stream %p failed: %s",
                   a->name, (unsigned long long)op->seq, stream, cudaGetErrorString(e));
  }
  if (!group_open()) return cuda_launch(&d, 1);
  for (int i = 0; i < hq_n; i++)
    if (hq[i] == op->comm)
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "%s: device buffers in a group that holds host-buffer operations on the same communicator: a "
                     "group runs either host or device operations on one communicator",
                     op->coll.name);
  if (!grow((void **)&dq, &dq_cap, dq_n, sizeof(*dq)))
    return err_set(xcclSystemError, LOG_COLL, "out of memory for a group of %d device operations", dq_n + 1);
  dq[dq_n++] = d;
  return xcclSuccess;
}

int enqueue_cuda_group_mark(void) { return dq_n; }

void enqueue_cuda_group_rollback(int mark) {
  if (mark >= 0 && mark <= dq_n) dq_n = mark;
}

xcclResult_t enqueue_cuda_group_end(void) {
  int n = dq_n;
  dq_n = hq_n = 0;
  return n ? cuda_launch(dq, n) : xcclSuccess;
}

xcclResult_t enqueue_cuda_host_fence(xcclComm_t comm, const char *fn) {
  if (group_open()) {
    for (int i = 0; i < dq_n; i++)
      if (dq[i].op.comm == comm)
        return err_set(xcclInvalidUsage, LOG_COLL,
                       "%s: host buffers in a group that holds device operations on the same communicator: a group "
                       "runs either host or device operations on one communicator",
                       fn);
    int seen = 0;
    for (int i = 0; i < hq_n && !seen; i++) seen = hq[i] == comm;
    if (!seen && !grow((void **)&hq, &hq_cap, hq_n, sizeof(*hq)))
      return err_set(xcclSystemError, LOG_COLL, "out of memory for a group");
    if (!seen) hq[hq_n++] = comm;
  }
  if (atomic_load_explicit(&cuda_flights_total, memory_order_acquire) == 0) return xcclSuccess;
  cuda_comm_t *s = state_find(comm);
  if (!s) return xcclSuccess;
  /* The kernel may not even have started (its stream waits on other work):
   * a deadline, as for every wait. */
  uint64_t deadline = clock_deadline(comm->timeout_s);
  while (atomic_load(&s->inflight) > 0) {
    if (atomic_load(&comm->abort_flag))
      return err_set(xcclRemoteError, LOG_COLL, "%s on rank %d: the communicator was aborted", fn, comm->rank);
    if (clock_expired(deadline))
      return err_set(xcclTimeout, LOG_COLL,
                     "%s on rank %d: device work enqueued earlier on this communicator has not finished within "
                     "XCCL_TIMEOUT=%g s, and host operations run after it: is its stream waiting on something?",
                     fn, comm->rank, comm->timeout_s);
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  return xcclSuccess;
}

/* ---- the watcher -------------------------------------------------------------- */

/* ---- building and launching ------------------------------------------------- */

/* A work item before it is placed in the record. */
typedef struct {
  kcu_work_t w;
  kern_lane_t key; /* lane (lane.h) */
  int op, block;
  slot_fifo_t *send, *recv;
} cuda_item_t;

/* Appends the work items of operation i (ops[i] on comm number ci). */
static xcclResult_t add_items(const dev_op_t *d, int i, int ci, cuda_comm_t *st, cuda_item_t *items, int *nitems) {
  const group_op_t *op = &d->op;
  xcclComm_t comm = op->comm;
  kcu_work_t base = {
      .op = i, .type = op->coll.type, .redop = op->coll.op, .timeout_ns = (uint64_t)(comm->timeout_s * 1e9)};
  if (op->kind == GROUP_COLL) {
    const coll_args_t *a = &op->coll;
    int nch = a->nchannels; /* what every rank computes (op.h) */
    for (int c = 0; c < nch; c++) {
      comm_channel_t *ch = &comm->channels[c];
      cuda_item_t *it = &items[(*nitems)++];
      memset(it, 0, sizeof(*it));
      it->w = base;
      it->w.kind = KCU_WORK_RING;
      it->w.channel = c;
      it->w.coll = a->coll;
      it->w.nranks = comm->nranks;
      it->w.position = comm_ring_pos(comm, c, comm->rank);
      it->w.root = comm_ring_pos(comm, c, a->root < 0 ? 0 : a->root);
      it->w.nchannels = nch;
      it->w.count = a->count;
      it->w.sendbuff = a->sendbuff;
      it->w.recvbuff = a->recvbuff;
      it->w.ring = st->ring_dev + (size_t)c * (size_t)comm->nranks; /* channel c's ring */
      TRY(fifo_view(st, &ch->send_conn, 1, &it->w.send));
      TRY(fifo_view(st, &ch->recv_conn, 0, &it->w.recv));
      it->key = cuda_lane_key(ci, op, c);
      it->op = i;
      it->send = ch->send;
      it->recv = ch->recv;
      /* The kernel starts where the counters are and moves them as far as
       * the schedule says: count it here the same way. */
      ring_iter_t iter;
      uint64_t sends, recvs;
      ring_iter_init(&iter, a->coll, comm->nranks, it->w.position, it->w.root, a->count, a->esize, ch->send->slot_size,
                     nch, c);
      ring_iter_count_steps(&iter, &sends, &recvs);
      it->w.send_step = ch->send_step;
      it->w.recv_step = ch->recv_step;
      cuda_gdr_recv_steps(&ch->recv_conn, ch->recv_step, ch->recv_step + recvs);
      ch->send_step += sends;
      ch->recv_step += recvs;
    }
    return xcclSuccess;
  }
  if (op->peer == comm->rank) return xcclSuccess; /* a copy, made already */
  int send = op->kind == GROUP_SEND;
  comm_p2p_t *p = send ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
  cuda_item_t *it = &items[(*nitems)++];
  memset(it, 0, sizeof(*it));
  it->w = base;
  it->w.kind = send ? KCU_WORK_SEND : KCU_WORK_RECV;
  it->w.buf = op->buf;
  it->w.bytes = op->bytes;
  TRY(fifo_view(st, &p->conn, send, send ? &it->w.send : &it->w.recv));
  *(send ? &it->w.send_step : &it->w.recv_step) = p->step;
  uint64_t nsteps = p2p_nsteps(op->bytes, p->fifo->slot_size);
  if (!send) cuda_gdr_recv_steps(&p->conn, p->step, p->step + nsteps);
  p->step += nsteps;
  it->key = cuda_lane_key(ci, op, 0);
  it->op = i;
  *(send ? &it->send : &it->recv) = p->fifo;
  return xcclSuccess;
}

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

/* Fills the record for items[0..nitems) over nblocks, and the flight's
 * views of it. */
static void lay_out(cuda_flight_t *f, cuda_rec_t *rec, cuda_item_t *items, int nitems, int nblocks, kcu_launch_t *L) {
  size_t o_first = align64(sizeof(cuda_rec_hdr_t)), o_done = o_first + align64(sizeof(int) * (size_t)(nblocks + 1));
  size_t o_status = o_done + align64(sizeof(uint32_t) * (size_t)nblocks);
  size_t o_work = o_status + align64(sizeof(kcu_status_t) * (size_t)nblocks);
  memset(rec->host, 0, o_work);
  int *first = (int *)(rec->host + o_first);
  kcu_work_t *work = (kcu_work_t *)(rec->host + o_work);
  /* Blocks in order, each block's items in issue order. */
  int k = 0;
  for (int b = 0; b < nblocks; b++) {
    first[b] = k;
    for (int i = 0; i < nitems; i++) {
      if (items[i].block != b) continue;
      f->work_op[k] = items[i].op;
      f->fifos[2 * k] = items[i].send;
      f->fifos[2 * k + 1] = items[i].recv;
      work[k++] = items[i].w;
    }
  }
  first[nblocks] = k;
  f->hdr = (cuda_rec_hdr_t *)rec->host;
  f->block_done = (volatile uint32_t *)(rec->host + o_done);
  f->status = (kcu_status_t *)(rec->host + o_status);
  f->work = work;
  f->nblocks = nblocks;
  f->nwork = nitems;
  *L = (kcu_launch_t){.nblocks = nblocks,
                      .nwork = nitems,
                      .block_first = (const int *)(rec->dev + o_first),
                      .work = (const kcu_work_t *)(rec->dev + o_work),
                      .block_done = (uint32_t *)(rec->dev + o_done),
                      .status = (kcu_status_t *)(rec->dev + o_status),
                      .abort = (uint32_t *)(rec->dev + offsetof(cuda_rec_hdr_t, abort)),
                      .failed = (uint32_t *)(rec->dev + offsetof(cuda_rec_hdr_t, failed))};
}

static size_t record_bytes(int nblocks, int nitems) {
  return align64(sizeof(cuda_rec_hdr_t)) + align64(sizeof(int) * (size_t)(nblocks + 1)) +
         align64(sizeof(uint32_t) * (size_t)nblocks) + align64(sizeof(kcu_status_t) * (size_t)nblocks) +
         sizeof(kcu_work_t) * (size_t)nitems;
}

/* The stream of the launch waits for the other streams of the group and for
 * the communicators' previous launches; afterwards the other streams wait
 * for it. */
static cudaError_t streams_join(const dev_op_t *ops, int n, cuda_flight_t *f, int after) {
  static _Thread_local cudaEvent_t ev;
  cudaStream_t s0 = ops[0].stream;
  cudaError_t e = ev ? cudaSuccess : cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (after && e == cudaSuccess) e = cudaEventRecord(ev, s0);
  for (int i = 1; i < n && e == cudaSuccess; i++) {
    int seen = ops[i].stream == s0;
    for (int j = 1; j < i && !seen; j++) seen = ops[j].stream == ops[i].stream;
    if (seen) continue;
    if (!after) e = cudaEventRecord(ev, ops[i].stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(after ? ops[i].stream : s0, ev, 0);
  }
  for (int c = 0; c < f->ncomms && e == cudaSuccess; c++) {
    cuda_comm_t *st = f->states[c];
    if (after)
      e = cudaEventRecord(st->last, s0), st->launched = 1;
    else if (st->launched)
      e = cudaStreamWaitEvent(s0, st->last, 0);
  }
  return e;
}

static xcclResult_t cuda_launch(const dev_op_t *ops, int n) {
  xcclResult_t res = xcclSuccess;
  cuda_flight_t *f = calloc(1, sizeof(*f));
  cuda_item_t *items = NULL;
  int held = 0, counted = 0, stepped = 0, device = 0;
  if (!f || !(f->comms = calloc((size_t)n, sizeof(*f->comms))) ||
      !(f->states = calloc((size_t)n, sizeof(*f->states))) || !(f->ops = malloc(sizeof(*ops) * (size_t)n))) {
    res = err_set(xcclSystemError, LOG_COLL, "out of memory for a device launch of %d operation(s)", n);
    goto out;
  }
  memcpy(f->ops, ops, sizeof(*ops) * (size_t)n);
  f->nops = n;
  for (int i = 0; i < n; i++) { /* each communicator once, held until the launch ends */
    int seen = 0;
    for (int c = 0; c < f->ncomms && !seen; c++) seen = f->comms[c] == ops[i].op.comm;
    if (seen) continue;
    TRY_GOTO(comm_acquire(ops[i].op.comm), out);
    f->comms[f->ncomms++] = ops[i].op.comm;
    held = f->ncomms;
  }
  TRY_GOTO(cuda_watch_start(), out);
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) {
    cudaGetLastError();
    res = err_set(xcclUnhandledCudaError, LOG_COLL, "%s: cudaGetDevice failed: %s", ops[0].op.coll.name,
                  cudaGetErrorString(e));
    goto out;
  }
  int nitems = 0;
  for (int c = 0; c < f->ncomms; c++) {
    xcclComm_t comm = f->comms[c];
    if (comm->failed) {
      res = err_set(xcclInvalidUsage, LOG_COLL,
                    "%s: the communicator failed in an earlier operation (%s); destroy or abort it and make a new one",
                    ops[0].op.coll.name, comm->fail_msg);
      goto out;
    }
    TRY_GOTO(state_get(comm, device, &f->states[c]), out);
    TRY_GOTO(cuda_self_copies(ops, n, comm), out);
    TRY_GOTO(cuda_connect_p2p(ops, n, comm), out);
  }
  static int max_blocks[64]; /* per device, 0 until asked */
  if (device < 64 && !max_blocks[device] && kcu_coll_max_blocks(&max_blocks[device]) != cudaSuccess) {
    cudaGetLastError();
    max_blocks[device] = 0;
  }
  TRY_GOTO(cuda_launch_check(ops, n, f->comms, f->ncomms, device, device < 64 ? max_blocks[device] : 0), out);
  TRY_GOTO(cuda_settle_fifos(ops, n, f->comms, f->ncomms), out);
  for (int i = 0; i < n; i++) nitems += ops[i].op.kind == GROUP_COLL ? ops[i].op.comm->nchannels : 1; /* at most */
  if (!(items = malloc(sizeof(*items) * (size_t)nitems))) {
    res = err_set(xcclSystemError, LOG_COLL, "out of memory for a device launch of %d operation(s)", n);
    goto out;
  }
  nitems = 0;
  stepped = 1; /* from here on the counters move: a failure leaves the communicators out of step */
  for (int i = 0; i < n; i++) {
    int ci = 0;
    while (f->comms[ci] != ops[i].op.comm) ci++;
    TRY_GOTO(add_items(&ops[i], i, ci, f->states[ci], items, &nitems), out);
  }
  if (nitems == 0) goto out; /* only copies to self */
  /* One block per lane, numbered in order of first use. */
  int nblocks = 0;
  for (int i = 0; i < nitems; i++) {
    items[i].block = -1;
    for (int j = 0; j < i && items[i].block < 0; j++)
      if (items[j].key == items[i].key) items[i].block = items[j].block;
    if (items[i].block < 0) items[i].block = nblocks++;
  }
  if (!(f->work_op = malloc(sizeof(int) * (size_t)nitems)) ||
      !(f->fifos = calloc(2 * (size_t)nitems, sizeof(*f->fifos)))) {
    res = err_set(xcclSystemError, LOG_COLL, "out of memory for a device launch of %d operation(s)", n);
    goto out;
  }
  f->rec = rec_get(record_bytes(nblocks, nitems), &e);
  if (!f->rec) {
    res = err_set(xcclUnhandledCudaError, LOG_COLL,
                  "%s: cannot allocate %zu bytes of mapped host memory for a launch: %s", ops[0].op.coll.name,
                  record_bytes(nblocks, nitems), cudaGetErrorString(e));
    goto out;
  }
  kcu_launch_t L;
  lay_out(f, f->rec, items, nitems, nblocks, &L);
  f->next_liveness = clock_ns() + CUDA_LIVENESS_NS;
  e = cudaEventCreateWithFlags(&f->done_ev, cudaEventDisableTiming);
  if (e == cudaSuccess) e = streams_join(ops, n, f, 0);
  if (e == cudaSuccess) e = kcu_coll_launch(&L, ops[0].stream);
  if (e == cudaSuccess) e = cudaEventRecord(f->done_ev, ops[0].stream);
  if (e == cudaSuccess) e = streams_join(ops, n, f, 1);
  if (e != cudaSuccess) {
    cudaGetLastError();
    res = err_set(xcclUnhandledCudaError, LOG_COLL,
                  "%s on rank %d: launching the collective kernel (%d blocks) failed: %s", ops[0].op.coll.name,
                  ops[0].op.comm->rank, nblocks, cudaGetErrorString(e));
    goto out;
  }
  for (int c = 0; c < f->ncomms; c++) {
    proxy_op_begin(f->comms[c]->proxy);
    atomic_fetch_add(&f->states[c]->inflight, 1);
  }
  atomic_fetch_add(&cuda_flights_total, 1);
  counted = 1;
  cuda_watch_add(f); /* the watcher releases the communicators */
  f = NULL;
out:
  free(items);
  if (f && !counted) {
    for (int c = 0; c < held; c++) {
      xcclComm_t comm = f->comms[c];
      if (res != xcclSuccess && stepped) { /* the peers go on without this rank: tell them now */
        comm_fail(comm, res, err_last());
      }
      comm_release(comm);
    }
    cuda_flight_free(f);
  }
  for (int i = 0; i < n && res != xcclSuccess; i++) comm_record(ops[i].op.comm, res);
  return res;
}
