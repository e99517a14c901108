/*
 * dev_coll.cu — the CUDA collective kernel: the ring collectives and
 * send/receive over slot fifos, one thread block per lane (kern_cuda.h).
 *
 * It is the device twin of host_ring.c and host_p2p.c: the same schedule
 * (ring_schedule.h's iterator), the same element operations (reduce_ops.h
 * through dev_reduce_cuda.h), the same protocol (slots.h), so a peer cannot
 * tell a GPU rank from a host one. Per action, thread 0 waits for the
 * receive slot to fill and the send slot to free (polling with acquire
 * loads, the launch's abort and failed words, the fifo's error and a
 * deadline), the whole block moves the data, every thread fences its writes
 * at system scope, and thread 0 publishes with release stores.
 */
#include <stdint.h>

#include "dev_reduce_cuda.h"
#include "kern_cuda.h"
#include "ring_schedule.h"

namespace {

/* Thread 0's view of the block's progress and where to report a failure. */
struct kcu_block {
  kcu_status_t *status;
  const uint32_t *abort, *failed;
  uint64_t last_progress; /* globaltimer at the last action that moved */
  uint64_t timeout_ns;
  int work;
};

/* What thread 0 tells the block after its waits. */
struct kcu_shared {
  int rc;      /* 0, or the failure kind */
  char *rdata; /* the received message's data */
};

enum { KCU_WAIT_DATA, KCU_WAIT_ROOM, KCU_WAIT_DRAIN };

/* Slot `step`'s place in an area laid out like the slots (slot0, or the
 * GPU data area gpu0): its header there. */
__device__ __forceinline__ uint64_t *kcu_hdr_in(const char *area, const kcu_fifo_t *f, uint64_t step) {
  return (uint64_t *)(area + (step % KCU_STEPS) * f->stride);
}

__device__ __forceinline__ uint64_t *kcu_hdr(const kcu_fifo_t *f, uint64_t step) { return kcu_hdr_in(f->slot0, f, step); }

__device__ __forceinline__ char *kcu_data_in(const char *area, const kcu_fifo_t *f, uint64_t step) {
  return (char *)kcu_hdr_in(area, f, step) + KCU_SLOT_HDR;
}

/* Where a send writes message `step`'s data: the GPU data area (CUDA IPC
 * or GPUDirect RDMA) when there is one, else its slot. */
__device__ __forceinline__ char *kcu_data(const kcu_fifo_t *f, uint64_t step) {
  return kcu_data_in(f->gpu0 ? f->gpu0 : f->slot0, f, step);
}

/* Thread 0: where the data of ready message `step` of a receive is (its
 * size's mark says: the GPU data area, or the slot). */
__device__ char *kcu_recv_data(const kcu_fifo_t *f, uint64_t step) {
  uint64_t size = ((volatile uint64_t *)kcu_hdr(f, step))[1];
  return kcu_data_in(f->gpu0 && (size & KCU_SIZE_GPU) ? f->gpu0 : f->slot0, f, step);
}

__device__ size_t kcu_type_size(int type) {
  switch (type) {
#define KCU_SIZE_CASE(TYPE, tname, T, D) \
  case TYPE:                             \
    return sizeof(T);
    XR_FOR_EACH_TYPE(KCU_SIZE_CASE)
#undef KCU_SIZE_CASE
    default:
      return 1;
  }
}

__device__ int kcu_ready(const kcu_fifo_t *f, int what, uint64_t step) {
  if (what == KCU_WAIT_DATA) return kcu_ld_acquire(kcu_hdr(f, step)) > step;
  uint64_t head = kcu_ld_acquire(f->head);
  return what == KCU_WAIT_ROOM ? head + KCU_STEPS > step : head >= step;
}

/* Thread 0: waits until the fifo is ready for `step` (data in the slot, room
 * for it, or everything up to it taken). 0 when it is, else the failure
 * kind, with the status filled in. */
__device__ int kcu_wait(kcu_block *bk, const kcu_fifo_t *f, int what, uint64_t step, int action, uint64_t loop) {
  unsigned polls = 0;
  for (;;) {
    if (kcu_ready(f, what, step)) return 0;
    if (++polls % 16 != 0) continue;
    int kind = KCU_FAIL_NONE, err = (int)kcu_ld_relaxed32(f->error);
    /* The proxy publishes what it moved before it marks a fifo failed: look
     * at the slot once more before believing the error. */
    if (err && !kcu_ready(f, what, step))
      kind = KCU_FAIL_CONN;
    else if (kcu_ld_relaxed32(bk->abort) || kcu_ld_relaxed32(bk->failed))
      kind = KCU_FAIL_ABORT;
    else if (kcu_globaltimer() - bk->last_progress > bk->timeout_ns)
      kind = KCU_FAIL_TIMEOUT;
    if (kind != KCU_FAIL_NONE) {
      kcu_status_t *st = bk->status;
      st->kind = kind;
      st->work = bk->work;
      st->waiting_on_recv = what == KCU_WAIT_DATA;
      st->action = action;
      st->loop = loop;
      st->conn_result = err;
      return kind;
    }
    if (polls > 1024) __nanosleep(200); /* a long wait: leave the bus to the data */
  }
}

/* Thread 0: the producer's publish (slot_fifo_publish): size, then seq and
 * tail with release order. */
__device__ void kcu_publish(const kcu_fifo_t *f, uint64_t step, size_t bytes) {
  uint64_t *hdr = kcu_hdr(f, step);
  ((volatile uint64_t *)hdr)[1] = bytes | (f->gpu0 ? KCU_SIZE_GPU : 0);
  kcu_st_release(hdr, step + 1);
  volatile uint64_t *total = f->bytes; /* one producer: no read-modify-write needed */
  *total = *total + bytes;
  kcu_st_release(f->tail, step + 1);
}

/* Thread 0: a received slot must hold what the schedule expects. */
__device__ int kcu_check_size(kcu_block *bk, const kcu_fifo_t *f, uint64_t step, size_t want, int action,
                              uint64_t loop) {
  uint64_t got = ((volatile uint64_t *)kcu_hdr(f, step))[1] & ~KCU_SIZE_GPU;
  if (got == want) return 0;
  kcu_status_t *st = bk->status;
  st->kind = KCU_FAIL_PROTOCOL;
  st->work = bk->work;
  st->waiting_on_recv = 1;
  st->action = action;
  st->loop = loop;
  st->got_bytes = got;
  st->want_bytes = want;
  return KCU_FAIL_PROTOCOL;
}

/* The block's share of r = recv op in (then / divk when divk != 0), into out
 * and snd: one (type, op) loop picked at run time. Not inlined: the kernel's
 * main loop stays small. */
__device__ __noinline__ void kcu_reduce_action(int type, int redop, char *out, char *snd, const char *rcv,
                                               const char *in, size_t n, int divk) {
  size_t tid = threadIdx.x, nt = blockDim.x;
#define KCU_REDUCE_OP(tname, T, D, opname)                                                                            \
  kcu_reduce_loop<kcu_##tname##_##opname, true, false>((T *)out, (T *)snd, (const T *)rcv, (const T *)in, n, (D)divk, \
                                                       tid, nt);                                                      \
  return;
#define KCU_REDUCE_CASE(TYPE, tname, T, D) \
  case TYPE:                               \
    switch (redop) {                       \
      case xcclProd:                       \
        KCU_REDUCE_OP(tname, T, D, prod)   \
      case xcclMax:                        \
        KCU_REDUCE_OP(tname, T, D, max)    \
      case xcclMin:                        \
        KCU_REDUCE_OP(tname, T, D, min)    \
      default: /* sum, avg */              \
        KCU_REDUCE_OP(tname, T, D, sum)    \
    }
  switch (type) {
    XR_FOR_EACH_TYPE(KCU_REDUCE_CASE)
    default:
      return;
  }
#undef KCU_REDUCE_CASE
#undef KCU_REDUCE_OP
}

