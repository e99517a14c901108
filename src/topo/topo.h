/*
 * topo.h — what xccl sees of the node, and the rings it chooses there.
 *
 * A topo_system_t is the node's graph: NUMA domains (CPU nodes), PCI switches,
 * GPUs, NICs, the NVSwitch fabric and the network, joined by links typed
 * NVLink, PCI, inter-socket (SYS) and network, each with a bandwidth in GB/s
 * (topo_constants.h says where every figure comes from). It is built from, in
 * order of trust: the file named by XCCL_TOPO_FILE (hwloc XML export 1.x, 2.x
 * or 3.0, or NCCL topology XML, full dump or partial hint file); else hwloc on
 * the live machine, completed with NVML (dlopen'ed; absent = no NVLink data,
 * said once at INFO) and NIC speeds from sysfs.
 *
 * From the graph: the best path between every pair of GPUs and every GPU and
 * NIC (widest first, then fewest hops), classified as topo_path_type_t, and
 * channels: rings over the GPUs, each with the NIC it enters and leaves by,
 * chosen to maximize channels x bottleneck bandwidth. Everything is
 * deterministic: the same input gives the same output, byte for byte.
 *
 * Errors: every function returning xcclResult_t records a sentence with
 * err_set (what, which file, which element) and leaves its outputs untouched
 * on failure. Nothing here keeps global state; a finished system is
 * read-only, so several threads may read one.
 */
#ifndef XCCL_TOPO_TOPO_H
#define XCCL_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xccl.h"

typedef struct topo_system topo_system_t;

/* How two devices reach each other, best first (like `nvidia-smi topo -m`). */
typedef enum {
  TOPO_PATH_SAME = 0, /* X:   the same device */
  TOPO_PATH_NVL,      /* NVL: NVLink, directly or through NVSwitches */
  TOPO_PATH_NVB,      /* NVB: NVLink through another GPU */
  TOPO_PATH_PIX,      /* PIX: through one PCI switch */
  TOPO_PATH_PXB,      /* PXB: through several PCI switches, not the host bridge */
  TOPO_PATH_PHB,      /* PHB: through the CPU's PCI host bridge */
  TOPO_PATH_SYS,      /* SYS: across the inter-socket link */
  TOPO_PATH_NET,      /* NET: through the network */
  TOPO_PATH_NONE      /* no path */
} topo_path_type_t;

const char *topo_path_name(topo_path_type_t t); /* "X", "NVL", ... "NET", "-" */

/* ---- Loading ----------------------------------------------------------- */

/* Files are read as vendors and users ship them: what has a sensible
 * reading (an NVLink to the GPU itself or to a bus id the file lacks, GPU dev
 * numbers with gaps, unknown attributes and elements, a dump of several
 * hosts, another <system> after the first) loads, with a warning naming the
 * file and line, logged at WARN once per load (at most TOPO_WARN_KEPT lines
 * of topo_graph.h, then "and N more"). What has none (not XML, no <system>
 * or <topology>, a value that does not parse, a GPU without a bus id) fails
 * with the file, the line and the rule. */

/* The communicator's entry point: XCCL_TOPO_FILE (or its alias
 * NCCL_TOPO_FILE) when set, else the live machine. A file that cannot be
 * read or parsed is an error ("XCCL_TOPO_FILE: " + the reason, xcclSystemError
 * when it cannot be opened or read, else xcclInvalidArgument), for the
 * caller to fail on. A source's warnings are logged at WARN the first time
 * this process loads it, at INFO after. On success *sys_p owns a new system
 * (free with topo_system_free); on failure *sys_p is left alone. */
xcclResult_t topo_system_load(topo_system_t **sys_p);
/* Reads a file; the kind is told by its root element (<topology> = hwloc,
 * <system> = NCCL). Its warnings are logged at WARN. */
xcclResult_t topo_system_load_file(const char *path, topo_system_t **sys_p);
/* The same from memory (len bytes, need not be NUL-terminated); name is for
 * messages. */
