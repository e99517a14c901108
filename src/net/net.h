/*
 * net.h — the network transport interface, version 1.
 *
 * A transport is one `static const xccl_net_ops_v1_t` filled by field name.
 * net_get() lays it over "not supported" defaults, so no slot is ever NULL
 * for callers. A later v2 table adapts v1 transports in one small file.
 *
 * The contract every transport keeps:
 *  - Nothing blocks. connect() and accept() return xcclSuccess with the output
 *    comm set to NULL while the connection is still being made: call again.
 *  - isend()/irecv() return xcclSuccess with *req_p = NULL when they have no
 *    resources right now (too many requests in flight): retry later.
 *    At most NET_MAX_REQUESTS requests are in flight per comm.
 *  - Sends and receives on one send/recv comm pair match in posting order.
 *    A receive buffer may be larger than the message, never smaller: a
 *    message larger than the posted buffer is an error on the receiver.
 *  - test() reports completion once; the request is freed by that call. The
 *    received size comes back through size_p.
 *  - Any error is final for that comm: it returns xcclRemoteError (peer closed,
 *    reset, garbage) or xcclSystemError (local OS failure) with a sentence
 *    recorded by err_set; the caller adds which rank the peer is.
 *  - handle: an opaque blob of NET_HANDLE_BYTES that listen() fills and the
 *    peer passes to connect(); it travels through the bootstrap. connect()
 *    may keep its progress in the handle's bytes after NET_HANDLE_PUBLIC, so
 *    the caller passes the same handle object to every call of one connect,
 *    and close_send() of a comm never made is not needed: a connect that is
 *    abandoned is released with connect_abandon().
 *  - Memory: reg_mr() returns a handle the data calls take (NULL is accepted
 *    for host memory by transports that need no registration).
 */
#ifndef XCCL_NET_NET_H
#define XCCL_NET_NET_H

#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "xccl.h"

#define NET_HANDLE_BYTES 128
#define NET_HANDLE_PUBLIC 64 /* bytes that travel; the rest is connect() state */
#define NET_MAX_REQUESTS 32
#define NET_PTR_HOST 0x1
#define NET_PTR_CUDA 0x2

typedef struct {
  unsigned char data[NET_HANDLE_BYTES];
} net_handle_t;

typedef struct {
  char name[64];      /* interface or device name */
  char pci_path[256]; /* sysfs path of the device, "" when virtual */
  int speed_mbps;     /* link speed, 0 when unknown */
  int ptr_support;    /* NET_PTR_* */
  size_t max_msg;     /* largest message one isend may carry */
  int pollable;       /* poll_fds tells when a comm can progress */
} net_props_t;

typedef struct net_comm net_comm_t; /* each transport defines its own comms */

typedef xcclResult_t net_init_fn(void);
typedef xcclResult_t net_devices_fn(int *ndev_p);
typedef xcclResult_t net_get_properties_fn(int dev, net_props_t *props_p);
typedef xcclResult_t net_listen_fn(int dev, net_handle_t *handle_p, void **listen_comm_p);
typedef xcclResult_t net_connect_fn(int dev, net_handle_t *handle, void **send_comm_p);
typedef xcclResult_t net_accept_fn(void *listen_comm, void **recv_comm_p);
typedef xcclResult_t net_reg_mr_fn(void *comm, void *data, size_t size, int ptr_type, void **mhandle_p);
typedef xcclResult_t net_dereg_mr_fn(void *comm, void *mhandle);
typedef xcclResult_t net_isend_fn(void *send_comm, void *data, size_t size, void *mhandle, void **req_p);
typedef xcclResult_t net_irecv_fn(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p);
typedef xcclResult_t net_test_fn(void *req, int *done_p, size_t *size_p);
typedef xcclResult_t net_iflush_fn(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p);
typedef xcclResult_t net_close_fn(void *comm);
typedef int net_poll_fds_fn(void *comm, int *fds, int max);

typedef struct xccl_net_ops_v1 {
  const char *name;
  net_init_fn *init;                     /* once per process, before anything else */
  net_devices_fn *devices;               /* how many devices this transport can use */
  net_get_properties_fn *get_properties;
  net_listen_fn *listen;                 /* one listen comm per expected connection */
  net_connect_fn *connect;               /* never blocks; NULL comm = call again */
  net_accept_fn *accept;                 /* never blocks; NULL comm = call again */
  net_reg_mr_fn *reg_mr;
  net_dereg_mr_fn *dereg_mr;
  net_isend_fn *isend;                   /* NULL req = no resources, retry */
  net_irecv_fn *irecv;                   /* NULL req = no resources, retry */
  net_test_fn *test;                     /* progresses the comm; frees req on done */
  net_iflush_fn *iflush;                 /* makes received data visible to a GPU; may set NULL req = nothing to do */
  net_close_fn *close_send;
  net_close_fn *close_recv;
  net_close_fn *close_listen;
  /* Test hook: break the comm's connections now so the peer sees a failure
   * (used by fault injection and abort). May be the default no-op. */
  net_close_fn *shutdown;
  /* Releases what a connect() that never finished holds in the handle. */
  net_close_fn *connect_abandon;
  /* File descriptors that become readable (recv comm) or writable (send
   * comm) when the comm can make progress, so the proxy can sleep in poll()
   * instead of spinning. Writes at most max; returns how many; 0 = none
   * (the proxy then sleeps briefly instead). */
  net_poll_fds_fn *poll_fds;
} xccl_net_ops_v1_t;

/*
 * The transport to use: XCCL_NET names one, else the first that reports
 * devices. Initialises it once. Writes a pointer to a complete table (no NULL
 * slot) to *ops_p.
 */
xcclResult_t net_get(const xccl_net_ops_v1_t **ops_p);

/* 1 when this build has the ib transport (rdma-core was found), for xccl-info. */
int net_ib_built(void);

/* The fault-injection decorator around inner (net_fault.c; XCCL_FAULT). */
const xccl_net_ops_v1_t *net_fault_wrap(const xccl_net_ops_v1_t *inner);
/* When ops is that decorator, XCCL_FAULT's rules match send_comm's messages
 * against ctx (the communicator's; it must outlive send_comm); otherwise,
 * and for a NULL send_comm, nothing. */
void net_fault_bind(const xccl_net_ops_v1_t *ops, void *send_comm, const fault_ctx_t *ctx);

/*
 * The communicator's key for encrypted transports (XCCL_TLS=1): derived from
 * its bootstrap secret, NET_KEY_BYTES bytes. listen() and connect() take
 * the key the calling thread last set here (copied); NULL clears it. The
 * caller sets it just before those calls (net_transport.c), so each
 * connection is keyed by the communicator it belongs to.
 */
#define NET_KEY_BYTES 32
void net_session_key(const uint8_t *key);

/* The tables of the transports built in. */
extern const xccl_net_ops_v1_t net_socket_ops;
extern const xccl_net_ops_v1_t net_ib_ops; /* verbs + rdma_cm, when built (XCCL_HAVE_IB) */

#endif
