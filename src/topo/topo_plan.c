/*
 * topo_plan.c — a job's rings (topo.h, "A job's rings: the one planner"):
 * the order of a host's ranks in every channel and the NIC each channel
 * enters and leaves the host by (topo_plan_host), then the rings over the
 * whole job from every rank's place (topo_plan_join). Init and xccl-topo
 * --job both come here; nothing else orders ranks.
 *
 * With GPUs the orders are topo_channels_choose's rings. Host buffers take
 * topo_local_ring_order's NUMA order, cut where the channel's NIC is (see
 * numa_orders). The output is a function of the inputs alone.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "topo_graph.h"
#include "topo_paths.h"

/* Appends to buf (NUL-terminated, truncated at len). */
static void put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t len, const char *fmt, ...) {
  size_t o = strnlen(buf, len);
  if (o + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + o, len - o, fmt, ap);
  va_end(ap);
}

static int numa_pkg(const topo_system_t *sys, int numa) {
  int cpu = sys && numa >= 0 ? topo_graph_find_cpu(sys, numa) : -1;
  return cpu >= 0 && sys->nodes[cpu].package >= 0 ? sys->nodes[cpu].package : numa;
}

/* ---- with GPUs ---- */

/* The GPU rings: 1 done, 0 when the search found none (NUMA order then). */
static xcclResult_t gpu_orders(const topo_system_t *sys, const topo_host_job_t *job, topo_host_plan_t *p, int *done_p) {
  int n = job->nlocal, gl[TOPO_SEARCH_MAX_GPUS], ng = 0;
  *done_p = 0;
  for (int g = 0; g < sys->ngpus; g++) {
    int used = 0;
    for (int r = 0; r < n && !used; r++) used = job->gpu[r] == g;
    if (!used) continue;
    if (ng == TOPO_SEARCH_MAX_GPUS) {
      INFO(TOPO, "%d local ranks drive more than %d GPUs: NUMA order instead of the GPU rings", n,
           TOPO_SEARCH_MAX_GPUS);
      return xcclSuccess;
    }
    gl[ng++] = g;
  }
  topo_channels_t *chs = calloc(1, sizeof(*chs));
  if (!chs) return err_set(xcclSystemError, LOG_TOPO, "out of memory for the GPU rings");
  xcclResult_t res =
      job->multi_host ? topo_channels_choose_rails(sys, gl, ng, 0, chs) : topo_channels_choose(sys, gl, ng, 0, chs);
  if (res != xcclSuccess || chs->nchannels == 0) {
    free(chs);
    return res;
  }
  int found = chs->nchannels;
  if (job->nchannels > 0) topo_channels_clamp(chs, job->nchannels, job->nchannels);
  p->order = malloc((size_t)chs->nchannels * (size_t)n * sizeof(int));
  if (!p->order) {
    free(chs);
    return err_set(xcclSystemError, LOG_TOPO, "out of memory for the ring orders");
  }
  for (int c = 0; c < chs->nchannels; c++) {
    int k = 0, *o = p->order + (size_t)c * (size_t)n;
    for (int i = 0; i < chs->ch[c].ngpus; i++)
      for (int r = 0; r < n; r++)
        if (job->gpu[r] == chs->ch[c].gpus[i]) o[k++] = r;
    if (k != n) { /* a graph file lists every GPU asked for in every channel, so this is a bug */
      free(chs);
      free(p->order);
      p->order = NULL;
      return err_set(xcclInternalError, LOG_TOPO, "GPU ring %d holds %d of the %d local ranks", c, k, n);
    }
    p->nic_in[c] = p->nic_out[c] = job->multi_host ? chs->ch[c].nic : -1;
  }
  p->nchannels = chs->nchannels;
  p->with_gpus = 1;
  p->gpu_channels = chs;
  *done_p = 1;
  const char *file = config_str(CFG_GRAPH_FILE);
  put(p->desc, sizeof(p->desc), "%d local ranks on %d GPUs, rings of %s", n, ng,
      file[0] ? "XCCL_GRAPH_FILE" : "the GPU channel search");
  if (job->nchannels > 0 && found != chs->nchannels)
    put(p->desc, sizeof(p->desc), " (%d found, XCCL_NCHANNELS=%d)", found, job->nchannels);
  put(p->desc, sizeof(p->desc), ": ");
  size_t o = strlen(p->desc);
  topo_channels_describe(sys, chs, p->desc + o, sizeof(p->desc) - o);
  return xcclSuccess;
}