xcclResult_t topo_system_load_buffer(const char *data, size_t len, const char *name,
                                     topo_system_t **sys_p);
/* hwloc on this machine, plus NVML and sysfs. GPUs are numbered as CUDA
 * numbers them: NVIDIA GPUs in PCI bus id order (CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * and CUDA's default on machines of one GPU model), then CUDA_VISIBLE_DEVICES
 * applied (indices, or GPU-UUID prefixes where NVML gave hwloc the UUIDs):
 * the GPUs it lists, in its order, the others left out; an entry that names
 * no GPU ends the list, as in CUDA, with a warning. A machine where hwloc
 * sees no PCI device (VMs, containers without /sys/bus/pci) gives CPUs only,
 * with one warning; it fails only when hwloc cannot start. */
xcclResult_t topo_system_load_live(topo_system_t **sys_p);
void topo_system_free(topo_system_t *sys); /* NULL is fine */

/* ---- What the graph holds ---------------------------------------------- */

int topo_ngpus(const topo_system_t *sys);
int topo_nnics(const topo_system_t *sys);
int topo_nnuma(const topo_system_t *sys); /* CPU nodes = NUMA domains */
/* NUMA domain of NIC i (-1 unknown); GPUs are numbered in PCI bus id
 * order (live: CUDA's order, see topo_system_load_live), NICs in bus id then
 * name order. */
int topo_nic_numa(const topo_system_t *sys, int nic);
/* Bus id text of GPU i ("0000:13:00.0"), "" when unknown; buf >= 32 bytes. */
const char *topo_gpu_busid(const topo_system_t *sys, int gpu, char *buf, size_t len);
/* NIC i's name: verbs device (mlx5_0) where known, else interface or bus id. */
const char *topo_nic_name(const topo_system_t *sys, int nic);
/* The GPU with this bus id, or -1. */
int topo_gpu_by_busid(const topo_system_t *sys, const char *busid);

/* Paths. type/bw of the best path from GPU a to GPU b, or GPU g to NIC n
 * (TOPO_PATH_NONE and 0 when there is none; bw of SAME is 0). */
topo_path_type_t topo_gpu_gpu_path(const topo_system_t *sys, int a, int b, double *bw_p);
topo_path_type_t topo_gpu_nic_path(const topo_system_t *sys, int g, int n, double *bw_p);
/* The NIC nearest GPU g (best path type, then widest, then lowest index),
 * preferring RDMA-capable NICs; -1 when the node has no NIC. */
int topo_gpu_nearest_nic(const topo_system_t *sys, int g);
/* Number of inter-socket links on the path from GPU a to GPU b. */
int topo_gpu_gpu_sys_hops(const topo_system_t *sys, int a, int b);
/* Does the path from GPU a to GPU b use a PCI link? */
int topo_gpu_gpu_uses_pci(const topo_system_t *sys, int a, int b);

/* Network interfaces left out because they are virtual (ifname.h: bridges,
 * veth, docker, calico, overlays, tun/tap...): NICs of a file named so (an
 * NCCL <net name="veth...">, an hwloc OS device), and on the live machine
 * every interface sysfs lists that is virtual or shows no device (none of
 * them becomes a NIC, so no channel uses one). topo_nexcluded counts them;
 * name and reason ("a veth pair end") of the first 64, "" past them. */
int topo_nexcluded(const topo_system_t *sys);
const char *topo_excluded_name(const topo_system_t *sys, int i);
const char *topo_excluded_why(const topo_system_t *sys, int i);

/* ---- Channels ---------------------------------------------------------- */

#define TOPO_MAX_CHANNELS 32
#define TOPO_SEARCH_MAX_GPUS 64

