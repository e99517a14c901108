/*
 * bench_topo_search FILE [--iters N] [--max-ms M] — how long the channel
 * search takes on a machine (the 16-GPU DGX-2 by default in the tests):
 * prints the median and worst of N runs in ms, and, with --max-ms, exits 1
 * when the median exceeds M (a generous bound; speed is for benchmarks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "topo.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [--iters N] [--max-ms M]\n", argv[0]);
    return 2;
  }
  int iters = 20;
  double max_ms = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-ms")) max_ms = atof(argv[i + 1]);
  }
  if (iters < 1 || iters > 100000) iters = 20;
  double t0 = now_ms();
  topo_system_t *sys = NULL;
  if (topo_system_load_file(argv[1], &sys) != xcclSuccess) {
    fprintf(stderr, "%s\n", err_last());
    return 1;
  }
  double load_ms = now_ms() - t0;
  double *t = malloc((size_t)iters * sizeof(double));
  topo_channels_t chs;
  for (int i = 0; i < iters; i++) {
    double s = now_ms();
    if (topo_search_channels(sys, NULL, 0, TOPO_MAX_CHANNELS, &chs) != xcclSuccess) {
      fprintf(stderr, "%s\n", err_last());
      return 1;
    }
    t[i] = now_ms() - s;
  }
  qsort(t, (size_t)iters, sizeof(double), cmp);
  char desc[256];
  printf("%s: %d GPUs, load+paths %.2f ms, search median %.3f ms, worst %.3f ms over %d runs; %s\n", argv[1],
         topo_ngpus(sys), load_ms, t[iters / 2], t[iters - 1], iters, topo_channels_describe(sys, &chs, desc, sizeof(desc)));
  int rc = max_ms > 0 && t[iters / 2] > max_ms;
  if (rc) printf("median %.3f ms is over the bound of %.1f ms\n", t[iters / 2], max_ms);
  free(t);
  topo_system_free(sys);
  return rc;
}
