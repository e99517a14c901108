/*
 * net_ib_init.c — the ib transport's devices: verbs devices and ports as
 * rdma_cm sees them, filtered by XCCL_IB_HCA, each with the address rdma_cm
 * connects through; their properties (GPU memory in builds with CUDA); and
 * the ops table.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "net_ib.h"
#include "net_ib_hca.h"

int ib_ndevs;
ib_dev_t ib_devs[IB_MAX_DEVS];
static char ib_why[256] = "the ib transport was not initialised";

static ib_ctx_t ib_ctxs[IB_MAX_DEVS];
static int ib_nctxs;
static pthread_mutex_t ib_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

const char *ib_addr_str(const ib_sockaddr_t *a, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (a->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
    snprintf(buf, len, "%s:%u", ip, ntohs(a->in.sin_port));
  } else {
    inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
    snprintf(buf, len, "[%s]:%u", ip, ntohs(a->in6.sin6_port));
  }
  return buf;
}

/* "10.47.0.1:56023 from rxe0 port 1": a connection's messages name the
 * peer and this host's NIC, so that a fault reads as where it happened. */
const char *ib_peer_name(const ib_sockaddr_t *peer, int dev, char *buf, size_t len) {
  char a[INET6_ADDRSTRLEN + 16];
  ib_addr_str(peer, a, sizeof(a));
  if (dev < 0 || dev >= ib_ndevs) return snprintf(buf, len, "%s", a), buf;
  snprintf(buf, len, "%s from %s port %d", a, ib_devs[dev].name, ib_devs[dev].port);
  return buf;
}

/* Whether the device takes dma-buf registrations, asked before one is
 * promised: a registration of fd -1 fails with EBADF (or the like) where the
 * provider has the call, and with EOPNOTSUPP / EPROTONOSUPPORT where it (or
 * the kernel) does not. Logged once per device. */
static int ib_dmabuf_probe(struct ibv_pd *pd) {
  const char *dev = ibv_get_device_name(pd->context->device);
#ifdef XCCL_HAVE_IBV_DMABUF
  errno = 0;
  struct ibv_mr *mr = ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  int e = errno;
  if (mr) ibv_dereg_mr(mr);
  int ok = mr || (e != EOPNOTSUPP && e != EPROTONOSUPPORT && e != ENOSYS);
  INFO(NET, "ib: %s %s dma-buf registrations (probed: %s)", dev, ok ? "takes" : "does not take",
       mr ? "a registration of fd -1 succeeded" : strerror(e));
  return ok;
#else
  INFO(NET, "ib: %s: this build's rdma-core has no ibv_reg_dmabuf_mr (before rdma-core 34)", dev);
  return 0;
#endif
}

xcclResult_t ib_ctx_get(struct ibv_context *verbs, ib_ctx_t **ctx_p) {
  xcclResult_t res = xcclSuccess;
  pthread_mutex_lock(&ib_ctx_lock);
  ib_ctx_t *c = NULL;
  for (int i = 0; i < ib_nctxs && !c; i++)
    if (ib_ctxs[i].verbs == verbs) c = &ib_ctxs[i];
  if (!c) {
    if (ib_nctxs == IB_MAX_DEVS) {
      res = err_set(xcclInternalError, LOG_NET, "more than %d verbs devices in use", IB_MAX_DEVS);
      goto unlock;
    }
    struct ibv_pd *pd = ibv_alloc_pd(verbs);
    if (!pd) {
      res = err_set(xcclSystemError, LOG_NET, "ibv_alloc_pd on %s failed: %s", ibv_get_device_name(verbs->device),
                    strerror(errno));
      goto unlock;
    }
    c = &ib_ctxs[ib_nctxs];
    memset(c, 0, sizeof(*c));
    c->verbs = verbs;
    c->pd = pd;
    c->dmabuf = ib_dmabuf_probe(pd);
    pthread_mutex_init(&c->lock, NULL);
    ib_nctxs++;
    /* Without the thread (logged), errors still show, later, as completion errors. */
    (void)ib_async_start(c);
  }
  *ctx_p = c;
unlock:
  pthread_mutex_unlock(&ib_ctx_lock);
  return res;
}

