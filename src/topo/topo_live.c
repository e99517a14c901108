/*
 * topo_live.c — what only the live machine can tell: NVLinks through NVML
 * (opened with dlopen, so xccl neither needs nor links it), NIC port speeds
 * from sysfs, and the NUMA domain this process runs on.
 */
#include <dlfcn.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "topo_constants.h"
#include "topo_graph.h"
#include "topo_load.h"

/* The few NVML declarations we use (nvml.h, stable since CUDA 10). */
typedef int nvml_ret_t;
typedef void *nvml_dev_t;
typedef struct {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} nvml_pci_t;
#define NVML_MAX_LINKS 18

static pthread_once_t nvml_absent_once = PTHREAD_ONCE_INIT;
static void say_nvml_absent(void) {
  INFO(TOPO, "NVML (libnvidia-ml.so.1) not found: no NVLink data; GPUs are joined by PCI only");
}

int topo_nvml_add_links(topo_system_t *sys) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    pthread_once(&nvml_absent_once, say_nvml_absent);
    return -1;
  }
  nvml_ret_t (*init)(void) = (nvml_ret_t(*)(void))dlsym(h, "nvmlInit_v2");
  nvml_ret_t (*shutdown)(void) = (nvml_ret_t(*)(void))dlsym(h, "nvmlShutdown");
  nvml_ret_t (*by_bus)(const char *, nvml_dev_t *) =
      (nvml_ret_t(*)(const char *, nvml_dev_t *))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
  nvml_ret_t (*state)(nvml_dev_t, unsigned, int *) =
      (nvml_ret_t(*)(nvml_dev_t, unsigned, int *))dlsym(h, "nvmlDeviceGetNvLinkState");
  nvml_ret_t (*remote)(nvml_dev_t, unsigned, nvml_pci_t *) =
      (nvml_ret_t(*)(nvml_dev_t, unsigned, nvml_pci_t *))dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvml_ret_t (*cc)(nvml_dev_t, int *, int *) =
      (nvml_ret_t(*)(nvml_dev_t, int *, int *))dlsym(h, "nvmlDeviceGetCudaComputeCapability");
  if (!init || !shutdown || !by_bus || !state || !remote || init() != 0) {
    INFO(TOPO, "NVML present but unusable (missing symbols or nvmlInit failed): no NVLink data");
    dlclose(h);
    return -1;
  }
  sys->nvlink_data = 1;
  int nnodes = sys->nnodes;
  for (int i = 0; i < nnodes; i++) {
    if (sys->nodes[i].type != TOPO_GPU || sys->nodes[i].vendor != 0x10de) continue;
    char bus[32];
    nvml_dev_t dev;
    topo_busid_format(sys->nodes[i].busid, bus, sizeof(bus));
    if (by_bus(bus, &dev) != 0) continue;
    int major = 0, minor = 0;
    if (cc && cc(dev, &major, &minor) == 0) sys->nodes[i].sm = major * 10 + minor;
    double per = topo_nvlink_bw(sys->nodes[i].sm);
    for (unsigned l = 0; l < NVML_MAX_LINKS; l++) {
      int active = 0;
      nvml_pci_t pci;
      if (state(dev, l, &active) != 0 || !active) continue;
      memset(&pci, 0, sizeof(pci));
      if (remote(dev, l, &pci) != 0) continue;
      int64_t rb = ((int64_t)pci.domain << 24) | ((int64_t)pci.bus << 16) | ((int64_t)pci.device << 8);
      int peer = topo_graph_find_busid(sys, rb);
      if (peer == i) continue;
      if (peer >= 0 && sys->nodes[peer].type == TOPO_GPU) {
        /* Each side names the link: count it from the lower index only. */
        if (peer > i) topo_graph_add_link(sys, i, peer, TOPO_LINK_NVL, per, 1);
        continue;
      }
      if (sys->nvs < 0) {
        int nv = topo_graph_add_node(sys, TOPO_NVS, -1);
        if (nv < 0) break;
        sys->nvs = nv;
        topo_busid_format(rb, sys->nodes[nv].name, sizeof(sys->nodes[nv].name));
      }
      topo_graph_add_link(sys, i, sys->nvs, TOPO_LINK_NVL, per, 1);
    }
  }
  shutdown();
  dlclose(h);
  return 0;
}

static double read_number(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  double v = 0;
  if (fscanf(f, "%lf", &v) != 1) v = 0;
  fclose(f);
  return v;
}

double topo_sysfs_nic_speed(const char *ibdev, const char *netdev) {
  char path[256];
  if (ibdev) { /* "100 Gb/sec (4X EDR)" */
    snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/rate", ibdev);
    double gbps = read_number(path);
    if (gbps > 0) return gbps * 1000;
  }
  if (netdev) { /* Mb/s, -1 when the link is down */
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", netdev);
    double mbps = read_number(path);
    if (mbps > 0) return mbps;
  }
  return 0;
}

xcclResult_t topo_process_numa(int *numa_p) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) < 0 || hwloc_topology_load(topo) < 0)
    return err_set(xcclSystemError, LOG_TOPO, "hwloc cannot discover this machine's NUMA domains");
  int numa = -1;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
    for (int i = 0; i < nn && numa < 0; i++) {
      hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
      if (o->cpuset && !hwloc_bitmap_iszero(set) && hwloc_bitmap_isincluded(set, o->cpuset)) numa = (int)o->os_index;
    }
  }
  if (numa < 0 && set && hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0) {
    for (int i = 0; i < nn && numa < 0; i++) {
      hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
      if (o->cpuset && hwloc_bitmap_intersects(set, o->cpuset)) numa = (int)o->os_index;
    }
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
  *numa_p = numa;
  return xcclSuccess;
}
