/*
 * topo_load_hwloc.c — an hwloc topology (an XML export, or this machine)
 * into the graph.
 *
 * Kept: one CPU node per NUMA domain; the GPUs (NVIDIA display/3D
 * controllers, AMD accelerators, any PCI device carrying a CUDA, NVML, RSMI
 * or OpenCL OS device), the NICs (network or InfiniBand class, or carrying a
 * network / OpenFabrics OS device), and the PCI bridges above them, a
 * switch's upstream and downstream ports merged into one node (ports of one
 * switch share vendor:device). Host bridges are the CPU node itself. NVLinks
 * come from hwloc's "NVLinkBandwidth" distances (MB/s), the NVSwitches in it
 * merged into one fabric node. No PCI device at all (VMs, containers) gives
 * the CPUs alone, with a warning; CUDA_VISIBLE_DEVICES is applied to the live
 * machine (topo.h, topo_system_load_live).
 */
#include <errno.h>
#include <hwloc.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "topo_constants.h"
#include "topo_graph.h"
#include "topo_load.h"

int topo_guess_sm(const char *model, int device_id) {
  static const struct {
    const char *word;
    int sm;
  } words[] = {{"B200", 100}, {"B100", 100}, {"GB200", 100}, {"H100", 90}, {"H200", 90}, {"H800", 90},
               {"H20", 90},   {"A100", 80},  {"A800", 80},   {"A30", 80},  {"V100", 70}, {"P100", 60},
               {"A6000", 86}, {"A40", 86},   {"A10", 86},    {"3090", 86}, {"L40", 89},  {"4090", 89}};
  if (model)
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
      if (strstr(model, words[i].word)) return words[i].sm;
  if (device_id >= 0x2900 && device_id <= 0x29ff) return 100;
  if (device_id >= 0x2300 && device_id <= 0x233f) return 90;
  if (device_id >= 0x20b0 && device_id <= 0x20bf) return 80;
  if (device_id >= 0x1db0 && device_id <= 0x1dbf) return 70;
  if (device_id >= 0x15f0 && device_id <= 0x15ff) return 60;
  return -1;
}

typedef struct {
  hwloc_topology_t topo;
  topo_system_t *sys;
  int live;
} hw_ctx_t;

/* Node index stored in obj->userdata as index + 1. */
static int node_of(hwloc_obj_t o) { return o->userdata ? (int)(intptr_t)o->userdata - 1 : -1; }
static void set_node(hwloc_obj_t o, int n) { o->userdata = (void *)(intptr_t)(n + 1); }

static int64_t pci_attr_busid(const struct hwloc_pcidev_attr_s *p) {
  return ((int64_t)p->domain << 24) | ((int64_t)p->bus << 16) | ((int64_t)p->dev << 8) | p->func;
}

static int64_t pci_busid(hwloc_obj_t o) { return pci_attr_busid(&o->attr->pcidev); }

static const char *info(hwloc_obj_t o, const char *name) {
  for (; o; o = o->parent) {
    const char *v = hwloc_obj_get_info_by_name(o, name);
    if (v) return v;
  }
  return NULL;
}

static int osdev_is_gpu(hwloc_obj_t os) {
  if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC) return 1;
  static const char *pfx[] = {"cuda", "nvml", "rsmi", "opencl"};
  for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
    if (os->name && strncmp(os->name, pfx[i], strlen(pfx[i])) == 0) return 1;
  return 0;
}

