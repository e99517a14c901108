# libnccl.so.2 (issue 16): NCCL's API over xccl, for programs written to
# NCCL. The library holds xccl itself (the same objects as libxccl.so), so a
# program needs nothing else; it exports only the nccl*/pnccl* functions.
# It is built into lib/xccl-nccl/ and installed there, where it shadows a
# real NCCL only for programs pointed at it (LD_LIBRARY_PATH, -L, rpath).
#
# NVIDIA's nccl.h is the contract: the tests find it at configure time
# (NCCL_HOME, else the CUDA installation that nvcc belongs to) and check
# this library against it; where it is absent they are skipped, saying so.
option(XCCL_WITH_NCCL "Build libnccl.so.2, NCCL's API over xccl" ON)
if(NOT XCCL_WITH_NCCL)
  return()
endif()

set(XCCL_NCCL_DIR ${CMAKE_BINARY_DIR}/lib/xccl-nccl)
add_library(xccl_nccl SHARED ${PROJECT_SOURCE_DIR}/src/nccl/shim.c ${PROJECT_SOURCE_DIR}/src/nccl/shim_232.c
  ${PROJECT_SOURCE_DIR}/src/nccl/shim_param.c ${PROJECT_SOURCE_DIR}/src/nccl/shim_rma.c ${XCCL_OBJECTS})
target_include_directories(xccl_nccl PRIVATE ${PROJECT_SOURCE_DIR}/include/xccl-nccl ${PROJECT_SOURCE_DIR}/include)
foreach(layer ${XCCL_LAYERS})
  target_include_directories(xccl_nccl PRIVATE $<TARGET_PROPERTY:${layer},INTERFACE_INCLUDE_DIRECTORIES>)
endforeach()
target_link_libraries(xccl_nccl PRIVATE OpenSSL::SSL OpenSSL::Crypto Threads::Threads m ${XCCL_IB_LIBS} ${XCCL_ISAL_LIBS}
  ${XCCL_TOPO_LIBS})
if(XCCL_HAVE_CUDA)
  target_link_libraries(xccl_nccl PRIVATE CUDA::cudart_static)
endif()
# NCCL's version, as NVIDIA's library is named: libnccl.so.2 -> libnccl.so.2.32.3
# (XCCL_NCCL_SERVED_VERSION, src/nccl/nccl_232.h).
set_target_properties(xccl_nccl PROPERTIES OUTPUT_NAME nccl VERSION 2.32.3 SOVERSION 2
  LIBRARY_OUTPUT_DIRECTORY ${XCCL_NCCL_DIR} LINK_DEPENDS ${PROJECT_SOURCE_DIR}/src/nccl/nccl.map)
target_link_options(xccl_nccl PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/src/nccl/nccl.map
  -Wl,--no-undefined)

# One component, "nccl" (the package libnccl2-xccl), header and link too:
# what builds an NCCL program against xccl comes with the library it runs on.
install(TARGETS xccl_nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/xccl-nccl COMPONENT nccl NAMELINK_COMPONENT nccl)
install(FILES ${PROJECT_SOURCE_DIR}/include/xccl-nccl/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xccl-nccl
  COMPONENT nccl)

# NVIDIA's header and library, for the tests only.
set(_xccl_nccl_hints)
if(DEFINED ENV{NCCL_HOME})
  list(APPEND _xccl_nccl_hints $ENV{NCCL_HOME})
endif()
# The CUDA directory as CMake's CUDAToolkit module finds it: nvcc on PATH may
# be a wrapper script (/usr/local/bin/nvcc), whose parent is not that directory.
if(NOT CUDAToolkit_FOUND)
  find_package(CUDAToolkit QUIET)
endif()
if(CUDAToolkit_FOUND)
  get_filename_component(_xccl_cuda_dir ${CUDAToolkit_BIN_DIR} DIRECTORY)
  list(APPEND _xccl_nccl_hints ${_xccl_cuda_dir} ${CUDAToolkit_LIBRARY_ROOT})
endif()
list(APPEND _xccl_nccl_hints /usr/local/cuda)
# NVIDIA's NCCL from its Python wheel, where scripts/nccl-reference.sh put it.
list(APPEND _xccl_nccl_hints ${PROJECT_SOURCE_DIR}/build/nccl-ref/nvidia/nccl)
find_path(XCCL_REAL_NCCL_INCLUDE nccl.h HINTS ${_xccl_nccl_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_path(XCCL_REAL_CUDART_INCLUDE cuda_runtime.h HINTS ${_xccl_nccl_hints} ${XCCL_REAL_NCCL_INCLUDE}/..
  PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(XCCL_REAL_NCCL_LIB NAMES libnccl.so.2 nccl HINTS ${_xccl_nccl_hints} PATH_SUFFIXES lib lib64
  NO_DEFAULT_PATH)
if(XCCL_REAL_NCCL_INCLUDE AND XCCL_REAL_CUDART_INCLUDE)
  message(STATUS "xccl: libnccl.so.2 is checked against ${XCCL_REAL_NCCL_INCLUDE}/nccl.h")
else()
  message(STATUS "xccl: NVIDIA's nccl.h (and cuda_runtime.h) not found under NCCL_HOME or the CUDA directory: "
                 "the nccl_abi_* tests will be skipped")
endif()
# NCCL 2.32.3's header, the API served (issue 48): NCCL232_HOME, else where
# scripts/nccl-reference.sh put the 2.32.3 wheel. Its cuda_runtime.h is the
# one found above.
set(_xccl_nccl232_hints ${PROJECT_SOURCE_DIR}/build/nccl-ref-2.32/nvidia/nccl)
if(DEFINED ENV{NCCL232_HOME})
  list(PREPEND _xccl_nccl232_hints $ENV{NCCL232_HOME})
endif()
find_path(XCCL_REAL_NCCL232_INCLUDE nccl.h HINTS ${_xccl_nccl232_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(XCCL_REAL_NCCL232_LIB NAMES libnccl.so.2 nccl HINTS ${_xccl_nccl232_hints} PATH_SUFFIXES lib lib64
  NO_DEFAULT_PATH)
if(XCCL_REAL_NCCL232_INCLUDE)
  message(STATUS "xccl: libnccl.so.2's 2.32 API is checked against ${XCCL_REAL_NCCL232_INCLUDE}/nccl.h")
else()
  message(STATUS "xccl: NVIDIA's NCCL 2.32.3 nccl.h not found (scripts/nccl-reference.sh fetches it): "
                 "the nccl_*_232 tests will be skipped")
endif()
unset(_xccl_nccl232_hints)
unset(_xccl_nccl_hints)
unset(_xccl_cuda_dir)

# bench/nccl_shim.sh: one loop, through libnccl.so.2 and through xccl.h.
add_executable(nccl-latency ${PROJECT_SOURCE_DIR}/bench/nccl_latency.c)
target_include_directories(nccl-latency PRIVATE ${PROJECT_SOURCE_DIR}/include/xccl-nccl)
target_link_libraries(nccl-latency PRIVATE xccl_nccl)
add_executable(xccl-latency ${PROJECT_SOURCE_DIR}/bench/nccl_latency.c)
target_compile_definitions(xccl-latency PRIVATE LAT_XCCL)
target_link_libraries(xccl-latency PRIVATE xccl)
set_target_properties(nccl-latency xccl-latency PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
