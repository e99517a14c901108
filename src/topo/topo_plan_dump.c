/*
 * topo_plan_dump.c — a job's rings for people and programs (xccl-topo
 * --job): text (NCCL's "Channel 00/02 :" lines, then where each channel
 * enters and leaves every host and how often it crosses a socket there),
 * JSON (the topology's JSON with the key "job" added, README.md), and host
 * 0's GPU rings as NCCL's graph XML.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_graph.h"

static int pkg_of_numa(const topo_system_t *sys, int numa) {
  int cpu = sys && numa >= 0 ? topo_graph_find_cpu(sys, numa) : -1;
  return cpu >= 0 && sys->nodes[cpu].package >= 0 ? sys->nodes[cpu].package : numa;
}

/* Local index of every rank (its rank among its host's), or NULL when the
 * hosts are not all like the host plan (then no GPU or domain is shown). */
static int *local_index(const topo_plan_t *plan, const topo_host_plan_t *host) {
  if (!host || !host->gpu || !host->numa) return NULL;
  int *loc = malloc((size_t)plan->nranks * sizeof(int)), *count = calloc((size_t)plan->nhosts, sizeof(int));
  int ok = loc && count;
  for (int r = 0; ok && r < plan->nranks; r++) loc[r] = count[plan->host_of[r]]++;
  for (int h = 0; ok && h < plan->nhosts; h++) ok = count[h] == host->nlocal;
  free(count);
  if (!ok) {
    free(loc);
    return NULL;
  }
  return loc;
}

/* "rank 3 (GPU 2 0000:13:00.0)" / "rank 3 (NUMA 1)". */
static void rank_text(topo_buf_t *b, const topo_system_t *sys, const topo_host_plan_t *host, const int *loc, int r) {
  char bus[32];
  topo_buf_printf(b, "rank %d", r);
  if (!loc) return;
  int g = host->gpu[loc[r]];
  if (host->with_gpus && sys && g >= 0)
    topo_buf_printf(b, " (GPU %d %s)", g, topo_gpu_busid(sys, g, bus, sizeof(bus)));
  else if (host->numa[loc[r]] >= 0)
    topo_buf_printf(b, " (NUMA %d)", host->numa[loc[r]]);
}

static void nic_text(topo_buf_t *b, const topo_system_t *sys, const topo_host_plan_t *host, const int *loc, int nic,
                     int r) {
  if (nic < 0 || !sys || nic >= topo_nnics(sys)) {
    topo_buf_printf(b, "without a NIC");
    return;
  }
  topo_buf_printf(b, "via NIC %s", topo_nic_name(sys, nic));
  if (loc && host->with_gpus && host->gpu[loc[r]] >= 0)
    topo_buf_printf(b, " (%s)", topo_path_name(topo_gpu_nic_path(sys, host->gpu[loc[r]], nic, NULL)));
}

/* Socket crossings on host h's part of ring (its n ranks from position
 * first): GPU paths' inter-socket links, or changes of package. A one-host
 * ring closes on itself, so its last hop counts too. */
static int crossings(const topo_system_t *sys, const topo_host_plan_t *host, const int *loc, const int *ring, int first,
                     int n, int closed) {
  int x = 0;
  for (int i = 0; i + 1 < n || (closed && n > 1 && i < n); i++) {
    int a = loc[ring[first + i]], z = loc[ring[first + (i + 1) % n]];
    if (host->with_gpus)
      x += topo_gpu_gpu_sys_hops(sys, host->gpu[a], host->gpu[z]);
    else
      x += pkg_of_numa(sys, host->numa[a]) != pkg_of_numa(sys, host->numa[z]);
  }
  return x;
}

/* How many channels enter or leave host h by NIC x (a channel that enters
 * by one and leaves by another counts for both). */
static int nic_channels(const topo_plan_t *plan, int h, int x) {
  int k = 0;
  for (int c = 0; c < plan->nchannels; c++)
    k += plan->nic_in[c * plan->nhosts + h] == x || plan->nic_out[c * plan->nhosts + h] == x;
  return k;
}

