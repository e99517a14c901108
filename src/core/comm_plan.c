/*
 * comm_plan.c — the rings a communicator runs (issue 24): the planner's
 * (topo.h, topo_plan_host and topo_plan_join) and nothing else's.
 *
 * After the peer info is all-gathered, every rank of a host plans that host
 * alike (the same ranks, NUMA domains, GPUs and topology give the same plan):
 * each channel's order of the host's ranks and the NIC it enters and leaves
 * the host by. One more all-gather carries each rank's place, so every rank
 * joins the same rings over the job. A rank whose plan failed (a graph file
 * that does not fit) still joins with its reason, so every rank fails at
 * once naming it. Then each channel gets its own neighbours and the network
 * devices of its host's NICs where it crosses to another host.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "comm_plan.h"
#include "config.h"
#include "log.h"
#include "net_select.h"
#include "topo.h"

/* What each rank adds to the second all-gather. */
typedef struct {
  topo_rank_place_t place;
  int32_t refused; /* the xcclResult_t its plan failed with, 0 when it did not */
  char refusal[COMM_REFUSAL_BYTES];
} comm_place_t;

/* This host's topology, for the plan: XCCL_TOPO_FILE's (init checked it
 * loads), else the live machine's; NULL when there is none (then the NUMA
 * ids are taken as they are and no NIC is known). Loaded once per process
 * (the settings are read once too, and hwloc's look at the machine costs
 * milliseconds), then only read, by any thread. */
static topo_system_t *plan_sys;
static void plan_sys_load(void) {
  int from_file = config_str(CFG_TOPO_FILE)[0] != 0;
  if (!from_file) err_quiet(1);
  if (topo_system_load(&plan_sys) != xcclSuccess) plan_sys = NULL;
  if (!from_file) err_quiet(0);
}
const topo_system_t *comm_plan_topology(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, plan_sys_load);
  return plan_sys;
}

/* The network device that is topology NIC nic, or -1. */
static int net_dev_of_nic(const struct xcclComm *comm, const topo_system_t *sys, int nic) {
  int ndev = 0;
  if (nic < 0 || !sys || !comm->net || comm->net->devices(&ndev) != xcclSuccess) return -1;
  for (int d = 0; d < ndev; d++) {
    net_props_t p;
    if (comm->net->get_properties(d, &p) == xcclSuccess && net_topo_nic(sys, &p) == nic) return d;
  }
  return -1;
}

/* "NET/socket/eth1" for device d. */
static const char *net_dev_desc(const struct xcclComm *comm, int d, char *buf, size_t len) {
  net_props_t p;
  if (!comm->net || comm->net->get_properties(d, &p) != xcclSuccess) snprintf(p.name, sizeof(p.name), "%d", d);
  snprintf(buf, len, "NET/%s/%s", comm->net ? comm->net->name : "?", p.name);
  return buf;
}

/* XCCL_GRAPH_DUMP_FILE: the lowest rank of each host writes the host's GPU
 * rings, as many channels as the job runs. */
static void plan_dump_graph(const struct xcclComm *comm, const topo_system_t *sys, const topo_host_plan_t *hp,
                            int nchannels, int lowest_of_host) {
  const char *path = config_str(CFG_GRAPH_DUMP_FILE);
  if (!path[0] || !lowest_of_host) return;
  if (!hp->gpu_channels || !sys) {
    INFO(INIT,
         "rank %d: %s=%s not written: the rings are not over GPUs (host buffers), and NCCL's graph XML "
         "lists GPUs",
         comm->rank, config_source(CFG_GRAPH_DUMP_FILE), path);
    return;
  }
  topo_channels_t *chs = malloc(sizeof(*chs));
  char *text = NULL;
  xcclResult_t res = chs ? xcclSuccess : err_set(xcclSystemError, LOG_INIT, "out of memory");
  if (res == xcclSuccess) {
    *chs = *hp->gpu_channels;
    if (chs->nchannels > nchannels) chs->nchannels = nchannels;
    res = topo_render(sys, chs, TOPO_FMT_NCCL_GRAPH, &text);
  }
  FILE *f = res == xcclSuccess ? fopen(path, "w") : NULL;
  if (res == xcclSuccess && (!f || fputs(text, f) < 0))
    res = err_set(xcclSystemError, LOG_INIT, "cannot write %s", path);
  if (f && fclose(f) != 0 && res == xcclSuccess) res = err_set(xcclSystemError, LOG_INIT, "cannot write %s", path);
  if (res != xcclSuccess)
    WARN(INIT, "%s=%s: %s", config_source(CFG_GRAPH_DUMP_FILE), path, err_last());
  else
    INFO(INIT, "rank %d: the graph of %d channel(s) written to %s", comm->rank, chs->nchannels, path);
  free(text);
  free(chs);
}

