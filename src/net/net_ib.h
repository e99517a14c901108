/*
 * net_ib.h — the ib transport's private interface (net_ib_*.c).
 *
 * Files, along the lifecycle:
 *   net_ib_init.c     devices and ports, XCCL_IB_HCA, properties, the ops table
 *   net_ib_connect.c  listen/connect/accept through rdma_cm, comms, close
 *   net_ib_data.c     isend/irecv/test: clear-to-send fifo + RDMA write with imm
 *   net_ib_reg.c      memory registration cache, reg_mr/dereg_mr (host, GPU)
 *   net_ib_flush.c    iflush: an RDMA read on a loopback QP after a receive
 *   net_ib_async.c    the async-event thread of each device
 *
 * The protocol, per connection (a send comm and its recv comm):
 *  - nqps RC queue pairs (XCCL_IB_QPS_PER_CONNECTION), each made by its own
 *    rdma_cm id, so address, route and GID come from rdma_cm (IB and RoCE).
 *  - The sender owns a fifo of NET_MAX_REQUESTS clear-to-send entries,
 *    registered for remote write; its address and key travel in the connect
 *    request's private data.
 *  - A message goes whole on one QP, QP seq % nqps (XCCL_IB_SPLIT_DATA_ON_QPS=0,
 *    as NCCL by default), or, split, over every QP (below; the receiver's
 *    setting travels in the handle, so both sides agree).
 *  - irecv posts one receive per QP it uses, then RDMA-writes the entry {address,
 *    key, capacity, seq} into fifo[seq % NET_MAX_REQUESTS] on QP 0 (inline,
 *    signalled only every IB_CTS_SIGNAL-th time).
 *  - isend waits (NULL request) until entry seq is there, then writes its
 *    message (or, split, each QP's part) as an RDMA write with immediate
 *    whose immediate is the message size (inline when small); in adaptive-
 *    routing form (XCCL_IB_ADAPTIVE_ROUTING, from XCCL_IB_AR_THRESHOLD bytes)
 *    as an RDMA write then an empty write with immediate on the same QP: a
 *    fabric that reorders packets may place the data's last bytes after
 *    the first write's, but the second write completes only after the
 *    first is placed (RC ordering), so its completion still means the
 *    message is there. A message
 *    larger than the receive's capacity goes as empty writes whose immediate
 *    still says the size: the receiver fails it, the sender too.
 *  - A request is complete when the completions of every QP it used are in.
 *  - A completion error, a disconnect event or an async QP error fails the
 *    comm for good (xcclRemoteError with the verbs status and the peer).
 *  - iflush (recv side, for GPUDirect): an RDMA read of a few bytes of the
 *    received buffer, through its registration's rkey, into a host scratch
 *    buffer, on a QP connected to itself. PCIe reads do not pass earlier
 *    writes, so its completion means the NIC's writes of the message have
 *    reached the memory. The loopback QP is made on the comm's first iflush.
 */
#ifndef XCCL_NET_IB_H
#define XCCL_NET_IB_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdint.h>

#include "net.h"

#define IB_MAX_DEVS 32
#define IB_MAX_QPS 16
#define IB_MAX_PORTS 8 /* port numbers above this have no port-error watch */
#define IB_CTS_SIGNAL 8          /* every n-th clear-to-send write is signalled */
#define IB_MAX_MSG (1u << 31)    /* the immediate carries the size */
#define IB_SPLIT_MIN 16384       /* split: messages below this go on QP 0 alone (the others carry empty writes) */

/* ---- devices (net_ib_init.c) ---- */

typedef struct ib_reg ib_reg_t;

/* One verbs context (an HCA) as rdma_cm opened it: its protection domain,
 * registration cache and async-event thread. Made on first use. */
typedef struct ib_ctx {
  struct ibv_context *verbs;
  struct ibv_pd *pd;
  pthread_mutex_t lock; /* the cache */
  ib_reg_t **regs;
  int nregs, cap;
  int async_started;
  int gpu_routes_logged; /* GPU registration routes logged, a bit each (net_ib_reg.c) */
  /* Set by the async thread: IBV_EVENT_PORT_ERR's per port, and whether
   * the device reported IBV_EVENT_DEVICE_FATAL. A comm made before a
   * port error on its port fails at its next call (ib_comm_check). */
  _Atomic unsigned port_errs[IB_MAX_PORTS + 1];
  _Atomic int fatal;
  int dmabuf; /* the device takes dma-buf registrations (probed when the context is made) */
} ib_ctx_t;

