/*
 * cuda_p2p.h — the CUDA p2p transport: device operations between ranks of one
 * host keep their slots in the receiving GPU's memory, shared through CUDA
 * IPC (built with XCCL_HAVE_CUDA only).
 *
 * It rides on a shared-memory connection: the fifo's counters stay in the
 * shared segment (mapped for both GPUs), only the slots (headers and data)
 * move to the consumer's GPU, so the sending kernel writes its data straight
 * into the peer GPU's memory (NVLink or PCIe peer-to-peer, or the same GPU
 * when several ranks share one) and the receiving kernel reads local memory.
 * The host path keeps using the segment's own slots; the two never meet in a
 * slot, since every rank runs a given operation on the device or none does.
 *
 * The exchange never waits, so a device call still returns at once: on its
 * first device operation over a fifo the consumer offers its slots in the
 * fifo's header (a CUDA IPC handle, slots.h's dev_* fields); on each device
 * operation until it finds the offer the producer keeps writing the
 * segment's slots; once it finds it, it maps the slots and writes there from
 * its current step on, which it records (dev_from). A receiving kernel that
 * does not know that step yet looks in both places (kern_cuda.h's dev0):
 * each message is in exactly one. Several ranks on one GPU work (IPC between
 * processes on one device), which lets one GPU test multi-rank paths; NCCL
 * refuses that. XCCL_P2P_DISABLE=1 keeps every slot in host memory.
 */
#ifndef XCCL_CORE_CUDA_P2P_H
#define XCCL_CORE_CUDA_P2P_H

#include "comm.h"

/* One side of one shared fifo a device operation is about to use. */
typedef struct {
  xcclComm_t comm;
  slot_fifo_t *f;
  int producer;  /* this rank writes the slots (its send side) */
  int peer;      /* the rank on the other side, for messages */
  int channel;   /* the ring channel, or -1 for a point-to-point connection */
  uint64_t step; /* producer: the fifo's step where this launch starts */
} cuda_p2p_need_t;

/* Moves the exchange on for each fifo in needs[0..n): consumers offer on
 * first use, producers take an offer they find. Never waits; fails only
 * when out of memory. */
xcclResult_t cuda_p2p_settle(const cuda_p2p_need_t *needs, int n);

/* Where device operations on shared fifo f find its slots in this process:
 * a producer that took the peer's GPU slots gets them in *slot0_p (left as
 * it is otherwise); a consumer that offered its own gets *dev0_p and
 * *dev_from_p (kern_cuda.h; left as they are otherwise). */
void cuda_p2p_view(const slot_fifo_t *f, int producer, char **slot0_p, char **dev0_p, uint64_t *dev_from_p);

/* comm_free's hook (via enqueue_cuda_comm_free): unmaps the slots comm's
 * producers took, then frees those its consumers offered once the producer
 * has let go (a few seconds at most; kept, with a warning, if it does not:
 * freeing memory a peer still maps is undefined in CUDA). */
void cuda_p2p_comm_free(xcclComm_t comm);

#endif
