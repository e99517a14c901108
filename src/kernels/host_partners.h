/*
 * host_partners.h — the arguments of a collective whose one work item
 * exchanges with partners over the algorithms' own connections, one fifo
 * per peer and direction: recursive doubling's all-reduce (host_rd.h) and
 * Rabenseifner's all-reduce, reduce-scatter and all-gather (host_rab.h).
 * The core lays them out (algo_partner_args, algo.h).
 */
#ifndef XCCL_KERNELS_HOST_PARTNERS_H
#define XCCL_KERNELS_HOST_PARTNERS_H

#include <stddef.h>
#include <stdint.h>

#include "ring_schedule.h"
#include "slots.h"
#include "xccl.h"

typedef struct {
  coll_kind_t coll; /* COLL_ALLREDUCE (0), or what else the item serves (host_rab.h) */
  const void *sendbuff;
  void *recvbuff;
  size_t count; /* the schedule's: all-gather's sendcount, reduce-scatter's recvcount */
  xcclDataType_t type;
  xcclRedOp_t op;
  int nranks, rank;
  /* Per peer: the connection to send to it and to receive from it (NULL
   * where none; only the partners' are used), with their persistent step
   * counters. */
  slot_fifo_t **send_fifo, **recv_fifo;
  uint64_t **send_step, **recv_step;
} partner_args_t;

#endif
