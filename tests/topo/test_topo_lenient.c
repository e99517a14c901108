/*
 * test_topo_lenient.c DATA_DIR — files as vendors ship them load with a
 * warning naming the line, where a sensible reading exists (issue 18): the
 * synthetic files of DATA_DIR/lenient (README.md there says what each holds)
 * give the graph their reading implies and exactly the warnings expected;
 * one with no sensible reading is refused with its line. The warnings are
 * logged at most TOPO_WARN_KEPT lines per load, then "and N more", and the
 * communicator's loads log a file's warnings once per process. The live
 * loader (hwloc told to read an export by HWLOC_XMLFILE): no PCI gives a flat
 * graph with one warning; CUDA_VISIBLE_DEVICES picks and orders the GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"
#include "topo_graph.h"

static const char *data_dir;

static const char *path_of(const char *sub, const char *file) {
  static char p[2][1200];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof(p[k]), "%s/%s/%s", data_dir, sub, file);
  return p[k];
}

static const char *warnings(const topo_system_t *sys) { return sys->warn_text.data ? sys->warn_text.data : ""; }

/* Loads DATA_DIR/lenient/file, which must load with nwarn warnings. */
static topo_system_t *lenient(const char *file, int nwarn) {
  topo_system_t *sys = NULL;
  err_quiet(1);
  xcclResult_t r = topo_system_load_file(path_of("lenient", file), &sys);
  err_quiet(0);
  CHECK(r == xcclSuccess && sys, "%s refused: %s", file, err_last());
  if (!sys) return NULL;
  CHECK(sys->nwarnings == nwarn, "%s: %d warnings, want %d:\n%s", file, sys->nwarnings, nwarn, warnings(sys));
  return sys;
}

static void warned(const topo_system_t *sys, const char *file, const char *words) {
  CHECK(sys && strstr(warnings(sys), words), "%s: no warning says '%s':\n%s", file, words, sys ? warnings(sys) : "");
}

