/*
 * test_topo_malformed.c DATA_DIR — broken input gives a clear error, never a
 * crash or a half-built system: truncated XML (NCCL and hwloc), wrong types,
 * cycles (a bus id twice, nesting beyond reason), absurd numbers, a million
 * devices, elements in the wrong place, not XML at all. Each case must fail,
 * leave the output NULL, and say the words given. An NVLink to the GPU
 * itself, refused before issue 18, has a sensible reading (ignore it): it
 * loads, with a warning that says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_graph.h"

static void refused(const char *what, const char *data, size_t len, const char *words) {
  topo_system_t *sys = NULL;
  err_quiet(1);
  xcclResult_t r = topo_system_load_buffer(data, len, what, &sys);
  err_quiet(0);
  CHECK(r != xcclSuccess, "%s: accepted", what);
  CHECK(sys == NULL, "%s: output written on failure", what);
  CHECK(strstr(err_last(), words) != NULL, "%s: message '%s' lacks '%s'", what, err_last(), words);
  topo_system_free(sys);
}

static void refused_s(const char *what, const char *xml, const char *words) { refused(what, xml, strlen(xml), words); }

/* Loads, with one warning holding words. */
static void warned_s(const char *what, const char *xml, const char *words) {
  topo_system_t *sys = NULL;
  err_quiet(1);
  xcclResult_t r = topo_system_load_buffer(xml, strlen(xml), what, &sys);
  err_quiet(0);
  CHECK(r == xcclSuccess && sys, "%s: refused: %s", what, err_last());
  const char *w = sys && sys->warn_text.data ? sys->warn_text.data : "";
  CHECK(sys && sys->nwarnings == 1 && strstr(w, words), "%s: %d warnings, want one saying '%s': %s", what,
        sys ? sys->nwarnings : -1, words, w);
  topo_system_free(sys);
}

