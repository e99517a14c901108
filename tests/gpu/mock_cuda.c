/*
 * mock_cuda.c — a stand-in for the CUDA runtime and the collective kernel,
 * so that the device path's host side (src/cuda/enqueue_cuda.c) runs on a
 * machine without a GPU: test_gpu_coll built against it (gpu_mock_* tests)
 * exercises buffer classification, work layout, step accounting, fifo
 * registration and views, stream and event ordering, the watcher, failure
 * reports, abort and deadlines, over real shared memory and sockets between
 * real processes.
 *
 * "Device memory" is host memory this file handed out (cudaMalloc); a
 * stream is a thread that runs its queue in order; an event completes when
 * its stream reaches it. The "kernel" runs each block on a thread of its own
 * and follows dev_coll.cu's protocol through the kcu_fifo_t views it is
 * given (acquire/release on the counters, the abort and failed words, the
 * fifo's error, the deadline), with the host element loops of
 * kern_reduce/kern_divide where the kernel has its block-wide loops. It is a
 * test double: what it shows is that the host side gives the kernel the
 * right work, not how the GPU runs it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "kern_cuda.h"
#include "reduce.h"
#include "ring_schedule.h"
#include "topo.h"

/* ---- memory the "device" owns, and registrations ---------------------------- */

typedef struct {
  char *base;
  size_t bytes;
  int kind; /* 1 device, 2 page-locked host, 3 registered host, 4 another process's device memory (IPC) */
  int fd;   /* device memory: the memfd behind it, which IPC opens through /proc */
} mock_region_t;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mock_region_t regions[4096];
static int nregions;

static int region_find(const void *p) {
  for (int i = 0; i < nregions; i++)
    if ((const char *)p >= regions[i].base && (const char *)p < regions[i].base + regions[i].bytes) return i;
  return -1;
}

static cudaError_t region_add_fd(void *p, size_t bytes, int kind, int fd) {
  pthread_mutex_lock(&mem_lock);
  cudaError_t e = cudaSuccess;
  if (nregions == (int)(sizeof(regions) / sizeof(regions[0])))
    e = cudaErrorMemoryAllocation;
  else
    regions[nregions++] = (mock_region_t){p, bytes ? bytes : 1, kind, fd};
  pthread_mutex_unlock(&mem_lock);
  return e;
}

static cudaError_t region_add(void *p, size_t bytes, int kind) { return region_add_fd(p, bytes, kind, -1); }

/* Removes p's region of that kind; its size and fd in *r. */
static cudaError_t region_take(void *p, int kind, mock_region_t *r) {
  pthread_mutex_lock(&mem_lock);
  int i = region_find(p);
  int ok = i >= 0 && regions[i].base == p && regions[i].kind == kind;
  if (ok) *r = regions[i], regions[i] = regions[--nregions];
  pthread_mutex_unlock(&mem_lock);
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}

static cudaError_t region_remove(void *p, int kind) {
  mock_region_t r;
  return region_take(p, kind, &r);
}

cudaError_t cudaGetDeviceCount(int *count) { return *count = 1, cudaSuccess; }
cudaError_t cudaGetDevice(int *device) { return *device = 0, cudaSuccess; }
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
/* One device: no peers. */
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) { return *can = device == peer, cudaSuccess; }
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) { return cudaErrorInvalidDevice; }
/* The device's bus: by default on no bus a topology shows. With
 * MOCK_CUDA_GPU_FROM_TOPO=1, GPU number XCCL_LOCAL_RANK of XCCL_TOPO_FILE's
 * machine, as a job with one GPU per local rank would see it: the planner's
 * rings (issue 24) then follow that machine's GPUs. */
cudaError_t cudaDeviceGetPCIBusId(char *busid, int len, int device) {
  snprintf(busid, (size_t)len, "0000:ee:00.0");
  const char *from = getenv("MOCK_CUDA_GPU_FROM_TOPO"), *file = getenv("XCCL_TOPO_FILE"),
             *lr = getenv("XCCL_LOCAL_RANK");
  if (device == 0 && from && !strcmp(from, "1") && file && lr) {
    topo_system_t *sys = NULL;
    if (topo_system_load_file(file, &sys) == xcclSuccess) {
      char b[32];
      int g = atoi(lr);
      if (g >= 0 && g < topo_ngpus(sys) && topo_gpu_busid(sys, g, b, sizeof(b))[0])
        snprintf(busid, (size_t)len, "%s", b);
      topo_system_free(sys);
    }
  }
  return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "mock CUDA error"; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorMock"; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  memset(prop, 0, sizeof(*prop));
  snprintf(prop->name, sizeof(prop->name), "mock GPU (tests/gpu/mock_cuda.c)");
  prop->major = 9;
  return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) { return *value = 4, cudaSuccess; }

