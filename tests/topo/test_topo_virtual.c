/*
 * test_topo_virtual.c DATA_DIR — virtual network interfaces (issue 18) are
 * never a channel's NIC: the synthetic NCCL files in DATA_DIR/virtual
 * (docker, veth, calico NICs beside an RDMA NIC, beside a plain Ethernet
 * port, and alone), saved machines with one NIC renamed in memory (an NCCL
 * <net> and an hwloc OS device), the list xccl-topo shows, and which
 * network devices the channels may take (net_real_devs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ifname.h"
#include "net_select.h"
#include "test_util.h"
#include "topo.h"

static topo_system_t *load(const char *dir, const char *file) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  topo_system_t *sys = NULL;
  xcclResult_t r = topo_system_load_file(path, &sys);
  CHECK(r == xcclSuccess, "%s does not load: %s", file, err_last());
  return r == xcclSuccess ? sys : NULL;
}

/* Channels over all GPUs; every NIC one of want (NULL: none at all). */
static void check_channels(const topo_system_t *sys, const char *what, const char *want) {
  topo_channels_t chs;
  CHECK(topo_search_channels(sys, NULL, 0, 16, &chs) == xcclSuccess, "%s: search: %s", what, err_last());
  CHECK(chs.nchannels >= 1, "%s: no channel", what);
  for (int c = 0; c < chs.nchannels; c++) {
    const char *nic = chs.ch[c].nic >= 0 ? topo_nic_name(sys, chs.ch[c].nic) : NULL;
    if (want)
      CHECK(nic && strcmp(nic, want) == 0, "%s: channel %d uses NIC %s, want %s", what, c, nic ? nic : "(none)", want);
    else
      CHECK(nic == NULL, "%s: channel %d uses NIC %s, want none", what, c, nic);
    CHECK(!nic || ifname_is_virtual(nic, NULL, NULL, 0) == IFNAME_REAL, "%s: channel %d on virtual %s", what, c, nic);
  }
}

static int excluded(const topo_system_t *sys, const char *name, const char *why) {
  for (int i = 0; i < topo_nexcluded(sys); i++)
    if (strcmp(topo_excluded_name(sys, i), name) == 0) return strstr(topo_excluded_why(sys, i), why) != NULL;
  return 0;
}

static void check_four_virtual(const topo_system_t *sys, const char *what) {
  CHECK(topo_nexcluded(sys) == 4, "%s: %d excluded, want 4", what, topo_nexcluded(sys));
  CHECK(excluded(sys, "docker0", "docker"), "%s: docker0 not listed as a docker bridge", what);
  CHECK(excluded(sys, "br-3e8f2a9c1d4b", "docker network bridge"), "%s: br-... not listed", what);
  CHECK(excluded(sys, "veth5a1c9e2", "veth pair"), "%s: veth not listed as a veth pair end", what);
  CHECK(excluded(sys, "cali8d2e1c4f7a0", "calico"), "%s: cali... not listed as calico", what);
  for (int n = 0; n < topo_nnics(sys); n++)
    CHECK(ifname_is_virtual(topo_nic_name(sys, n), NULL, NULL, 0) == IFNAME_REAL, "%s: NIC %d is %s", what, n,
          topo_nic_name(sys, n));
}

static void test_synthetic(const char *data) {
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s/virtual", data);
  topo_system_t *sys = load(dir, "nccl-4gpu-mlx5-beside-docker-veth-cali.xml");
  if (sys) {
    CHECK(topo_ngpus(sys) == 4 && topo_nnics(sys) == 1, "mlx5: %d GPUs %d NICs, want 4 and 1", topo_ngpus(sys),
          topo_nnics(sys));
    check_four_virtual(sys, "mlx5");
    check_channels(sys, "mlx5", "mlx5_0");
    topo_system_free(sys);
  }
  sys = load(dir, "nccl-2gpu-eno1-beside-docker-veth-cali.xml");
  if (sys) { /* no RDMA NIC: every NIC would be usable, so only the rule keeps them off */
    CHECK(topo_nnics(sys) == 1, "eno1: %d NICs, want 1", topo_nnics(sys));
    check_four_virtual(sys, "eno1");
    check_channels(sys, "eno1", "eno1");
    topo_system_free(sys);
  }
  sys = load(dir, "nccl-2gpu-only-virtual-nics.xml");
  if (sys) {
    CHECK(topo_ngpus(sys) == 2 && topo_nnics(sys) == 0, "only virtual: %d GPUs %d NICs, want 2 and 0", topo_ngpus(sys),
          topo_nnics(sys));
    check_four_virtual(sys, "only virtual");
    check_channels(sys, "only virtual", NULL);
    topo_system_free(sys);
  }
}

