/*
 * test_topo_channels.c DATA_DIR — how many channels, and forced rings
 * (issue 18):
 * - on every saved machine, the channels the library chooses are at most
 *   the default cap (TOPO_DEFAULT_MAX_CHANNELS), at least one with a GPU;
 * - on every saved machine, the channels written as an NCCL graph read back
 *   (topo_graph_file_parse, and XCCL_GRAPH_FILE through
 *   topo_channels_choose) as the same rings: GPU orders, NICs, bandwidths;
 * - equal totals prefer fewer channels: synthetic/equal-bw-2gpu-4nic.xml
 *   gives 1 channel, not one per NIC; synthetic/slow-nics-2gpu-4nic.xml,
 *   where a second NIC does add bandwidth and more do not, gives 2 (not 4);
 * - XCCL_MIN_NCHANNELS / XCCL_MAX_NCHANNELS clamp the result (the search's
 *   and the graph file's), the total bandwidth kept, and bound
 *   XCCL_NCHANNELS where set; a minimum above the maximum is lowered;
 * - a graph file NCCL could have written (several graphs, hex devs) is read;
 *   graph files that do not fit are refused with the file, the line and the
 *   reason.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"

static topo_system_t *load(const char *dir, const char *file) { return fixture_load(dir, file); }

static void env(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
  config_reset_for_test();
}

/* Same rings: GPU orders, NICs, bandwidth (the file has 6 digits). */
static int same_rings(const topo_channels_t *a, const topo_channels_t *b, char *why, size_t len) {
  if (a->nchannels != b->nchannels) return snprintf(why, len, "%d channels, then %d", a->nchannels, b->nchannels), 0;
  for (int c = 0; c < a->nchannels; c++) {
    const topo_channel_t *x = &a->ch[c], *y = &b->ch[c];
    if (x->ngpus != y->ngpus || memcmp(x->gpus, y->gpus, sizeof(int) * (size_t)x->ngpus) != 0)
      return snprintf(why, len, "channel %d: other GPU order", c), 0;
    if (x->nic != y->nic) return snprintf(why, len, "channel %d: NIC %d, then %d", c, x->nic, y->nic), 0;
    if (fabs(x->bw - y->bw) > 1e-5 * (1 + x->bw))
      return snprintf(why, len, "channel %d: %.6f GB/s, then %.6f", c, x->bw, y->bw), 0;
    if (x->worst != y->worst) return snprintf(why, len, "channel %d: path kind differs", c), 0;
  }
  return 1;
}

static double total(const topo_channels_t *c) {
  double t = 0;
  for (int i = 0; i < c->nchannels; i++) t += c->ch[i].bw;
  return t;
}

static char tmpdir[] = "/tmp/xccl-topo-chan-XXXXXX";

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* Every fixture: the cap, and the graph round trip both ways. */
static void every_fixture(const char *dir) {
  fixture_t *fx = NULL;
  int n = fixtures_read(dir, &fx);
  CHECK(n >= 40, "counts.tsv lists %d machines", n);
  char gpath[256];
  snprintf(gpath, sizeof(gpath), "%s/graph.xml", tmpdir);
  for (int i = 0; i < n; i++) {
    topo_system_t *sys = NULL;
    if (topo_system_load_file(fx[i].path, &sys) != xcclSuccess) {
      CHECK(0, "%s: %s", fx[i].file, err_last());
      continue;
    }
    topo_channels_t chs, back, forced;
    char why[256], *text = NULL;
    CHECK(topo_channels_choose(sys, NULL, 0, 0, &chs) == xcclSuccess, "%s: %s", fx[i].file, err_last());
    CHECK(chs.nchannels <= TOPO_DEFAULT_MAX_CHANNELS, "%s: %d channels, above the cap %d", fx[i].file, chs.nchannels,
          TOPO_DEFAULT_MAX_CHANNELS);
    CHECK((chs.nchannels >= 1) == (topo_ngpus(sys) > 0), "%s: %d channels over %d GPUs", fx[i].file, chs.nchannels,
          topo_ngpus(sys));
    if (topo_ngpus(sys) == 0) {
      topo_system_free(sys);
      continue;
    }
    CHECK(topo_render(sys, &chs, TOPO_FMT_NCCL_GRAPH, &text) == xcclSuccess, "%s: render: %s", fx[i].file, err_last());
    if (text) {
      CHECK(strncmp(text, "<graphs version=\"1\">", 20) == 0, "%s: graph starts '%.40s'", fx[i].file, text);
      xcclResult_t r = topo_graph_file_parse(sys, text, strlen(text), "graph", NULL, 0, &back);
      CHECK(r == xcclSuccess, "%s: our graph does not read back: %s\n%s", fx[i].file, err_last(), text);
      if (r == xcclSuccess)
        CHECK(same_rings(&chs, &back, why, sizeof(why)), "%s: graph round trip: %s", fx[i].file, why);
      write_file(gpath, text);
      env("XCCL_GRAPH_FILE", gpath);
      r = topo_channels_choose(sys, NULL, 0, 0, &forced);
      CHECK(r == xcclSuccess, "%s: XCCL_GRAPH_FILE: %s", fx[i].file, err_last());
      if (r == xcclSuccess)
        CHECK(same_rings(&chs, &forced, why, sizeof(why)), "%s: XCCL_GRAPH_FILE: %s", fx[i].file, why);
      env("XCCL_GRAPH_FILE", NULL);
    }
    free(text);
    topo_system_free(sys);
  }
  unlink(gpath);
  free(fx);
}