/* The ib transport asks the driver for dma-buf export (net_ib_reg.c): there is none. */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult *status) {
  if (status) *status = cudaDriverEntryPointSymbolNotFound;
  *fn = NULL;
  return cudaErrorNotSupported;
}

/* Device memory is a memfd mapped shared, so that another process can map
 * it too (cudaIpcOpenMemHandle below). */
cudaError_t cudaMalloc(void **p, size_t bytes) {
  size_t len = bytes ? bytes : 1;
  int fd = memfd_create("mock-cuda", MFD_CLOEXEC);
  if (fd < 0) return cudaErrorMemoryAllocation;
  void *m = ftruncate(fd, (off_t)len) == 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (m == MAP_FAILED) {
    close(fd);
    return cudaErrorMemoryAllocation;
  }
  memset(m, 0xEE, len); /* not zero: a kernel that reads before it writes shows */
  *p = m;
  cudaError_t e = region_add_fd(m, len, 1, fd);
  if (e != cudaSuccess) munmap(m, len), close(fd);
  return e;
}

cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  mock_region_t r;
  cudaError_t e = region_take(p, 1, &r);
  if (e == cudaSuccess) munmap(r.base, r.bytes), close(r.fd);
  return e;
}

/* ---- CUDA IPC: a handle names the exporter's pid and memfd ------------------- */

typedef struct {
  uint32_t magic;
  int32_t pid, fd;
  uint64_t bytes;
} mock_ipc_t;
#define MOCK_IPC_MAGIC 0x1bcc0da7u
_Static_assert(sizeof(mock_ipc_t) <= sizeof(cudaIpcMemHandle_t), "the mock's handle fits CUDA's");

static _Atomic int ipc_exports, ipc_opens;

/* How often this process exported and opened device memory (the test
 * checks that the p2p transport was used, or not). */
void mock_cuda_ipc_counts(int *exports, int *opens) {
  *exports = atomic_load(&ipc_exports);
  *opens = atomic_load(&ipc_opens);
}

/* This process's pid as /proc names it (in a PID namespace of its own it
 * calls itself 1, but /proc, mounted outside, still knows its number). */
static int32_t proc_pid(void) {
  char buf[32] = "";
  ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
  return n > 0 ? (int32_t)atoi(buf) : (int32_t)getpid();
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p) {
  pthread_mutex_lock(&mem_lock);
  int i = region_find(p);
  int ok = i >= 0 && regions[i].kind == 1 && regions[i].base == p;
  mock_ipc_t m = {MOCK_IPC_MAGIC, proc_pid(), ok ? regions[i].fd : -1, ok ? regions[i].bytes : 0};
  pthread_mutex_unlock(&mem_lock);
  if (!ok) return cudaErrorInvalidValue;
  memset(h, 0, sizeof(*h));
  memcpy(h, &m, sizeof(m));
  atomic_fetch_add(&ipc_exports, 1);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags) {
  mock_ipc_t m;
  memcpy(&m, &h, sizeof(m));
  if (m.magic != MOCK_IPC_MAGIC) return cudaErrorInvalidValue;
  if (m.pid == proc_pid())
    return cudaErrorDeviceUninitialized; /* as CUDA (an invalid context): not in the exporting process */
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)m.pid, (int)m.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return cudaErrorMapBufferObjectFailed;
  void *base = mmap(NULL, m.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return cudaErrorMapBufferObjectFailed;
  cudaError_t e = region_add(base, m.bytes, 4);
  if (e != cudaSuccess) return munmap(base, m.bytes), e;
  atomic_fetch_add(&ipc_opens, 1);
  *p = base;
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p) {
  mock_region_t r;
  cudaError_t e = region_take(p, 4, &r);
  if (e == cudaSuccess) munmap(r.base, r.bytes);
  return e;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags) {
  void *m = NULL;
  if (posix_memalign(&m, 4096, bytes ? bytes : 1)) return cudaErrorMemoryAllocation;
  *p = m;
  return region_add(m, bytes, 2);
}

