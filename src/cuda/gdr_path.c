/*
 * gdr_path.c — the GPUDirect RDMA decision (gdr_path.h).
 */
#include "gdr_path.h"

#include <stdio.h>
#include <strings.h>

#include "net_select.h"

static const struct {
  const char *word;
  int level;
} gdr_levels[] = {{"LOC", GDR_LEVEL_LOC},
                  {"PIX", TOPO_PATH_PIX},
                  {"PXB", TOPO_PATH_PXB},
                  {"PHB", TOPO_PATH_PHB},
                  {"SYS", TOPO_PATH_SYS}};

static const char *level_word(int level) {
  for (size_t i = 0; i < sizeof(gdr_levels) / sizeof(gdr_levels[0]); i++)
    if (gdr_levels[i].level == level) return gdr_levels[i].word;
  return "?";
}

int gdr_level_parse(const char *word, int *level_p) {
  for (size_t i = 0; i < sizeof(gdr_levels) / sizeof(gdr_levels[0]); i++)
    if (strcasecmp(word, gdr_levels[i].word) == 0) return *level_p = gdr_levels[i].level, 0;
  return -1;
}

int gdr_allowed(const topo_system_t *sys, const char *gpu_busid, const net_props_t *p, int level, char *why,
                size_t len) {
  if (level == GDR_LEVEL_LOC) return snprintf(why, len, "XCCL_NET_GDR_LEVEL=LOC"), 0;
  if (!(p->ptr_support & NET_PTR_CUDA))
    return snprintf(why, len, "net device %s cannot read or write GPU memory", p->name), 0;
  int g = sys ? topo_gpu_by_busid(sys, gpu_busid) : -1, n = net_topo_nic(sys, p);
  if (g < 0 || n < 0) {
    int yes = level >= TOPO_PATH_SYS;
    snprintf(why, len, "the topology does not show %s %s%s", g < 0 ? "GPU" : "NIC", g < 0 ? gpu_busid : p->name,
             yes ? " (XCCL_NET_GDR_LEVEL=SYS allows it anyway)" : " (XCCL_NET_GDR_LEVEL=SYS would allow it)");
    return yes;
  }
  topo_path_type_t t = topo_gpu_nic_path(sys, g, n, NULL);
  int yes = t != TOPO_PATH_NET && t != TOPO_PATH_NONE && (int)t <= level;
  snprintf(why, len, "GPU %s and %s are %s apart, %s XCCL_NET_GDR_LEVEL=%s", gpu_busid, p->name, topo_path_name(t),
           yes ? "within" : "farther than", level_word(level));
  return yes;
}