static void nccl_files(void) {
  topo_system_t *sys;
  const char *f = "nccl-self-nvlink-4gpu-vm.xml";
  if ((sys = lenient(f, 4))) {
    CHECK(topo_ngpus(sys) == 4, "%s: %d GPUs", f, topo_ngpus(sys));
    warned(sys, f, "nccl-self-nvlink-4gpu-vm.xml:5: GPU 0000:00:04.0 has an NVLink to itself: ignored");
    warned(sys, f, ":29: GPU 0000:00:07.0 has an NVLink to itself: ignored");
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        if (a != b) CHECK(topo_gpu_gpu_path(sys, a, b, NULL) == TOPO_PATH_NVL, "%s: GPU %d-%d not NVL", f, a, b);
    topo_system_free(sys);
  }
  f = "nccl-nvlink-missing-busid.xml";
  if ((sys = lenient(f, 1))) {
    CHECK(topo_ngpus(sys) == 2 && sys->nvs < 0, "%s: %d GPUs, NVSwitch %d", f, topo_ngpus(sys), sys->nvs);
    warned(sys, f, "nccl-nvlink-missing-busid.xml:6: NVLink to GPU 0000:99:00.0, which is not in the file: ignored");
    CHECK(topo_gpu_gpu_path(sys, 0, 1, NULL) == TOPO_PATH_NVL, "%s: GPU 0-1 not NVL", f);
    topo_system_free(sys);
  }
  f = "nccl-dev-gaps.xml";
  if ((sys = lenient(f, 1))) {
    CHECK(topo_ngpus(sys) == 3, "%s: %d GPUs", f, topo_ngpus(sys));
    warned(sys, f, "nccl-dev-gaps.xml:7: GPU dev numbers 0 2 5 are not 0..2, each once: accepted");
    char b[32];
    CHECK(strcmp(topo_gpu_busid(sys, 2, b, sizeof(b)), "0000:b1:00.0") == 0, "%s: GPU 2 is %s", f, b);
    topo_system_free(sys);
  }
  f = "nccl-unknown-attribute.xml";
  if ((sys = lenient(f, 4))) {
    CHECK(topo_ngpus(sys) == 2, "%s: %d GPUs", f, topo_ngpus(sys));
    warned(sys, f, "nccl-unknown-attribute.xml:2: <cpu rack=...>: not an attribute NCCL writes: ignored");
    warned(sys, f, ":4: <gpu colour=...>: not an attribute NCCL writes: ignored");
    warned(sys, f, ":4: GPU 0000:18:00.0 has NVLinks but no sm (compute capability): each NVLink taken as 25 GB/s");
    warned(sys, f, ":13: <sensor> is not an element of NCCL's topology XML: skipped");
    CHECK(topo_gpu_gpu_path(sys, 0, 1, NULL) == TOPO_PATH_NVL, "%s: GPU 0-1 not NVL", f);
    topo_system_free(sys);
  }
  f = "nccl-two-hosts.xml";
  if ((sys = lenient(f, 1))) {
    CHECK(topo_ngpus(sys) == 2 && topo_nnuma(sys) == 2 && sys->nvs >= 0, "%s: %d GPUs, %d NUMA, NVSwitch %d", f,
          topo_ngpus(sys), topo_nnuma(sys), sys->nvs);
    warned(sys, f, "nccl-two-hosts.xml:16: a dump of several hosts (host_hash 0x1111aaaa2222bbbb, then "
                   "0x3333cccc4444dddd): read the first host only, 2 <cpu> of the others skipped");
    topo_system_free(sys);
  }
  f = "nccl-two-systems.xml";
  if ((sys = lenient(f, 1))) {
    CHECK(topo_ngpus(sys) == 1, "%s: %d GPUs (the first <system> has 1)", f, topo_ngpus(sys));
    warned(sys, f, "nccl-two-systems.xml:9: more after the first <system> (several dumps in one file?): read the first only");
    topo_system_free(sys);
  }
  /* No sensible reading: refused, with the line and the rule. */
  sys = NULL;
  err_quiet(1);
  xcclResult_t r = topo_system_load_file(path_of("lenient", "nccl-malformed-busid-line7.xml"), &sys);
  err_quiet(0);
  CHECK(r == xcclInvalidArgument && sys == NULL, "malformed bus id: accepted (%d)", (int)r);
  CHECK(strstr(err_last(), "nccl-malformed-busid-line7.xml:7: <pci busid=\"0000:1g:00.0\">: not a PCI bus id"),
        "malformed bus id: message lacks the file, line 7 and the rule: %s", err_last());
  topo_system_free(sys);
}

static void hwloc_no_pci_file(void) {
  const char *f = "hwloc-no-pci-2numa-vm.xml";
  topo_system_t *sys = lenient(f, 1);
  if (!sys) return;
  CHECK(topo_ngpus(sys) == 0 && topo_nnics(sys) == 0 && topo_nnuma(sys) == 2, "%s: %d GPUs, %d NICs, %d NUMA", f,
        topo_ngpus(sys), topo_nnics(sys), topo_nnuma(sys));
  warned(sys, f, "hwloc shows no PCI device");
  topo_system_free(sys);
}

static int count_lines(const char *text, const char *words) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, words)); p += strlen(words)) n++;
  return n;
}

typedef struct {
  const char *data;
  size_t len;
} buf_arg_t;

static xcclResult_t load_buf(void *arg) {
  buf_arg_t *b = arg;
  topo_system_t *sys = NULL;
  xcclResult_t r = topo_system_load_buffer(b->data, b->len, "twenty-self-nvlinks.xml", &sys);
  if (sys) CHECK(sys->nwarnings == 20, "twenty self NVLinks: %d warnings", sys->nwarnings);
  topo_system_free(sys);
  return r;
}

static xcclResult_t load_env(void *arg) {
  (void)arg;
  topo_system_t *sys = NULL;
  xcclResult_t r = topo_system_load(&sys);
  topo_system_free(sys);
  return r;
}

