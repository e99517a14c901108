/*
 * net_transport.c — the net transport: a connection through the network
 * transport of net.h (socket, ib), whose data the proxy moves between a
 * fifo in this process's memory and the wire. The where is the receiver's
 * listen handle; at start() the proxy takes the connected comm.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "transport.h"

typedef struct {
  const xccl_net_ops_v1_t *net;
  int is_send;
  /* Sender: the receiver's handle, then connect()'s progress (net.h), which
   * a transport keeps as its own struct in the bytes after NET_HANDLE_PUBLIC:
   * aligned as malloc would align it. */
  _Alignas(16) net_handle_t handle;
  void *listen;        /* receiver, until it accepted */
  void *comm;          /* connected, until the proxy takes it */
  int connected;       /* connect() finished: nothing to abandon */
  proxy_gpu_t gpu;     /* GPUDirect RDMA state (conn->gpu): the proxy's and the CUDA side's */
} net_conn_res_t;

static int net_can_connect(const transport_peer_t *tp) { return 1; }

/* The resources of one side and a fifo in this process's memory. */
static xcclResult_t net_res_new(const transport_peer_t *tp, int is_send, transport_conn_t *conn) {
  net_conn_res_t *r = calloc(1, sizeof(*r));
  slot_fifo_t *f = r ? slot_fifo_create(tp->slot_size) : NULL;
  if (!f) {
    free(r);
    return err_set(xcclSystemError, LOG_INIT, "out of memory for %d slots of %zu bytes", XCCL_STEPS, tp->slot_size);
  }
  r->net = tp->net;
  r->is_send = is_send;
  conn->res = r;
  conn->fifo = f;
  conn->gpu = &r->gpu;
  return xcclSuccess;
}

static void net_free(transport_conn_t *conn) {
  net_conn_res_t *r = conn->res;
  if (!r) return;
  if (r->comm)
    (r->is_send ? r->net->close_send : r->net->close_recv)(r->comm);
  else if (r->is_send && !r->connected)
    r->net->connect_abandon(&r->handle);
  if (r->listen) r->net->close_listen(r->listen);
  slot_fifo_destroy(conn->fifo);
  free(r);
}

static xcclResult_t net_recv_setup(const transport_peer_t *tp, transport_conn_t *conn, transport_where_t *where_p) {
  TRY(net_res_new(tp, 0, conn));
  net_conn_res_t *r = conn->res;
  net_handle_t h;
  net_session_key(tp->net_key);
  xcclResult_t res = tp->net->listen(tp->net_dev, &h, &r->listen);
  net_session_key(NULL);
  if (res != xcclSuccess) {
    net_free(conn); /* a failed recv_setup holds nothing */
    conn->res = NULL, conn->fifo = NULL, conn->gpu = NULL;
    return res;
  }
  memcpy(where_p->data, h.data, NET_HANDLE_PUBLIC);
  return xcclSuccess;
}

static xcclResult_t net_send_setup(const transport_peer_t *tp, transport_conn_t *conn, const transport_where_t *where) {
  TRY(net_res_new(tp, 1, conn));
  net_conn_res_t *r = conn->res;
  memset(&r->handle, 0, sizeof(r->handle));
  memcpy(r->handle.data, where->data, NET_HANDLE_PUBLIC);
  return xcclSuccess;
}

static xcclResult_t net_connect(const transport_peer_t *tp, transport_conn_t *conn, int *done_p) {
  net_conn_res_t *r = conn->res;
  if (!r->connected) {
    net_session_key(tp->net_key);
    xcclResult_t res = r->net->connect(tp->net_dev, &r->handle, &r->comm);
    net_session_key(NULL);
    TRY(res);
    r->connected = r->comm != NULL;
  }
  *done_p = r->connected;
  return xcclSuccess;
}

static xcclResult_t net_accept(const transport_peer_t *tp, transport_conn_t *conn, int *done_p) {
  net_conn_res_t *r = conn->res;
  if (r->listen) {
    TRY(r->net->accept(r->listen, &r->comm));
    if (r->comm) r->net->close_listen(r->listen), r->listen = NULL;
  }
  *done_p = r->listen == NULL;
  return xcclSuccess;
}

/* The proxy owns the comm from here on (it closes it at proxy_destroy). */
static xcclResult_t net_start(const transport_peer_t *tp, transport_conn_t *conn) {
  net_conn_res_t *r = conn->res;
  if (!tp->proxy)
    return err_set(xcclInternalError, LOG_INIT, "a network connection to %s without a proxy", tp->peer_desc);
  TRY((r->is_send ? proxy_add_send : proxy_add_recv)(tp->proxy, conn->fifo, conn->gpu, r->comm, tp->peer,
                                                     tp->peer_desc, tp->bell));
  r->comm = NULL;
  return xcclSuccess;
}

const xccl_transport_v1_t transport_net = {
    .name = "socket", /* XCCL_TRANSPORT's word for "through the network", whichever net.h transport */
    .what = "the network",
    .can_connect = net_can_connect,
    .recv_setup = net_recv_setup,
    .send_setup = net_send_setup,
    .connect = net_connect,
    .accept = net_accept,
    .start = net_start,
    .free = net_free,
};
