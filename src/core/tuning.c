/*
 * tuning.c — XCCL_ALGO, the site the algorithms are priced at (its hosts
 * and links), and the choice among the algorithms of algo_table by their
 * price (cost.h).
 */
#include "tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "cost.h"
#include "error.h"
#include "log.h"

static const char *const coll_names[COLL_NKINDS] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                                         "reduce",    "alltoall"};

static int algo_lookup(const char *name) {
  for (int a = 0; a < ALGO_COUNT; a++)
    if (strcasecmp(name, algo_table[a]->name) == 0) return a;
  return -1;
}

const char *tuning_coll_name(coll_kind_t coll) { return (unsigned)coll < COLL_NKINDS ? coll_names[coll] : "?"; }

int tuning_coll_lookup(const char *name) {
  for (int c = 0; c < COLL_NKINDS; c++)
    if (strcasecmp(name, coll_names[c]) == 0) return c;
  return -1;
}

/* "ring, rd": the algorithms' names, for messages. */
static void algo_list(char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int a = 0; a < ALGO_COUNT && n < len; a++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s", a ? ", " : "", algo_table[a]->name);
}

/* "allreduce, broadcast": the collectives a serves (every one when a < 0). */
static void coll_list(int a, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int c = 0; c < COLL_NKINDS && n < len; c++)
    if (a < 0 || algo_serves((algo_t)a, (coll_kind_t)c))
      n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", coll_names[c]);
}

xcclResult_t tuning_parse(const char *text, int *forced) {
  int out[COLL_NKINDS];
  for (int c = 0; c < COLL_NKINDS; c++) out[c] = -1;
  char buf[256], list[128];
  snprintf(buf, sizeof(buf), "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    const char *an = colon ? colon + 1 : tok;
    int a = algo_lookup(an);
    if (a < 0) {
      algo_list(list, sizeof(list));
      return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: '%s' is not an algorithm (%s)", text, an, list);
    }
    if (colon) {
      *colon = '\0';
      int c = tuning_coll_lookup(tok);
      if (c < 0) {
        coll_list(-1, list, sizeof(list));
        return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: '%s' is not a collective with algorithms (%s)",
                       text, tok, list);
      }
      if (!algo_serves((algo_t)a, (coll_kind_t)c)) {
        coll_list(a, list, sizeof(list));
        return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: %s does not serve %s (it serves %s)", text,
                       algo_table[a]->name, coll_names[c], list);
      }
      out[c] = a;
    } else {
      for (int c = 0; c < COLL_NKINDS; c++)
        if (algo_serves((algo_t)a, (coll_kind_t)c)) out[c] = a;
    }
  }
  memcpy(forced, out, sizeof(out));
  return xcclSuccess;
}

algo_t tuning_pick(const int *forced, coll_kind_t coll, size_t bytes, int nranks, size_t slot,
                   const algo_site_t *site) {
  /* Forced, an algorithm with a size limit (algo_desc_t.max_bytes) runs what
   * it can hold; the rest are chosen. */
  if (forced[coll] >= 0 && (!algo_table[forced[coll]]->max_bytes || bytes <= algo_table[forced[coll]]->max_bytes))
    return (algo_t)forced[coll];
  algo_t best = ALGO_RING;
  double best_cost = HUGE_VAL;
  for (int a = 0; a < ALGO_COUNT; a++) {
    if (!algo_serves((algo_t)a, coll)) continue;
    if (nranks < 2) return (algo_t)a; /* a copy: the first that serves coll */
    algo_work_t w;
    cost_work((algo_t)a, coll, bytes, nranks, slot, site, &w);
    if (w.ok && w.forced) return (algo_t)a;
    double c = cost_price(&w, site);
    if (c < best_cost) best = (algo_t)a, best_cost = c;
  }
  return best;
}

/* ---- The links ---- */

/*
 * Measured on the development machine (2 shared cores) with xccl-perf on 2
 * ranks, sendrecv and allreduce, 20 iterations, -c 0:
 *  - shm (XCCL_TRANSPORT=shm): 8 B sendrecv 0.6 us, 8 B ring all-reduce
 *    (2 steps) 0.4 us: 0.5 us per step; 8 MiB sendrecv 11.8 GB/s, 8 MiB
 *    all-reduce 7.5 GB/s bus bandwidth: 7 GB/s.
 *  - sockets on loopback (XCCL_TRANSPORT=socket): 8 B sendrecv 35 us; 512 KiB
 *    1.9 GB/s, 8 MiB 1.3 GB/s: the figures of algo.h's ALGO_ALPHA_S (30 us)
 *    and ALGO_BETA_BPS (1.5 GB/s).
 * Real networks differ; these decide orders of magnitude, not exact times.
 */
const algo_link_t tuning_links[TUNING_NLINKS] = {
    [TUNING_LINK_SHM] = {.alpha_s = 0.5e-6, .beta_bps = 7e9},
    [TUNING_LINK_NET] = {.alpha_s = ALGO_ALPHA_S, .beta_bps = ALGO_BETA_BPS},
};

/*
 * Ranks taking turns on too few cores. With f = ranks / cores > 1 on a
 * host, a step waits until the scheduler hands the core to the rank it
 * waits for (waiters yield: kern_env_t's yield, from cpu_share), and each rank
 * copies at 1/f of a core. Every link of the site is priced so:
 *   alpha + (f - 1) TUNING_HANDOVER_S,   beta / f.
 * TUNING_HANDOVER_S (tuning.h) from the same 2 cores, 8 B all-reduce with rd forced
 * (xccl-run -n K xccl-perf allreduce -b 8 -e 8 -n 300 --algo rd), time
 * per step less the 0.5 us of a step on its own cores:
 *   ranks (f)     3 (1.5)  4 (2)  5 (2.5)  6 (3)   8 (4)
 *   us per step   4        12     8        10-13   22
 * which (f - 1) x 8 us follows within a factor of 1.5. With it the tuner
 * picks what ran fastest at 4 and 8 ranks where the plain table did not:
 * rd at 16-32 KiB, rab for reduce-scatter at 1 MiB.
 */
