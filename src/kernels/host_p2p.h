/*
 * host_p2p.h — send and receive as host work items: a buffer cut into slots
 * on the connection to one peer. Both sides cut it the same way (the slot
 * size is the same on every rank), so a receive checks that each slot holds
 * the size it expects: a mismatch means the ranks posted different counts.
 */
#ifndef XCCL_KERNELS_HOST_P2P_H
#define XCCL_KERNELS_HOST_P2P_H

#include "host_engine.h"

typedef struct {
  kern_item_t base;
  int is_send;
  slot_fifo_t *fifo;
  uint64_t *step; /* the connection's persistent step counter */
  char *buf;
  size_t bytes, off;
} p2p_item_t;

/* A send of bytes from buf over fifo (is_send) or a receive into buf. A
 * zero-byte transfer moves nothing and is done at once. */
void host_p2p_item(p2p_item_t *it, const kern_env_t *env, kern_lane_t lane, int is_send, slot_fifo_t *fifo, uint64_t *step,
                   void *buf, size_t bytes);

#endif
