# The ib transport on real verbs: Soft-RoCE in a qemu VM (rxe_vm.sh). Skips
# (77, with the reason) where qemu, the kernel package or rdma-core cannot be
# had, or where xccl was built without verbs.
add_test(NAME rxe_vm COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rxe_vm.sh ${PROJECT_BINARY_DIR})
set_tests_properties(rxe_vm PROPERTIES LABELS rxe TIMEOUT 600 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