typedef union {
  struct sockaddr sa;
  struct sockaddr_in in;
  struct sockaddr_in6 in6;
} ib_sockaddr_t;

/* One usable port: what the transport calls a device. */
typedef struct {
  struct ibv_context *verbs;
  char name[64]; /* "rxe0" */
  int port;
  int link_layer; /* IBV_LINK_LAYER_* */
  int speed_mbps;
  int gid_index;
  ib_sockaddr_t addr; /* where rdma_cm listens and connects from */
  char ifname[64];
  char pci_path[256];
} ib_dev_t;

extern int ib_ndevs;
extern ib_dev_t ib_devs[IB_MAX_DEVS];

/* The ib_ctx_t of a verbs context, made (PD, async thread) on first use. */
xcclResult_t ib_ctx_get(struct ibv_context *verbs, ib_ctx_t **ctx_p);
const char *ib_addr_str(const ib_sockaddr_t *a, char *buf, size_t len);
/* The peer's address and the local NIC (device, port) a connection uses. */
const char *ib_peer_name(const ib_sockaddr_t *peer, int dev, char *buf, size_t len);

/* ---- registration (net_ib_reg.c) ---- */

struct ib_reg {
  ib_ctx_t *ctx;
  uintptr_t start, end; /* page-aligned range */
  struct ibv_mr *mr;
  int refs;
};

/* A registration that covers [addr, addr + size), from the cache or new;
 * takes a reference. */
xcclResult_t ib_reg_get(ib_ctx_t *ctx, void *addr, size_t size, int gpu, ib_reg_t **reg_p);
void ib_reg_put(ib_reg_t *reg);
xcclResult_t ib_reg_mr(void *comm, void *data, size_t size, int ptr_type, void **mhandle_p);
xcclResult_t ib_dereg_mr(void *comm, void *mhandle);
/* IBV_ACCESS_RELAXED_ORDERING where XCCL_IB_PCI_RELAXED_ORDERING asks for it
 * and verbs has it, else 0; ib_relaxed_check fails ib_init on 1 without it. */
int ib_access_relaxed(void);
xcclResult_t ib_relaxed_check(void);

/* ---- async events (net_ib_async.c) ---- */

xcclResult_t ib_async_start(ib_ctx_t *ctx);

/* ---- comms (net_ib_connect.c, net_ib_data.c) ---- */

/* A clear-to-send entry, written by the receiver into the sender's fifo.
 * seq1 and marker are seq + 1: the entry is whole when both are. */
typedef struct {
  uint64_t seq1;
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
  uint64_t marker;
} ib_cts_t;

struct ib_comm;

typedef struct {
  struct ib_comm *comm;
  uint64_t seq;
  int in_use;
  int ncomp, nwant; /* completions in / expected */
  char *data;
  size_t size;      /* send: the message; recv: the posted capacity */
  size_t got;       /* recv: the size that arrived */
  size_t too_big;   /* send: the receive it met was this small (+1) */
  int flush;        /* an iflush request: completed by the flush CQ (net_ib_flush.c) */
} ib_req_t;

/* iflush's loopback QP and what its reads need, made on a recv comm's
 * first iflush (all NULL until then). */
typedef struct {
  struct ibv_cq *cq;
  struct ibv_qp *qp; /* RC, connected to itself */
  char *scratch;     /* host page the reads land in */
  struct ibv_mr *scratch_mr;
  uint64_t posted;   /* flushes posted */
  ib_req_t reqs[NET_MAX_REQUESTS];
} ib_flush_t;

/* Private data of a connect request (fits rdma_cm's 56 bytes). */
typedef struct {
  uint32_t magic;
  uint16_t qp_index, nqps;
  uint64_t conn_id;
  uint64_t fifo_addr;
  uint32_t fifo_rkey;
  uint32_t pad;
} ib_conn_priv_t;

