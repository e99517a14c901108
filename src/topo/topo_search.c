/*
 * topo_search.c — channels: rings over a node's GPUs, each with its NIC.
 *
 * For a bandwidth B, channels are found one after the other: the ring of
 * channel c starts at the GPU nearest its NIC (NICs taken in turn), ends at
 * the nearest of the others, and every ring edge a->b must find B left on
 * each link of the path a->b after what earlier channels (and earlier edges
 * of this ring) took. The rings are found by depth-first search, neighbours
 * tried nearest first, within a step budget. B runs over the distinct path
 * bandwidths between the GPUs and their fractions v/k; the B giving the most
 * channels x B wins, ties to the larger B (fewer channels: each costs
 * connections and buffers). When there are more NICs than channels, the
 * result may be split into k times as many channels of B/k (same total
 * inside the node) so that more NICs carry one: only where that raises the
 * network's share (net_total), and with the smallest k that gives the most.
 * For a job across hosts (topo_channels_choose_rails), where the NICs sit
 * beside the GPUs (PHB or nearer) and some GPUs are nearer some of them than
 * others (by path kind, bandwidth or hops: each NIC some GPUs' own, as on a
 * rail-optimised node), every NIC
 * carries a channel instead (spread_over_nics): k * NICs channels, each NIC
 * k of them.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_constants.h"
#include "topo_graph.h"
#include "topo_paths.h"

#define STEP_BUDGET_RING 20000L
#define STEP_BUDGET_TOTAL 4000000L
#define TRY_ENDS 4 /* first GPUs, and last GPUs, tried per channel */
#define SPREAD_TRIES 8 /* bandwidths tried per channel count when spreading over the NICs */
#define EPS 1e-9

typedef struct {
  const topo_system_t *sys;
  int n;
  int g[TOPO_SEARCH_MAX_GPUS];
  int nbr[TOPO_SEARCH_MAX_GPUS][TOPO_SEARCH_MAX_GPUS]; /* positions, nearest first */
  double *cap, *left;
  int usable[TOPO_MAX_DEVICES], nusable;
  long steps, ring_steps;
  int order[TOPO_SEARCH_MAX_GPUS];
  uint64_t used;
  int last;
} search_t;

static const topo_path_t *gg(const search_t *s, int a, int b) { return topo_path_gg(s->sys, s->g[a], s->g[b]); }

static int nearer(const topo_path_t *p, const topo_path_t *q) {
  if (p->type != q->type) return p->type < q->type;
  if (p->bw != q->bw) return p->bw > q->bw;
  return p->hops < q->hops;
}

static int take(search_t *s, int a, int b, double B) {
  const topo_path_t *p = gg(s, a, b);
  for (int h = 0; h < p->hops; h++)
    if (s->left[p->links[h]] + EPS * (1 + B) < B) return 0;
  for (int h = 0; h < p->hops; h++) s->left[p->links[h]] -= B;
  return 1;
}

static void give(search_t *s, int a, int b, double B) {
  const topo_path_t *p = gg(s, a, b);
  for (int h = 0; h < p->hops; h++) s->left[p->links[h]] += B;
}

/* Extends order[0..depth] (ending at cur) to a full ring ending at s->last. */
static int dfs(search_t *s, int depth, int cur, double B) {
  if (++s->steps > STEP_BUDGET_TOTAL || ++s->ring_steps > STEP_BUDGET_RING) return 0;
  if (depth == s->n - 1) {
    if (take(s, cur, s->order[0], B)) return 1;
    return 0;
  }
  for (int i = 0; i < s->n - 1; i++) {
    int nx = s->nbr[cur][i];
    if (s->used >> nx & 1) continue;
    if ((nx == s->last) != (depth + 1 == s->n - 1)) continue;
    if (!take(s, cur, nx, B)) continue;
    s->used |= 1ull << nx;
    s->order[depth + 1] = nx;
    if (dfs(s, depth + 1, nx, B)) return 1;
    s->used &= ~(1ull << nx);
    give(s, cur, nx, B);
  }
  return 0;
}