/* The INFO lines NCCL users look for: each channel's ring (once per host,
 * from its lowest rank), then this rank's neighbours in it and how it
 * reaches them. */
static void plan_log(const struct xcclComm *comm, const topo_plan_t *plan, int lowest_of_host) {
  char line[1024], a[96], b[96];
  for (int c = 0; lowest_of_host && c < plan->nchannels; c++)
    INFO(INIT, "%s", topo_plan_describe_channel(plan, c, line, sizeof(line)));
  for (int c = 0; c < comm->nchannels; c++) {
    const comm_channel_t *ch = &comm->channels[c];
    snprintf(a, sizeof(a), "%s",
             comm_same_host(comm, comm->rank, ch->prev) ? "this host"
                                                        : net_dev_desc(comm, comm->chan_dev[c], b, sizeof(b)));
    char via[96];
    snprintf(via, sizeof(via), "%s",
             comm_same_host(comm, comm->rank, ch->next) ? "this host"
                                                        : net_dev_desc(comm, comm->chan_send_dev[c], b, sizeof(b)));
    INFO(INIT, "Ring %02d : %d -> %d -> %d, from %d via %s, to %d via %s", c, ch->prev, comm->rank, ch->next, ch->prev,
         a, ch->next, via);
  }
}

/* The rings joined: comm's tables, each channel's neighbours and devices. */
static xcclResult_t plan_apply(struct xcclComm *comm, const topo_system_t *sys, const topo_plan_t *plan) {
  int n = comm->nranks, nch = plan->nchannels;
  if (nch < 1 || nch > XCCL_MAX_CHANNELS)
    return err_set(xcclInternalError, LOG_INIT, "the planner gave %d channels (1..%d)", nch, XCCL_MAX_CHANNELS);
  size_t cells = (size_t)nch * (size_t)n;
  comm->ring = malloc(sizeof(int) * cells);
  comm->ring_pos = malloc(sizeof(int) * cells);
  comm->channels = calloc((size_t)nch, sizeof(*comm->channels));
  if (!comm->ring || !comm->ring_pos || !comm->channels)
    return err_set(xcclSystemError, LOG_INIT, "out of memory for %d rings of %d ranks", nch, n);
  memcpy(comm->ring, plan->ring, sizeof(int) * cells);
  for (int c = 0; c < nch; c++)
    for (int p = 0; p < n; p++)
      comm->ring_pos[(size_t)c * (size_t)n + (size_t)comm->ring[(size_t)c * (size_t)n + (size_t)p]] = p;
  comm->nchannels = nch;
  for (int c = 0; c < nch; c++) {
    int pos = comm_ring_pos(comm, c, comm->rank);
    comm->channels[c].next = comm_ring(comm, c)[(pos + 1) % n];
    comm->channels[c].prev = comm_ring(comm, c)[(pos + n - 1) % n];
  }
  comm->next = comm->channels[0].next;
  comm->prev = comm->channels[0].prev;
  /* Devices: nearest first, in turn (net_select.c); then, on every rank of
   * the host, the host's NIC of that channel (in, for the receive side and
   * for point-to-point, which picks a channel's device at both ends; out,
   * for the send side), so that channel c goes NIC c to NIC c on every host
   * (rails) and a peer of another host meets the same rail. */
  TRY(comm_pick_net_devs(comm));
  /* Rails: distinct NICs among a host's channels, the fewest over hosts
   * (the same on every rank: the plan is joined), for the tuner. */
  comm->rails = 0;
  for (int hh = 0; hh < plan->nhosts; hh++) {
    int distinct = 0;
    for (int c = 0; c < nch; c++) {
      int nic = plan->nic_in[c * plan->nhosts + hh], seen = nic < 0;
      for (int d = 0; d < c && !seen; d++) seen = plan->nic_in[d * plan->nhosts + hh] == nic;
      distinct += !seen;
    }
    if (hh == 0 || distinct < comm->rails) comm->rails = distinct;
  }
  int h = plan->host_of[comm->rank];
  for (int c = 0; c < nch; c++) {
    int in = net_dev_of_nic(comm, sys, plan->nic_in[c * plan->nhosts + h]);
    int out = net_dev_of_nic(comm, sys, plan->nic_out[c * plan->nhosts + h]);
    if (in >= 0) comm->chan_dev[c] = in;
    comm->chan_send_dev[c] = out >= 0 ? out : comm->chan_dev[c];
  }
  return xcclSuccess;
}