/* ---- host buffers ---- */

/* The NICs host-buffer channels take in turn: the usable NICs nearest the
 * ranks, as the GPU search takes the NICs of the best path kind to any GPU:
 * those on a domain some rank is on (*kind_p 0), else those on a socket some
 * rank is on (1), else all (2); in index order. Returns how many (list[]). */
static int numa_nics(const topo_system_t *sys, int n, const int *pkg, const int *numa, int *list, int *kind_p) {
  int best = 3, k = 0;
  int kind[TOPO_MAX_DEVICES];
  for (int x = 0; x < sys->nnics && x < TOPO_MAX_DEVICES; x++) {
    kind[x] = 3;
    if (!topo_nic_usable(sys, x)) continue;
    int d = topo_nic_numa(sys, x), dp = numa_pkg(sys, d);
    kind[x] = 2;
    for (int r = 0; r < n && d >= 0; r++) {
      if (numa[r] == d)
        kind[x] = 0;
      else if (pkg[r] == dp && kind[x] > 1)
        kind[x] = 1;
    }
    if (kind[x] < best) best = kind[x];
  }
  for (int x = 0; x < sys->nnics && x < TOPO_MAX_DEVICES; x++)
    if (kind[x] == best) list[k++] = x;
  *kind_p = best;
  return k;
}

/* Channel c's order: the NUMA order (a cycle: domains of one socket
 * together) cut so that the channel enters and leaves the host on its NIC's
 * domain. The ranks there (else those of its socket) are contiguous in the
 * cycle; the cut goes in the middle of them, so the channel enters at the
 * second half's first rank and leaves at the first half's last: both NIC
 * hops stay on the NIC's domain, and the cut, falling between two ranks of
 * one domain, adds no socket crossing inside the host. With one such rank
 * the channel enters there and leaves at the rank before it in the cycle;
 * when every rank is there, the NUMA order is kept as it is (its first and
 * last ranks are both on the domain). */
static void numa_cut(int n, const int *base, const int *pkg, const int *numa, int nic_numa, int nic_pkg, int *out) {
  int start = 0;
  for (int pass = 0; pass < 2; pass++) {
    int first = -1, k = 0;
    for (int i = 0; i < n; i++) {
      int r = base[i];
      int in = pass == 0 ? nic_numa >= 0 && numa[r] == nic_numa : nic_pkg >= 0 && pkg[r] == nic_pkg;
      if (!in) continue;
      if (first < 0) first = i;
      k++;
    }
    if (k == 0) continue;
    /* The group is one run [first, first + k): the order is sorted by socket, then domain.
     * When it is every rank, the order as it is already enters and leaves there. */
    start = k == n ? 0 : (first + k / 2) % n;
    break;
  }
  for (int i = 0; i < n; i++) out[i] = base[(start + i) % n];
}