typedef struct {
  int ngpus;
  int gpus[TOPO_SEARCH_MAX_GPUS]; /* ring order, GPU indices */
  int nic;                        /* NIC index it enters and leaves by, -1 none */
  double bw;                      /* GB/s, bottleneck of the ring inside the node */
  topo_path_type_t worst;         /* worst path type between ring neighbours */
  double nic_bw;                  /* GB/s, bottleneck of NIC->first and last->NIC; 0 no NIC */
} topo_channel_t;

typedef struct {
  int nchannels;
  topo_channel_t ch[TOPO_MAX_CHANNELS];
} topo_channels_t;

/* Searches channels over the GPUs listed (gpus[0..ngpus-1], GPU indices,
 * distinct; NULL = all GPUs), at most max_channels (1..TOPO_MAX_CHANNELS).
 * Maximizes channels x bottleneck bandwidth, each channel using what the
 * earlier ones left on every link; equal totals go to fewer, wider channels.
 * When there are more NICs than channels, each channel is split into k of a
 * k-th of its bandwidth, one per NIC, only where that raises what the
 * network gets (each NIC carries at most its speed, its path's bandwidth
 * and what its channels bring), with the smallest k that gives the most.
 * Channels take in turn the usable NICs nearest the GPUs searched (RDMA
 * NICs when there are any; of those, the ones with the best path kind to any
 * of the GPUs). Each channel starts at the GPU nearest its NIC and ends at
 * the nearest of the others. Bounded time (a step budget); deterministic. With no GPU the
 * result has 0 channels. */
xcclResult_t topo_search_channels(const topo_system_t *sys, const int *gpus, int ngpus,
                                  int max_channels, topo_channels_t *out);
/* One line for the INFO log: "2 channels x 150.0 GB/s (NVL): [0 1 2 3] nic
 * mlx5_0; [...]". Returns buf (truncated to len). */
char *topo_channels_describe(const topo_system_t *sys, const topo_channels_t *chs, char *buf,
                             size_t len);

/* ---- For communicator init --------------------------------------------- */

/* Order of the nlocal ranks of this node in a ring. gpu_of_rank[r] is the
 * GPU index rank r drives (or NULL / any -1: ranks without GPUs). With GPUs:
 * channel 0 of topo_channels_choose over those GPUs (XCCL_GRAPH_FILE's rings
 * when it is set; ranks sharing a GPU stay together). Without: ranks
 * grouped by NUMA domain (numa_of_rank[r], -1 unknown), domains of one
 * socket together, so the ring crosses each socket link as few times as
 * possible; ties by rank. order_out[i] = the rank at
 * position i. sys may be NULL (then NUMA ids are taken as they are).
 * desc (may be NULL) gets the INFO sentence describing the choice. */
xcclResult_t topo_local_ring_order(const topo_system_t *sys, int nlocal, const int *numa_of_rank,
                                   const int *gpu_of_rank, int *order_out, char *desc,
                                   size_t desclen);

/* NUMA domain (OS index) this process runs on: its CPU binding when bound
 * inside one domain, else where its thread last ran. -1 when unknown (an
 * error only when hwloc cannot start). */
xcclResult_t topo_process_numa(int *numa_p);

/* ---- Output ------------------------------------------------------------ */

typedef enum { TOPO_FMT_TEXT, TOPO_FMT_MATRIX, TOPO_FMT_XML, TOPO_FMT_JSON, TOPO_FMT_DOT, TOPO_FMT_NCCL_GRAPH } topo_format_t;

/* "text", "matrix", "xml", "json", "dot", "nccl-graph" -> 0 and *fmt_p; -1
 * otherwise. nccl-graph (the channels as NCCL's graph XML) needs chs. */
int topo_format_parse(const char *name, topo_format_t *fmt_p);
/* Writes sys in format fmt; chs (may be NULL) adds the channels to text,
 * json and dot. Returns xcclSystemError on a write error. */
xcclResult_t topo_write(const topo_system_t *sys, const topo_channels_t *chs, topo_format_t fmt,
                        FILE *out);