#define CPU_OPEN "<system version=\"1\"><cpu numaid=\"0\">"
#define CPU_CLOSE "</cpu></system>"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  char p[1100];
  size_t len = 0;
  /* Truncated: every tenth cut of a real NCCL file and of a real hwloc file. */
  snprintf(p, sizeof(p), "%s/nccl/aliyun-simai-hgxa100-ice-lake-topo_8A100_4CX6.xml", argv[1]);
  char *nccl = test_read_file(p, &len);
  CHECK(nccl != NULL, "cannot read %s", p);
  for (int k = 1; nccl && k < 10; k++) refused("truncated NCCL XML", nccl, len * (size_t)k / 10, "truncated NCCL XML");
  free(nccl);
  snprintf(p, sizeof(p), "%s/hwloc/hwloc-ibm-power8-minsky-4xP100-nvlink-v2fmt.xml", argv[1]);
  char *hw = test_read_file(p, &len);
  for (int k = 1; hw && k < 10; k++) refused("truncated hwloc XML", hw, len * (size_t)k / 10, "truncated hwloc XML");
  free(hw);
  snprintf(p, sizeof(p), "%s/hwloc/hwloc-nvidia-dgx2h-16xV100-v3fmt.xml", argv[1]);
  hw = test_read_file(p, &len);
  if (hw) refused("truncated hwloc 3.0 XML", hw, len / 2, "truncated hwloc 3.0 XML");
  free(hw);

  refused_s("empty", "", "neither an hwloc XML export");
  refused_s("not XML", "\x7f" "ELF\x01\x02\x03 binary", "neither an hwloc XML export");
  refused_s("other root", "<html><body/></html>", "neither");
  refused_s("no cpu", "<system version=\"1\"></system>", "no CPU");
  /* Wrong types */
  refused_s("numaid text", "<system version=\"1\"><cpu numaid=\"abc\"/></system>", "not an integer");
  refused_s("busid text", CPU_OPEN "<pci busid=\"zz:yy\"/>" CPU_CLOSE, "not a PCI bus id");
  refused_s("class text", CPU_OPEN "<pci busid=\"0000:01:00.0\" class=\"GPU\"/>" CPU_CLOSE, "not an integer");
  refused_s("speed text", CPU_OPEN "<pci busid=\"0000:01:00.0\" link_speed=\"fast\"/>" CPU_CLOSE, "link_speed");
  refused_s("gpu outside cpu", "<system version=\"1\"><gpu dev=\"0\"/></system>", "must be inside a <cpu>");
  refused_s("cpu inside pci", CPU_OPEN "<pci busid=\"0000:01:00.0\"><cpu/></pci>" CPU_CLOSE, "not allowed inside <pci>");
  refused_s("missing busid", CPU_OPEN "<pci class=\"0x030200\"/>" CPU_CLOSE, "busid");
  /* Absurd numbers */
  refused_s("width", CPU_OPEN "<pci busid=\"0000:01:00.0\" link_width=\"100000\"/>" CPU_CLOSE, "out of range");
  refused_s("negative speed", CPU_OPEN "<pci busid=\"0000:01:00.0\" link_speed=\"-8 GT/s\"/>" CPU_CLOSE, "link_speed");
  refused_s("nvlink count",
            CPU_OPEN "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"80\">"
                     "<nvlink target=\"0000:02:00.0\" count=\"1000000\"/></gpu></pci>" CPU_CLOSE,
            "out of range");
  refused_s("nic speed", CPU_OPEN "<nic><net name=\"mlx5_0\" speed=\"1e300\"/></nic>" CPU_CLOSE, "speed");
  refused_s("numaid", "<system version=\"1\"><cpu numaid=\"99999999999\"/></system>", "out of range");
  refused_s("sm", CPU_OPEN "<pci busid=\"0000:01:00.0\"><gpu sm=\"-7\"/></pci>" CPU_CLOSE, "out of range");
  /* Cycles and repeats */
  warned_s("nvlink to itself",
           CPU_OPEN "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"80\">"
                    "<nvlink target=\"0000:01:00.0\" count=\"2\" tclass=\"0x030200\"/></gpu></pci>" CPU_CLOSE,
           "nvlink to itself:1: GPU 0000:01:00.0 has an NVLink to itself: ignored");
  refused_s("busid twice", CPU_OPEN "<pci busid=\"0000:01:00.0\"/><pci busid=\"0000:01:00.0\"/>" CPU_CLOSE, "named twice");
  refused_s("numaid twice", "<system version=\"1\"><cpu numaid=\"0\"/><cpu numaid=\"0\"/></system>", "two <cpu>");
  {
    /* PCI nesting 200 deep: beyond any machine (and libxml2's own limits). */
    size_t cap = 200 * 64 + 256, o = 0;
    char *deep = malloc(cap);
    o += (size_t)snprintf(deep + o, cap - o, CPU_OPEN);
    for (int d = 0; d < 200; d++) o += (size_t)snprintf(deep + o, cap - o, "<pci busid=\"0000:%02x:00.0\">", d);
    for (int d = 0; d < 200; d++) o += (size_t)snprintf(deep + o, cap - o, "</pci>");
    o += (size_t)snprintf(deep + o, cap - o, CPU_CLOSE);
    refused("deep nesting", deep, o, "deeper than 64");
    free(deep);
  }
  {
    /* A million devices. */
    size_t n = 1000000, cap = n * 48 + 256, o = 0;
    char *big = malloc(cap);
    CHECK(big != NULL, "malloc");
    if (big) {
      o += (size_t)snprintf(big + o, cap - o, CPU_OPEN);
      for (size_t d = 0; d < n; d++)
        o += (size_t)snprintf(big + o, cap - o, "<pci busid=\"%04zx:%02zx:00.0\"/>", d >> 8, d & 0xff);
      o += (size_t)snprintf(big + o, cap - o, CPU_CLOSE);
      refused("a million devices", big, o, "more than");
      free(big);
    }
  }
  /* hwloc: wrong types and absurd values inside an otherwise fine export. */
  refused_s("hwloc garbage", "<?xml version=\"1.0\"?><topology version=\"2.0\"><object type=\"Banana\"/></topology>",
            "hwloc cannot read it");
  refused_s("hwloc future",
            "<topology version=\"9.0\"><object type=\"Machine\" cpuset=\"0x1\" complete_cpuset=\"0x1\"/></topology>",
            "hwloc cannot read it");
  /* Bitmaps hwloc 2.9 asserts on instead of refusing (the first from the
   * hwloc fuzzer: one comma inserted into a real export's cpuset). */
  static const char *bad_bitmaps[] = {",0x0000ffff", ",", "0x1,,zz", "0x", "0x123456789", "0xf...f0"};
  for (size_t i = 0; i < sizeof(bad_bitmaps) / sizeof(bad_bitmaps[0]); i++) {
    char doc[256];
    snprintf(doc, sizeof(doc),
             "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\" cpuset=\"%s\" "
             "complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\"/></topology>", bad_bitmaps[i]);
    refused_s("hwloc bad bitmap", doc, "<object cpuset=...> is not an hwloc bitmap");
  }
  refused_s("hwloc bad cpukind bitmap",
            "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" "
            "complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\"/>"
            "<cpukind cpuset=\",0x1\" forced_efficiency=\"0\"/></topology>",
            "<cpukind cpuset=...> is not an hwloc bitmap");
  /* A 1.x export's NUMA node without a cpuset: hwloc 2.9 dereferences NULL
   * (the fuzzer's input, minimized; "NU" is hwloc's abbreviation). */
  refused_s("hwloc NUMANode without cpuset",
            "<topology><object cpuset=\"0xf\" complete_cpuset=\"0xf\"><object type=\"NU\"></object></object></topology>",
            "<object type=\"NU\"> has no cpuset");
  refused_s("hwloc NUMANode without nodeset",
            "<topology><object type=\"Machine\" cpuset=\"0xf\" complete_cpuset=\"0xf\"><object type=\"NUMANode\" "
            "cpuset=\"0xf\" complete_cpuset=\"0xf\"/></object></topology>",
            "<object type=\"NUMANode\"> has no nodeset");
  /* Sets that do not nest: a complete_cpuset smaller than the cpuset (the
   * fuzzer's second crash of hwloc, minimized), a child outside its parent. */
  refused_s("hwloc cpuset outside complete_cpuset",
            "<topology><object cpuset=\"0xf\" complete_cpuset=\"0x3\"><object type=\"No\" cpuset=\"0xf\" "
            "complete_cpuset=\"0xf\" nodeset=\"0x0\" complete_nodeset=\"0x0\"></object></object></topology>",
            "cpuset is not within its complete_cpuset");
  refused_s("hwloc child outside its parent",
            "<topology version=\"2.0\"><object type=\"Machine\" cpuset=\"0x3\" complete_cpuset=\"0x3\" "
            "nodeset=\"0x1\" complete_nodeset=\"0x1\"><object type=\"PU\" os_index=\"4\" cpuset=\"0x10\" "
            "complete_cpuset=\"0x10\" nodeset=\"0x1\" complete_nodeset=\"0x1\"/></object></topology>",
            "cpuset is not within its parent's");
  /* A 1.x root without a nodeset above a NUMA node that has one: hwloc 2.9
   * dereferences NULL (the fuzzer's third crash, minimized further). */
  refused_s("hwloc nodeset under a root without one",
            "<topology><object type=\"Machine\" cpuset=\"0xf\" complete_cpuset=\"0xff\"><object type=\"NU\" "
            "os_index=\"0\" cpuset=\"0xf\" complete_cpuset=\"0xf\" nodeset=\"0x1\" complete_nodeset=\"0x1\"></object></object></topology>",
            "has a nodeset but its parent has none");
  /* A NUMA node with an empty nodeset (hwloc refuses this one itself, but
   * only with "hwloc cannot read it"). */
  refused_s("hwloc NUMANode with an empty nodeset",
            "<topology><object cpuset=\"0xf\" complete_cpuset=\"0xff\" nodeset=\"0x3\" complete_nodeset=\"0x3\">"
            "<object type=\"NU\" cpuset=\"0xf\" complete_cpuset=\"0xf\" nodeset=\"0x0\" complete_nodeset=\"0x0\">"
            "</object></object></topology>",
            "nodeset is not its os_index alone");
  /* An attribute name hwloc's small XML reader does not take: it stops
   * reading the element's attributes there, so the root's nodeset below went
   * unread and hwloc 2.9 crashed (the fuzzer's fourth input, minimized). */
  refused_s("hwloc attribute name with a digit",
            "<topology><object type=\"Machine\" cpuset=\"0xf\" complete_cpuset=\"0xff\" o0=\"\" nodeset=\"0x1\" "
            "complete_nodeset=\"0x1\"><object type=\"NUMANode\" os_index=\"0\" cpuset=\"0xf\" complete_cpuset=\"0xf\" "
            "nodeset=\"0x1\" complete_nodeset=\"0x1\"></object></object></topology>",
            "has an attribute named 'o0'");
  return test_finish("topo_malformed");
}
