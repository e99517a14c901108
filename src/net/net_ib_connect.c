/*
 * net_ib_connect.c — connections of the ib transport, through rdma_cm.
 *
 * listen() binds an rdma_cm id to the device's address (port chosen by the
 * kernel) and puts address, port, a random connection id and the QP count in
 * the handle. connect() makes one rdma_cm id per QP and walks each through
 * address resolution, route resolution, QP creation and rdma_connect, on a
 * non-blocking event channel: every call handles the events that arrived
 * and returns. accept() takes the connect requests that carry the handle's
 * connection id (anything else is rejected and logged), gives each a QP and
 * accepts it; the comm is complete when every QP is established. An
 * established comm keeps its own event channel, where a disconnect by the
 * peer shows up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"
#include "net_ib.h"

#define IB_MAGIC 0x58494230u /* "XIB0" */
#define IB_RESOLVE_MS 5000

/* What travels in the handle. */
typedef struct {
  uint32_t magic;
  uint16_t nqps;
  uint16_t family;
  uint64_t conn_id;
  uint8_t addr[16];
  uint16_t port; /* network order */
  uint16_t flags; /* IB_HANDLE_* */
  uint32_t scope_id;
} ib_handle_t;

#define IB_HANDLE_SPLIT 0x1 /* the receiver splits messages over its QPs (XCCL_IB_SPLIT_DATA_ON_QPS) */

/* connect() progress, in the handle's private bytes. */
typedef struct {
  ib_comm_t *comm;
} ib_handle_state_t;

_Static_assert(sizeof(ib_handle_t) <= NET_HANDLE_PUBLIC, "ib handle too large");
_Static_assert(NET_HANDLE_PUBLIC + sizeof(ib_handle_state_t) <= NET_HANDLE_BYTES, "no room for connect state");
_Static_assert(sizeof(ib_conn_priv_t) <= 56, "connect private data too large for rdma_cm");

typedef struct {
  int dev;
  struct rdma_event_channel *chan;
  struct rdma_cm_id *id;
  uint64_t conn_id;
  int nqps;
  int split;       /* XCCL_IB_SPLIT_DATA_ON_QPS when the listener was made */
  ib_comm_t *comm; /* being accepted */
} ib_listen_t;

static struct rdma_event_channel *ib_channel(void) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  if (!ch) return NULL;
  int fl = fcntl(ch->fd, F_GETFL);
  if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    rdma_destroy_event_channel(ch);
    return NULL;
  }
  return ch;
}

/* The smallest message a send comm on dev writes in adaptive-routing form
 * (SIZE_MAX: none). XCCL_IB_ADAPTIVE_ROUTING -1 means on where the port is
 * InfiniBand (whose switches may spray packets over paths, as NCCL does
 * there) and off on RoCE. */
static size_t ib_ar_min(int dev) {
  int ar = (int)config_int(CFG_IB_ADAPTIVE_ROUTING);
  if (ar < 0) ar = ib_devs[dev].link_layer == IBV_LINK_LAYER_INFINIBAND;
  return ar ? (size_t)config_int(CFG_IB_AR_THRESHOLD) : SIZE_MAX;
}

static ib_comm_t *ib_comm_new(int is_send, int nqps) {
  ib_comm_t *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->is_send = is_send;
  c->nqps = nqps;
  c->ar_min = SIZE_MAX;
  c->max_inline = 0;
  for (int i = 0; i < NET_MAX_REQUESTS; i++) c->reqs[i].comm = c;
  return c;
}

/* The per-comm verbs objects, once the device is known: CQ, and the fifo
 * (send side) or the clear-to-send entries (recv side). */