static void fewer_channels(const char *dir) {
  topo_system_t *eq = load(dir, "synthetic/equal-bw-2gpu-4nic.xml"),
                *slow = load(dir, "synthetic/slow-nics-2gpu-4nic.xml");
  topo_channels_t a, b;
  CHECK(topo_ngpus(eq) == 2 && topo_nnics(eq) == 4, "synthetic: %d GPUs %d NICs", topo_ngpus(eq), topo_nnics(eq));
  CHECK(topo_search_channels(eq, NULL, 0, 16, &a) == xcclSuccess, "search: %s", err_last());
  char desc[1024];
  CHECK(a.nchannels == 1, "equal bandwidth: %d channels, want 1: %s", a.nchannels,
        topo_channels_describe(eq, &a, desc, sizeof(desc)));
  double bw_pci = 0;
  topo_gpu_gpu_path(eq, 0, 1, &bw_pci);
  CHECK(a.nchannels >= 1 && fabs(a.ch[0].bw - bw_pci) < 1e-9, "equal bandwidth: %.3f GB/s, the path has %.3f",
        a.nchannels ? a.ch[0].bw : 0, bw_pci);
  CHECK(topo_search_channels(slow, NULL, 0, 16, &b) == xcclSuccess, "search: %s", err_last());
  CHECK(b.nchannels == 2 && b.ch[0].nic != b.ch[1].nic, "slow NICs: %d channels, want 2 on 2 NICs: %s", b.nchannels,
        topo_channels_describe(slow, &b, desc, sizeof(desc)));
  CHECK(fabs(total(&a) - total(&b)) < 1e-6, "the same total inside the node: %.3f and %.3f", total(&a), total(&b));
  topo_system_free(eq);
  topo_system_free(slow);
}

