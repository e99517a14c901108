/*
 * host_ring.h — host twins of the ring collectives: the calling thread runs
 * the schedule over slot fifos (see slots.h), polling with a deadline.
 */
#ifndef XCCL_KERNELS_HOST_RING_H
#define XCCL_KERNELS_HOST_RING_H

#include <stdatomic.h>
#include <stdint.h>

#include "host_engine.h"
#include "ring_schedule.h"
#include "slots.h"
#include "xccl.h"

/* One channel's connections: send goes to the next rank of the channel's
 * ring, recv comes from the previous one. The step counters persist across
 * operations (the connection is one long stream) and are advanced here.
 * Each channel has a ring of its own (the planner gives each its own order),
 * so the rank's place in it and the root's are the channel's. */
typedef struct {
  slot_fifo_t *send;
  slot_fifo_t *recv;
  uint64_t *send_step;
  uint64_t *recv_step;
  int position;    /* this rank's place in the channel's ring */
  int root;        /* ring position of the root (broadcast, reduce) */
  const int *ring; /* ring position -> rank, whose block of all-gather and reduce-scatter it is; NULL: the same */
} ring_channel_t;

typedef struct {
  coll_kind_t coll;
  const void *sendbuff; /* may be NULL where the schedule never reads it */
  void *recvbuff;       /* may be NULL where the schedule never writes it */
  /* Elements per rank block for all-gather (sendcount) and reduce-scatter
   * (recvcount); the whole buffer for the others. */
  size_t count;
  xcclDataType_t type;
  xcclRedOp_t op;
  int nranks; /* ring size k, at least 2 */
  int nchannels;
  ring_channel_t *channels;
} ring_args_t;

/* One channel of a ring collective, as a work item of the engine: the
 * schedule's iterator (ring_schedule.h, the one the CUDA kernel walks) and
 * the memory it maps to. base.action and base.loop mirror the iterator's,
 * for failure messages and state dumps. */
typedef struct {
  kern_item_t base;
  const ring_args_t *args;
  ring_iter_t iter;
} ring_item_t;

/* Fills items[0 .. a->nchannels-1], one per channel, lane = first_lane + c.
 * a must outlive the items. */
void host_ring_items(const ring_args_t *a, const kern_env_t *env, kern_lane_t first_lane, ring_item_t *items);

#endif
