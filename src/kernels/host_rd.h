/*
 * host_rd.h — recursive-doubling all-reduce, the latency algorithm: log2(k)
 * exchanges of the whole buffer with partners rank ^ 2^s instead of the
 * ring's 2(k-1) hops. For k not a power of two, the p2 = 2^floor(log2 k)
 * first ranks do the doubling; rank p2 + i first hands its data to rank i
 * and gets the result back at the end. Partners combine their values in
 * rank order (lower rank's operand first), so every rank ends with the same
 * bits. Buffers larger than a slot go piece by piece.
 */
#ifndef XCCL_KERNELS_HOST_RD_H
#define XCCL_KERNELS_HOST_RD_H

#include "host_engine.h"
#include "host_partners.h"

#define RD_MAX_ACTIONS 72

/* What an action of act[] does (kind), per piece in order. */
enum { RD_INIT, RD_SEND, RD_RECV_REDUCE, RD_RECV_COPY, RD_FINAL };

typedef struct {
  kern_item_t base;
  const partner_args_t *args;
  size_t off;   /* elements done by earlier pieces */
  size_t piece; /* elements in this piece */
  int nact;
  struct { int kind, peer; } act[RD_MAX_ACTIONS];
} rd_item_t;

/* The partners rank talks to, written to peers (at most 2 + log2 nranks);
 * returns how many. Both directions are used with each. */
int host_rd_partners(int nranks, int rank, int *peers);

void host_rd_item(rd_item_t *it, const partner_args_t *a, const kern_env_t *env, kern_lane_t lane);

#endif
