/*
 * kern_cuda.h — what the CUDA kernels (dev_coll.cu, dev_reduce.cu) are given,
 * and how the host launches them. Compiles as C (src/cuda/enqueue_cuda.c
 * fills the descriptors) and as CUDA C++ (the kernels read them); only built
 * with XCCL_HAVE_CUDA.
 *
 * A launch runs the device work of one group: one thread block per lane
 * (a ring channel of a communicator, or the connection to one peer in one
 * direction), each block running its lane's work items in issue order, the
 * way host_engine.c runs host items. Blocks never wait for one another, only
 * for peers, and every block of a launch must be resident at once
 * (kcu_coll_max_blocks), since the lanes of different ranks wait on each
 * other.
 *
 * The kernels speak the slot protocol of slots.h over fifos that stay where
 * the host path put them (shared memory, or this process's memory for the
 * proxy), registered with CUDA as mapped host memory: a kcu_fifo_t holds the
 * device-visible addresses of one fifo's counters and slots. Counters are
 * read with acquire and written with release at system scope; slots are read
 * uncached (ld.global.cv). A message's data may instead be in a GPU data
 * area (gpu0 below: CUDA IPC between ranks of one host, GPUDirect RDMA
 * across hosts). Every pointer in these structures is one the
 * device can dereference: device memory, or mapped host memory.
 *
 * Failure: a block that meets a failed fifo, the launch's abort word, a peer
 * that stays silent past timeout_ns, or a slot of the wrong size fills its
 * kcu_status_t, raises `failed` (the launch's other blocks stop at their next
 * wait) and ends. The host turns the status into a sentence
 * (enqueue_cuda.c). Every block finally writes block_done[b] = 1.
 */
#ifndef XCCL_KERNELS_KERN_CUDA_H
#define XCCL_KERNELS_KERN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KCU_THREADS 512 /* threads per block of the collective kernel */
#define KCU_STEPS 8     /* slots per fifo: XCCL_STEPS (slots.h) */
#define KCU_SLOT_HDR 16 /* header bytes before a slot's data: SLOT_HDR_BYTES */

/* One fifo, as the device sees it (see slots.h for the protocol). */
typedef struct {
  uint64_t *tail;  /* slots filled: the producer's release store */
  uint64_t *head;  /* slots freed: the consumer's release store */
  uint64_t *bytes; /* bytes published, for the per-peer counters (the producer's) */
  int *error;      /* xcclResult_t of a failure of the party on the other side, 0 while fine */
  char *slot0;     /* header of slot 0: seq (uint64) then size (uint64), data at +KCU_SLOT_HDR */
  uint64_t stride; /* from one slot's header to the next */
  uint64_t slot_size;
  int shared; /* the consumer maps the slots: a published send is out of the producer's hands */
  int pad;
  /* A data area in GPU memory laid out like the slots: the receiving GPU's,
   * shared through CUDA IPC (the p2p transport, src/cuda/cuda_p2p.h), or
   * this GPU's for GPUDirect RDMA (src/cuda/cuda_gdr.h). A send writes its
   * data there and marks the size with KCU_SIZE_GPU; a receive whose size
   * carries the mark reads its data there. Headers always stay in slot0's
   * slots, so a message without the mark (a host operation's, or one sent
   * before the area was set up) is read from its slot. NULL: none. */
  char *gpu0;
} kcu_fifo_t;

#define KCU_SIZE_GPU (1ull << 63) /* SLOT_SIZE_GPU (slots.h) */

typedef enum { KCU_WORK_RING = 0, KCU_WORK_SEND = 1, KCU_WORK_RECV = 2 } kcu_work_kind_t;

/* One work item: a channel of a ring collective, or a send or a receive. */
typedef struct {
  int kind;    /* kcu_work_kind_t */
  int op;      /* index of the group operation it belongs to (host side, for messages) */
  int channel; /* RING: channel index c of nchannels */
  int type;    /* xcclDataType_t */
  int redop;   /* xcclRedOp_t (RING with a reduction) */
  int coll;    /* coll_kind_t */
  int nranks, position, root, nchannels;
  size_t count; /* the schedule's count (ring_schedule.h) */
  const void *sendbuff;
  void *recvbuff;
  const int *ring;               /* ring position -> rank, device-visible; NULL: identity */
  void *buf;                     /* SEND/RECV: the user's buffer */
  size_t bytes;                  /* SEND/RECV */
  kcu_fifo_t send, recv;         /* RING: both; SEND: send; RECV: recv */
  uint64_t send_step, recv_step; /* the connections' step counters when this item starts */
  uint64_t timeout_ns;           /* longest wait without progress (XCCL_TIMEOUT) */
} kcu_work_t;

/* Why a block stopped: the values of host_engine.h's kern_fail_kind_t. */
enum { KCU_FAIL_NONE = 0, KCU_FAIL_TIMEOUT = 1, KCU_FAIL_CONN = 2, KCU_FAIL_ABORT = 3, KCU_FAIL_PROTOCOL = 4 };

typedef struct {
  int kind;            /* KCU_FAIL_* */
  int work;            /* index of the work item */
  int waiting_on_recv; /* 1: for data from the peer; 0: for room at the peer */
  int action;          /* step of the loop (RING) or message index (SEND/RECV) */
  uint64_t loop;
  uint64_t got_bytes, want_bytes; /* PROTOCOL */
  int conn_result;                /* CONN: the fifo's error */
  int pad;
} kcu_status_t;

/* A launch, passed by value; the arrays are device-visible (mapped host memory). */
typedef struct {
  int nblocks;
  int nwork;
  const int *block_first; /* nblocks + 1 entries: block b runs work[block_first[b] .. block_first[b + 1] - 1] */
  const kcu_work_t *work;
  uint32_t *block_done; /* written 1 by each block when it ends, failed or not */
  kcu_status_t *status; /* one per block */
  uint32_t *abort;      /* raised by the host: every block stops */
  uint32_t *failed;     /* raised by a block that failed: the others stop */
} kcu_launch_t;

/* The host (C) and the kernels (CUDA C++) must lay these out alike: pinned
 * here, checked by both compilers. */
#ifdef __cplusplus
#define KCU_LAYOUT_CHECK(cond, msg) static_assert(cond, msg)
#else
#define KCU_LAYOUT_CHECK(cond, msg) _Static_assert(cond, msg)
#endif
KCU_LAYOUT_CHECK(sizeof(kcu_fifo_t) == 72 && sizeof(kcu_work_t) == 256 && offsetof(kcu_work_t, send) == 88 &&
                     offsetof(kcu_work_t, timeout_ns) == 248 && sizeof(kcu_status_t) == 48 &&
                     sizeof(kcu_launch_t) == 56,
                 "kern_cuda.h's structures changed: update the sizes here after checking both sides agree");

/* Enqueues the collective kernel on stream (launch errors only; what the
 * kernel meets is in the status). */
cudaError_t kcu_coll_launch(const kcu_launch_t *launch, cudaStream_t stream);
/* Blocks of the collective kernel that can be resident at once on the current
 * device. */
cudaError_t kcu_coll_max_blocks(int *blocks_p);

/* dst[i] = a[i] op b[i] for i < n, in device memory, on stream: the local
 * reduction (avg combines as sum). type and op must be valid. dst may equal a
 * or b. */
cudaError_t kcu_reduce_launch(void *dst, const void *a, const void *b, size_t n, int type, int op, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
