# The ib transport on real verbs: Soft-RoCE in a qemu VM (rxe_vm.sh). Skips
# (77, with the reason) where qemu, the kernel package or rdma-core cannot be
# had, or where xccl was built without verbs.
add_test(NAME rxe_vm COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rxe_vm.sh ${PROJECT_BINARY_DIR})
set_tests_properties(rxe_vm PROPERTIES LABELS rxe TIMEOUT 600 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
# Two hosts: two qemu guests, each with rxe on its own virtual NIC, one rank in
# each over verbs, plus perftest's figures beside xccl-perf's (rxe_pair.sh; the
# short form: under 3 minutes on 2 cores, the guests at most 240 s; the rest of
# TIMEOUT is for a first run that fetches the kernel and packages;
# `rxe_pair.sh BUILD --long` by hand).
add_test(NAME rxe_pair COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rxe_pair.sh ${PROJECT_BINARY_DIR})
set_tests_properties(rxe_pair PROPERTIES LABELS rxe TIMEOUT 420 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
