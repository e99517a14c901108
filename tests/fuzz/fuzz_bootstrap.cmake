# libFuzzer targets for the bootstrap's wire input (issue 7): frames, HMAC,
# the streaming reader, hello/address/id payloads (fuzz_bootstrap_msg), and
# the rendezvous read from the environment (fuzz_unique_id). Built like
# fuzz.cmake's: a separate clang invocation with ASan and UBSan over the
# sources they need; the bounded runs report SKIPPED (77) without clang and
# libFuzzer. Seeds: tests/fuzz/corpus/*, written by fuzz_gen_corpus.
# Labels: fuzz, fault.
include(${CMAKE_CURRENT_LIST_DIR}/probe.cmake)

set(_fzb_dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
set(_fzb_src ${PROJECT_SOURCE_DIR}/src)
file(GLOB _fzb_base ${_fzb_src}/base/*.c)
set(_fzb_common ${_fzb_base} ${_fzb_src}/net/sock.c ${_fzb_src}/bootstrap/bootstrap_msg.c)
set(_fzb_extra_bootstrap_msg ${_fzb_src}/bootstrap/bootstrap_conn.c ${_fzb_src}/net/sock_tls.c ${_fzb_src}/net/tls_cert.c)
set(_fzb_extra_unique_id ${_fzb_src}/core/init_env.c ${_fzb_src}/launch/launch_torchrun.c ${_fzb_src}/launch/launch_pmix.c
  ${_fzb_src}/launch/launch_slurm.c ${_fzb_src}/core/unique_id.c) # launchers: PMIx compiled out here
set(_fzb_link_unique_id -Wl,--wrap=getaddrinfo) # numeric hosts only: no input waits on DNS
set(_fzb_flags -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_BINARY_DIR}/include -I${_fzb_src}/base -I${_fzb_src}/net -I${_fzb_src}/core -I${_fzb_src}/launch -I${_fzb_src}/bootstrap
  -I${_fzb_src}/kernels -I${_fzb_src}/proxy -I${_fzb_src}/transport)
set(_fzb_targets)
foreach(kind bootstrap_msg unique_id)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${kind})
  if(XCCL_FUZZ_OK)
    add_custom_command(OUTPUT ${_out}
      COMMAND ${XCCL_CLANG} ${_fzb_flags} ${_fzb_dir}/fuzz_${kind}.c ${_fzb_common} ${_fzb_extra_${kind}}
        -o ${_out} ${_fzb_link_${kind}} -lssl -lcrypto -lpthread -lm
      DEPENDS ${_fzb_dir}/fuzz_${kind}.c ${_fzb_dir}/fuzz_keys.h ${_fzb_common} ${_fzb_extra_${kind}}
      COMMENT "Building libFuzzer target fuzz_${kind} with clang")
    list(APPEND _fzb_targets ${_out})
  endif()
endforeach()
if(_fzb_targets)
  add_custom_target(bootstrap_fuzzers ALL DEPENDS ${_fzb_targets})
endif()

# Regenerates the seeds: fuzz_gen_corpus tests/fuzz/corpus
add_executable(fuzz_gen_corpus ${_fzb_dir}/gen_corpus.c)
target_link_libraries(fuzz_gen_corpus PRIVATE xccl_testlib)

foreach(kind bootstrap_msg unique_id)
  file(GLOB _fzb_seeds CONFIGURE_DEPENDS ${_fzb_dir}/corpus/${kind}/*)
  add_test(NAME fuzz_${kind} COMMAND ${XCCL_SH_EXECUTABLE} ${_fzb_dir}/run_fuzz.sh
    ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${kind} ${XCCL_FUZZ_SECONDS} ${_fzb_seeds})
  set_tests_properties(fuzz_${kind} PROPERTIES LABELS "fuzz;fault" TIMEOUT 90 SKIP_RETURN_CODE 77)
endforeach()
