/*
 * cuda_p2p.h — the CUDA p2p transport: device operations between ranks of one
 * host move their data through the receiving GPU's memory, shared through
 * CUDA IPC (built with XCCL_HAVE_CUDA only).
 *
 * It rides on a shared-memory connection: the fifo's counters and slot
 * headers stay in the shared segment (mapped for both GPUs); the consumer's
 * GPU holds a data area laid out like the slots, so the sending kernel
 * writes its data straight into the peer GPU's memory (NVLink or PCIe
 * peer-to-peer, or the same GPU when several ranks share one) and the
 * receiving kernel reads local memory. A message's header says where its
 * data is (SLOT_SIZE_GPU, as for GPUDirect RDMA): a device producer that
 * has mapped the area writes there, anything else writes the slot, and a
 * device consumer reads either. A host consumer cannot read GPU memory: it
 * refuses such a message with a sentence.
 *
 * The exchange never waits, so a device call still returns at once: on its
 * first device operation over a fifo the consumer offers its area in the
 * connection's header (a CUDA IPC handle, shm_conn.h's dev_* fields); until it finds
 * the offer the producer keeps writing the slots, then maps the area.
 * Several ranks on one GPU work (IPC between processes on one device), which
 * lets one GPU test multi-rank paths; NCCL refuses that. XCCL_P2P_DISABLE=1
 * keeps every message in host memory.
 */
#ifndef XCCL_CORE_CUDA_P2P_H
#define XCCL_CORE_CUDA_P2P_H

#include "comm.h"

/* One side of one connection a device operation is about to use (those
 * not through shared memory are passed over). */
typedef struct {
  xcclComm_t comm;
  transport_conn_t *conn;
  int producer;  /* this rank writes the slots (its send side) */
  int peer;      /* the rank on the other side, for messages */
  int channel;  /* the ring channel, or -1 for a point-to-point connection */
} cuda_p2p_need_t;

/* Moves the exchange on for each fifo in needs[0..n): consumers offer on
 * first use, producers take an offer they find. Never waits; fails only
 * when out of memory. */
xcclResult_t cuda_p2p_settle(const cuda_p2p_need_t *needs, int n);

/* The GPU data area (kern_cuda.h's gpu0) of shared fifo f for device
 * operations in this process: the peer's, mapped, for a producer that took
 * it; its own for a consumer that offered it (and was not declined); NULL
 * otherwise. */
char *cuda_p2p_area(const slot_fifo_t *f, int producer);

/* comm_free's hook (via enqueue_cuda_comm_free): unmaps the areas comm's
 * producers took, then frees those its consumers offered once the producer
 * has let go (a second at most, none on abort; kept until the process ends,
 * with a note, if it has not: freeing memory a peer still maps is undefined
 * in CUDA). A producer in the same process takes over the area instead. */
void cuda_p2p_comm_free(xcclComm_t comm);

#endif