/* What a PCI device is to us: 'G' GPU, 'N' NIC, 'S' NVSwitch, 0 nothing. */
static int pci_kind(hwloc_obj_t o) {
  const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
  int cls = p->class_id;
  if (p->vendor_id == 0x10de && cls == 0x0680) return 'S';
  for (hwloc_obj_t k = o->io_first_child; k; k = k->next_sibling) {
    if (k->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (osdev_is_gpu(k)) return 'G';
    if (k->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK || k->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) return 'N';
  }
  if (p->vendor_id == 0x10de && (cls >> 8) == 0x03) return 'G';
  if (p->vendor_id == 0x1002 && (cls == 0x0380 || cls == 0x1200)) return 'G';
  if ((cls >> 8) == 0x02 || cls == 0x0c06) return 'N';
  return 0;
}

static int cpu_node_for(hw_ctx_t *c, hwloc_obj_t o) {
  hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(c->topo, o);
  if (a && a->nodeset) {
    int numa = hwloc_bitmap_first(a->nodeset);
    int n = numa >= 0 ? topo_graph_find_cpu(c->sys, numa) : -1;
    if (n >= 0) return n;
  }
  return topo_graph_find_cpu(c->sys, 0) >= 0 ? topo_graph_find_cpu(c->sys, 0) : c->sys->nnodes > 0 ? 0 : -1;
}

/* A PCI device's or a bridge's upstream port's attributes (the same shape). */
static void fill_pci(topo_node_t *x, const struct hwloc_pcidev_attr_s *p) {
  x->busid = pci_attr_busid(p);
  x->pci_class = p->class_id << 8;
  x->vendor = p->vendor_id;
  x->device = p->device_id;
  x->subvendor = p->subvendor_id;
  x->subdevice = p->subdevice_id;
  topo_pcie_from_bw(p->linkspeed, &x->link_gts, &x->link_width);
}


/* The graph node above PCI object o: a bridge node (made on first use) or
 * the CPU. */
static int parent_node(hw_ctx_t *c, hwloc_obj_t o) {
  hwloc_obj_t up = o->parent;
  if (!up || up->type != HWLOC_OBJ_BRIDGE || up->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI)
    return cpu_node_for(c, o);
  if (node_of(up) >= 0) return node_of(up);
  int above = parent_node(c, up);
  if (above < 0) return -1;
  /* A downstream port of the switch whose upstream port is its parent. */
  const struct hwloc_pcidev_attr_s *p = &up->attr->bridge.upstream.pci;
  hwloc_obj_t upp = up->parent;
  if (upp && upp->type == HWLOC_OBJ_BRIDGE && upp->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI &&
      upp->attr->bridge.upstream.pci.vendor_id == p->vendor_id &&
      upp->attr->bridge.upstream.pci.device_id == p->device_id && p->vendor_id != 0 && p->vendor_id != 0xffff) {
    set_node(up, above);
    return above;
  }
  int n = topo_graph_add_node(c->sys, TOPO_PCI, above);
  if (n < 0) return -1;
  topo_node_t *x = &c->sys->nodes[n];
  fill_pci(x, p);
  /* From the rate and width hwloc's figure stands for, so that the NCCL XML
   * dump (which has only those) gives the same graph back. */
  double bw = topo_pcie_bw(x->link_gts, x->link_width);
  if (topo_graph_add_link(c->sys, n, above, TOPO_LINK_PCI, bw, 1) != xcclSuccess) return -1;
  set_node(up, n);
  return n;
}

static xcclResult_t add_cpus(hw_ctx_t *c) {
  int nn = hwloc_get_nbobjs_by_type(c->topo, HWLOC_OBJ_NUMANODE);
  const char *arch = info(hwloc_get_root_obj(c->topo), "Architecture");
  for (int i = 0; i < nn; i++) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(c->topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
    if (topo_graph_find_cpu(c->sys, (int)numa->os_index) >= 0) continue;
    int n = topo_graph_add_node(c->sys, TOPO_CPU, -1);
    if (n < 0) return xcclInvalidArgument;
    topo_node_t *x = &c->sys->nodes[n];
    x->numa = (int)numa->os_index;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(c->topo, HWLOC_OBJ_PACKAGE, numa);
    if (!pkg && numa->cpuset && !hwloc_bitmap_iszero(numa->cpuset))
      pkg = hwloc_get_next_obj_covering_cpuset_by_type(c->topo, numa->cpuset, HWLOC_OBJ_PACKAGE, NULL);
    x->package = pkg ? (int)pkg->logical_index : -1;
    hwloc_obj_t where = pkg ? pkg : numa;
    const char *v;
    if (arch) snprintf(x->arch, sizeof(x->arch), "%s", arch);
    if ((v = info(where, "CPUVendor"))) snprintf(x->cpu_vendor, sizeof(x->cpu_vendor), "%s", v);
    if ((v = info(where, "CPUFamilyNumber"))) x->family = atoi(v);
    if ((v = info(where, "CPUModelNumber"))) x->model = atoi(v);
    if ((v = info(where, "CPUModel")) && strstr(v, "POWER")) {
      if (!x->arch[0]) snprintf(x->arch, sizeof(x->arch), "ppc64");
      x->model = strstr(v, "POWER8") ? 8 : strstr(v, "POWER9") ? 9 : 10;
      if (!x->cpu_vendor[0]) snprintf(x->cpu_vendor, sizeof(x->cpu_vendor), "IBM");
    }
    /* NCCL's affinity: 32-bit hex words, most significant first. */
    if (numa->cpuset && !hwloc_bitmap_iszero(numa->cpuset) && hwloc_bitmap_last(numa->cpuset) >= 0) {
      int last = hwloc_bitmap_last(numa->cpuset);
      int words = last / 32 + 1;
      char *aff = malloc((size_t)words * 9 + 1);
      if (!aff) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
      size_t o = 0;
      for (int w = words - 1; w >= 0; w--) {
        unsigned v32 = 0;
        for (int b = 0; b < 32; b++)
          if (hwloc_bitmap_isset(numa->cpuset, (unsigned)(w * 32 + b))) v32 |= 1u << b;
        o += (size_t)sprintf(aff + o, "%s%08x", w == words - 1 ? "" : ",", v32);
      }
      x->affinity = aff;
    }
  }
  if (c->sys->nnodes == 0) { /* no NUMA object: one domain */
    int n = topo_graph_add_node(c->sys, TOPO_CPU, -1);
    if (n < 0) return xcclInvalidArgument;
    c->sys->nodes[n].numa = 0;
  }
  return xcclSuccess;
}

/* Is NIC o a virtual interface (an OS device named docker0, veth...)? Then
 * it is left out of the graph and listed (topo_virtual.c). */
static int nic_is_virtual(hw_ctx_t *c, hwloc_obj_t o) {
  for (hwloc_obj_t k = o->io_first_child; k; k = k->next_sibling) {
    if (k->type != HWLOC_OBJ_OS_DEVICE || !k->name) continue;
    if (k->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK && k->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    if (topo_exclude_virtual(c->sys, k->name, c->live ? "/sys" : NULL)) return 1;
  }
  return 0;
}

static xcclResult_t add_device(hw_ctx_t *c, hwloc_obj_t o, int kind) {
  if (kind == 'N' && nic_is_virtual(c, o)) return xcclSuccess;
  int parent = parent_node(c, o);
  if (parent < 0) return err_prefix(xcclInvalidArgument, "%s", c->sys->source);
  topo_node_type_t t = kind == 'G' ? TOPO_GPU : TOPO_NIC;
  int n = topo_graph_add_node(c->sys, t, parent);
  if (n < 0) return xcclInvalidArgument;
  topo_node_t *x = &c->sys->nodes[n];
  fill_pci(x, &o->attr->pcidev);
  set_node(o, n);
  const char *ibdev = NULL, *netdev = NULL;
  for (hwloc_obj_t k = o->io_first_child; k; k = k->next_sibling) {
    if (k->type != HWLOC_OBJ_OS_DEVICE || !k->name) continue;
    if (t == TOPO_GPU) {
      int d;
      if (x->dev < 0 && (sscanf(k->name, "cuda%d", &d) == 1 || sscanf(k->name, "nvml%d", &d) == 1 ||
                         sscanf(k->name, "rsmi%d", &d) == 1))
        x->dev = d;
      const char *m = hwloc_obj_get_info_by_name(k, "GPUModel");
      if (x->sm < 0 && m) x->sm = topo_guess_sm(m, x->device);
      const char *u = hwloc_obj_get_info_by_name(k, "NVIDIAUUID"); /* hwloc's NVML backend */
      if (!x->uuid[0] && u) snprintf(x->uuid, sizeof(x->uuid), "%s", u);
    } else if (k->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !ibdev) {
      ibdev = k->name;
    } else if (k->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !netdev) {
      netdev = k->name;
    }
  }
  if (t == TOPO_GPU) {
    x->has_gpu_elem = 1;
    snprintf(x->gpu_vendor, sizeof(x->gpu_vendor), "%s", x->vendor == 0x1002 ? "amd" : "nvidia");
    if (x->sm < 0 && x->vendor == 0x10de) x->sm = topo_guess_sm(NULL, x->device);
  } else {
    x->nic_elem = 1;
    if (ibdev) snprintf(x->name, sizeof(x->name), "%s", ibdev);
    else if (netdev) snprintf(x->name, sizeof(x->name), "%s", netdev);
    else topo_busid_format(x->busid, x->name, sizeof(x->name));
    x->rdma = ibdev != NULL || topo_pci_is_rdma(x->pci_class, x->vendor, x->device);
    if (c->live) x->speed_mbps = topo_sysfs_nic_speed(ibdev, netdev);
  }
  x = &c->sys->nodes[n];
  return topo_graph_add_link(c->sys, n, parent, TOPO_LINK_PCI, topo_pcie_bw(x->link_gts, x->link_width), 1);
}

/* The graph node an object of the NVLinkBandwidth matrix stands for. */
static int nvlink_node(hw_ctx_t *c, hwloc_obj_t o, int *is_switch) {
  *is_switch = 0;
  if (o->type == HWLOC_OBJ_OS_DEVICE) o = o->parent;
  if (!o) return -1;
  if (o->type == HWLOC_OBJ_PCI_DEVICE) {
    if (pci_kind(o) == 'S') {
      *is_switch = 1;
      return -1;
    }
    return node_of(o) >= 0 && c->sys->nodes[node_of(o)].type == TOPO_GPU ? node_of(o) : -1;
  }
  if (o->type == HWLOC_OBJ_PACKAGE || o->type == HWLOC_OBJ_NUMANODE) {
    int numa = o->nodeset ? hwloc_bitmap_first(o->nodeset) : -1;
    return numa >= 0 ? topo_graph_find_cpu(c->sys, numa) : -1;
  }
  return -1;
}

static xcclResult_t add_nvlinks(hw_ctx_t *c) {
  unsigned nr = 0;
  if (hwloc_distances_get_by_name(c->topo, "NVLinkBandwidth", &nr, NULL, 0) < 0 || nr == 0) return xcclSuccess;
  struct hwloc_distances_s **d = calloc(nr, sizeof(*d));
  if (!d) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
  xcclResult_t res = xcclSuccess;
  if (hwloc_distances_get_by_name(c->topo, "NVLinkBandwidth", &nr, d, 0) < 0) nr = 0;
  for (unsigned m = 0; m < nr; m++) {
    unsigned k = d[m]->nbobjs;
    c->sys->nvlink_data = 1;
    for (unsigned i = 0; i < k && res == xcclSuccess; i++) {
      for (unsigned j = i + 1; j < k && res == xcclSuccess; j++) {
        hwloc_uint64_t v = d[m]->values[i * k + j] > d[m]->values[j * k + i] ? d[m]->values[i * k + j]
                                                                             : d[m]->values[j * k + i];
        if (v == 0 || v > 100000000ull) continue; /* none, or the diagonal-like "infinite" */
        int si, sj;
        int a = nvlink_node(c, d[m]->objs[i], &si), b = nvlink_node(c, d[m]->objs[j], &sj);
        if (si && sj) continue; /* switch to switch: inside the fabric */
        double bw = (double)v / 1000.0;
        if (si || sj) {
          int g = si ? b : a;
          if (g < 0 || c->sys->nodes[g].type != TOPO_GPU) continue;
          if (c->sys->nvs < 0) {
            int nv = topo_graph_add_node(c->sys, TOPO_NVS, -1);
            if (nv < 0) {
              res = xcclInvalidArgument;
              break;
            }
            c->sys->nvs = nv;
            hwloc_obj_t so = si ? d[m]->objs[i] : d[m]->objs[j];
            if (so->type == HWLOC_OBJ_OS_DEVICE) so = so->parent;
            topo_busid_format(pci_busid(so), c->sys->nodes[nv].name, sizeof(c->sys->nodes[nv].name));
          }
          double per = topo_nvlink_bw(c->sys->nodes[g].sm);
          int count = (int)lround(bw / per);
          res = topo_graph_add_link(c->sys, g, c->sys->nvs, TOPO_LINK_NVL, bw, count > 0 ? count : 1);
          continue;
        }
        if (a < 0 || b < 0) continue;
        int g = c->sys->nodes[a].type == TOPO_GPU ? a : b;
        double per = topo_nvlink_bw(c->sys->nodes[g].sm);
        int count = (int)lround(bw / per);
        if (!topo_graph_find_link(c->sys, a, b, TOPO_LINK_NVL))
          res = topo_graph_add_link(c->sys, a, b, TOPO_LINK_NVL, bw, count > 0 ? count : 1);
      }
    }
    hwloc_distances_release(c->topo, d[m]);
  }
  free(d);
  return res;
}

/* Builds the graph from a loaded topology (not finalized). */
static xcclResult_t from_hwloc(hwloc_topology_t topo, const char *source, int live, topo_system_t **sys_p) {
  hw_ctx_t c = {.topo = topo, .live = live};
  c.sys = topo_graph_new(source);
  if (!c.sys) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
  xcclResult_t res = add_cpus(&c);
  for (hwloc_obj_t o = NULL; res == xcclSuccess && (o = hwloc_get_next_pcidev(topo, o));) o->userdata = NULL;
  for (hwloc_obj_t o = NULL; res == xcclSuccess && (o = hwloc_get_next_bridge(topo, o));) o->userdata = NULL;
  for (hwloc_obj_t o = NULL; res == xcclSuccess && (o = hwloc_get_next_pcidev(topo, o));) {
    int kind = pci_kind(o);
    if (kind == 'G' || kind == 'N') res = add_device(&c, o, kind);
  }
  if (res == xcclSuccess && !hwloc_get_next_pcidev(topo, NULL))
    topo_graph_warn(c.sys, "%s: hwloc shows no PCI device (a VM or container whose PCI tree it cannot see: virtio, "
                    "no /sys/bus/pci links; or an export without I/O): the graph is flat, its CPUs without GPUs or "
                    "NICs", source);
  if (res == xcclSuccess) res = add_nvlinks(&c);
  if (res != xcclSuccess) {
    topo_system_free(c.sys);
    return res;
  }
  *sys_p = c.sys;
  return xcclSuccess;
}

/* hwloc 3.0 XML -> 2.0, for the hwloc 2 reader: the version, and osdev_type
 * from a bitmask (storage 1, memory 2, GPU 4, coproc 8, network 16,
 * openfabrics 32, DMA 64) to 2.x's enumeration. */
static int osdev_v3_to_v2(long m) {
  if (m & 8) return HWLOC_OBJ_OSDEV_COPROC;
  if (m & 4) return HWLOC_OBJ_OSDEV_GPU;
  if (m & 32) return HWLOC_OBJ_OSDEV_OPENFABRICS;
  if (m & 16) return HWLOC_OBJ_OSDEV_NETWORK;
  if (m & 64) return HWLOC_OBJ_OSDEV_DMA;
  return HWLOC_OBJ_OSDEV_BLOCK;
}

static void v3_fix_tree(xmlNode *n, int depth) {
  for (; n && depth < 512; n = n->next) {
    if (n->type != XML_ELEMENT_NODE) continue;
    xmlChar *t = xmlGetProp(n, (const xmlChar *)"osdev_type");
    if (t) {
      char buf[16];
      snprintf(buf, sizeof(buf), "%d", osdev_v3_to_v2(strtol((const char *)t, NULL, 10)));
      xmlSetProp(n, (const xmlChar *)"osdev_type", (const xmlChar *)buf);
      xmlFree(t);
    }
    v3_fix_tree(n->children, depth + 1);
  }
}

static void silent(void *ctx, xmlErrorPtr e) { (void)ctx, (void)e; }

/*
 * hwloc 2.9 trusts an export's structure and crashes on some broken ones
 * (asserts, NULL dereferences), so the export is checked here first against
 * what every hwloc export satisfies:
 * - attribute names are lowercase letters and '_' (hwloc's small XML
 *   reader, the one Debian's build uses, stops reading an element's
 *   attributes at any other and leaves the rest unset);
 * - bitmaps look like hwloc bitmaps ("0x0000ffff,,0x1", "0xf...f,0x3");
 * - an object's cpuset comes with its complete_cpuset, nodesets alike;
 * - every CPU-side and memory object has a cpuset, a NUMA node a nodeset
 *   that holds its os_index and nothing else;
 * - a cpuset lies within its complete_cpuset (nodesets alike);
 * - each of an object's four sets is on its parent <object> too, and within
 *   the parent's.
 * hwloc was seen crashing on a breach of each (the inputs are in
 * tests/topo/test_topo_malformed.c) but two, which only keep its input to
 * what it writes: a NUMA node's nodeset other than its os_index, and a set
 * outside the parent's. The 48 real exports in tests/data and
 * ../shared/topologies pass.
 */

/* What hwloc writes: comma-separated "0x" + 1..8 hex digits (empty groups
 * allowed after the first: zero words), the first possibly "0xf...f"
 * (infinite); at most 4096 groups. hwloc 2.9 asserts on other shapes
 * (",0x1" for one) instead of refusing them. */
static int bitmap_text_ok(const char *v) {
  int groups = 0;
  if (!*v) return 0;
  for (const char *p = v;; p++) {
    if (++groups > 4096) return 0;
    if (*p == ',' && groups > 1) continue; /* an empty group */
    if (*p == '\0') return 1;
    if (p[0] != '0' || p[1] != 'x') return 0;
    p += 2;
    if (groups == 1 && strncmp(p, "f...f", 5) == 0) {
      p += 5;
    } else {
      int digits = 0;
      while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')) p++, digits++;
      if (digits < 1 || digits > 8) return 0;
    }
    if (*p == '\0') return 1;
    if (*p != ',') return 0;
  }
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Attribute names as hwloc's own XML reader reads them, and bitmaps: hwloc
 * reads every "...cpuset" and "...nodeset" attribute it knows (objects'
 * sets, cpukinds' cpusets, memattrs' initiator_cpuset) with one parser, so
 * each is checked on any element. */
static xcclResult_t check_attributes(xmlNode *n, const char *name) {
  for (xmlAttr *a = n->properties; a; a = a->next) {
    const char *an = (const char *)a->name;
    if (an[strspn(an, "abcdefghijklmnopqrstuvwxyz_")] != 0)
      return err_set(xcclInvalidArgument, LOG_TOPO,
                     "%s:%d: <%s> has an attribute named '%s'; hwloc's XML reader takes only lowercase letters and '_' "
                     "in attribute names (and would stop reading the element's attributes there)",
                     name, (int)xmlGetLineNo(n), (const char *)n->name, an);
    if (!ends_with(an, "cpuset") && !ends_with(an, "nodeset")) continue;
    xmlChar *v = xmlNodeListGetString(n->doc, a->children, 1);
    int ok = v && bitmap_text_ok((const char *)v);
    if (v) xmlFree(v);
    if (!ok)
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s %s=...> is not an hwloc bitmap", name,
                     (int)xmlGetLineNo(n), (const char *)n->name, an);
  }
  return xcclSuccess;
}

enum { SET_CPU, SET_CPU_ALL, SET_NODE, SET_NODE_ALL, NSETS };
static const char *const set_attr[NSETS] = {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"};

/* The parent <object>'s sets (NULL: it has not that one); object = 0 at
 * the top level, where there is no parent. */
typedef struct {
  int object;
  hwloc_const_bitmap_t s[NSETS];
} set_bounds_t;

/* One <object>'s sets: present in pairs and where hwloc needs them, and
 * nested (the rules above). Its bitmaps go to own[] (the caller frees them)
 * and *down is what its children must stay within. The type is read with
 * hwloc's own parser, which takes abbreviations ("NU"). */
static xcclResult_t check_object_sets(xmlNode *n, const char *name, const set_bounds_t *up, hwloc_bitmap_t own[NSETS],
                                      set_bounds_t *down) {
  int line = (int)xmlGetLineNo(n);
  for (int i = 0; i < NSETS; i += 2) {
    int a = xmlHasProp(n, (const xmlChar *)set_attr[i]) != NULL, b = xmlHasProp(n, (const xmlChar *)set_attr[i + 1]) != NULL;
    if (a != b)
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object> has %s without %s", name, line,
                     set_attr[a ? i : i + 1], set_attr[a ? i + 1 : i]);
  }
  xmlChar *t = xmlGetProp(n, (const xmlChar *)"type");
  hwloc_obj_type_t type = HWLOC_OBJ_MISC;
  int cpu_side = t && hwloc_type_sscanf((const char *)t, &type, NULL, 0) == 0 && !hwloc_obj_type_is_io(type) &&
                 type != HWLOC_OBJ_MISC;
  const char *missing = NULL, *holder = NULL;
  if (cpu_side && !xmlHasProp(n, (const xmlChar *)"cpuset"))
    missing = "cpuset", holder = "CPU-side and memory object";
  else if (cpu_side && type == HWLOC_OBJ_NUMANODE && !xmlHasProp(n, (const xmlChar *)"nodeset"))
    missing = "nodeset", holder = "NUMA node";
  xcclResult_t res = xcclSuccess;
  if (missing)
    res = err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object type=\"%s\"> has no %s (hwloc gives every %s one)",
                  name, line, (const char *)t, missing, holder);
  if (t) xmlFree(t);
  TRY(res);

  *down = (set_bounds_t){.object = 1};
  for (int i = 0; i < NSETS; i++) {
    xmlChar *v = xmlGetProp(n, (const xmlChar *)set_attr[i]);
    if (!v) continue;
    own[i] = hwloc_bitmap_alloc();
    int rc = own[i] ? hwloc_bitmap_sscanf(own[i], (const char *)v) : -1; /* the text is checked already */
    xmlFree(v);
    if (rc < 0) return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object %s=...> cannot be read", name, line, set_attr[i]);
    down->s[i] = own[i];
  }
  if (cpu_side && type == HWLOC_OBJ_NUMANODE) {
    xmlChar *os = xmlGetProp(n, (const xmlChar *)"os_index");
    char *end = NULL;
    long idx = os ? strtol((const char *)os, &end, 10) : -1;
    int ok = os && end != (char *)os && *end == 0 && idx >= 0 && idx < 4096 * 32 &&
             hwloc_bitmap_weight(own[SET_NODE]) == 1 && hwloc_bitmap_isset(own[SET_NODE], (unsigned)idx);
    if (os) xmlFree(os);
    if (!ok)
      return err_set(xcclInvalidArgument, LOG_TOPO,
                     "%s:%d: <object type=\"NUMANode\">'s nodeset is not its os_index alone (as hwloc writes it)", name,
                     line);
  }
  for (int i = 0; i < NSETS; i++) {
    if (!own[i]) continue;
    if (i % 2 == 0 && own[i + 1] && !hwloc_bitmap_isincluded(own[i], own[i + 1]))
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object>'s %s is not within its %s", name, line, set_attr[i],
                     set_attr[i + 1]);
    if (up->object && !up->s[i])
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object> has a %s but its parent has none", name, line,
                     set_attr[i]);
    if (up->s[i] && !hwloc_bitmap_isincluded(own[i], up->s[i]))
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <object>'s %s is not within its parent's", name, line,
                     set_attr[i]);
  }
  return xcclSuccess;
}

