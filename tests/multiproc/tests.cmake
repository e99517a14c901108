# Collectives across real processes on this host, started by xccl-run.
set(mp ${CMAKE_CURRENT_LIST_DIR})
# 1-4 ranks and 8 (a power of two past the fold's); 5 and 7 took no path
# 3 does not, at 25 s of CI.
foreach(n 1 2 3 4 8)
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
                LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120;XCCL_NCHANNELS=2;XCCL_ALGO=allreduce:ring")
endforeach()

# All-gather, reduce-scatter, broadcast and reduce: one program, three modes.
foreach(n 1 2 3 4 7 8)
  xccl_add_test(NAME mp_collectives_matrix TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS ${n}
                ARGS matrix LABELS multiproc TIMEOUT 600 ENV "XCCL_TIMEOUT=120")
endforeach()
foreach(n 2 3 4)
  xccl_add_test(NAME mp_collectives_bytes TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS ${n}
                ARGS bytes LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120;XCCL_NCHANNELS=2")
endforeach()
foreach(n 2 3)
  xccl_add_test(NAME mp_collectives_errors TARGET test_collectives SOURCES ${mp}/test_collectives.c RANKS ${n}
                ARGS errors LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=120")
endforeach()

# ---- Send/recv, groups, all-to-all, gather and scatter: test_p2p.c, one program, six modes ----
set(p2p_src ${CMAKE_CURRENT_LIST_DIR}/test_p2p.c)
foreach(mode_ranks "sendrecv;1;2;3;4;7" "alltoall;1;2;3;5;8" "gatherscatter;1;2;4;7" "mixed;2;3" "errors;2;3" "bytes;3;4")
  list(POP_FRONT mode_ranks p2p_mode)
  foreach(n ${mode_ranks})
    xccl_add_test(NAME mp_p2p_${p2p_mode} TARGET test_p2p SOURCES ${p2p_src} RANKS ${n} ARGS ${p2p_mode}
                  LABELS multiproc TIMEOUT 180 ENV "XCCL_TIMEOUT=60")
  endforeach()
endforeach()

foreach(n 2 3)
  xccl_add_test(NAME mp_p2p_alltoallv_check TARGET test_p2p SOURCES ${p2p_src} RANKS ${n} ARGS alltoallv_check
                LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=30;XCCL_CHECK=1")
endforeach()
xccl_add_test(NAME mp_p2p_settimeout TARGET test_p2p SOURCES ${p2p_src} RANKS 2 ARGS settimeout
              LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=60")

# ---- Settings every rank must share (the S entries of src/base/config.h) ----
# Rank 1 of 3 sets one of them (test_shared_cfg.c): init fails on every rank
# within a second, naming it. Values as the message shows them (numbers as parsed).
set(shared_cfg_mismatch NSOCKS=2 NET=socket TRANSPORT=socket SHM_DISABLE=1 NET_GDR_LEVEL=SYS P2P_DISABLE=1
    NCHANNELS=3 MIN_NCHANNELS=3 MAX_NCHANNELS=8 CHUNK_SIZE=1048576 ALGO_CHUNK_SIZE=131072
    RMA_CHUNK_SIZE=131072 ALGO=allreduce:ring TUNE=measure CHECKSUM=1 CHECK=1
    HIER_INTER=tree
    IB_QPS_PER_CONNECTION=2
    SHM_COPY=single)
set(shared_cfg_names)
foreach(pair ${shared_cfg_mismatch})
  string(REGEX REPLACE "=.*" "" var ${pair})
  list(APPEND shared_cfg_names ${var})
  xccl_add_test(NAME mp_shared_cfg_mismatch_${var} TARGET test_shared_cfg SOURCES ${mp}/test_shared_cfg.c RANKS 3
                ARGS mismatch ${pair} LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=20")
endforeach()
# XCCL_TLS differs before the shared-settings check: the bootstrap runs TLS
# too. Rank 1 (TLS) meets the plaintext root, fails at once naming TLS and
# tells the root, which fails the others at once too.
list(APPEND shared_cfg_names TLS)
xccl_add_test(NAME mp_shared_cfg_bootstrap_TLS TARGET test_shared_cfg SOURCES ${mp}/test_shared_cfg.c RANKS 3
              ARGS bootstrap TLS=1 LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=5")
# The list above is the table's S entries, no more, no fewer.
xccl_add_test(NAME unit_shared_cfg_covered TARGET test_shared_cfg SOURCES ${mp}/test_shared_cfg.c
              ARGS covered ${shared_cfg_names} LABELS unit TIMEOUT 30)
# Settings each rank may have of its own, and shared ones written otherwise
# but equal to the default, differing on rank 1: the job runs.
foreach(pair DEBUG=INFO DUMP_DIR=/tmp TIMEOUT=100 NCHANNELS=2 CHUNK_SIZE=512K NET_GDR_LEVEL=pxb)
  string(REGEX REPLACE "=.*" "" var ${pair})
  xccl_add_test(NAME mp_shared_cfg_agree_${var} TARGET test_shared_cfg SOURCES ${mp}/test_shared_cfg.c RANKS 3
                ARGS agree ${pair} LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=20")
endforeach()

# A value rank 1's own checks refuse (a malformed XCCL_ALGO, XCCL_FAULT or
# XCCL_HIER_INTER; likewise XCCL_NET=ib on a host without verbs devices): it
# still joins, so every rank fails within a second with its reason instead
# of waiting XCCL_TIMEOUT for it.
foreach(pair ALGO=bogus FAULT=action=nonsense HIER_INTER=bogus)
  string(REGEX REPLACE "=.*" "" var ${pair})
  string(REGEX REPLACE "^[A-Z_]+=" "" value ${pair})
  xccl_add_test(NAME mp_shared_cfg_refused_${var} TARGET test_shared_cfg SOURCES ${mp}/test_shared_cfg.c RANKS 3
                ARGS refused ${var}=${value} LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=20")
endforeach()

# xccl-run piped into head: the job ends at once with 141 (or 0), no rank left.
# XCCL_TLS with certificates from files (issue 48): a signed pair runs, an expired one is refused.
add_test(NAME mp_tls_certs COMMAND sh ${mp}/tls_certs.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf>)
set_tests_properties(mp_tls_certs PROPERTIES LABELS multiproc TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "${XCCL_TEST_ENV}")
add_test(NAME mp_pipe_close COMMAND sh ${mp}/pipe_close.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf>)
set_tests_properties(mp_pipe_close PROPERTIES LABELS multiproc TIMEOUT 120 ENVIRONMENT "${XCCL_TEST_ENV}")

# Ranks killed at random moments (SIGKILL, SIGPIPE) over shared memory and
# sockets: no segment left in /dev/shm, no rank process left. 50 random
# kills, 60 s of CI (XCCL_KILL_ITERS for a longer hunt); 20 under a sanitizer, where each
# costs twice as much and what it looks for (a bad free or read on a
# teardown path) shows in fewer.
set(XCCL_KILL_ITERS 50 CACHE STRING "random kills of mp_kill_leak (20 under a sanitizer)")
set(_kill_iters ${XCCL_KILL_ITERS})
if(XCCL_SANITIZE)
  set(_kill_iters 20)
endif()
add_test(NAME mp_kill_leak COMMAND bash ${mp}/kill_leak.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf> ${_kill_iters})
set_tests_properties(mp_kill_leak PROPERTIES LABELS multiproc TIMEOUT 900 ENVIRONMENT "${XCCL_TEST_ENV}")

# Shared memory has no name by default, a name in /dev/shm with XCCL_SHM_MEMFD=0.
add_test(NAME mp_shm_kind COMMAND bash ${mp}/shm_kind.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf>)
set_tests_properties(mp_shm_kind PROPERTIES LABELS multiproc TIMEOUT 120 ENVIRONMENT "${XCCL_TEST_ENV}")

# ---- Issue 16: PreMulSum ops, registrations and windows, xcclGroupSimulateEnd (test_ops16.c) ----
foreach(mode_ranks "premulsum;1;2;3;4" "reg;1;2;3;4" "simulate;1;2;3")
  list(POP_FRONT mode_ranks ops16_mode)
  foreach(n ${mode_ranks})
    xccl_add_test(NAME mp_ops16_${ops16_mode} TARGET test_ops16 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ops16.c
                  RANKS ${n} ARGS ${ops16_mode} LABELS multiproc TIMEOUT 300 ENV "XCCL_TIMEOUT=60")
  endforeach()
endforeach()

# ---- Split, configured and non-blocking init, inits in a group, InitAll,
# finalize, revoke: test_lifecycle.c (issue 16) ----
set(life_src ${CMAKE_CURRENT_LIST_DIR}/test_lifecycle.c)
foreach(n 2 3 4 8)
  xccl_add_test(NAME mp_life_split TARGET test_lifecycle SOURCES ${life_src} RANKS ${n} ARGS split
                LABELS multiproc TIMEOUT 180 ENV "XCCL_TIMEOUT=60")
endforeach()
foreach(n 2 3)
  xccl_add_test(NAME mp_life_split_missing TARGET test_lifecycle SOURCES ${life_src} RANKS ${n} ARGS split_missing
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
  xccl_add_test(NAME mp_life_nonblocking TARGET test_lifecycle SOURCES ${life_src} RANKS ${n} ARGS nonblocking
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
endforeach()
# XCCL_TIMEOUT=4: the roots of inits whose peers never come end soon
# (the test waits for them before it exits).
foreach(n 2 4)
  xccl_add_test(NAME mp_life_group_init_${n} TARGET test_lifecycle SOURCES ${life_src} ARGS group_init ${n}
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=4")
endforeach()
xccl_add_test(NAME mp_life_init_all TARGET test_lifecycle SOURCES ${life_src} ARGS init_all 4
              LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
xccl_add_test(NAME mp_life_init_all_refused TARGET test_lifecycle SOURCES ${life_src} ARGS init_all_refused 3
              LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=30;XCCL_ALGO=bogus")
xccl_add_test(NAME mp_life_abort_init TARGET test_lifecycle SOURCES ${life_src} ARGS abort_init
              LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=4")
foreach(mode finalize revoke)
  xccl_add_test(NAME mp_life_${mode} TARGET test_lifecycle SOURCES ${life_src} ARGS ${mode}
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
endforeach()

# XCCL_TUNE=measure (issue 25): the cost model's constants timed at init,
# the same on every rank; sockets slower a step than shared memory; a bad
# value refused by every rank.
add_test(NAME mp_tune_measure COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/tune_measure.sh $<TARGET_FILE:xccl-run>
         $<TARGET_FILE:test_allreduce>)
set_tests_properties(mp_tune_measure PROPERTIES LABELS multiproc TIMEOUT 300 ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TIMEOUT=60")

# ---- Algorithms per communicator (issue 25): config->algo, what the tuner
# runs (xcclCommGetAlgorithm), xccl-perf --algo ----
foreach(n 4 8)
  xccl_add_test(NAME mp_algo_config TARGET test_algo_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_algo_config.c
                RANKS ${n} LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60;XCCL_NCHANNELS=1")
endforeach()
add_test(NAME mp_perf_algo COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/perf_algo.sh $<TARGET_FILE:xccl-run>
                                   $<TARGET_FILE:xccl-perf>)
set_tests_properties(mp_perf_algo PROPERTIES LABELS multiproc TIMEOUT 300 ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TIMEOUT=60")

# ---- Issue 29: the lone all-reduce (an all-reduce by recursive doubling
# alone, partners in shared memory, without a group launch): taken where it
# should be and not elsewhere, results checked, a killed partner reported ----
# XCCL_CPU_BIND: ranks that outnumber their CPUs bind one each (comm.c's comm_bind_cpu).
add_test(NAME mp_cpu_bind COMMAND bash ${mp}/cpu_bind.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf>)
set_tests_properties(mp_cpu_bind PROPERTIES LABELS multiproc TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${XCCL_TEST_ENV}")
add_test(NAME mp_lone_path COMMAND bash ${mp}/lone_path.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:xccl-perf>
         $<TARGET_FILE:fault_victim>)
set_tests_properties(mp_lone_path PROPERTIES LABELS multiproc TIMEOUT 300 ENVIRONMENT "${XCCL_TEST_ENV}")

# ---- xcclCommSuspend / xcclCommResume / xcclCommMemStats (issue 48): the
# connections released and made again, on 2 and 3 ranks, over shared memory
# and over sockets; a rank that exits while suspended (or before) fails the
# others' resume (suspend) within XCCL_TIMEOUT; suspend waits for an
# all-reduce in flight on another thread ----
foreach(n 2 3)
  foreach(tr shm socket)
    xccl_add_test(NAME mp_suspend_${tr} TARGET test_suspend SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_suspend.c
                  RANKS ${n} ARGS cycle LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60;XCCL_TRANSPORT=${tr}")
  endforeach()
  foreach(mode dies dies_early)
    xccl_add_test(NAME mp_suspend_${mode} TARGET test_suspend SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_suspend.c
                  RANKS ${n} ARGS ${mode} LABELS multiproc TIMEOUT 60 ENV "XCCL_TIMEOUT=5;XCCL_TRANSPORT=socket")
  endforeach()
  xccl_add_test(NAME mp_suspend_inflight TARGET test_suspend SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_suspend.c
                RANKS ${n} ARGS inflight LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
endforeach()

# ---- One-sided calls (test_rma.c): puts of 0 bytes to several
# XCCL_RMA_CHUNK_SIZE slots checked byte for byte with their guards, and
# signal counts, on 2 and 3 ranks over shared memory and sockets (ib:
# tests/rxe/plan.sh); a put whose header is corrupted on the way (XCCL_FAULT)
# fails the target's waits on that peer, naming it, and writes nothing; the
# same with XCCL_CHECKSUM ----
foreach(n 2 3)
  xccl_add_test(NAME mp_rma_puts TARGET test_rma SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rma.c RANKS ${n} ARGS puts
                LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
  xccl_add_test(NAME mp_rma_puts_socket TARGET test_rma SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rma.c RANKS ${n}
                ARGS puts LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60;XCCL_TRANSPORT=socket")
endforeach()
foreach(tr shm socket)
  xccl_add_test(NAME mp_rma_corrupt_${tr} TARGET test_rma SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rma.c RANKS 2
                ARGS corrupt LABELS multiproc TIMEOUT 60
                ENV "XCCL_TIMEOUT=20;XCCL_TRANSPORT=${tr};XCCL_FAULT=rank=0,action=corrupt")
endforeach()
# With XCCL_CHECKSUM: the puts stay exact; the corrupt one is caught by the slot's CRC32C.
xccl_add_test(NAME mp_rma_puts_checksum_socket TARGET test_rma SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rma.c RANKS 2
              ARGS puts LABELS multiproc TIMEOUT 120 ENV "XCCL_TIMEOUT=60;XCCL_CHECKSUM=1;XCCL_TRANSPORT=socket")
xccl_add_test(NAME mp_rma_corrupt_checksum TARGET test_rma SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rma.c RANKS 2
              ARGS corrupt LABELS multiproc TIMEOUT 60
              ENV "XCCL_TIMEOUT=20;XCCL_CHECKSUM=1;XCCL_FAULT=rank=0,action=corrupt")
