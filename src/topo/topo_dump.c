/*
 * topo_dump.c — the graph for people and programs: a text picture, a
 * `nvidia-smi topo -m` style matrix, JSON (stable, documented in README.md),
 * Graphviz dot, NCCL XML (topo_dump_xml.c) and the channels as NCCL's graph
 * XML (topo_graph_file.c). Output depends only on the
 * graph, so it is the same on every run.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_graph.h"
#include "topo_paths.h"

xcclResult_t topo_render_xml(const topo_system_t *sys, topo_buf_t *b);
xcclResult_t topo_render_nccl_graph(const topo_system_t *sys, const topo_channels_t *chs, topo_buf_t *b);

int topo_format_parse(const char *name, topo_format_t *fmt_p) {
  static const char *names[] = {"text", "matrix", "xml", "json", "dot", "nccl-graph"};
  for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
    if (name && strcmp(name, names[i]) == 0) {
      *fmt_p = (topo_format_t)i;
      return 0;
    }
  return -1;
}

static const char *pci_kind(const topo_node_t *x) {
  int c = x->pci_class >> 8;
  if (c == 0x0604) return "PCI bridge/switch";
  if (c == 0x0600) return "host bridge";
  if (c < 0) return "PCI";
  return "PCI device";
}

static void text_link_to_parent(topo_buf_t *b, const topo_system_t *sys, const topo_node_t *x) {
  for (int l = 0; l < x->nlinks; l++)
    if (x->links[l].peer == x->parent && x->links[l].type == TOPO_LINK_PCI) {
      if (x->link_gts > 0 && x->link_width > 0)
        topo_buf_printf(b, ", PCIe %.1f GT/s x%d", x->link_gts, x->link_width);
      topo_buf_printf(b, ", %.1f GB/s up", x->links[l].bw);
    }
  (void)sys;
}

static void text_tree(topo_buf_t *b, const topo_system_t *sys, int parent, int depth) {
  char bus[32];
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    if (x->parent != parent) continue;
    topo_buf_printf(b, "%*s", 2 * depth, "");
    if (x->type == TOPO_PCI) {
      topo_buf_printf(b, "%s %s", pci_kind(x), topo_busid_format(x->busid, bus, sizeof(bus)));
      if (x->vendor >= 0) topo_buf_printf(b, " [%04x:%04x]", x->vendor, x->device >= 0 ? x->device : 0);
    } else if (x->type == TOPO_GPU) {
      topo_buf_printf(b, "GPU%d %s", x->index, topo_busid_format(x->busid, bus, sizeof(bus)));
      if (x->vendor >= 0) topo_buf_printf(b, " [%04x:%04x]", x->vendor, x->device >= 0 ? x->device : 0);
      if (x->sm >= 0) topo_buf_printf(b, " sm%d", x->sm);
      if (x->dev >= 0) topo_buf_printf(b, " dev %d", x->dev);
    } else if (x->type == TOPO_NIC) {
      topo_buf_printf(b, "NIC%d %s", x->index, x->name);
      if (x->busid >= 0) topo_buf_printf(b, " %s", topo_busid_format(x->busid, bus, sizeof(bus)));
      if (x->speed_mbps > 0) topo_buf_printf(b, " %.0f Gb/s", x->speed_mbps / 1000);
      topo_buf_printf(b, "%s", x->rdma ? " rdma" : "");
    }
    text_link_to_parent(b, sys, x);
    topo_buf_printf(b, "\n");
    if (x->type == TOPO_GPU)
      for (int l = 0; l < x->nlinks; l++) {
        const topo_link_t *lk = &x->links[l];
        if (lk->type != TOPO_LINK_NVL) continue;
        const topo_node_t *p = &sys->nodes[lk->peer];
        topo_buf_printf(b, "%*sNVLink x%d to ", 2 * depth + 2, "", lk->count);
        if (p->type == TOPO_GPU) topo_buf_printf(b, "GPU%d", p->index);
        else if (p->type == TOPO_NVS) topo_buf_printf(b, "NVSwitch");
        else topo_buf_printf(b, "CPU %d", p->numa);
        topo_buf_printf(b, ", %.1f GB/s\n", lk->bw);
      }
    text_tree(b, sys, i, depth + 1);
  }
}

static void text_channels(topo_buf_t *b, const topo_system_t *sys, const topo_channels_t *chs) {
  topo_buf_printf(b, "Channels: %d\n", chs->nchannels);
  for (int c = 0; c < chs->nchannels; c++) {
    const topo_channel_t *ch = &chs->ch[c];
    topo_buf_printf(b, "  %2d: GPUs", c);
    for (int i = 0; i < ch->ngpus; i++) topo_buf_printf(b, " %d", ch->gpus[i]);
    topo_buf_printf(b, "  %.2f GB/s (%s)", ch->bw, topo_path_name(ch->worst));
    if (ch->nic >= 0) topo_buf_printf(b, "  NIC %s %.2f GB/s", topo_nic_name(sys, ch->nic), ch->nic_bw);
    topo_buf_printf(b, "\n");
  }
}

static void render_text(topo_buf_t *b, const topo_system_t *sys, const topo_channels_t *chs) {
  topo_buf_printf(b, "Topology: %s\n", sys->source);
  topo_buf_printf(b, "GPUs %d, NICs %d, NUMA domains %d, NVSwitch %s, NVLink data %s\n", sys->ngpus, sys->nnics,
                  sys->ncpus, sys->nvs >= 0 ? "yes" : "no", sys->nvlink_data ? "yes" : "no");
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    if (x->type != TOPO_CPU) continue;
    topo_buf_printf(b, "CPU %d (NUMA %d", x->numa, x->numa);
    if (x->package >= 0) topo_buf_printf(b, ", package %d", x->package);
    if (x->arch[0]) topo_buf_printf(b, ", %s", x->arch);
    if (x->cpu_vendor[0]) topo_buf_printf(b, " %s", x->cpu_vendor);
    if (x->family >= 0) topo_buf_printf(b, " family %d model %d", x->family, x->model);
    topo_buf_printf(b, ")%s%s\n", x->affinity ? " affinity " : "", x->affinity ? x->affinity : "");
    text_tree(b, sys, i, 1);
  }
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    if (x->type != TOPO_CPU) continue;
    for (int l = 0; l < x->nlinks; l++) {
      const topo_link_t *lk = &x->links[l];
      if ((lk->type == TOPO_LINK_SYS || lk->type == TOPO_LINK_SOC) && lk->peer > i)
        topo_buf_printf(b, "CPU %d - CPU %d: %s %.1f GB/s\n", x->numa, sys->nodes[lk->peer].numa,
                        topo_link_type_name(lk->type), lk->bw);
    }
  }
  if (chs) text_channels(b, sys, chs);
}

static void cell(topo_buf_t *b, const topo_path_t *p) {
  char c[32];
  if (p->type == TOPO_PATH_SAME || p->type == TOPO_PATH_NONE) snprintf(c, sizeof(c), "%s", topo_path_name(p->type));
  else snprintf(c, sizeof(c), "%s/%.0f", topo_path_name(p->type), p->bw);
  topo_buf_printf(b, "%-10s", c);
}

static void render_matrix(topo_buf_t *b, const topo_system_t *sys) {
  int G = sys->ngpus, N = sys->nnics;
  char name[32];
  topo_buf_printf(b, "%-8s", "");
  for (int g = 0; g < G; g++) {
    snprintf(name, sizeof(name), "GPU%d", g);
    topo_buf_printf(b, "%-10s", name);
  }
  for (int n = 0; n < N; n++) {
    snprintf(name, sizeof(name), "NIC%d", n);
    topo_buf_printf(b, "%-10s", name);
  }
  topo_buf_printf(b, "%-6s%s\n", "NUMA", "CPU affinity");
  for (int g = 0; g < G; g++) {
    const topo_node_t *x = &sys->nodes[sys->gpus[g]];
    int cpu = topo_graph_cpu_of(sys, sys->gpus[g]);
    snprintf(name, sizeof(name), "GPU%d", g);
    topo_buf_printf(b, "%-8s", name);
    for (int h = 0; h < G; h++) cell(b, topo_path_gg(sys, g, h));
    for (int n = 0; n < N; n++) cell(b, topo_path_gn(sys, g, n));
    topo_buf_printf(b, "%-6d%s\n", x->numa, cpu >= 0 && sys->nodes[cpu].affinity ? sys->nodes[cpu].affinity : "");
  }
  for (int n = 0; n < N; n++) {
    snprintf(name, sizeof(name), "NIC%d", n);
    topo_buf_printf(b, "%-8s", name);
    for (int g = 0; g < G; g++) cell(b, topo_path_ng(sys, n, g));
    for (int m = 0; m < N; m++) topo_buf_printf(b, "%-10s", m == n ? "X" : "");
    topo_buf_printf(b, "%-6d\n", sys->nodes[sys->nics[n]].numa);
  }
  topo_buf_printf(b, "\nLegend (kind/GB/s: the path's kind and its narrowest link):\n"
                     "  X    = the same device\n"
                     "  NVL  = NVLink, directly or through NVSwitches\n"
                     "  NVB  = NVLink through another GPU\n"
                     "  PIX  = through one PCI switch\n"
                     "  PXB  = through several PCI switches, not the host bridge\n"
                     "  PHB  = through the CPU's PCI host bridge (or between NUMA domains of one socket)\n"
                     "  SYS  = across the link between sockets\n");
  if (N) {
    topo_buf_printf(b, "\nNICs:\n");
    for (int n = 0; n < N; n++) {
      char bus[32];
      const topo_node_t *x = &sys->nodes[sys->nics[n]];
      topo_buf_printf(b, "  NIC%d: %s %s\n", n, x->name, topo_busid_format(x->busid, bus, sizeof(bus)));
    }
  }
}

json_t *topo_json(const topo_system_t *sys, const topo_channels_t *chs) {
  char bus[32];
  int bad = 0;
  json_t *gpus = json_array(), *nics = json_array(), *excluded = json_array(), *channels = json_array();
  json_t *nodes = json_array(), *links = json_array();
  for (int g = 0; g < sys->ngpus; g++) {
    const topo_node_t *x = &sys->nodes[sys->gpus[g]];
    int nic = topo_gpu_nearest_nic(sys, g);
    bad |= json_array_append_new(
        gpus,
        json_pack("{s:i, s:s, s:i, s:i, s:o, s:s?}", "index", g, "busid", topo_busid_format(x->busid, bus, sizeof(bus)),
                  "numa", x->numa, "sm", x->sm, "nearest_nic", nic >= 0 ? json_integer(nic) : json_null(), "nic_path",
                  nic >= 0 ? topo_path_name(topo_path_gn(sys, g, nic)->type) : NULL));
  }
  for (int n = 0; n < sys->nnics; n++) {
    const topo_node_t *x = &sys->nodes[sys->nics[n]];
    bad |= json_array_append_new(
        nics, json_pack("{s:i, s:s, s:s, s:i, s:o, s:b}", "index", n, "name", x->name, "busid",
                        topo_busid_format(x->busid, bus, sizeof(bus)), "numa", x->numa, "speed_gbps",
                        x->speed_mbps > 0 ? json_real(x->speed_mbps / 1000) : json_null(), "rdma", x->rdma));
  }
  for (int e = 0; e < topo_nexcluded(sys); e++) /* interfaces no choice takes (topo_virtual.c) */
    bad |= json_array_append_new(
        excluded, json_pack("{s:s, s:s}", "name", topo_excluded_name(sys, e), "why", topo_excluded_why(sys, e)));
  for (int c = 0; chs && c < chs->nchannels; c++) {
    const topo_channel_t *ch = &chs->ch[c];
    json_t *ring = json_array();
    for (int i = 0; i < ch->ngpus; i++) bad |= json_array_append_new(ring, json_integer(ch->gpus[i]));
    bad |=
        json_array_append_new(channels, json_pack("{s:o, s:o, s:f, s:s, s:f}", "gpus", ring, "nic",
                                                  ch->nic >= 0 ? json_integer(ch->nic) : json_null(), "bw_gbs", ch->bw,
                                                  "path", topo_path_name(ch->worst), "nic_bw_gbs", ch->nic_bw));
  }
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    json_t *node = json_pack("{s:i, s:s, s:i, s:i}", "id", i, "type", topo_node_type_name(x->type), "parent", x->parent,
                             "numa", x->numa);
    if (node && x->busid >= 0)
      bad |= json_object_set_new(node, "busid", json_string(topo_busid_format(x->busid, bus, sizeof(bus))));
    if (node && x->index >= 0) bad |= json_object_set_new(node, "index", json_integer(x->index));
    if (node && x->type == TOPO_NIC) bad |= json_object_set_new(node, "name", json_string(x->name));
    bad |= json_array_append_new(nodes, node);
  }
  for (int i = 0; i < sys->nnodes; i++)
    for (int l = 0; l < sys->nodes[i].nlinks; l++) {
      const topo_link_t *lk = &sys->nodes[i].links[l];
      if (lk->peer < i) continue; /* each link once */
      bad |=
          json_array_append_new(links, json_pack("{s:i, s:i, s:s, s:f, s:i}", "from", i, "to", lk->peer, "type",
                                                 topo_link_type_name(lk->type), "bw_gbs", lk->bw, "count", lk->count));
    }
  json_t *top = json_pack("{s:i, s:s, s:i, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "version", 1, "source", sys->source,
                          "numa_domains", sys->ncpus, "nvswitch", sys->nvs >= 0, "gpus", gpus, "nics", nics, "excluded",
                          excluded, "channels", channels, "nodes", nodes, "links", links);
  if (bad) {
    json_decref(top);
    return NULL;
  }
  return top;
}

