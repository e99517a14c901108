/*
 * xccl-info — what this build of xccl is: its version, the features compiled
 * in, what one connection's fifo holds, and every configuration knob with its current value and source (XCCL_X,
 * an NCCL alias, or the default), the NCCL aliases, and the NCCL_* variables
 * set that xccl ignores.
 */
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "connect.h"
#include "net.h"
#include "slots.h"
#include "xccl.h"

typedef struct {
  const char *feature;
  int built;
  const char *yes, *no;
} feature_t;

int main(int argc, char **argv) {
  if (argc > 1) {
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr,
            "usage: xccl-info\n"
            "Prints the xccl version, the features built in and the configuration table\n"
            "(XCCL_* environment variables with their current values and where each came\n"
            "from: XCCL_X, an NCCL alias, or the default), the NCCL_* variables xccl reads\n"
            "as aliases, and the NCCL_* variables set that xccl ignores.\n");
    return help ? 0 : 2;
  }
  int version = 0;
  xcclResult_t res = xcclGetVersion(&version);
  if (res != xcclSuccess) {
    fprintf(stderr, "xccl-info: xcclGetVersion failed: %s: %s\n", xcclGetErrorString(res),
            xcclGetLastError(NULL));
    return 1;
  }
  printf("xccl %d.%d.%d (version code %d", version / 10000, version / 100 % 100, version % 100, version);
  if (version != XCCL_VERSION_CODE)
    printf("; built against header %d.%d.%d", XCCL_MAJOR, XCCL_MINOR, XCCL_PATCH);
  printf(")\n\nFeatures:\n");
  /* Asked of the library's layers, which were compiled with what was found. */
  const feature_t features[] = {
      {"socket transport", 1, "TCP over the interfaces of XCCL_SOCKET_IFNAME", ""},
      {"CUDA", comm_cuda_built(),
       "device buffers (kernels for sm_80, sm_90 + PTX; CUDA IPC within a host, GPUDirect RDMA over ib)",
       "host buffers only"},
      {"InfiniBand verbs", net_ib_built(), "the ib transport (rdma-core)", "no RDMA transport"},
      {"CRC32C (ISA-L)", slot_checksum_available(), "XCCL_CHECKSUM=1 available", "XCCL_CHECKSUM=1 refused"},
  };
  for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
    printf("  %-18s %-4s %s\n", features[i].feature, features[i].built ? "yes" : "no",
           features[i].built ? features[i].yes : features[i].no);
  /* comm_conn_bytes is what a communicator's count adds per fifo. */
  size_t ring_slot = config_size(CFG_CHUNK_SIZE), algo_slot = config_size(CFG_ALGO_CHUNK_SIZE);
  printf("\nConnection memory (per fifo: one per receive side, and one per send side through the network;\n"
         "the sum is the INFO lines' \"MiB of slots\" and xcclCommMemStats' xcclStatMemSuspend, and\n"
         "xcclCommSuspend with XCCL_SUSPEND_MEM releases it):\n");
  printf("  %-18s %llu bytes (XCCL_CHUNK_SIZE=%zu)\n", "ring channel", (unsigned long long)comm_conn_bytes(ring_slot),
         ring_slot);
  printf("  %-18s %llu bytes (XCCL_ALGO_CHUNK_SIZE=%zu)\n", "algorithm's peer", (unsigned long long)comm_conn_bytes(algo_slot),
         algo_slot);
  printf("\nConfiguration:\n");
  fflush(stdout);
  config_print(stdout);
  fflush(stdout);
  return 0;
}