static xcclResult_t numa_orders(const topo_system_t *sys, const topo_host_job_t *job, topo_host_plan_t *p) {
  int n = job->nlocal, nch = job->nchannels > 0 ? job->nchannels : topo_comm_nchannels();
  if (nch < 1) nch = 1;
  if (nch > TOPO_MAX_CHANNELS) nch = TOPO_MAX_CHANNELS;
  int *base = malloc((size_t)n * sizeof(int)), *pkg = malloc((size_t)n * sizeof(int));
  xcclResult_t res = xcclSuccess;
  if (!base || !pkg) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for the ring orders");
    goto out;
  }
  TRY_GOTO(topo_local_ring_order(sys, n, p->numa, NULL, base, NULL, 0), out);
  for (int r = 0; r < n; r++) pkg[r] = numa_pkg(sys, p->numa[r]);
  int crossings = 0;
  for (int i = 0; n > 1 && i < n; i++) crossings += pkg[base[i]] != pkg[base[(i + 1) % n]];
  int nics[TOPO_MAX_DEVICES], nn = 0, kind = 2, raised = 0;
  if (job->multi_host && sys && sys->nnics > 0) nn = numa_nics(sys, n, pkg, p->numa, nics, &kind);
  /* NICs on the ranks' domains (or sockets), some ranks beside some NICs
   * and not others (each NIC some ranks' own), each carry a channel, unless
   * XCCL_NCHANNELS says how many (or the maximum is lower). */
  int own = 0;
  for (int i = 0; i < nn && kind <= 1; i++) {
    int d = topo_nic_numa(sys, nics[i]), dp = numa_pkg(sys, d);
    for (int r = 0; r < n; r++) own |= kind == 0 ? p->numa[r] != d : pkg[r] != dp;
  }
  if (nn >= 2 && own && job->nchannels == 0 && nch < nn) {
    int lo, hi;
    topo_nchannels_limits(&lo, &hi);
    if ((nn < hi ? nn : hi) > nch) {
      raised = nch;
      nch = nn < hi ? nn : hi;
    }
  }
  p->order = malloc((size_t)nch * (size_t)n * sizeof(int));
  if (!p->order) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for the ring orders");
    goto out;
  }
  for (int c = 0; c < nch; c++) {
    int nic = nn ? nics[c % nn] : -1, *o = p->order + (size_t)c * (size_t)n;
    if (nic >= 0) {
      int d = topo_nic_numa(sys, nic);
      numa_cut(n, base, pkg, p->numa, d, numa_pkg(sys, d), o);
    } else {
      memcpy(o, base, (size_t)n * sizeof(int));
    }
    p->nic_in[c] = p->nic_out[c] = nic;
  }
  p->nchannels = nch;
  put(p->desc, sizeof(p->desc), "%d channel%s over %d local ranks in NUMA order (%d socket crossing%s):", nch,
      nch == 1 ? "" : "s", n, crossings, crossings == 1 ? "" : "s");
  for (int i = 0; i < n && strlen(p->desc) + 16 < sizeof(p->desc); i++)
    put(p->desc, sizeof(p->desc), " %d@%d", base[i], p->numa[base[i]]);
  if (nn) {
    put(p->desc, sizeof(p->desc), "; NIC%s", nn == 1 ? "" : "s in turn");
    for (int i = 0; i < nn && i < nch; i++) put(p->desc, sizeof(p->desc), " %s", topo_nic_name(sys, nics[i]));
    if (raised)
      put(p->desc, sizeof(p->desc), " (XCCL_NCHANNELS %d raised to %d: each NIC beside the ranks carries one)", raised,
          nch);
    if (nn > nch)
      put(p->desc, sizeof(p->desc), " (%d of the %d NICs carry no channel: at most %d)", nn - nch, nn, nch);
  }
out:
  free(base);
  free(pkg);
  return res;
}