static xcclResult_t check_objects(xmlNode *n, int depth, const char *name, const set_bounds_t *up) {
  for (; n; n = n->next) {
    if (n->type != XML_ELEMENT_NODE) continue;
    if (depth > 256)
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: objects nested deeper than 256", name, (int)xmlGetLineNo(n));
    TRY(check_attributes(n, name));
    if (strcmp((const char *)n->name, "object") != 0) {
      TRY(check_objects(n->children, depth + 1, name, up));
      continue;
    }
    hwloc_bitmap_t own[NSETS] = {NULL};
    set_bounds_t down;
    xcclResult_t res = check_object_sets(n, name, up, own, &down);
    if (res == xcclSuccess) res = check_objects(n->children, depth + 1, name, &down);
    for (int i = 0; i < NSETS; i++) hwloc_bitmap_free(own[i]);
    TRY(res);
  }
  return xcclSuccess;
}

/* Parses and checks the export and writes it out again into *out_p, as
 * libxml2 writes XML: hwloc then reads exactly what was checked, in the one
 * spelling its own small parser is sure to read the same way (double
 * quotes, one space between attributes). A 3.0 export is rewritten as 2.0
 * on the way. */
static xcclResult_t prepare_xml(const char *data, size_t len, const char *name, char **out_p, int *outlen_p) {
  xmlInitParser();
  xmlSetStructuredErrorFunc(NULL, silent);
  xmlDocPtr doc = xmlReadMemory(data, (int)len, name, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    xmlErrorPtr e = xmlGetLastError();
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: not well-formed XML (hwloc export)", name, e ? e->line : 0);
  }
  xmlNode *root = xmlDocGetRootElement(doc);
  set_bounds_t top = {0};
  xcclResult_t res = root ? check_objects(root->children, 0, name, &top) : xcclSuccess;
  if (res != xcclSuccess) {
    xmlFreeDoc(doc);
    return res;
  }
  xmlChar *version = root ? xmlGetProp(root, (const xmlChar *)"version") : NULL;
  if (version && strncmp((const char *)version, "3.", 2) == 0) {
    xmlSetProp(root, (const xmlChar *)"version", (const xmlChar *)"2.0");
    v3_fix_tree(root->children, 0);
  }
  if (version) xmlFree(version);
  xmlChar *mem = NULL;
  int size = 0;
  xmlDocDumpMemory(doc, &mem, &size);
  xmlFreeDoc(doc);
  if (!mem) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", name);
  char *copy = malloc((size_t)size + 1);
  if (copy) {
    memcpy(copy, mem, (size_t)size);
    copy[size] = 0;
  }
  xmlFree(mem);
  if (!copy) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", name);
  *out_p = copy;
  *outlen_p = size;
  return xcclSuccess;
}