/* Link speed: the width and speed codes (active_speed_ex where rdma-core
 * has it, so XDR reads right), else the kernel's rate text in sysfs for a
 * code the table does not know. */
static int ib_port_speed_mbps(const char *name, int port, const struct ibv_port_attr *pa) {
#ifdef XCCL_HAVE_IBV_ACTIVE_SPEED_EX
  unsigned code = pa->active_speed_ex ? pa->active_speed_ex : pa->active_speed;
#else
  unsigned code = pa->active_speed;
#endif
  int mbps = ib_speed_mbps(pa->active_width, code);
  if (mbps) return mbps;
  char path[PATH_MAX], text[64] = "";
  snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/rate", name, port);
  FILE *f = fopen(path, "r");
  if (f) {
    if (!fgets(text, sizeof(text), f)) text[0] = '\0';
    fclose(f);
  }
  return ib_rate_text_mbps(text);
}

static const char *ib_link_layer_str(int ll) {
  return ll == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : ll == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "unknown";
}

static const char *ib_gid_type_str(int t) {
  return t == IBV_GID_TYPE_ROCE_V2 ? "RoCEv2" : t == IBV_GID_TYPE_ROCE_V1 ? "RoCEv1" : "IB";
}

/* The IP address of a GID: IPv4-mapped ones give AF_INET. */
static int ib_gid_addr(const union ibv_gid *g, uint32_t ifindex, ib_sockaddr_t *a) {
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(a, 0, sizeof(*a));
  if (memcmp(g->raw, v4mapped, 12) == 0) {
    a->in.sin_family = AF_INET;
    memcpy(&a->in.sin_addr, g->raw + 12, 4);
    return 1;
  }
  a->in6.sin6_family = AF_INET6;
  memcpy(&a->in6.sin6_addr, g->raw, 16);
  if (IN6_IS_ADDR_LINKLOCAL(&a->in6.sin6_addr)) a->in6.sin6_scope_id = ifindex;
  return 1;
}

