# Failures on purpose: each mode launches its own ranks (see test_fault.c).
foreach(mode kill stop hostile missing)
  xccl_add_test(NAME fault_${mode} TARGET test_fault SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault.c
                ARGS ${mode} LABELS fault TIMEOUT 120)
endforeach()
# The same failures with TCP between the ranks (they share memory otherwise).
foreach(mode kill stop)
  xccl_add_test(NAME fault_${mode}_socket TARGET test_fault SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault.c
                ARGS ${mode} LABELS fault TIMEOUT 120 ENV "XCCL_TRANSPORT=socket")
endforeach()

add_test(NAME fault_shm_too_small COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shm_small.sh $<TARGET_FILE:xccl-run>
         $<TARGET_FILE:test_allreduce>)
set_tests_properties(fault_shm_too_small PROPERTIES LABELS fault TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TIMEOUT=60")

# Hostile input (issue 7): the bootstrap's wire and environment parsers under
# libFuzzer, and a connection flood against the bootstrap ports during a job.
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_bootstrap.cmake)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_dump.cmake)  # xccl-stuck's dump reader (issue 27)

xccl_add_test(NAME fault_flood TARGET test_flood SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flood.c
              LABELS fault TIMEOUT 90)
# Only silent connections, held longer than XCCL_TIMEOUT: listeners must drop the oldest to let peers in.
xccl_add_test(NAME fault_flood_idle TARGET test_flood SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flood.c ARGS idle
              LABELS fault TIMEOUT 120)

