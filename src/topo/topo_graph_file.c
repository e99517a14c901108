/*
 * topo_graph_file.c — channels as NCCL's graph XML, both ways (topo.h).
 *
 * Written: <graphs version="1"> holding one ring graph (id 0, pattern 4),
 * its attributes as NCCL writes them (bandwidths with %g, path kinds as
 * LOC/NVL/NVB/PIX/PXB/PHB/SYS, devs in hex), one <channel> per channel:
 * <net dev> it enters by, its GPUs in ring order, <net dev> it leaves by.
 * Read: the same, or a file NCCL wrote (several graphs: the ring one is
 * taken), or one a cloud ships. What has a sensible reading is read with an
 * INFO line (a GPU of the file that the caller does not drive, a second NIC
 * that differs from the first, an nchannels that does not match the
 * channels); what does not fit this topology is refused with the file, the
 * line and the reason.
 */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlsave.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_graph.h"
#include "topo_paths.h"

#define RING_PATTERN 4 /* NCCL_TOPO_PATTERN_RING */

/* ---- devs: the topology's own numbers where it has them all ---- */

/* 1 when every GPU (nic = 0) or NIC (nic = 1) has a dev of its own, distinct. */
static int devs_known(const topo_system_t *sys, int nic) {
  int n = nic ? sys->nnics : sys->ngpus;
  for (int i = 0; i < n; i++) {
    const topo_node_t *x = &sys->nodes[nic ? sys->nics[i] : sys->gpus[i]];
    int d = nic ? x->nic_dev : x->dev;
    if (d < 0) return 0;
    for (int j = 0; j < i; j++) {
      const topo_node_t *y = &sys->nodes[nic ? sys->nics[j] : sys->gpus[j]];
      if ((nic ? y->nic_dev : y->dev) == d) return 0;
    }
  }
  return 1;
}

/* known: devs_known(sys, nic), asked once by the caller. */
static long dev_of(const topo_system_t *sys, int known, int nic, int i) {
  if (!known) return i;
  const topo_node_t *x = &sys->nodes[nic ? sys->nics[i] : sys->gpus[i]];
  return nic ? x->nic_dev : x->dev;
}

static int index_of_dev(const topo_system_t *sys, int known, int nic, long dev) {
  int n = nic ? sys->nnics : sys->ngpus;
  for (int i = 0; i < n; i++)
    if (dev_of(sys, known, nic, i) == dev) return i;
  return -1;
}

/* xccl's path kind as NCCL names it (NCCL has no name for "the same GPU"
 * other than LOC, and none past SYS inside a node). */
static const char *nccl_kind(topo_path_type_t t) {
  static const char *names[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS"};
  return t >= TOPO_PATH_SAME && t <= TOPO_PATH_SYS ? names[t] : "SYS";
}

/* ---- writing ---- */

static void prop_fmt(xmlNodePtr n, const char *name, const char *fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), fmt, v);
  xmlNewProp(n, (const xmlChar *)name, (const xmlChar *)buf);
}

static void add_dev(xmlNodePtr parent, const char *elem, long dev) {
  char buf[32];
  xmlNodePtr n = xmlNewChild(parent, NULL, (const xmlChar *)elem, NULL);
  snprintf(buf, sizeof(buf), "%#lx", dev);
  if (n) xmlNewProp(n, (const xmlChar *)"dev", (const xmlChar *)buf);
}

