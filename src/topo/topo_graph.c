/*
 * topo_graph.c — building the node graph and finishing it (numbering,
 * inter-socket and network links, paths).
 */
#include "topo_graph.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_constants.h"
#include "topo_paths.h"

topo_system_t *topo_graph_new(const char *source) {
  topo_system_t *sys = calloc(1, sizeof(*sys));
  if (!sys) return NULL;
  sys->net = -1;
  sys->nvs = -1;
  snprintf(sys->source, sizeof(sys->source), "%s", source ? source : "");
  return sys;
}

void topo_system_free(topo_system_t *sys) {
  if (!sys) return;
  topo_paths_free(sys->paths);
  for (int i = 0; i < sys->nnodes; i++) {
    free(sys->nodes[i].links);
    free(sys->nodes[i].affinity);
  }
  free(sys->nodes);
  free(sys->gpus);
  free(sys->nics);
  free(sys->warn_text.data);
  free(sys);
}

int topo_graph_add_node(topo_system_t *sys, topo_node_type_t t, int parent) {
  if (sys->nnodes >= TOPO_MAX_NODES) {
    err_set(xcclInvalidArgument, LOG_TOPO,
            "%s: more than %d devices: not a machine this library can describe", sys->source,
            TOPO_MAX_NODES);
    return -1;
  }
  if (parent < -1 || parent >= sys->nnodes) {
    err_set(xcclInternalError, LOG_TOPO, "%s: node parent %d out of range", sys->source, parent);
    return -1;
  }
  if (sys->nnodes == sys->cap) {
    int cap = sys->cap ? sys->cap * 2 : 64;
    topo_node_t *n = realloc(sys->nodes, (size_t)cap * sizeof(*n));
    if (!n) {
      err_set(xcclSystemError, LOG_TOPO, "%s: out of memory for %d nodes", sys->source, cap);
      return -1;
    }
    sys->nodes = n;
    sys->cap = cap;
  }
  topo_node_t *n = &sys->nodes[sys->nnodes];
  memset(n, 0, sizeof(*n));
  n->type = t;
  n->parent = parent;
  n->numa = -1;
  n->busid = -1;
  n->pci_class = n->vendor = n->device = n->subvendor = n->subdevice = -1;
  n->package = n->family = n->model = -1;
  n->dev = n->sm = n->rank = n->gdr = -1;
  n->port = n->nic_dev = n->maxconn = n->nic_gdr = -1;
  n->index = -1;
  n->order = -1;
  return sys->nnodes++;
}

static xcclResult_t add_half(topo_system_t *sys, int a, int b, topo_link_type_t t, double bw,
                             int count) {
  topo_node_t *n = &sys->nodes[a];
  for (int i = 0; i < n->nlinks; i++) {
    if (n->links[i].peer == b && n->links[i].type == t) {
      n->links[i].bw += bw;
      n->links[i].count += count;
      return xcclSuccess;
    }
  }
  if (n->nlinks >= TOPO_MAX_LINKS_PER_NODE)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: a device has more than %d links",
                   sys->source, TOPO_MAX_LINKS_PER_NODE);
  if (n->nlinks == n->cap) {
    int cap = n->cap ? n->cap * 2 : 4;
    topo_link_t *l = realloc(n->links, (size_t)cap * sizeof(*l));
    if (!l) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory for links", sys->source);
    n->links = l;
    n->cap = cap;
  }
  n->links[n->nlinks++] = (topo_link_t){.type = t, .peer = b, .bw = bw, .count = count, .gid = -1};
  return xcclSuccess;
}

xcclResult_t topo_graph_add_link(topo_system_t *sys, int a, int b, topo_link_type_t t, double bw,
                                 int count) {
  if (a < 0 || b < 0 || a >= sys->nnodes || b >= sys->nnodes)
    return err_set(xcclInternalError, LOG_TOPO, "%s: link between nodes %d and %d out of range",
                   sys->source, a, b);
  if (a == b) {
    char la[96];
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: %s has a link to itself", sys->source,
                   topo_node_label(sys, a, la, sizeof(la)));
  }
  if (!(bw > 0) || bw > 1e6)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: link bandwidth %g GB/s is not in (0, 1e6]",
                   sys->source, bw);
  TRY(add_half(sys, a, b, t, bw, count));
  return add_half(sys, b, a, t, bw, count);
}

