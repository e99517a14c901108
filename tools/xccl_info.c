/*
 * xccl-info — what this build of xccl is: its version, the features compiled
 * in, and every configuration knob with its current value and source.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "xccl.h"

typedef struct {
  const char *feature;
  int built;
  const char *note;
} feature_t;

static const feature_t features[] = {
    {"socket transport", 1, "TCP over the interfaces of XCCL_SOCKET_IFNAME"},
#ifdef XCCL_HAVE_CUDA
    {"CUDA", 1, "device buffers"},
#else
    {"CUDA", 0, "host buffers only"},
#endif
#ifdef XCCL_HAVE_IBVERBS
    {"InfiniBand verbs", 1, "RDMA transport"},
#else
    {"InfiniBand verbs", 0, "no RDMA transport"},
#endif
};

int main(int argc, char **argv) {
  if (argc > 1) {
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr,
            "usage: xccl-info\n"
            "Prints the xccl version, the features built in and the configuration table\n"
            "(XCCL_* environment variables with their current values).\n");
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
  for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
    printf("  %-18s %-4s %s\n", features[i].feature, features[i].built ? "yes" : "no", features[i].note);
  printf("\nConfiguration:\n");
  fflush(stdout);
  config_print(stdout);
  fflush(stdout);
  return 0;
}