/* Ends an action: every thread's writes reach the system before thread 0
 * publishes the send slot and frees the receive slot. */
__device__ void kcu_finish_action(kcu_block *bk, const kcu_fifo_t *send, uint64_t sstep, size_t bytes,
                                  const kcu_fifo_t *recv, uint64_t rstep) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (send) kcu_publish(send, sstep, bytes);
  if (recv) kcu_st_release(recv->head, rstep + 1);
  bk->last_progress = kcu_globaltimer();
}

/* One channel of a ring collective (host_ring.c's ring_step, action after
 * action). Returns 0, or the failure kind (the same on every thread). */
__device__ int kcu_run_ring(kcu_block *bk, const kcu_work_t *w, kcu_shared *sh) {
  size_t esize = kcu_type_size(w->type);
  ring_iter_t it;
  ring_iter_init(&it, (coll_kind_t)w->coll, w->nranks, w->position, w->root, w->count, esize, w->send.slot_size,
                 w->nchannels, w->channel);
  uint64_t ss = w->send_step, rs = w->recv_step;
  int divk = w->redop == xcclAvg ? w->nranks : 0;
  while (!it.done) {
    size_t in_off, out_off, n;
    int flags = ring_iter_action(&it, w->ring, &in_off, &out_off, &n);
    size_t bytes = n * esize;
    if (threadIdx.x == 0) {
      int r = 0;
      if (flags & RING_RECV) {
        r = kcu_wait(bk, &w->recv, KCU_WAIT_DATA, rs, it.action, it.loop);
        if (!r) r = kcu_check_size(bk, &w->recv, rs, bytes, it.action, it.loop);
        if (!r) sh->rdata = kcu_recv_data(&w->recv, rs);
      }
      if (!r && (flags & RING_SEND)) r = kcu_wait(bk, &w->send, KCU_WAIT_ROOM, ss, it.action, it.loop);
      sh->rc = r;
    }
    __syncthreads();
    if (sh->rc) return sh->rc;
    const char *in = (flags & RING_INPUT) ? (const char *)w->sendbuff + in_off * esize : NULL;
    char *out = (flags & RING_OUTPUT) ? (char *)w->recvbuff + out_off * esize : NULL;
    char *snd = (flags & RING_SEND) ? kcu_data(&w->send, ss) : NULL;
    const char *rcv = (flags & RING_RECV) ? sh->rdata : NULL;
    if (flags & RING_REDUCE)
      kcu_reduce_action(w->type, w->redop, out, snd, rcv, in, n, (flags & RING_FINAL) ? divk : 0);
    else if (rcv)
      kcu_copy_loop<true>(out, snd, rcv, bytes, threadIdx.x, blockDim.x);
    else
      kcu_copy_loop<false>(out, snd, in, bytes, threadIdx.x, blockDim.x);
    kcu_finish_action(bk, (flags & RING_SEND) ? &w->send : NULL, ss, bytes, (flags & RING_RECV) ? &w->recv : NULL, rs);
    ss += (flags & RING_SEND) != 0;
    rs += (flags & RING_RECV) != 0;
    ring_iter_next(&it);
  }
  /* Done only when the transport took every send: the caller may destroy
   * the communicator right after. Shared memory holds them already. */
  if (threadIdx.x == 0)
    sh->rc = ss > w->send_step && !w->send.shared ? kcu_wait(bk, &w->send, KCU_WAIT_DRAIN, ss, it.action, it.loop) : 0;
  __syncthreads();
  return sh->rc;
}