/* Renders into a new heap string (*text_p, caller frees). */
xcclResult_t topo_render(const topo_system_t *sys, const topo_channels_t *chs, topo_format_t fmt,
                         char **text_p);
/* For XCCL_TOPO_DUMP_FILE: NCCL's <system> XML, written to path. */
xcclResult_t topo_dump_file(const topo_system_t *sys, const char *path);

/* ---- Channel count and forced rings (issue 18) --------------------------
 *
 * How many channels: the search prefers fewer channels where more give no
 * more bandwidth (see topo_search_channels), never returns more than the
 * cap, XCCL_MAX_NCHANNELS (default TOPO_DEFAULT_MAX_CHANNELS), and a result
 * below XCCL_MIN_NCHANNELS (default 1) is raised to it by repeating its
 * channels, each copy with its share of the bandwidth (topo_channels_clamp).
 * XCCL_GRAPH_FILE (NCCL_GRAPH_FILE) replaces the search with the rings of an
 * NCCL graph file, clamped the same way. XCCL_NCHANNELS, the number of host
 * rings a communicator splits a collective over, is bounded by the same
 * two settings where they are set (topo_comm_nchannels). */

#define TOPO_DEFAULT_MAX_CHANNELS 16

/* XCCL_MIN_NCHANNELS and XCCL_MAX_NCHANNELS; a minimum above the maximum is
 * lowered to it (with a warning). Both are in 1..TOPO_MAX_CHANNELS. */
void topo_nchannels_limits(int *min_p, int *max_p);
/* XCCL_NCHANNELS, raised to XCCL_MIN_NCHANNELS and lowered to
 * XCCL_MAX_NCHANNELS when those are set: the communicator's channel count. */
int topo_comm_nchannels(void);
/* Keeps at most max channels (the first ones) and, when there are fewer than
 * min (and at least one), repeats them in order up to min; every copy of a
 * channel gets its bandwidth divided by the number of its copies, so the
 * total stays the same. */
void topo_channels_clamp(topo_channels_t *chs, int min, int max);
/* The channels the library uses over these GPUs (as topo_search_channels
 * takes them): XCCL_GRAPH_FILE's rings when it is set, else the search with
 * at most XCCL_MAX_NCHANNELS (or max_channels when > 0, for xccl-topo
 * --max-channels); then clamped to [XCCL_MIN_NCHANNELS, that maximum]. A
 * graph file that cannot be read or does not fit this node is an error that
 * names the file, the line and the reason; *out is then untouched. */
xcclResult_t topo_channels_choose(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                  topo_channels_t *out);
/* The same for the GPUs of one host of a job that spans hosts (issue 45):
 * XCCL_GRAPH_FILE's rings and the clamp are as above, and the search, where
 * there are more NICs than channels, the NICs sit beside the GPUs (the best
 * path kind any GPU has to one is PHB or nearer) and some GPUs are nearer
 * some of them than others (by path kind, bandwidth or hops: each NIC some
 * GPUs' own, as on a rail-optimised node), gives every one a channel: k *
 * NICs channels (k >= 1, within the maximum; channel c on NIC c mod NICs) of
 * the largest bandwidth that fits, the k that gives the network the most
 * winning, then the most bandwidth inside the node, then the fewest
 * channels. More NICs than the maximum, or no ring that fits one channel per
 * NIC, is said at INFO; the search is then topo_search_channels's. */
xcclResult_t topo_channels_choose_rails(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                        topo_channels_t *out);

/* NCCL graph files (what NCCL_GRAPH_DUMP_FILE writes, NCCL_GRAPH_FILE reads):
 * <graphs version="1"><graph id="0" pattern="4" ...><channel><net dev/>
 * <gpu dev/>...<net dev/></channel>...</graph></graphs>. A GPU's dev is its
 * dev attribute in the topology (the CUDA index in NCCL dumps) where every
 * GPU has a distinct one, else its index; a NIC's likewise (<net dev>);
 * written in hex as NCCL does ("0", "0x1"), read as hex.
 * topo_render / topo_write with TOPO_FMT_NCCL_GRAPH write one ring graph. */
