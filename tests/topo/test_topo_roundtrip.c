/*
 * test_topo_roundtrip.c DATA_DIR — dump -> reload gives the same graph and
 * the same channels: for every saved machine, the NCCL XML we write reads
 * back into a system whose own dump is byte for byte the same, with the same
 * counts, the same path matrix and the same channels. Also XCCL_TOPO_FILE /
 * topo_system_load and topo_dump_file (XCCL_TOPO_DUMP_FILE's writer).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"

static char *channels_text(const topo_system_t *sys) {
  topo_channels_t chs;
  static char buf[8192];
  if (topo_search_channels(sys, NULL, 0, 16, &chs) != xcclSuccess) return strdup("search failed");
  return strdup(topo_channels_describe(sys, &chs, buf, sizeof(buf)));
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  fixture_t *fx = NULL;
  int n = fixtures_read(argv[1], &fx);
  for (int i = 0; i < n; i++) {
    topo_system_t *a = NULL, *b = NULL;
    if (topo_system_load_file(fx[i].path, &a) != xcclSuccess) {
      CHECK(0, "%s: %s", fx[i].file, err_last());
      continue;
    }
    char *xa = NULL, *xb = NULL, *ma = NULL, *mb = NULL;
    CHECK(topo_render(a, NULL, TOPO_FMT_XML, &xa) == xcclSuccess, "%s: dump failed", fx[i].file);
    if (!xa) continue;
    xcclResult_t r = topo_system_load_buffer(xa, strlen(xa), "dump", &b);
    CHECK(r == xcclSuccess, "%s: our dump does not load: %s", fx[i].file, err_last());
    if (r == xcclSuccess) {
      topo_render(b, NULL, TOPO_FMT_XML, &xb);
      CHECK(xb && strcmp(xa, xb) == 0, "%s: dump of the reloaded graph differs:\n%s\n----\n%s", fx[i].file, xa, xb ? xb : "");
      CHECK(topo_ngpus(a) == topo_ngpus(b) && topo_nnics(a) == topo_nnics(b) && topo_nnuma(a) == topo_nnuma(b),
            "%s: counts differ after reload", fx[i].file);
      topo_render(a, NULL, TOPO_FMT_MATRIX, &ma);
      topo_render(b, NULL, TOPO_FMT_MATRIX, &mb);
      CHECK(ma && mb && strcmp(ma, mb) == 0, "%s: paths differ after reload:\n%s\n----\n%s", fx[i].file, ma, mb);
      char *ca = channels_text(a), *cb = channels_text(b);
      CHECK(strcmp(ca, cb) == 0, "%s: channels differ after reload:\n%s\n%s", fx[i].file, ca, cb);
      free(ca);
      free(cb);
    }
    free(xa);
    free(xb);
    free(ma);
    free(mb);
    topo_system_free(a);
    topo_system_free(b);
  }
  /* The environment path: XCCL_TOPO_FILE, and the dump file writer. */
  char dump[] = "/tmp/xccl-topo-dump-XXXXXX";
  int fd = mkstemp(dump);
  CHECK(fd >= 0, "mkstemp");
  if (fd >= 0) close(fd);
  char p[1100];
  snprintf(p, sizeof(p), "%s/nccl/aws-p4d.24xlarge-a100-topo.xml", argv[1]);
  setenv("XCCL_TOPO_FILE", p, 1);
  config_reset_for_test();
  topo_system_t *s = NULL, *t = NULL;
  CHECK(topo_system_load(&s) == xcclSuccess, "XCCL_TOPO_FILE=%s: %s", p, err_last());
  CHECK(s && topo_ngpus(s) == 8 && topo_nnics(s) == 4, "XCCL_TOPO_FILE not used");
  if (s) CHECK(topo_dump_file(s, dump) == xcclSuccess, "topo_dump_file: %s", err_last());
  CHECK(topo_system_load_file(dump, &t) == xcclSuccess && topo_ngpus(t) == 8, "the dump file does not reload");
  CHECK(topo_dump_file(s, "/nonexistent-dir/x.xml") != xcclSuccess && strstr(err_last(), "/nonexistent-dir/x.xml"),
        "a dump to an unwritable path did not fail with its name: %s", err_last());
  setenv("XCCL_TOPO_FILE", "/nonexistent-topo.xml", 1);
  config_reset_for_test();
  topo_system_t *u = NULL;
  CHECK(topo_system_load(&u) != xcclSuccess && u == NULL && strstr(err_last(), "XCCL_TOPO_FILE") &&
            strstr(err_last(), "/nonexistent-topo.xml"),
        "a missing XCCL_TOPO_FILE: '%s'", err_last());
  unsetenv("XCCL_TOPO_FILE");
  config_reset_for_test();
  topo_system_free(s);
  topo_system_free(t);
  unlink(dump);
  free(fx);
  return test_finish("topo_roundtrip");
}
