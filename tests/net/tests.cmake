# The contract of net.h, over every transport that is built (see
# test_net_conformance.c). Over ib it runs in the Soft-RoCE VM (tests/rxe).
xccl_add_test(NAME net_conformance_socket TARGET test_net_conformance
              SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_net_conformance.c
              LABELS unit multiproc TIMEOUT 300 ENV "XCCL_NET=socket")
# Transport choice without verbs devices: socket by default, a clear error for XCCL_NET=ib.
xccl_add_test(NAME net_select TARGET test_net_select SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_net_select.c
              LABELS unit TIMEOUT 60)
if(XCCL_HAVE_IB)
  target_compile_definitions(test_net_select PRIVATE XCCL_HAVE_IB)
endif()