xcclResult_t topo_plan_host(const topo_system_t *sys, const topo_host_job_t *job, topo_host_plan_t *out) {
  if (out) memset(out, 0, sizeof(*out));
  if (!job || !out) return err_set(xcclInvalidArgument, LOG_TOPO, "topo_plan_host: NULL argument");
  int n = job->nlocal;
  if (n < 1 || n > TOPO_PLAN_MAX_LOCAL)
    return err_set(xcclInvalidArgument, LOG_TOPO, "a host with %d ranks: 1 to %d are supported", n,
                   TOPO_PLAN_MAX_LOCAL);
  if (job->nchannels < 0 || job->nchannels > TOPO_MAX_CHANNELS)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%d channels asked for: 1 to %d are supported (0: the default)",
                   job->nchannels, TOPO_MAX_CHANNELS);
  topo_host_plan_t p;
  memset(&p, 0, sizeof(p));
  p.nlocal = n;
  p.gpu = malloc((size_t)n * sizeof(int));
  p.numa = malloc((size_t)n * sizeof(int));
  if (!p.gpu || !p.numa) {
    topo_host_plan_free(&p);
    return err_set(xcclSystemError, LOG_TOPO, "out of memory for the host plan");
  }
  int with_gpus = sys && job->gpu;
  for (int r = 0; r < n; r++) {
    p.gpu[r] = job->gpu ? job->gpu[r] : -1;
    p.numa[r] = job->numa ? job->numa[r] : -1;
    if (!sys || p.gpu[r] < 0 || p.gpu[r] >= sys->ngpus) with_gpus = 0;
  }
  int done = 0;
  xcclResult_t res = with_gpus ? gpu_orders(sys, job, &p, &done) : xcclSuccess;
  if (res == xcclSuccess && !done) {
    if (with_gpus) put(p.desc, sizeof(p.desc), "no GPU ring found: ");
    res = numa_orders(sys, job, &p);
  }
  if (res != xcclSuccess) {
    topo_host_plan_free(&p);
    return res;
  }
  for (int c = p.nchannels; c < TOPO_MAX_CHANNELS; c++) p.nic_in[c] = p.nic_out[c] = -1;
  *out = p;
  return xcclSuccess;
}

void topo_host_plan_free(topo_host_plan_t *p) {
  if (!p) return;
  free(p->order);
  free(p->gpu_channels);
  free(p->gpu);
  free(p->numa);
  memset(p, 0, sizeof(*p));
}

void topo_plan_places(const topo_host_plan_t *p, int host, topo_rank_place_t *places) {
  for (int i = 0; i < p->nlocal; i++) {
    memset(&places[i], 0, sizeof(places[i]));
    places[i].host = host;
    places[i].nchannels = p->nchannels;
    for (int c = 0; c < TOPO_MAX_CHANNELS; c++) places[i].nic_in[c] = places[i].nic_out[c] = -1;
  }
  for (int c = 0; c < p->nchannels; c++)
    for (int k = 0; k < p->nlocal; k++) {
      topo_rank_place_t *x = &places[p->order[(size_t)c * (size_t)p->nlocal + (size_t)k]];
      x->place[c] = (uint16_t)k;
      x->nic_in[c] = (int16_t)p->nic_in[c];
      x->nic_out[c] = (int16_t)p->nic_out[c];
    }
}

/* ---- the job ---- */

/* Rails: channel c enters and leaves every host by NIC c of the hosts'
 * plans, so hosts planned alike meet NIC i to NIC i. Hosts planned apart
 * (other NICs, other channel counts) may not: each such hop, where the NIC
 * index changes between hosts or inside one, is said once at INFO. */
static void log_cross_nic(const topo_plan_t *p) {
  int n = 0, fc = -1, fh = -1, fa = -1, fb = -1, inside = 0;
  for (int c = 0; c < p->nchannels; c++)
    for (int h = 0; h < p->nhosts && p->nhosts > 1; h++) {
      int in = p->nic_in[c * p->nhosts + h], out = p->nic_out[c * p->nhosts + h];
      int next_in = p->nic_in[c * p->nhosts + (h + 1) % p->nhosts];
      int cross_in = in >= 0 && out >= 0 && in != out, cross_out = out >= 0 && next_in >= 0 && out != next_in;
      if ((cross_in || cross_out) && n++ == 0) {
        fc = c, fh = h, inside = cross_in;
        fa = cross_in ? in : out;
        fb = cross_in ? out : next_in;
      }
    }
  if (n == 0) return;
  if (inside)
    INFO(TOPO, "%d cross-NIC hop%s (the hosts' plans differ); the first: channel %d enters host %d by NIC %d and "
               "leaves it by NIC %d",
         n, n == 1 ? "" : "s", fc, fh, fa, fb);
  else
    INFO(TOPO, "%d cross-NIC hop%s (the hosts' plans differ); the first: channel %d leaves host %d by NIC %d and "
               "enters host %d by NIC %d",
         n, n == 1 ? "" : "s", fc, fh, fa, (fh + 1) % p->nhosts, fb);
}

