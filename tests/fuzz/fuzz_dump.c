/* fuzz_dump.c — libFuzzer target for xccl-stuck's dump reader
 * (tools/xccl_stuck_parse.c, the JSON of src/observe/dump.h). Any input is
 * either read into a dump whose numbers are in range, or refused with a
 * sentence that names the file; never a crash, a leak or undefined
 * behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xccl_stuck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dump_t d;
  char why[1024] = "";
  if (stuck_parse_dump("fuzz.dump", (const char *)data, size, &d, why, sizeof(why)) == 0) {
    /* What xccl_stuck.c relies on without checking again. */
    if (d.rank < 0 || d.rank >= d.nranks || d.nwaits < 0 || d.nwaits > MAX_WAITS || d.npeers < 0) abort();
    for (int k = 0; k < d.nwaits; k++)
      if (d.waits[k].peer < 0 || d.waits[k].peer >= d.nranks) abort();
    if (d.has_fail && d.fail.peer >= d.nranks) abort();
    if (!d.file || strcmp(d.file, "fuzz.dump") != 0) abort();
    stuck_dump_free(&d);
  } else if (strncmp(why, "fuzz.dump", 9) != 0) {
    abort(); /* a refusal must name the file */
  }
  return 0;
}