static void bounded_log(void) {
  /* 20 GPUs, each with an NVLink to itself: 8 lines, then "and 12 more". */
  char doc[20 * 300 + 200];
  size_t o = (size_t)snprintf(doc, sizeof(doc), "<system version=\"1\"><cpu numaid=\"0\">\n");
  for (int g = 0; g < 20; g++)
    o += (size_t)snprintf(doc + o, sizeof(doc) - o,
                          "<pci busid=\"0000:%02x:00.0\" class=\"0x030200\"><gpu dev=\"%d\" sm=\"80\">\n"
                          "<nvlink target=\"0000:%02x:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>\n",
                          g + 1, g, g + 1);
  o += (size_t)snprintf(doc + o, sizeof(doc) - o, "</cpu></system>\n");
  buf_arg_t arg = {doc, o};
  xcclResult_t r = xcclInternalError;
  char *log = fixture_stderr_of(load_buf, &arg, &r);
  CHECK(r == xcclSuccess, "twenty self NVLinks refused: %s", err_last());
  CHECK(log && count_lines(log, "has an NVLink to itself: ignored") == TOPO_WARN_KEPT,
        "the log has %d warning lines, want %d:\n%s", log ? count_lines(log, "has an NVLink to itself") : -1,
        TOPO_WARN_KEPT, log ? log : "");
  CHECK(log && count_lines(log, "twenty-self-nvlinks.xml (NCCL XML): and 12 more warnings like these") == 1,
        "the log does not end with 'and 12 more':\n%s", log ? log : "");
  free(log);

  /* XCCL_TOPO_FILE, loaded twice as a communicator does: warned once. */
  setenv("XCCL_TOPO_FILE", path_of("lenient", "nccl-dev-gaps.xml"), 1);
  config_reset_for_test();
  log = fixture_stderr_of(load_env, NULL, &r);
  CHECK(r == xcclSuccess && log && count_lines(log, "GPU dev numbers 0 2 5") == 1,
        "first load of XCCL_TOPO_FILE: %d, log:\n%s", (int)r, log ? log : "");
  free(log);
  log = fixture_stderr_of(load_env, NULL, &r);
  CHECK(r == xcclSuccess && log && count_lines(log, "GPU dev numbers") == 0,
        "second load of XCCL_TOPO_FILE warned again: %d, log:\n%s", (int)r, log ? log : "");
  free(log);
  /* And a file that does not parse: the variable, the file, the line, the rule. */
  setenv("XCCL_TOPO_FILE", path_of("lenient", "nccl-malformed-busid-line7.xml"), 1);
  config_reset_for_test();
  err_quiet(1);
  r = load_env(NULL);
  err_quiet(0);
  CHECK(r == xcclInvalidArgument && strstr(err_last(), "XCCL_TOPO_FILE: ") &&
            strstr(err_last(), "nccl-malformed-busid-line7.xml:7: <pci busid="),
        "XCCL_TOPO_FILE malformed: %d %s", (int)r, err_last());
  unsetenv("XCCL_TOPO_FILE");
  config_reset_for_test();
}

static topo_system_t *live_from(const char *xml, const char *cvd, int nwarn) {
  setenv("HWLOC_XMLFILE", xml, 1);
  if (cvd) setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
  else unsetenv("CUDA_VISIBLE_DEVICES");
  topo_system_t *sys = NULL;
  err_quiet(1);
  xcclResult_t r = topo_system_load_live(&sys);
  err_quiet(0);
  unsetenv("HWLOC_XMLFILE");
  unsetenv("CUDA_VISIBLE_DEVICES");
  CHECK(r == xcclSuccess && sys, "live from %s (CUDA_VISIBLE_DEVICES=%s) failed: %s", xml, cvd ? cvd : "(unset)",
        err_last());
  if (sys)
    CHECK(sys->nwarnings == nwarn, "live from %s (CUDA_VISIBLE_DEVICES=%s): %d warnings, want %d:\n%s", xml,
          cvd ? cvd : "(unset)", sys->nwarnings, nwarn, warnings(sys));
  return sys;
}

/* GPU i of sys is GPU want[i] of ref, and has dev i. */
static void gpus_are(const topo_system_t *sys, const topo_system_t *ref, const int *want, int n, const char *what) {
  CHECK(topo_ngpus(sys) == n, "%s: %d GPUs, want %d", what, topo_ngpus(sys), n);
  for (int i = 0; i < n && i < topo_ngpus(sys); i++) {
    char a[32], b[32];
    topo_gpu_busid(sys, i, a, sizeof(a));
    topo_gpu_busid(ref, want[i], b, sizeof(b));
    CHECK(strcmp(a, b) == 0, "%s: GPU %d is %s, want %s (GPU %d of the file)", what, i, a, b, want[i]);
    CHECK(sys->nodes[sys->gpus[i]].dev == i, "%s: GPU %d has dev %d", what, i, sys->nodes[sys->gpus[i]].dev);
  }
}