static xcclResult_t ib_comm_setup(ib_comm_t *c, struct ibv_context *verbs) {
  if (c->ctx) {
    if (c->ctx->verbs != verbs)
      return err_set(xcclSystemError, LOG_NET, "ib: the queue pairs of one connection resolved to different devices");
    return xcclSuccess;
  }
  TRY(ib_ctx_get(verbs, &c->ctx));
  int cqe = c->nqps * (3 * NET_MAX_REQUESTS + IB_CTS_SIGNAL + 16) + 16;
  c->cq = ibv_create_cq(verbs, cqe, c, NULL, 0);
  if (!c->cq) return err_set(xcclSystemError, LOG_NET, "ib: ibv_create_cq(%d) failed: %s", cqe, strerror(errno));
  size_t bytes = sizeof(ib_cts_t) * NET_MAX_REQUESTS;
  ib_cts_t **buf = c->is_send ? &c->fifo : &c->cts;
  struct ibv_mr **mr = c->is_send ? &c->fifo_mr : &c->cts_mr;
  if (posix_memalign((void **)buf, 4096, bytes) != 0) {
    *buf = NULL;
    return err_set(xcclSystemError, LOG_NET, "ib: out of memory for a clear-to-send fifo");
  }
  memset(*buf, 0, bytes);
  *mr = ibv_reg_mr(c->ctx->pd, *buf, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!*mr) return err_set(xcclSystemError, LOG_NET, "ib: ibv_reg_mr of the fifo failed: %s", strerror(errno));
  return xcclSuccess;
}

static xcclResult_t ib_qp_create(ib_comm_t *c, struct rdma_cm_id *id) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_context = c;
  a.send_cq = c->cq;
  a.recv_cq = c->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 2 * NET_MAX_REQUESTS + IB_CTS_SIGNAL + 4;
  a.cap.max_recv_wr = NET_MAX_REQUESTS + 4;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = 256;
  if (rdma_create_qp(id, c->ctx->pd, &a) != 0) {
    a.cap.max_inline_data = 0; /* a device without inline sends */
    if (rdma_create_qp(id, c->ctx->pd, &a) != 0)
      return err_set(xcclSystemError, LOG_NET, "ib: rdma_create_qp failed: %s", strerror(errno));
  }
  if (c->max_inline == 0 || a.cap.max_inline_data < c->max_inline) c->max_inline = a.cap.max_inline_data;
  if (!c->port && id->port_num > 0 && id->port_num <= IB_MAX_PORTS) {
    c->port = id->port_num;
    c->port_errs0 = atomic_load_explicit(&c->ctx->port_errs[c->port], memory_order_acquire);
  }
  return xcclSuccess;
}

static void ib_conn_param(struct rdma_conn_param *p, const ib_conn_priv_t *priv) {
  memset(p, 0, sizeof(*p));
  p->private_data = priv;
  p->private_data_len = priv ? sizeof(*priv) : 0;
  p->responder_resources = 1;
  p->initiator_depth = 1;
  p->retry_count = (uint8_t)config_int(CFG_IB_RETRY_CNT);
  p->rnr_retry_count = 7;
}

/* Traffic class and ack timeout, before route resolution. */
static void ib_id_options(struct rdma_cm_id *id) {
  uint8_t tos = (uint8_t)config_int(CFG_IB_TC), timeout = (uint8_t)config_int(CFG_IB_TIMEOUT);
  if (tos && rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)) != 0)
    WARN(NET, "ib: setting traffic class %u failed: %s", tos, strerror(errno));
  if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)) != 0)
    INFO(NET, "ib: setting ack timeout %u failed: %s", timeout, strerror(errno));
}

/* Service level and partition key on InfiniBand routes (RoCE has neither
 * in its path: there the traffic class decides). */
static void ib_route_options(struct rdma_cm_id *id) {
  int sl = (int)config_int(CFG_IB_SL), pkey = (int)config_int(CFG_IB_PKEY);
  if (id->route.num_paths < 1 || !id->route.path_rec) return;
  struct ibv_port_attr pa;
  if (ibv_query_port(id->verbs, id->port_num, &pa) != 0 || pa.link_layer != IBV_LINK_LAYER_INFINIBAND) return;
  if (sl >= 0) id->route.path_rec->sl = (uint8_t)sl;
  if (pkey) id->route.path_rec->pkey = htons((uint16_t)pkey);
}

static int ib_id_index(ib_comm_t *c, struct rdma_cm_id *id) {
  for (int i = 0; i < c->nqps; i++)
    if (c->ids[i] == id) return i;
  return -1;
}

