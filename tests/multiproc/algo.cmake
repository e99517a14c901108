# Every algorithm for every collective it serves: the all-reduce suites again
# with recursive doubling forced (powers of two and not).
set(mp ${CMAKE_CURRENT_LIST_DIR})
foreach(n 3 5)
  xccl_add_test(NAME mp_allreduce_rd_matrix TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n}
                ARGS matrix LABELS multiproc TIMEOUT 600 ENV "XCCL_TIMEOUT=120;XCCL_ALGO=allreduce:rd")
endforeach()
foreach(n 2 4 8)
  xccl_add_test(NAME mp_allreduce_rd_repeat TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n}
                ARGS repeat LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120;XCCL_ALGO=allreduce:rd")
endforeach()

# XCCL_CHECK: mismatched calls are named on every rank (and what it costs).
foreach(n 3 4)
  xccl_add_test(NAME mp_check TARGET test_check SOURCES ${mp}/test_check.c RANKS ${n}
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=30;XCCL_CHECK=1")
endforeach()

# Recursive doubling's traffic per rank matches its formula.
foreach(n 4 5 6)
  xccl_add_test(NAME mp_allreduce_rdbytes TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n}
                ARGS rdbytes LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60;XCCL_ALGO=allreduce:rd")
endforeach()

# xcclBarrier waits for the last rank.
foreach(n 2 4)
  xccl_add_test(NAME mp_barrier TARGET test_barrier SOURCES ${mp}/test_barrier.c RANKS ${n}
                LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=30")
endforeach()

# The conformance suites again over TCP only: same-host ranks otherwise use
# shared memory, and the socket transport must keep passing them.
foreach(n 3 4)
  xccl_add_test(NAME mp_allreduce_matrix_socket TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n}
                ARGS matrix LABELS multiproc TIMEOUT 600 ENV "XCCL_TIMEOUT=120;XCCL_TRANSPORT=socket")
  xccl_add_test(NAME mp_collectives_matrix_socket TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS ${n}
                ARGS matrix LABELS multiproc TIMEOUT 600 ENV "XCCL_TIMEOUT=120;XCCL_TRANSPORT=socket")
endforeach()
xccl_add_test(NAME mp_allreduce_bytes_socket TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS 3
              ARGS bytes LABELS multiproc TIMEOUT 300
              ENV "XCCL_TIMEOUT=120;XCCL_NCHANNELS=2;XCCL_ALGO=allreduce:ring;XCCL_TRANSPORT=socket")
xccl_add_test(NAME mp_collectives_bytes_socket TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS 3
              ARGS bytes LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120;XCCL_NCHANNELS=2;XCCL_TRANSPORT=socket")
