# XCCL_STATS_FILE (issue 27): the metrics file of real jobs, read by
# Prometheus' own parser (Debian's python3-prometheus-client; skipped, with
# the reason, where it is missing). Debian's python3, not a virtualenv's.
add_executable(stats_rank ${CMAKE_CURRENT_LIST_DIR}/stats_rank.c)
target_link_libraries(stats_rank PRIVATE xccl_internal)
set(stats_py /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_stats.py)
add_test(NAME stats_counts COMMAND ${stats_py} counts $<TARGET_FILE:xccl-run> $<TARGET_FILE:stats_rank>)
add_test(NAME stats_kill COMMAND ${stats_py} kill $<TARGET_FILE:xccl-run> $<TARGET_FILE:fault_victim>)
add_test(NAME stats_unwritable COMMAND ${stats_py} unwritable $<TARGET_FILE:xccl-run> $<TARGET_FILE:stats_rank>)
add_test(NAME stats_counts_socket COMMAND ${stats_py} counts $<TARGET_FILE:xccl-run> $<TARGET_FILE:stats_rank>)
set_tests_properties(stats_counts_socket PROPERTIES LABELS multiproc TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TRANSPORT=socket")
set_tests_properties(stats_counts stats_unwritable PROPERTIES LABELS multiproc TIMEOUT 120 SKIP_RETURN_CODE 77
  ENVIRONMENT "${XCCL_TEST_ENV}")
set_tests_properties(stats_kill PROPERTIES LABELS fault TIMEOUT 120 SKIP_RETURN_CODE 77 ENVIRONMENT "${XCCL_TEST_ENV}")

# XCCL_TRACE (issue 27): the ranks' timelines, merged and drawn by
# tools/xccl-trace (the png test skips, with the reason, without matplotlib).
add_executable(trace_rank ${CMAKE_CURRENT_LIST_DIR}/trace_rank.c)
target_link_libraries(trace_rank PRIVATE xccl_internal)
set(trace_py /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_trace.py)
set(trace_args $<TARGET_FILE:xccl-run> $<TARGET_FILE:trace_rank> ${PROJECT_BINARY_DIR}/tools/xccl-trace)
add_test(NAME trace_late_rank COMMAND ${trace_py} late ${trace_args})
add_test(NAME trace_late_rank_socket COMMAND ${trace_py} late ${trace_args})
set_tests_properties(trace_late_rank_socket PROPERTIES LABELS multiproc TIMEOUT 120
  ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TRANSPORT=socket")
add_test(NAME trace_png COMMAND ${trace_py} png ${trace_args})
add_test(NAME trace_off COMMAND ${trace_py} off ${trace_args})
add_test(NAME trace_unwritable COMMAND ${trace_py} unwritable ${trace_args})
add_test(NAME trace_kill COMMAND ${trace_py} kill ${trace_args})
set_tests_properties(trace_kill PROPERTIES LABELS fault TIMEOUT 120 ENVIRONMENT "${XCCL_TEST_ENV}")
set_tests_properties(trace_late_rank trace_png trace_off trace_unwritable PROPERTIES LABELS multiproc TIMEOUT 120
  SKIP_RETURN_CODE 77 ENVIRONMENT "${XCCL_TEST_ENV}")
