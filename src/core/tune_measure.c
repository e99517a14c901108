/*
 * tune_measure.c — XCCL_TUNE=measure: the cost model's per-step latency
 * (alpha) and bandwidth (beta) measured once per communicator at init, on
 * the links its collectives actually cross, instead of taken from the table
 * of tuning.c.
 *
 * What is timed is the ring all-reduce on the communicator's own channels,
 * which are connected by then (no connection is made for it):
 *   - 8 bytes, MEASURE_SMALL_ITERS times: 2(k-1) steps each, so
 *     alpha = t_small / (2(k-1));
 *   - MEASURE_BIG bytes, MEASURE_BIG_ITERS times: the ring's formula
 *     (algo_ring.c) t = (2(k-1) + loops - 1) alpha + 2(k-1)/k B / beta,
 *     solved for beta.
 * A step waits for the slowest link of the ring, so on ranks spread over
 * hosts the figures are the network's; on one host, shared memory's (or the
 * sockets', under XCCL_TRANSPORT=socket). Each rank times its own calls;
 * the ranks then all-gather their figures over the bootstrap and each takes
 * the medians, so every rank holds the same constants and picks the same
 * algorithm for the same call.
 */
#include "tune_measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bootstrap.h"
#include "clock.h"
#include "comm.h"
#include "config.h"
#include "error.h"
#include "group.h"
#include "log.h"
#include "op.h"

#define MEASURE_SMALL 8
#define MEASURE_SMALL_ITERS 20
#define MEASURE_BIG (4u << 20)
#define MEASURE_BIG_ITERS 3
#define MEASURE_WARMUP 2

xcclResult_t tune_check_config(void) {
  const char *v = config_str(CFG_TUNE);
  if (strcasecmp(v, "table") == 0 || strcasecmp(v, "measure") == 0) return xcclSuccess;
  return err_set(xcclInvalidUsage, LOG_INIT,
                 "XCCL_TUNE=%s: expected table (the cost model's documented constants) or measure (timed once at "
                 "init on the communicator's own links)",
                 v);
}

/* Seconds per call of `iters` ring all-reduces of `bytes` on comm. */
static xcclResult_t time_ring(struct xcclComm *comm, void *buf, size_t bytes, int iters, double *s_p) {
  group_op_t op = {.kind = GROUP_COLL, .comm = comm};
  op.coll = (coll_args_t){.name = "allreduce (XCCL_TUNE=measure)",
                          .coll = COLL_ALLREDUCE,
                          .sendbuff = buf,
                          .recvbuff = buf,
                          .count = bytes,
                          .send_elems = bytes,
                          .recv_elems = bytes,
                          .type = xcclUint8,
                          .op = xcclMax, /* in place, any bytes: the result stays in range */
                          .root = -1,
                          .algo = ALGO_RING};
  op_coll_sizes(&op.coll, 1, comm->nchannels); /* uint8: one byte an element */
  op.bytes = op.coll.bytes;
  uint64_t t0 = 0;
  for (int i = 0; i < MEASURE_WARMUP + iters; i++) {
    if (i == MEASURE_WARMUP) t0 = clock_ns();
    group_op_t one = op;
    TRY(group_run_now(&one, 1));
  }
  *s_p = (double)(clock_ns() - t0) / 1e9 / iters;
  return xcclSuccess;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[i * stride + at] over i < n (v reordered). */
static double median_of(double *v, int n, int stride, int at, double *tmp) {
  for (int i = 0; i < n; i++) tmp[i] = v[(size_t)i * stride + at];
  qsort(tmp, (size_t)n, sizeof(*tmp), cmp_double);
  return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

xcclResult_t tune_measure(struct xcclComm *comm) {
  int k = comm->nranks;
  if (k < 2 || strcasecmp(config_str(CFG_TUNE), "measure") != 0) return xcclSuccess;
  uint64_t t0 = clock_ns();
  double *all = calloc((size_t)k * 2 + (size_t)k, sizeof(*all)), *tmp = all + (size_t)k * 2;
  uint8_t *buf = calloc(MEASURE_BIG, 1);
  xcclResult_t res = xcclSuccess;
  if (!all || !buf) {
    res = err_set(xcclSystemError, LOG_INIT, "XCCL_TUNE=measure: out of memory for its %u-byte buffer", MEASURE_BIG);
    goto out;
  }
  double t_small, t_big;
  TRY_GOTO(time_ring(comm, buf, MEASURE_SMALL, MEASURE_SMALL_ITERS, &t_small), out);
  TRY_GOTO(time_ring(comm, buf, MEASURE_BIG, MEASURE_BIG_ITERS, &t_big), out);
  double steps = 2.0 * (k - 1), slot = (double)comm->peers[comm->rank].chunk_size;
  double loops = ceil((double)MEASURE_BIG / (k * slot));
  double alpha = t_small / steps;
  double moved = 2.0 * (k - 1) / k * MEASURE_BIG, wire = t_big - (steps + loops - 1) * alpha;
  /* Latency that dwarfs the big call's time leaves nothing to divide: the
   * link is then at least as fast as the bytes moved in the whole call. */
  double beta = moved / (wire > t_big / 10 ? wire : t_big / 10);
  all[2 * comm->rank] = alpha, all[2 * comm->rank + 1] = beta;
  TRY_GOTO(bootstrap_allgather(comm->bs, all, 2 * sizeof(*all)), out);
  /* The ring measured crosses the site's flat link: the network's where the
   * ranks span hosts, the one inside the host otherwise. */
  algo_site_t *site = comm_site_edit(comm);
  algo_link_t *link = &site->link[site->flat], table = *link;
  link->alpha_s = median_of(all, k, 2, 0, tmp);
  link->beta_bps = median_of(all, k, 2, 1, tmp);
  INFO(INIT,
       "rank %d: XCCL_TUNE=measure: %.2f us per step, %.3f GB/s (medians of %d ranks; this rank %.2f us, %.3f GB/s; "
       "the table's %.2f us, %.3f GB/s), measured in %.1f ms",
       comm->rank, link->alpha_s * 1e6, link->beta_bps / 1e9, k, alpha * 1e6, beta / 1e9, table.alpha_s * 1e6,
       table.beta_bps / 1e9, (double)(clock_ns() - t0) / 1e6);
out:
  free(buf);
  free(all);
  return res == xcclSuccess ? res : err_prefix(res, "XCCL_TUNE=measure");
}
