# Failures on purpose: each mode launches its own ranks (see test_fault.c).
foreach(mode kill stop hostile missing)
  xccl_add_test(NAME fault_${mode} TARGET test_fault SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault.c
                ARGS ${mode} LABELS fault TIMEOUT 120)
endforeach()