/* A send or a receive: the buffer cut into slots (host_p2p.c). */
__device__ int kcu_run_p2p(kcu_block *bk, const kcu_work_t *w, kcu_shared *sh) {
  int is_send = w->kind == KCU_WORK_SEND;
  const kcu_fifo_t *f = is_send ? &w->send : &w->recv;
  uint64_t step = is_send ? w->send_step : w->recv_step;
  uint64_t nsteps = p2p_nsteps(w->bytes, (size_t)f->slot_size);
  for (uint64_t i = 0; i < nsteps; i++, step++) {
    size_t n = p2p_step_bytes(w->bytes, (size_t)f->slot_size, i);
    char *buf = (char *)w->buf + (size_t)i * (size_t)f->slot_size;
    if (threadIdx.x == 0) {
      int r = kcu_wait(bk, f, is_send ? KCU_WAIT_ROOM : KCU_WAIT_DATA, step, (int)i, 0);
      if (!r && !is_send) r = kcu_check_size(bk, f, step, n, (int)i, 0);
      if (!r && !is_send) sh->rdata = kcu_recv_data(f, step);
      sh->rc = r;
    }
    __syncthreads();
    if (sh->rc) return sh->rc;
    if (is_send)
      kcu_copy_loop<false>(NULL, kcu_data(f, step), buf, n, threadIdx.x, blockDim.x);
    else
      kcu_copy_loop<true>(buf, NULL, sh->rdata, n, threadIdx.x, blockDim.x);
    kcu_finish_action(bk, is_send ? f : NULL, step, n, is_send ? NULL : f, step);
  }
  if (threadIdx.x == 0)
    sh->rc = is_send && nsteps && !f->shared ? kcu_wait(bk, f, KCU_WAIT_DRAIN, step, (int)nsteps, 0) : 0;
  __syncthreads();
  return sh->rc;
}