xcclResult_t topo_plan_join(int nranks, const topo_rank_place_t *places, topo_plan_t *out) {
  if (out) memset(out, 0, sizeof(*out));
  if (!places || !out || nranks < 1)
    return err_set(xcclInvalidArgument, LOG_TOPO, "topo_plan_join: %d ranks or a NULL argument", nranks);
  int nhosts = 0, *first = malloc((size_t)nranks * sizeof(int)), *size = calloc((size_t)nranks, sizeof(int));
  int *start = calloc((size_t)nranks + 1, sizeof(int));
  topo_plan_t p;
  memset(&p, 0, sizeof(p));
  xcclResult_t res = xcclSuccess;
  if (!first || !size || !start) goto oom;
  /* Hosts: numbered 0.. in the order of their lowest rank. */
  for (int r = 0; r < nranks; r++) {
    int h = places[r].host;
    if (h < 0 || h > nhosts) {
      res = err_set(xcclInvalidArgument, LOG_TOPO,
                    "rank %d says it is on host %d, but hosts are numbered 0.. in the order of their lowest "
                    "rank, so the next new host would be %d: every rank must report the same host numbering",
                    r, h, nhosts);
      goto out;
    }
    if (h == nhosts) first[nhosts++] = r;
    size[h]++;
    const topo_rank_place_t *f = &places[first[h]];
    if (places[r].nchannels < 1 || places[r].nchannels > TOPO_MAX_CHANNELS) {
      res = err_set(xcclInvalidArgument, LOG_TOPO, "rank %d (host %d) reports %d channels: 1 to %d are valid", r, h,
                    places[r].nchannels, TOPO_MAX_CHANNELS);
      goto out;
    }
    if (places[r].nchannels != f->nchannels) {
      res = err_set(xcclInvalidArgument, LOG_TOPO,
                    "ranks %d and %d of host %d planned %d and %d channels: the ranks of a host must plan "
                    "with the same settings (XCCL_NCHANNELS, XCCL_GRAPH_FILE, XCCL_TOPO_FILE)",
                    first[h], r, h, f->nchannels, places[r].nchannels);
      goto out;
    }
    for (int c = 0; c < f->nchannels; c++)
      if (places[r].nic_in[c] != f->nic_in[c] || places[r].nic_out[c] != f->nic_out[c]) {
        res = err_set(xcclInvalidArgument, LOG_TOPO,
                      "ranks %d and %d of host %d chose other NICs for channel %d (%d/%d, %d/%d): the ranks of "
                      "a host must plan with the same topology and settings",
                      first[h], r, h, c, f->nic_in[c], f->nic_out[c], places[r].nic_in[c], places[r].nic_out[c]);
        goto out;
      }
  }
  p.nranks = nranks;
  p.nhosts = nhosts;
  p.nchannels = TOPO_MAX_CHANNELS;
  for (int h = 0; h < nhosts; h++) {
    start[h + 1] = start[h] + size[h];
    if (places[first[h]].nchannels < p.nchannels) p.nchannels = places[first[h]].nchannels;
  }
  for (int h = 0; h < nhosts; h++)
    if (places[first[h]].nchannels > p.nchannels)
      INFO(TOPO, "host %d planned %d channels; the job runs %d, the least any host planned", h,
           places[first[h]].nchannels, p.nchannels);
  p.ring = malloc((size_t)p.nchannels * (size_t)nranks * sizeof(int));
  p.host_of = malloc((size_t)nranks * sizeof(int));
  p.nic_in = malloc((size_t)p.nchannels * (size_t)nhosts * sizeof(int));
  p.nic_out = malloc((size_t)p.nchannels * (size_t)nhosts * sizeof(int));
  if (!p.ring || !p.host_of || !p.nic_in || !p.nic_out) goto oom;
  for (size_t i = 0; i < (size_t)p.nchannels * (size_t)nranks; i++) p.ring[i] = -1;
  for (int r = 0; r < nranks; r++) {
    int h = places[r].host;
    p.host_of[r] = h;
    for (int c = 0; c < p.nchannels; c++) {
      int k = places[r].place[c];
      if (k >= size[h]) {
        res = err_set(xcclInvalidArgument, LOG_TOPO,
                      "rank %d is at place %d of host %d in channel %d, but that host has %d ranks (places 0 to "
                      "%d): its ranks disagree on who is on the host",
                      r, k, h, c, size[h], size[h] - 1);
        goto out;
      }
      int *slot = &p.ring[(size_t)c * (size_t)nranks + (size_t)(start[h] + k)];
      if (*slot >= 0) {
        res = err_set(xcclInvalidArgument, LOG_TOPO,
                      "ranks %d and %d are both at place %d of host %d in channel %d: the ranks of a host must "
                      "plan with the same topology and settings",
                      *slot, r, k, h, c);
        goto out;
      }
      *slot = r;
    }
  }
  for (int c = 0; c < p.nchannels; c++)
    for (int h = 0; h < nhosts; h++) {
      p.nic_in[c * nhosts + h] = places[first[h]].nic_in[c];
      p.nic_out[c * nhosts + h] = places[first[h]].nic_out[c];
    }
  log_cross_nic(&p);
  *out = p;
  memset(&p, 0, sizeof(p));
  goto out;
oom:
  res = err_set(xcclSystemError, LOG_TOPO, "out of memory joining the rings of %d ranks", nranks);
out:
  topo_plan_free(&p);
  free(first);
  free(size);
  free(start);
  return res;
}