/* ---- listen / accept ---- */

xcclResult_t ib_listen(int dev, net_handle_t *handle_p, void **listen_comm_p) {
  if (dev < 0 || dev >= ib_ndevs) return err_set(xcclInvalidArgument, LOG_NET, "ib: no device %d", dev);
  xcclResult_t res;
  ib_listen_t *l = calloc(1, sizeof(*l));
  if (!l) return err_set(xcclSystemError, LOG_NET, "ib: out of memory for a listener");
  l->dev = dev;
  l->nqps = (int)config_int(CFG_IB_QPS_PER_CONNECTION);
  l->split = config_bool(CFG_IB_SPLIT_DATA_ON_QPS);
  if (getrandom(&l->conn_id, sizeof(l->conn_id), 0) != sizeof(l->conn_id)) {
    res = err_set(xcclSystemError, LOG_NET, "getrandom failed: %s", strerror(errno));
    goto free_listen;
  }
  l->chan = ib_channel();
  if (!l->chan) {
    res = err_set(xcclSystemError, LOG_NET, "ib: rdma_create_event_channel failed: %s", strerror(errno));
    goto free_listen;
  }
  if (rdma_create_id(l->chan, &l->id, l, RDMA_PS_TCP) != 0) {
    res = err_set(xcclSystemError, LOG_NET, "ib: rdma_create_id failed: %s", strerror(errno));
    goto destroy_chan;
  }
  ib_sockaddr_t a = ib_devs[dev].addr;
  char s[96];
  if (rdma_bind_addr(l->id, &a.sa) != 0) {
    res = err_set(xcclSystemError, LOG_NET, "ib: rdma_bind_addr to %s (%s) failed: %s", ib_addr_str(&a, s, sizeof(s)),
                  ib_devs[dev].name, strerror(errno));
    goto destroy_id;
  }
  if (rdma_listen(l->id, 64) != 0) {
    res = err_set(xcclSystemError, LOG_NET, "ib: rdma_listen on %s failed: %s", ib_addr_str(&a, s, sizeof(s)),
                  strerror(errno));
    goto destroy_id;
  }
  ib_handle_t h;
  memset(&h, 0, sizeof(h));
  h.magic = IB_MAGIC;
  h.nqps = (uint16_t)l->nqps;
  h.flags = l->split ? IB_HANDLE_SPLIT : 0;
  h.family = a.sa.sa_family;
  h.conn_id = l->conn_id;
  h.port = rdma_get_src_port(l->id);
  if (a.sa.sa_family == AF_INET) {
    memcpy(h.addr, &a.in.sin_addr, 4);
  } else {
    memcpy(h.addr, &a.in6.sin6_addr, 16);
    h.scope_id = a.in6.sin6_scope_id;
  }
  memset(handle_p, 0, sizeof(*handle_p));
  memcpy(handle_p->data, &h, sizeof(h));
  *listen_comm_p = l;
  return xcclSuccess;
destroy_id:
  rdma_destroy_id(l->id);
destroy_chan:
  rdma_destroy_event_channel(l->chan);
free_listen:
  free(l);
  return res;
}

static void ib_reject(struct rdma_cm_id *id, const char *why) {
  char s[96];
  ib_sockaddr_t peer;
  memcpy(&peer, rdma_get_peer_addr(id), sizeof(peer));
  WARN(NET, "ib: refused a connection request from %s: %s", ib_addr_str(&peer, s, sizeof(s)), why);
  rdma_reject(id, NULL, 0);
}

/* A connect request on the listener: becomes one QP of l->comm, or is
 * rejected. Returns an error only for local failures. */
