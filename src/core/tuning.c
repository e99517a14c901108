/*
 * tuning.c — the cost model and XCCL_ALGO.
 *
 * Costs, for k ranks, B bytes and slots of S bytes, with a per-step latency
 * ALPHA and a link bandwidth BETA:
 *   ring all-reduce: 2(k-1) steps of B/k, pipelined over ceil(B/(kS)) loops:
 *     (2(k-1) + loops - 1) ALPHA + 2(k-1)/k B / BETA
 *   recursive doubling: `steps` = log2(p2) (+2 if k is not a power of two)
 *     exchanges of the whole buffer, one slot-sized piece after the other:
 *     ceil(B/S) steps ALPHA + steps B / BETA
 * The constants are the socket transport on loopback as measured here with
 * xccl-perf (8-byte all-reduce on 2 ranks: ~60 us for the ring's 2 steps,
 * ~33 us for recursive doubling's 1; 16 MiB: ~2.2 GB/s bus bandwidth); they
 * decide crossovers, not absolute times.
 */
#include "tuning.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "log.h"

#define ALPHA_S 30e-6
#define BETA_BPS 1.5e9

static const char *const coll_names[RING_COLL_NCOLLS] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                                         "reduce"};
static const char *const algo_names[ALGO_COUNT] = {"ring", "rd"};

const char *algo_name(algo_t a) { return (unsigned)a < ALGO_COUNT ? algo_names[a] : "?"; }

/* Does the algorithm serve the collective? */
static int algo_serves(algo_t a, int coll) { return a == ALGO_RING || (a == ALGO_RD && coll == RING_COLL_ALLREDUCE); }

static int lookup(const char *name, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(name, names[i]) == 0) return i;
  return -1;
}

xcclResult_t tuning_parse(const char *text, int *forced) {
  int out[RING_COLL_NCOLLS];
  for (int c = 0; c < RING_COLL_NCOLLS; c++) out[c] = -1;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    const char *an = colon ? colon + 1 : tok;
    int a = lookup(an, algo_names, ALGO_COUNT);
    if (a < 0)
      return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: '%s' is not an algorithm (ring, rd)", text, an);
    if (colon) {
      *colon = '\0';
      int c = lookup(tok, coll_names, RING_COLL_NCOLLS);
      if (c < 0)
        return err_set(xcclInvalidUsage, LOG_INIT,
                       "XCCL_ALGO=%s: '%s' is not a collective with algorithms (allreduce, allgather, reducescatter, "
                       "broadcast, reduce)",
                       text, tok);
      if (!algo_serves(a, c))
        return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: %s does not serve %s (it serves allreduce)", text,
                       algo_names[a], coll_names[c]);
      out[c] = a;
    } else {
      for (int c = 0; c < RING_COLL_NCOLLS; c++)
        if (algo_serves(a, c)) out[c] = a;
    }
  }
  memcpy(forced, out, sizeof(out));
  return xcclSuccess;
}

static int log2_floor(int k) {
  int l = 0;
  while ((2 << l) <= k) l++;
  return l;
}

algo_t tuning_pick(const int *forced, ring_coll_t coll, size_t bytes, int nranks, size_t slot) {
  if (forced[coll] >= 0) return (algo_t)forced[coll];
  if (coll != RING_COLL_ALLREDUCE || nranks < 2) return ALGO_RING;
  double k = nranks, b = (double)bytes, s = (double)(slot ? slot : 1);
  double loops = b > 0 ? ceil(b / (k * s)) : 1, pieces = b > 0 ? ceil(b / s) : 1;
  double ring = (2 * (k - 1) + loops - 1) * ALPHA_S + 2 * (k - 1) / k * b / BETA_BPS;
  int steps = log2_floor(nranks) + ((nranks & (nranks - 1)) ? 2 : 0);
  double rd = pieces * steps * ALPHA_S + steps * b / BETA_BPS;
  return rd < ring ? ALGO_RD : ALGO_RING;
}
