# libFuzzer targets for the topology loaders (issue 5), built by a separate
# clang invocation (the project's compiler may be gcc) with ASan and UBSan
# over src/base and src/topo. The bounded runs report SKIPPED (77) when clang
# or libFuzzer is missing. Labels: topo, unit, fuzz.
include(${CMAKE_CURRENT_LIST_DIR}/probe.cmake)

set(_fz_dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
file(GLOB _fz_base ${PROJECT_SOURCE_DIR}/src/base/*.c)
file(GLOB _fz_topo ${PROJECT_SOURCE_DIR}/src/topo/*.c)
set(_fz_flags -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_BINARY_DIR}/include -I${PROJECT_SOURCE_DIR}/src/base -I${PROJECT_SOURCE_DIR}/src/topo
)
set(_fz_targets)
foreach(kind nccl hwloc)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/fuzz_topo_${kind})
  if(XCCL_FUZZ_OK)
    add_custom_command(OUTPUT ${_out}
      COMMAND ${XCCL_CLANG} ${_fz_flags} -DTOPO_FUZZ_LOAD=topo_load_${kind}_xml -I/usr/include/libxml2
        ${_fz_dir}/fuzz_topo.c ${_fz_base} ${_fz_topo} -o ${_out} -lhwloc -lxml2 ${XCCL_JANSSON_LDFLAGS} -lpthread -lm
        -ldl
      DEPENDS ${_fz_dir}/fuzz_topo.c ${_fz_base} ${_fz_topo}
      COMMENT "Building libFuzzer target fuzz_topo_${kind} with clang")
    list(APPEND _fz_targets ${_out})
  endif()
endforeach()
if(_fz_targets)
  add_custom_target(topo_fuzzers ALL DEPENDS ${_fz_targets})
endif()

set(_d ${PROJECT_SOURCE_DIR}/tests/data/topologies)
file(GLOB _seeds_nccl ${_d}/nccl/*.xml)
set(_seeds_hwloc ${_d}/hwloc/hwloc-ibm-power8-minsky-4xP100-nvlink-v2fmt.xml
  ${_d}/hwloc/hwloc-ibm-power8-minsky-4xP100-nvlink-v3fmt.xml ${_d}/hwloc/hwloc-nvidia-dgx2h-16xV100-v2fmt.xml
  ${_d}/hwloc/hwloc-nvidia-dgx2h-16xV100-v3fmt.xml ${_d}/hwloc/hwloc-hp-sl390s-3xTeslaM20x0-mlx4-v2fmt.xml
  ${_d}/hwloc/hwloc-supermicro-x9drg-gpus-mlx5-v2fmt.xml ${_d}/hwloc/psmgmt-deep-est-esb-1xV100-EDR.xml)
foreach(kind nccl hwloc)
  add_test(NAME topo_fuzz_${kind} COMMAND ${XCCL_SH_EXECUTABLE} ${_fz_dir}/run_fuzz.sh
    ${CMAKE_CURRENT_BINARY_DIR}/fuzz_topo_${kind} ${XCCL_FUZZ_SECONDS} ${_seeds_${kind}})
  set_tests_properties(topo_fuzz_${kind} PROPERTIES LABELS "topo;unit;fuzz" TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
