/*
 * test_dump_rank.c — one rank of the XCCL_DUMP_SIGNAL test (test_dump.sh
 * signal): a job blocked in an all-reduce because one rank holds back.
 *
 *   test_dump_rank DIR COUNT LATE_RANK [p2p]
 *
 * Every rank joins, runs two all-reduces of COUNT floats, and writes its pid
 * to DIR/pid.<rank>. Then every rank but LATE_RANK calls the third
 * all-reduce (with p2p: a group of a send to the next rank and a receive from
 * the previous one) and blocks in it; LATE_RANK waits, outside xccl, until
 * the file DIR/go exists (at most 120 s), then joins. The script signals the ranks
 * meanwhile; the job must then complete with the right result, as if nothing
 * had happened. Exit 0 and "rank R: OK" when it did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xccl.h"

static int fail(int rank, const char *what, xcclComm_t comm) {
  printf("rank %d: FAILED %s: %s\n", rank, what, xcclGetLastError(comm));
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: test_dump_rank DIR COUNT LATE_RANK [p2p]\n");
    return 2;
  }
  int p2p = argc == 5 && strcmp(argv[4], "p2p") == 0;
  const char *dir = argv[1];
  size_t count = (size_t)strtoull(argv[2], NULL, 10);
  int late = atoi(argv[3]);
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) return fail(-1, "init", NULL);
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  float *buf = malloc(count * sizeof(float)), *got = malloc(count * sizeof(float));
  if (!buf || !got) return fail(rank, "malloc", comm);
  for (int it = 0; it < 3; it++) {
    for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1) * (float)(i % 5 + (size_t)it);
    if (it == 2) {
      char path[512];
      snprintf(path, sizeof(path), "%s/pid.%d", dir, rank);
      FILE *f = fopen(path, "w");
      if (!f) return fail(rank, "writing the pid file", comm);
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
      if (rank == late) {
        snprintf(path, sizeof(path), "%s/go", dir);
        for (int waited = 0; access(path, F_OK) != 0; waited++) {
          if (waited > 12000) return fail(rank, "waiting for the go file", comm);
          struct timespec ts = {0, 10 * 1000 * 1000};
          nanosleep(&ts, NULL);
        }
      }
    }
    if (it == 2 && p2p) { /* each rank's buffer goes to the next */
      xcclGroupStart();
      xcclSend(buf, count, xcclFloat32, (rank + 1) % n, comm, NULL);
      xcclRecv(got, count, xcclFloat32, (rank + n - 1) % n, comm, NULL);
      if (xcclGroupEnd() != xcclSuccess) return fail(rank, "send/recv", comm);
      int from = (rank + n - 1) % n;
      for (size_t i = 0; i < count; i++)
        if (got[i] != (float)(from + 1) * (float)(i % 5 + 2)) {
          printf("rank %d: WRONG in the send/recv at %zu: %g\n", rank, i, got[i]);
          return 1;
        }
      continue;
    }
    if (xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL) != xcclSuccess)
      return fail(rank, "all-reduce", comm);
    float ranks = (float)n * (float)(n + 1) / 2;
    for (size_t i = 0; i < count; i++)
      if (buf[i] != ranks * (float)(i % 5 + (size_t)it)) {
        printf("rank %d: WRONG in all-reduce %d at %zu: %g\n", rank, it + 1, i, buf[i]);
        return 1;
      }
  }
  printf("rank %d: OK\n", rank);
  free(buf);
  free(got);
  xcclCommDestroy(comm);
  return 0;
}
