/*
 * host_ring.h — host twins of the ring collectives: the calling thread runs
 * the schedule over slot fifos (see slots.h), polling with a deadline.
 */
#ifndef XCCL_KERNELS_HOST_RING_H
#define XCCL_KERNELS_HOST_RING_H

#include <stdatomic.h>
#include <stdint.h>

#include "ring_schedule.h"
#include "slots.h"
#include "xccl.h"

/* One channel's connections: send goes to the next rank of the ring, recv
 * comes from the previous one. The step counters persist across operations
 * (the connection is one long stream) and are advanced here. */
typedef struct {
  slot_fifo_t *send;
  slot_fifo_t *recv;
  uint64_t *send_step;
  uint64_t *recv_step;
} ring_channel_t;

typedef struct {
  ring_coll_t coll;
  const void *sendbuff; /* may be NULL where the schedule never reads it */
  void *recvbuff;       /* may be NULL where the schedule never writes it */
  /* Elements per rank block for all-gather (sendcount) and reduce-scatter
   * (recvcount); the whole buffer for the others. */
  size_t count;
  xcclDataType_t type;
  xcclRedOp_t op;
  int nranks;   /* ring size k, at least 2 */
  int position; /* this rank's place in the ring */
  int root;     /* ring position of the root (broadcast, reduce) */
  int nchannels;
  ring_channel_t *channels;
  double timeout_s;              /* longest a channel may go without progress */
  const _Atomic int *abort_flag; /* non-zero: stop now */
  int spin_count;                /* idle polls before sleeping on the bell */
  slot_bell_t *bell;             /* rung by whoever fills recv or frees send slots */
  /* Called after this thread published slots, and before it sleeps: moves
   * data for the fifos on this thread if it can. Returns 1 if anything moved. */
  int (*progress)(void *ctx);
  /* When set, called instead of sleeping on the bell: waits for the
   * transport (at most timeout_us) and moves data. Returns 1 if anything moved. */
  int (*wait)(void *ctx, int timeout_us);
  void *progress_ctx;
} ring_args_t;

/* Why a host kernel stopped early: what it was waiting on, and where. */
typedef enum {
  KERN_FAIL_NONE = 0,
  KERN_FAIL_TIMEOUT,  /* no progress for timeout_s */
  KERN_FAIL_CONN,     /* a fifo was marked failed by the proxy or peer */
  KERN_FAIL_ABORT,    /* abort_flag was raised */
  KERN_FAIL_PROTOCOL  /* the peer's slot did not have the size the schedule expects */
} kern_fail_kind_t;

typedef struct {
  kern_fail_kind_t kind;
  int channel;
  int waiting_on_recv; /* 1: waiting for data from the previous rank; 0: for room at the next */
  int action;          /* step of the loop (0 .. 2k-2) */
  uint64_t loop;       /* loop iteration within the channel */
  size_t got_bytes, want_bytes; /* PROTOCOL */
  char msg[SLOT_ERROR_MAX];     /* CONN: the fifo's error text */
  int conn_result;              /* CONN: the fifo's xcclResult_t */
} kern_failure_t;

/* Elements of each channel for count elements over nchannels (same on every
 * rank): channel c covers [*off_p, *off_p + *len_p). */
void ring_channel_range(size_t count, size_t elem_size, int nchannels, int c, size_t *off_p, size_t *len_p);

/* Runs a ring collective (see ring_schedule.h) over every channel.
 * xcclSuccess, or an error with *fail filled in. */
xcclResult_t host_ring_run(const ring_args_t *a, kern_failure_t *fail);

#endif