__global__ void __launch_bounds__(KCU_THREADS) kcu_coll_kernel(kcu_launch_t launch) {
  __shared__ kcu_work_t w;
  __shared__ kcu_shared sh;
  int b = blockIdx.x, res = 0;
  kcu_block bk;
  bk.status = launch.status + b;
  bk.abort = launch.abort;
  bk.failed = launch.failed;
  /* Aborted before it started (the host may have let the communicator go):
   * touch nothing of it. */
  if (threadIdx.x == 0) {
    sh.rc = kcu_ld_relaxed32(launch.abort) ? KCU_FAIL_ABORT : 0;
    if (sh.rc) {
      bk.status->kind = KCU_FAIL_ABORT;
      bk.status->work = launch.block_first[b];
    }
  }
  __syncthreads(); /* one answer for the whole block */
  res = sh.rc;
  for (int i = launch.block_first[b]; i < launch.block_first[b + 1] && !res; i++) {
    if (threadIdx.x == 0) w = launch.work[i];
    __syncthreads();
    bk.work = i;
    bk.timeout_ns = w.timeout_ns;
    bk.last_progress = kcu_globaltimer(); /* an item's clock starts when it can run */
    res = w.kind == KCU_WORK_RING ? kcu_run_ring(&bk, &w, &sh) : kcu_run_p2p(&bk, &w, &sh);
    __syncthreads(); /* everyone is done with w before it is overwritten */
  }
  if (threadIdx.x == 0) {
    __threadfence_system(); /* the status before the words that say to read it */
    if (res) kcu_st_release32(launch.failed, 1);
    kcu_st_release32(launch.block_done + b, 1);
  }
}

}  // namespace

extern "C" cudaError_t kcu_coll_launch(const kcu_launch_t *launch, cudaStream_t stream) {
  kcu_coll_kernel<<<launch->nblocks, KCU_THREADS, 0, stream>>>(*launch);
  return cudaGetLastError();
}

extern "C" cudaError_t kcu_coll_max_blocks(int *blocks_p) {
  int dev = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcu_coll_kernel, KCU_THREADS, 0);
  if (e == cudaSuccess) *blocks_p = sms * per_sm;
  return e;
}
