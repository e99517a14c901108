/* topo_fixtures.h — the saved machines of tests/data/topologies, for the
 * topo tests: counts.tsv lists each file with its GPU, NIC, RDMA NIC and NUMA
 * counts and whether it has an NVSwitch, as counted from the XML by count.py. */
#ifndef XCCL_TEST_TOPO_FIXTURES_H
#define XCCL_TEST_TOPO_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "topo.h"

/* dir/file loaded, or the test exits 1 saying why. */
static inline topo_system_t *fixture_load(const char *dir, const char *file) {
  char p[1100];
  topo_system_t *sys = NULL;
  snprintf(p, sizeof(p), "%s/%s", dir, file);
  if (topo_system_load_file(p, &sys) != xcclSuccess) {
    fprintf(stderr, "%s: %s\n", p, err_last());
    exit(1);
  }
  return sys;
}

typedef struct {
  char file[256]; /* relative to the data folder */
  char path[1024];
  int gpus, nics, rdma_nics, numa, nvswitch;
} fixture_t;

/* Reads dir/counts.tsv into *list_p; returns the count, -1 on error. */
static inline int fixtures_read(const char *dir, fixture_t **list_p) {
  char p[1024];
  snprintf(p, sizeof(p), "%s/counts.tsv", dir);
  FILE *f = fopen(p, "r");
  if (!f) {
    perror(p);
    return -1;
  }
  fixture_t *list = NULL;
  *list_p = NULL;
  int n = 0;
  char line[1024];
  while (fgets(line, sizeof(line), f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    fixture_t x;
    memset(&x, 0, sizeof(x));
    if (sscanf(line, "%255s %d %d %d %d %d", x.file, &x.gpus, &x.nics, &x.rdma_nics, &x.numa, &x.nvswitch) != 6) continue;
    snprintf(x.path, sizeof(x.path), "%s/%s", dir, x.file);
    fixture_t *nl = realloc(list, (size_t)(n + 1) * sizeof(*nl));
    if (!nl) break;
    list = nl;
    list[n++] = x;
  }
  fclose(f);
  *list_p = list;
  return n;
}

/* Runs fn(arg) with stderr (where log lines go) in a file; *res_p gets
 * what fn returned. Returns the text written (caller frees), NULL when no
 * file could be made. */
static inline char *fixture_stderr_of(xcclResult_t (*fn)(void *), void *arg, xcclResult_t *res_p) {
  char tmpl[] = "/tmp/xccl-topo-test-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return NULL;
  unlink(tmpl);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  *res_p = fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  off_t n = lseek(fd, 0, SEEK_END);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text && pread(fd, text, (size_t)n, 0) != n) n = 0;
  if (text) text[n] = 0;
  close(fd);
  return text;
}

#endif