static void live(void) {
  topo_system_t *sys = live_from(path_of("lenient", "hwloc-no-pci-2numa-vm.xml"), NULL, 1);
  if (sys) {
    CHECK(topo_ngpus(sys) == 0 && topo_nnuma(sys) == 2, "live, no PCI: %d GPUs, %d NUMA", topo_ngpus(sys),
          topo_nnuma(sys));
    warned(sys, "live, no PCI", "hwloc (this machine): hwloc shows no PCI device");
    topo_system_free(sys);
  }
  const char *dgx = path_of("hwloc", "hwloc-nvidia-dgx2h-16xV100-v2fmt.xml");
  topo_system_t *ref = NULL;
  CHECK(topo_system_load_file(dgx, &ref) == xcclSuccess && ref && topo_ngpus(ref) == 16, "%s: %s", dgx, err_last());
  if (!ref) return;
  int all[16];
  for (int i = 0; i < 16; i++) all[i] = i;
  topo_system_t *whole = live_from(dgx, NULL, 0);
  if (whole) {
    CHECK(topo_ngpus(whole) == 16, "live DGX-2H: %d GPUs", topo_ngpus(whole));
    for (int i = 0; i < 16 && i < topo_ngpus(whole); i++) {
      char a[32], b[32];
      CHECK(strcmp(topo_gpu_busid(whole, i, a, sizeof(a)), topo_gpu_busid(ref, all[i], b, sizeof(b))) == 0,
            "live DGX-2H without CUDA_VISIBLE_DEVICES: GPU %d is %s, the file's %s", i, a, b);
    }
  }
  if ((sys = live_from(dgx, "3,1", 0))) {
    gpus_are(sys, ref, (const int[]){3, 1}, 2, "CUDA_VISIBLE_DEVICES=3,1");
    double bw = 0, bw_whole = 0;
    topo_path_type_t t = topo_gpu_gpu_path(sys, 0, 1, &bw);
    topo_path_type_t t_whole = whole ? topo_gpu_gpu_path(whole, 3, 1, &bw_whole) : t;
    CHECK(t == t_whole && (!whole || bw == bw_whole), "CUDA_VISIBLE_DEVICES=3,1: GPU 0-1 is %s %.1f GB/s, GPUs 3-1 of "
          "the whole machine %s %.1f GB/s", topo_path_name(t), bw, topo_path_name(t_whole), bw_whole);
    topo_system_free(sys);
  }
  topo_system_free(whole);
  if ((sys = live_from(dgx, "5, 99,2", 1))) { /* CUDA stops at the entry that names no GPU */
    gpus_are(sys, ref, (const int[]){5}, 1, "CUDA_VISIBLE_DEVICES=5,99,2");
    warned(sys, "CUDA_VISIBLE_DEVICES=5,99,2", "'99' is not one of the 16 NVIDIA GPUs hwloc shows, or is listed twice");
    topo_system_free(sys);
  }
  char cvd[128];
  snprintf(cvd, sizeof(cvd), "%.12s,0", ref->nodes[ref->gpus[4]].uuid); /* "GPU-" and 8 hex digits */
  if ((sys = live_from(dgx, cvd, 0))) {
    gpus_are(sys, ref, (const int[]){4, 0}, 2, cvd);
    topo_system_free(sys);
  }
  if ((sys = live_from(dgx, "GPU-ffffffff", 1))) {
    CHECK(topo_ngpus(sys) == 0, "CUDA_VISIBLE_DEVICES=GPU-ffffffff: %d GPUs", topo_ngpus(sys));
    topo_system_free(sys);
  }
  topo_system_free(ref);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  data_dir = argv[1];
  nccl_files();
  hwloc_no_pci_file();
  bounded_log();
  live();
  return test_finish("topo_lenient");
}