/* The graph element's attributes, from the channels. */
static void graph_attrs(xmlNodePtr g, const topo_system_t *sys, const topo_channels_t *chs) {
  double intra = chs->nchannels ? chs->ch[0].bw : 0, inter = -1;
  topo_path_type_t worst = TOPO_PATH_SAME, worst_nic = TOPO_PATH_SAME;
  int same = 1;
  for (int c = 0; c < chs->nchannels; c++) {
    const topo_channel_t *ch = &chs->ch[c];
    if (ch->bw < intra) intra = ch->bw;
    if (ch->worst > worst) worst = ch->worst;
    same &= memcmp(ch->gpus, chs->ch[0].gpus, sizeof(int) * (size_t)ch->ngpus) == 0 && ch->ngpus == chs->ch[0].ngpus;
    if (ch->nic < 0) continue;
    double b = ch->nic_bw < ch->bw || ch->bw <= 0 ? ch->nic_bw : ch->bw;
    if (inter < 0 || b < inter) inter = b;
    topo_path_type_t in = topo_path_ng(sys, ch->nic, ch->gpus[0])->type,
                     out = topo_path_gn(sys, ch->gpus[ch->ngpus - 1], ch->nic)->type;
    if (in > worst_nic) worst_nic = in;
    if (out > worst_nic) worst_nic = out;
  }
  if (inter < 0) inter = intra;
  prop_fmt(g, "id", "%.0f", 0);
  prop_fmt(g, "pattern", "%.0f", RING_PATTERN);
  prop_fmt(g, "crossnic", "%.0f", 0);
  prop_fmt(g, "nchannels", "%.0f", chs->nchannels);
  prop_fmt(g, "speedintra", "%g", intra);
  prop_fmt(g, "speedinter", "%g", inter);
  prop_fmt(g, "latencyinter", "%g", 0);
  xmlNewProp(g, (const xmlChar *)"typeintra", (const xmlChar *)nccl_kind(worst));
  xmlNewProp(g, (const xmlChar *)"typeinter", (const xmlChar *)nccl_kind(worst_nic));
  prop_fmt(g, "samechannels", "%.0f", same);
}

xcclResult_t topo_render_nccl_graph(const topo_system_t *sys, const topo_channels_t *chs, topo_buf_t *b);
xcclResult_t topo_render_nccl_graph(const topo_system_t *sys, const topo_channels_t *chs, topo_buf_t *b) {
  if (!chs) return err_set(xcclInvalidArgument, LOG_TOPO, "the nccl-graph format needs channels");
  xcclResult_t res = xcclSuccess;
  xmlDocPtr doc = xmlNewDoc((const xmlChar *)"1.0");
  xmlNodePtr root = doc ? xmlNewNode(NULL, (const xmlChar *)"graphs") : NULL;
  xmlBufferPtr buf = xmlBufferCreate();
  if (!doc || !root || !buf) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory writing the channels as an NCCL graph");
    goto out;
  }
  xmlDocSetRootElement(doc, root);
  xmlNewProp(root, (const xmlChar *)"version", (const xmlChar *)"1");
  xmlNodePtr g = xmlNewChild(root, NULL, (const xmlChar *)"graph", NULL);
  if (!g) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory writing the channels as an NCCL graph");
    goto out;
  }
  graph_attrs(g, sys, chs);
  int gk = devs_known(sys, 0), nk = devs_known(sys, 1);
  for (int c = 0; c < chs->nchannels; c++) {
    const topo_channel_t *ch = &chs->ch[c];
    xmlNodePtr n = xmlNewChild(g, NULL, (const xmlChar *)"channel", NULL);
    if (!n) continue;
    if (ch->nic >= 0) add_dev(n, "net", dev_of(sys, nk, 1, ch->nic));
    for (int i = 0; i < ch->ngpus; i++) add_dev(n, "gpu", dev_of(sys, gk, 0, ch->gpus[i]));
    if (ch->nic >= 0) add_dev(n, "net", dev_of(sys, nk, 1, ch->nic));
  }
  xmlSaveCtxtPtr save = xmlSaveToBuffer(buf, "UTF-8", XML_SAVE_FORMAT | XML_SAVE_NO_DECL);
  if (!save || xmlSaveDoc(save, doc) < 0) {
    if (save) xmlSaveClose(save);
    res = err_set(xcclSystemError, LOG_TOPO, "libxml2 could not write the NCCL graph");
    goto out;
  }
  xmlSaveClose(save);
  topo_buf_printf(b, "%.*s", (int)xmlBufferLength(buf), (const char *)xmlBufferContent(buf));
out:
  if (buf) xmlBufferFree(buf);
  if (doc) xmlFreeDoc(doc);
  return res;
}

/* ---- reading ---- */

typedef struct {
  const topo_system_t *sys;
  const char *name;
  int want[TOPO_SEARCH_MAX_GPUS], nwant; /* GPU indices the caller drives */
  int dropped;                           /* said once: GPUs of the file not driven */
  int gpu_devs, nic_devs;                /* devs_known() of GPUs, of NICs */
} graph_ctx_t;

