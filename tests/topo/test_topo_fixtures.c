/*
 * test_topo_fixtures.c DATA_DIR — every saved machine loads; its GPU, NIC,
 * RDMA NIC, NUMA domain counts and NVSwitch presence are those counted from
 * the file itself (counts.tsv); its path matrix and channels equal the
 * expected output in DATA_DIR/expected/<file>.txt, and are the same twice;
 * no NIC, so no channel, is a virtual interface (ifname.h).
 * XCCL_REGEN=1 rewrites the expected files instead of comparing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ifname.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"
#include "topo_graph.h"

static char *expected_text(const topo_system_t *sys) {
  topo_channels_t chs;
  char *m = NULL, *t = NULL;
  if (topo_search_channels(sys, NULL, 0, 16, &chs) != xcclSuccess) return NULL;
  if (topo_render(sys, NULL, TOPO_FMT_MATRIX, &m) != xcclSuccess) return NULL;
  char desc[8192];
  topo_channels_describe(sys, &chs, desc, sizeof(desc));
  size_t len = strlen(m) + strlen(desc) + 64;
  t = malloc(len);
  if (t) snprintf(t, len, "%s\nChannels: %s\n", m, desc);
  free(m);
  return t;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  const char *regen = getenv("XCCL_REGEN");
  fixture_t *fx = NULL;
  int n = fixtures_read(argv[1], &fx);
  CHECK(n >= 40, "counts.tsv lists %d machines, want every fixture (40+)", n);
  for (int i = 0; i < n; i++) {
    topo_system_t *sys = NULL;
    xcclResult_t r = topo_system_load_file(fx[i].path, &sys);
    CHECK(r == xcclSuccess, "%s does not load: %s", fx[i].file, err_last());
    if (r != xcclSuccess) continue;
    int rdma = 0;
    for (int k = 0; k < topo_nnics(sys); k++) rdma += sys->nodes[sys->nics[k]].rdma;
    CHECK(topo_ngpus(sys) == fx[i].gpus, "%s: %d GPUs, the file has %d", fx[i].file, topo_ngpus(sys), fx[i].gpus);
    CHECK(topo_nnics(sys) == fx[i].nics, "%s: %d NICs, the file has %d", fx[i].file, topo_nnics(sys), fx[i].nics);
    CHECK(rdma == fx[i].rdma_nics, "%s: %d RDMA NICs, the file has %d", fx[i].file, rdma, fx[i].rdma_nics);
    CHECK(topo_nnuma(sys) == fx[i].numa, "%s: %d NUMA domains, the file has %d", fx[i].file, topo_nnuma(sys), fx[i].numa);
    CHECK((sys->nvs >= 0) == fx[i].nvswitch, "%s: NVSwitch %s, the file says %d", fx[i].file, sys->nvs >= 0 ? "found" : "absent",
          fx[i].nvswitch);
    /* GPUs are numbered in bus id order. */
    for (int g = 1; g < topo_ngpus(sys); g++)
      CHECK(sys->nodes[sys->gpus[g - 1]].busid < sys->nodes[sys->gpus[g]].busid, "%s: GPU %d and %d out of bus id order",
            fx[i].file, g - 1, g);
    /* No virtual interface (ifname.h) is a NIC, so none is any channel's. */
    for (int k = 0; k < topo_nnics(sys); k++)
      CHECK(ifname_is_virtual(topo_nic_name(sys, k), NULL, NULL, 0) == IFNAME_REAL, "%s: NIC %d is virtual: %s",
            fx[i].file, k, topo_nic_name(sys, k));
    topo_channels_t vchs;
    if (topo_search_channels(sys, NULL, 0, 16, &vchs) == xcclSuccess)
      for (int c = 0; c < vchs.nchannels; c++)
        CHECK(vchs.ch[c].nic < 0 || ifname_is_virtual(topo_nic_name(sys, vchs.ch[c].nic), NULL, NULL, 0) == IFNAME_REAL,
              "%s: channel %d uses virtual interface %s", fx[i].file, c, topo_nic_name(sys, vchs.ch[c].nic));
    char *a = expected_text(sys), *b = expected_text(sys);
    CHECK(a && b && strcmp(a, b) == 0, "%s: paths/channels differ between two runs", fx[i].file);
    char exp_path[1200];
    snprintf(exp_path, sizeof(exp_path), "%s/expected/%s.txt", argv[1], fx[i].file);
    if (a && regen && strcmp(regen, "1") == 0) {
      FILE *f = fopen(exp_path, "w");
      CHECK(f != NULL, "cannot write %s", exp_path);
      if (f) {
        fputs(a, f);
        fclose(f);
      }
    } else if (a) {
      char *want = test_read_file(exp_path, NULL);
      CHECK(want != NULL, "%s missing: run with XCCL_REGEN=1 to write it", exp_path);
      if (want && strcmp(want, a) != 0) {
        CHECK(0, "%s: paths/channels differ from %s (XCCL_REGEN=1 rewrites it); now:\n%s", fx[i].file, exp_path, a);
      }
      free(want);
    }
    free(a);
    free(b);
    topo_system_free(sys);
  }
  free(fx);
  return test_finish("topo_fixtures");
}
