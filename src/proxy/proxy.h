/*
 * proxy.h — one progress thread per communicator that moves bytes between
 * slot fifos and the network transport.
 *
 * For a send connection it posts isend for every slot the kernel filled and
 * frees the slot (head) when the send completes. For a receive connection it
 * keeps an irecv posted on every free slot and publishes each completed one
 * (tail). Connections are persistent streams of messages: the proxy does not
 * need to know which operation a slot belongs to.
 *
 * The thread spins XCCL_SPIN_COUNT idle passes, then sleeps in poll() on the
 * transport's fds and an eventfd; a host kernel that publishes slots, or
 * finds nothing to do, calls proxy_progress, which moves what it can on the
 * caller's thread and writes the eventfd only while the thread sleeps. When
 * the proxy publishes slots it rings the connection's bell (slots.h) so a
 * sleeping kernel wakes.
 *
 * A failed transport call marks only that connection's fifo failed
 * (slot_fifo_fail) and shuts that connection, so its peer learns at once: a
 * peer that closes after its last send is normal, and the other connections
 * may still carry data. The kernel that then waits on the fifo reports the
 * failure; proxy_shutdown_connections (a failed operation, or abort) breaks
 * every connection so that all peers fail fast instead of waiting for their
 * timeout.
 */
#ifndef XCCL_PROXY_PROXY_H
#define XCCL_PROXY_PROXY_H

#include <stdatomic.h>
#include <stdint.h>

#include "net.h"
#include "slots.h"
#include "trace_ring.h"

typedef struct proxy proxy_t;

/* GPUDirect RDMA state of one network connection (src/cuda/cuda_gdr.h).
 * The connection's fifo is in this process's memory, and so is this: no
 * other process ever sees it. The net transport keeps one per connection
 * (transport_conn_t's gpu) and hands it to the proxy with the connection;
 * the CUDA side reaches it through the connection, without a lock. */
typedef struct proxy_gpu {
  /* A data area in GPU memory laid out like the fifo's slots (slot i's data
   * at slot_fifo_area_data(fifo, area, i)), registered with the transport;
   * NULL: none. A message whose size has SLOT_SIZE_GPU has its data there,
   * its header still in the slot. Set by proxy_gpu_area, cleared by
   * proxy_gpu_area_drop. */
  char *area;
  /* Receive side: the proxy receives steps [rx_from, rx_until) (those of
   * device operations) into area and flushes them; the launching thread
   * writes the range (cuda_gdr_recv_steps). */
  _Atomic uint64_t rx_from, rx_until;
  int decided; /* whether the connection goes GPUDirect was settled (its first device operation) */
} proxy_gpu_t;

/* fault: the communicator's XCCL_FAULT context, which the send connections'
 * messages match (net_fault_bind); it must outlive the proxy. */
xcclResult_t proxy_create(const xccl_net_ops_v1_t *net, const fault_ctx_t *fault, proxy_t **proxy_p);

/* Hands a connected net comm, its fifo and its GPUDirect state (zeroed
 * until proxy_gpu_area) to the proxy (before or after proxy_start:
 * point-to-point connections are added when first used). fifo and gpu stay
 * the caller's and must outlive the proxy. peer is the rank on the other
 * side, for messages. The proxy closes net_comm at destroy. */
xcclResult_t proxy_add_send(proxy_t *p, slot_fifo_t *fifo, proxy_gpu_t *gpu, void *net_comm, int peer,
                            const char *peer_desc, slot_bell_t *bell);
xcclResult_t proxy_add_recv(proxy_t *p, slot_fifo_t *fifo, proxy_gpu_t *gpu, void *net_comm, int peer,
                            const char *peer_desc, slot_bell_t *bell);

xcclResult_t proxy_start(proxy_t *p);

/* GPUDirect RDMA on the connection whose state gpu is (src/cuda/cuda_gdr.h):
 * registers a GPU data area (area, bytes; laid out like the fifo's slots)
 * with the transport (reg_mr, NET_PTR_CUDA) and sets gpu->area. From then
 * on a send whose size carries SLOT_SIZE_GPU goes from the area, and a
 * receive of a step in gpu's rx range lands there and is flushed (iflush)
 * before it is published with SLOT_SIZE_GPU. Fails, changing nothing, when
 * the transport cannot register it. */
xcclResult_t proxy_gpu_area(proxy_t *p, proxy_gpu_t *gpu, void *area, size_t bytes);
/* At teardown, before the area is freed: the connection stops moving data
 * (it is marked failed), the area is deregistered and gpu->area cleared. */
void proxy_gpu_area_drop(proxy_t *p, proxy_gpu_t *gpu);

/* Brackets an operation that uses the proxy's connections: wakes the thread
 * and keeps it polling until the matching end. */
void proxy_op_begin(proxy_t *p);
void proxy_op_end(proxy_t *p);

/* For host kernels (a plain callback, void * so kernels need not know
 * proxy_t): moves what can move now on the calling thread, if the proxy
 * thread is not already doing so, and wakes the thread if it sleeps. Saves
 * two thread hand-offs per step on small messages. Returns 1 if anything
 * moved. */
int proxy_progress(void *proxy);

/* For host kernels that have nothing to do: sleeps in poll() on the fds of
 * the transfers in flight (at most timeout_us), then progresses them. The
 * waiting thread is the one woken by the network, so a step costs one
 * wake-up instead of two. Returns 1 if anything moved. */
int proxy_wait(void *proxy, int timeout_us);

/* Periodic work on the proxy's thread: fn(arg) runs after each of the
 * thread's sleeps in poll(), which last at most a second when idle (100 ms
 * during an operation), so fn runs about once a second or more often. fn
 * must be cheap when it has nothing to do (a clock read) and never wait for
 * a lock held across a call into this file. Any thread, before or after
 * proxy_start; fn = NULL stops it. Unset, the thread pays one load. */
void proxy_set_tick(proxy_t *p, void (*fn)(void *arg), void *arg);
/* XCCL_TRACE: each network send and receive that completes from now on is
 * a TRACE_NET_SEND or TRACE_NET_RECV event in ring (peer, the connection's
 * step, bytes; from its post, or a receive's previous completion when
 * later, to its completion). NULL stops it; the ring must outlive the
 * proxy or a later proxy_set_trace(p, NULL) plus the end of any progress
 * call (proxy_destroy joins the thread). Unset, a pass pays one load. */
void proxy_set_trace(proxy_t *p, trace_ring_t *ring);

/* Breaks every connection now (abort, or an operation failed): peers see the
 * closure. Safe from any thread. */
void proxy_shutdown_connections(proxy_t *p);

/* Stops and joins the thread, closes the net comms. NULL is fine. */
void proxy_destroy(proxy_t *p);

#endif
