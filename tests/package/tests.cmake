# Packaging (issue 44).
#  version_sync (unit): python/xccl/__init__.py's __version__ is project()'s.
#  abi_xccl_symbols (unit): what libxccl.so exports, and its version node.
#  package_deb (package): cpack's four .debs installed into a clean Debian
#    root (debootstrap), where programs are built against the installed files
#    with pkg-config and find_package(xccl) and run with 2 ranks; skipped
#    (77, with the reason) when not root, without debootstrap or dpkg-dev, or
#    without the Debian archive. The root is cached in <build>/package-root.
add_test(NAME version_sync COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DVERSION=${PROJECT_VERSION}
  -P ${CMAKE_CURRENT_LIST_DIR}/check_version.cmake)
set_tests_properties(version_sync PROPERTIES LABELS unit TIMEOUT 30)

find_program(XCCL_BASH_EXECUTABLE bash)
mark_as_advanced(XCCL_BASH_EXECUTABLE)
if(XCCL_BASH_EXECUTABLE)
  add_test(NAME package_deb COMMAND ${XCCL_BASH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_deb.sh ${PROJECT_BINARY_DIR}
    ${PROJECT_SOURCE_DIR})
  set_tests_properties(package_deb PROPERTIES LABELS package TIMEOUT 1800 SKIP_RETURN_CODE 77 RUN_SERIAL ON)
endif()

# libxccl.so exports xccl*@@XCCL_0.1 only, and every function xccl.h declares.
if(XCCL_SH_EXECUTABLE)
  add_test(NAME abi_xccl_symbols COMMAND ${XCCL_SH_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_symbols.sh
    $<TARGET_FILE:xccl> ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  set_tests_properties(abi_xccl_symbols PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()
