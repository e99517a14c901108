/*
 * topo_graph.h — the node graph every part of src/topo shares (internal).
 *
 * A topo_system_t is an array of nodes (CPU = one NUMA domain, PCI switch or
 * bridge, GPU, NIC, NVSwitch fabric, the network) and, on each node, its
 * outgoing links. Every link is added as a pair (a->b and b->a, same type and
 * bandwidth), so paths can be walked either way. The PCI hierarchy is also a
 * tree (node.parent), which the XML dump and the text picture follow.
 *
 * Loaders add nodes and links with the functions below and call
 * topo_graph_finalize() once: it checks the graph, numbers GPUs (CUDA's
 * order where the live loader set it, else PCI bus id order) and NICs, adds the inter-socket and network links, and computes the
 * paths. Nothing here is thread-safe; a finished system is read-only.
 */
#ifndef XCCL_TOPO_GRAPH_H
#define XCCL_TOPO_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

#define TOPO_MAX_NODES 4096 /* more is refused as absurd for one machine */
#define TOPO_MAX_DEVICES 256 /* GPUs, and NICs, per machine */
#define TOPO_MAX_LINKS_PER_NODE 4096
#define TOPO_MAX_FILE_BYTES (64u << 20)
#define TOPO_MAX_EXCLUDED 64 /* virtual interfaces named in the list (all are counted) */

typedef enum { TOPO_CPU, TOPO_PCI, TOPO_GPU, TOPO_NIC, TOPO_NVS, TOPO_NET, TOPO_NODE_TYPES } topo_node_type_t;
/* SOC joins two NUMA domains of one socket (on-die fabric), SYS two sockets. */
typedef enum {
  TOPO_LINK_NVL,
  TOPO_LINK_PCI,
  TOPO_LINK_SOC,
  TOPO_LINK_SYS,
  TOPO_LINK_NET,
  TOPO_LINK_TYPES
} topo_link_type_t;

typedef struct {
  topo_link_type_t type;
  int peer;    /* node index */
  double bw;   /* GB/s, one direction */
  int count;   /* NVLink: number of links; otherwise 1 */
  int gid;     /* global id of this directed link, set by finalize */
} topo_link_t;

typedef struct {
  topo_node_type_t type;
  int parent; /* tree parent (a CPU or PCI node), -1 for CPU, NVS and NET nodes */
  int numa;   /* NUMA domain of the CPU node above it; CPU: its own id; -1 unknown */

  /* PCI attributes (PCI, GPU, NIC nodes that have a bus id). */
  int64_t busid; /* topo_busid_parse() value, -1 when none */
  int pci_class, vendor, device, subvendor, subdevice; /* -1 when unknown */
  double link_gts; /* PCIe transfer rate of its upstream link, GT/s; 0 unknown */
  int link_width;  /* lanes; 0 unknown */

  /* CPU: the NUMA domain. */
  int package;      /* socket, -1 unknown */
  char *affinity;   /* NCCL's hex words "0000ffff,ffffffff", heap, may be NULL */
  char arch[16], cpu_vendor[32];
  int family, model; /* -1 unknown */

  /* GPU */
  int dev, sm, rank, gdr; /* -1 unknown */
  int has_gpu_elem;       /* the source described the GPU itself, not only its PCI class */
  char gpu_vendor[16];    /* "nvidia", "amd" */
  char uuid[48];          /* NVML's "GPU-..." when the source gives it, else "" */
  int order;              /* GPUs: numbered by this first when >= 0 (CUDA's order), then by bus id; -1 */

  /* NIC: one network port (a PCI function may carry several). */
  char name[64];
  int port, nic_dev, maxconn, nic_gdr; /* -1 unknown */
  double speed_mbps;                   /* 0 unknown */
  double latency;
  uint64_t guid;
  int rdma;     /* verbs-capable (InfiniBand, RoCE, EFA, Slingshot...) */
  int nic_elem; /* the source had a <nic>/<net> element */

  /* NVS: the bus id of the first switch named, for the dump ("" when none) */
  int index; /* GPU or NIC index (bus id order), -1 for other nodes */

  topo_link_t *links;
  int nlinks, cap;
} topo_node_t;

struct topo_paths;

/* Growable text buffer used by the dumpers. */
typedef struct {
  char *data;
  size_t len, cap;
  int oom;
} topo_buf_t;

