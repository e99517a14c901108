/*
 * topo_paths.h — best paths between GPUs and from GPUs to NICs (internal).
 *
 * For every source (each GPU, each NIC) and every target GPU or NIC, the
 * widest path (largest bottleneck bandwidth), and among the widest the one
 * with fewest hops; ties go to the first found walking links in the order
 * they were added, so the result is deterministic. A path may pass through
 * a GPU only between two NVLinks (and only between GPUs), never through a
 * NIC or the network node.
 */
#ifndef XCCL_TOPO_PATHS_H
#define XCCL_TOPO_PATHS_H

#include "topo_graph.h"

typedef struct {
  topo_path_type_t type;
  double bw;  /* GB/s, bottleneck; 0 for SAME and NONE */
  int hops;
  int *links; /* the directed links' gids, hops of them */
  int nsys;   /* inter-socket links on it */
  int uses_pci;
} topo_path_t;

typedef struct topo_paths {
  int ngpus, nnics;
  topo_path_t *gg; /* [a * ngpus + b]: GPU a -> GPU b */
  topo_path_t *gn; /* [g * nnics + n]: GPU g -> NIC n */
  topo_path_t *ng; /* [n * ngpus + g]: NIC n -> GPU g */
  double *link_bw; /* by gid */
  int *link_from;  /* by gid: source node */
  int *link_to;    /* by gid: destination node */
  topo_link_type_t *link_type;
} topo_paths_t;

xcclResult_t topo_paths_compute(topo_system_t *sys);
void topo_paths_free(topo_paths_t *p);

static inline const topo_path_t *topo_path_gg(const topo_system_t *sys, int a, int b) {
  return &sys->paths->gg[a * sys->paths->ngpus + b];
}
static inline const topo_path_t *topo_path_gn(const topo_system_t *sys, int g, int n) {
  return &sys->paths->gn[g * sys->paths->nnics + n];
}
static inline const topo_path_t *topo_path_ng(const topo_system_t *sys, int n, int g) {
  return &sys->paths->ng[n * sys->paths->ngpus + g];
}

#endif
