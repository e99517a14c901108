#include "net.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "fault.h"
#include "error.h"
#include "log.h"

/* Typed "not supported" defaults that a transport's table is laid over. */
static xcclResult_t unsupported(const char *what) {
  return err_set(xcclInternalError, LOG_NET, "this transport does not support %s", what);
}
static xcclResult_t def_init(void) { return xcclSuccess; }
static xcclResult_t def_devices(int *n) { return *n = 0, xcclSuccess; }
static xcclResult_t def_props(int d, net_props_t *p) { return unsupported("get_properties"); }
static xcclResult_t def_listen(int d, net_handle_t *h, void **c) { return unsupported("listen"); }
static xcclResult_t def_connect(int d, net_handle_t *h, void **c) { return unsupported("connect"); }
static xcclResult_t def_accept(void *l, void **c) { return unsupported("accept"); }
static xcclResult_t def_reg_mr(void *c, void *d, size_t s, int t, void **m) { return *m = NULL, xcclSuccess; }
static xcclResult_t def_dereg_mr(void *c, void *m) { return xcclSuccess; }
static xcclResult_t def_isend(void *c, void *d, size_t s, void *m, void **r) { return unsupported("isend"); }
static xcclResult_t def_irecv(void *c, void *d, size_t s, void *m, void **r) { return unsupported("irecv"); }
static xcclResult_t def_test(void *r, int *d, size_t *s) { return unsupported("test"); }
static xcclResult_t def_iflush(void *c, void *d, size_t s, void *m, void **r) { return *r = NULL, xcclSuccess; }
static xcclResult_t def_close(void *c) { return xcclSuccess; }
static int def_poll_fds(void *c, int *fds, int max) { return 0; }

static const xccl_net_ops_v1_t net_defaults = {
    .name = "(none)",
    .init = def_init,
    .devices = def_devices,
    .get_properties = def_props,
    .listen = def_listen,
    .connect = def_connect,
    .accept = def_accept,
    .reg_mr = def_reg_mr,
    .dereg_mr = def_dereg_mr,
    .isend = def_isend,
    .irecv = def_irecv,
    .test = def_test,
    .iflush = def_iflush,
    .close_send = def_close,
    .close_recv = def_close,
    .close_listen = def_close,
    .shutdown = def_close,
    .connect_abandon = def_close,
    .poll_fds = def_poll_fds,
};

/* ib first: it is chosen when it has devices, socket otherwise. */
static const xccl_net_ops_v1_t *const net_builtin[] = {
#ifdef XCCL_HAVE_IB
    &net_ib_ops,
#endif
    &net_socket_ops};
#define NET_NBUILTIN (sizeof(net_builtin) / sizeof(net_builtin[0]))

static xccl_net_ops_v1_t net_complete[NET_NBUILTIN];
static int net_ready[NET_NBUILTIN];
static pthread_mutex_t net_lock = PTHREAD_MUTEX_INITIALIZER;

#define FILL(slot) t.slot = src->slot ? src->slot : net_defaults.slot
static void net_fill(xccl_net_ops_v1_t *dst, const xccl_net_ops_v1_t *src) {
  xccl_net_ops_v1_t t;
  FILL(name); FILL(init); FILL(devices); FILL(get_properties); FILL(listen); FILL(connect);
  FILL(accept); FILL(reg_mr); FILL(dereg_mr); FILL(isend); FILL(irecv); FILL(test); FILL(iflush);
  FILL(close_send); FILL(close_recv); FILL(close_listen); FILL(shutdown); FILL(connect_abandon);
  FILL(poll_fds);
  *dst = t;
}
#undef FILL

int net_ib_built(void) {
#ifdef XCCL_HAVE_IB
  return 1;
#else
  return 0;
#endif
}

xcclResult_t net_get(const xccl_net_ops_v1_t **ops_p) {
  const char *want = config_str(CFG_NET);
  xcclResult_t res = xcclSuccess;
  pthread_mutex_lock(&net_lock);
  for (size_t i = 0; i < NET_NBUILTIN; i++) {
    if (*want && strcasecmp(want, net_builtin[i]->name) != 0) continue;
    if (!net_ready[i]) {
      net_fill(&net_complete[i], net_builtin[i]);
      res = net_complete[i].init();
      if (res != xcclSuccess) {
        if (*want) break;
        continue;
      }
      net_ready[i] = 1;
    }
    int ndev = 0;
    res = net_complete[i].devices(&ndev);
    if (res == xcclSuccess && ndev > 0) {
      INFO(NET, "using network transport '%s' (%d device%s)", net_complete[i].name, ndev, ndev > 1 ? "s" : "");
      /* TLS covers the bootstrap and the socket transport only (as NCCL's
       * covers its own sockets): say so once where data goes over verbs. */
      static int tls_ib_warned;
      if (config_bool(CFG_TLS) && strcasecmp(net_complete[i].name, "ib") == 0 && !tls_ib_warned) {
        tls_ib_warned = 1;
        WARN(NET, "XCCL_TLS=1: the bootstrap is encrypted, but the ib transport's data is not (TLS covers sockets "
                  "only); set XCCL_NET=socket to encrypt the data too");
      }
      *ops_p = fault_enabled() ? net_fault_wrap(&net_complete[i]) : &net_complete[i];
      pthread_mutex_unlock(&net_lock);
      return xcclSuccess;
    }
    if (*want) break;
  }
  pthread_mutex_unlock(&net_lock);
  if (res != xcclSuccess) return err_prefix(res, "network transport '%s' failed to start", *want ? want : "socket");
  if (*want)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_NET=%s: no such transport with a usable device (built in: %s)", want,
#ifdef XCCL_HAVE_IB
                   "ib, socket"
#else
                   "socket"
#endif
    );
  return err_set(xcclSystemError, LOG_NET, "no network transport has a usable device");
}