static int is_elem(const xmlNode *n, const char *name) {
  return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static int line_of(const xmlNode *n) { return (int)xmlGetLineNo((xmlNode *)n); }

/* Attribute as text into buf; NULL when absent. */
static const char *attr(const xmlNode *n, const char *name, char *buf, size_t len) {
  xmlChar *v = xmlGetProp((xmlNode *)n, (const xmlChar *)name);
  if (!v) return NULL;
  snprintf(buf, len, "%s", (const char *)v);
  xmlFree(v);
  return buf;
}

/* A dev, in hex as NCCL reads it ("0x1a" or "1a"). */
static xcclResult_t attr_dev(const graph_ctx_t *c, const xmlNode *n, long *dev_p) {
  char buf[64];
  if (!attr(n, "dev", buf, sizeof(buf)))
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: <%s> has no dev", c->name, line_of(n), (const char *)n->name);
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 16);
  while (*end == ' ' || *end == '\t') end++;
  if (end == buf || *end || errno || v < 0 || v > 1 << 20)
    return err_set(xcclInvalidArgument, LOG_TOPO,
                   "%s:%d: <%s dev=\"%s\">: not a device number (hex, as NCCL writes it)", c->name, line_of(n),
                   (const char *)n->name, buf);
  *dev_p = v;
  return xcclSuccess;
}

/* The ring edges' bottleneck and worst kind, the NIC paths' bottleneck. */
static void channel_paths(const topo_system_t *sys, topo_channel_t *ch, double *bw_p) {
  double bw = 0;
  ch->worst = TOPO_PATH_SAME;
  for (int i = 0; ch->ngpus > 1 && i < ch->ngpus; i++) {
    const topo_path_t *p = topo_path_gg(sys, ch->gpus[i], ch->gpus[(i + 1) % ch->ngpus]);
    if (p->type > ch->worst) ch->worst = p->type;
    if (i == 0 || p->bw < bw) bw = p->bw;
  }
  ch->nic_bw = 0;
  if (ch->nic >= 0) {
    double in = topo_path_ng(sys, ch->nic, ch->gpus[0])->bw,
           out = topo_path_gn(sys, ch->gpus[ch->ngpus - 1], ch->nic)->bw;
    ch->nic_bw = in < out ? in : out;
  }
  *bw_p = bw;
}

static xcclResult_t read_channel(graph_ctx_t *c, const xmlNode *x, int idx, double speed, topo_channel_t *ch) {
  const topo_system_t *sys = c->sys;
  int order[TOPO_MAX_DEVICES], n = 0, nets = 0, last_net = -1;
  memset(ch, 0, sizeof(*ch));
  ch->nic = -1;
  for (const xmlNode *k = x->children; k; k = k->next) {
    long dev;
    if (is_elem(k, "gpu")) {
      TRY(attr_dev(c, k, &dev));
      int g = index_of_dev(sys, c->gpu_devs, 0, dev);
      if (g < 0)
        return err_set(xcclInvalidArgument, LOG_TOPO,
                       "%s:%d: channel %d: GPU dev %#lx is not in this topology (%d GPUs%s)", c->name, line_of(k), idx,
                       dev, sys->ngpus, c->gpu_devs ? ", by their dev" : "");
      for (int i = 0; i < n; i++)
        if (order[i] == g)
          return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: channel %d lists GPU dev %#lx twice", c->name,
                         line_of(k), idx, dev);
      if (n < TOPO_MAX_DEVICES) order[n++] = g;
    } else if (is_elem(k, "net")) {
      TRY(attr_dev(c, k, &dev));
      int nic = index_of_dev(sys, c->nic_devs, 1, dev);
      if (nic < 0)
        return err_set(xcclInvalidArgument, LOG_TOPO,
                       "%s:%d: channel %d: NIC dev %#lx is not in this topology (%d NICs)", c->name, line_of(k), idx,
                       dev, sys->nnics);
      if (nets++ == 0) ch->nic = nic;
      last_net = nic;
    } else if (k->type == XML_ELEMENT_NODE) {
      INFO(TOPO, "%s:%d: <%s> in a <channel> is ignored", c->name, line_of(k), (const char *)k->name);
    }
  }
  if (n == 0) return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: channel %d has no <gpu>", c->name, line_of(x), idx);
  if (nets > 1 && last_net != ch->nic)
    INFO(TOPO, "%s:%d: channel %d leaves by another NIC than it enters by; xccl uses the first, %s", c->name,
         line_of(x), idx, topo_nic_name(sys, ch->nic));
  for (int i = 0; i < n; i++) {
    int driven = 0;
    for (int w = 0; w < c->nwant && !driven; w++) driven = c->want[w] == order[i];
    if (driven)
      ch->gpus[ch->ngpus++] = order[i];
    else if (!c->dropped++)
      INFO(TOPO, "%s:%d: GPU %d is in the graph but not driven here: left out of the rings", c->name, line_of(x),
           order[i]);
  }
  for (int w = 0; w < c->nwant; w++) {
    int in = 0;
    for (int i = 0; i < ch->ngpus && !in; i++) in = ch->gpus[i] == c->want[w];
    if (!in)
      return err_set(xcclInvalidArgument, LOG_TOPO,
                     "%s:%d: channel %d does not hold GPU %d (dev %#lx), which is driven here", c->name, line_of(x),
                     idx, c->want[w], dev_of(sys, c->gpu_devs, 0, c->want[w]));
  }
  double bw;
  channel_paths(sys, ch, &bw);
  ch->bw = ch->ngpus > 1 ? (speed > 0 ? speed : bw) : 0;
  return xcclSuccess;
}