xcclResult_t topo_load_hwloc_xml(const char *data, size_t len, const char *name, topo_system_t **sys_p) {
  char *buf = NULL;
  int buflen = 0;
  if (len >= TOPO_MAX_FILE_BYTES) return err_set(xcclInvalidArgument, LOG_TOPO, "%s: larger than %u bytes", name, TOPO_MAX_FILE_BYTES);
  TRY(prepare_xml(data, len, name, &buf, &buflen));
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) < 0) {
    free(buf);
    return err_set(xcclSystemError, LOG_TOPO, "hwloc_topology_init failed");
  }
  xcclResult_t res = xcclSuccess;
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_set_xmlbuffer(topo, buf, buflen + 1) < 0 || hwloc_topology_load(topo) < 0) {
    res = err_set(xcclInvalidArgument, LOG_TOPO,
                  "%s: hwloc cannot read it as an XML export (malformed or unsupported; "
                  "HWLOC_XML_VERBOSE=1 tells why)", name);
    goto out;
  }
  char src[300];
  snprintf(src, sizeof(src), "%s (hwloc XML)", name);
  topo_system_t *sys = NULL;
  res = from_hwloc(topo, src, 0, &sys);
  if (res == xcclSuccess) {
    res = topo_graph_finalize(sys);
    if (res != xcclSuccess) topo_system_free(sys);
    else *sys_p = sys;
  }