typedef struct ib_comm {
  int is_send;
  ib_ctx_t *ctx;
  struct rdma_event_channel *chan; /* disconnects arrive here */
  int nqps;
  int split;     /* XCCL_IB_SPLIT_DATA_ON_QPS (the receiver's, in the handle): split, not round-robin */
  size_t ar_min; /* send: messages this large or larger go as write + empty write-with-imm; SIZE_MAX: none */
  struct rdma_cm_id *ids[IB_MAX_QPS];
  int established[IB_MAX_QPS];
  struct ibv_cq *cq;
  uint32_t max_inline;
  /* send side: the fifo the receiver writes into */
  ib_cts_t *fifo;
  struct ibv_mr *fifo_mr;
  /* recv side: the sender's fifo, and the entries written from here */
  uint64_t rfifo_addr;
  uint32_t rfifo_rkey;
  ib_cts_t *cts;
  struct ibv_mr *cts_mr;
  uint64_t cts_written;
  int fault_rkey;
  uint64_t posted; /* requests posted */
  uint64_t qp_comp[IB_MAX_QPS]; /* data completions per QP */
  ib_req_t reqs[NET_MAX_REQUESTS];
  /* registrations made for NULL mhandles; kept until close */
  ib_reg_t **regs;
  int nregs, cap;
  ib_reg_t *last_reg;
  ib_flush_t flush; /* recv side */
  /* failure: the first one is final */
  xcclResult_t failed;
  char fail_msg[320];
  _Atomic int async_failed; /* set by the async thread */
  char async_msg[160];
  uint64_t next_event_ns; /* when to look at the event channel again */
  int peer_gone;          /* a disconnect event arrived */
  char gone_why[48];
  int port;            /* the local port (QP 0's), 0 until known */
  unsigned port_errs0; /* ctx->port_errs[port] when the comm was made */
  char peer[128];      /* ib_peer_name: address, and the local NIC */
  /* send side, while connecting: where to, and address/route retries */
  ib_sockaddr_t dst;
  int dev;
  int retries[IB_MAX_QPS];
  uint64_t retry_at_ns[IB_MAX_QPS]; /* a new id is due then; 0: none */
  int fault_unreachable;            /* XCCL_IB_FAULT_UNREACHABLE resolutions left to misdirect */
} ib_comm_t;

/* Records the comm's first failure (logs it) and returns it. */
xcclResult_t ib_comm_fail(ib_comm_t *c, xcclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The comm's state: its recorded failure (again), or an async error now
 * seen (recorded), else xcclSuccess. */
xcclResult_t ib_comm_check(ib_comm_t *c);
/* Reads pending rdma_cm events of an established comm (disconnects). */
void ib_comm_events(ib_comm_t *c);

xcclResult_t ib_listen(int dev, net_handle_t *handle_p, void **listen_comm_p);
xcclResult_t ib_connect(int dev, net_handle_t *handle, void **send_comm_p);
xcclResult_t ib_accept(void *listen_comm, void **recv_comm_p);
xcclResult_t ib_close_comm(void *comm);
xcclResult_t ib_close_listen(void *listen_comm);
xcclResult_t ib_shutdown(void *comm);
xcclResult_t ib_connect_abandon(void *handle);

xcclResult_t ib_isend(void *send_comm, void *data, size_t size, void *mhandle, void **req_p);
xcclResult_t ib_irecv(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p);
xcclResult_t ib_test(void *req, int *done_p, size_t *size_p);

/* ---- flush (net_ib_flush.c) ---- */

/* net.h's iflush: *req_p = NULL when there is nothing to do (size 0 or no
 * mhandle), else a request that ib_test completes. Makes the loopback QP on
 * first use; a failure to make it fails the comm. Never blocks. At most
 * NET_MAX_REQUESTS flushes in flight per comm (one more is xcclInvalidUsage). */
xcclResult_t ib_iflush(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p);
/* ib_test of a flush request (size_p: the size that was flushed). */
xcclResult_t ib_flush_test(ib_req_t *r, int *done_p, size_t *size_p);
/* Frees the comm's flush QP, CQ and scratch (nothing when never made). */
void ib_flush_close(ib_comm_t *c);
/* A recv comm's loopback QP made now (reg_mr of GPU memory), so that a
 * provider that cannot make one is known before any data moves; a failure
 * leaves the comm as it was. Nothing to do on a send comm. */
xcclResult_t ib_flush_prepare(ib_comm_t *c);

#endif