cudaError_t cudaFreeHost(void *p) {
  cudaError_t e = region_remove(p, 2);
  if (e == cudaSuccess) free(p);
  return e;
}

cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned int flags) {
  pthread_mutex_lock(&mem_lock);
  int overlap = 0;
  for (int i = 0; i < nregions && !overlap; i++)
    overlap = (char *)p < regions[i].base + regions[i].bytes && regions[i].base < (char *)p + bytes;
  pthread_mutex_unlock(&mem_lock);
  return overlap ? cudaErrorHostMemoryAlreadyRegistered : region_add(p, bytes, 3);
}

cudaError_t cudaHostUnregister(void *p) { return region_remove(p, 3); }

cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags) {
  pthread_mutex_lock(&mem_lock);
  int i = region_find(host);
  int ok = i >= 0 && (regions[i].kind == 2 || regions[i].kind == 3);
  pthread_mutex_unlock(&mem_lock);
  *dev = ok ? host : NULL;
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at, const void *p) {
  memset(at, 0, sizeof(*at));
  pthread_mutex_lock(&mem_lock);
  int i = region_find(p);
  int kind = i >= 0 ? regions[i].kind : 0;
  pthread_mutex_unlock(&mem_lock);
  at->type = kind == 1 || kind == 4 ? cudaMemoryTypeDevice : kind ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
  at->device = 0;
  at->devicePointer = kind ? (void *)p : NULL;
  at->hostPointer = kind == 2 || kind == 3 ? (void *)p : NULL;
  return cudaSuccess;
}

/* ---- streams and events ------------------------------------------------------ */

struct CUevent_st {
  _Atomic uint64_t reached; /* stamps its stream got through */
  uint64_t stamp;           /* the latest record's */
  struct CUevent_st *next;  /* destroyed events (see cudaEventDestroy) */
};

typedef struct mock_task {
  struct mock_task *next;
  int kind; /* 0 copy, 1 kernel, 2 record event, 3 wait for event, 4 memset, 5 a kernel that faults, 6 hold */
  void *dst;
  const void *src;
  size_t bytes;
  int value;
  kcu_launch_t launch;
  struct CUevent_st *ev;
  uint64_t stamp;
} mock_task_t;

struct CUstream_st {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  mock_task_t *head, *tail;
  int running;
  pthread_t thread;
};

static struct CUstream_st *legacy;
static _Atomic int faulted; /* a kernel faulted (mock_cuda_fault_next_kernel) */
static pthread_once_t legacy_once = PTHREAD_ONCE_INIT;
static struct CUstream_st *all_streams[256];
static _Atomic int nstreams;

static void run_kernel(const kcu_launch_t *L);

static void *stream_main(void *arg) {
  struct CUstream_st *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head) pthread_cond_wait(&s->cv, &s->mu);
    mock_task_t *t = s->head;
    s->running = 1;
    pthread_mutex_unlock(&s->mu);
    switch (t->kind) {
      case 0:
        memmove(t->dst, t->src, t->bytes);
        break;
      case 1:
        run_kernel(&t->launch);
        break;
      case 2:
        atomic_store(&t->ev->reached, t->stamp);
        break;
      case 5: /* the device is stuck in an error: nothing after it on this stream runs */
        for (;;) pause();
      case 6: /* waits on other work (mock_cuda_hold_stream) */
        while (atomic_load((_Atomic int *)t->dst)) usleep(1000);
        break;
      case 3:
        while (atomic_load(&t->ev->reached) < t->stamp) sched_yield();
        break;
      default:
        memset(t->dst, t->value, t->bytes);
    }
    pthread_mutex_lock(&s->mu);
    s->head = t->next;
    if (!s->head) s->tail = NULL;
    s->running = 0;
    free(t);
    pthread_cond_broadcast(&s->cv);
  }
  return NULL;
}

static struct CUstream_st *stream_new(void) {
  struct CUstream_st *s = calloc(1, sizeof(*s));
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  pthread_create(&s->thread, NULL, stream_main, s);
  pthread_detach(s->thread);
  int i = atomic_fetch_add(&nstreams, 1);
  if (i < 256) all_streams[i] = s;
  return s;
}

static void legacy_make(void) { legacy = stream_new(); }

static struct CUstream_st *stream_of(cudaStream_t s) {
  pthread_once(&legacy_once, legacy_make);
  return s ? s : legacy;
}