topo_link_t *topo_graph_find_link(topo_system_t *sys, int a, int b, topo_link_type_t t) {
  topo_node_t *n = &sys->nodes[a];
  for (int i = 0; i < n->nlinks; i++)
    if (n->links[i].peer == b && n->links[i].type == t) return &n->links[i];
  return NULL;
}

int topo_graph_find_busid(const topo_system_t *sys, int64_t busid) {
  if (busid < 0) return -1;
  for (int i = 0; i < sys->nnodes; i++) {
    const topo_node_t *n = &sys->nodes[i];
    if ((n->type == TOPO_PCI || n->type == TOPO_GPU || n->type == TOPO_NIC) && n->busid == busid)
      return i;
  }
  return -1;
}

int topo_graph_cpu_of(const topo_system_t *sys, int n) {
  for (int steps = 0; n >= 0 && steps <= sys->nnodes; steps++) {
    if (sys->nodes[n].type == TOPO_CPU) return n;
    n = sys->nodes[n].parent;
  }
  return -1;
}

int topo_graph_find_cpu(const topo_system_t *sys, int numa) {
  for (int i = 0; i < sys->nnodes; i++)
    if (sys->nodes[i].type == TOPO_CPU && sys->nodes[i].numa == numa) return i;
  return -1;
}

int64_t topo_busid_parse(const char *s) {
  if (!s) return -1;
  const char *colon1 = strchr(s, ':');
  if (!colon1) return -1;
  const char *colon2 = strchr(colon1 + 1, ':');
  const char *dot = strrchr(s, '.');
  int64_t dom = 0, bus, dev, fn;
  const char *busp = colon1 + 1;
  if (!colon2) { /* "bb:dd.f" without a domain */
    colon2 = colon1;
    busp = s;
  } else {
    size_t dl = (size_t)(colon1 - s);
    if (dl < 1 || dl > 8) return -1;
    for (size_t i = 0; i < dl; i++) {
      if (!isxdigit((unsigned char)s[i])) return -1;
      dom = dom * 16 + (isdigit((unsigned char)s[i]) ? s[i] - '0' : (tolower((unsigned char)s[i]) - 'a' + 10));
    }
  }
  if (!dot || dot < colon2) return -1;
  char tmp[8];
  size_t bl = (size_t)(colon2 - busp), vl = (size_t)(dot - colon2 - 1), fl = strlen(dot + 1);
  if (bl < 1 || bl > 2 || vl < 1 || vl > 2 || fl < 1 || fl > 2) return -1;
  for (const char *p = busp; p < dot + 1 + fl; p++)
    if (p != colon2 && p != dot && !isxdigit((unsigned char)*p)) return -1;
  memcpy(tmp, busp, bl);
  tmp[bl] = 0;
  bus = strtol(tmp, NULL, 16);
  memcpy(tmp, colon2 + 1, vl);
  tmp[vl] = 0;
  dev = strtol(tmp, NULL, 16);
  fn = strtol(dot + 1, NULL, 16);
  return (dom << 24) | (bus << 16) | (dev << 8) | fn;
}

char *topo_busid_format(int64_t busid, char *buf, size_t len) {
  if (busid < 0) {
    snprintf(buf, len, "%s", "");
    return buf;
  }
  snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)(busid >> 24), (unsigned)((busid >> 16) & 0xff),
           (unsigned)((busid >> 8) & 0xff), (unsigned)(busid & 0xff));
  return buf;
}

int topo_class_is_gpu(int c) {
  if (c < 0) return 0;
  int base = (c >> 16) & 0xff;
  return base == 0x03 || (c >> 8) == 0x1200; /* display, processing accelerator */
}

int topo_class_is_nic(int c) {
  if (c < 0) return 0;
  return ((c >> 16) & 0xff) == 0x02 || (c >> 8) == 0x0c06; /* network, InfiniBand (old class) */
}

const char *topo_node_type_name(topo_node_type_t t) {
  static const char *names[] = {"CPU", "PCI", "GPU", "NIC", "NVS", "NET"};
  return t < TOPO_NODE_TYPES ? names[t] : "?";
}

const char *topo_link_type_name(topo_link_type_t t) {
  static const char *names[] = {"NVL", "PCI", "SOC", "SYS", "NET"};
  return t < TOPO_LINK_TYPES ? names[t] : "?";
}