/* The ring graph: the first of pattern 4, else the one of id 0. */
static const xmlNode *ring_graph(const xmlNode *root) {
  const xmlNode *id0 = NULL;
  char buf[32];
  for (const xmlNode *k = root->children; k; k = k->next) {
    if (!is_elem(k, "graph")) continue;
    if (attr(k, "pattern", buf, sizeof(buf)) && atoi(buf) == RING_PATTERN) return k;
    if (!id0 && attr(k, "id", buf, sizeof(buf)) && atoi(buf) == 0) id0 = k;
  }
  return id0;
}

static xcclResult_t read_graph(graph_ctx_t *c, const xmlNode *g, topo_channels_t *out) {
  char buf[64];
  double speed = 0;
  if (attr(g, "speedintra", buf, sizeof(buf))) {
    char *end;
    speed = strtod(buf, &end);
    if (end == buf || *end || !(speed >= 0 && speed < 1e7))
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: speedintra=\"%s\" is not a bandwidth in GB/s", c->name,
                     line_of(g), buf);
  }
  int n = 0;
  for (const xmlNode *k = g->children; k; k = k->next) {
    if (!is_elem(k, "channel")) continue;
    if (n == TOPO_MAX_CHANNELS) {
      INFO(TOPO, "%s:%d: more than %d channels: the rest are ignored", c->name, line_of(k), TOPO_MAX_CHANNELS);
      break;
    }
    TRY(read_channel(c, k, n, speed, &out->ch[n]));
    n++;
  }
  if (n == 0)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: the ring graph has no <channel>", c->name, line_of(g));
  if (attr(g, "nchannels", buf, sizeof(buf)) && atoi(buf) != n && n < TOPO_MAX_CHANNELS)
    INFO(TOPO, "%s:%d: nchannels=\"%s\" but %d <channel> elements: the channels are used", c->name, line_of(g), buf, n);
  out->nchannels = n;
  return xcclSuccess;
}

static void silent(void *ctx, xmlErrorPtr e) { (void)ctx, (void)e; }

/* The first error libxml2 meets: later ones follow from it. */
typedef struct {
  int set, line;
  char msg[200];
} first_error_t;

static void first_error(void *ctx, xmlErrorPtr e) {
  first_error_t *f = ctx;
  if (f->set || !e || e->level < XML_ERR_ERROR) return;
  f->set = 1;
  f->line = e->line;
  snprintf(f->msg, sizeof(f->msg), "%s", e->message ? e->message : "parse error");
  char *nl = strrchr(f->msg, '\n');
  if (nl && nl[1] == 0) *nl = 0;
}