void topo_plan_free(topo_plan_t *p) {
  if (!p) return;
  free(p->ring);
  free(p->host_of);
  free(p->nic_in);
  free(p->nic_out);
  memset(p, 0, sizeof(*p));
}

xcclResult_t topo_plan_job(const topo_system_t *sys, int nhosts, const topo_host_job_t *job, topo_plan_t *out,
                           topo_host_plan_t *host_out) {
  if (out) memset(out, 0, sizeof(*out));
  if (host_out) memset(host_out, 0, sizeof(*host_out));
  if (!job || !out) return err_set(xcclInvalidArgument, LOG_TOPO, "topo_plan_job: NULL argument");
  if (nhosts < 1 || (long)nhosts * job->nlocal > (1L << 24))
    return err_set(xcclInvalidArgument, LOG_TOPO, "a job of %d hosts x %d ranks: 1 to %ld ranks are supported", nhosts,
                   job->nlocal, 1L << 24);
  topo_host_job_t j = *job;
  j.multi_host = nhosts > 1;
  topo_host_plan_t hp;
  TRY(topo_plan_host(sys, &j, &hp));
  int nranks = nhosts * hp.nlocal;
  topo_rank_place_t *places = malloc((size_t)nranks * sizeof(*places));
  xcclResult_t res;
  if (!places) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for the places of %d ranks", nranks);
  } else {
    for (int h = 0; h < nhosts; h++) topo_plan_places(&hp, h, places + (size_t)h * (size_t)hp.nlocal);
    res = topo_plan_join(nranks, places, out);
  }
  free(places);
  if (res == xcclSuccess && host_out)
    *host_out = hp;
  else
    topo_host_plan_free(&hp);
  return res;
}

char *topo_plan_describe_channel(const topo_plan_t *plan, int c, char *buf, size_t len) {
  if (len == 0) return buf;
  buf[0] = 0;
  if (!plan || c < 0 || c >= plan->nchannels) return buf;
  put(buf, len, "Channel %02d/%02d : ", c, plan->nchannels);
  for (int i = 0; i < plan->nranks; i++) put(buf, len, " %d", plan->ring[(size_t)c * (size_t)plan->nranks + i]);
  return buf;
}
