# Collectives across real processes on this host, started by xccl-run.
set(mp ${CMAKE_CURRENT_LIST_DIR})
foreach(n 1 2 3 4 5 8)
  xccl_add_test(NAME mp_allreduce_matrix TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n} ARGS matrix
                LABELS multiproc TIMEOUT 600 ENV "XCCL_TIMEOUT=120")
endforeach()
foreach(n 2 3)
  xccl_add_test(NAME mp_allreduce_large TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n} ARGS large
                LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120")
endforeach()
xccl_add_test(NAME mp_allreduce_repeat TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS 4 ARGS repeat
              LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120")
xccl_add_test(NAME mp_allreduce_twocomm TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS 3 ARGS twocomm
              LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120")
foreach(n 2 3 4)
  xccl_add_test(NAME mp_allreduce_bytes TARGET test_allreduce SOURCES ${mp}/test_allreduce.c RANKS ${n} ARGS bytes
                LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120;XCCL_NCHANNELS=2")
endforeach()