static xcclResult_t ib_on_request(ib_listen_t *l, struct rdma_cm_event *ev, int *reject_p) {
  ib_conn_priv_t p;
  const char *why = NULL;
  *reject_p = 1;
  if (!ev->param.conn.private_data || ev->param.conn.private_data_len < sizeof(p)) {
    ib_reject(ev->id, "no xccl connection data");
    return xcclSuccess;
  }
  memcpy(&p, ev->param.conn.private_data, sizeof(p));
  if (p.magic != IB_MAGIC || p.conn_id != l->conn_id) why = "it does not carry this connection's id";
  else if (p.nqps != l->nqps || p.qp_index >= p.nqps) why = "its queue pair index or count is inconsistent";
  else if (l->comm && l->comm->ids[p.qp_index]) why = "its queue pair index was already connected";
  if (why) {
    ib_reject(ev->id, why);
    return xcclSuccess;
  }
  if (!l->comm) {
    l->comm = ib_comm_new(0, l->nqps);
    if (!l->comm) return err_set(xcclSystemError, LOG_NET, "ib: out of memory for a comm");
    l->comm->rfifo_addr = p.fifo_addr;
    l->comm->rfifo_rkey = p.fifo_rkey;
    l->comm->fault_rkey = config_bool(CFG_IB_FAULT_RKEY);
    l->comm->split = l->split;
    ib_sockaddr_t peer;
    memcpy(&peer, rdma_get_peer_addr(ev->id), sizeof(peer));
    ib_peer_name(&peer, l->dev, l->comm->peer, sizeof(l->comm->peer));
  }
  ib_comm_t *c = l->comm;
  TRY(ib_comm_setup(c, ev->id->verbs));
  TRY(ib_qp_create(c, ev->id));
  c->ids[p.qp_index] = ev->id;
  ev->id->context = c;
  *reject_p = 0;
  struct rdma_conn_param cp;
  ib_conn_param(&cp, NULL);
  if (rdma_accept(ev->id, &cp) != 0)
    return err_set(xcclSystemError, LOG_NET, "ib: rdma_accept from %s failed: %s", c->peer, strerror(errno));
  return xcclSuccess;
}

static int ib_accept_complete(const ib_comm_t *c) {
  int n = 0;
  for (int i = 0; c && i < c->nqps; i++) n += c->established[i];
  return c && n == c->nqps;
}

xcclResult_t ib_accept(void *listen_comm, void **recv_comm_p) {
  ib_listen_t *l = listen_comm;
  struct rdma_cm_event *ev;
  xcclResult_t res = xcclSuccess;
  /* Events after the last ESTABLISHED (a peer that disconnects at once)
   * stay queued for the comm: rdma_migrate_id takes them along. */
  while (res == xcclSuccess && !ib_accept_complete(l->comm) && rdma_get_cm_event(l->chan, &ev) == 0) {
    struct rdma_cm_id *id = ev->id;
    int reject = 0, i;
    switch (ev->event) {
      case RDMA_CM_EVENT_CONNECT_REQUEST:
        res = ib_on_request(l, ev, &reject);
        break;
      case RDMA_CM_EVENT_ESTABLISHED:
        if (l->comm && (i = ib_id_index(l->comm, id)) >= 0) l->comm->established[i] = 1;
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        if (l->comm && (i = ib_id_index(l->comm, id)) >= 0 && l->comm->established[i]) {
          l->comm->peer_gone = 1; /* the data calls report it */
          snprintf(l->comm->gone_why, sizeof(l->comm->gone_why), "%s", rdma_event_str(ev->event));
          break;
        }
        /* fall through */
      default:
        if (l->comm && ib_id_index(l->comm, id) >= 0)
          res = err_set(xcclRemoteError, LOG_NET, "ib: accepting a connection from %s: %s (status %d)",
                        l->comm->peer, rdma_event_str(ev->event), ev->status);
        else
          INFO(NET, "ib: listener event %s ignored", rdma_event_str(ev->event));
    }
    rdma_ack_cm_event(ev);
    if (reject) rdma_destroy_id(id);
  }
  if (res != xcclSuccess) return res;
  ib_comm_t *c = l->comm;
  if (!ib_accept_complete(c)) {
    *recv_comm_p = NULL;
    return xcclSuccess;
  }
  /* Complete: the comm's ids move to a channel of their own. */
  c->chan = ib_channel();
  if (!c->chan) return err_set(xcclSystemError, LOG_NET, "ib: rdma_create_event_channel failed: %s", strerror(errno));
  for (int i = 0; i < c->nqps; i++)
    if (rdma_migrate_id(c->ids[i], c->chan) != 0)
      return err_set(xcclSystemError, LOG_NET, "ib: rdma_migrate_id failed: %s", strerror(errno));
  l->comm = NULL;
  INFO(NET, "ib: accepted a connection from %s (%d QP%s on port %d, inline %u)", c->peer, c->nqps,
       c->nqps > 1 ? "s" : "", c->port, c->max_inline);
  *recv_comm_p = c;
  return xcclSuccess;
}