static void render_text(topo_buf_t *b, const topo_system_t *sys, const topo_plan_t *plan,
                        const topo_host_plan_t *host) {
  int *loc = local_index(plan, host);
  topo_buf_printf(b, "Job: %d host%s, %d ranks, %d channel%s\n", plan->nhosts, plan->nhosts == 1 ? "" : "s",
                  plan->nranks, plan->nchannels, plan->nchannels == 1 ? "" : "s");
  if (host) topo_buf_printf(b, "Plan of each host: %s\n", host->desc);
  if (sys && plan->nhosts > 1 && topo_nnics(sys) > 0) {
    topo_buf_printf(b, "Channels per NIC of host 0:");
    for (int x = 0; x < topo_nnics(sys); x++)
      topo_buf_printf(b, "%s %s %d", x ? "," : "", topo_nic_name(sys, x), nic_channels(plan, 0, x));
    topo_buf_printf(b, "\n");
  }
  char *line = malloc((size_t)plan->nranks * 12 + 64);
  for (int c = 0; line && c < plan->nchannels; c++) {
    const int *ring = plan->ring + (size_t)c * (size_t)plan->nranks;
    topo_buf_printf(b, "%s\n", topo_plan_describe_channel(plan, c, line, (size_t)plan->nranks * 12 + 64));
    for (int i = 0; i < plan->nranks;) {
      int h = plan->host_of[ring[i]], n = 0;
      while (i + n < plan->nranks && plan->host_of[ring[i + n]] == h) n++;
      int in = plan->nic_in[c * plan->nhosts + h], out = plan->nic_out[c * plan->nhosts + h];
      topo_buf_printf(b, "  host %d: enters at ", h);
      rank_text(b, sys, host, loc, ring[i]);
      topo_buf_printf(b, " ");
      nic_text(b, sys, host, loc, in, ring[i]);
      topo_buf_printf(b, ", leaves at ");
      rank_text(b, sys, host, loc, ring[i + n - 1]);
      topo_buf_printf(b, " ");
      nic_text(b, sys, host, loc, out, ring[i + n - 1]);
      if (loc) {
        int x = crossings(sys, host, loc, ring, i, n, plan->nhosts == 1);
        topo_buf_printf(b, "; %d socket crossing%s (SYS) inside", x, x == 1 ? "" : "s");
      }
      topo_buf_printf(b, "\n");
      i += n;
    }
  }
  if (!line) b->oom = 1;
  free(line);
  free(loc);
}

static json_t *job_json(const topo_system_t *sys, const topo_plan_t *plan, const topo_host_plan_t *host) {
  int per_host = host ? host->nlocal : plan->nranks / (plan->nhosts ? plan->nhosts : 1), bad = 0;
  json_t *channels = json_array(), *nics = json_array();
  for (int c = 0; c < plan->nchannels; c++) {
    json_t *ring = json_array(), *hosts = json_array();
    for (int i = 0; i < plan->nranks; i++)
      bad |= json_array_append_new(ring, json_integer(plan->ring[(size_t)c * (size_t)plan->nranks + i]));
    for (int h = 0; h < plan->nhosts; h++)
      bad |= json_array_append_new(hosts, json_pack("{s:i, s:i}", "nic_in", plan->nic_in[c * plan->nhosts + h],
                                                    "nic_out", plan->nic_out[c * plan->nhosts + h]));
    bad |= json_array_append_new(channels, json_pack("{s:o, s:o}", "ring", ring, "hosts", hosts));
  }
  json_t *per_nic = json_array();
  for (int n = 0; sys && n < topo_nnics(sys); n++) {
    bad |= json_array_append_new(nics, json_string(topo_nic_name(sys, n)));
    bad |= json_array_append_new(per_nic, json_integer(nic_channels(plan, 0, n)));
  }
  json_t *job = json_pack("{s:i, s:i, s:b, s:s, s:o, s:o, s:o}", "hosts", plan->nhosts, "ranks_per_host", per_host,
                          "with_gpus", host && host->with_gpus, "plan", host ? host->desc : "", "channels", channels,
                          "nics", nics, "channels_per_nic", per_nic);
  if (bad) {
    json_decref(job);
    return NULL;
  }
  return job;
}

/* The topology's JSON (host 0's GPU rings as its "channels") with "job"
 * added as the last top-level key; only "job" without a topology. */
static void render_json(topo_buf_t *b, const topo_system_t *sys, const topo_plan_t *plan,
                        const topo_host_plan_t *host) {
  json_t *top = sys ? topo_json(sys, host ? host->gpu_channels : NULL) : json_object();
  if (top && json_object_set_new(top, "job", job_json(sys, plan, host)) != 0) {
    json_decref(top);
    top = NULL;
  }
  topo_buf_json(b, top);
}

xcclResult_t topo_plan_render(const topo_system_t *sys, const topo_plan_t *plan, const topo_host_plan_t *host,
                              topo_format_t fmt, char **text_p) {
  if (!plan || !text_p || !plan->ring)
    return err_set(xcclInvalidArgument, LOG_TOPO, "topo_plan_render: no plan to write");
  topo_buf_t b = {0};
  xcclResult_t res = xcclSuccess;
  switch (fmt) {
    case TOPO_FMT_TEXT:
      render_text(&b, sys, plan, host);
      break;
    case TOPO_FMT_JSON:
      render_json(&b, sys, plan, host);
      break;
    case TOPO_FMT_NCCL_GRAPH:
      if (!sys || !host || !host->gpu_channels)
        return err_set(xcclInvalidArgument, LOG_TOPO,
                       "the NCCL graph format lists GPUs, and this job's ranks use host buffers (no GPU rings): "
                       "use --format text or json");
      return topo_render(sys, host->gpu_channels, TOPO_FMT_NCCL_GRAPH, text_p);
    default:
      return err_set(xcclInvalidArgument, LOG_TOPO, "a job's rings are written as text, json or nccl-graph only");
  }
  if (res == xcclSuccess && (b.oom || !b.data))
    res =
        err_set(xcclSystemError, LOG_TOPO, "out of memory writing the job's rings (or, in JSON, a name not in UTF-8)");
  if (res != xcclSuccess) {
    free(b.data);
    return res;
  }
  *text_p = b.data;
  return xcclSuccess;
}