# The fault matrix (XCCL_FAULT): every action over shared memory and sockets.
add_executable(fault_victim ${CMAKE_CURRENT_LIST_DIR}/fault_victim.c ${PROJECT_SOURCE_DIR}/tests/common/victim_loop.c)
target_include_directories(fault_victim PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
target_link_libraries(fault_victim PRIVATE xccl_internal)
add_test(NAME fault_matrix COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fault_matrix.sh $<TARGET_FILE:xccl-run>
         $<TARGET_FILE:fault_victim>)
set_tests_properties(fault_matrix PROPERTIES LABELS fault TIMEOUT 900 ENVIRONMENT "${XCCL_TEST_ENV}")

# XCCL_CHECKSUM=1 (issue 7): a CRC32C travels with every chunk. The data paths
# stay right with it on (ring, recursive doubling, point-to-point; shared
# memory and sockets); fault_matrix shows a corrupted chunk caught; a rank
# that differs is refused at init.
set(mp ${PROJECT_SOURCE_DIR}/tests/multiproc)
xccl_add_test(NAME fault_checksum_allreduce TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS 3 ARGS matrix
              LABELS fault TIMEOUT 300 ENV "XCCL_TIMEOUT=60;XCCL_CHECKSUM=1")
xccl_add_test(NAME fault_checksum_collectives_socket TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS 3
              ARGS matrix LABELS fault TIMEOUT 300 ENV "XCCL_TIMEOUT=60;XCCL_CHECKSUM=1;XCCL_TRANSPORT=socket")
xccl_add_test(NAME fault_checksum_p2p TARGET test_p2p SOURCES ${mp}/test_p2p.c RANKS 3 ARGS mixed
              LABELS fault TIMEOUT 180 ENV "XCCL_TIMEOUT=60;XCCL_CHECKSUM=1")
add_test(NAME fault_checksum_mismatch COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checksum_mismatch.sh
         $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_allreduce>)
set_tests_properties(fault_checksum_mismatch PROPERTIES LABELS fault TIMEOUT 120 ENVIRONMENT "${XCCL_TEST_ENV}")

# xcclCommShrink (issue 7): rank 2 killed, the survivors shrink to 3 then 2
# ranks; the ways of calling it wrong (over shared memory and sockets); an
# abort on another thread ending its wait.
foreach(mode kill errors)
  xccl_add_test(NAME fault_shrink_${mode} TARGET test_shrink SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shrink.c
                ARGS $<TARGET_FILE:xccl-run> ${mode} LABELS fault TIMEOUT 180)
  xccl_add_test(NAME fault_shrink_${mode}_socket TARGET test_shrink SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shrink.c
                ARGS $<TARGET_FILE:xccl-run> ${mode} LABELS fault TIMEOUT 180 ENV "XCCL_TRANSPORT=socket")
endforeach()
xccl_add_test(NAME fault_shrink_abort TARGET test_shrink SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shrink.c
              ARGS $<TARGET_FILE:xccl-run> abort LABELS fault TIMEOUT 120)

# xcclCommGrow (issue 26): 3 ranks grow to 4, and the refused calls; a
# killed rank replaced by a spare after the survivors shrink.
foreach(mode more replace)
  xccl_add_test(NAME fault_grow_${mode} TARGET test_grow SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_grow.c
                ARGS $<TARGET_FILE:xccl-run> ${mode} LABELS fault TIMEOUT 180)
endforeach()
xccl_add_test(NAME fault_grow_replace_socket TARGET test_grow SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_grow.c
              ARGS $<TARGET_FILE:xccl-run> replace LABELS fault TIMEOUT 180 ENV "XCCL_TRANSPORT=socket")

# In-flight state dumps (issue 7): a stopped rank and a rank that holds back,
# named by xccl-stuck from the dumps of the others; the tool's parser on
# malformed input (the JSON of src/observe/dump.h), link cycles and random
# mutations.
add_executable(test_dump_rank ${CMAKE_CURRENT_LIST_DIR}/test_dump_rank.c)
target_link_libraries(test_dump_rank PRIVATE xccl_internal)
foreach(transport shm socket)
  add_test(NAME fault_dump_stall_${transport} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_dump.sh stall
           $<TARGET_FILE:xccl-run> $<TARGET_FILE:fault_victim> $<TARGET_FILE:xccl-stuck>)
  set_tests_properties(fault_dump_stall_${transport} PROPERTIES LABELS fault TIMEOUT 180
    ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TRANSPORT=${transport}")
endforeach()
add_test(NAME fault_dump_signal COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_dump.sh signal
         $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_dump_rank> $<TARGET_FILE:xccl-stuck>)
set_tests_properties(fault_dump_signal PROPERTIES LABELS fault TIMEOUT 180 ENVIRONMENT "${XCCL_TEST_ENV}")
# The same with recursive doubling (a small all-reduce): waits on partners, not ring neighbours.
add_test(NAME fault_dump_signal_rd COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_dump.sh signal
         $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_dump_rank> $<TARGET_FILE:xccl-stuck> 256)
set_tests_properties(fault_dump_signal_rd PROPERTIES LABELS fault TIMEOUT 180
  ENVIRONMENT "${XCCL_TEST_ENV};XCCL_ALGO=allreduce:rd")
# Rabenseifner, a rank stopped mid-way: each survivor names the partner whose
# data its earliest exchange lacks, so the verdict still finds rank 2.
add_test(NAME fault_dump_stall_rab COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_dump.sh stall
         $<TARGET_FILE:xccl-run> $<TARGET_FILE:fault_victim> $<TARGET_FILE:xccl-stuck>)
set_tests_properties(fault_dump_stall_rab PROPERTIES LABELS fault TIMEOUT 180
  ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TRANSPORT=shm;XCCL_ALGO=allreduce:rab")
# And a group of sends and receives around the ring: waits on the user's peers.
add_test(NAME fault_dump_signal_p2p COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_dump.sh signal
         $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_dump_rank> $<TARGET_FILE:xccl-stuck> 1048576 p2p)
set_tests_properties(fault_dump_signal_p2p PROPERTIES LABELS fault TIMEOUT 180 ENVIRONMENT "${XCCL_TEST_ENV}")
xccl_add_test(NAME fault_dump_stuck TARGET test_dump_stuck SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dump_stuck.c
              ARGS $<TARGET_FILE:xccl-stuck> LABELS fault TIMEOUT 120)

# A killed shared-memory peer that nobody has reaped yet (a zombie) counts as gone.
add_test(NAME fault_zombie_peer COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/zombie_peer.sh $<TARGET_FILE:xccl-run>
         $<TARGET_FILE:fault_victim>)
set_tests_properties(fault_zombie_peer PROPERTIES LABELS fault TIMEOUT 120 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${XCCL_TEST_ENV}")

# A rank killed in the middle of a single-copy all-reduce (issue 17): the
# survivors fail at once naming it, whether they were reading its memory or
# waiting for its token.
add_test(NAME fault_direct_kill COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/direct_kill.sh $<TARGET_FILE:xccl-run>
         $<TARGET_FILE:fault_victim>)
set_tests_properties(fault_direct_kill PROPERTIES LABELS fault TIMEOUT 300 ENVIRONMENT "${XCCL_TEST_ENV}")
