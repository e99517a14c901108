/*
 * net_ib_async.c — one thread per HCA reads its asynchronous events. A QP
 * or CQ that breaks marks its comm failed (the data path then returns
 * xcclRemoteError with the event's name instead of waiting); a port error
 * fails the comms on that port, a fatal device error every comm on it, at
 * their next call. Every event is acknowledged after it is handled, and
 * ibv_destroy_qp/cq wait for that, so a comm is never freed under the thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "net_ib.h"
#include "thread.h"

static void ib_async_fail(ib_comm_t *c, const char *dev, const struct ibv_async_event *ev) {
  if (!c || atomic_load(&c->async_failed)) return;
  snprintf(c->async_msg, sizeof(c->async_msg), "%s on %s", ibv_event_type_str(ev->event_type), dev);
  atomic_store_explicit(&c->async_failed, 1, memory_order_release);
}

static void *ib_async_main(void *arg) {
  ib_ctx_t *ctx = arg;
  const char *dev = ibv_get_device_name(ctx->verbs->device);
  int errors = 0;
  for (;;) {
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx->verbs, &ev) != 0) {
      if (errno == EINTR || ++errors < 100) continue;
      WARN(NET, "ib: reading async events of %s failed: %s; no more are read", dev, strerror(errno));
      return NULL;
    }
    switch (ev.event_type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_PATH_MIG_ERR:
        WARN(NET, "ib: %s: %s", dev, ibv_event_type_str(ev.event_type));
        ib_async_fail(ev.element.qp->qp_context, dev, &ev);
        break;
      case IBV_EVENT_CQ_ERR:
        WARN(NET, "ib: %s: %s", dev, ibv_event_type_str(ev.event_type));
        ib_async_fail(ev.element.cq->cq_context, dev, &ev);
        break;
      case IBV_EVENT_DEVICE_FATAL:
        WARN(NET, "ib: %s: %s; every connection on it fails", dev, ibv_event_type_str(ev.event_type));
        atomic_store_explicit(&ctx->fatal, 1, memory_order_release);
        break;
      case IBV_EVENT_PORT_ERR:
        WARN(NET, "ib: %s port %d: %s; the connections on it fail", dev, ev.element.port_num,
             ibv_event_type_str(ev.event_type));
        if (ev.element.port_num > 0 && ev.element.port_num <= IB_MAX_PORTS)
          atomic_fetch_add_explicit(&ctx->port_errs[ev.element.port_num], 1, memory_order_acq_rel);
        break;
      default:
        INFO(NET, "ib: %s: %s", dev, ibv_event_type_str(ev.event_type));
    }
    ibv_ack_async_event(&ev);
  }
}

xcclResult_t ib_async_start(ib_ctx_t *ctx) {
  int rc = thread_start_detached(ib_async_main, ctx);
  if (rc != 0)
    return err_set(xcclSystemError, LOG_NET, "ib: cannot start the async-event thread of %s: %s",
                   ibv_get_device_name(ctx->verbs->device), strerror(rc));
  ctx->async_started = 1;
  return xcclSuccess;
}