void topo_buf_json(topo_buf_t *b, json_t *j) {
  char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) : NULL;
  if (text)
    topo_buf_printf(b, "%s\n", text);
  else
    b->oom = 1;
  free(text);
  json_decref(j);
}

static void render_dot(topo_buf_t *b, const topo_system_t *sys, const topo_channels_t *chs) {
  char bus[32];
  topo_buf_printf(b, "graph xccl_topology {\n  graph [rankdir=TB, fontname=\"Helvetica\", label=\"");
  topo_buf_json_escaped(b, sys->source);
  topo_buf_printf(b, "\"];\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n");
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *x = &sys->nodes[i];
    const char *shape = "box", *color = "gray";
    char label[160];
    switch (x->type) {
    case TOPO_CPU:
      snprintf(label, sizeof(label), "CPU %d", x->numa);
      shape = "box3d";
      color = "lightblue";
      break;
    case TOPO_GPU:
      snprintf(label, sizeof(label), "GPU%d\\n%s", x->index, topo_busid_format(x->busid, bus, sizeof(bus)));
      color = "palegreen";
      break;
    case TOPO_NIC:
      snprintf(label, sizeof(label), "NIC%d %.40s", x->index, x->name);
      color = "orange";
      break;
    case TOPO_NVS:
      snprintf(label, sizeof(label), "NVSwitch");
      shape = "hexagon";
      color = "yellowgreen";
      break;
    case TOPO_NET:
      snprintf(label, sizeof(label), "network");
      shape = "ellipse";
      color = "white";
      break;
    default:
      snprintf(label, sizeof(label), "PCI %s", topo_busid_format(x->busid, bus, sizeof(bus)));
      shape = "ellipse";
      color = "lightgray";
      break;
    }
    topo_buf_printf(b, "  n%d [label=\"", i);
    topo_buf_json_escaped(b, label);
    topo_buf_printf(b, "\", shape=%s, style=filled, fillcolor=%s];\n", shape, color);
  }
  for (int i = 0; i < sys->nnodes; i++)
    for (int l = 0; l < sys->nodes[i].nlinks; l++) {
      const topo_link_t *lk = &sys->nodes[i].links[l];
      if (lk->peer < i) continue;
      const char *color = lk->type == TOPO_LINK_NVL ? "darkgreen" : lk->type == TOPO_LINK_SYS ? "red" : "black";
      topo_buf_printf(b, "  n%d -- n%d [label=\"%s %.0f\", color=%s%s];\n", i, lk->peer, topo_link_type_name(lk->type),
                      lk->bw, color, lk->type == TOPO_LINK_NVL ? ", penwidth=2" : "");
    }
  if (chs && chs->nchannels > 0) {
    const topo_channel_t *ch = &chs->ch[0];
    topo_buf_printf(b, "  // channel 0 ring:");
    for (int i = 0; i < ch->ngpus; i++) topo_buf_printf(b, " %d", ch->gpus[i]);
    topo_buf_printf(b, "\n");
  }
  topo_buf_printf(b, "}\n");
}