/* Positions sorted by how near they are to NIC nic (to = NIC->GPU, else GPU->NIC). */
static void by_nic(const search_t *s, int nic, int to, int *out) {
  for (int i = 0; i < s->n; i++) out[i] = i;
  if (nic < 0) return;
  for (int i = 1; i < s->n; i++) {
    int v = out[i], j = i;
    while (j > 0) {
      int u = out[j - 1];
      const topo_path_t *pv = to ? topo_path_ng(s->sys, nic, s->g[v]) : topo_path_gn(s->sys, s->g[v], nic);
      const topo_path_t *pu = to ? topo_path_ng(s->sys, nic, s->g[u]) : topo_path_gn(s->sys, s->g[u], nic);
      if (!nearer(pv, pu)) break;
      out[j] = u;
      j--;
    }
    out[j] = v;
  }
}

static void fill_channel(search_t *s, topo_channel_t *ch, int nic, double B) {
  ch->ngpus = s->n;
  ch->nic = nic;
  ch->bw = s->n > 1 ? B : 0;
  ch->worst = TOPO_PATH_SAME;
  for (int i = 0; i < s->n; i++) {
    ch->gpus[i] = s->g[s->order[i]];
    if (s->n > 1) {
      const topo_path_t *p = gg(s, s->order[i], s->order[(i + 1) % s->n]);
      if (p->type > ch->worst) ch->worst = p->type;
    }
  }
  ch->nic_bw = 0;
  if (nic >= 0) {
    double in = topo_path_ng(s->sys, nic, ch->gpus[0])->bw, out = topo_path_gn(s->sys, ch->gpus[s->n - 1], nic)->bw;
    ch->nic_bw = in < out ? in : out;
  }
}

/* As many channels of B as fit, up to maxch; returns how many. */
static int greedy(search_t *s, double B, int maxch, topo_channels_t *out) {
  const topo_paths_t *P = s->sys->paths;
  for (int l = 0; l < s->sys->nlinks_total; l++) s->cap[l] = P->link_bw[l];
  int nch = 0;
  for (int c = 0; c < maxch; c++) {
    int nic = s->nusable ? s->usable[c % s->nusable] : -1;
    int firsts[TOPO_SEARCH_MAX_GPUS], lasts[TOPO_SEARCH_MAX_GPUS];
    by_nic(s, nic, 1, firsts);
    by_nic(s, nic, 0, lasts);
    int found = 0;
    for (int fi = 0; fi < s->n && fi < TRY_ENDS && !found; fi++) {
      for (int li = 0, tried = 0; li < s->n && tried < TRY_ENDS && !found; li++) {
        if (s->steps > STEP_BUDGET_TOTAL) {
          out->nchannels = nch;
          return nch;
        }
        if (s->n > 1 && lasts[li] == firsts[fi]) continue;
        tried++;
        memcpy(s->left, s->cap, (size_t)s->sys->nlinks_total * sizeof(double));
        s->order[0] = firsts[fi];
        s->used = 1ull << firsts[fi];
        s->last = s->n > 1 ? lasts[li] : firsts[fi];
        s->ring_steps = 0;
        found = s->n == 1 || dfs(s, 0, firsts[fi], B);
        if (s->n == 1) break;
      }
    }
    if (!found) break;
    memcpy(s->cap, s->left, (size_t)s->sys->nlinks_total * sizeof(double));
    fill_channel(s, &out->ch[nch++], nic, B);
    if (s->n == 1) break; /* one GPU: one channel */
  }
  out->nchannels = nch;
  return nch;
}

/* GB/s the network gets from these channels: each NIC carries the least of
 * its speed, its channels' paths to it and the sum of its channels'
 * bandwidth. (Links shared on the way to several NICs are not counted.) */
