/*
 * stats_rank.c — one rank of the XCCL_STATS_FILE tests (test_stats.py):
 * a known set of calls, with the library's own byte counters recorded
 * between them, so the test can hold the metrics file to both.
 *
 *   stats_rank DIR [HOLD_S]
 *     1. 5 all-reduces of B = nranks x 2 x 65536 floats (with XCCL_NCHANNELS=2
 *        and XCCL_ALGO=allreduce:ring each rank sends its next 2(k-1)/k x B)
 *     2. 4 groups of a send of S bytes to rank + 1 and a receive from rank - 1
 *     3. 3 broadcasts from rank 0 and 2 all-gathers
 *   After each phase it appends "phase peer sent received" lines for every
 *   peer (xcclCommGetPeerCounters) to DIR/counters.<rank> and waits for
 *   every rank to have done so (files DIR/sync.<phase>.<rank>: no traffic
 *   of xccl's, and no peer runs ahead into the next phase's bytes before
 *   this rank has counted its own), then destroys the
 *   communicator, which writes the metrics file a last time. With HOLD_S it
 *   first waits that long and copies DIR/stats.<rank>.prom (what
 *   XCCL_STATS_FILE=DIR/stats.%r.prom rewrote meanwhile, every
 *   XCCL_STATS_INTERVAL) to DIR/midrun.<rank>.prom.
 * Prints "rank R: OK" and exits 0, or says what failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "xccl.h"

#define P2P_BYTES 100000

static int fail(int rank, const char *what, xcclComm_t comm) {
  printf("rank %d: %s failed: %s\n", rank, what, xcclGetLastError(comm));
  return 1;
}

/* Copies DIR/stats.<rank>.prom to DIR/midrun.<rank>.prom; 0 when done. */
static int copy_midrun(const char *dir, int rank) {
  char from[4096], to[4096], buf[65536];
  snprintf(from, sizeof(from), "%s/stats.%d.prom", dir, rank);
  snprintf(to, sizeof(to), "%s/midrun.%d.prom", dir, rank);
  FILE *in = fopen(from, "r"), *out = in ? fopen(to, "w") : NULL;
  size_t n = 0;
  while (out && (n = fread(buf, 1, sizeof(buf), in)) > 0) fwrite(buf, 1, n, out);
  if (in) fclose(in);
  return out && fclose(out) == 0 ? 0 : -1;
}

static void record(FILE *f, xcclComm_t comm, int phase, int nranks, const char *dir, int rank) {
  for (int p = 0; p < nranks; p++) {
    xcclPeerCounters_t c = {0};
    if (xcclCommGetPeerCounters(comm, p, &c) == xcclSuccess)
      fprintf(f, "%d %d %llu %llu\n", phase, p, (unsigned long long)c.bytesSent, (unsigned long long)c.bytesRecv);
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/sync.%d.%d", dir, phase, rank);
  FILE *mark = fopen(path, "w");
  if (mark) fclose(mark);
  for (int p = 0; p < nranks; p++) {
    snprintf(path, sizeof(path), "%s/sync.%d.%d", dir, phase, p);
    while (access(path, F_OK) != 0) { /* a rank that died ends the job: xccl-run stops the others */
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: stats_rank DIR\n"), 2;
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) return fail(-1, "init", NULL);
  int rank = 0, n = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &n);
  char path[4096];
  snprintf(path, sizeof(path), "%s/counters.%d", argv[1], rank);
  FILE *out = fopen(path, "w");
  if (!out) return printf("rank %d: cannot write %s\n", rank, path), 1;
  size_t count = (size_t)n * 2 * 65536;
  float *buf = calloc(count * (size_t)n, sizeof(float));
  char *sbuf = calloc(P2P_BYTES, 1), *rbuf = calloc(P2P_BYTES, 1);
  if (!buf || !sbuf || !rbuf) return printf("rank %d: out of memory\n", rank), 1;
  for (int i = 0; i < 5; i++)
    if (xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL) != xcclSuccess)
      return fail(rank, "all-reduce", comm);
  record(out, comm, 1, n, argv[1], rank);
  for (int i = 0; i < 4; i++) {
    xcclGroupStart();
    xcclSend(sbuf, P2P_BYTES, xcclUint8, (rank + 1) % n, comm, NULL);
    xcclRecv(rbuf, P2P_BYTES, xcclUint8, (rank + n - 1) % n, comm, NULL);
    if (xcclGroupEnd() != xcclSuccess) return fail(rank, "send and receive", comm);
  }
  record(out, comm, 2, n, argv[1], rank);
  for (int i = 0; i < 3; i++)
    if (xcclBroadcast(buf, buf, count, xcclFloat32, 0, comm, NULL) != xcclSuccess) return fail(rank, "broadcast", comm);
  for (int i = 0; i < 2; i++)
    if (xcclAllGather(buf, buf + count, count / 4, xcclFloat32, comm, NULL) != xcclSuccess)
      return fail(rank, "all-gather", comm);
  record(out, comm, 3, n, argv[1], rank);
  fclose(out);
  if (argc > 2) {
    double hold = atof(argv[2]);
    struct timespec ts = {(time_t)hold, (long)((hold - (double)(time_t)hold) * 1e9)};
    nanosleep(&ts, NULL);
    if (copy_midrun(argv[1], rank) != 0) return printf("rank %d: no metrics file while it ran\n", rank), 1;
  }
  if (xcclCommDestroy(comm) != xcclSuccess) return fail(rank, "destroy", NULL);
  free(buf), free(sbuf), free(rbuf);
  printf("rank %d: OK\n", rank);
  return 0;
}
