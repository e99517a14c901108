/* test_net_select.c — the network device each channel uses: nearest first,
 * spread over the near ones (src/core/net_select.c). */
#include <stdlib.h>
#include <string.h>

#include "net_select.h"
#include "test_util.h"

static void test_pick(void) {
  int dev[8];
  /* Two NICs, one per NUMA domain (a dual-socket node): each rank uses its own socket's. */
  int numa2[] = {0, 1};
  CHECK(net_pick_devs(2, numa2, 0, 4, dev) == 1 && dev[0] == 0 && dev[1] == 0 && dev[2] == 0 && dev[3] == 0,
        "NUMA 0 rank: %d %d %d %d", dev[0], dev[1], dev[2], dev[3]);
  CHECK(net_pick_devs(2, numa2, 1, 4, dev) == 1 && dev[0] == 1 && dev[3] == 1, "NUMA 1 rank: %d %d", dev[0], dev[3]);
  /* Unknown domain: all NICs in turn. */
  CHECK(net_pick_devs(2, numa2, -1, 4, dev) == 2 && dev[0] == 0 && dev[1] == 1 && dev[2] == 0 && dev[3] == 1,
        "unknown NUMA: %d %d %d %d", dev[0], dev[1], dev[2], dev[3]);
  /* Four NICs, two per domain: channels alternate over the two near ones. */
  int numa4[] = {0, 1, 0, 1};
  CHECK(net_pick_devs(4, numa4, 1, 3, dev) == 2 && dev[0] == 1 && dev[1] == 3 && dev[2] == 1, "2 near of 4: %d %d %d",
        dev[0], dev[1], dev[2]);
  /* No NIC on the rank's domain: every one is as far. */
  CHECK(net_pick_devs(4, numa4, 2, 4, dev) == 4 && dev[0] == 0 && dev[3] == 3, "none near: %d .. %d", dev[0], dev[3]);
  /* More near NICs than channels: the first ones. */
  CHECK(net_pick_devs(4, numa4, 0, 1, dev) == 1 && dev[0] == 0, "1 channel: %d", dev[0]);
  /* One device: always it. */
  int numa1[] = {-1};
  CHECK(net_pick_devs(1, numa1, 0, 2, dev) == 1 && dev[0] == 0 && dev[1] == 0, "one device");
}

/* Net device names meet topology NICs: JUWELS' GPU node has mlx5_0 on NUMA 0
 * and mlx5_1 on NUMA 1 (tests/data/topologies). */
static void test_topology_names(const char *file) {
  topo_system_t *sys = NULL;
  if (topo_system_load_file(file, &sys) != xcclSuccess) {
    CHECK(0, "could not load %s", file);
    return;
  }
  net_props_t p;
  memset(&p, 0, sizeof(p));
  snprintf(p.name, sizeof(p.name), "mlx5_0:1");
  CHECK(net_dev_numa(sys, &p) == 0, "mlx5_0:1 on NUMA %d", net_dev_numa(sys, &p));
  snprintf(p.name, sizeof(p.name), "mlx5_1:1");
  CHECK(net_dev_numa(sys, &p) == 1, "mlx5_1:1 on NUMA %d", net_dev_numa(sys, &p));
  snprintf(p.name, sizeof(p.name), "mlx5_1");
  CHECK(net_dev_numa(sys, &p) == 1, "mlx5_1 (no port) on NUMA %d", net_dev_numa(sys, &p));
  snprintf(p.name, sizeof(p.name), "mlx5_10:1"); /* a prefix of no NIC's name */
  CHECK(net_dev_numa(sys, &p) == -1, "unknown device on NUMA %d", net_dev_numa(sys, &p));
  topo_system_free(sys);
}

/* Point-to-point rails: both ends agree, and on 2 hosts of 8 ranks with 8
 * channels the 8 pairs of the same GPU (r, r + 8) take 8 different rails. */
static void test_p2p_channel(void) {
  for (int a = 0; a < 16; a++)
    for (int b = 0; b < 16; b++) {
      int c = net_p2p_channel(a, b, 8);
      CHECK(c == net_p2p_channel(b, a, 8) && c >= 0 && c < 8, "ranks %d and %d: channel %d", a, b, c);
    }
  unsigned used = 0;
  for (int r = 0; r < 8; r++) used |= 1u << net_p2p_channel(r, r + 8, 8);
  CHECK(used == 0xff, "pairs 8 apart use rails %#x, not all 8", used);
  CHECK(net_p2p_channel(3, 5, 0) == 0, "no channels: not channel 0");
}

int main(int argc, char **argv) {
  test_pick();
  test_p2p_channel();
  test_topology_names(argc > 1 ? argv[1] : XCCL_TEST_TOPO_DIR "/hwloc/psmgmt-juwels-cluster-gpu-4xV100-2xEDR.xml");
  return test_finish("net_select");
}