static double net_total(const topo_system_t *sys, const topo_channels_t *chs) {
  double sum = 0;
  for (int c = 0; c < chs->nchannels; c++) {
    int nic = chs->ch[c].nic, first = 1;
    for (int d = 0; d < c && first; d++) first = chs->ch[d].nic != nic;
    if (nic < 0 || !first) continue;
    const topo_node_t *x = &sys->nodes[sys->nics[nic]];
    double rate = topo_nic_bw(x->speed_mbps, x->rdma), carried = 0;
    for (int d = c; d < chs->nchannels; d++)
      if (chs->ch[d].nic == nic) {
        carried += chs->ch[d].bw;
        if (chs->ch[d].nic_bw < rate) rate = chs->ch[d].nic_bw;
      }
    sum += carried < rate ? carried : rate;
  }
  return sum;
}

/* Splits best (nch channels of B) into k * nch channels of B / k over more
 * NICs where that raises net_total; the smallest such k giving the most. */
static void split_over_nics(search_t *s, double B, int max_channels, topo_channels_t *best, topo_channels_t *tmp) {
  int nch = best->nchannels;
  int kmax = s->nusable / nch;
  if (kmax > max_channels / nch) kmax = max_channels / nch;
  double best_net = net_total(s->sys, best);
  topo_channels_t *keep = NULL;
  for (int k = 2; k <= kmax; k++) {
    if (greedy(s, B / k, nch * k, tmp) != nch * k) continue;
    double net = net_total(s->sys, tmp);
    if (net > best_net * (1 + 1e-6) + EPS) {
      best_net = net;
      if (!keep && !(keep = malloc(sizeof(*keep)))) return;
      *keep = *tmp;
    }
  }
  if (keep) *best = *keep;
  free(keep);
}

/* Every usable NIC carries a channel: m = k * U channels for U usable NICs
 * (k = 1, 2, ... within max_channels; when U > max_channels, max_channels
 * of them), channel c on NIC c mod U. For each m, the largest B that greedy
 * fits m channels of: total / m (the same total inside the node) first, then
 * the candidates below it, at most SPREAD_TRIES of them. Of the counts that
 * fit, the one giving the network the most (net_total) wins, then the one
 * with the most m * B inside the node, then the fewest channels. Returns
 * whether one fit (then *best is replaced). */
