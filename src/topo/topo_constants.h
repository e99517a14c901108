/*
 * topo_constants.h — the bandwidths xccl assumes for each kind of link, in
 * one table with its sources (topo_constants.c). All figures are GB/s in one
 * direction (1 GB = 10^9 bytes), the raw signalling rate after line coding:
 * what the link can carry at best, not what a given copy engine achieves.
 * The channel search only compares them, so what matters is their order
 * (NVLink > PCIe x16 > one NIC port) and ratios.
 */
#ifndef XCCL_TOPO_CONSTANTS_H
#define XCCL_TOPO_CONSTANTS_H

/* NVLink, per link, by the GPU's compute capability (sm 60, 70, 80, 86, 90,
 * 100...). Unknown sm: the NVLink 2/3/4 figure. */
double topo_nvlink_bw(int sm);
/* PCIe per direction for a link of `width` lanes at `gts` GT/s; unknown (0)
 * speed or width gives the Gen3 x16 figure. */
double topo_pcie_bw(double gts, int width);
/* The (GT/s, width) pair whose bandwidth is bw within 1%, for hwloc's link
 * speed (GB/s) written back as NCCL's link_speed/link_width. 0 when none. */
void topo_pcie_from_bw(double bw, double *gts_p, int *width_p);
/* One inter-socket link, by CPU: arch ("x86_64", "ppc64", "aarch64"),
 * vendor ("GenuineIntel", "AuthenticAMD"), family and model (-1 unknown). */
double topo_sys_bw(const char *arch, const char *vendor, int family, int model);
/* A NIC port: speed in Mb/s; unknown (0): 100 Gb/s for RDMA NICs, 10 Gb/s
 * for plain Ethernet. */
double topo_nic_bw(double speed_mbps, int rdma);

/* Per-link NVLink figure used when a source gives bandwidth, not counts
 * (hwloc's NVLinkBandwidth), to turn it back into a count. */
#define TOPO_PCIE_DEFAULT_BW 15.75 /* Gen3 x16 */

#endif