static void clamp(const char *dir) {
  topo_system_t *p4d = load(dir, "nccl/aws-p4d.24xlarge-a100-topo.xml"),
                *dgx2 = load(dir, "hwloc/hwloc-nvidia-dgx2h-16xV100-v2fmt.xml");
  topo_channels_t c, ref;
  CHECK(topo_channels_choose(p4d, NULL, 0, 0, &ref) == xcclSuccess && ref.nchannels == 2, "p4d: %d channels",
        ref.nchannels);
  env("XCCL_MAX_NCHANNELS", "1");
  CHECK(topo_channels_choose(p4d, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 1, "MAX 1: %d channels",
        c.nchannels);
  CHECK(topo_channels_choose(p4d, NULL, 0, 2, &c) == xcclSuccess && c.nchannels == 2,
        "max_channels 2 over XCCL_MAX_NCHANNELS: %d", c.nchannels);
  env("XCCL_MAX_NCHANNELS", NULL);
  /* The DGX-2: one ring of every NVLink; at least 6 repeat it. */
  CHECK(topo_channels_choose(dgx2, NULL, 0, 0, &ref) == xcclSuccess && ref.nchannels == 1, "dgx2: %d channels",
        ref.nchannels);
  env("XCCL_MIN_NCHANNELS", "6");
  CHECK(topo_channels_choose(dgx2, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 6, "MIN 6: %d channels",
        c.nchannels);
  for (int i = 0; i < c.nchannels; i++)
    CHECK(
        memcmp(c.ch[i].gpus, ref.ch[0].gpus, sizeof(ref.ch[0].gpus)) == 0 && fabs(c.ch[i].bw - ref.ch[0].bw / 6) < 1e-9,
        "MIN 6: channel %d is not the ring at a sixth (%.3f)", i, c.ch[i].bw);
  CHECK(fabs(total(&c) - total(&ref)) < 1e-9, "MIN 6: total %.3f, was %.3f", total(&c), total(&ref));
  env("XCCL_MAX_NCHANNELS", "4"); /* a minimum above the maximum is lowered to it */
  int lo, hi;
  topo_nchannels_limits(&lo, &hi);
  CHECK(lo == 4 && hi == 4, "MIN 6 MAX 4: limits %d..%d", lo, hi);
  CHECK(topo_channels_choose(dgx2, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 4, "MIN 6 MAX 4: %d", c.nchannels);
  env("XCCL_MAX_NCHANNELS", NULL);
  env("XCCL_MIN_NCHANNELS", NULL);
  /* Uneven copies: 3 channels raised to 8 are copied 3, 3 and 2 times. */
  topo_channels_t u;
  memset(&u, 0, sizeof(u));
  u.nchannels = 3;
  for (int i = 0; i < 3; i++) u.ch[i] = (topo_channel_t){.ngpus = 1, .gpus = {i}, .nic = -1, .bw = 12};
  topo_channels_clamp(&u, 8, 16);
  CHECK(u.nchannels == 8 && u.ch[0].bw == 4 && u.ch[2].bw == 6 && u.ch[5].gpus[0] == 2 && u.ch[7].gpus[0] == 1 &&
            fabs(total(&u) - 36) < 1e-9,
        "clamp 3 -> 8: %d channels, bw %.2f %.2f", u.nchannels, u.ch[0].bw, u.ch[2].bw);
  topo_channels_clamp(&u, 1, 5);
  CHECK(u.nchannels == 5, "clamp to at most 5: %d", u.nchannels);
  /* The communicator's host rings. */
  CHECK(topo_comm_nchannels() == 2, "default host rings %d", topo_comm_nchannels());
  env("XCCL_NCHANNELS", "24");
  CHECK(topo_comm_nchannels() == 24, "XCCL_NCHANNELS=24 alone: %d (the default cap is not applied to it)",
        topo_comm_nchannels());
  env("XCCL_MAX_NCHANNELS", "8");
  CHECK(topo_comm_nchannels() == 8, "XCCL_NCHANNELS=24 MAX 8: %d", topo_comm_nchannels());
  env("XCCL_MAX_NCHANNELS", NULL);
  env("XCCL_NCHANNELS", NULL);
  env("NCCL_MIN_NCHANNELS", "4");
  CHECK(topo_comm_nchannels() == 4, "NCCL_MIN_NCHANNELS=4: %d host rings", topo_comm_nchannels());
  CHECK(topo_channels_choose(dgx2, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 4, "NCCL_MIN_NCHANNELS=4: %d",
        c.nchannels);
  env("NCCL_MIN_NCHANNELS", NULL);
  /* A forced graph is clamped too. */
  char *text = NULL, gpath[256];
  snprintf(gpath, sizeof(gpath), "%s/p4d.xml", tmpdir);
  CHECK(topo_channels_choose(p4d, NULL, 0, 0, &ref) == xcclSuccess, "p4d");
  CHECK(topo_render(p4d, &ref, TOPO_FMT_NCCL_GRAPH, &text) == xcclSuccess, "render p4d");
  if (text) write_file(gpath, text);
  free(text);
  env("XCCL_GRAPH_FILE", gpath);
  env("XCCL_MAX_NCHANNELS", "1");
  CHECK(topo_channels_choose(p4d, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 1 && c.ch[0].nic == ref.ch[0].nic,
        "graph file with MAX 1: %d channels", c.nchannels);
  env("XCCL_MAX_NCHANNELS", NULL);
  env("XCCL_MIN_NCHANNELS", "5");
  CHECK(topo_channels_choose(p4d, NULL, 0, 0, &c) == xcclSuccess && c.nchannels == 5 && c.ch[4].nic == ref.ch[0].nic &&
            fabs(total(&c) - total(&ref)) < 1e-5 * total(&ref),
        "graph file with MIN 5: %d channels, %.6f GB/s in all, searched %.6f", c.nchannels, total(&c), total(&ref));
  env("XCCL_MIN_NCHANNELS", NULL);
  env("XCCL_GRAPH_FILE", NULL);
  unlink(gpath);
  topo_system_free(p4d);
  topo_system_free(dgx2);
}

/* What NCCL writes: several graphs, the ring one not first, devs in hex. */
static const char nccl_style[] =
    "<graphs version=\"1\">\n"
    "  <graph id=\"1\" pattern=\"1\" crossnic=\"0\" nchannels=\"1\" speedintra=\"20\" speedinter=\"20\" "
    "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"1\">\n"
    "    <channel><net dev=\"0\"/><gpu dev=\"0\"/><gpu dev=\"1\"/><net dev=\"0\"/></channel>\n"
    "  </graph>\n"
    "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"2\" speedintra=\"3\" speedinter=\"3\" "
    "latencyinter=\"0\" typeintra=\"SYS\" typeinter=\"PIX\" samechannels=\"0\">\n"
    "    <channel>\n"
    "      <net dev=\"0x1\"/>\n"
    "      <gpu dev=\"0x2\"/><gpu dev=\"0x3\"/><gpu dev=\"0x4\"/><gpu dev=\"0x5\"/>\n"
    "      <gpu dev=\"0x6\"/><gpu dev=\"0x7\"/><gpu dev=\"0\"/><gpu dev=\"0x1\"/>\n"
    "      <net dev=\"0x1\"/>\n"
    "    </channel>\n"
    "    <channel><net dev=\"0x3\"/><gpu dev=\"7\"/><gpu dev=\"6\"/><gpu dev=\"5\"/><gpu dev=\"4\"/>"
    "<gpu dev=\"3\"/><gpu dev=\"2\"/><gpu dev=\"1\"/><gpu dev=\"0\"/><net dev=\"0x2\"/></channel>\n"
    "  </graph>\n"
    "</graphs>\n";

/* Graph files that do not fit: refused with the line and the reason. */
static const struct {
  const char *text, *want; /* want: in the message, after "bad.xml:" */
} bad_graphs[] = {
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n<channel><gpu dev=\"0\"/>\n</graph>\n",
     "4: not well-formed"},
    {"<system version=\"1\"/>\n", "1: root element is <system>"},
    {"<graphs version=\"1\">\n  <graph id=\"1\" pattern=\"1\"/>\n</graphs>\n", "1: no ring graph"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\" speedintra=\"3\">\n<channel>\n<gpu dev=\"0\"/>\n"
     "<gpu dev=\"0x9\"/>\n</channel>\n</graph>\n</graphs>\n",
     "5: channel 0: GPU dev 0x9 is not in this topology"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n<channel><net dev=\"7\"/>\n<gpu dev=\"0\"/><gpu "
     "dev=\"1\"/>"
     "</channel>\n</graph>\n</graphs>\n",
     "3: channel 0: NIC dev 0x7 is not in this topology"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n<channel><gpu dev=\"0\"/><gpu dev=\"1\"/></channel>\n"
     "<channel>\n<gpu dev=\"1\"/>\n<gpu dev=\"1\"/>\n</channel>\n</graph>\n</graphs>\n",
     "6: channel 1 lists GPU dev 0x1 twice"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n\n<channel><gpu "
     "dev=\"0\"/></channel>\n</graph>\n</graphs>\n",
     "4: channel 0 does not hold GPU 1"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n<channel><gpu "
     "dev=\"zz\"/></channel>\n</graph>\n</graphs>\n",
     "3: <gpu dev=\"zz\">: not a device number"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\">\n<channel>\n</channel>\n</graph>\n</graphs>\n",
     "3: channel 0 has no <gpu>"},
    {"<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\" speedintra=\"fast\">\n</graph>\n</graphs>\n",
     "2: speedintra=\"fast\" is not a bandwidth"},
};

static void graph_files(const char *dir) {
  topo_system_t *p4d = load(dir, "nccl/aws-p4d.24xlarge-a100-topo.xml"),
                *two = load(dir, "synthetic/equal-bw-2gpu-4nic.xml");
  topo_channels_t c;
  CHECK(topo_graph_file_parse(p4d, nccl_style, strlen(nccl_style), "nccl.xml", NULL, 0, &c) == xcclSuccess,
        "NCCL-style graph: %s", err_last());
  int want0[] = {2, 3, 4, 5, 6, 7, 0, 1};
  CHECK(c.nchannels == 2 && memcmp(c.ch[0].gpus, want0, sizeof(want0)) == 0 && c.ch[0].nic == 1 && c.ch[1].nic == 3 &&
            c.ch[1].gpus[0] == 7 && c.ch[0].bw == 3 && c.ch[0].worst == TOPO_PATH_SYS,
        "NCCL-style graph: %d channels, ring 0 from GPU %d, NICs %d %d", c.nchannels, c.ch[0].gpus[0], c.ch[0].nic,
        c.ch[1].nic);
  /* A subset: the GPUs not driven are left out, the order kept. */
  int sub[] = {5, 0};
  CHECK(topo_graph_file_parse(p4d, nccl_style, strlen(nccl_style), "nccl.xml", sub, 2, &c) == xcclSuccess &&
            c.ch[0].ngpus == 2 && c.ch[0].gpus[0] == 5 && c.ch[0].gpus[1] == 0 && c.ch[1].gpus[0] == 5,
        "subset of the graph: %s", err_last());
  err_quiet(1);
  for (size_t k = 0; k < sizeof(bad_graphs) / sizeof(bad_graphs[0]); k++) {
    char want[256];
    snprintf(want, sizeof(want), "bad.xml:%s", bad_graphs[k].want);
    xcclResult_t r = topo_graph_file_parse(two, bad_graphs[k].text, strlen(bad_graphs[k].text), "bad.xml", NULL, 0, &c);
    CHECK(r == xcclInvalidArgument && strstr(err_last(), want), "bad graph %zu: %d '%s', want '%s'", k, r, err_last(),
          want);
  }
  /* Through XCCL_GRAPH_FILE: the variable and the file named. */
  char gpath[256];
  snprintf(gpath, sizeof(gpath), "%s/bad.xml", tmpdir);
  write_file(gpath, bad_graphs[3].text);
  env("XCCL_GRAPH_FILE", gpath);
  CHECK(topo_channels_choose(two, NULL, 0, 0, &c) == xcclInvalidArgument && strstr(err_last(), "XCCL_GRAPH_FILE") &&
            strstr(err_last(), gpath) && strstr(err_last(), ":5: "),
        "XCCL_GRAPH_FILE with a bad file: '%s'", err_last());
  env("XCCL_GRAPH_FILE", "/nonexistent-graph.xml");
  CHECK(topo_channels_choose(two, NULL, 0, 0, &c) != xcclSuccess && strstr(err_last(), "/nonexistent-graph.xml"),
        "a missing XCCL_GRAPH_FILE: '%s'", err_last());
  env("XCCL_GRAPH_FILE", NULL);
  unlink(gpath);
  err_quiet(0);
  topo_system_free(p4d);
  topo_system_free(two);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *keep[] = {"XCCL_GRAPH_FILE", "XCCL_MIN_NCHANNELS", "XCCL_MAX_NCHANNELS", "XCCL_NCHANNELS",
                        "NCCL_GRAPH_FILE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"};
  for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) unsetenv(keep[i]);
  config_reset_for_test();
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  every_fixture(argv[1]);
  fewer_channels(argv[1]);
  clamp(argv[1]);
  graph_files(argv[1]);
  rmdir(tmpdir);
  return test_finish("topo_channels");
}
