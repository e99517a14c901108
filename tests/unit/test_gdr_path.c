/* test_gdr_path.c — when device data goes GPUDirect RDMA, and when it is
 * staged through host memory (src/cuda/gdr_path.c), on a real server's
 * topology: a JURECA-DC GPU node, where GPU 0 shares a PCI switch with
 * mlx5_0 (PIX), reaches mlx5_1 through its socket's host bridge (PHB) and
 * mlx5_2 across the sockets (SYS) (tests/data/topologies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdr_path.h"
#include "test_util.h"

static net_props_t nic(const char *name, int ptr) {
  net_props_t p;
  memset(&p, 0, sizeof(p));
  snprintf(p.name, sizeof(p.name), "%s", name);
  p.ptr_support = ptr;
  return p;
}

static void test_levels(void) {
  int level = 0;
  CHECK(gdr_level_parse("PXB", &level) == 0 && level == TOPO_PATH_PXB, "PXB -> %d", level);
  CHECK(gdr_level_parse("sys", &level) == 0 && level == TOPO_PATH_SYS, "sys -> %d", level);
  CHECK(gdr_level_parse("LOC", &level) == 0 && level == GDR_LEVEL_LOC, "LOC -> %d", level);
  level = 42;
  CHECK(gdr_level_parse("NVL", &level) == -1 && level == 42, "NVL is not a level and leaves it: %d", level);
  CHECK(gdr_level_parse("", &level) == -1, "empty word");
}

static void test_paths(const char *file) {
  topo_system_t *sys = NULL;
  if (topo_system_load_file(file, &sys) != xcclSuccess) {
    CHECK(0, "could not load %s", file);
    return;
  }
  char gpu0[32], why[256];
  topo_gpu_busid(sys, 0, gpu0, sizeof(gpu0));
  net_props_t m0 = nic("mlx5_0:1", NET_PTR_HOST | NET_PTR_CUDA), m1 = nic("mlx5_1:1", NET_PTR_HOST | NET_PTR_CUDA),
              m2 = nic("mlx5_2:1", NET_PTR_HOST | NET_PTR_CUDA);
  /* The default, PXB: the NIC behind GPU 0's switch only. */
  CHECK(gdr_allowed(sys, gpu0, &m0, TOPO_PATH_PXB, why, sizeof(why)) == 1 && strstr(why, "PIX apart"), "mlx5_0: %s",
        why);
  CHECK(gdr_allowed(sys, gpu0, &m1, TOPO_PATH_PXB, why, sizeof(why)) == 0 && strstr(why, "PHB apart, farther"),
        "mlx5_1 at PXB: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &m2, TOPO_PATH_PXB, why, sizeof(why)) == 0 && strstr(why, "SYS apart"),
        "mlx5_2 at PXB: %s", why);
  /* Wider levels take farther NICs, narrower ones fewer. */
  CHECK(gdr_allowed(sys, gpu0, &m1, TOPO_PATH_PHB, why, sizeof(why)) == 1, "mlx5_1 at PHB: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &m2, TOPO_PATH_PHB, why, sizeof(why)) == 0, "mlx5_2 at PHB: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &m2, TOPO_PATH_SYS, why, sizeof(why)) == 1, "mlx5_2 at SYS: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &m0, TOPO_PATH_PIX, why, sizeof(why)) == 1, "mlx5_0 at PIX: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &m0, GDR_LEVEL_LOC, why, sizeof(why)) == 0 && strstr(why, "LOC"), "LOC: %s", why);
  /* A transport that cannot take GPU pointers never does it. */
  net_props_t sock = nic("eth0", NET_PTR_HOST);
  CHECK(gdr_allowed(sys, gpu0, &sock, TOPO_PATH_SYS, why, sizeof(why)) == 0 && strstr(why, "cannot read or write"),
        "socket: %s", why);
  /* What the topology does not show: SYS only. */
  CHECK(gdr_allowed(sys, "0000:ee:00.0", &m0, TOPO_PATH_PHB, why, sizeof(why)) == 0 &&
            strstr(why, "does not show GPU 0000:ee:00.0"),
        "unknown GPU at PHB: %s", why);
  CHECK(gdr_allowed(sys, gpu0, &(net_props_t){.name = "rxe0:1", .ptr_support = NET_PTR_CUDA}, TOPO_PATH_SYS, why,
                    sizeof(why)) == 1,
        "unknown NIC at SYS: %s", why);
  CHECK(gdr_allowed(NULL, gpu0, &m0, TOPO_PATH_SYS, why, sizeof(why)) == 1, "no topology at SYS: %s", why);
  CHECK(gdr_allowed(NULL, gpu0, &m0, TOPO_PATH_PXB, why, sizeof(why)) == 0, "no topology at PXB: %s", why);
  topo_system_free(sys);
}

int main(int argc, char **argv) {
  test_levels();
  test_paths(argc > 1 ? argv[1] : XCCL_TEST_TOPO_DIR "/hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml");
  return test_finish("gdr_path");
}
