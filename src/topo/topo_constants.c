/*
 * topo_constants.c — the bandwidth table. Every figure is GB/s per direction.
 *
 * | link | figure | source |
 * | --- | --- | --- |
 * | NVLink 1 (P100, sm 60) | 20 per link | NVIDIA Tesla P100 whitepaper: 4 links, 160 GB/s bidirectional |
 * | NVLink 2 (V100, sm 70/72) | 25 per link | NVIDIA Tesla V100 whitepaper: 6 links, 300 GB/s bidirectional |
 * | NVLink 3 (A100, sm 80) | 25 per link | NVIDIA A100 whitepaper: 12 links, 600 GB/s bidirectional |
 * | NVLink 3 on GA10x (sm 86, bridge) | 14.0625 per link | RTX A6000 datasheet: 112.5 GB/s bidirectional over 4 links |
 * | NVLink 4 (H100, sm 90) | 25 per link | NVIDIA H100 whitepaper: 18 links, 900 GB/s bidirectional |
 * | NVLink 5 (B200, sm 100+) | 50 per link | NVIDIA Blackwell datasheet: 18 links, 1.8 TB/s bidirectional |
 * | PCIe 1.x / 2.x | 2.5 / 5 GT/s x 8b/10b / 8 bits per lane | PCI-SIG base specifications |
 * | PCIe 3.0 / 4.0 / 5.0 | 8 / 16 / 32 GT/s x 128b/130b / 8 | PCI-SIG base specifications |
 * | PCIe 6.0 | 64 GT/s x 242/256 (FLIT) / 8 | PCI-SIG PCIe 6.0 specification |
 * | Intel QPI (before Skylake-SP) | 19.2 | 9.6 GT/s x 2 bytes, Intel Xeon E5 v2-v4 datasheets |
 * | Intel UPI, Skylake/Cascade Lake (model 85) | 20.8 | 10.4 GT/s x 2 bytes, Intel Xeon Scalable datasheet |
 * | Intel UPI, Ice Lake-SP (106, 108) | 22.4 | 11.2 GT/s x 2 bytes, Intel ARK |
 * | Intel UPI 2.0, Sapphire Rapids (143) | 32 | 16 GT/s x 2 bytes, Intel ARK |
 * | Intel UPI 2.0, Emerald Rapids (207) | 40 | 20 GT/s x 2 bytes, Intel ARK |
 * | Intel UPI 2.0, Granite Rapids (173, 174) | 48 | 24 GT/s x 2 bytes, Intel ARK |
 * | AMD xGMI, Zen/Zen 2 (family 23) | 32 | x16 at 16 GT/s, AMD EPYC 7002 documentation |
 * | AMD xGMI, Zen 3 (family 25, model < 0x10) | 36 | x16 at 18 GT/s, AMD EPYC 7003 documentation |
 * | AMD xGMI, Zen 4/5 (family 25 model >= 0x10, 26) | 64 | x16 at 32 GT/s, AMD EPYC 9004 documentation |
 * | IBM POWER8 X-bus | 38.4 | IBM POWER8 S822LC redbook |
 * | IBM POWER9 X-bus | 64 | IBM POWER9 AC922 redbook (X-bus 16 Gb/s x 32 lanes) |
 * | other CPUs | 20 | assumption, of the order of one UPI link |
 * | NIC port | speed / 8 | the port's rate (verbs / sysfs / the file) |
 * | NIC of unknown speed | 12.5 (RDMA), 1.25 (other) | assumption: 100 Gb/s, 10 Gb/s |
 */
#include "topo_constants.h"

#include <math.h>
#include <string.h>

static const struct {
  int sm_min; /* applies to sm >= sm_min, up to the next row */
  double bw;
} nvlink_table[] = {
    {0, 20.0}, {60, 20.0}, {70, 25.0}, {80, 25.0}, {86, 14.0625}, {90, 25.0}, {100, 50.0},
};

double topo_nvlink_bw(int sm) {
  if (sm <= 0) return 25.0;
  double bw = nvlink_table[0].bw;
  for (size_t i = 0; i < sizeof(nvlink_table) / sizeof(nvlink_table[0]); i++)
    if (sm >= nvlink_table[i].sm_min) bw = nvlink_table[i].bw;
  /* sm 87/89 (Orin, Ada) have no NVLink; keep the GA10x figure if a file says so. */
  return bw;
}

/* GB/s per lane per direction at gts GT/s, by the line code of that generation. */
static double lane_bw(double gts) {
  if (gts <= 5.0 + 1e-9) return gts * 8.0 / 10.0 / 8.0;   /* 8b/10b */
  if (gts <= 32.0 + 1e-9) return gts * 128.0 / 130.0 / 8.0; /* 128b/130b */
  return gts * 242.0 / 256.0 / 8.0;                         /* FLIT mode */
}

double topo_pcie_bw(double gts, int width) {
  if (!(gts > 0) || width <= 0) return TOPO_PCIE_DEFAULT_BW;
  return lane_bw(gts) * width;
}

void topo_pcie_from_bw(double bw, double *gts_p, int *width_p) {
  static const double gens[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  static const int widths[] = {16, 8, 4, 2, 1, 32};
  *gts_p = 0;
  *width_p = 0;
  if (!(bw > 0)) return;
  for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
    for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
      double v = lane_bw(gens[g]) * widths[w];
      if (fabs(v - bw) <= 0.01 * bw) {
        *gts_p = gens[g];
        *width_p = widths[w];
        return;
      }
    }
}

double topo_sys_bw(const char *arch, const char *vendor, int family, int model) {
  if (arch && strncmp(arch, "ppc64", 5) == 0) return model == 8 ? 38.4 : 64.0;
  if (vendor && strcmp(vendor, "GenuineIntel") == 0 && family == 6) {
    if (model == 173 || model == 174) return 48.0;
    if (model == 207) return 40.0;
    if (model == 143) return 32.0;
    if (model == 106 || model == 108) return 22.4;
    if (model == 85) return 20.8;
    if (model >= 0) return 19.2;
  }
  if (vendor && strcmp(vendor, "AuthenticAMD") == 0) {
    if (family == 23) return 32.0;
    if (family == 25) return model >= 0 && model < 0x10 ? 36.0 : 64.0;
    if (family >= 26) return 64.0;
  }
  return 20.0;
}

double topo_nic_bw(double speed_mbps, int rdma) {
  if (speed_mbps > 0) return speed_mbps / 8000.0;
  return rdma ? 12.5 : 1.25;
}
