/*
 * sim_topo.c — xccl-sim --topo FILE: one host of the modelled cluster read
 * from a topology file (hwloc or NCCL XML) by the project's own topology
 * library (src/topo), every host taken to be that machine.
 *
 * What the file gives (sim_topo_t):
 *   - GPUs per host: the file's GPUs (with --gpus G, its first G);
 *   - channels and NICs: the planner's (topo_plan_host) for a job that spans
 *     hosts, as init plans one: its channel count, and the distinct NICs its
 *     channels enter and leave by (the rails, which leaves out a front-end
 *     NIC no channel uses);
 *   - a NIC's bandwidth: the slowest rail NIC's port speed (topo_nic_bw: the
 *     file's speed, else 100 Gb/s for RDMA NICs, 10 Gb/s for Ethernet);
 *   - a GPU's link inside the host: where every pair of GPUs is joined by
 *     NVLink (directly or through NVSwitches), the least of the GPUs' NVLink
 *     bandwidth to GPUs and NVSwitches (the model's port); else the narrowest
 *     path between two GPUs (PCIe, the socket link...), named by its kind.
 * Latencies are not in the files; they stay the flags' (or the defaults).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sim.h"
#include "topo.h"
#include "topo_constants.h"
#include "topo_graph.h" /* a NIC's speed, a GPU's NVLinks */

/* The GPU's NVLink bandwidth to GPUs and NVSwitches (not to a CPU), GB/s. */
static double gpu_nvlink_bw(const topo_system_t *sys, int g) {
  const topo_node_t *x = &sys->nodes[sys->gpus[g]];
  double bw = 0;
  for (int i = 0; i < x->nlinks; i++) {
    const topo_link_t *lk = &x->links[i];
    topo_node_type_t peer = sys->nodes[lk->peer].type;
    if (lk->type == TOPO_LINK_NVL && (peer == TOPO_GPU || peer == TOPO_NVS)) bw += lk->bw;
  }
  return bw;
}

/* out->local_*: the link between GPUs 0..n-1, as the header comment says. */
static void local_link(const topo_system_t *sys, int n, sim_topo_t *out) {
  int all_nvl = 1;
  double narrow = 0;
  topo_path_type_t narrow_t = TOPO_PATH_NONE;
  if (n < 2) return; /* one GPU: nothing inside the host to take */
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      if (a == b) continue;
      double bw = 0;
      topo_path_type_t t = topo_gpu_gpu_path(sys, a, b, &bw);
      all_nvl &= t == TOPO_PATH_NVL;
      if (narrow_t == TOPO_PATH_NONE || bw < narrow) narrow = bw, narrow_t = t;
    }
  if (all_nvl) {
    double port = 0;
    for (int g = 0; g < n; g++) {
      double bw = gpu_nvlink_bw(sys, g);
      if (g == 0 || bw < port) port = bw;
    }
    out->local_bps = port * 1e9;
    snprintf(out->local_kind, sizeof(out->local_kind), "NVLink");
  } else {
    out->local_bps = narrow * 1e9;
    snprintf(out->local_kind, sizeof(out->local_kind), "%s", topo_path_name(narrow_t));
  }
}

/* out->nics, nic_bps, nchannels: from the planner's channels over GPUs 0..n-1. */
static int rails(const char *path, const topo_system_t *sys, int n, sim_topo_t *out) {
  int *gpu = malloc((size_t)n * sizeof(*gpu));
  if (!gpu) return fprintf(stderr, "xccl-sim: --topo %s: out of memory\n", path), -1;
  for (int i = 0; i < n; i++) gpu[i] = i;
  topo_host_job_t job = {.nlocal = n, .gpu = gpu, .multi_host = 1};
  topo_host_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  err_quiet(1);
  xcclResult_t res = topo_plan_host(sys, &job, &plan);
  err_quiet(0);
  free(gpu);
  if (res != xcclSuccess) {
    topo_host_plan_free(&plan);
    return fprintf(stderr, "xccl-sim: --topo %s: %s\n", path, err_last()), -1;
  }
  int seen[TOPO_MAX_DEVICES] = {0};
  out->nchannels = plan.nchannels;
  for (int c = 0; c < plan.nchannels; c++) {
    int nic[2] = {plan.nic_in[c], plan.nic_out[c]};
    for (int j = 0; j < 2; j++) {
      if (nic[j] < 0 || nic[j] >= TOPO_MAX_DEVICES || seen[nic[j]]) continue;
      seen[nic[j]] = 1;
      const topo_node_t *x = &sys->nodes[sys->nics[nic[j]]];
      double bps = topo_nic_bw(x->speed_mbps, x->rdma) * 1e9;
      if (!out->nics || bps < out->nic_bps) out->nic_bps = bps;
      size_t at = strlen(out->nic_names);
      snprintf(out->nic_names + at, sizeof(out->nic_names) - at, "%s%s", at ? "," : "", topo_nic_name(sys, nic[j]));
      out->nics++;
    }
  }
  topo_host_plan_free(&plan);
  return 0;
}

int sim_topo_read(const char *path, int gpus, sim_topo_t *out) {
  topo_system_t *sys = NULL;
  err_quiet(1); /* the error is said once, below, not logged as well */
  xcclResult_t res = topo_system_load_file(path, &sys);
  err_quiet(0);
  if (res != xcclSuccess) return fprintf(stderr, "xccl-sim: --topo: %s\n", err_last()), -1;
  int n = topo_ngpus(sys), rc = -1;
  sim_topo_t t;
  memset(&t, 0, sizeof(t));
  if (n == 0) {
    fprintf(stderr, "xccl-sim: --topo %s: the topology has no GPU, so it says nothing of a host's ranks\n", path);
    goto out;
  }
  if (gpus > n) {
    fprintf(stderr, "xccl-sim: --topo %s: --gpus %d, but the topology has %d GPU%s\n", path, gpus, n, n > 1 ? "s" : "");
    goto out;
  }
  t.file_gpus = n;
  t.gpus = gpus > 0 ? gpus : n;
  if (t.gpus > TOPO_PLAN_MAX_LOCAL) {
    fprintf(stderr, "xccl-sim: --topo %s: %d GPUs, more than a host plans (%d)\n", path, t.gpus, TOPO_PLAN_MAX_LOCAL);
    goto out;
  }
  local_link(sys, t.gpus, &t);
  if (rails(path, sys, t.gpus, &t) != 0) goto out;
  *out = t;
  rc = 0;
out:
  topo_system_free(sys);
  return rc;
}
