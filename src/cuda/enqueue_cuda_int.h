/*
 * enqueue_cuda_int.h — what the CUDA device path's two halves share (private
 * to src/core): enqueue_cuda.c builds and launches the kernel's work,
 * enqueue_cuda_watch.c is the watcher thread that carries each launch to
 * its end. Built with XCCL_HAVE_CUDA only.
 */
#ifndef XCCL_CORE_ENQUEUE_CUDA_INT_H
#define XCCL_CORE_ENQUEUE_CUDA_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "comm.h"
#include "enqueue_cuda.h"
#include "kern_cuda.h"
#include "lane.h"
#include "slots.h"

/* ---- per-communicator device state ------------------------------------------ */

typedef struct {
  char *host; /* a fifo registered with CUDA as mapped host memory */
  size_t bytes;
  char *dev;
  int owned; /* registered here (else someone else's registration already covered it) */
} cuda_reg_t;

/* A communicator's device state: comm->cuda. */
struct cuda_comm {
  xcclComm_t comm;
  int device; /* the device its launches run on */
  cuda_reg_t *regs;
  int nregs, cap;
  int *ring_host, *ring_dev; /* comm->ring, mapped for the kernel */
  cudaEvent_t last;          /* recorded after its latest launch */
  int launched;
  _Atomic int inflight; /* launches the watcher has not finished */
};

/* ---- launch records: mapped host memory, reused ---------------------------- */

typedef struct cuda_rec {
  struct cuda_rec *next;
  char *host, *dev;
  size_t cap;
} cuda_rec_t;

/* The record starts with the words the host and the blocks raise. */
typedef struct {
  uint32_t abort;
  uint32_t pad0[15];
  uint32_t failed;
  uint32_t pad1[15];
} cuda_rec_hdr_t;

/* Returns a record to the pool (enqueue_cuda.c). */
void cuda_rec_put(cuda_rec_t *r);

/* One device operation of a group, with the stream it was called on. */
typedef struct {
  group_op_t op;
  cudaStream_t stream;
} dev_op_t;

/* ---- a launch in flight, and the watcher ------------------------------------ */

typedef struct cuda_flight {
  struct cuda_flight *next;
  cuda_rec_t *rec;
  cuda_rec_hdr_t *hdr; /* host views into the record */
  volatile uint32_t *block_done;
  kcu_status_t *status;
  const kcu_work_t *work;
  int nblocks;
  dev_op_t *ops; /* copies, for messages */
  int nops;
  int *work_op;        /* per work item (record order): its operation */
  slot_fifo_t **fifos; /* per work item: send and receive fifo (host addresses, NULL where none) */
  int nwork;
  xcclComm_t *comms; /* held busy until the launch ends */
  cuda_comm_t **states;
  int ncomms;
  uint64_t next_liveness;
  cudaEvent_t done_ev;  /* recorded after the kernel: an error there means the kernel died (a sticky CUDA error) */
  cudaError_t cuda_err; /* what that event said, once it said so */
  uint64_t abort_seen;  /* when the watcher first passed an abort on (clock_ns), 0: none */
} cuda_flight_t;

#define CUDA_LIVENESS_NS 100000000ull /* how often the watcher looks for shared-memory peers */
#define CUDA_ABORT_GRACE_S 2.0         /* an aborted launch not ended by then never started */

extern _Atomic int cuda_flights_total; /* launches in flight, all communicators */

/* ---- before a launch (enqueue_cuda_prep.c) ---------------------------------- */

/* Sends to self in ops meet receives from self in order: copies on their streams. */
xcclResult_t cuda_self_copies(const dev_op_t *ops, int n, xcclComm_t comm);
/* Makes the point-to-point connections comm's operations need. */
xcclResult_t cuda_connect_p2p(const dev_op_t *ops, int n, xcclComm_t comm);
/* Moves the CUDA IPC exchange on and settles GPUDirect RDMA for the fifos ops use (comms: the launch's). */
xcclResult_t cuda_settle_fifos(const dev_op_t *ops, int n, xcclComm_t *comms, int ncomms);
/* The lane (thread block) of op on comm number ci: ring channel c, or op's connection. */
kern_lane_t cuda_lane_key(int ci, const group_op_t *op, int c);
/* Refusals due before any step counter moves: XCCL_CHECKSUM, and more lanes
 * than the device holds at once (max_blocks; 0: unknown). */
xcclResult_t cuda_launch_check(const dev_op_t *ops, int n, xcclComm_t *comms, int ncomms, int device, int max_blocks);

/* Starts the watcher thread once per process. */
xcclResult_t cuda_watch_start(void);
/* Hands a launched flight to the watcher, which releases its communicators,
 * reports its failure and frees it when every block is done. */
void cuda_watch_add(cuda_flight_t *f);
/* Frees a flight (its record back to the pool). */
void cuda_flight_free(cuda_flight_t *f);

#endif
