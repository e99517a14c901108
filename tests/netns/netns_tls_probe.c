/*
 * netns_tls_probe.c — one rank of tests/netns/test_tls.sh: broadcasts from
 * rank 0 a 4 MiB buffer that repeats a known phrase (argv[1]), so a capture
 * on the link can look for that phrase in the clear, and checks that every
 * rank received it bit for bit. Exit 0 when it did; 1 with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xccl.h"

#define PROBE_BYTES (4u << 20)

int main(int argc, char **argv) {
  if (argc != 2 || !argv[1][0]) {
    fprintf(stderr, "usage: netns_tls_probe PHRASE\n");
    return 2;
  }
  size_t plen = strlen(argv[1]);
  char *want = malloc(PROBE_BYTES), *buf = malloc(PROBE_BYTES);
  if (!want || !buf) return 1;
  for (size_t i = 0; i < PROBE_BYTES; i++) want[i] = argv[1][i % plen];
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) {
    fprintf(stderr, "init failed: %s\n", xcclGetLastError(NULL));
    return 1;
  }
  int rank;
  xcclCommUserRank(comm, &rank);
  if (rank == 0)
    memcpy(buf, want, PROBE_BYTES);
  else
    memset(buf, 0, PROBE_BYTES);
  int bad = 0;
  for (int round = 0; round < 4 && !bad; round++) {
    if (xcclBroadcast(buf, buf, PROBE_BYTES, xcclInt8, 0, comm, NULL) != xcclSuccess) {
      fprintf(stderr, "broadcast failed: %s\n", xcclGetLastError(comm));
      bad = 1;
    } else if (memcmp(buf, want, PROBE_BYTES) != 0) {
      fprintf(stderr, "rank %d: the broadcast's bytes differ from the root's\n", rank);
      bad = 1;
    }
  }
  if (bad) {
    xcclCommAbort(comm);
    return 1;
  }
  xcclCommDestroy(comm);
  printf("rank %d: 4 x %u bytes broadcast, bit for bit\n", rank, PROBE_BYTES);
  free(want);
  free(buf);
  return 0;
}
