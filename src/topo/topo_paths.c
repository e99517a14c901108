/*
 * topo_paths.c — widest-then-shortest paths, and how each is classified.
 *
 * The widest path with the fewest hops is found exactly by trying the
 * distinct link bandwidths from the largest down: at threshold t, a breadth
 * first search over the links of at least t reaches, in fewest hops, every
 * target whose widest path is t. Graphs here have tens to hundreds of nodes
 * and a handful of distinct bandwidths, so this costs microseconds.
 */
#include "topo_paths.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

const char *topo_path_name(topo_path_type_t t) {
  static const char *names[] = {"X", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET", "-"};
  return t <= TOPO_PATH_NONE ? names[t] : "?";
}

static void free_paths(topo_path_t *p, int n) {
  if (!p) return;
  for (int i = 0; i < n; i++) free(p[i].links);
  free(p);
}

void topo_paths_free(topo_paths_t *p) {
  if (!p) return;
  free_paths(p->gg, p->ngpus * p->ngpus);
  free_paths(p->gn, p->ngpus * p->nnics);
  free_paths(p->ng, p->nnics * p->ngpus);
  free(p->link_bw);
  free(p->link_from);
  free(p->link_to);
  free(p->link_type);
  free(p);
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

typedef struct {
  int *dist, *prev, *prev_gid, *queue;
  double *thresholds;
  int nthresholds;
} bfs_scratch_t;

/* Classifies the path by its links: the worst thing it goes through. */
static void classify(const topo_system_t *sys, const topo_paths_t *P, topo_path_t *path) {
  topo_path_type_t t = TOPO_PATH_NVL;
  int npci = 0;
  path->nsys = 0;
  path->uses_pci = 0;
  double bw = 1e30;
  for (int h = 0; h < path->hops; h++) {
    int gid = path->links[h];
    if (P->link_bw[gid] < bw) bw = P->link_bw[gid];
    topo_link_type_t lt = P->link_type[gid];
    if (lt == TOPO_LINK_SYS) {
      path->nsys++;
      if (t < TOPO_PATH_SYS) t = TOPO_PATH_SYS;
    } else if (lt == TOPO_LINK_SOC && t < TOPO_PATH_PHB) {
      t = TOPO_PATH_PHB;
    } else if (lt == TOPO_LINK_NET) {
      t = TOPO_PATH_NET;
    } else if (lt == TOPO_LINK_PCI) {
      path->uses_pci = 1;
    }
    if (h > 0) { /* the node this link leaves from is an intermediate one */
      const topo_node_t *mid = &sys->nodes[P->link_from[gid]];
      if (mid->type == TOPO_CPU && t < TOPO_PATH_PHB) t = TOPO_PATH_PHB;
      if (mid->type == TOPO_PCI) npci++;
      if (mid->type == TOPO_GPU && t < TOPO_PATH_NVB) t = TOPO_PATH_NVB;
    }
  }
  if (npci == 1 && t < TOPO_PATH_PIX) t = TOPO_PATH_PIX;
  if (npci > 1 && t < TOPO_PATH_PXB) t = TOPO_PATH_PXB;
  path->type = t;
  path->bw = path->hops ? bw : 0;
}

/* From node src, paths to every node of type want (targets[i] = node index),
 * written to out[i * stride]. relay: a GPU may be passed between NVLinks. */
static xcclResult_t bfs_from(const topo_system_t *sys, const topo_paths_t *P, bfs_scratch_t *s,
                             int src, topo_node_type_t want, int relay, const int *targets,
                             int ntargets, topo_path_t *out, int stride) {
  int nstates = 2 * sys->nnodes;
  int left = 0;
  for (int i = 0; i < ntargets; i++) {
    topo_path_t *p = &out[i * stride];
    memset(p, 0, sizeof(*p));
    p->type = TOPO_PATH_NONE;
    if (targets[i] == src) p->type = TOPO_PATH_SAME;
    else left++;
  }
  for (int ti = 0; ti < s->nthresholds && left > 0; ti++) {
    double t = s->thresholds[ti];
    for (int i = 0; i < nstates; i++) s->dist[i] = -1;
    int head = 0, tail = 0;
    s->dist[2 * src] = 0;
    s->prev[2 * src] = -1;
    s->queue[tail++] = 2 * src;
    while (head < tail) {
      int st = s->queue[head++], u = st / 2, f = st % 2;
      const topo_node_t *n = &sys->nodes[u];
      int only_nvl = 0;
      if (u != src) {
        if (n->type == TOPO_NIC || n->type == TOPO_NET) continue;
        if (n->type == TOPO_GPU) {
          if (!(relay && f)) continue;
          only_nvl = 1;
        }
      }
      for (int l = 0; l < n->nlinks; l++) {
        const topo_link_t *lk = &n->links[l];
        if (lk->bw < t || lk->type == TOPO_LINK_NET) continue;
        if (only_nvl && lk->type != TOPO_LINK_NVL) continue;
        int v = lk->peer;
        int vf = sys->nodes[v].type == TOPO_GPU && lk->type == TOPO_LINK_NVL;
        int vs = 2 * v + vf;
        if (s->dist[vs] >= 0 || v == src) continue;
        s->dist[vs] = s->dist[st] + 1;
        s->prev[vs] = st;
        s->prev_gid[vs] = lk->gid;
        s->queue[tail++] = vs;
      }
    }
    for (int i = 0; i < ntargets; i++) {
      topo_path_t *p = &out[i * stride];
      int v = targets[i];
      if (p->type != TOPO_PATH_NONE || sys->nodes[v].type != want) continue;
      int best = -1;
      for (int f = 0; f < 2; f++) {
        int vs = 2 * v + f;
        if (s->dist[vs] >= 0 && (best < 0 || s->dist[vs] < s->dist[best])) best = vs;
      }
      if (best < 0) continue;
      p->hops = s->dist[best];
      p->links = malloc((size_t)p->hops * sizeof(int));
      if (!p->links) return err_set(xcclSystemError, LOG_TOPO, "out of memory for paths");
      for (int h = p->hops - 1, st = best; h >= 0; h--, st = s->prev[st]) p->links[h] = s->prev_gid[st];
      classify(sys, P, p);
      left--;
    }
  }
  return xcclSuccess;
}

xcclResult_t topo_paths_compute(topo_system_t *sys) {
  topo_paths_t *P = calloc(1, sizeof(*P));
  if (!P) return err_set(xcclSystemError, LOG_TOPO, "out of memory for paths");
  xcclResult_t res = xcclSuccess;
  int G = sys->ngpus, N = sys->nnics, L = sys->nlinks_total;
  bfs_scratch_t s = {0};
  P->ngpus = G;
  P->nnics = N;
  P->gg = calloc((size_t)(G * G + 1), sizeof(topo_path_t));
  P->gn = calloc((size_t)(G * N + 1), sizeof(topo_path_t));
  P->ng = calloc((size_t)(N * G + 1), sizeof(topo_path_t));
  P->link_bw = malloc((size_t)(L + 1) * sizeof(double));
  P->link_from = malloc((size_t)(L + 1) * sizeof(int));
  P->link_to = malloc((size_t)(L + 1) * sizeof(int));
  P->link_type = malloc((size_t)(L + 1) * sizeof(topo_link_type_t));
  s.dist = malloc((size_t)(2 * sys->nnodes + 1) * sizeof(int));
  s.prev = malloc((size_t)(2 * sys->nnodes + 1) * sizeof(int));
  s.prev_gid = malloc((size_t)(2 * sys->nnodes + 1) * sizeof(int));
  s.queue = malloc((size_t)(2 * sys->nnodes + 1) * sizeof(int));
  s.thresholds = malloc((size_t)(L + 1) * sizeof(double));
  if (!P->gg || !P->gn || !P->ng || !P->link_bw || !P->link_from || !P->link_to || !P->link_type ||
      !s.dist || !s.prev || !s.prev_gid || !s.queue || !s.thresholds) {
    res = err_set(xcclSystemError, LOG_TOPO, "out of memory for paths of %d nodes", sys->nnodes);
    goto out;
  }
  for (int i = 0; i < sys->nnodes; i++)
    for (int l = 0; l < sys->nodes[i].nlinks; l++) {
      const topo_link_t *lk = &sys->nodes[i].links[l];
      P->link_bw[lk->gid] = lk->bw;
      P->link_from[lk->gid] = i;
      P->link_to[lk->gid] = lk->peer;
      P->link_type[lk->gid] = lk->type;
      s.thresholds[lk->gid] = lk->bw;
    }
  qsort(s.thresholds, (size_t)L, sizeof(double), cmp_desc);
  for (int i = 0; i < L; i++)
    if (s.nthresholds == 0 || s.thresholds[i] != s.thresholds[s.nthresholds - 1])
      s.thresholds[s.nthresholds++] = s.thresholds[i];

  for (int g = 0; g < G && res == xcclSuccess; g++) {
    res = bfs_from(sys, P, &s, sys->gpus[g], TOPO_GPU, 1, sys->gpus, G, &P->gg[g * G], 1);
    if (res == xcclSuccess && N)
      res = bfs_from(sys, P, &s, sys->gpus[g], TOPO_NIC, 0, sys->nics, N, &P->gn[g * N], 1);
  }
  for (int n = 0; n < N && res == xcclSuccess; n++)
    res = bfs_from(sys, P, &s, sys->nics[n], TOPO_GPU, 0, sys->gpus, G, &P->ng[n * G], 1);
out:
  free(s.dist);
  free(s.prev);
  free(s.prev_gid);
  free(s.queue);
  free(s.thresholds);
  if (res != xcclSuccess) {
    topo_paths_free(P);
    return res;
  }
  sys->paths = P;
  return xcclSuccess;
}
