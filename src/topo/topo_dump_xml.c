/*
 * topo_dump_xml.c — the graph as NCCL's topology XML (<system version="1">).
 *
 * The tree is written from each CPU down, children in the order they were
 * added. GPUs carry their NVLinks (to another GPU by its bus id; to the
 * NVSwitch fabric with tclass 0x068000; to their own CPU with 0x068001, as
 * NCCL writes for POWER). The ports of one NIC function share one <pci>.
 * Only known attributes are written, so a hint file stays a hint file. One
 * attribute NCCL does not have: package="N" on <cpu>, which NCCL ignores
 * and which keeps the NUMA domains of one socket together on reload.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_graph.h"

static void indent(topo_buf_t *b, int depth) { topo_buf_printf(b, "%*s", 2 * depth, ""); }

static void attr_s(topo_buf_t *b, const char *name, const char *v) {
  if (!v || !v[0]) return;
  topo_buf_printf(b, " %s=\"", name);
  topo_buf_xml_escaped(b, v);
  topo_buf_printf(b, "\"");
}
static void attr_i(topo_buf_t *b, const char *name, int v) {
  if (v >= 0) topo_buf_printf(b, " %s=\"%d\"", name, v);
}
static void attr_x(topo_buf_t *b, const char *name, int v, int digits) {
  if (v >= 0) topo_buf_printf(b, " %s=\"0x%0*x\"", name, digits, v);
}

static void pci_attrs(topo_buf_t *b, const topo_node_t *x) {
  char bus[32];
  attr_s(b, "busid", topo_busid_format(x->busid, bus, sizeof(bus)));
  attr_x(b, "class", x->pci_class, 6);
  attr_x(b, "vendor", x->vendor, 4);
  attr_x(b, "device", x->device, 4);
  attr_x(b, "subsystem_vendor", x->subvendor, 4);
  attr_x(b, "subsystem_device", x->subdevice, 4);
  if (x->link_gts > 0) topo_buf_printf(b, " link_speed=\"%.1f GT/s PCIe\"", x->link_gts);
  if (x->link_width > 0) topo_buf_printf(b, " link_width=\"%d\"", x->link_width);
}

static void write_gpu(topo_buf_t *b, const topo_system_t *sys, int i, int depth) {
  const topo_node_t *x = &sys->nodes[i];
  indent(b, depth);
  topo_buf_printf(b, "<pci");
  pci_attrs(b, x);
  if (!x->has_gpu_elem && x->nlinks <= 1) {
    topo_buf_printf(b, "/>\n");
    return;
  }
  topo_buf_printf(b, ">\n");
  indent(b, depth + 1);
  topo_buf_printf(b, "<gpu");
  attr_i(b, "dev", x->dev);
  attr_i(b, "sm", x->sm);
  attr_i(b, "rank", x->rank);
  attr_i(b, "gdr", x->gdr);
  int nvl = 0;
  for (int l = 0; l < x->nlinks; l++) nvl += x->links[l].type == TOPO_LINK_NVL;
  if (!nvl) {
    topo_buf_printf(b, "/>\n");
  } else {
    topo_buf_printf(b, ">\n");
    for (int l = 0; l < x->nlinks; l++) {
      const topo_link_t *lk = &x->links[l];
      if (lk->type != TOPO_LINK_NVL) continue;
      const topo_node_t *p = &sys->nodes[lk->peer];
      char bus[32];
      indent(b, depth + 2);
      if (p->type == TOPO_GPU)
        topo_buf_printf(b, "<nvlink target=\"%s\" count=\"%d\" tclass=\"0x%06x\"/>\n",
                        topo_busid_format(p->busid, bus, sizeof(bus)), lk->count, p->pci_class >= 0 ? p->pci_class : 0x030200);
      else if (p->type == TOPO_NVS)
        topo_buf_printf(b, "<nvlink target=\"%s\" count=\"%d\" tclass=\"0x068000\"/>\n",
                        p->name[0] ? p->name : "ffffffff:ff:ff.0", lk->count);
      else
        topo_buf_printf(b, "<nvlink target=\"%s\" count=\"%d\" tclass=\"0x068001\"/>\n",
                        topo_busid_format(x->busid, bus, sizeof(bus)), lk->count);
    }
    indent(b, depth + 1);
    topo_buf_printf(b, "</gpu>\n");
  }
  indent(b, depth);
  topo_buf_printf(b, "</pci>\n");
}

static void write_net(topo_buf_t *b, const topo_node_t *x, int depth) {
  indent(b, depth);
  topo_buf_printf(b, "<net");
  attr_s(b, "name", x->name);
  attr_i(b, "dev", x->nic_dev);
  if (x->speed_mbps > 0) topo_buf_printf(b, " speed=\"%.0f\"", x->speed_mbps);
  attr_i(b, "port", x->port);
  if (x->latency > 0) topo_buf_printf(b, " latency=\"%f\"", x->latency);
  if (x->guid) topo_buf_printf(b, " guid=\"0x%" PRIx64 "\"", x->guid);
  attr_i(b, "maxconn", x->maxconn);
  attr_i(b, "gdr", x->nic_gdr);
  topo_buf_printf(b, "/>\n");
}

/* NIC node i and the following siblings of the same PCI function. */
static void write_nic_group(topo_buf_t *b, const topo_system_t *sys, int i, int depth, char *done) {
  const topo_node_t *x = &sys->nodes[i];
  int in_pci = x->busid >= 0;
  int d = depth;
  if (in_pci) {
    indent(b, depth);
    topo_buf_printf(b, "<pci");
    pci_attrs(b, x);
    if (!x->nic_elem) { /* a hint: the class said NIC, nothing more */
      topo_buf_printf(b, "/>\n");
      done[i] = 1;
      return;
    }
    topo_buf_printf(b, ">\n");
    d++;
  }
  indent(b, d);
  topo_buf_printf(b, "<nic>\n");
  for (int j = i; j < sys->nnodes; j++) {
    const topo_node_t *y = &sys->nodes[j];
    if (done[j] || y->type != TOPO_NIC || y->parent != x->parent || y->busid != x->busid || !y->nic_elem) continue;
    write_net(b, y, d + 1);
    done[j] = 1;
  }
  indent(b, d);
  topo_buf_printf(b, "</nic>\n");
  if (in_pci) {
    indent(b, depth);
    topo_buf_printf(b, "</pci>\n");
  }
}

