/* fuzz_topo.c — libFuzzer target for a topology loader, chosen at build time
 * by TOPO_FUZZ_LOAD: topo_load_hwloc_xml (hwloc XML, formats 1.x, 2.x, 3.0)
 * or topo_load_nccl_xml (NCCL's topology XML). Any input either loads (then
 * paths, channels and every output format run) or fails with a message;
 * never a crash, a leak or undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "topo.h"
#include "topo_load.h"

#ifndef TOPO_FUZZ_LOAD
#error "build with -DTOPO_FUZZ_LOAD=topo_load_hwloc_xml or topo_load_nccl_xml"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topo_system_t *sys = NULL;
  err_quiet(1);
  if (TOPO_FUZZ_LOAD((const char *)data, size, "fuzz", &sys) == xcclSuccess) {
    topo_channels_t chs;
    if (topo_search_channels(sys, NULL, 0, 8, &chs) != xcclSuccess) chs.nchannels = 0;
    for (int f = TOPO_FMT_TEXT; f <= TOPO_FMT_DOT; f++) {
      char *text = NULL;
      if (topo_render(sys, &chs, (topo_format_t)f, &text) == xcclSuccess) free(text);
    }
    topo_system_free(sys);
  } else if (err_last()[0] == 0) {
    abort(); /* a failure must say why */
  }
  err_quiet(0);
  return 0;
}
