/* perf_algo.c — xccl-perf --algo (perf_algo.h). */
#include "perf_algo.h"

#include <stdio.h>
#include <string.h>

/* Splits parent into a copy (every rank, same key order) running algo for
 * collective. */
static xcclResult_t algo_comm(xcclComm_t parent, int rank, const char *collective, const char *algo,
                              xcclComm_t *out) {
  char words[96];
  snprintf(words, sizeof(words), "%s:%s", collective, algo);
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.algo = words;
  cfg.commName = words;
  return xcclCommSplit(parent, 0, rank, out, &cfg);
}

int perf_algo_open(xcclComm_t parent, int rank, const char *collective, const char *words, perf_algo_t *algos) {
  const char *names[PERF_MAX_ALGOS];
  int n = PERF_MAX_ALGOS, all = strcmp(words, "all") == 0;
  if (xcclGetAlgorithms(collective, names, &n) != xcclSuccess) {
    if (rank == 0) fprintf(stderr, "xccl-perf: --algo: %s has no algorithms to choose from\n", collective);
    return -1;
  }
  if (n > PERF_MAX_ALGOS) n = PERF_MAX_ALGOS;
  char list[256];
  int want = 0;
  const char *chosen[PERF_MAX_ALGOS];
  if (all) {
    memcpy(chosen, names, sizeof(names[0]) * (size_t)n);
    want = n;
  } else {
    snprintf(list, sizeof(list), "%s", words);
    for (char *save = NULL, *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      int i = 0;
      while (i < n && strcmp(names[i], w) != 0) i++;
      if (i == n || want == PERF_MAX_ALGOS) {
        if (rank == 0) {
          fprintf(stderr, "xccl-perf: --algo: '%s' is not an algorithm of %s; it has:", w, collective);
          for (int j = 0; j < n; j++) fprintf(stderr, " %s", names[j]);
          fprintf(stderr, "\n");
        }
        return -1;
      }
      chosen[want++] = names[i];
    }
  }
  int made = 0;
  for (int i = 0; i < want; i++) {
    xcclComm_t c = NULL;
    xcclResult_t res = algo_comm(parent, rank, collective, chosen[i], &c);
    if (res == xcclSuccess) {
      algos[made++] = (perf_algo_t){chosen[i], c};
      continue;
    }
    /* Refused alike on every rank (the init's checks are agreed). */
    if (rank == 0)
      fprintf(stderr, "xccl-perf: --algo: %s cannot run %s here: %s\n", chosen[i], collective,
              xcclGetLastError(NULL));
    if (!all) {
      perf_algo_close(algos, made);
      return -1;
    }
  }
  return made;
}

void perf_algo_close(perf_algo_t *algos, int n) {
  for (int i = 0; i < n; i++) (void)xcclCommDestroy(algos[i].comm);
}

int perf_algo_has(const char *collective) {
  int n = 0;
  return xcclGetAlgorithms(collective, NULL, &n) == xcclSuccess && n > 0;
}

const char *perf_algo_chosen(xcclComm_t parent, const char *collective, size_t count, xcclDataType_t type) {
  const char *name = "?";
  if (xcclCommGetAlgorithm(parent, collective, count, type, &name) != xcclSuccess) return "?";
  return name;
}
