/*
 * topo_load_nccl.c — NCCL's topology XML (<system version="1">) into the graph.
 *
 * Both what NCCL writes with NCCL_TOPO_DUMP_FILE (cpu > pci... > gpu with
 * nvlink, nic > net) and the partial hint files clouds ship (cpu and pci
 * only, a device's kind told by its PCI class, or nothing at all). A <pci>
 * holding a <gpu> or of a display/accelerator class is a GPU; one holding a
 * <nic> (one NIC per <net>) or of a network class is a NIC; any other is a
 * switch or bridge.
 *
 * Read leniently, each with a warning naming the line (topo_graph_warn):
 * an NVLink to the GPU itself, to a NIC, to a GPU bus id the file lacks or
 * without a target (ignored); GPU dev numbers that are not 0..N-1 once each
 * (GPUs are numbered by bus id anyway); a GPU with NVLinks but no sm (the
 * default NVLink speed); an element or attribute NCCL does not write
 * (skipped); the <cpu>s of other hosts in a multi-host dump (host_hash
 * differing from the first <cpu>'s: only the first host is read, as NCCL
 * reads its own host's; a <cpu> without host_hash is taken as the first
 * host's); another <system> after the first (read the first).
 * Refused, naming the element and its line: a known element in the wrong
 * place, an attribute that does not parse or is out of range, a <pci> without
 * a bus id, a bus id named twice.
 */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_constants.h"
#include "topo_graph.h"
#include "topo_load.h"

typedef struct {
  int gpu; /* node */
  int64_t target;
  int count;
  int tclass;
  int line;
} pending_nvlink_t;

typedef struct {
  int dev, line;
} gpu_dev_t;

typedef struct {
  topo_system_t *sys;
  const char *name;
  pending_nvlink_t *nvl;
  int nnvl, capnvl;
  gpu_dev_t devs[TOPO_MAX_DEVICES]; /* the <gpu dev=...> read, for the gaps warning */
  int ndevs;
} nccl_ctx_t;

static const char *xattr(xmlNode *n, const char *name, char *buf, size_t len) {
  xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
  if (!v) return NULL;
  snprintf(buf, len, "%s", (const char *)v);
  xmlFree(v);
  return buf;
}

static xcclResult_t bad(nccl_ctx_t *c, xmlNode *n, const char *attr, const char *val, const char *why) {
  return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s %s=\"%.80s\">: %s", c->name,
                 (int)xmlGetLineNo(n), (const char *)n->name, attr, val, why);
}

/* Integer attribute (decimal, or hex with 0x), in [lo, hi]; absent: *out = def. */
static xcclResult_t attr_int(nccl_ctx_t *c, xmlNode *n, const char *attr, long long lo, long long hi,
                             long long def, long long *out) {
  char buf[128];
  if (!xattr(n, attr, buf, sizeof(buf))) {
    *out = def;
    return xcclSuccess;
  }
  const char *s = buf;
  while (*s == ' ') s++;
  if (*s == 0) {
    *out = def;
    return xcclSuccess;
  }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  while (*end == ' ') end++;
  if (end == s || *end || errno) return bad(c, n, attr, buf, "not an integer");
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof(why), "out of range [%lld, %lld]", lo, hi);
    return bad(c, n, attr, buf, why);
  }
  *out = v;
  return xcclSuccess;
}

/* "16 GT/s", "16.0 GT/s PCIe", "32 GT/s PCIe/s", "" -> GT/s (0 unknown). */
static xcclResult_t attr_speed(nccl_ctx_t *c, xmlNode *n, double *out) {
  char buf[128];
  *out = 0;
  if (!xattr(n, "link_speed", buf, sizeof(buf)) || buf[0] == 0) return xcclSuccess;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (end == buf || errno || !(v >= 0) || v > 256)
    return bad(c, n, "link_speed", buf, "not a PCIe rate like '16.0 GT/s' (0..256)");
  *out = v;
  return xcclSuccess;
}