xcclResult_t topo_graph_file_parse(const topo_system_t *sys, const char *data, size_t len, const char *name,
                                   const int *gpus, int ngpus, topo_channels_t *out) {
  if (!sys || !data || !name || !out)
    return err_set(xcclInvalidArgument, LOG_TOPO, "topo_graph_file_parse: NULL argument");
  graph_ctx_t c = {.sys = sys, .name = name, .gpu_devs = devs_known(sys, 0), .nic_devs = devs_known(sys, 1)};
  if (!gpus) ngpus = sys->ngpus;
  if (ngpus < 0 || ngpus > TOPO_SEARCH_MAX_GPUS)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: %d GPUs: 0 to %d are supported", name, ngpus,
                   TOPO_SEARCH_MAX_GPUS);
  for (int i = 0; i < ngpus; i++) {
    c.want[i] = gpus ? gpus[i] : i;
    if (c.want[i] < 0 || c.want[i] >= sys->ngpus)
      return err_set(xcclInvalidArgument, LOG_TOPO, "%s: GPU %d does not exist (the node has %d)", name, c.want[i],
                     sys->ngpus);
  }
  c.nwant = ngpus;
  if (ngpus == 0) {
    memset(out, 0, sizeof(*out));
    return xcclSuccess;
  }
  xmlInitParser();
  first_error_t fe = {0};
  xmlSetStructuredErrorFunc(&fe, first_error);
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) {
    xmlSetStructuredErrorFunc(NULL, silent);
    return err_set(xcclSystemError, LOG_TOPO, "%s: cannot create an XML parser", name);
  }
  if (len > INT32_MAX) len = 0;
  xmlDocPtr doc = xmlCtxtReadMemory(ctxt, data, (int)len, name, NULL, XML_PARSE_NONET);
  xmlSetStructuredErrorFunc(NULL, silent);
  xcclResult_t res = xcclSuccess;
  topo_channels_t *chs = NULL;
  if (!doc) {
    if (!fe.set) { /* the handler did not see it: the parser's own record */
      xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
      first_error(&fe, e);
      if (!fe.set) snprintf(fe.msg, sizeof(fe.msg), "parse error");
    }
    res = err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: not well-formed XML: %s", name, fe.line, fe.msg);
    goto out;
  }
  const xmlNode *root = xmlDocGetRootElement(doc);
  if (!root || strcmp((const char *)root->name, "graphs") != 0) {
    res = err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: root element is <%s>, not NCCL's <graphs>", name,
                  root ? line_of(root) : 1, root ? (const char *)root->name : "nothing");
    goto out;
  }
  char ver[32];
  if (attr(root, "version", ver, sizeof(ver)) && strcmp(ver, "1") != 0)
    INFO(TOPO, "%s:%d: <graphs version=\"%s\">, read as version 1", name, line_of(root), ver);
  const xmlNode *g = ring_graph(root);
  if (!g) {
    res = err_set(xcclInvalidArgument, LOG_TOPO, "%s:%d: no ring graph (a <graph> with pattern=\"4\", or id=\"0\")",
                  name, line_of(root));
    goto out;
  }
  chs = calloc(1, sizeof(*chs));
  if (!chs) {
    res = err_set(xcclSystemError, LOG_TOPO, "%s: out of memory", name);
    goto out;
  }
  res = read_graph(&c, g, chs);
  if (res == xcclSuccess) *out = *chs;
out:
  free(chs);
  if (doc) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  return res;
}

xcclResult_t topo_graph_file_read(const topo_system_t *sys, const char *path, const int *gpus, int ngpus,
                                  topo_channels_t *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return err_set(xcclSystemError, LOG_TOPO, "cannot open graph file %s: %s", path, strerror(errno));
  char *data = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      if (cap >= TOPO_MAX_FILE_BYTES) {
        fclose(f);
        free(data);
        return err_set(xcclInvalidArgument, LOG_TOPO, "graph file %s is larger than %u bytes", path,
                       TOPO_MAX_FILE_BYTES);
      }
      cap = cap ? 2 * cap : 65536;
      char *d = realloc(data, cap);
      if (!d) {
        fclose(f);
        free(data);
        return err_set(xcclSystemError, LOG_TOPO, "out of memory reading %s", path);
      }
      data = d;
    }
    size_t got = fread(data + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(data);
    return err_set(xcclSystemError, LOG_TOPO, "cannot read graph file %s", path);
  }
  xcclResult_t res = topo_graph_file_parse(sys, data, len, path, gpus, ngpus, out);
  free(data);
  return res;
}