char *topo_node_label(const topo_system_t *sys, int i, char *buf, size_t len) {
  const topo_node_t *n = &sys->nodes[i];
  char b[32];
  switch (n->type) {
  case TOPO_CPU: snprintf(buf, len, "CPU %d", n->numa); break;
  case TOPO_GPU:
    snprintf(buf, len, "GPU %d (%s)", n->index, topo_busid_format(n->busid, b, sizeof(b)));
    break;
  case TOPO_NIC: snprintf(buf, len, "NIC %s", n->name); break;
  case TOPO_PCI: snprintf(buf, len, "PCI %s", topo_busid_format(n->busid, b, sizeof(b))); break;
  case TOPO_NVS: snprintf(buf, len, "NVSwitch"); break;
  default: snprintf(buf, len, "network"); break;
  }
  return buf;
}

/* GPUs and NICs by order when set (ordered ones first), then by bus id
 * (unknown last), NICs then by name, then as added. */
static int cmp_dev(const void *pa, const void *pb, void *ctx) {
  const topo_system_t *sort_sys = ctx;
  int a = *(const int *)pa, b = *(const int *)pb;
  const topo_node_t *x = &sort_sys->nodes[a], *y = &sort_sys->nodes[b];
  unsigned ox = (unsigned)x->order, oy = (unsigned)y->order; /* -1 sorts last */
  if (ox != oy) return ox < oy ? -1 : 1;
  uint64_t bx = (uint64_t)x->busid, by = (uint64_t)y->busid; /* -1 sorts last */
  if (bx != by) return bx < by ? -1 : 1;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return (a > b) - (a < b);
}

static xcclResult_t number_devices(topo_system_t *sys, topo_node_type_t t, int **list_p, int *n_p) {
  int n = 0;
  for (int i = 0; i < sys->nnodes; i++) n += sys->nodes[i].type == t;
  int *list = malloc((size_t)(n ? n : 1) * sizeof(int));
  if (!list) return err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", sys->source);
  n = 0;
  for (int i = 0; i < sys->nnodes; i++)
    if (sys->nodes[i].type == t) list[n++] = i;
  qsort_r(list, (size_t)n, sizeof(int), cmp_dev, sys);
  for (int i = 0; i < n; i++) sys->nodes[list[i]].index = i;
  *list_p = list;
  *n_p = n;
  return xcclSuccess;
}

static double cpu_sys_bw(const topo_node_t *c) {
  return topo_sys_bw(c->arch, c->cpu_vendor, c->family, c->model);
}

xcclResult_t topo_graph_finalize(topo_system_t *sys) {
  /* The tree must reach a CPU from every PCI, GPU and NIC node. */
  for (int i = 0; i < sys->nnodes; i++) {
    topo_node_t *n = &sys->nodes[i];
    if (n->type == TOPO_CPU) {
      n->parent = -1;
      continue;
    }
    if (n->type == TOPO_NVS || n->type == TOPO_NET) continue;
    int cpu = topo_graph_cpu_of(sys, i);
    if (cpu < 0) {
      char l[96];
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s: %s is not under any CPU / NUMA domain",
                     sys->source, topo_node_label(sys, i, l, sizeof(l)));
    }
    n->numa = sys->nodes[cpu].numa;
  }
  for (int i = 0; i < sys->nnodes; i++) sys->ncpus += sys->nodes[i].type == TOPO_CPU;
  if (sys->ncpus == 0)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: no CPU / NUMA domain described", sys->source);

  TRY(number_devices(sys, TOPO_GPU, &sys->gpus, &sys->ngpus));
  TRY(number_devices(sys, TOPO_NIC, &sys->nics, &sys->nnics));
  if (sys->ngpus > TOPO_MAX_DEVICES || sys->nnics > TOPO_MAX_DEVICES)
    return err_set(xcclInvalidArgument, LOG_TOPO,
                   "%s: %d GPUs and %d NICs: more than %d of either is not a machine this "
                   "library can describe", sys->source, sys->ngpus, sys->nnics, TOPO_MAX_DEVICES);

  /* NUMA domains: SOC inside one socket, SYS between sockets. */
  for (int a = 0; a < sys->nnodes; a++) {
    if (sys->nodes[a].type != TOPO_CPU) continue;
    for (int b = a + 1; b < sys->nnodes; b++) {
      if (sys->nodes[b].type != TOPO_CPU) continue;
      const topo_node_t *x = &sys->nodes[a], *y = &sys->nodes[b];
      double bw = cpu_sys_bw(x) < cpu_sys_bw(y) ? cpu_sys_bw(x) : cpu_sys_bw(y);
      int same = x->package >= 0 && x->package == y->package;
      TRY(topo_graph_add_link(sys, a, b, same ? TOPO_LINK_SOC : TOPO_LINK_SYS, same ? 2 * bw : bw, 1));
    }
  }
  if (sys->nnics > 0) {
    int net = topo_graph_add_node(sys, TOPO_NET, -1);
    if (net < 0) return xcclInvalidArgument;
    sys->net = net;
    for (int i = 0; i < sys->nnics; i++) {
      const topo_node_t *nic = &sys->nodes[sys->nics[i]];
      TRY(topo_graph_add_link(sys, sys->nics[i], net, TOPO_LINK_NET,
                              topo_nic_bw(nic->speed_mbps, nic->rdma), 1));
    }
  }
  int gid = 0;
  for (int i = 0; i < sys->nnodes; i++)
    for (int l = 0; l < sys->nodes[i].nlinks; l++) sys->nodes[i].links[l].gid = gid++;
  sys->nlinks_total = gid;
  return topo_paths_compute(sys);
}