xcclResult_t comm_plan_rings(struct xcclComm *comm, const topo_system_t *sys) {
  int n = comm->nranks, me = comm->rank;
  xcclResult_t res = xcclSuccess;
  /* This host's ranks, in rank order (comm->hosts). */
  int host = comm->hosts->host_of[me], nl = hier_host_size(comm->hosts, host), my_local = comm->hosts->local_of[me];
  const int *local = hier_host_ranks(comm->hosts, host);
  int *numa = malloc(sizeof(int) * (size_t)nl), *gpu = malloc(sizeof(int) * (size_t)nl);
  comm_place_t *all = calloc((size_t)n, sizeof(*all));
  topo_rank_place_t *places = calloc((size_t)n, sizeof(*places));
  topo_host_plan_t hp;
  topo_plan_t plan;
  memset(&hp, 0, sizeof(hp));
  memset(&plan, 0, sizeof(plan));
  if (!numa || !gpu || !all || !places) {
    res = err_set(xcclSystemError, LOG_INIT, "out of memory for the rings of %d ranks", n);
    goto out;
  }
  for (int i = 0; i < nl; i++) {
    numa[i] = comm->peers[local[i]].numa;
    gpu[i] = sys && comm->peers[local[i]].busid[0] ? topo_gpu_by_busid(sys, comm->peers[local[i]].busid) : -1;
  }
  topo_host_job_t job = {.nlocal = nl,
                         .numa = numa,
                         .gpu = gpu,
                         .multi_host = comm->hosts->nhosts > 1,
                         .nchannels = config_is_set(CFG_NCHANNELS) ? comm->nchannels : 0};
  comm_place_t *mine = &all[me];
  res = topo_plan_host(sys, &job, &hp);
  if (res == xcclSuccess) {
    topo_plan_places(&hp, host, places); /* places[0..nl) for now: this host's */
    mine->place = places[my_local];
  } else {
    mine->refused = res;
    snprintf(mine->refusal, sizeof(mine->refusal), "%s", err_last());
  }
  char my_reason[ERR_MSG_MAX];
  snprintf(my_reason, sizeof(my_reason), "%s", res == xcclSuccess ? "" : err_last());
  xcclResult_t gres = bootstrap_allgather(comm->bs, all, sizeof(*all));
  if (gres != xcclSuccess) {
    res = gres;
    goto out;
  }
  if (res != xcclSuccess) {
    res = err_set(res, LOG_INIT, "%s", my_reason);
    goto out;
  }
  for (int r = 0; r < n; r++)
    if (all[r].refused) {
      char d[160];
      res = err_set((xcclResult_t)all[r].refused, LOG_INIT, "%s cannot plan its rings: %.*s",
                    comm_peer_desc(comm, r, d, sizeof(d)), COMM_REFUSAL_BYTES, all[r].refusal);
      goto out;
    }
  for (int r = 0; r < n; r++) places[r] = all[r].place;
  TRY_GOTO(topo_plan_join(n, places, &plan), out);
  TRY_GOTO(plan_apply(comm, sys, &plan), out);
  int lowest = my_local == 0;
  if (lowest) INFO(INIT, "rank %d: host %s: %s", me, comm->peers[me].host, hp.desc);
  plan_log(comm, &plan, lowest);
  plan_dump_graph(comm, sys, &hp, plan.nchannels, lowest);
out:
  topo_plan_free(&plan);
  topo_host_plan_free(&hp);
  free(numa);
  free(gpu);
  free(all);
  free(places);
  return res;
}