static xcclResult_t attr_str(nccl_ctx_t *c, xmlNode *n, const char *attr, char *dst, size_t len) {
  char buf[512];
  if (!xattr(n, attr, buf, sizeof(buf))) return xcclSuccess;
  if (strlen(buf) >= len) return bad(c, n, attr, buf, "too long");
  for (const char *p = buf; *p; p++)
    if ((unsigned char)*p < 0x20) return bad(c, n, attr, buf, "control characters");
  snprintf(dst, len, "%s", buf);
  return xcclSuccess;
}

static int is_elem(xmlNode *n, const char *name) {
  return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static xcclResult_t add_pci_link(nccl_ctx_t *c, int node, int parent) {
  const topo_node_t *x = &c->sys->nodes[node];
  return topo_graph_add_link(c->sys, node, parent, TOPO_LINK_PCI, topo_pcie_bw(x->link_gts, x->link_width), 1);
}

static int name_is_rdma(const char *name) {
  static const char *pfx[] = {"mlx", "ib", "efa", "rdmap", "hfi", "bnxt_re", "irdma", "qedr", "cxi", "erdma", "rxe"};
  for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
    if (strncmp(name, pfx[i], strlen(pfx[i])) == 0) return 1;
  return 0;
}

int topo_pci_is_rdma(int pci_class, int vendor, int device) {
  if ((pci_class >> 8) == 0x0207 || (pci_class >> 8) == 0x0c06) return 1; /* InfiniBand */
  if (vendor == 0x15b3) return 1;                                        /* Mellanox/NVIDIA */
  if (vendor == 0x1d0f && (device & 0xfff0) == 0xefa0) return 1;          /* AWS EFA */
  if (vendor == 0x17db) return 1;                                        /* HPE Slingshot */
  if (vendor == 0x8086 && device == 0x24f0) return 1;                    /* Omni-Path */
  if (vendor == 0x1fc1 || vendor == 0x1077) return 1;                    /* Cornelis, QLogic IB */
  return 0;
}

static xcclResult_t read_net(nccl_ctx_t *c, xmlNode *net, int parent, const topo_node_t *pci) {
  char vname[64]; /* a virtual interface (docker0, veth...) is no NIC: left out, listed */
  if (net && xattr(net, "name", vname, sizeof(vname)) && topo_exclude_virtual(c->sys, vname, NULL)) return xcclSuccess;
  int n = topo_graph_add_node(c->sys, TOPO_NIC, parent);
  if (n < 0) return xcclInvalidArgument;
  topo_node_t *x = &c->sys->nodes[n];
  long long v;
  if (pci) { /* the PCI function this port belongs to */
    x->busid = pci->busid;
    x->pci_class = pci->pci_class;
    x->vendor = pci->vendor;
    x->device = pci->device;
    x->subvendor = pci->subvendor;
    x->subdevice = pci->subdevice;
    x->link_gts = pci->link_gts;
    x->link_width = pci->link_width;
  }
  x->nic_elem = 1;
  if (net) {
    TRY(attr_str(c, net, "name", x->name, sizeof(x->name)));
    TRY(attr_int(c, net, "dev", -1, 1 << 20, -1, &v));
    x = &c->sys->nodes[n];
    x->nic_dev = (int)v;
    TRY(attr_int(c, net, "port", -1, 1 << 16, -1, &v));
    x->port = (int)v;
    TRY(attr_int(c, net, "maxconn", -1, 1ll << 31, -1, &v));
    x->maxconn = (int)v;
    TRY(attr_int(c, net, "gdr", -1, 1, -1, &v));
    x->nic_gdr = (int)v;
    char buf[64];
    if (xattr(net, "speed", buf, sizeof(buf)) && buf[0]) {
      char *end;
      double sp = strtod(buf, &end);
      if (end == buf || *end || !(sp >= 0) || sp > 1e7)
        return bad(c, net, "speed", buf, "not a port speed in Mb/s (0..10^7)");
      x->speed_mbps = sp;
    }
    if (xattr(net, "latency", buf, sizeof(buf)) && buf[0]) {
      char *end;
      double lat = strtod(buf, &end);
      if (end == buf || !(lat >= 0) || lat > 1e6) return bad(c, net, "latency", buf, "not a latency");
      x->latency = lat;
    }
    if (xattr(net, "guid", buf, sizeof(buf)) && buf[0]) {
      char *end;
      errno = 0;
      unsigned long long g = strtoull(buf, &end, 0);
      if (end == buf || *end || errno) return bad(c, net, "guid", buf, "not a hex number");
      x->guid = g;
    }
  }
  if (!x->name[0]) topo_busid_format(x->busid, x->name, sizeof(x->name));
  if (!x->name[0]) snprintf(x->name, sizeof(x->name), "nic%d", n);
  x->rdma = name_is_rdma(x->name) || (x->pci_class >= 0 && topo_pci_is_rdma(x->pci_class, x->vendor, x->device));
  if (parent >= 0 && pci) return add_pci_link(c, n, parent);
  return topo_graph_add_link(c->sys, n, parent, TOPO_LINK_PCI, TOPO_PCIE_DEFAULT_BW, 1);
}

static xcclResult_t read_nic(nccl_ctx_t *c, xmlNode *nic, int parent, const topo_node_t *pci) {
  int nets = 0;
  topo_node_t copy;
  if (pci) copy = *pci; /* nodes may move while we add */
  for (xmlNode *k = nic->children; k; k = k->next) {
    if (!is_elem(k, "net")) continue;
    TRY(read_net(c, k, parent, pci ? &copy : NULL));
    nets++;
  }
  if (nets == 0) TRY(read_net(c, NULL, parent, pci ? &copy : NULL));
  return xcclSuccess;
}

static xcclResult_t read_gpu(nccl_ctx_t *c, xmlNode *g, int node) {
  long long v;
  topo_node_t *x = &c->sys->nodes[node];
  x->has_gpu_elem = 1;
  c->sys->nvlink_data = 1;
  TRY(attr_int(c, g, "dev", -1, 1 << 20, -1, &v));
  c->sys->nodes[node].dev = (int)v;
  if (v >= 0 && c->ndevs < TOPO_MAX_DEVICES) c->devs[c->ndevs++] = (gpu_dev_t){(int)v, (int)xmlGetLineNo(g)};
  int nvlinks = 0;
  for (xmlNode *k = g->children; k; k = k->next) nvlinks += is_elem(k, "nvlink");
  if (nvlinks && !xmlHasProp(g, (const xmlChar *)"sm")) {
    char b[32];
    topo_graph_warn(c->sys, "%s:%d: GPU %s has NVLinks but no sm (compute capability): each NVLink taken as %.0f GB/s",
                    c->name, (int)xmlGetLineNo(g), topo_busid_format(x->busid, b, sizeof(b)), topo_nvlink_bw(-1));
  }
  TRY(attr_int(c, g, "sm", -1, 10000, -1, &v));
  c->sys->nodes[node].sm = (int)v;
  TRY(attr_int(c, g, "rank", -1, 1 << 30, -1, &v));
  c->sys->nodes[node].rank = (int)v;
  TRY(attr_int(c, g, "gdr", -1, 1, -1, &v));
  c->sys->nodes[node].gdr = (int)v;
  for (xmlNode *k = g->children; k; k = k->next) {
    if (!is_elem(k, "nvlink")) continue;
    char tb[64];
    long long count, tclass;
    TRY(attr_int(c, k, "count", 0, 64, 1, &count));
    TRY(attr_int(c, k, "tclass", -1, 0xffffff, -1, &tclass));
    int64_t target = -1;
    if (tclass != 0x068001) {
      if (!xattr(k, "target", tb, sizeof(tb))) {
        topo_graph_warn(c->sys, "%s:%d: <nvlink> without a target: ignored", c->name, (int)xmlGetLineNo(k));
        continue;
      }
      target = topo_busid_parse(tb);
      if (target < 0) return bad(c, k, "target", tb, "not a PCI bus id");
    }
    if (count == 0) continue;
    if (c->nnvl == c->capnvl) {
      int cap = c->capnvl ? 2 * c->capnvl : 16;
      pending_nvlink_t *p = realloc(c->nvl, (size_t)cap * sizeof(*p));
      if (!p) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", c->name);
      c->nvl = p;
      c->capnvl = cap;
    }
    c->nvl[c->nnvl++] = (pending_nvlink_t){node, target, (int)count, (int)tclass, (int)xmlGetLineNo(k)};
  }
  return xcclSuccess;
}

static xcclResult_t read_pci(nccl_ctx_t *c, xmlNode *p, int parent, int depth) {
  char buf[64];
  long long v;
  if (depth > 64) return bad(c, p, "depth", "", "PCI tree deeper than 64 levels");
  if (!xattr(p, "busid", buf, sizeof(buf))) return bad(c, p, "busid", "", "missing");
  int64_t busid = topo_busid_parse(buf);
  if (busid < 0) return bad(c, p, "busid", buf, "not a PCI bus id like 0000:06:00.0");
  if (topo_graph_find_busid(c->sys, busid) >= 0) return bad(c, p, "busid", buf, "named twice");
  topo_node_t t;
  memset(&t, 0, sizeof(t));
  t.busid = busid;
  TRY(attr_int(c, p, "class", -1, 0xffffff, -1, &v));
  t.pci_class = (int)v;
  TRY(attr_int(c, p, "vendor", -1, 0xffff, -1, &v));
  t.vendor = (int)v;
  TRY(attr_int(c, p, "device", -1, 0xffff, -1, &v));
  t.device = (int)v;
  TRY(attr_int(c, p, "subsystem_vendor", -1, 0xffff, -1, &v));
  t.subvendor = (int)v;
  TRY(attr_int(c, p, "subsystem_device", -1, 0xffff, -1, &v));
  t.subdevice = (int)v;
  TRY(attr_speed(c, p, &t.link_gts));
  TRY(attr_int(c, p, "link_width", 0, 64, 0, &v));
  t.link_width = (int)v;

  xmlNode *gpu = NULL, *nic = NULL;
  int npci = 0;
  for (xmlNode *k = p->children; k; k = k->next) {
    if (is_elem(k, "gpu")) gpu = k;
    else if (is_elem(k, "nic")) nic = k;
    else if (is_elem(k, "pci")) npci++;
    else if (is_elem(k, "cpu") || is_elem(k, "net") || is_elem(k, "nvlink"))
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s> is not allowed inside <pci>", c->name,
                     (int)xmlGetLineNo(k), (const char *)k->name);
  }
  if (gpu && (nic || npci))
    return bad(c, p, "busid", buf, "a GPU cannot also hold a NIC or PCI devices");
  if (nic && npci == 0 && !gpu) return read_nic(c, nic, parent, &t);

  topo_node_type_t type = TOPO_PCI;
  if (gpu || (npci == 0 && !nic && topo_class_is_gpu(t.pci_class))) type = TOPO_GPU;
  else if (npci == 0 && !nic && topo_class_is_nic(t.pci_class)) return read_nic(c, p, parent, &t);
  const topo_node_t *up = &c->sys->nodes[parent];
  if (type == TOPO_PCI && up->type == TOPO_PCI && t.vendor > 0 && t.vendor != 0xffff && t.vendor == up->vendor &&
      t.device == up->device) {
    /* Another port of the parent's switch (same vendor:device): one node. */
    for (xmlNode *k = p->children; k; k = k->next) {
      if (is_elem(k, "pci")) TRY(read_pci(c, k, parent, depth + 1));
      else if (is_elem(k, "nic")) TRY(read_nic(c, k, parent, NULL));
    }
    return xcclSuccess;
  }
  int n = topo_graph_add_node(c->sys, type, parent);
  if (n < 0) return xcclInvalidArgument;
  topo_node_t *x = &c->sys->nodes[n];
  x->busid = t.busid;
  x->pci_class = t.pci_class;
  x->vendor = t.vendor;
  x->device = t.device;
  x->subvendor = t.subvendor;
  x->subdevice = t.subdevice;
  x->link_gts = t.link_gts;
  x->link_width = t.link_width;
  if (type == TOPO_GPU) snprintf(x->gpu_vendor, sizeof(x->gpu_vendor), "%s", t.vendor == 0x1002 ? "amd" : "nvidia");
  TRY(add_pci_link(c, n, parent));
  if (gpu) return read_gpu(c, gpu, n);
  for (xmlNode *k = p->children; k; k = k->next) {
    if (is_elem(k, "pci")) TRY(read_pci(c, k, n, depth + 1));
    else if (is_elem(k, "nic")) TRY(read_nic(c, k, n, NULL));
  }
  return xcclSuccess;
}