xcclResult_t ib_close_listen(void *listen_comm) {
  ib_listen_t *l = listen_comm;
  if (!l) return xcclSuccess;
  if (l->comm) ib_close_comm(l->comm);
  rdma_destroy_id(l->id);
  rdma_destroy_event_channel(l->chan);
  free(l);
  return xcclSuccess;
}

/* ---- connect ---- */

static xcclResult_t ib_resolve(ib_comm_t *c, int i);
static xcclResult_t ib_retry_later(ib_comm_t *c, int i, const char *what, int err);

static xcclResult_t ib_connect_start(int dev, const ib_handle_t *h, ib_comm_t **comm_p) {
  if (h->nqps < 1 || h->nqps > IB_MAX_QPS)
    return err_set(xcclInternalError, LOG_NET, "ib connect: the handle asks for %u queue pairs", h->nqps);
  ib_comm_t *c = ib_comm_new(1, h->nqps);
  if (!c) return err_set(xcclSystemError, LOG_NET, "ib: out of memory for a comm");
  c->split = (h->flags & IB_HANDLE_SPLIT) != 0;
  c->ar_min = ib_ar_min(dev);
  xcclResult_t res = xcclSuccess;
  ib_sockaddr_t dst;
  memset(&dst, 0, sizeof(dst));
  if (h->family == AF_INET) {
    dst.in.sin_family = AF_INET;
    memcpy(&dst.in.sin_addr, h->addr, 4);
    dst.in.sin_port = h->port;
  } else {
    dst.in6.sin6_family = AF_INET6;
    memcpy(&dst.in6.sin6_addr, h->addr, 16);
    dst.in6.sin6_port = h->port;
    dst.in6.sin6_scope_id = h->scope_id;
  }
  ib_peer_name(&dst, dev, c->peer, sizeof(c->peer));
  c->dst = dst;
  c->dev = dev;
  c->fault_unreachable = (int)config_int(CFG_IB_FAULT_UNREACHABLE);
  c->chan = ib_channel();
  if (!c->chan) {
    res = err_set(xcclSystemError, LOG_NET, "ib: rdma_create_event_channel failed: %s", strerror(errno));
    goto fail;
  }
  for (int i = 0; i < c->nqps; i++)
    if ((res = ib_resolve(c, i)) != xcclSuccess) goto fail;
  *comm_p = c;
  return xcclSuccess;
fail:
  ib_close_comm(c);
  return res;
}

/* A new rdma_cm id for QP i, and its address resolution started. An error
 * rdma_cm reports at once (no route: ENETUNREACH) is left to the retry
 * rule as the event form of it would be. */
static xcclResult_t ib_resolve(ib_comm_t *c, int i) {
  if (rdma_create_id(c->chan, &c->ids[i], c, RDMA_PS_TCP) != 0) {
    c->ids[i] = NULL;
    return err_set(xcclSystemError, LOG_NET, "ib: rdma_create_id failed: %s", strerror(errno));
  }
  ib_id_options(c->ids[i]);
  ib_sockaddr_t src = ib_devs[c->dev].addr, dst = c->dst;
  if (c->fault_unreachable > 0 && dst.sa.sa_family == AF_INET) { /* test hook: XCCL_IB_FAULT_UNREACHABLE */
    c->fault_unreachable--;
    inet_pton(AF_INET, "192.0.2.1", &dst.in.sin_addr); /* TEST-NET-1: routed nowhere */
  }
  int same_family = src.sa.sa_family == dst.sa.sa_family;
  if (rdma_resolve_addr(c->ids[i], same_family ? &src.sa : NULL, &dst.sa, IB_RESOLVE_MS) != 0)
    return ib_retry_later(c, i, "rdma_resolve_addr", errno);
  return xcclSuccess;
}