static void write_children(topo_buf_t *b, const topo_system_t *sys, int parent, int depth, char *done) {
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    if (x->parent != parent || done[i]) continue;
    if (x->type == TOPO_GPU) {
      write_gpu(b, sys, i, depth);
      done[i] = 1;
    } else if (x->type == TOPO_NIC) {
      write_nic_group(b, sys, i, depth, done);
    } else if (x->type == TOPO_PCI) {
      done[i] = 1;
      indent(b, depth);
      topo_buf_printf(b, "<pci");
      pci_attrs(b, x);
      int any = 0;
      for (int j = 0; j < sys->nnodes && !any; j++) any = sys->nodes[j].parent == i;
      if (!any) {
        topo_buf_printf(b, "/>\n");
        continue;
      }
      topo_buf_printf(b, ">\n");
      write_children(b, sys, i, depth + 1, done);
      indent(b, depth);
      topo_buf_printf(b, "</pci>\n");
    }
  }
}

xcclResult_t topo_render_xml(const topo_system_t *sys, topo_buf_t *b) {
  char *done = calloc((size_t)sys->nnodes + 1, 1);
  if (!done) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
  topo_buf_printf(b, "<system version=\"1\">\n");
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    if (x->type != TOPO_CPU) continue;
    topo_buf_printf(b, "  <cpu");
    topo_buf_printf(b, " numaid=\"%d\"", x->numa);
    attr_s(b, "affinity", x->affinity);
    attr_s(b, "arch", x->arch);
    attr_s(b, "vendor", x->cpu_vendor);
    attr_i(b, "familyid", x->family);
    attr_i(b, "modelid", x->model);
    attr_i(b, "package", x->package);
    topo_buf_printf(b, ">\n");
    write_children(b, sys, i, 2, done);
    topo_buf_printf(b, "  </cpu>\n");
  }
  topo_buf_printf(b, "</system>\n");
  free(done);
  return xcclSuccess;
}