xcclResult_t topo_render(const topo_system_t *sys, const topo_channels_t *chs, topo_format_t fmt, char **text_p) {
  topo_buf_t b = {0};
  xcclResult_t res = xcclSuccess;
  switch (fmt) {
  case TOPO_FMT_TEXT: render_text(&b, sys, chs); break;
  case TOPO_FMT_MATRIX: render_matrix(&b, sys); break;
  case TOPO_FMT_JSON:
    topo_buf_json(&b, topo_json(sys, chs));
    break;
  case TOPO_FMT_DOT: render_dot(&b, sys, chs); break;
  case TOPO_FMT_XML: res = topo_render_xml(sys, &b); break;
  case TOPO_FMT_NCCL_GRAPH: res = topo_render_nccl_graph(sys, chs, &b); break;
  default: res = err_set(xcclInvalidArgument, LOG_TOPO, "unknown output format %d", (int)fmt);
  }
  if (res == xcclSuccess && (b.oom || !b.data))
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory rendering the topology (or, in JSON, a name not in UTF-8)");
  if (res != xcclSuccess) {
    free(b.data);
    return res;
  }
  *text_p = b.data;
  return xcclSuccess;
}

xcclResult_t topo_write(const topo_system_t *sys, const topo_channels_t *chs, topo_format_t fmt, FILE *out) {
  char *text;
  TRY(topo_render(sys, chs, fmt, &text));
  size_t len = strlen(text);
  int bad = fwrite(text, 1, len, out) != len || fflush(out) != 0;
  free(text);
  if (bad) return err_set(xcclSystemError, LOG_TOPO, "writing the topology: %s", strerror(errno));
  return xcclSuccess;
}

xcclResult_t topo_dump_file(const topo_system_t *sys, const char *path) {
  char *text;
  TRY(topo_render(sys, NULL, TOPO_FMT_XML, &text));
  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    free(text);
    return err_set(xcclSystemError, LOG_TOPO, "cannot write the topology to %s: %s", path, strerror(e));
  }
  size_t len = strlen(text);
  int bad = fwrite(text, 1, len, f) != len;
  bad |= fclose(f) != 0;
  free(text);
  if (bad) return err_set(xcclSystemError, LOG_TOPO, "writing the topology to %s: %s", path, strerror(errno));
  INFO(TOPO, "topology written to %s", path);
  return xcclSuccess;
}