/* Address of a network interface (IPv4 first). */
static int ib_ifname_addr(const char *ifname, ib_sockaddr_t *a) {
  struct ifaddrs *ifs, *i;
  int found = 0;
  if (getifaddrs(&ifs) != 0) return 0;
  for (int fam = 0; fam < 2 && !found; fam++)
    for (i = ifs; i && !found; i = i->ifa_next) {
      if (!i->ifa_addr || strcmp(i->ifa_name, ifname) != 0) continue;
      if (i->ifa_addr->sa_family != (fam ? AF_INET6 : AF_INET)) continue;
      memset(a, 0, sizeof(*a));
      memcpy(a, i->ifa_addr, fam ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
      found = 1;
    }
  freeifaddrs(ifs);
  return found;
}

/* XCCL_IB_ADDR_FAMILY, XCCL_IB_ADDR_RANGE and XCCL_IB_ROCE_VERSION_NUM, read
 * by ib_init: which RoCE GIDs may carry connections. */
static struct {
  int family, version;
  ib_addr_range_t range;
} ib_gid_rule;

/* 1 when a RoCE GID (address a, type) passes ib_gid_rule. */
static int ib_gid_allowed(const ib_sockaddr_t *a, int gid_type) {
  int fam = a->sa.sa_family;
  if (ib_gid_rule.family && fam != ib_gid_rule.family) return 0;
  const uint8_t *raw = fam == AF_INET ? (const uint8_t *)&a->in.sin_addr : (const uint8_t *)&a->in6.sin6_addr;
  if (!ib_addr_range_has(&ib_gid_rule.range, fam, raw)) return 0;
  if (ib_gid_rule.version == 1 && gid_type != IBV_GID_TYPE_ROCE_V1) return 0;
  if (ib_gid_rule.version == 2 && gid_type != IBV_GID_TYPE_ROCE_V2) return 0;
  return 1;
}

/* Logs the port's GIDs and picks the address connections use (see
 * XCCL_IB_GID_INDEX, and on RoCE the family, range and version rules).
 * Returns 1 when it found one. */
static int ib_port_address(ib_dev_t *d, int gid_tbl_len) {
  int want = (int)config_int(CFG_IB_GID_INDEX), best = -1, best_rank = 0, ruled_out = 0;
  ib_sockaddr_t best_addr;
  uint32_t best_if = 0;
  for (int i = 0; i < gid_tbl_len && i < 256; i++) {
    struct ibv_gid_entry e;
    if (ibv_query_gid_ex(d->verbs, (uint32_t)d->port, (uint32_t)i, &e, 0) != 0) continue;
    static const uint8_t zero[16];
    if (memcmp(e.gid.raw, zero, 16) == 0) continue;
    char s[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, e.gid.raw, s, sizeof(s));
    char ifn[IF_NAMESIZE] = "";
    if (e.ndev_ifindex) if_indextoname(e.ndev_ifindex, ifn);
    INFO(NET, "ib: %s:%d GID[%d] %s %s%s%s", d->name, d->port, i, s, ib_gid_type_str((int)e.gid_type),
         *ifn ? " on " : "", ifn);
    ib_sockaddr_t a;
    ib_gid_addr(&e.gid, e.ndev_ifindex, &a);
    if (want < 0 && d->link_layer == IBV_LINK_LAYER_ETHERNET && !ib_gid_allowed(&a, (int)e.gid_type)) {
      ruled_out++;
      continue;
    }
    /* Preference without XCCL_IB_GID_INDEX: RoCE v2 IPv4, any IPv4, RoCE v2, any. */
    int rank = (a.sa.sa_family == AF_INET ? 2 : 0) + (e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0) + 1;
    if (want == i) rank = 100;
    if (rank > best_rank) {
      best = i;
      best_rank = rank;
      best_addr = a;
      best_if = e.ndev_ifindex;
    }
  }
  if (want >= 0 && best != want) {
    WARN(NET, "ib: %s:%d has no GID at XCCL_IB_GID_INDEX=%d; port not used", d->name, d->port, want);
    return 0;
  }
  if (best < 0 && ruled_out) {
    WARN(NET,
         "ib: %s:%d has no GID that XCCL_IB_ADDR_FAMILY=%s, XCCL_IB_ADDR_RANGE=%s and XCCL_IB_ROCE_VERSION_NUM=%d "
         "allow (%d ruled out); port not used",
         d->name, d->port, config_str(CFG_IB_ADDR_FAMILY), config_str(CFG_IB_ADDR_RANGE),
         (int)config_int(CFG_IB_ROCE_VERSION_NUM), ruled_out);
    return 0;
  }
  char ifn[IF_NAMESIZE] = "";
  if (best >= 0 && best_if) if_indextoname(best_if, ifn);
  if (best >= 0 && (d->link_layer == IBV_LINK_LAYER_ETHERNET || want >= 0)) {
    d->gid_index = best;
    d->addr = best_addr;
    snprintf(d->ifname, sizeof(d->ifname), "%s", ifn);
    return 1;
  }
  /* InfiniBand: the GIDs are not IP addresses; rdma_cm goes through an
   * IPoIB interface of the same device. */
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/net", d->name);
  DIR *dir = opendir(path);
  struct dirent *de;
  int found = 0;
  while (dir && !found && (de = readdir(dir)) != NULL) {
    if (de->d_name[0] == '.') continue;
    if (ib_ifname_addr(de->d_name, &d->addr)) {
      snprintf(d->ifname, sizeof(d->ifname), "%s", de->d_name);
      d->gid_index = -1;
      found = 1;
    }
  }
  if (dir) closedir(dir);
  return found;
}

static void ib_add_ports(struct ibv_context *verbs, const ib_hca_filter_t *filter) {
  const char *name = ibv_get_device_name(verbs->device);
  struct ibv_device_attr da;
  if (ibv_query_device(verbs, &da) != 0) {
    WARN(NET, "ib: ibv_query_device on %s failed: %s; device not used", name, strerror(errno));
    return;
  }
  for (int port = 1; port <= da.phys_port_cnt && ib_ndevs < IB_MAX_DEVS; port++) {
    struct ibv_port_attr pa;
    if (ibv_query_port(verbs, (uint8_t)port, &pa) != 0) {
      WARN(NET, "ib: ibv_query_port %s:%d failed: %s", name, port, strerror(errno));
      continue;
    }
    ib_dev_t *d = &ib_devs[ib_ndevs];
    memset(d, 0, sizeof(*d));
    d->verbs = verbs;
    d->port = port;
    d->link_layer = pa.link_layer;
    d->speed_mbps = ib_port_speed_mbps(name, port, &pa);
    snprintf(d->name, sizeof(d->name), "%s", name);
    INFO(NET, "ib: %s:%d %s, %s, %d Gb/s (width code %d x speed code %d), link layer %s", name, port,
         ibv_port_state_str(pa.state), pa.state == IBV_PORT_ACTIVE ? "usable" : "not active", d->speed_mbps / 1000,
         pa.active_width, pa.active_speed, ib_link_layer_str(pa.link_layer));
    if (!ib_hca_match(filter, name, port)) {
      INFO(NET, "ib: %s:%d left out by XCCL_IB_HCA=%s", name, port, config_str(CFG_IB_HCA));
      continue;
    }
    if (pa.state != IBV_PORT_ACTIVE) continue;
    if (!ib_port_address(d, pa.gid_tbl_len)) {
      INFO(NET, "ib: %s:%d has no IP address for rdma_cm; not used", name, port);
      continue;
    }
    char path[PATH_MAX], real[PATH_MAX];
    snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", name);
    if (realpath(path, real)) snprintf(d->pci_path, sizeof(d->pci_path), "%s", real);
    char a[96];
    INFO(NET, "ib: device %d is %s:%d, GID index %d, address %s%s%s", ib_ndevs, name, port, d->gid_index,
         ib_addr_str(&d->addr, a, sizeof(a)), *d->ifname ? " on " : "", d->ifname);
    ib_ndevs++;
  }
}

static xcclResult_t ib_init(void) {
  ib_hca_filter_t filter;
  char why[160];
  if (ib_hca_parse(config_str(CFG_IB_HCA), &filter, why, sizeof(why)) != 0)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_IB_HCA=%s: %s", config_str(CFG_IB_HCA), why);
  if (ib_addr_family_parse(config_str(CFG_IB_ADDR_FAMILY), &ib_gid_rule.family, why, sizeof(why)) != 0)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_IB_ADDR_FAMILY=%s: %s", config_str(CFG_IB_ADDR_FAMILY), why);
  if (ib_addr_range_parse(config_str(CFG_IB_ADDR_RANGE), &ib_gid_rule.range, why, sizeof(why)) != 0)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_IB_ADDR_RANGE=%s: %s", config_str(CFG_IB_ADDR_RANGE), why);
  ib_gid_rule.version = (int)config_int(CFG_IB_ROCE_VERSION_NUM);
  TRY(ib_relaxed_check());
  if (ib_gid_rule.family && ib_gid_rule.range.family && ib_gid_rule.family != ib_gid_rule.range.family)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_IB_ADDR_RANGE=%s is not of XCCL_IB_ADDR_FAMILY=%s: no GID can match both",
                   config_str(CFG_IB_ADDR_RANGE), config_str(CFG_IB_ADDR_FAMILY));
  ib_ndevs = 0;
  int n = 0;
  /* rdma_cm's own contexts: the ones its ids resolve to. Kept open (and
   * the list kept) for the life of the process. */
  static struct ibv_context **list;
  if (!list) list = rdma_get_devices(&n);
  else while (list[n]) n++;
  if (!list || n == 0) {
    snprintf(ib_why, sizeof(ib_why),
             "no verbs devices (rdma_get_devices found none: no RDMA driver loaded, or no /dev/infiniband)");
  } else {
    for (int i = 0; i < n; i++) ib_add_ports(list[i], &filter);
    if (ib_ndevs == 0)
      snprintf(ib_why, sizeof(ib_why), "%d verbs device%s but no active port with an IP address%s%s", n,
               n > 1 ? "s" : "", *config_str(CFG_IB_HCA) ? " that XCCL_IB_HCA lets through" : "",
               ib_gid_rule.family || ib_gid_rule.range.family || ib_gid_rule.version
                   ? " and a GID that XCCL_IB_ADDR_FAMILY, _RANGE and XCCL_IB_ROCE_VERSION_NUM allow"
                   : "");
  }
  /* No verbs device at all is the plain case (INFO); a device there but
   * unusable is something an operator must hear of (WARN), not a quiet
   * switch to sockets. */
  if (ib_ndevs == 0 && strcasecmp(config_str(CFG_NET), "ib") != 0) {
    if (n > 0)
      WARN(NET, "ib: %s; using the socket transport (see XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET for each port)",
           ib_why);
    else
      INFO(NET, "%s; using socket", ib_why);
  }
  return xcclSuccess;
}

