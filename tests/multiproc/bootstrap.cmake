# The bootstrap's all-gather (Bruck's, ceil(log2 k) rounds; issue 25) under a
# whole init, on process counts that are not powers of two and one above 16:
# init's all-gathers (peer info, shared settings, ring plan) and a barrier.
# The all-gather itself, block by block and round by round, on 1..9, 16 and
# 17 ranks: tests/unit/test_bootstrap_allgather.c.
set(_bs_mp ${CMAKE_CURRENT_LIST_DIR})
foreach(n 5 7 17)
  xccl_add_test(NAME mp_bootstrap_barrier TARGET test_barrier SOURCES ${_bs_mp}/test_barrier.c RANKS ${n}
    LABELS multiproc TIMEOUT 180)
endforeach()