/* Reads the ring graph (pattern 4, else id 0) of an NCCL graph file into
 * *out, for the GPUs listed (NULL = all): every listed GPU must be in every
 * channel (others there are dropped, with an INFO line). Refused, naming the
 * file and the line: malformed XML, no ring graph, a channel without GPUs or
 * with a GPU twice, a GPU or NIC dev that this topology does not have, a
 * listed GPU missing. Each channel's bandwidth is the graph's speedintra
 * (when absent: the ring's bottleneck); its NIC is its first <net>. */
xcclResult_t topo_graph_file_read(const topo_system_t *sys, const char *path, const int *gpus, int ngpus,
                                  topo_channels_t *out);
/* The same from memory (len bytes); name is for messages. */
xcclResult_t topo_graph_file_parse(const topo_system_t *sys, const char *data, size_t len, const char *name,
                                   const int *gpus, int ngpus, topo_channels_t *out);

/* ---- A job's rings: the one planner (issue 24) ---------------------------
 *
 * The channels a communicator runs, at init and in xccl-topo --job, come
 * from these functions and nothing else. Two steps, so that init, where a
 * rank knows only its own host's topology, and the tool, which plans every
 * host alike, run the same code:
 *   1. topo_plan_host, on one host: for each channel, the order of the
 *      host's ranks inside the ring and the NIC by which the channel enters
 *      and leaves the host.
 *   2. topo_plan_join, over the job: from every rank's place (what step 1
 *      gave its host; init all-gathers them), the rings over all ranks.
 * topo_plan_job does both for nhosts hosts alike (the tool, the tests).
 *
 * Inside a host whose every rank drives a GPU of sys: the rings of
 * topo_channels_choose over those GPUs, topo_channels_choose_rails when the
 * job spans hosts (XCCL_GRAPH_FILE's when set, else the search within
 * XCCL_MIN/MAX_NCHANNELS), ranks sharing a GPU kept together;
 * the channel enters at the GPU nearest its NIC and leaves at another near it
 * (the search's ring order). Otherwise (host buffers) the ranks in NUMA order
 * (domains of one socket together, as topo_local_ring_order), each channel
 * entering and leaving on the domain of its NIC where it can; the NICs are
 * the ones nearest the ranks' domains, taken in turn; when they are on the
 * ranks' domains or sockets, some ranks beside some of them and not others,
 * and nchannels is 0, the channel count is raised to their number (within
 * XCCL_MAX_NCHANNELS) so that each carries one.
 * Channel c of every host uses that host's NIC of rank c in this choice, so
 * between hosts channel c goes NIC c to NIC c (rails); where joined hosts
 * planned other NICs the hop changes NIC, said at INFO (cross-NIC).
 * Deterministic.
 */

#define TOPO_PLAN_MAX_LOCAL 4096 /* ranks on one host */

typedef struct {
  int nlocal;       /* ranks on this host, 1..TOPO_PLAN_MAX_LOCAL */
  const int *numa;  /* [nlocal] NUMA domain (OS index) of each, -1 unknown; NULL: all unknown */
  const int *gpu;   /* [nlocal] GPU index in sys each drives, -1 none; NULL: none. The GPU rings are
                       used only when every local rank has one */
  int multi_host;   /* the job spans other hosts too: each channel enters and leaves by a NIC */
  int nchannels;    /* > 0: exactly this many (XCCL_NCHANNELS set; the found rings repeated or cut);
                       0: with GPUs the count topo_channels_choose gives, else topo_comm_nchannels()
                       raised to the NICs beside the ranks (multi_host) */
} topo_host_job_t;