static int spread_over_nics(search_t *s, const double *cands, int nc, double total, int max_channels,
                            topo_channels_t *best, topo_channels_t *tmp) {
  int U = s->nusable, fit = 0;
  double keep_net = 0, keep_tot = 0;
  topo_channels_t *keep = malloc(sizeof(*keep));
  if (!keep) return 0;
  long spent = s->steps;
  s->steps = 0; /* a budget of its own: the search above may have spent its */
  for (int m = U < max_channels ? U : max_channels; m <= max_channels; m += U) {
    double top = total / m, prev = -1, B = 0;
    int found = 0;
    for (int i = -1, tries = 0; i < nc && tries < SPREAD_TRIES && !found; i++) {
      B = i < 0 ? top : cands[i];
      if (B > top * (1 + EPS) || fabs(B - prev) <= EPS * B) continue;
      prev = B;
      tries++;
      found = greedy(s, B, m, tmp) == m;
    }
    if (!found) continue;
    double net = net_total(s->sys, tmp), tot = m * B;
    int better = !fit || net > keep_net * (1 + 1e-6) + EPS ||
                 (net >= keep_net * (1 - 1e-6) - EPS && tot > keep_tot * (1 + 1e-6) + EPS);
    if (better) {
      *keep = *tmp;
      keep_net = net;
      keep_tot = tot;
      fit = 1;
    }
  }
  s->steps += spent;
  if (fit) *best = *keep;
  free(keep);
  return fit;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

xcclResult_t topo_search_channels_for(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                      int rails, topo_channels_t *out) {
  if (!sys || !out) return err_set(xcclInvalidArgument, LOG_TOPO, "topo_search_channels: NULL argument");
  if (!gpus) ngpus = sys->ngpus;
  if (ngpus < 0 || ngpus > TOPO_SEARCH_MAX_GPUS)
    return err_set(xcclInvalidArgument, LOG_TOPO, "channel search over %d GPUs: 0 to %d are supported", ngpus,
                   TOPO_SEARCH_MAX_GPUS);
  if (max_channels < 1 || max_channels > TOPO_MAX_CHANNELS)
    return err_set(xcclInvalidArgument, LOG_TOPO, "channel search: max_channels %d is not in 1..%d", max_channels,
                   TOPO_MAX_CHANNELS);
  search_t *s = calloc(1, sizeof(*s));
  topo_channels_t *best = calloc(1, sizeof(*best)), *tmp = calloc(1, sizeof(*tmp));
  double *cands = NULL;
  xcclResult_t res = xcclSuccess;
  if (!s || !best || !tmp) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for the channel search");
    goto out;
  }
  s->sys = sys;
  s->n = ngpus;
  for (int i = 0; i < ngpus; i++) {
    int g = gpus ? gpus[i] : i;
    if (g < 0 || g >= sys->ngpus) {
      res = err_set(xcclInvalidArgument, LOG_TOPO, "channel search: GPU %d does not exist (the node has %d)", g,
                    sys->ngpus);
      goto out;
    }
    for (int j = 0; j < i; j++)
      if (s->g[j] == g) {
        res = err_set(xcclInvalidArgument, LOG_TOPO, "channel search: GPU %d listed twice", g);
        goto out;
      }
    s->g[i] = g;
  }
  if (ngpus == 0) {
    memset(out, 0, sizeof(*out));
    goto out;
  }
  /* NICs: the usable ones nearest the GPUs searched (the best path kind any
   * of them has to a NIC), in index order. */
  topo_path_type_t nic_best[TOPO_MAX_DEVICES], best_kind = TOPO_PATH_NONE;
  for (int n = 0; n < sys->nnics; n++) {
    nic_best[n] = TOPO_PATH_NONE;
    for (int i = 0; i < ngpus && topo_nic_usable(sys, n); i++) {
      topo_path_type_t t = topo_path_gn(sys, s->g[i], n)->type;
      if (t < nic_best[n]) nic_best[n] = t;
    }
    if (nic_best[n] < best_kind) best_kind = nic_best[n];
  }
  for (int n = 0; n < sys->nnics; n++)
    if (nic_best[n] != TOPO_PATH_NONE && nic_best[n] == best_kind) s->usable[s->nusable++] = n;
  /* Neighbours, nearest first (ties: lower GPU index). */
  for (int a = 0; a < ngpus; a++) {
    int k = 0;
    for (int b = 0; b < ngpus; b++)
      if (b != a) s->nbr[a][k++] = b;
    for (int i = 1; i < k; i++) {
      int v = s->nbr[a][i], j = i;
      while (j > 0 && nearer(gg(s, a, v), gg(s, a, s->nbr[a][j - 1]))) {
        s->nbr[a][j] = s->nbr[a][j - 1];
        j--;
      }
      s->nbr[a][j] = v;
    }
  }
  s->cap = malloc((size_t)(sys->nlinks_total + 1) * sizeof(double));
  s->left = malloc((size_t)(sys->nlinks_total + 1) * sizeof(double));
  cands = malloc((size_t)(ngpus * ngpus * max_channels + 1) * sizeof(double));
  if (!s->cap || !s->left || !cands) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for the channel search");
    goto out;
  }
  int nc = 0;
  for (int a = 0; a < ngpus; a++)
    for (int b = 0; b < ngpus; b++) {
      double v = a == b ? 0 : gg(s, a, b)->bw;
      if (ngpus == 1) v = 1; /* a single GPU: one channel, no ring edge */
      if (v > 0 && (a != b || ngpus == 1))
        for (int k = 1; k <= max_channels; k++) cands[nc++] = v / k;
    }
  qsort(cands, (size_t)nc, sizeof(double), cmp_desc);
  /* What each GPU can send at most: no more than that many channels of B. */
  double min_out = -1;
  for (int i = 0; i < ngpus; i++) {
    const topo_node_t *x = &sys->nodes[sys->gpus[s->g[i]]];
    double o = 0;
    for (int l = 0; l < x->nlinks; l++) o += x->links[l].bw;
    if (min_out < 0 || o < min_out) min_out = o;
  }
  double best_score = 0, best_b = 0;
  double prev = -1;
  for (int i = 0; i < nc; i++) {
    double B = cands[i];
    if (fabs(B - prev) <= EPS * B) continue;
    prev = B;
    if (best_score >= B * max_channels * (1 - EPS)) break; /* nothing lower can win */
    double most = floor(min_out / B + EPS);
    if (most > max_channels) most = max_channels;
    if (ngpus > 1 && most * B <= best_score * (1 + EPS)) continue;
    int nch = greedy(s, B, max_channels, tmp);
    if (nch * B > best_score * (1 + EPS)) {
      best_score = nch * B;
      best_b = B;
      *best = *tmp;
    }
  }
  /* A job across hosts, NICs beside the GPUs, some nearer some GPUs than
   * others (a rail-optimised node; where every GPU is as near every NIC, no
   * NIC is one GPU's own and the split below decides): every one carries a
   * channel. */
  int spread = 0, own = 0;
  for (int u = 0; rails && best_kind <= TOPO_PATH_PHB && u < s->nusable; u++)
    for (int i = 1; i < ngpus; i++) {
      const topo_path_t *p = topo_path_gn(sys, s->g[i], s->usable[u]), *q = topo_path_gn(sys, s->g[0], s->usable[u]);
      own |= nearer(p, q) || nearer(q, p);
    }
  if (best->nchannels > 0 && s->nusable > best->nchannels && s->nusable >= 2 && own) {
    spread = spread_over_nics(s, cands, nc, best_score, max_channels, best, tmp);
    if (s->nusable > max_channels)
      INFO(TOPO, "channel search: %d NICs beside the GPUs, at most %d channels: %d of them carry none", s->nusable,
           max_channels, s->nusable - max_channels);
    else if (!spread)
      INFO(TOPO, "channel search: no ring fits %d channels, one per NIC beside the GPUs: %d of them carry none",
           s->nusable, s->nusable - best->nchannels);
  }
  if (!spread && best->nchannels > 0 && s->nusable > best->nchannels && ngpus > 1)
    split_over_nics(s, best_b, max_channels, best, tmp);
  if (ngpus == 1 && best->nchannels == 1) best->ch[0].bw = 0;
  *out = *best;
  if (s->steps > STEP_BUDGET_TOTAL) INFO(TOPO, "channel search: step budget spent, result may not be the best");