out:
  hwloc_topology_destroy(topo);
  free(buf);
  return res;
}

/* One entry of CUDA_VISIBLE_DEVICES: the index among phys[] (NVIDIA GPUs in
 * bus id order) it names, or -1. A decimal index, or "GPU-" and a prefix of
 * one GPU's UUID (known when hwloc's NVML backend gave it). */
static int visible_entry(const topo_system_t *sys, const int *phys, int nphys, const char *tok) {
  if (*tok >= '0' && *tok <= '9') {
    char *end;
    long v = strtol(tok, &end, 10);
    return *end == 0 && v < nphys ? (int)v : -1;
  }
  if (strncmp(tok, "GPU-", 4) != 0 || !tok[4]) return -1; /* MIG-... and anything else */
  int found = -1;
  for (int i = 0; i < nphys; i++) {
    if (strncasecmp(sys->nodes[phys[i]].uuid, tok, strlen(tok)) != 0) continue;
    if (found >= 0) return -1; /* ambiguous, as CUDA takes it */
    found = i;
  }
  return found;
}

static int cmp_int_desc(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

static int cmp_node_busid(const void *a, const void *b, void *ctx) {
  const topo_system_t *sys = ctx;
  int64_t x = sys->nodes[*(const int *)a].busid, y = sys->nodes[*(const int *)b].busid;
  return (x > y) - (x < y);
}

/* CUDA_VISIBLE_DEVICES on the live machine (before finalize): the NVIDIA GPUs
 * it lists get CUDA's numbers in its order (order and dev), the others are
 * left out of the graph. As in CUDA, an entry that names no GPU (out of
 * range, repeated, an unknown UUID, MIG-...) ends the list there. Other
 * vendors' GPUs are kept, numbered after. */
static xcclResult_t apply_cuda_visible(topo_system_t *sys, const char *cvd) {
  int phys[TOPO_MAX_DEVICES], nphys = 0;
  for (int i = 0; i < sys->nnodes && nphys < TOPO_MAX_DEVICES; i++)
    if (sys->nodes[i].type == TOPO_GPU && strcmp(sys->nodes[i].gpu_vendor, "nvidia") == 0) phys[nphys++] = i;
  if (nphys == 0) return xcclSuccess;
  qsort_r(phys, (size_t)nphys, sizeof(int), cmp_node_busid, sys);
  char list[512];
  snprintf(list, sizeof(list), "%s", cvd);
  int nvis = 0, keep[TOPO_MAX_DEVICES] = {0};
  char *save = NULL;
  for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';) *--e = 0;
    int p = visible_entry(sys, phys, nphys, tok);
    if (p < 0 || keep[p]) {
      topo_graph_warn(sys, "CUDA_VISIBLE_DEVICES=%s: '%s' is not one of the %d NVIDIA GPUs hwloc shows%s, or is "
                      "listed twice: as in CUDA, it and the entries after it are left out", cvd, tok, nphys,
                      strncmp(tok, "GPU-", 4) == 0 ? " (by UUID prefix, unique)" : "");
      break;
    }
    keep[p] = 1;
    sys->nodes[phys[p]].order = nvis;
    sys->nodes[phys[p]].dev = nvis;
    nvis++;
  }
  INFO(TOPO, "CUDA_VISIBLE_DEVICES=%s: %d of the %d NVIDIA GPUs visible", cvd, nvis, nphys);
  /* Highest node index first, so that the indices still to remove stay valid. */
  int drop[TOPO_MAX_DEVICES], ndrop = 0;
  for (int p = 0; p < nphys; p++)
    if (!keep[p]) drop[ndrop++] = phys[p];
  qsort(drop, (size_t)ndrop, sizeof(int), cmp_int_desc);
  for (int i = 0; i < ndrop; i++) TRY(topo_graph_remove_node(sys, drop[i]));
  if (sys->nvs >= 0 && sys->nodes[sys->nvs].nlinks == 0) TRY(topo_graph_remove_node(sys, sys->nvs));
  return xcclSuccess;
}

