/*
 * cuda_gdr.c — GPUDirect RDMA for network connections (cuda_gdr.h). The
 * state is the connection's own (conn->gpu, proxy.h: network connections
 * belong to this process), so a launch asks no list and takes no lock.
 */
#include "connect.h"
#include "cuda_gdr.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "config.h"
#include "gdr_path.h"
#include "log.h"
#include "topo.h"

/* Per process, once: the node's topology (NULL when it cannot be loaded)
 * and XCCL_NET_GDR_LEVEL, so that a bad value is said once. */
static pthread_once_t gdr_once = PTHREAD_ONCE_INIT;
static topo_system_t *topo;
static int gdr_level = TOPO_PATH_PXB;

static void gdr_init(void) {
  const char *word = config_str(CFG_NET_GDR_LEVEL);
  if (gdr_level_parse(word, &gdr_level) != 0)
    WARN(ENV, "XCCL_NET_GDR_LEVEL=%s is not one of LOC, PIX, PXB, PHB, SYS: using PXB", word);
  if (gdr_level != GDR_LEVEL_LOC && topo_system_load(&topo) != xcclSuccess) {
    INFO(NET, "GPUDirect RDMA: no topology (%s): only XCCL_NET_GDR_LEVEL=SYS allows it", err_last());
    topo = NULL;
  }
}

/* May f's data go GPU-direct? why says, either way. */
static int gdr_wanted(xcclComm_t comm, int dev, char *why, size_t len) {
  int device = 0;
  pthread_once(&gdr_once, gdr_init);
  net_props_t props;
  if (comm->net->get_properties(dev, &props) != xcclSuccess)
    return snprintf(why, len, "net device %d has no properties: %s", dev, err_last()), 0;
  char busid[32] = "";
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(busid, sizeof(busid), device) != cudaSuccess) {
    cudaGetLastError();
    snprintf(busid, sizeof(busid), "(device %d, bus id unknown)", device);
  }
  return gdr_allowed(topo, busid, &props, gdr_level, why, len);
}

void cuda_gdr_settle(xcclComm_t comm, transport_conn_t *conn, int producer, int peer, int dev) {
  proxy_gpu_t *g = conn->gpu;
  if (!g || g->decided) return; /* a network connection is this process's own: no lock needed */
  g->decided = 1;
  char why[256], peer_s[160];
  comm_peer_desc(comm, peer, peer_s, sizeof(peer_s));
  const char *dir = producer ? "to" : "from";
  if (gdr_wanted(comm, dev, why, sizeof(why))) {
    size_t bytes = slot_fifo_area_bytes(conn->fifo);
    char *area = NULL;
    cudaError_t err = cudaMalloc((void **)&area, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      INFO(NET, "rank %d: device data %s %s staged through host memory: %s, but cudaMalloc of %zu bytes failed: %s",
           comm->rank, dir, peer_s, why, bytes, cudaGetErrorString(err));
    } else if (proxy_gpu_area(comm->proxy, g, area, bytes) != xcclSuccess) {
      INFO(NET, "rank %d: device data %s %s staged through host memory: %s, but the transport cannot register GPU "
           "memory: %s", comm->rank, dir, peer_s, why, err_last());
      cudaFree(area);
      cudaGetLastError();
    } else {
      INFO(NET, "rank %d: device data %s %s goes GPUDirect RDMA (%zu bytes of GPU memory): %s", comm->rank, dir,
           peer_s, bytes, why);
    }
  } else {
    INFO(NET, "rank %d: device data %s %s staged through host memory: %s", comm->rank, dir, peer_s, why);
  }
}

void cuda_gdr_recv_steps(transport_conn_t *conn, uint64_t from, uint64_t until) {
  proxy_gpu_t *g = conn->gpu;
  if (!g || !g->area || from == until) return;
  /* A range that continues the last one extends it; otherwise a host
   * operation came between, whose steps the proxy has all received by now
   * (host operations complete before they return), so either order of the
   * two stores leaves no step of it in the range. */
  if (atomic_load_explicit(&g->rx_until, memory_order_relaxed) != from)
    atomic_store_explicit(&g->rx_from, from, memory_order_release);
  atomic_store_explicit(&g->rx_until, until, memory_order_release);
}

static void free_area(void *comm, transport_conn_t *conn, int producer) {
  (void)producer;
  char *area = cuda_gdr_area(conn);
  if (!area) return;
  proxy_gpu_area_drop(((xcclComm_t)comm)->proxy, conn->gpu); /* stops the connection, deregisters, clears area */
  cudaFree(area);
  cudaGetLastError();
}

void cuda_gdr_comm_free(xcclComm_t comm) { comm_each_conn(comm, free_area, comm); }