static void stream_push(cudaStream_t st, mock_task_t *t) {
  struct CUstream_st *s = stream_of(st);
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = t;
  else
    s->head = t;
  s->tail = t;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static mock_task_t *task(int kind) {
  mock_task_t *t = calloc(1, sizeof(*t));
  t->kind = kind;
  return t;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *p, unsigned int flags) { return *p = stream_new(), cudaSuccess; }
cudaError_t cudaStreamCreate(cudaStream_t *p) { return *p = stream_new(), cudaSuccess; }

cudaError_t cudaStreamSynchronize(cudaStream_t st) {
  struct CUstream_st *s = stream_of(st);
  pthread_mutex_lock(&s->mu);
  while (s->head) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t st) {
  struct CUstream_st *s = stream_of(st);
  pthread_mutex_lock(&s->mu);
  int busy = s->head != NULL;
  pthread_mutex_unlock(&s->mu);
  return busy ? cudaErrorNotReady : cudaSuccess;
}

/* Synchronous copies wait for every stream first, like the legacy stream. */
static void device_sync(void) {
  int n = atomic_load(&nstreams);
  for (int i = 0; i < n && i < 256; i++) cudaStreamSynchronize(all_streams[i]);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind) {
  device_sync();
  memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  device_sync();
  memset(p, value, bytes);
  return cudaSuccess;
}

/* A copy (kind 0) or a memset (kind 4), queued on st. */
static cudaError_t push_move(int kind, void *dst, const void *src, int value, size_t bytes, cudaStream_t st) {
  mock_task_t *t = task(kind);
  t->dst = dst;
  t->src = src;
  t->value = value;
  t->bytes = bytes;
  stream_push(st, t);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t st) {
  return push_move(4, p, NULL, value, bytes, st);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t st) {
  return push_move(0, dst, src, 0, bytes, st);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  return *e = calloc(1, sizeof(struct CUevent_st)), cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
/* CUDA lets an event go while a record of it is still queued; the queued
 * task here still writes it, so a destroyed event is kept (a test double's
 * few bytes, on a list so that leak checkers see them held). */
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUevent_st *graveyard;

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  pthread_mutex_lock(&graveyard_lock);
  e->next = graveyard;
  graveyard = e;
  pthread_mutex_unlock(&graveyard_lock);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
  mock_task_t *t = task(2);
  t->ev = e;
  t->stamp = ++e->stamp;
  stream_push(st, t);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (atomic_load(&e->reached) >= e->stamp) return cudaSuccess;
  return atomic_load(&faulted) ? cudaErrorIllegalAddress : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t e, unsigned int flags) {
  mock_task_t *t = task(3);
  t->ev = e;
  t->stamp = e->stamp; /* the latest record at the time of the call */
  stream_push(st, t);
  return cudaSuccess;
}

/* ---- the "kernel" ------------------------------------------------------------ */

cudaError_t kcu_coll_max_blocks(int *blocks_p) { return *blocks_p = 256, cudaSuccess; }

cudaError_t kcu_reduce_launch(void *dst, const void *a, const void *b, size_t n, int type, int op,
                              cudaStream_t stream) {
  return cudaErrorNotSupported;
}

/* The stream waits, as on an event of other work, while *hold is non-zero. */
void mock_cuda_hold_stream(cudaStream_t st, _Atomic int *hold) {
  mock_task_t *t = task(6);
  t->dst = (void *)hold;
  stream_push(st, t);
}

static _Atomic int fault_next;

/* The next collective kernel faults as a GPU kernel can (an illegal
 * address): it never ends, and events not reached by then report the
 * error, as a sticky CUDA error does. */
void mock_cuda_fault_next_kernel(void) { atomic_store(&fault_next, 1); }

cudaError_t kcu_coll_launch(const kcu_launch_t *launch, cudaStream_t st) {
  int fault = atomic_exchange(&fault_next, 0);
  mock_task_t *t = task(fault ? 5 : 1);
  t->launch = *launch;
  stream_push(st, t);
  if (fault) atomic_store(&faulted, 1);
  return cudaSuccess;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ld_acq(const uint64_t *p) {
  return atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_acquire);
}
static void st_rel(uint64_t *p, uint64_t v) { atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_release); }

typedef struct {
  const kcu_launch_t *L;
  int b, work;
  uint64_t last_progress, timeout_ns;
} mock_block_t;

enum { WAIT_DATA, WAIT_ROOM, WAIT_DRAIN };