/* Address and route errors are retried: a route that is missing for a
 * while (a link flapping, a switch rebooting, ARP not answered yet) comes
 * back. XCCL_IB_CONNECT_RETRIES times per QP, waiting 100 ms, 200 ms, ...
 * (at most 3.2 s) between tries, each at INFO; then the connection fails
 * naming the peer and the tries. The id is replaced once its event is
 * acknowledged (ib_retry_due). */
static xcclResult_t ib_retry_later(ib_comm_t *c, int i, const char *what, int err) {
  int max = (int)config_int(CFG_IB_CONNECT_RETRIES);
  if (c->retries[i] >= max)
    return err_set(xcclSystemError, LOG_NET, "ib: connecting to %s: %s failed: %s, %d time%s (XCCL_IB_CONNECT_RETRIES=%d)",
                   c->peer, what, strerror(err), c->retries[i] + 1, c->retries[i] ? "s" : "", max);
  int shift = c->retries[i] < 5 ? c->retries[i] : 5;
  uint64_t wait_ms = 100ull << shift;
  c->retries[i]++;
  c->retry_at_ns[i] = clock_ns() + wait_ms * 1000000ull;
  INFO(NET, "ib: connecting to %s (QP %d): %s failed: %s; retry %d of %d in %llu ms", c->peer, i, what, strerror(err),
       c->retries[i], max, (unsigned long long)wait_ms);
  return xcclSuccess;
}

/* The QPs whose retry is due get a new id. */
static xcclResult_t ib_retry_due(ib_comm_t *c) {
  uint64_t now = clock_ns();
  for (int i = 0; i < c->nqps; i++) {
    if (!c->retry_at_ns[i] || now < c->retry_at_ns[i]) continue;
    c->retry_at_ns[i] = 0;
    if (c->ids[i]) rdma_destroy_id(c->ids[i]); /* no QP yet: errors before the route is resolved */
    c->ids[i] = NULL;
    TRY(ib_resolve(c, i));
  }
  return xcclSuccess;
}

/* One rdma_cm event of a connect in progress. */
static xcclResult_t ib_connect_event(ib_comm_t *c, const ib_handle_t *h, struct rdma_cm_event *ev) {
  int i = ib_id_index(c, ev->id);
  if (i < 0) return xcclSuccess;
  struct rdma_cm_id *id = ev->id;
  switch (ev->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      TRY(ib_comm_setup(c, id->verbs));
      if (rdma_resolve_route(id, IB_RESOLVE_MS) != 0)
        return err_set(xcclSystemError, LOG_NET, "ib: rdma_resolve_route to %s failed: %s", c->peer, strerror(errno));
      return xcclSuccess;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      ib_route_options(id);
      TRY(ib_qp_create(c, id));
      ib_conn_priv_t p = {.magic = IB_MAGIC, .qp_index = (uint16_t)i, .nqps = (uint16_t)c->nqps,
                          .conn_id = h->conn_id, .fifo_addr = (uintptr_t)c->fifo, .fifo_rkey = c->fifo_mr->rkey};
      struct rdma_conn_param cp;
      ib_conn_param(&cp, &p);
      if (rdma_connect(id, &cp) != 0)
        return err_set(xcclSystemError, LOG_NET, "ib: rdma_connect to %s failed: %s", c->peer, strerror(errno));
      return xcclSuccess;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      c->established[i] = 1;
      return xcclSuccess;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return ib_retry_later(c, i, ev->event == RDMA_CM_EVENT_ADDR_ERROR ? "address resolution" : "route resolution",
                            ev->status < 0 ? -ev->status : ev->status);
    default:
      return err_set(xcclRemoteError, LOG_NET, "ib: connecting to %s: %s (status %d)", c->peer,
                     rdma_event_str(ev->event), ev->status);
  }
}