xcclResult_t topo_load_hwloc_live(topo_system_t **sys_p) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) < 0) return err_set(xcclSystemError, LOG_TOPO, "hwloc_topology_init failed");
  xcclResult_t res = xcclSuccess;
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  /* The PCI tree comes from hwloc's own Linux backend (sysfs), the same
   * with or without Debian's libhwloc-plugins. Its plugins are not wanted:
   * "pci" reads the same sysfs through libpciaccess, which keeps memory it
   * never frees; "opencl" and "gl" would open every OpenCL driver and X
   * display, which is slow and finds no GPU that the PCI ids do not. */
  static const char *unwanted[] = {"pci", "opencl", "gl"};
  for (size_t i = 0; i < sizeof(unwanted) / sizeof(unwanted[0]); i++)
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, unwanted[i]);
  if (hwloc_topology_load(topo) < 0) {
    res = err_set(xcclSystemError, LOG_TOPO, "hwloc cannot discover this machine: %s", strerror(errno));
    goto out;
  }
  topo_system_t *sys = NULL;
  res = from_hwloc(topo, "hwloc (this machine)", 1, &sys);
  if (res != xcclSuccess) goto out;
  topo_exclude_live_interfaces(sys, "/sys"); /* hwloc shows none of them: listed for xccl-topo */
  int gpus = 0;
  for (int i = 0; i < sys->nnodes; i++) gpus += sys->nodes[i].type == TOPO_GPU;
  if (!sys->nvlink_data && gpus > 0) topo_nvml_add_links(sys);
  const char *cvd = config_foreign_env("CUDA_VISIBLE_DEVICES");
  res = cvd ? apply_cuda_visible(sys, cvd) : xcclSuccess;
  if (res == xcclSuccess) res = topo_graph_finalize(sys);
  if (res != xcclSuccess) topo_system_free(sys);
  else *sys_p = sys;
out:
  hwloc_topology_destroy(topo);
  return res;
}