typedef struct {
  int nchannels, nlocal;
  int with_gpus;  /* the orders follow the GPU rings (gpu_channels), else NUMA order */
  int *order;     /* [nchannels * nlocal]: order[c * nlocal + i] is the local index (into the job's
                     arrays) of the rank at place i of channel c inside the host: the channel
                     enters the host at place 0 and leaves it at place nlocal - 1 */
  int nic_in[TOPO_MAX_CHANNELS], nic_out[TOPO_MAX_CHANNELS]; /* NIC index in sys; -1: none (one
                     host, or no NIC) */
  topo_channels_t *gpu_channels; /* with GPUs: the GPU rings of the host, one per channel, as the
                     NCCL graph XML writes them (topo_render TOPO_FMT_NCCL_GRAPH); else NULL */
  char desc[512]; /* one line for the INFO log */
  int *gpu, *numa; /* [nlocal] each: the job's arrays as planned (gpu -1 without GPUs; numa -1
                      unknown), kept for topo_plan_render; owned by the plan */
} topo_host_plan_t;

/* Plans one host. sys may be NULL (no topology: NUMA order, no NICs). A
 * graph file that does not fit is an error naming the file, the line and
 * why (topo_channels_choose's). On failure *out is left empty (free is still
 * safe). */
xcclResult_t topo_plan_host(const topo_system_t *sys, const topo_host_job_t *job, topo_host_plan_t *out);
void topo_host_plan_free(topo_host_plan_t *p); /* NULL and an empty plan are fine */

/* A rank's place in every channel, as init all-gathers it: plain numbers of
 * fixed size. */
typedef struct {
  int32_t host;      /* host index: hosts numbered 0.. in the order of their lowest rank */
  int32_t nchannels; /* its host's channel count */
  uint16_t place[TOPO_MAX_CHANNELS];  /* its place inside its host in channel c */
  int16_t nic_in[TOPO_MAX_CHANNELS], nic_out[TOPO_MAX_CHANNELS]; /* its host's NIC of channel c */
} topo_rank_place_t;

/* Fills places[i] for local rank i of a host planned as p. */
void topo_plan_places(const topo_host_plan_t *p, int host, topo_rank_place_t *places);

typedef struct {
  int nranks, nhosts, nchannels;
  int *ring;     /* [nchannels * nranks]: the rank at ring position i of channel c */
  int *host_of;  /* [nranks]: host index of each rank */
  int *nic_in, *nic_out; /* [nchannels * nhosts]: host h's NIC of channel c, -1 none */
} topo_plan_t;

/* The rings of a job: channel c visits the hosts in index order, each
 * host's ranks in their place[c] order, so it crosses between hosts once per
 * host. nchannels: the least of the hosts' (more are dropped, said at INFO).
 * Refused with a sentence: hosts not numbered 0..nhosts-1 by lowest rank,
 * two ranks of a host at one place, a host whose ranks disagree on its
 * channels. On failure *out is left empty. */
xcclResult_t topo_plan_join(int nranks, const topo_rank_place_t *places, topo_plan_t *out);
void topo_plan_free(topo_plan_t *p); /* NULL and an empty plan are fine */

/* A job of nhosts hosts like sys with nlocal ranks each, rank h * nlocal + i
 * being local rank i of host h (on GPU gpu[i], domain numa[i]: job's
 * arrays), planned as init plans it. host_out (may be NULL) gets host 0's
 * plan (every host's is the same). */
xcclResult_t topo_plan_job(const topo_system_t *sys, int nhosts, const topo_host_job_t *job, topo_plan_t *out,
                           topo_host_plan_t *host_out);

/* "Channel 00/02 :  0 1 2 3" (NCCL's INFO shape): ring c of plan. */
char *topo_plan_describe_channel(const topo_plan_t *plan, int c, char *buf, size_t len);
/* xccl-topo --job's output (text, json with the key "job", nccl-graph: host
 * 0's graph) into a new heap string. */
xcclResult_t topo_plan_render(const topo_system_t *sys, const topo_plan_t *plan, const topo_host_plan_t *host,
                              topo_format_t fmt, char **text_p);

#endif
