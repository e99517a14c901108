/*
 * topo_load.h — the loaders behind topo_system_load*() (internal).
 *
 * Each reads one kind of source into a new, finalized system (*sys_p, only
 * on success) or fails with a sentence recorded by err_set that names the
 * source and, for files, the line or element at fault. What they read
 * leniently is recorded in the system (topo_graph_warn) for the caller to
 * log, once per load (topo_system.c).
 */
#ifndef XCCL_TOPO_LOAD_H
#define XCCL_TOPO_LOAD_H

#include <stddef.h>

#include "topo_graph.h"

/* NCCL's <system version="1"> XML (libxml2). */
xcclResult_t topo_load_nccl_xml(const char *data, size_t len, const char *name, topo_system_t **sys_p);
/* An hwloc XML export, format 1.x, 2.x or 3.0 (3.0 is rewritten to 2.0 in
 * memory for the hwloc 2 reader: version and osdev_type bitmask). */
xcclResult_t topo_load_hwloc_xml(const char *data, size_t len, const char *name, topo_system_t **sys_p);
/* hwloc on this machine; then NVML (NVLinks) and sysfs (NIC speeds). */
xcclResult_t topo_load_hwloc_live(topo_system_t **sys_p);

/* Is a NIC of this PCI class / vendor / device verbs-capable? */
int topo_pci_is_rdma(int pci_class, int vendor, int device);
/* Compute capability guessed from an NVIDIA GPU's model name or device id
 * (for NVLink speeds); -1 when unknown. */
int topo_guess_sm(const char *model, int device_id);

/* NVML, opened with dlopen: adds the NVLinks of the GPUs in sys (before
 * finalize). Returns 0 when NVML was used, -1 when it is absent (logged at
 * INFO once per process). */
int topo_nvml_add_links(topo_system_t *sys);
/* A NIC's port speed from sysfs (/sys/class/infiniband/<name>/ports/1/rate,
 * /sys/class/net/<name>/speed), Mb/s; 0 when unknown. */
double topo_sysfs_nic_speed(const char *ibdev, const char *netdev);

/* Virtual interfaces (topo_virtual.c). Is interface or device `name` one to
 * leave out (ifname_is_virtual, with sysfs_root for the live machine, NULL
 * for a file)? When it is: recorded in sys->excluded (once per name), said
 * at INFO, and 1 returned; else 0. */
int topo_exclude_virtual(topo_system_t *sys, const char *name, const char *sysfs_root);
/* Records every interface under sysfs_root/class/net that is virtual or
 * shows no device (loopback aside), for xccl-topo's list. */
void topo_exclude_live_interfaces(topo_system_t *sys, const char *sysfs_root);

#endif
