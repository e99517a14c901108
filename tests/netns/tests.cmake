# A cluster on one machine: nodes are network namespaces (needs root; skipped
# with the reason otherwise).
add_test(NAME netns_cluster COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_cluster.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_cluster PROPERTIES LABELS "netns;multiproc" TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")

# External faults on that cluster (issue 7): kill -9, SIGSTOP and a link taken
# down mid-run, and tc netem delay/loss/reordering where the kernel has netem
# (the rxe VM rig runs those otherwise). netns_victim: all-reduces in a loop.
add_executable(netns_victim ${CMAKE_CURRENT_LIST_DIR}/netns_victim.c ${PROJECT_SOURCE_DIR}/tests/common/victim_loop.c)
target_include_directories(netns_victim PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
target_link_libraries(netns_victim PRIVATE xccl_internal)
add_test(NAME netns_faults COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/netns_faults.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_faults PROPERTIES LABELS "netns;fault" TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")

# Virtual interfaces on a live kernel (issue 18): veth, bridge and dummy
# interfaces in a namespace of the test's own; the auto-pick (socket
# transport, xcclGetUniqueId) never takes them, XCCL_SOCKET_IFNAME still can,
# and xccl-topo lists them. Needs root (skipped with the reason otherwise).
add_executable(netns_ifpick ${CMAKE_CURRENT_LIST_DIR}/netns_ifpick.c)
target_link_libraries(netns_ifpick PRIVATE xccl_internal)
add_test(NAME netns_ifpick COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_ifpick.sh $<TARGET_FILE:netns_ifpick>
  $<TARGET_FILE:xccl-topo>)
set_tests_properties(netns_ifpick PROPERTIES LABELS "netns;topo" TIMEOUT 120 SKIP_RETURN_CODE 77)

# Rails over sockets (issue 24): two namespace hosts joined by two veth pairs
# (xr0, xr1), XCCL_SOCKET_IFNAME=xr and two channels; a 64 MiB all-reduce must
# send 40-60 % of its bytes over each pair (tx_bytes), and each rank's INFO
# output name both devices. Needs root (skipped with the reason otherwise).
add_test(NAME netns_rails COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_rails.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_rails PROPERTIES LABELS "netns;multiproc" TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")

# The hierarchical all-reduce (issue 25) across namespace nodes, even and
# uneven (2x2, 1+2+2, 2+1+3, 4x2): bytes per peer and between nodes against
# its formula, results bit for bit. Needs root (skipped otherwise).
add_test(NAME netns_hier COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_hier.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_hier PROPERTIES LABELS "netns;multiproc" TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")

# PAT (issue 45) at one rank per node, over sockets between 5 and 8
# namespace nodes: bytes per peer against its formula and the cost model,
# the tuner's pick, and on 5 the all-gather and reduce-scatter matrices.
# Needs root (skipped otherwise).
add_test(NAME netns_pat COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_pat.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_pat PROPERTIES LABELS "netns;multiproc" TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")
