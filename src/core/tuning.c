/*
 * tuning.c — XCCL_ALGO, and the choice among the algorithms of algo_table
 * by their costs.
 */
#include "tuning.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "log.h"

static const char *const coll_names[COLL_NKINDS] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                                         "reduce"};

static int algo_lookup(const char *name) {
  for (int a = 0; a < ALGO_COUNT; a++)
    if (strcasecmp(name, algo_table[a]->name) == 0) return a;
  return -1;
}

static int coll_lookup(const char *name) {
  for (int c = 0; c < COLL_NKINDS; c++)
    if (strcasecmp(name, coll_names[c]) == 0) return c;
  return -1;
}

/* "ring, rd": the algorithms' names, for messages. */
static void algo_list(char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int a = 0; a < ALGO_COUNT && n < len; a++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s", a ? ", " : "", algo_table[a]->name);
}

/* "allreduce, broadcast": the collectives a serves (every one when a < 0). */
static void coll_list(int a, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (int c = 0; c < COLL_NKINDS && n < len; c++)
    if (a < 0 || algo_serves((algo_t)a, (coll_kind_t)c))
      n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", coll_names[c]);
}

xcclResult_t tuning_parse(const char *text, int *forced) {
  int out[COLL_NKINDS];
  for (int c = 0; c < COLL_NKINDS; c++) out[c] = -1;
  char buf[256], list[128];
  snprintf(buf, sizeof(buf), "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    const char *an = colon ? colon + 1 : tok;
    int a = algo_lookup(an);
    if (a < 0) {
      algo_list(list, sizeof(list));
      return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: '%s' is not an algorithm (%s)", text, an, list);
    }
    if (colon) {
      *colon = '\0';
      int c = coll_lookup(tok);
      if (c < 0) {
        coll_list(-1, list, sizeof(list));
        return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: '%s' is not a collective with algorithms (%s)",
                       text, tok, list);
      }
      if (!algo_serves((algo_t)a, (coll_kind_t)c)) {
        coll_list(a, list, sizeof(list));
        return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_ALGO=%s: %s does not serve %s (it serves %s)", text,
                       algo_table[a]->name, coll_names[c], list);
      }
      out[c] = a;
    } else {
      for (int c = 0; c < COLL_NKINDS; c++)
        if (algo_serves((algo_t)a, (coll_kind_t)c)) out[c] = a;
    }
  }
  memcpy(forced, out, sizeof(out));
  return xcclSuccess;
}

algo_t tuning_pick(const int *forced, coll_kind_t coll, size_t bytes, int nranks, size_t slot) {
  if (forced[coll] >= 0) return (algo_t)forced[coll];
  if (nranks < 2) return ALGO_RING;
  algo_t best = ALGO_RING;
  double best_cost = HUGE_VAL;
  for (int a = 0; a < ALGO_COUNT; a++) {
    if (!algo_serves((algo_t)a, coll)) continue;
    double c = algo_table[a]->cost(coll, bytes, nranks, slot);
    if (c < best_cost) best = (algo_t)a, best_cost = c;
  }
  return best;
}