static xcclResult_t ib_devices(int *ndev_p) {
  if (ib_ndevs == 0 && strcasecmp(config_str(CFG_NET), "ib") == 0)
    return err_set(xcclInvalidUsage, LOG_NET, "XCCL_NET=%s, but the ib transport found %s", config_str(CFG_NET),
                   ib_why);
  *ndev_p = ib_ndevs;
  return xcclSuccess;
}

static xcclResult_t ib_get_properties(int dev, net_props_t *props_p) {
  if (dev < 0 || dev >= ib_ndevs)
    return err_set(xcclInvalidArgument, LOG_NET, "ib: no device %d (%d found)", dev, ib_ndevs);
  const ib_dev_t *d = &ib_devs[dev];
  net_props_t p;
  memset(&p, 0, sizeof(p));
  snprintf(p.name, sizeof(p.name), "%s:%d", d->name, d->port);
  snprintf(p.pci_path, sizeof(p.pci_path), "%s", d->pci_path);
  p.speed_mbps = d->speed_mbps;
#ifdef XCCL_HAVE_CUDA
  p.ptr_support = NET_PTR_HOST | NET_PTR_CUDA; /* GPUDirect: dma-buf, else nvidia-peermem (net_ib_reg.c) */
#else
  p.ptr_support = NET_PTR_HOST;
#endif
  p.max_msg = IB_MAX_MSG;
  p.pollable = 0; /* completions are polled, not waited for on an fd */
  *props_p = p;
  return xcclSuccess;
}

const xccl_net_ops_v1_t net_ib_ops = {
    .name = "ib",
    .init = ib_init,
    .devices = ib_devices,
    .get_properties = ib_get_properties,
    .listen = ib_listen,
    .connect = ib_connect,
    .accept = ib_accept,
    .reg_mr = ib_reg_mr,
    .dereg_mr = ib_dereg_mr,
    .isend = ib_isend,
    .irecv = ib_irecv,
    .test = ib_test,
    .iflush = ib_iflush,
    .close_send = ib_close_comm,
    .close_recv = ib_close_comm,
    .close_listen = ib_close_listen,
    .shutdown = ib_shutdown,
    .connect_abandon = ib_connect_abandon,
};