xcclResult_t topo_graph_remove_node(topo_system_t *sys, int n) {
  if (n < 0 || n >= sys->nnodes || sys->gpus || sys->nics)
    return err_set(xcclInternalError, LOG_TOPO, "%s: cannot remove node %d", sys->source, n);
  for (int i = 0; i < sys->nnodes; i++)
    if (sys->nodes[i].parent == n)
      return err_set(xcclInternalError, LOG_TOPO, "%s: node %d to remove has children", sys->source, n);
  free(sys->nodes[n].links);
  free(sys->nodes[n].affinity);
  memmove(&sys->nodes[n], &sys->nodes[n + 1], (size_t)(sys->nnodes - n - 1) * sizeof(sys->nodes[0]));
  sys->nnodes--;
  for (int i = 0; i < sys->nnodes; i++) {
    topo_node_t *x = &sys->nodes[i];
    if (x->parent > n) x->parent--;
    int k = 0;
    for (int l = 0; l < x->nlinks; l++) {
      if (x->links[l].peer == n) continue;
      x->links[k] = x->links[l];
      if (x->links[k].peer > n) x->links[k].peer--;
      k++;
    }
    x->nlinks = k;
  }
  if (sys->nvs == n) sys->nvs = -1;
  else if (sys->nvs > n) sys->nvs--;
  if (sys->net == n) sys->net = -1;
  else if (sys->net > n) sys->net--;
  return xcclSuccess;
}

/* ---- warnings ---- */

void topo_graph_warn(topo_system_t *sys, const char *fmt, ...) {
  if (sys->nwarnings++ >= TOPO_WARN_KEPT) return;
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  for (char *p = line; *p; p++)
    if (*p == '\n') *p = ' ';
  topo_buf_printf(&sys->warn_text, "%s\n", line);
}

void topo_graph_log_warnings(const topo_system_t *sys, int quiet) {
  const char *p = sys->warn_text.data;
  int shown = 0;
  while (p && *p && shown < TOPO_WARN_KEPT) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    if (quiet) INFO(TOPO, "%.*s (as before)", len, p);
    else WARN(TOPO, "%.*s", len, p);
    shown++;
    p += len + (nl != NULL);
  }
  if (sys->nwarnings > shown) {
    if (quiet) INFO(TOPO, "%s: and %d more warnings like these", sys->source, sys->nwarnings - shown);
    else WARN(TOPO, "%s: and %d more warnings like these", sys->source, sys->nwarnings - shown);
  }
}

/* ---- text buffers ---- */

static void buf_reserve(topo_buf_t *b, size_t more) {
  if (b->oom) return;
  if (b->len + more + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->oom = 1;
    return;
  }
  b->data = d;
  b->cap = cap;
}

void topo_buf_printf(topo_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  buf_reserve(b, (size_t)n);
  if (b->oom) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void topo_buf_xml_escaped(topo_buf_t *b, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '&') topo_buf_printf(b, "&amp;");
    else if (c == '<') topo_buf_printf(b, "&lt;");
    else if (c == '>') topo_buf_printf(b, "&gt;");
    else if (c == '"') topo_buf_printf(b, "&quot;");
    else if (c == '\'') topo_buf_printf(b, "&apos;");
    else if (c >= 0x20 || c == '\t') topo_buf_printf(b, "%c", c);
  }
}

void topo_buf_json_escaped(topo_buf_t *b, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') topo_buf_printf(b, "\\%c", c);
    else if (c < 0x20) topo_buf_printf(b, "\\u%04x", c);
    else topo_buf_printf(b, "%c", c);
  }
}