out:
  if (s) {
    free(s->cap);
    free(s->left);
  }
  free(s);
  free(best);
  free(tmp);
  free(cands);
  return res;
}

xcclResult_t topo_search_channels(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                  topo_channels_t *out) {
  return topo_search_channels_for(sys, gpus, ngpus, max_channels, 0, out);
}

char *topo_channels_describe(const topo_system_t *sys, const topo_channels_t *chs, char *buf, size_t len) {
  size_t o = 0;
  if (len == 0) return buf;
  buf[0] = 0;
#define PUT(...)                                                 \
  do {                                                           \
    if (o < len) {                                               \
      int n_ = snprintf(buf + o, len - o, __VA_ARGS__);          \
      if (n_ > 0) o = o + (size_t)n_ < len ? o + (size_t)n_ : len; \
    }                                                            \
  } while (0)
  if (chs->nchannels == 0) {
    PUT("no channels (no GPU)");
    return buf;
  }
  topo_path_type_t worst = TOPO_PATH_SAME;
  for (int c = 0; c < chs->nchannels; c++)
    if (chs->ch[c].worst > worst) worst = chs->ch[c].worst;
  PUT("%d channel%s x %.1f GB/s (%s)", chs->nchannels, chs->nchannels > 1 ? "s" : "", chs->ch[0].bw,
      topo_path_name(worst));
  for (int c = 0; c < chs->nchannels; c++) {
    PUT("%s [", c ? ";" : ":");
    for (int i = 0; i < chs->ch[c].ngpus; i++) PUT("%s%d", i ? " " : "", chs->ch[c].gpus[i]);
    PUT("]");
    if (chs->ch[c].nic >= 0) PUT(" nic %s", topo_nic_name(sys, chs->ch[c].nic));
  }
#undef PUT
  return buf;
}