static void site_share_cores(algo_site_t *site, double f) {
  site->cpu_share = f;
  if (f <= 1) return;
  for (int c = 0; c < ALGO_NLINKS; c++) tuning_share_link(f, &site->link[c].alpha_s, &site->link[c].beta_bps);
  INFO(INIT, "cost model: %.2g ranks per core on the most crowded host: each step priced %.1f us more, "
       "bandwidths / %.2g", f, (f - 1) * TUNING_HANDOVER_S * 1e6, f);
}

xcclResult_t tuning_hier_inter(unsigned *inter_p) {
  const char *v = config_str(CFG_HIER_INTER);
  unsigned inter = strcasecmp(v, "ring") == 0                ? HIER_INTER_RING
                   : strcasecmp(v, "tree") == 0              ? HIER_INTER_TREE
                   : !*v || strcasecmp(v, "auto") == 0 ? HIER_INTER_RING | HIER_INTER_TREE
                                                             : 0;
  if (!inter) return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_HIER_INTER=%s: not ring, tree or auto", v);
  *inter_p = inter;
  return xcclSuccess;
}

static algo_cpus_t cpus_of(const void *cpus, size_t stride, int rank) {
  algo_cpus_t c;
  memcpy(&c, (const char *)cpus + (size_t)rank * stride, sizeof(c));
  return c;
}

/* The most ranks per core on any host of l: a host's ranks over the CPUs
 * they may use, counting each distinct (first, count) once (every rank
 * computes the same from the peer info); 1 where a count is unknown. */
static double hosts_cpu_share(const hier_layout_t *l, const void *cpus, size_t stride) {
  double f = 1;
  for (int h = 0; h < l->nhosts; h++) {
    const int *ranks = &l->host_ranks[l->host_first[h]];
    int g = hier_host_size(l, h);
    long total = 0;
    for (int i = 0; i < g && total >= 0; i++) {
      algo_cpus_t c = cpus_of(cpus, stride, ranks[i]);
      int seen = 0;
      for (int j = 0; j < i && !seen; j++) {
        algo_cpus_t d = cpus_of(cpus, stride, ranks[j]);
        seen = d.first == c.first && d.count == c.count;
      }
      total = c.count <= 0 ? -1 : total + (seen ? 0 : c.count);
    }
    if (total > 0 && (double)g / (double)total > f) f = (double)g / (double)total;
  }
  return f;
}

xcclResult_t tuning_site_hosts(algo_site_t *site, const hier_layout_t *l, const void *cpus, size_t stride,
                               int shm_used, const int *forced) {
  unsigned inter;
  TRY(tuning_hier_inter(&inter));
  int nranks = l->nranks, lmin = nranks, lmax = 0, owned = 0, peers = 0, worst = 0;
  double frac = 0;
  for (int h = 0; h < l->nhosts; h++) {
    int g = hier_host_size(l, h);
    lmin = g < lmin ? g : lmin, lmax = g > lmax ? g : lmax;
  }
  for (int r = 0; r < nranks; r++) {
    int o = hier_owned(l, r), g = hier_host_size(l, l->host_of[r]);
    double f = (double)(g - 1) * o / l->shards;
    owned = o > owned ? o : owned, frac = f > frac ? f : frac;
  }
  /* The most connections a rank needs for hier; under auto, where rings and
   * trees together need too many but rings alone do not, rings alone. */
  for (int pass = 0; pass < 2; pass++) {
    peers = 0;
    for (int r = 0; r < nranks; r++) {
      int p = host_hier_partners(l, r, inter, NULL, 0);
      if (p > peers) peers = p, worst = r;
    }
    if (peers <= ALGO_MAX_PEERS || inter != (HIER_INTER_RING | HIER_INTER_TREE)) break;
    inter = HIER_INTER_RING;
  }
  if (peers > ALGO_MAX_PEERS && forced[COLL_ALLREDUCE] == ALGO_HIER)
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "XCCL_ALGO forces hier, but rank %d would need %d connections for it (at most %d: %d hosts, "
                   "%d to %d ranks per host, XCCL_HIER_INTER=%s)",
                   worst, peers, ALGO_MAX_PEERS, l->nhosts, lmin, lmax, config_str(CFG_HIER_INTER));

  int blocked = l->nhosts >= 2 && lmin == lmax;
  for (int r = 0; r < nranks && blocked; r++) blocked = l->host_of[r] == r / lmax;
  site->blocked = blocked;
  site->nhosts = l->nhosts;
  site->local_min = lmin, site->local_max = lmax;
  site->hier_owned = owned;
  site->hier_local_frac = frac;
  site->hier_peers_ok = peers <= ALGO_MAX_PEERS;
  site->hier_inter = inter;
  site->link[ALGO_LINK_LOCAL] = tuning_links[shm_used ? TUNING_LINK_SHM : TUNING_LINK_NET];
  site->link[ALGO_LINK_NET] = tuning_links[TUNING_LINK_NET];
  site->layout = l;
  site_share_cores(site, cpus ? hosts_cpu_share(l, cpus, stride) : 1);
  return xcclSuccess;
}
