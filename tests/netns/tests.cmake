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

# xccl-sim against measured xccl-perf (issue 45): 2 namespace hosts x 1 rank
# (no core shared between ranks; sockets over veth and a bridge). The link is
# measured with a 2-rank sendrecv (8 B: latency; 16 MiB: bandwidth), never
# fitted to the all-reduce; ring, tree, rab and hier all-reduce from 8 B to
# 64 MiB (x4 apart) must be replayed within 25 % of their measured time, the
# least of 3 passes (up to 7 where a row is outside: other work on the
# machine only adds time). Allowed outside, where this machine's socket link
# is CPU-bound and its speed depends on how an algorithm feeds it, which
# xccl-sim's link (a latency and one bandwidth) cannot hold
# (docs/DESIGN.md, "The simulator"): the ring from 2 MiB (it streams its
# 512 KiB slots faster than the sendrecv that measures the link, but a lone
# exchange of them slower), rab from 2 MiB (its 64 KiB pieces each pay a
# fixed cost, which its pipeline partly hides), hier from 8 MiB (a 2-position
# ring of 64 KiB pieces: the same cost per piece; 0.71-0.75 on a quiet
# machine) and the tree at every size (the same cost, and two messages per
# step on each rank, one per tree).
# Times things: RUN_SERIAL, so no other test runs beside it. Needs root.
# Skipped unless XCCL_TEST_QUIET=1: on this project's 2-core CI machines the
# same commit passed and failed (a fresh-clone CI run measured a faster link,
# 38 us and 10.7 Gb/s, and ring, rab and hier at 128-512 KiB came 0.71-0.73),
# so it is a check for a quiet machine, not a gate.
add_test(NAME netns_sim_validate_2x1 COMMAND bash ${PROJECT_SOURCE_DIR}/bench/sim_validate.sh ${PROJECT_BINARY_DIR} 2)
set_tests_properties(netns_sim_validate_2x1 PROPERTIES LABELS "netns;tools" TIMEOUT 300 SKIP_RETURN_CODE 77
  RUN_SERIAL TRUE
  ENVIRONMENT "QUIET=XCCL_TEST_QUIET;PER=1;FACTOR=4;REPEAT=3;MAX_REPEAT=7;ITERS=5;WARM=2;ITERS_SMALL=100;TOLERANCE=0.25;ALLOW=ring:2M,tree:8,rab:2M,hier:8M")

# XCCL_TLS (issue 48): two namespace hosts x 1 rank over sockets. With TLS
# every collective is bit for bit and a capture on the veth never shows the
# broadcast buffer's phrase (without TLS it does, so the check can fail); a
# rank without XCCL_TLS and a rank of another job (other secret) are refused
# within a bounded time with a sentence. Needs root and tcpdump (skipped
# with the reason otherwise).
add_executable(netns_tls_probe ${CMAKE_CURRENT_LIST_DIR}/netns_tls_probe.c)
target_link_libraries(netns_tls_probe PRIVATE xccl_internal)
add_test(NAME netns_tls COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_tls.sh ${PROJECT_BINARY_DIR}
  $<TARGET_FILE:netns_tls_probe>)
set_tests_properties(netns_tls PROPERTIES LABELS "netns;multiproc" TIMEOUT 400 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")
# External faults with XCCL_TLS=1: every survivor fails with its sentence;
# none dies (OpenSSL writes with write(), whose SIGPIPE sock_tls.c must keep
# from the rank). The kills and a cut link, the faults that reach TLS's
# write and read paths (the whole matrix under TLS: 50 s more of CI;
# `XCCL_TLS=1 netns_faults.sh BUILD faults` runs it).
add_test(NAME netns_faults_tls COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/netns_faults.sh ${PROJECT_BINARY_DIR} faults)
set_tests_properties(netns_faults_tls PROPERTIES LABELS "netns;fault" TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "XCCL_TLS=1;XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps;NETNS_FAULTS_CELLS=kill:shm+socket kill:socket link_down:socket")
