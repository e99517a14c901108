# libnccl.so.2 (issue 16): NCCL programs on xccl, checked against NVIDIA's
# nccl.h (cmake/nccl.cmake finds it). Label nccl; the tests that need
# NVIDIA's header or library skip, naming what is missing, where it is absent.
if(NOT TARGET xccl_nccl)
  return()
endif()
set(nd ${CMAKE_CURRENT_LIST_DIR})
set(XCCL_NCCL_TEST_ENV "${XCCL_TEST_ENV};XCCL_TIMEOUT=60")

function(xccl_nccl_skip name why)
  # The reason goes in as an argument, never into the script: it may hold quotes.
  add_test(NAME ${name} COMMAND sh -c "echo \"skipped: $1\"; exit 77" skip "${why}")
  set_tests_properties(${name} PROPERTIES LABELS nccl SKIP_RETURN_CODE 77)
endfunction()

# The program against xccl's own header: builds and runs wherever xccl does.
add_executable(nccl_prog_xh ${nd}/nccl_prog.c)
target_include_directories(nccl_prog_xh PRIVATE ${PROJECT_SOURCE_DIR}/include/xccl-nccl)
target_link_libraries(nccl_prog_xh PRIVATE xccl_nccl)
foreach(n 1 3)
  add_test(NAME nccl_xheader_colls_n${n} COMMAND nccl_prog_xh colls ${n})
endforeach()

if(XCCL_REAL_NCCL_INCLUDE AND XCCL_REAL_CUDART_INCLUDE)
  find_package(Python3 COMPONENTS Interpreter)
  enable_language(CXX)
  add_executable(nccl_abi_layout ${nd}/abi_layout.cpp)
  set_target_properties(nccl_abi_layout PROPERTIES CXX_STANDARD 17)
  target_include_directories(nccl_abi_layout PRIVATE ${PROJECT_SOURCE_DIR}/include ${XCCL_REAL_NCCL_INCLUDE}
    ${XCCL_REAL_CUDART_INCLUDE})
  add_test(NAME nccl_abi_layout COMMAND nccl_abi_layout)
  add_test(NAME nccl_abi_symbols COMMAND ${Python3_EXECUTABLE} ${nd}/abi_symbols.py
    ${XCCL_REAL_NCCL_INCLUDE}/nccl.h $<TARGET_FILE:xccl_nccl> ${XCCL_REAL_NCCL_LIB})

  # The program against NVIDIA's header, linked with xccl's library.
  add_executable(nccl_prog ${nd}/nccl_prog.c)
  target_include_directories(nccl_prog PRIVATE ${XCCL_REAL_NCCL_INCLUDE} ${XCCL_REAL_CUDART_INCLUDE})
  target_link_libraries(nccl_prog PRIVATE xccl_nccl)
  set(_modes colls group split nonblocking abort kill premulsum mem simulate shrink revoke finalize errors)
  foreach(mode ${_modes})
    set(_ranks 2 4)
    if(mode STREQUAL "colls")
      set(_ranks 1 2 3 4 8)
    elseif(mode STREQUAL "split" OR mode STREQUAL "group")
      set(_ranks 2 3 5 8)
    elseif(mode STREQUAL "shrink")
      set(_ranks 2 4)
    endif()
    foreach(n ${_ranks})
      add_test(NAME nccl_${mode}_n${n} COMMAND nccl_prog ${mode} ${n})
    endforeach()
  endforeach()
  add_test(NAME nccl_initall COMMAND nccl_prog initall 3)
  # NCCL_COMM_ID: every rank derives the id; rank 0's init starts the root there.
  add_test(NAME nccl_commid_n3 COMMAND nccl_prog commid 3)
  set_tests_properties(nccl_commid_n3 PROPERTIES ENVIRONMENT "${XCCL_NCCL_TEST_ENV};NCCL_COMM_ID=127.0.0.1:29517")
  # NCCL_COMM_BLOCKING=0: a config that leaves blocking unset is non-blocking.
  add_test(NAME nccl_nonblocking_env_n2 COMMAND nccl_prog nonblocking 2)
  set_tests_properties(nccl_nonblocking_env_n2 PROPERTIES ENVIRONMENT "${XCCL_NCCL_TEST_ENV};NCCL_COMM_BLOCKING=0")
  add_test(NAME nccl_colls_socket_n3 COMMAND nccl_prog colls 3)
  set_tests_properties(nccl_colls_socket_n3 PROPERTIES ENVIRONMENT "${XCCL_NCCL_TEST_ENV};NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1")

  # On a GPU (tests/gpu/run.sh): the same calls on cudaMalloc buffers.
  if(XCCL_HAVE_CUDA AND TARGET xccl_gpu_tests)
    add_executable(nccl_prog_gpu ${nd}/nccl_prog.c)
    target_compile_definitions(nccl_prog_gpu PRIVATE NCCL_PROG_CUDA)
    target_include_directories(nccl_prog_gpu PRIVATE ${XCCL_REAL_NCCL_INCLUDE} ${XCCL_REAL_CUDART_INCLUDE})
    target_link_libraries(nccl_prog_gpu PRIVATE xccl_nccl CUDA::cudart)
    add_dependencies(xccl_gpu_tests nccl_prog_gpu)
    foreach(n 1 2)
      add_test(NAME nccl_gpu_device_n${n} COMMAND nccl_prog_gpu device ${n})
      set_tests_properties(nccl_gpu_device_n${n} PROPERTIES LABELS "gpu;nccl" TIMEOUT 300 SKIP_RETURN_CODE 77
        ENVIRONMENT "${XCCL_NCCL_TEST_ENV};XCCL_ALGO=ring")
    endforeach()
  endif()

  # A program built against NVIDIA's libnccl.so.2, run unchanged on xccl's.
  if(XCCL_REAL_NCCL_LIB)
    add_executable(nccl_prog_nvlinked ${nd}/nccl_prog.c)
    target_compile_definitions(nccl_prog_nvlinked PRIVATE NCCL_PROG_WHICH_LIB)
    target_include_directories(nccl_prog_nvlinked PRIVATE ${XCCL_REAL_NCCL_INCLUDE} ${XCCL_REAL_CUDART_INCLUDE})
    target_link_libraries(nccl_prog_nvlinked PRIVATE ${XCCL_REAL_NCCL_LIB} dl)
    set_target_properties(nccl_prog_nvlinked PROPERTIES SKIP_BUILD_RPATH ON)
    add_test(NAME nccl_swap_nvidia_lib COMMAND sh ${nd}/swap_lib.sh $<TARGET_FILE:nccl_prog_nvlinked>
      ${XCCL_NCCL_DIR} ${XCCL_REAL_NCCL_LIB})
  else()
    xccl_nccl_skip(nccl_swap_nvidia_lib "NVIDIA's libnccl.so.2 not found under NCCL_HOME or the CUDA directory")
  endif()
