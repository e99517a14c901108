/*
 * net_fault.c — the fault-injection decorator: a transport table that wraps
 * another and applies XCCL_FAULT's rules (src/base/fault.h) to each message
 * the wrapped transport is asked to send. net_get() puts it around the
 * chosen transport when XCCL_FAULT holds rules; otherwise it is not there.
 *
 * Every comm and request the inner transport hands out is wrapped, so that
 * shutdown(), reg_mr() and test() can tell them apart.
 */
#include <stdlib.h>

#include "error.h"
#include "fault.h"
#include "log.h"
#include "net.h"

#define FAULT_COMM_MAGIC 0x46434f4du /* "FCOM" */

typedef struct fault_req fault_req_t;

typedef struct {
  uint32_t magic;
  int is_send;
  void *inner;
  const fault_ctx_t *ctx; /* send comms: the communicator's (net_fault_bind); NULL until bound */
  fault_stream_t stream;  /* send comms: where in the current operation */
  fault_req_t *reqs;      /* requests not yet reported done: freed at close if never tested again */
} fault_comm_t;

struct fault_req {
  void *inner;
  fault_comm_t *comm;
  fault_req_t *prev, *next;
};

static const xccl_net_ops_v1_t *inner_ops;
static xccl_net_ops_v1_t fault_ops;

static void *unwrap(void *comm) { return comm ? ((fault_comm_t *)comm)->inner : NULL; }

static xcclResult_t wrap_comm(void *inner, int is_send, void **out_p) {
  if (!inner) {
    *out_p = NULL;
    return xcclSuccess;
  }
  fault_comm_t *c = calloc(1, sizeof(*c));
  if (!c) {
    if (is_send) inner_ops->close_send(inner);
    else inner_ops->close_recv(inner);
    return err_set(xcclSystemError, LOG_NET, "out of memory for a fault-injection comm");
  }
  *c = (fault_comm_t){.magic = FAULT_COMM_MAGIC, .is_send = is_send, .inner = inner};
  *out_p = c;
  return xcclSuccess;
}

static xcclResult_t wrap_req(fault_comm_t *c, void *inner, void **req_p) {
  if (!inner) { /* no resources: the caller retries */
    *req_p = NULL;
    return xcclSuccess;
  }
  fault_req_t *r = malloc(sizeof(*r));
  if (!r) return err_set(xcclSystemError, LOG_NET, "out of memory for a fault-injection request");
  *r = (fault_req_t){.inner = inner, .comm = c, .next = c->reqs};
  if (c->reqs) c->reqs->prev = r;
  c->reqs = r;
  *req_p = r;
  return xcclSuccess;
}

static void req_free(fault_req_t *r) {
  if (r->prev) r->prev->next = r->next;
  else r->comm->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  free(r);
}

static xcclResult_t f_init(void) { return xcclSuccess; } /* the inner one is initialised */
static xcclResult_t f_devices(int *n) { return inner_ops->devices(n); }
static xcclResult_t f_props(int d, net_props_t *p) { return inner_ops->get_properties(d, p); }
static xcclResult_t f_listen(int d, net_handle_t *h, void **l) { return inner_ops->listen(d, h, l); }
static xcclResult_t f_close_listen(void *l) { return inner_ops->close_listen(l); }
static xcclResult_t f_connect_abandon(void *h) { return inner_ops->connect_abandon(h); }

static xcclResult_t f_connect(int d, net_handle_t *h, void **send_comm_p) {
  void *inner = NULL;
  TRY(inner_ops->connect(d, h, &inner));
  return wrap_comm(inner, 1, send_comm_p);
}

static xcclResult_t f_accept(void *l, void **recv_comm_p) {
  void *inner = NULL;
  TRY(inner_ops->accept(l, &inner));
  return wrap_comm(inner, 0, recv_comm_p);
}

static xcclResult_t f_reg_mr(void *c, void *d, size_t s, int t, void **m) { return inner_ops->reg_mr(unwrap(c), d, s, t, m); }
static xcclResult_t f_dereg_mr(void *c, void *m) { return inner_ops->dereg_mr(unwrap(c), m); }

static xcclResult_t f_isend(void *comm, void *data, size_t size, void *mh, void **req_p) {
  fault_comm_t *c = comm;
  /* A send with a registration comes from GPU memory (GPUDirect RDMA, the
   * proxy's only such sends), which the CPU cannot corrupt: it goes as is. */
  switch (fault_on_send(c->ctx, &c->stream, inner_ops->name, mh ? NULL : data, size)) {
    case FAULT_CLOSE:
      inner_ops->shutdown(c->inner);
      return err_set(xcclRemoteError, LOG_NET, "fault injection (XCCL_FAULT) closed this %s connection",
                     inner_ops->name);
    case FAULT_ERROR:
      return err_set(xcclSystemError, LOG_NET, "fault injection (XCCL_FAULT) failed a %s send as a completion error",
                     inner_ops->name);
    default: break;
  }
  void *inner = NULL;
  TRY(inner_ops->isend(c->inner, data, size, mh, &inner));
  return wrap_req(c, inner, req_p);
}

static xcclResult_t f_irecv(void *comm, void *data, size_t size, void *mh, void **req_p) {
  void *inner = NULL;
  TRY(inner_ops->irecv(unwrap(comm), data, size, mh, &inner));
  return wrap_req(comm, inner, req_p);
}

static xcclResult_t f_test(void *req, int *done_p, size_t *size_p) {
  fault_req_t *r = req;
  xcclResult_t res = inner_ops->test(r->inner, done_p, size_p);
  if (res != xcclSuccess || *done_p) req_free(r); /* the inner request is gone either way */
  return res;
}

static xcclResult_t f_iflush(void *c, void *d, size_t s, void *m, void **req_p) {
  void *inner = NULL;
  TRY(inner_ops->iflush(unwrap(c), d, s, m, &inner));
  return wrap_req(c, inner, req_p);
}

static xcclResult_t f_close(void *comm) {
  fault_comm_t *c = comm;
  if (!c) return xcclSuccess;
  xcclResult_t res = c->is_send ? inner_ops->close_send(c->inner) : inner_ops->close_recv(c->inner);
  while (c->reqs) req_free(c->reqs); /* the inner comm took its requests with it */
  free(c);
  return res;
}

static xcclResult_t f_shutdown(void *comm) { return inner_ops->shutdown(unwrap(comm)); }
static int f_poll_fds(void *comm, int *fds, int max) { return inner_ops->poll_fds(unwrap(comm), fds, max); }

void net_fault_bind(const xccl_net_ops_v1_t *ops, void *send_comm, const fault_ctx_t *ctx) {
  if (ops == &fault_ops && send_comm) ((fault_comm_t *)send_comm)->ctx = ctx;
}

const xccl_net_ops_v1_t *net_fault_wrap(const xccl_net_ops_v1_t *inner) {
  if (inner_ops == inner) return &fault_ops;
  inner_ops = inner;
  fault_ops = (xccl_net_ops_v1_t){
      .name = inner->name, .init = f_init, .devices = f_devices, .get_properties = f_props, .listen = f_listen,
      .connect = f_connect, .accept = f_accept, .reg_mr = f_reg_mr, .dereg_mr = f_dereg_mr, .isend = f_isend,
      .irecv = f_irecv, .test = f_test, .iflush = f_iflush, .close_send = f_close, .close_recv = f_close,
      .close_listen = f_close_listen, .shutdown = f_shutdown, .connect_abandon = f_connect_abandon,
      .poll_fds = f_poll_fds};
  return &fault_ops;
}
