# A cluster on one machine: nodes are network namespaces (needs root; skipped
# with the reason otherwise).
add_test(NAME netns_cluster COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_cluster.sh ${PROJECT_BINARY_DIR})
set_tests_properties(netns_cluster PROPERTIES LABELS "netns;multiproc" TIMEOUT 600 SKIP_RETURN_CODE 77)