static xcclResult_t read_cpu(nccl_ctx_t *c, xmlNode *cpu) {
  long long v;
  TRY(attr_int(c, cpu, "numaid", -1, 65535, -1, &v));
  if (v >= 0 && topo_graph_find_cpu(c->sys, (int)v) >= 0) {
    char b[32];
    snprintf(b, sizeof(b), "%lld", v);
    return bad(c, cpu, "numaid", b, "two <cpu> elements have this NUMA id");
  }
  int n = topo_graph_add_node(c->sys, TOPO_CPU, -1);
  if (n < 0) return xcclInvalidArgument;
  c->sys->nodes[n].numa = (int)v;
  char aff[4096];
  if (xattr(cpu, "affinity", aff, sizeof(aff))) {
    for (const char *q = aff; *q; q++)
      if (!(((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F') || *q == ',')))
        return bad(c, cpu, "affinity", aff, "not comma-separated hex words");
    c->sys->nodes[n].affinity = strdup(aff);
  }
  TRY(attr_str(c, cpu, "arch", c->sys->nodes[n].arch, sizeof(c->sys->nodes[n].arch)));
  TRY(attr_str(c, cpu, "vendor", c->sys->nodes[n].cpu_vendor, sizeof(c->sys->nodes[n].cpu_vendor)));
  TRY(attr_int(c, cpu, "familyid", -1, 1 << 16, -1, &v));
  c->sys->nodes[n].family = (int)v;
  TRY(attr_int(c, cpu, "modelid", -1, 1 << 16, -1, &v));
  c->sys->nodes[n].model = (int)v;
  TRY(attr_int(c, cpu, "package", -1, 65535, -1, &v)); /* ours, see topo_dump_xml.c */
  c->sys->nodes[n].package = (int)v;
  for (xmlNode *k = cpu->children; k; k = k->next) {
    if (is_elem(k, "pci")) TRY(read_pci(c, k, n, 0));
    else if (is_elem(k, "nic")) TRY(read_nic(c, k, n, NULL));
    else if (is_elem(k, "cpu") || is_elem(k, "gpu") || is_elem(k, "net"))
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s> is not allowed inside <cpu>", c->name,
                     (int)xmlGetLineNo(k), (const char *)k->name);
  }
  return xcclSuccess;
}

static xcclResult_t set_nvlink(topo_system_t *sys, int a, int b, int count, double per_link) {
  topo_link_t *ab = topo_graph_find_link(sys, a, b, TOPO_LINK_NVL);
  if (!ab) return topo_graph_add_link(sys, a, b, TOPO_LINK_NVL, count * per_link, count);
  /* Both GPUs name the pair: keep the larger count, once. */
  topo_link_t *ba = topo_graph_find_link(sys, b, a, TOPO_LINK_NVL);
  if (count > ab->count) {
    ab->count = ba->count = count;
    ab->bw = ba->bw = count * per_link;
  }
  return xcclSuccess;
}

static xcclResult_t resolve_nvlinks(nccl_ctx_t *c) {
  topo_system_t *sys = c->sys;
  for (int i = 0; i < c->nnvl; i++) {
    pending_nvlink_t *p = &c->nvl[i];
    const topo_node_t *g = &sys->nodes[p->gpu];
    double per = topo_nvlink_bw(g->sm);
    char b[32];
    if (p->tclass == 0x068001) { /* to the GPU's own CPU (POWER) */
      TRY(topo_graph_add_link(sys, p->gpu, topo_graph_cpu_of(sys, p->gpu), TOPO_LINK_NVL, p->count * per, p->count));
      continue;
    }
    if (p->target == g->busid) { /* seen in files a cloud ships for its VMs */
      topo_graph_warn(sys, "%s:%d: GPU %s has an NVLink to itself: ignored", c->name, p->line,
                      topo_busid_format(g->busid, b, sizeof(b)));
      continue;
    }
    int t = topo_graph_find_busid(sys, p->target);
    if (t >= 0 && sys->nodes[t].type == TOPO_GPU && p->tclass != 0x068000) {
      TRY(set_nvlink(sys, p->gpu, t, p->count, per));
      continue;
    }
    if (t >= 0 && sys->nodes[t].type == TOPO_NIC) {
      topo_graph_warn(sys, "%s:%d: NVLink target %s is a NIC: ignored", c->name, p->line,
                      topo_busid_format(p->target, b, sizeof(b)));
      continue;
    }
    if (t < 0 && topo_class_is_gpu(p->tclass)) { /* a GPU cut out of the file, or a typo */
      topo_graph_warn(sys, "%s:%d: NVLink to GPU %s, which is not in the file: ignored", c->name, p->line,
                      topo_busid_format(p->target, b, sizeof(b)));
      continue;
    }
    if (sys->nvs < 0) {
      int nv = topo_graph_add_node(sys, TOPO_NVS, -1);
      if (nv < 0) return xcclInvalidArgument;
      sys->nvs = nv;
      topo_busid_format(p->target, sys->nodes[nv].name, sizeof(sys->nodes[nv].name));
    }
    TRY(topo_graph_add_link(sys, p->gpu, sys->nvs, TOPO_LINK_NVL, p->count * per, p->count));
  }
  return xcclSuccess;
}

/* The elements NCCL writes, with the attributes NCCL or xccl's own dump give
 * them; attrs NULL: an element NCCL writes that xccl does not read, skipped
 * whole without a word. */
static const struct {
  const char *elem, *attrs;
} known_elems[] = {
    {"system", " version "},
    {"cpu", " numaid affinity affinity_offset arch vendor familyid modelid host_hash package "},
    {"pci", " busid class vendor device subsystem_vendor subsystem_device link_speed link_width "},
    {"gpu", " dev sm rank gdr mlopart "},
    {"nvlink", " target count tclass "},
    {"nic", " "},
    {"net", " name dev speed port latency guid maxconn gdr coll rail plane net keep "},
    {"pcilink", NULL},
    {"c2c", NULL},
    {"gin", NULL},
    {"rma", NULL},
};

/* Warns about each element and attribute the reader would pass over
 * silently: a typo, or something a newer NCCL writes. */
static void check_names(nccl_ctx_t *c, xmlNode *n, int depth) {
  for (; n && depth <= 64; n = n->next) {
    if (n->type != XML_ELEMENT_NODE) continue;
    size_t i = 0, nk = sizeof(known_elems) / sizeof(known_elems[0]);
    while (i < nk && strcmp((const char *)n->name, known_elems[i].elem) != 0) i++;
    if (i == nk) {
      topo_graph_warn(c->sys, "%s:%d: <%.64s> is not an element of NCCL's topology XML: skipped", c->name,
                      (int)xmlGetLineNo(n), (const char *)n->name);
      continue;
    }
    if (!known_elems[i].attrs) continue;
    for (xmlAttr *a = n->properties; a; a = a->next) {
      char key[80];
      snprintf(key, sizeof(key), " %.70s ", (const char *)a->name);
      if (!strstr(known_elems[i].attrs, key))
        topo_graph_warn(c->sys, "%s:%d: <%s %.64s=...>: not an attribute NCCL writes: ignored", c->name,
                        (int)xmlGetLineNo(n), (const char *)n->name, (const char *)a->name);
    }
    check_names(c, n->children, depth + 1);
  }
}

static int cmp_gpu_dev(const void *a, const void *b) {
  const gpu_dev_t *x = a, *y = b;
  return x->dev != y->dev ? (x->dev > y->dev) - (x->dev < y->dev) : (x->line > y->line) - (x->line < y->line);
}

/* CUDA numbers a machine's GPUs 0..N-1: other dev numbers are a file cut
 * from a larger machine, or edited; GPUs are numbered by bus id anyway. */
static void check_devs(nccl_ctx_t *c) {
  qsort(c->devs, (size_t)c->ndevs, sizeof(c->devs[0]), cmp_gpu_dev);
  int first_bad = -1;
  for (int i = 0; i < c->ndevs && first_bad < 0; i++)
    if (c->devs[i].dev != i) first_bad = i;
  if (first_bad < 0) return;
  char list[160];
  size_t o = 0;
  int i = 0;
  for (; i < c->ndevs && o < sizeof(list) - 16; i++)
    o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d", i ? " " : "", c->devs[i].dev);
  if (i < c->ndevs) snprintf(list + o, sizeof(list) - o, " ...");
  topo_graph_warn(c->sys, "%s:%d: GPU dev numbers %s are not 0..%d, each once: accepted (GPUs are numbered by bus id)",
                  c->name, c->devs[first_bad].line, list, c->ndevs - 1);
}

/* The end of the first <system>, when more markup follows it (several dumps
 * in one file): the offset just after its "</system>", 0 otherwise. */
static size_t first_system_end(const char *data, size_t len) {
  static const char tag[] = "</system";
  for (size_t i = 0; i + sizeof(tag) - 1 <= len; i++) {
    if (memcmp(data + i, tag, sizeof(tag) - 1) != 0) continue;
    size_t j = i + sizeof(tag) - 1;
    while (j < len && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r' || data[j] == '\n')) j++;
    if (j >= len || data[j] != '>') return 0;
    size_t end = ++j;
    while (j < len && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r' || data[j] == '\n')) j++;
    return j < len && data[j] == '<' ? end : 0;
  }
  return 0;
}

static int line_at(const char *data, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off; i++) line += data[i] == '\n';
  return line;
}

/* Reads the <cpu>s under the root. A dump of several hosts (NCCL writes one
 * for a multi-node NVLink domain, each <cpu> with its host's host_hash): the
 * first host's <cpu>s are read, the others' skipped with one warning. */
static xcclResult_t read_root(nccl_ctx_t *c, xmlNode *root) {
  unsigned long long host = 0;
  int have_host = 0, skipped = 0, skip_line = 0;
  char first[40] = "", others[160] = "";
  for (xmlNode *k = root->children; k; k = k->next) {
    if (is_elem(k, "cpu")) {
      char hh[40];
      if (xattr(k, "host_hash", hh, sizeof(hh)) && hh[0]) {
        unsigned long long h = strtoull(hh, NULL, 16);
        if (!have_host) {
          host = h, have_host = 1;
          snprintf(first, sizeof(first), "%s", hh);
        } else if (h != host) {
          if (!skipped++) skip_line = (int)xmlGetLineNo(k);
          if (!strstr(others, hh) && strlen(others) + strlen(hh) + 8 < sizeof(others))
            snprintf(others + strlen(others), sizeof(others) - strlen(others), "%s%s", others[0] ? ", " : "", hh);
          continue;
        }
      }
      TRY(read_cpu(c, k));
    } else if (is_elem(k, "pci") || is_elem(k, "gpu") || is_elem(k, "nic") || is_elem(k, "net")) {
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s> must be inside a <cpu>", c->name,
                     (int)xmlGetLineNo(k), (const char *)k->name);
    }
  }
  if (skipped)
    topo_graph_warn(c->sys, "%s:%d: a dump of several hosts (host_hash %s, then %s): read the first host only, "
                    "%d <cpu> of the others skipped", c->name, skip_line, first, others, skipped);
  return xcclSuccess;
}

static void silent(void *ctx, xmlErrorPtr e) { (void)ctx, (void)e; }

xcclResult_t topo_load_nccl_xml(const char *data, size_t len, const char *name, topo_system_t **sys_p) {
  xcclResult_t res = xcclSuccess;
  nccl_ctx_t *cp = calloc(1, sizeof(*cp));
  if (!cp) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", name);
  nccl_ctx_t *c = cp;
  c->name = name;
  xmlInitParser();
  xmlSetStructuredErrorFunc(NULL, silent);
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) {
    free(cp);
    return err_set(xcclSystemError, LOG_TOPO, "%s: cannot create an XML parser", name);
  }
  if (len > INT32_MAX) len = 0;
  const int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
  xmlDocPtr doc = xmlCtxtReadMemory(ctxt, data, (int)len, name, NULL, opts);
  int second_line = 0;
  if (!doc) {
    xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
    char why[300];
    int line = e ? e->line : 0;
    snprintf(why, sizeof(why), "%s", e && e->message ? e->message : "parse error");
    size_t cut = first_system_end(data, len);
    if (cut && (doc = xmlCtxtReadMemory(ctxt, data, (int)cut, name, NULL, opts)) != NULL) {
      size_t j = cut;
      while (j < len && data[j] != '<') j++;
      second_line = line_at(data, j);
    } else {
      res = err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: not well-formed XML: %s", name, line, why);
      char *nl = strrchr(err_last(), '\n');
      if (nl && nl[1] == 0) *nl = 0;
      xmlFreeParserCtxt(ctxt);
      free(cp);
      return res;
    }
  }
  xmlNode *root = xmlDocGetRootElement(doc);
  if (!root || strcmp((const char *)root->name, "system") != 0) {
    res = err_set(xcclInvalidArgument, LOG_TOPO, "%s: root element is <%s>, not NCCL's <system>", name,
                  root ? (const char *)root->name : "nothing");
    goto out;
  }
  char src[300];
  snprintf(src, sizeof(src), "%s (NCCL XML)", name);
  c->sys = topo_graph_new(src);
  if (!c->sys) {
    res = err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", name);
    goto out;
  }
  if (second_line)
    topo_graph_warn(c->sys, "%s:%d: more after the first <system> (several dumps in one file?): read the first only",
                    name, second_line);
  char ver[32];
  if (xattr(root, "version", ver, sizeof(ver)) && strcmp(ver, "1") != 0)
    INFO(TOPO, "%s: <system version=\"%s\">, read as version 1", name, ver);
  check_names(c, root, 0);
  res = read_root(c, root);
  if (res == xcclSuccess) res = resolve_nvlinks(c);
  if (res == xcclSuccess) check_devs(c);
  if (res == xcclSuccess) res = topo_graph_finalize(c->sys);
out:
  free(c->nvl);
  xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  topo_system_t *sys = c->sys;
  free(cp);
  if (res != xcclSuccess) {
    topo_system_free(sys);
    return res;
  }
  *sys_p = sys;
  return xcclSuccess;
}