static uint64_t *hdr_in(const char *area, const kcu_fifo_t *f, uint64_t step) {
  return (uint64_t *)(area + (step % KCU_STEPS) * f->stride);
}

static uint64_t *hdr(const kcu_fifo_t *f, uint64_t step) { return hdr_in(f->slot0, f, step); }

/* dev_coll.cu's kcu_recv_data: where the data of a ready message is. */
static char *recv_data(const kcu_fifo_t *f, uint64_t step) {
  uint64_t size = hdr(f, step)[1];
  return (char *)hdr_in(f->gpu0 && (size & KCU_SIZE_GPU) ? f->gpu0 : f->slot0, f, step) + KCU_SLOT_HDR;
}

/* dev_coll.cu's kcu_data: where a send writes. */
static char *send_data(const kcu_fifo_t *f, uint64_t step) {
  return (char *)hdr_in(f->gpu0 ? f->gpu0 : f->slot0, f, step) + KCU_SLOT_HDR;
}

static int ready(const kcu_fifo_t *f, int what, uint64_t step) {
  if (what == WAIT_DATA) return ld_acq(hdr(f, step)) > step;
  uint64_t head = ld_acq(f->head);
  return what == WAIT_ROOM ? head + KCU_STEPS > step : head >= step;
}

/* dev_coll.cu's kcu_wait. */
static int mock_wait(mock_block_t *bk, const kcu_fifo_t *f, int what, uint64_t step, int action, uint64_t loop) {
  unsigned polls = 0;
  for (;;) {
    if (ready(f, what, step)) return 0;
    int kind = KCU_FAIL_NONE, err = atomic_load((_Atomic int *)f->error);
    if (err && !ready(f, what, step))
      kind = KCU_FAIL_CONN;
    else if (atomic_load((_Atomic uint32_t *)bk->L->abort) || atomic_load((_Atomic uint32_t *)bk->L->failed))
      kind = KCU_FAIL_ABORT;
    else if (now_ns() - bk->last_progress > bk->timeout_ns)
      kind = KCU_FAIL_TIMEOUT;
    if (kind) {
      kcu_status_t *st = &bk->L->status[bk->b];
      st->kind = kind;
      st->work = bk->work;
      st->waiting_on_recv = what == WAIT_DATA;
      st->action = action;
      st->loop = loop;
      st->conn_result = err;
      return kind;
    }
    if (++polls > 64) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

static void publish(const kcu_fifo_t *f, uint64_t step, size_t bytes) {
  uint64_t *h = hdr(f, step);
  h[1] = bytes | (f->gpu0 ? KCU_SIZE_GPU : 0);
  st_rel(h, step + 1);
  *f->bytes += bytes;
  st_rel(f->tail, step + 1);
}

static int check_size(mock_block_t *bk, const kcu_fifo_t *f, uint64_t step, size_t want, int action, uint64_t loop) {
  uint64_t got = hdr(f, step)[1] & ~KCU_SIZE_GPU;
  if (got == want) return 0;
  kcu_status_t *st = &bk->L->status[bk->b];
  st->kind = KCU_FAIL_PROTOCOL;
  st->work = bk->work;
  st->waiting_on_recv = 1;
  st->action = action;
  st->loop = loop;
  st->got_bytes = got;
  st->want_bytes = want;
  return KCU_FAIL_PROTOCOL;
}

static int run_ring(mock_block_t *bk, const kcu_work_t *w) {
  size_t es = xcclTypeSize((xcclDataType_t)w->type);
  ring_iter_t it;
  ring_iter_init(&it, (coll_kind_t)w->coll, w->nranks, w->position, w->root, w->count, es, w->send.slot_size,
                 w->nchannels, w->channel);
  uint64_t ss = w->send_step, rs = w->recv_step;
  int r = 0;
  while (!it.done) {
    size_t in_off, out_off, n;
    int flags = ring_iter_action(&it, w->ring, &in_off, &out_off, &n);
    size_t bytes = n * es;
    if (flags & RING_RECV) {
      if ((r = mock_wait(bk, &w->recv, WAIT_DATA, rs, it.action, it.loop))) return r;
      if ((r = check_size(bk, &w->recv, rs, bytes, it.action, it.loop))) return r;
    }
    if ((flags & RING_SEND) && (r = mock_wait(bk, &w->send, WAIT_ROOM, ss, it.action, it.loop))) return r;
    const char *in = (flags & RING_INPUT) ? (const char *)w->sendbuff + in_off * es : NULL;
    char *out = (flags & RING_OUTPUT) ? (char *)w->recvbuff + out_off * es : NULL;
    char *snd = (flags & RING_SEND) ? send_data(&w->send, ss) : NULL;
    const char *rcv = (flags & RING_RECV) ? recv_data(&w->recv, rs) : NULL;
    if (flags & RING_REDUCE) {
      char *dst = out ? out : snd;
      kern_reduce(dst, rcv, in, n, (xcclDataType_t)w->type, (xcclRedOp_t)w->redop);
      if ((flags & RING_FINAL) && w->redop == xcclAvg) kern_divide(dst, dst, n, (xcclDataType_t)w->type, w->nranks);
      if (out && snd) memcpy(snd, out, bytes);
    } else {
      const char *src = rcv ? rcv : in;
      if (out && out != src) memcpy(out, src, bytes);
      if (snd) memcpy(snd, src, bytes);
    }
    if (flags & RING_SEND) publish(&w->send, ss++, bytes);
    if (flags & RING_RECV) st_rel(w->recv.head, ++rs);
    bk->last_progress = now_ns();
    ring_iter_next(&it);
  }
  return ss > w->send_step && !w->send.shared ? mock_wait(bk, &w->send, WAIT_DRAIN, ss, it.action, it.loop) : 0;
}

static int run_p2p(mock_block_t *bk, const kcu_work_t *w) {
  int is_send = w->kind == KCU_WORK_SEND, r;
  const kcu_fifo_t *f = is_send ? &w->send : &w->recv;
  uint64_t step = is_send ? w->send_step : w->recv_step, nsteps = p2p_nsteps(w->bytes, (size_t)f->slot_size);
  for (uint64_t i = 0; i < nsteps; i++, step++) {
    size_t n = p2p_step_bytes(w->bytes, (size_t)f->slot_size, i);
    char *buf = (char *)w->buf + (size_t)i * (size_t)f->slot_size;
    if ((r = mock_wait(bk, f, is_send ? WAIT_ROOM : WAIT_DATA, step, (int)i, 0))) return r;
    char *slot = is_send ? send_data(f, step) : recv_data(f, step);
    if (!is_send && (r = check_size(bk, f, step, n, (int)i, 0))) return r;
    if (is_send) {
      memcpy(slot, buf, n);
      publish(f, step, n);
    } else {
      memcpy(buf, slot, n);
      st_rel(f->head, step + 1);
    }
    bk->last_progress = now_ns();
  }
  return is_send && nsteps && !f->shared ? mock_wait(bk, f, WAIT_DRAIN, step, (int)nsteps, 0) : 0;
}

static void *block_main(void *arg) {
  mock_block_t *bk = arg;
  const kcu_launch_t *L = bk->L;
  /* dev_coll.cu: aborted before it started, it touches nothing. */
  int res = atomic_load((_Atomic uint32_t *)L->abort) ? KCU_FAIL_ABORT : 0;
  if (res) L->status[bk->b] = (kcu_status_t){.kind = KCU_FAIL_ABORT, .work = L->block_first[bk->b]};
  for (int i = L->block_first[bk->b]; i < L->block_first[bk->b + 1] && !res; i++) {
    const kcu_work_t *w = &L->work[i];
    bk->work = i;
    bk->timeout_ns = w->timeout_ns;
    bk->last_progress = now_ns();
    res = w->kind == KCU_WORK_RING ? run_ring(bk, w) : run_p2p(bk, w);
  }
  if (res) atomic_store_explicit((_Atomic uint32_t *)L->failed, 1, memory_order_release);
  atomic_store_explicit((_Atomic uint32_t *)&L->block_done[bk->b], 1, memory_order_release);
  return NULL;
}

/* All blocks at once, as the GPU runs them; the stream moves on when all end. */
static void run_kernel(const kcu_launch_t *L) {
  pthread_t *t = calloc((size_t)L->nblocks, sizeof(*t));
  mock_block_t *bk = calloc((size_t)L->nblocks, sizeof(*bk));
  for (int b = 0; b < L->nblocks; b++) {
    bk[b] = (mock_block_t){.L = L, .b = b};
    pthread_create(&t[b], NULL, block_main, &bk[b]);
  }
  for (int b = 0; b < L->nblocks; b++) pthread_join(t[b], NULL);
  free(t);
  free(bk);
}