/* ---- communicator helpers ---- */

typedef struct {
  int rank, pkg, numa;
} numa_key_t;

static int cmp_numa_key(const void *pa, const void *pb) {
  const numa_key_t *a = pa, *b = pb;
  /* unknown domains (-1) after the known ones */
  unsigned ap = (unsigned)a->pkg, bp = (unsigned)b->pkg, an = (unsigned)a->numa, bn = (unsigned)b->numa;
  if (ap != bp) return ap < bp ? -1 : 1;
  if (an != bn) return an < bn ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

xcclResult_t topo_local_ring_order(const topo_system_t *sys, int nlocal, const int *numa_of_rank,
                                   const int *gpu_of_rank, int *order_out, char *desc, size_t desclen) {
  if (nlocal < 1 || !order_out)
    return err_set(xcclInvalidArgument, LOG_TOPO, "topo_local_ring_order: %d ranks or no output", nlocal);
  int with_gpus = sys && gpu_of_rank;
  for (int r = 0; with_gpus && r < nlocal; r++)
    if (gpu_of_rank[r] < 0 || gpu_of_rank[r] >= sys->ngpus) with_gpus = 0;
  if (with_gpus) {
    int gl[TOPO_SEARCH_MAX_GPUS], ng = 0;
    for (int g = 0; g < sys->ngpus; g++) {
      int used = 0;
      for (int r = 0; r < nlocal; r++) used |= gpu_of_rank[r] == g;
      if (used && ng < TOPO_SEARCH_MAX_GPUS) gl[ng++] = g;
    }
    topo_channels_t *chs = malloc(sizeof(*chs));
    if (!chs) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
    xcclResult_t res = topo_channels_choose(sys, gl, ng, 0, chs);
    if (res == xcclSuccess && chs->nchannels > 0) {
      int k = 0;
      for (int i = 0; i < chs->ch[0].ngpus; i++)
        for (int r = 0; r < nlocal; r++)
          if (gpu_of_rank[r] == chs->ch[0].gpus[i]) order_out[k++] = r;
      if (desc) {
        int o = snprintf(desc, desclen, "ring of %d local ranks by GPU channel search: ", nlocal);
        if (o >= 0 && (size_t)o < desclen) topo_channels_describe(sys, chs, desc + o, desclen - (size_t)o);
      }
      free(chs);
      return xcclSuccess;
    }
    free(chs);
    if (res != xcclSuccess) return res;
  }
  numa_key_t *keys = malloc((size_t)nlocal * sizeof(*keys));
  if (!keys) return err_set(xcclSystemError, LOG_TOPO, "out of memory");
  for (int r = 0; r < nlocal; r++) {
    int numa = numa_of_rank ? numa_of_rank[r] : -1;
    int cpu = sys && numa >= 0 ? topo_graph_find_cpu(sys, numa) : -1;
    int pkg = cpu >= 0 && sys->nodes[cpu].package >= 0 ? sys->nodes[cpu].package : numa;
    keys[r] = (numa_key_t){r, pkg, numa};
  }
  qsort(keys, (size_t)nlocal, sizeof(*keys), cmp_numa_key);
  int crossings = 0;
  for (int i = 0; i < nlocal; i++) {
    order_out[i] = keys[i].rank;
    if (nlocal > 1 && keys[i].pkg != keys[(i + 1) % nlocal].pkg) crossings++;
  }
  if (desc) {
    size_t o = 0;
    int n = snprintf(desc, desclen, "ring of %d local ranks by NUMA domain (%d socket crossings):", nlocal, crossings);
    o = n > 0 && (size_t)n < desclen ? (size_t)n : desclen;
    for (int i = 0; i < nlocal && o < desclen; i++) {
      n = snprintf(desc + o, desclen - o, " %d@%d", keys[i].rank, keys[i].numa);
      o = n > 0 && o + (size_t)n < desclen ? o + (size_t)n : desclen;
    }
  }
  free(keys);
  return xcclSuccess;
}
