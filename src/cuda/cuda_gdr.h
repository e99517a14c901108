/*
 * cuda_gdr.h — GPUDirect RDMA for device operations over network
 * connections (built with XCCL_HAVE_CUDA only).
 *
 * Without it the kernel's data crosses host memory: it writes its sends into
 * the fifo's slots (mapped host memory) for the proxy to send, and reads its
 * receives from them. With it a network fifo gets a data area in the GPU's
 * memory, laid out like its slots and registered with the transport, and the
 * NIC reads and writes GPU memory itself: the sending kernel writes there
 * and marks the message (SLOT_SIZE_GPU in its header, which stays in host
 * memory for the proxy); the receiving proxy posts the receives of device
 * operations' steps there, flushes each (iflush) before publishing it with
 * the mark, and the kernel reads a marked message there. Messages of host
 * operations never carry the mark, so host and device operations still
 * share the connection.
 *
 * The state is the connection's (transport_conn_t's gpu, proxy.h's
 * proxy_gpu_t), which the proxy reads too. Decided once per connection, on
 * its first device operation: XCCL_NET_GDR_LEVEL
 * against the topology's path between the GPU and the channel's NIC, and
 * the transport's ability (gdr_path.h); a failed allocation or registration
 * falls back to staging. The choice is logged at INFO.
 */
#ifndef XCCL_CORE_CUDA_GDR_H
#define XCCL_CORE_CUDA_GDR_H

#include "comm.h"

/* On a device operation's use of network connection conn (this rank's send
 * side when producer, else its receive side) with peer over net device dev:
 * settles, once, whether it goes GPU-direct (see above). Never fails: what
 * does not work stays staged. */
void cuda_gdr_settle(xcclComm_t comm, transport_conn_t *conn, int producer, int peer, int dev);

/* Receive side: steps [from, until) of conn are consumed by a device
 * operation (its proxy receives them into GPU memory, if conn has some).
 * Nothing for a connection without GPUDirect state (shared memory). */
void cuda_gdr_recv_steps(transport_conn_t *conn, uint64_t from, uint64_t until);

/* The GPU data area of conn (proxy_gpu_t's area), NULL when it has none. */
static inline char *cuda_gdr_area(const transport_conn_t *conn) { return conn->gpu ? conn->gpu->area : NULL; }

/* comm_free's hook (via enqueue_cuda_comm_free, before the proxy goes):
 * deregisters and frees comm's GPU data areas. */
void cuda_gdr_comm_free(xcclComm_t comm);

#endif