xcclResult_t ib_connect(int dev, net_handle_t *handle, void **send_comm_p) {
  ib_handle_t h;
  memcpy(&h, handle->data, sizeof(h));
  if (h.magic != IB_MAGIC)
    return err_set(xcclInternalError, LOG_NET, "ib connect: the peer's handle is not an ib handle");
  if (dev < 0 || dev >= ib_ndevs) return err_set(xcclInvalidArgument, LOG_NET, "ib: no device %d", dev);
  ib_handle_state_t *st = (ib_handle_state_t *)(handle->data + NET_HANDLE_PUBLIC);
  if (!st->comm) TRY(ib_connect_start(dev, &h, &st->comm));
  ib_comm_t *c = st->comm;
  struct rdma_cm_event *ev;
  xcclResult_t res = xcclSuccess;
  while (res == xcclSuccess && rdma_get_cm_event(c->chan, &ev) == 0) {
    res = ib_connect_event(c, &h, ev);
    rdma_ack_cm_event(ev);
  }
  if (res == xcclSuccess) res = ib_retry_due(c);
  if (res != xcclSuccess) return res; /* the caller abandons the handle */
  int n = 0;
  for (int i = 0; i < c->nqps; i++) n += c->established[i];
  if (n < c->nqps) {
    *send_comm_p = NULL;
    return xcclSuccess;
  }
  char ar[64] = "one write with immediate per message";
  if (c->ar_min != SIZE_MAX) snprintf(ar, sizeof(ar), "adaptive-routing form from %zu bytes", c->ar_min);
  INFO(NET, "ib: connected to %s (%d QP%s on port %d, inline %u; %s; %s)", c->peer, c->nqps, c->nqps > 1 ? "s" : "",
       c->port, c->max_inline,
       c->nqps == 1 ? "messages whole" : c->split ? "messages split over the QPs" : "messages round-robin over the QPs",
       ar);
  st->comm = NULL;
  *send_comm_p = c;
  return xcclSuccess;
}

xcclResult_t ib_connect_abandon(void *handle) {
  ib_handle_state_t *st = (ib_handle_state_t *)(((net_handle_t *)handle)->data + NET_HANDLE_PUBLIC);
  if (st->comm) ib_close_comm(st->comm);
  st->comm = NULL;
  return xcclSuccess;
}

/* ---- established comms ---- */

void ib_comm_events(ib_comm_t *c) {
  struct rdma_cm_event *ev;
  while (c->chan && rdma_get_cm_event(c->chan, &ev) == 0) {
    enum rdma_cm_event_type t = ev->event;
    rdma_ack_cm_event(ev);
    if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL || t == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
      if (!c->peer_gone) snprintf(c->gone_why, sizeof(c->gone_why), "%s", rdma_event_str(t));
      c->peer_gone = 1;
    }
  }
}

xcclResult_t ib_shutdown(void *comm) {
  ib_comm_t *c = comm;
  for (int i = 0; c && i < c->nqps; i++)
    if (c->ids[i] && c->established[i]) rdma_disconnect(c->ids[i]);
  return xcclSuccess;
}

xcclResult_t ib_close_comm(void *comm) {
  ib_comm_t *c = comm;
  if (!c) return xcclSuccess;
  for (int i = 0; i < c->nqps; i++) {
    if (!c->ids[i]) continue;
    if (c->established[i]) rdma_disconnect(c->ids[i]);
    if (c->ids[i]->qp) rdma_destroy_qp(c->ids[i]);
    rdma_destroy_id(c->ids[i]);
  }
  ib_flush_close(c);
  if (c->cq) ibv_destroy_cq(c->cq);
  if (c->fifo_mr) ibv_dereg_mr(c->fifo_mr);
  if (c->cts_mr) ibv_dereg_mr(c->cts_mr);
  free(c->fifo);
  free(c->cts);
  for (int i = 0; i < c->nregs; i++) ib_reg_put(c->regs[i]);
  free(c->regs);
  if (c->chan) rdma_destroy_event_channel(c->chan);
  free(c);
  return xcclSuccess;
}