else()
  foreach(t nccl_abi_layout nccl_abi_symbols nccl_colls_n2 nccl_swap_nvidia_lib)
    xccl_nccl_skip(${t} "NVIDIA's nccl.h or cuda_runtime.h not found under NCCL_HOME or the CUDA directory")
  endforeach()
endif()

# NCCL 2.32.3's API (issue 48): every function of its nccl.h exported, and a
# program built against it calling the functions 2.29 .. 2.32 added.
if(XCCL_REAL_NCCL232_INCLUDE AND XCCL_REAL_CUDART_INCLUDE)
  find_package(Python3 COMPONENTS Interpreter)
  add_test(NAME nccl_abi_symbols_232 COMMAND ${Python3_EXECUTABLE} ${nd}/abi_symbols.py
    ${XCCL_REAL_NCCL232_INCLUDE}/nccl.h $<TARGET_FILE:xccl_nccl> ${XCCL_REAL_NCCL232_LIB})
  add_executable(nccl_layout_232_nv ${nd}/layout_232.c)
  target_include_directories(nccl_layout_232_nv PRIVATE ${XCCL_REAL_NCCL232_INCLUDE} ${XCCL_REAL_CUDART_INCLUDE})
  add_executable(nccl_layout_232_xccl ${nd}/layout_232.c)
  target_compile_definitions(nccl_layout_232_xccl PRIVATE XCCL_SIDE)
  target_include_directories(nccl_layout_232_xccl PRIVATE ${PROJECT_SOURCE_DIR}/src/nccl
    ${PROJECT_SOURCE_DIR}/include/xccl-nccl ${PROJECT_SOURCE_DIR}/include)
  add_test(NAME nccl_abi_layout_232 COMMAND sh ${nd}/same_output.sh $<TARGET_FILE:nccl_layout_232_nv>
    $<TARGET_FILE:nccl_layout_232_xccl>)
  add_executable(nccl_prog_232 ${nd}/nccl_prog.c)
  target_compile_definitions(nccl_prog_232 PRIVATE NCCL_PROG_232)
  target_include_directories(nccl_prog_232 PRIVATE ${XCCL_REAL_NCCL232_INCLUDE} ${XCCL_REAL_CUDART_INCLUDE})
  target_link_libraries(nccl_prog_232 PRIVATE xccl_nccl)
  # mode:ranks, each run on 1 to 4 ranks (grow: the last rank joins the others).
  foreach(run param:1 colls:1,2,3,4 collconfig:1,2,3,4 suspend:1,2,4 window:2,4 errors:2,4 grow:2,3,4
      split:3 nonblocking:2)
    string(REPLACE ":" ";" run ${run})
    list(GET run 0 mode)
    list(GET run 1 ranks)
    string(REPLACE "," ";" ranks ${ranks})
    foreach(n ${ranks})
      add_test(NAME nccl_232_${mode}_n${n} COMMAND nccl_prog_232 ${mode} ${n})
    endforeach()
  endforeach()
  # The one-sided calls (nccl_prog_rma.c) over shared memory and over sockets;
  # the refusals and a wait that times out (XCCL_TIMEOUT short).
  foreach(n 2 4)
    add_test(NAME nccl_232_rma_n${n} COMMAND nccl_prog_232 rma ${n})
    add_test(NAME nccl_232_rma_socket_n${n} COMMAND nccl_prog_232 rma ${n})
    set_tests_properties(nccl_232_rma_socket_n${n} PROPERTIES ENVIRONMENT
      "${XCCL_NCCL_TEST_ENV};NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1")
    add_test(NAME nccl_232_rma_errors_n${n} COMMAND nccl_prog_232 rma_errors ${n})
    set_tests_properties(nccl_232_rma_errors_n${n} PROPERTIES ENVIRONMENT "${XCCL_TEST_ENV};XCCL_TIMEOUT=5")
  endforeach()
  # Puts larger than a connection into ranks busy in a collective (their
  # progress thread consumes them).
  add_test(NAME nccl_232_rma_busy_n4 COMMAND nccl_prog_232 rma_busy 4)
  add_test(NAME nccl_232_rma_busy_socket_n2 COMMAND nccl_prog_232 rma_busy 2)
  set_tests_properties(nccl_232_rma_busy_socket_n2 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1")
  # A rank that exits: the others' waits stop at once, naming it.
  add_test(NAME nccl_232_rma_gone_n3 COMMAND nccl_prog_232 rma_gone 3)
  add_test(NAME nccl_232_rma_gone_socket_n2 COMMAND nccl_prog_232 rma_gone 2)
  set_tests_properties(nccl_232_rma_gone_socket_n2 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1")
  # One rank: every put is to itself (no connection is made).
  add_test(NAME nccl_232_rma_n1 COMMAND nccl_prog_232 rma 1)
  # A put just before ncclCommDestroy over sockets: 28 MiB into 4 MiB slots
  # (32 MiB per connection, XCCL_RMA_CHUNK_SIZE) is more than loopback's socket buffers take at
  # once, so it is still in the proxy's hands when the origin destroys.
  add_test(NAME nccl_232_rma_last_socket_n2 COMMAND nccl_prog_232 rma_last 2)
  set_tests_properties(nccl_232_rma_last_socket_n2 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};NCCL_SHM_DISABLE=1;NCCL_P2P_DISABLE=1;XCCL_RMA_CHUNK_SIZE=4194304;RMA_LAST_BYTES=29360128")
  # ncclSetEncryption(PSK) on every rank: TLS on the socket streams (no shm) and the bootstrap.
  add_test(NAME nccl_232_encryption_n3 COMMAND nccl_prog_232 encryption 3)
  set_tests_properties(nccl_232_encryption_n3 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};NCCL_COMM_ID=127.0.0.1:29541;XCCL_SHM_DISABLE=1")
  # Rank 1 sets another psk: refused by the bootstrap's handshake; no rank hangs.
  add_test(NAME nccl_232_wrongpsk_n3 COMMAND nccl_prog_232 wrongpsk 3)
  set_tests_properties(nccl_232_wrongpsk_n3 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};NCCL_COMM_ID=127.0.0.1:29543;XCCL_TIMEOUT=5")
  # userProfilerTag reaches xccl's trace (XCCL_TRACE): the program reads its file back.
  add_test(NAME nccl_232_collconfig_trace_n2 COMMAND nccl_prog_232 collconfig 2)
  set_tests_properties(nccl_232_collconfig_trace_n2 PROPERTIES ENVIRONMENT
    "${XCCL_NCCL_TEST_ENV};XCCL_TRACE=${CMAKE_CURRENT_BINARY_DIR}/nccl_232_trace")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/nccl_232_trace)
else()
  set(_why "NVIDIA's NCCL 2.32.3 nccl.h or cuda_runtime.h not found (scripts/nccl-reference.sh, NCCL232_HOME)")
  foreach(t nccl_abi_symbols_232 nccl_abi_layout_232 nccl_232_param_n1 nccl_232_collconfig_n2)
    xccl_nccl_skip(${t} "${_why}")
  endforeach()
endif()

get_property(_nccl_tests DIRECTORY PROPERTY TESTS)
foreach(t ${_nccl_tests})
  if(t MATCHES "^nccl_")
    get_test_property(${t} ENVIRONMENT _env)
    if(NOT _env)
      set_tests_properties(${t} PROPERTIES ENVIRONMENT "${XCCL_NCCL_TEST_ENV}")
    endif()
    get_test_property(${t} LABELS _labels)
    if(NOT _labels)
      set_tests_properties(${t} PROPERTIES LABELS nccl TIMEOUT 150 SKIP_RETURN_CODE 77)
    endif()
  endif()
endforeach()
