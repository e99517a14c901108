/*
 * test_topo_search.c DATA_DIR — the channel search's contract and the
 * communicator helpers: arguments refused with a message; a subset of GPUs
 * (--gpus) gives rings over exactly those; max_channels is kept; one GPU
 * gives one channel; the same input gives the same rings; ranks without GPUs
 * are ordered by NUMA domain so the ring crosses each socket boundary once
 * each way; ranks with GPUs follow channel 0; node rings chain in node order.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"

static topo_system_t *load(const char *dir, const char *file) { return fixture_load(dir, file); }

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  topo_system_t *p4d = load(argv[1], "nccl/aws-p4d.24xlarge-a100-topo.xml");
  topo_channels_t chs, again;
  err_quiet(1);
  int bad[] = {0, 9};
  CHECK(topo_search_channels(p4d, bad, 2, 4, &chs) == xcclInvalidArgument && strstr(err_last(), "GPU 9 does not exist"),
        "GPU 9 accepted: %s", err_last());
  int dup[] = {1, 1};
  CHECK(topo_search_channels(p4d, dup, 2, 4, &chs) == xcclInvalidArgument && strstr(err_last(), "twice"), "duplicate accepted");
  CHECK(topo_search_channels(p4d, NULL, 0, 0, &chs) == xcclInvalidArgument, "max_channels 0 accepted");
  CHECK(topo_search_channels(p4d, NULL, 0, TOPO_MAX_CHANNELS + 1, &chs) == xcclInvalidArgument, "too many channels accepted");
  err_quiet(0);

  int sub[] = {6, 0, 2};
  CHECK(topo_search_channels(p4d, sub, 3, 3, &chs) == xcclSuccess, "subset: %s", err_last());
  CHECK(chs.nchannels >= 1 && chs.nchannels <= 3, "subset: %d channels, max 3", chs.nchannels);
  for (int c = 0; c < chs.nchannels; c++) {
    int seen = 0;
    CHECK(chs.ch[c].ngpus == 3, "subset ring has %d GPUs", chs.ch[c].ngpus);
    for (int i = 0; i < chs.ch[c].ngpus; i++) seen |= 1 << chs.ch[c].gpus[i];
    CHECK(seen == (1 << 6 | 1 << 0 | 1 << 2), "subset ring holds other GPUs (mask %x)", seen);
  }
  int one[] = {5};
  CHECK(topo_search_channels(p4d, one, 1, 8, &chs) == xcclSuccess && chs.nchannels == 1 && chs.ch[0].gpus[0] == 5,
        "one GPU: %d channels", chs.nchannels);
  CHECK(chs.ch[0].nic == topo_gpu_nearest_nic(p4d, 5), "one GPU: NIC %d, nearest %d", chs.ch[0].nic, topo_gpu_nearest_nic(p4d, 5));
  CHECK(topo_search_channels(p4d, NULL, 0, 16, &chs) == xcclSuccess, "search");
  CHECK(topo_search_channels(p4d, NULL, 0, 16, &again) == xcclSuccess && memcmp(&chs, &again, sizeof(chs)) == 0,
        "two searches differ");
  /* The hint file has no NVLink: the rings run at PCIe speed, which 2 of
   * its 4 NICs of 100 Gb/s carry as well as 4 (fewer channels win). */
  CHECK(chs.nchannels == 2 && chs.ch[0].nic != chs.ch[1].nic, "p4d: %d channels, want 2 on 2 NICs", chs.nchannels);
  char desc[2048];
  topo_channels_describe(p4d, &chs, desc, sizeof(desc));
  CHECK(strstr(desc, "2 channels") && strstr(desc, "nic"), "describe: '%s'", desc);
  char tiny[8];
  topo_channels_describe(p4d, &chs, tiny, sizeof(tiny));
  CHECK(strlen(tiny) == 7, "describe into 8 bytes: '%s'", tiny);

  /* Ranks without GPUs: by NUMA domain. */
  int numa[] = {1, 0, 1, 0, -1, 0};
  int order[6];
  char line[512];
  CHECK(topo_local_ring_order(p4d, 6, numa, NULL, order, line, sizeof(line)) == xcclSuccess, "numa order");
  int want[] = {1, 3, 5, 0, 2, 4};
  CHECK(memcmp(order, want, sizeof(want)) == 0, "numa order %d %d %d %d %d %d", order[0], order[1], order[2], order[3],
        order[4], order[5]);
  CHECK(strstr(line, "NUMA") != NULL, "desc '%s'", line);
  CHECK(topo_local_ring_order(NULL, 6, numa, NULL, order, NULL, 0) == xcclSuccess && memcmp(order, want, sizeof(want)) == 0,
        "numa order without a system");
  /* Ranks with GPUs: channel 0's order. */
  int gpu_of[] = {7, 6, 5, 4, 3, 2, 1, 0};
  int gorder[8];
  CHECK(topo_local_ring_order(p4d, 8, NULL, gpu_of, gorder, line, sizeof(line)) == xcclSuccess, "gpu order");
  for (int i = 0; i < 8; i++)
    CHECK(gpu_of[gorder[i]] == chs.ch[0].gpus[i], "position %d: rank %d drives GPU %d, channel 0 has %d", i, gorder[i],
          gpu_of[gorder[i]], chs.ch[0].gpus[i]);
  CHECK(strstr(line, "channel") != NULL, "desc '%s'", line);
  /* Chaining. */
  int pn = -2;
  CHECK(topo_process_numa(&pn) == xcclSuccess && pn >= -1, "process numa %d", pn);
  topo_system_free(p4d);
  return test_finish("topo_search");
}
