# Can this machine build libFuzzer targets? Sets XCCL_CLANG, XCCL_SH_EXECUTABLE
# and XCCL_FUZZ_OK once for every fuzz*.cmake. The targets are built by a
# separate clang invocation (the project's compiler may be gcc); their bounded
# runs report SKIPPED (77) when this is OFF.
include_guard(GLOBAL)
find_program(XCCL_CLANG NAMES clang-14 clang)
find_program(XCCL_SH_EXECUTABLE NAMES sh bash)
set(XCCL_FUZZ_OK OFF)
# The targets carry ASan and UBSan of their own: a sanitizer build of the
# project (whose ctest runs leave out the fuzz label) does not build them
# again.
if(XCCL_CLANG AND NOT XCCL_SANITIZE)
  set(_probe ${CMAKE_BINARY_DIR}/fuzz_probe.c)
  file(WRITE ${_probe} "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${XCCL_CLANG} -fsanitize=fuzzer ${_probe} -o ${CMAKE_BINARY_DIR}/fuzz_probe
    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(XCCL_FUZZ_OK ON)
  endif()
endif()
# Seconds of each bounded run in ctest: a smoke run over the seeds and
# their mutations; a longer hunt by hand with
# tests/fuzz/run_fuzz.sh FUZZER SECONDS SEEDS, or a larger value here.
set(XCCL_FUZZ_SECONDS 10 CACHE STRING "seconds of each libFuzzer run in ctest")
if(NOT XCCL_FUZZ_OK AND NOT XCCL_SANITIZE)
  message(STATUS "xccl: clang with libFuzzer not found: the fuzz runs will be skipped")
endif()
