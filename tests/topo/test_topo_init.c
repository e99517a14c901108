/*
 * test_topo_init.c RESULT WORD... — under xccl-run, with XCCL_TOPO_FILE (or
 * NCCL_TOPO_FILE) naming a file that cannot be read or parsed: communicator
 * init fails on every rank, within a few seconds (not XCCL_TIMEOUT), with
 * RESULT (SystemError, InvalidArgument) and a message holding every WORD (the
 * variable, the file, the line) — instead of running as if the variable were
 * unset (issue 18).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "xccl.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_topo_init SystemError|InvalidArgument WORD...\n");
    return 2;
  }
  xcclResult_t want = strcmp(argv[1], "SystemError") == 0 ? xcclSystemError : xcclInvalidArgument;
  const char *r = getenv("XCCL_RANK");
  int rank = r ? atoi(r) : -1;
  xcclComm_t comm = NULL;
  double t0 = now_s();
  xcclResult_t res = xcclCommInitFromEnv(&comm);
  double took = now_s() - t0;
  const char *msg = xcclGetLastError(NULL);
  CHECK(res == want, "rank %d: init returned %s, want %s: %s", rank, xcclGetErrorString(res),
        xcclGetErrorString(want), msg);
  for (int i = 2; i < argc; i++)
    CHECK(strstr(msg, argv[i]) != NULL, "rank %d: the message lacks '%s': %s", rank, argv[i], msg);
  CHECK(took < 5.0, "rank %d: init took %.1f s to fail", rank, took);
  printf("rank %d: init refused in %.3f s: %s\n", rank, took, msg);
  if (res == xcclSuccess) xcclCommDestroy(comm);
  char name[64];
  snprintf(name, sizeof(name), "topo_init rank %d", rank);
  return test_finish(name);
}