struct topo_system {
  topo_node_t *nodes;
  int nnodes, cap;
  int *gpus, ngpus; /* node index of GPU i */
  int *nics, nnics; /* node index of NIC i */
  int ncpus;
  int net;           /* node index of the network node, -1 when no NIC */
  int nvs;           /* node index of the NVSwitch fabric node, -1 when none */
  int nlinks_total;  /* directed links, after finalize */
  int nvlink_data;   /* 1 when the source said anything about NVLink */
  char source[320];  /* where the graph came from, for the log and the dump */
  struct topo_paths *paths;
  /* Network interfaces left out as virtual (topo_virtual.c): nexcluded
   * counts them all, the first TOPO_MAX_EXCLUDED are kept. */
  int nexcluded;
  struct topo_excluded_s {
    char name[64], why[64];
  } excluded[TOPO_MAX_EXCLUDED];
  /* What the loader read leniently (topo_graph_warn): the first
   * TOPO_WARN_KEPT sentences, one per line, and how many there were. */
  topo_buf_t warn_text;
  int nwarnings;
};

#define TOPO_WARN_KEPT 8 /* sentences kept, and logged, per load; the rest are counted */

/* Adds a node of type t (zeroed, every "unknown" field at -1); returns its
 * index or -1 after err_set when the graph is full or memory is out. */
int topo_graph_add_node(topo_system_t *sys, topo_node_type_t t, int parent);
/* Adds links a->b and b->a. Error (err_set) on a bad index, a self link or too
 * many links. An existing link of the same type between them gets the
 * bandwidth and count added instead (NVLinks named twice). */
xcclResult_t topo_graph_add_link(topo_system_t *sys, int a, int b, topo_link_type_t t, double bw,
                                 int count);
topo_system_t *topo_graph_new(const char *source);
/* Checks, numbers GPUs and NICs, adds SYS and NET links, computes paths. */
xcclResult_t topo_graph_finalize(topo_system_t *sys);
/* Removes node n, which must be a leaf of the tree (no node's parent), with
 * every link to it; the nodes after it move down one index (parents, link
 * peers and sys->nvs follow). Before finalize only. */
xcclResult_t topo_graph_remove_node(topo_system_t *sys, int n);

/* Records one warning about the source: a sentence naming the file and line
 * where there is one, and what was done instead of refusing ("...: ignored").
 * Kept in sys (the first TOPO_WARN_KEPT) and counted; nothing is logged. */
void topo_graph_warn(topo_system_t *sys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs the warnings recorded, at most TOPO_WARN_KEPT lines then "and N more":
 * at WARN, or at INFO when quiet (a file whose warnings were logged before). */
void topo_graph_log_warnings(const topo_system_t *sys, int quiet);
/* The link a->b of type t, or NULL. */
topo_link_t *topo_graph_find_link(topo_system_t *sys, int a, int b, topo_link_type_t t);
/* The node with this bus id among PCI, GPU and NIC nodes, or -1. */
int topo_graph_find_busid(const topo_system_t *sys, int64_t busid);
/* The CPU node above node n (n itself for a CPU), or -1. */
int topo_graph_cpu_of(const topo_system_t *sys, int n);
/* The CPU node of NUMA domain numa, or -1. */
int topo_graph_find_cpu(const topo_system_t *sys, int numa);

/* "0000:06:00.0" (the domain may have 1 to 8 hex digits) -> value, or -1. */
int64_t topo_busid_parse(const char *s);
/* value -> "0000:06:00.0"; returns buf. */
char *topo_busid_format(int64_t busid, char *buf, size_t len);

/* May channels use NIC n (index)? RDMA NICs, or any when there is none. */
int topo_nic_usable(const topo_system_t *sys, int n);
/* topo_search_channels (rails 0), or the search of topo_channels_choose_rails
 * for one host of a job that spans hosts (rails 1): topo.h says both. */
xcclResult_t topo_search_channels_for(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                      int rails, topo_channels_t *out);

/* PCI class helpers (class is the 24-bit "0x030200" value or 16-bit class
 * with subclass, as stored: 0xCCSSPP). */
int topo_class_is_gpu(int pci_class);
int topo_class_is_nic(int pci_class);

const char *topo_node_type_name(topo_node_type_t t);
const char *topo_link_type_name(topo_link_type_t t);
/* A short name for messages: "GPU 3 (0000:13:00.0)", "NIC mlx5_0", "CPU 1". */
char *topo_node_label(const topo_system_t *sys, int n, char *buf, size_t len);

void topo_buf_printf(topo_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s with &<>"' escaped for XML (and control bytes dropped). */
void topo_buf_xml_escaped(topo_buf_t *b, const char *s);
/* Appends s escaped for a JSON string, without the quotes (the dot labels). */
void topo_buf_json_escaped(topo_buf_t *b, const char *s);

struct json_t;
/* The topology as README.md's JSON object, keys in its order, chs (may be
 * NULL) as "channels"; the caller owns it. NULL when out of memory or when a
 * name is not UTF-8 (topo_dump.c). */
struct json_t *topo_json(const topo_system_t *sys, const topo_channels_t *chs);
/* Appends j, indented, and a newline to b and releases j; a NULL j, or one
 * that cannot be written, sets b->oom. */
void topo_buf_json(topo_buf_t *b, struct json_t *j);

#endif
