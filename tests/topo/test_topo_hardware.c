/*
 * test_topo_hardware.c DATA_DIR — what the hardware of each saved machine
 * implies, checked on the paths and channels xccl computes:
 *  - NVSwitch machines (HGX A100/H100, B200, DGX-2): every ring edge is an
 *    NVLink path that touches no PCI link, so every ring's bottleneck is NVLink;
 *  - PCIe-only machines with GPUs on two sockets: every ring crosses the
 *    inter-socket link exactly twice;
 *  - a GPU whose PCI switch also holds NICs has one of those as nearest NIC;
 *  - a channel's NIC is nearest its first GPU of all the ring's GPUs, and its
 *    last GPU is the nearest of the others;
 *  - channels never give a link more than its bandwidth (checked by summing
 *    what every ring edge takes on every link).
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"
#include "topo_graph.h"
#include "topo_paths.h"

static int switch_of(const topo_system_t *sys, int node) {
  int p = sys->nodes[node].parent;
  return p >= 0 && sys->nodes[p].type == TOPO_PCI ? p : -1;
}

static int under(const topo_system_t *sys, int node, int ancestor) {
  for (int p = sys->nodes[node].parent, s = 0; p >= 0 && s < sys->nnodes; p = sys->nodes[p].parent, s++)
    if (p == ancestor) return 1;
  return 0;
}

static void check_machine(const fixture_t *fx) {
  topo_system_t *sys = NULL;
  if (topo_system_load_file(fx->path, &sys) != xcclSuccess) {
    CHECK(0, "%s: %s", fx->file, err_last());
    return;
  }
  topo_channels_t chs;
  CHECK(topo_search_channels(sys, NULL, 0, 16, &chs) == xcclSuccess, "%s: search failed: %s", fx->file, err_last());
  int G = topo_ngpus(sys);
  CHECK(G == 0 || chs.nchannels >= 1, "%s: %d GPUs but no channel", fx->file, G);
  int nvl_between_gpus = 0, packages[2] = {-1, -1}, npk = 0, sockets_with_gpus = 0;
  for (int a = 0; a < G; a++)
    for (int b = 0; b < G; b++) nvl_between_gpus |= a != b && topo_gpu_gpu_path(sys, a, b, NULL) <= TOPO_PATH_NVB;
  /* Sockets: packages when known, else NUMA domains. */
  int cpus_seen[TOPO_MAX_DEVICES], ncs = 0;
  for (int g = 0; g < G; g++) {
    int cpu = topo_graph_cpu_of(sys, sys->gpus[g]);
    int key = sys->nodes[cpu].package >= 0 ? sys->nodes[cpu].package : 1000 + sys->nodes[cpu].numa;
    int seen = 0;
    for (int i = 0; i < ncs; i++) seen |= cpus_seen[i] == key;
    if (!seen && ncs < TOPO_MAX_DEVICES) cpus_seen[ncs++] = key;
  }
  sockets_with_gpus = ncs;
  (void)packages, (void)npk;

  for (int c = 0; c < chs.nchannels; c++) {
    const topo_channel_t *ch = &chs.ch[c];
    CHECK(ch->ngpus == G, "%s: channel %d has %d GPUs of %d", fx->file, c, ch->ngpus, G);
    int crossings = 0;
    for (int i = 0; i < ch->ngpus && G > 1; i++) {
      int a = ch->gpus[i], b = ch->gpus[(i + 1) % ch->ngpus];
      crossings += topo_gpu_gpu_sys_hops(sys, a, b);
      if (fx->nvswitch)
        CHECK(topo_gpu_gpu_path(sys, a, b, NULL) == TOPO_PATH_NVL && !topo_gpu_gpu_uses_pci(sys, a, b),
              "%s: channel %d edge GPU%d->GPU%d is %s, not an NVLink path", fx->file, c, a, b,
              topo_path_name(topo_gpu_gpu_path(sys, a, b, NULL)));
    }
    if (fx->nvswitch && G > 1) CHECK(ch->worst == TOPO_PATH_NVL, "%s: channel %d bottleneck %s", fx->file, c, topo_path_name(ch->worst));
    if (!nvl_between_gpus && sockets_with_gpus == 2 && G > 1)
      CHECK(crossings == 2, "%s: channel %d crosses the socket link %d times, want 2", fx->file, c, crossings);
    if (ch->nic >= 0 && G > 1) {
      int first = ch->gpus[0], last = ch->gpus[ch->ngpus - 1];
      topo_path_type_t best = TOPO_PATH_NONE, best_other = TOPO_PATH_NONE;
      for (int i = 0; i < ch->ngpus; i++) {
        topo_path_type_t t = topo_gpu_nic_path(sys, ch->gpus[i], ch->nic, NULL);
        if (t < best) best = t;
        if (i > 0 && t < best_other) best_other = t;
      }
      CHECK(topo_gpu_nic_path(sys, first, ch->nic, NULL) == best, "%s: channel %d NIC %s is not nearest its first GPU%d",
            fx->file, c, topo_nic_name(sys, ch->nic), first);
      CHECK(topo_gpu_nic_path(sys, last, ch->nic, NULL) == best_other,
            "%s: channel %d NIC %s: last GPU%d is not the nearest of the others", fx->file, c, topo_nic_name(sys, ch->nic), last);
    }
  }
  /* No link carries more than it can. */
  double *load = calloc((size_t)sys->nlinks_total + 1, sizeof(double));
  for (int c = 0; load && c < chs.nchannels; c++)
    for (int i = 0; i < chs.ch[c].ngpus && chs.ch[c].ngpus > 1; i++) {
      const topo_path_t *p = topo_path_gg(sys, chs.ch[c].gpus[i], chs.ch[c].gpus[(i + 1) % chs.ch[c].ngpus]);
      for (int h = 0; h < p->hops; h++) load[p->links[h]] += chs.ch[c].bw;
    }
  for (int l = 0; load && l < sys->nlinks_total; l++)
    CHECK(load[l] <= sys->paths->link_bw[l] * (1 + 1e-6), "%s: link %d carries %.2f GB/s of %.2f", fx->file, l, load[l],
          sys->paths->link_bw[l]);
  free(load);
  /* Nearest NIC: the one under the GPU's own PCI switch when there is one. */
  for (int g = 0; g < G; g++) {
    int sw = switch_of(sys, sys->gpus[g]);
    if (sw < 0) continue;
    int has = 0;
    for (int n = 0; n < topo_nnics(sys); n++) has |= topo_nic_usable(sys, n) && under(sys, sys->nics[n], sw);
    if (!has) continue;
    int nn = topo_gpu_nearest_nic(sys, g);
    CHECK(nn >= 0 && under(sys, sys->nics[nn], sw), "%s: GPU%d's nearest NIC is %s, not one under its PCI switch", fx->file,
          g, topo_nic_name(sys, nn));
  }
  topo_system_free(sys);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  fixture_t *fx = NULL;
  int n = fixtures_read(argv[1], &fx);
  CHECK(n > 0, "no fixtures");
  int nvs = 0, pcie2 = 0;
  for (int i = 0; i < n; i++) {
    check_machine(&fx[i]);
    nvs += fx[i].nvswitch;
    pcie2 += strstr(fx[i].file, "p4d") || strstr(fx[i].file, "ndv2");
  }
  CHECK(nvs >= 6 && pcie2 >= 2, "the NVSwitch (%d) and two-socket PCIe (%d) machines are not all there", nvs, pcie2);
  free(fx);
  return test_finish("topo_hardware");
}
