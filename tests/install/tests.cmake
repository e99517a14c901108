# Packaging test: install this build tree into a temporary prefix and build a
# stand-alone consumer against it with find_package(xccl) and with pkg-config
# (shared and static). Run after the build: it installs what was built.
# Skipped (exit 77, with the reason printed) when pkg-config is missing.
find_program(XCCL_SH_EXECUTABLE NAMES sh bash)
mark_as_advanced(XCCL_SH_EXECUTABLE)
if(XCCL_SH_EXECUTABLE)
  add_test(NAME install_consumer
    COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_install.sh
      ${PROJECT_BINARY_DIR} ${CMAKE_COMMAND} $<CONFIG>)
  set_tests_properties(install_consumer PROPERTIES
    LABELS unit
    TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()
