# Topology tests (issue 5): saved machines from tests/data/topologies, the
# channel search, malformed input, xccl-topo, and a search benchmark.
# Labels: topo and unit. XCCL_REGEN=1 rewrites the expected outputs
# (tests/data/topologies/expected) instead of comparing with them.
set(XCCL_TOPO_DATA ${PROJECT_SOURCE_DIR}/tests/data/topologies)
foreach(t fixtures hardware roundtrip malformed search)
  xccl_add_test(NAME topo_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_${t}.c
    LABELS topo unit TIMEOUT 120 ARGS ${XCCL_TOPO_DATA})
  target_include_directories(topo_${t} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
endforeach()

# The 16-GPU search, timed (median of 20); the bound is generous on purpose.
add_executable(topo_bench_search ${CMAKE_CURRENT_LIST_DIR}/bench_topo_search.c)
target_link_libraries(topo_bench_search PRIVATE xccl_internal)
add_test(NAME topo_bench_search_16gpu COMMAND topo_bench_search
  ${XCCL_TOPO_DATA}/hwloc/hwloc-nvidia-dgx2h-16xV100-v2fmt.xml --iters 20 --max-ms 100)
set_tests_properties(topo_bench_search_16gpu PROPERTIES LABELS "topo;unit" TIMEOUT 60)

# xccl-topo on this machine (no GPU here: the CPU/NUMA/PCI/NIC picture) and
# on files, every format.
add_test(NAME topo_tool_live COMMAND xccl-topo)
set_tests_properties(topo_tool_live PROPERTIES LABELS "topo;unit" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "CPU [0-9]+ \\(NUMA")
find_program(XCCL_SH_EXECUTABLE NAMES sh bash)
add_test(NAME topo_tool_formats COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_tool.sh
  $<TARGET_FILE:xccl-topo> ${XCCL_TOPO_DATA})
set_tests_properties(topo_tool_formats PROPERTIES LABELS "topo;unit" TIMEOUT 120)

include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz.cmake OPTIONAL)

# The NIC each channel uses (src/core/net_select.c) and when device data goes
# GPUDirect RDMA (src/cuda/gdr_path.c) are checked against saved machines.
foreach(t unit_test_net_select unit_test_gdr_path)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE XCCL_TEST_TOPO_DIR="${XCCL_TOPO_DATA}")
  endif()
endforeach()

# Channel count and NCCL graph files (issue 18): the cap, fewer channels at
# equal bandwidth (tests/data/topologies/synthetic), XCCL_MIN/MAX_NCHANNELS,
# XCCL_GRAPH_FILE round trips and refusals; then xccl-topo --format nccl-graph.
xccl_add_test(NAME topo_channels SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_channels.c
  LABELS topo unit TIMEOUT 120 ARGS ${XCCL_TOPO_DATA})
target_include_directories(topo_channels PRIVATE ${CMAKE_CURRENT_LIST_DIR})
add_test(NAME topo_tool_nccl_graph COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_graph_tool.sh
  $<TARGET_FILE:xccl-topo> ${XCCL_TOPO_DATA})
set_tests_properties(topo_tool_nccl_graph PROPERTIES LABELS "topo;unit" TIMEOUT 120)

# Files as vendors ship them (issue 18): lenient readings with a warning
# naming the line, no sensible reading refused with it, the live loader in
# VMs (no PCI) and with CUDA_VISIBLE_DEVICES (hwloc reading an export through
# HWLOC_XMLFILE); a topology file that cannot be read fails communicator init
# on every rank; xccl-topo shows what the library would use.
xccl_add_test(NAME topo_lenient SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_lenient.c
  LABELS topo unit TIMEOUT 120 ARGS ${XCCL_TOPO_DATA})
target_include_directories(topo_lenient PRIVATE ${CMAKE_CURRENT_LIST_DIR})
xccl_add_test(NAME topo_init_nonexistent TARGET test_topo_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_init.c
  RANKS 2 ARGS SystemError "XCCL_TOPO_FILE: cannot open topology file /nonexistent.xml"
  LABELS topo multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=30;XCCL_TOPO_FILE=/nonexistent.xml")
xccl_add_test(NAME topo_init_nccl_alias TARGET test_topo_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_init.c
  RANKS 2 ARGS SystemError "NCCL_TOPO_FILE: cannot open topology file /nonexistent.xml"
  LABELS topo multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=30;NCCL_TOPO_FILE=/nonexistent.xml")
xccl_add_test(NAME topo_init_malformed TARGET test_topo_init SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_init.c
  RANKS 2 ARGS InvalidArgument "XCCL_TOPO_FILE: " "nccl-malformed-busid-line7.xml:7: <pci busid=\"0000:1g:00.0\">: not a PCI bus id"
  LABELS topo multiproc TIMEOUT 60
  ENV "XCCL_TIMEOUT=30;XCCL_TOPO_FILE=${XCCL_TOPO_DATA}/lenient/nccl-malformed-busid-line7.xml")
add_test(NAME topo_tool_env COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_tool_env.sh
  $<TARGET_FILE:xccl-topo> ${XCCL_TOPO_DATA})
set_tests_properties(topo_tool_env PROPERTIES LABELS "topo;unit" TIMEOUT 60)

# Virtual network interfaces (issue 18): the name and sysfs rules
# (src/base/ifname.c), the synthetic files of tests/data/topologies/virtual
# and renamed saved machines (no channel on a virtual NIC), and xccl-topo's
# list of excluded interfaces.
xccl_add_test(NAME topo_ifname SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ifname.c LABELS topo unit TIMEOUT 60)
xccl_add_test(NAME topo_virtual SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_virtual.c LABELS topo unit TIMEOUT 60
  ARGS ${XCCL_TOPO_DATA})
add_test(NAME topo_tool_virtual COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_tool_virtual.sh
  $<TARGET_FILE:xccl-topo> ${XCCL_TOPO_DATA})
set_tests_properties(topo_tool_virtual PROPERTIES LABELS "topo;unit" TIMEOUT 60)

# The job planner (issue 24, src/topo/topo_plan.c): rings over every saved
# machine as 1, 2 and 4 hosts, host-buffer NUMA order, join refusals; then
# xccl-topo --job in every format and its refusals.
xccl_add_test(NAME topo_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_plan.c
  LABELS topo unit TIMEOUT 120 ARGS ${XCCL_TOPO_DATA})
target_include_directories(topo_plan PRIVATE ${CMAKE_CURRENT_LIST_DIR})
# Channels over every NIC (issue 45): on every saved machine as 2 hosts, rails
# NIC i to NIC i; where the GPUs have NICs beside them every one carries a
# channel; host-buffer ranks alike; cross-NIC hops of hosts planned apart said.
xccl_add_test(NAME topo_rails SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_topo_rails.c
  LABELS topo unit TIMEOUT 120 ARGS ${XCCL_TOPO_DATA})
target_include_directories(topo_rails PRIVATE ${CMAKE_CURRENT_LIST_DIR})
add_test(NAME topo_tool_job COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_job_tool.sh
  $<TARGET_FILE:xccl-topo> ${XCCL_TOPO_DATA})
set_tests_properties(topo_tool_job PROPERTIES LABELS "topo;unit" TIMEOUT 120)
