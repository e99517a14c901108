# libFuzzer target for xccl-stuck's reader of the in-flight state dumps
# (issue 27: JSON through jansson): tools/xccl_stuck_parse.c built like
# fuzz.cmake's targets, by a separate clang invocation with ASan and UBSan;
# the bounded run reports SKIPPED (77) without clang and libFuzzer. Seeds:
# tests/fuzz/corpus/dump/*, dumps as src/observe/dump.c writes them.
# Labels: fuzz, fault.
include(${CMAKE_CURRENT_LIST_DIR}/probe.cmake)

set(_fzd_dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
set(_fzd_src ${_fzd_dir}/fuzz_dump.c ${PROJECT_SOURCE_DIR}/tools/xccl_stuck_parse.c)
set(_fzd_out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dump)
if(XCCL_FUZZ_OK)
  add_custom_command(OUTPUT ${_fzd_out}
    COMMAND ${XCCL_CLANG} -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
      -I${PROJECT_SOURCE_DIR}/tools ${_fzd_src} -o ${_fzd_out} ${XCCL_JANSSON_LDFLAGS} -lm
    DEPENDS ${_fzd_src} ${PROJECT_SOURCE_DIR}/tools/xccl_stuck.h
    COMMENT "Building libFuzzer target fuzz_dump with clang")
  add_custom_target(dump_fuzzer ALL DEPENDS ${_fzd_out})
endif()
file(GLOB _fzd_seeds CONFIGURE_DEPENDS ${_fzd_dir}/corpus/dump/*)
add_test(NAME fuzz_dump COMMAND ${XCCL_SH_EXECUTABLE} ${_fzd_dir}/run_fuzz.sh ${_fzd_out} ${XCCL_FUZZ_SECONDS} ${_fzd_seeds})
set_tests_properties(fuzz_dump PROPERTIES LABELS "fuzz;fault" TIMEOUT 90 SKIP_RETURN_CODE 77)