/* A saved machine loaded from memory with the first `from` replaced by `to`
 * (the file itself is left as it is). */
static topo_system_t *load_renamed(const char *data, const char *file, const char *from, const char *to) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", data, file);
  char *text = test_read_file(path, NULL);
  CHECK(text != NULL, "cannot read %s", path);
  if (!text) return NULL;
  char *at = strstr(text, from);
  CHECK(at != NULL, "%s has no %s", file, from);
  topo_system_t *sys = NULL;
  if (at) {
    size_t len = strlen(text) + strlen(to) + 1;
    char *out = malloc(len);
    if (out) {
      snprintf(out, len, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
      xcclResult_t r = topo_system_load_buffer(out, strlen(out), file, &sys);
      CHECK(r == xcclSuccess, "%s renamed does not load: %s", file, err_last());
      free(out);
    }
  }
  free(text);
  return sys;
}

static void test_renamed_fixtures(const char *data) {
  /* Its one NIC, eno1, is the channels' NIC; called veth it is none. */
  topo_system_t *sys = load_renamed(data, "nccl/cuiboyuan-nccl_miner-2xRTXA6000-nvlinkbridge-topo.xml", "name=\"eno1\"",
                                    "name=\"veth0a1b2c\"");
  if (sys) {
    CHECK(topo_nnics(sys) == 0, "renamed NCCL: %d NICs, want 0", topo_nnics(sys));
    CHECK(topo_nexcluded(sys) == 1 && excluded(sys, "veth0a1b2c", "veth pair"), "renamed NCCL: excluded list %d %s",
          topo_nexcluded(sys), topo_excluded_name(sys, 0));
    check_channels(sys, "renamed NCCL", NULL);
    topo_system_free(sys);
  }
  /* JUSUF's hwloc export: 4 NICs (mlx5_0, mlx5_1, eno1, eno2); eno1 as docker0 is left out. */
  sys = load_renamed(data, "hwloc/psmgmt-jusuf-gpu-1xV100-2xmlx5.xml", "name=\"eno1\"", "name=\"docker0\"");
  if (sys) {
    CHECK(topo_nnics(sys) == 3, "renamed hwloc: %d NICs, want 3", topo_nnics(sys));
    CHECK(topo_nexcluded(sys) == 1 && excluded(sys, "docker0", "docker bridge"), "renamed hwloc: excluded %d %s",
          topo_nexcluded(sys), topo_excluded_name(sys, 0));
    for (int n = 0; n < topo_nnics(sys); n++)
      CHECK(strcmp(topo_nic_name(sys, n), "docker0") != 0, "renamed hwloc: docker0 is NIC %d", n);
    check_channels(sys, "renamed hwloc", "mlx5_0");
    topo_system_free(sys);
  }
}

static void test_real_devs(void) {
  net_props_t p[4];
  memset(p, 0, sizeof(p));
  int idx[4];
  char skipped[256];
  snprintf(p[0].name, sizeof(p[0].name), "veth0");
  snprintf(p[1].name, sizeof(p[1].name), "mlx5_0:1");
  snprintf(p[2].name, sizeof(p[2].name), "docker0");
  snprintf(p[3].name, sizeof(p[3].name), "mlx5_1:1");
  int n = net_real_devs(4, p, NULL, idx, skipped, sizeof(skipped));
  CHECK(n == 2 && idx[0] == 1 && idx[1] == 3, "real devs: %d (%d %d)", n, idx[0], idx[1]);
  CHECK(strstr(skipped, "veth0 (a veth pair end)") && strstr(skipped, "docker0 (a docker bridge)"), "skipped: %s",
        skipped);
  /* Only virtual ones: all of them, rather than nothing. */
  n = net_real_devs(1, p, NULL, idx, skipped, sizeof(skipped));
  CHECK(n == 1 && idx[0] == 0 && skipped[0] == 0, "only virtual: %d, skipped '%s'", n, skipped);
  n = net_real_devs(3, p, NULL, idx, NULL, 0);
  CHECK(n == 1 && idx[0] == 1, "NULL skipped: %d", n);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  test_synthetic(argv[1]);
  test_renamed_fixtures(argv[1]);
  test_real_devs();
  return test_finish("topo_virtual");
}
