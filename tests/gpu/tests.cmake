# GPU suite (issue 8). `ctest -L gpu`: the collectives on device buffers with
# 1, 2 and 4 ranks on one GPU against the host path's results, sends and
# receives, abort of a running kernel and its deadline; each skipped (77, with
# the reason) where no GPU can be used. tests/gpu/run.sh builds and runs them
# with the kernel benchmark on a machine with an NVIDIA GPU. XCCL_ALGO=ring:
# the device runs the ring only, and the host reference must walk the same
# schedule to give the same bits.
set(gpu ${CMAKE_CURRENT_LIST_DIR})

# The schedule the kernel walks, against the host twin: no GPU needed, so it
# is built with or without CUDA.
xccl_add_test(NAME unit_ring_plan SOURCES ${gpu}/test_ring_plan.c LABELS unit TIMEOUT 120)

if(XCCL_HAVE_CUDA)
  # Groups of device operations launch at xcclGroupEnd (src/core/group.c).
  set(gpu_groups 1)

  # Runs where there is no CUDA driver: host buffers work, a device pointer is
  # refused with a sentence. Skipped where a driver is present.
  xccl_add_test(NAME gpu_nodriver SOURCES ${gpu}/test_gpu_nodriver.c LABELS "unit;gpu" RANKS 2 TIMEOUT 60
                ARGS $<TARGET_FILE:xccl>)

  foreach(n 1 2 4)
    xccl_add_test(NAME gpu_coll TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS ${n} ARGS coll
                  LABELS gpu TIMEOUT 600 ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;GPU_TEST_GROUPS=${gpu_groups}")
    xccl_add_test(NAME gpu_p2p TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS ${n} ARGS p2p
                  LABELS gpu TIMEOUT 300 ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;GPU_TEST_GROUPS=${gpu_groups}")
  endforeach()
  # The slots in mapped host memory instead of the receiving GPU's (no CUDA IPC).
  xccl_add_test(NAME gpu_coll_nop2p TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS 2 ARGS quick
                LABELS gpu TIMEOUT 300 ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_P2P_DISABLE=1;GPU_TEST_GROUPS=${gpu_groups}")
  # Over sockets: the watcher drives the proxy for the kernel.
  xccl_add_test(NAME gpu_coll_socket TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS 2 ARGS quick
                LABELS gpu TIMEOUT 300
                ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_TRANSPORT=socket;GPU_TEST_GROUPS=${gpu_groups}")
  # Host and device operations meeting on one connection after device work used it.
  xccl_add_test(NAME gpu_mixed TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS 2 ARGS mixed
                LABELS gpu TIMEOUT 120 ENV "XCCL_TIMEOUT=30")
  xccl_add_test(NAME gpu_abort TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS 2 ARGS abort
                LABELS gpu TIMEOUT 120 ENV "XCCL_TIMEOUT=60")
  xccl_add_test(NAME gpu_timeout TARGET test_gpu_coll SOURCES ${gpu}/test_gpu_coll.c RANKS 2 ARGS timeout
                LABELS gpu TIMEOUT 120 ENV "XCCL_TIMEOUT=3")

  # The host side of the device path where there is no GPU: the same test
  # against a stand-in CUDA runtime and kernel (mock_cuda.c), linked from the
  # layers' objects without the real kernels and cudart.
  set(mock_objs)
  foreach(layer ${XCCL_LAYERS})
    if(NOT layer STREQUAL "xccl_kernels_cuda")
      list(APPEND mock_objs $<TARGET_OBJECTS:${layer}>)
    endif()
  endforeach()
  get_target_property(mock_libs xccl LINK_LIBRARIES)
  list(REMOVE_ITEM mock_libs CUDA::cudart_static)
  add_executable(test_gpu_coll_mock ${gpu}/test_gpu_coll.c ${gpu}/mock_cuda.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/common/test_util.c ${mock_objs})
  target_include_directories(test_gpu_coll_mock PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common ${CUDAToolkit_INCLUDE_DIRS})
  foreach(layer ${XCCL_LAYERS})
    target_include_directories(test_gpu_coll_mock PRIVATE $<TARGET_PROPERTY:${layer},INTERFACE_INCLUDE_DIRECTORIES>)
  endforeach()
  target_link_libraries(test_gpu_coll_mock PRIVATE ${mock_libs})
  foreach(mode_ranks "coll;1;2;4" "p2p;2;3" "abort;2" "timeout;2" "mixed;2" "fault;2" "held;2" "suspend;2;3")
    list(POP_FRONT mode_ranks mode)
    foreach(n ${mode_ranks})
      set(mock_env "XCCL_TIMEOUT=60;XCCL_ALGO=ring;GPU_TEST_GROUPS=${gpu_groups};GPU_TEST_P2P=1")
      if(mode STREQUAL "timeout")
        set(mock_env "XCCL_TIMEOUT=3;XCCL_ALGO=ring;GPU_TEST_GROUPS=${gpu_groups}")
      endif()
      xccl_add_test(NAME gpu_mock_${mode} TARGET test_gpu_coll_mock RANKS ${n} ARGS ${mode} LABELS unit TIMEOUT 600
                    ENV "${mock_env}")
    endforeach()
  endforeach()
  xccl_add_test(NAME gpu_mock_socket TARGET test_gpu_coll_mock RANKS 3 ARGS quick LABELS unit TIMEOUT 300
                ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_TRANSPORT=socket;GPU_TEST_GROUPS=${gpu_groups};GPU_TEST_P2P=0")
  xccl_add_test(NAME gpu_mock_suspend_socket TARGET test_gpu_coll_mock RANKS 2 ARGS suspend LABELS unit TIMEOUT 120
                ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_TRANSPORT=socket;GPU_TEST_P2P=0")
  xccl_add_test(NAME gpu_mock_refuse TARGET test_gpu_coll_mock RANKS 2 ARGS refuse LABELS unit TIMEOUT 120
                ENV "XCCL_TIMEOUT=60;XCCL_CHECKSUM=1")
  xccl_add_test(NAME gpu_mock_mixed_socket TARGET test_gpu_coll_mock RANKS 2 ARGS mixed LABELS unit TIMEOUT 120
                ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_TRANSPORT=socket")
  xccl_add_test(NAME gpu_mock_nop2p TARGET test_gpu_coll_mock RANKS 2 ARGS quick LABELS unit TIMEOUT 300
                ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring;XCCL_P2P_DISABLE=1;GPU_TEST_GROUPS=${gpu_groups};GPU_TEST_P2P=0")

  # Ranks in PID namespaces of their own sharing /dev/shm (containers with
  # --ipc=host): no rank takes another for itself. Needs root (skipped).
  add_test(NAME gpu_mock_pidns COMMAND sh ${gpu}/pidns.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_gpu_coll_mock>
                                       $<TARGET_FILE:test_allreduce>)
  set_tests_properties(gpu_mock_pidns PROPERTIES LABELS "netns" TIMEOUT 300 SKIP_RETURN_CODE 77
                       ENVIRONMENT "XCCL_SOCKET_IFNAME=lo;XCCL_TIMEOUT=60;XCCL_ALGO=ring")

  # xccl-perf --device against the same stand-in: every collective's results
  # checked (-c 1) through device buffers, a stream and the drains.
  add_executable(xccl_perf_mock ${PROJECT_SOURCE_DIR}/tools/xccl_perf.c ${PROJECT_SOURCE_DIR}/tools/perf_options.c
                 ${PROJECT_SOURCE_DIR}/tools/perf_algo.c ${PROJECT_SOURCE_DIR}/tools/perf_check.c
                 ${PROJECT_SOURCE_DIR}/tools/perf_device.c ${PROJECT_SOURCE_DIR}/tools/perf_plot.c
                 ${gpu}/mock_cuda.c ${mock_objs})
  target_compile_definitions(xccl_perf_mock PRIVATE XCCL_HAVE_CUDA)
  target_include_directories(xccl_perf_mock PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  foreach(layer ${XCCL_LAYERS})
    target_include_directories(xccl_perf_mock PRIVATE $<TARGET_PROPERTY:${layer},INTERFACE_INCLUDE_DIRECTORIES>)
  endforeach()
  target_link_libraries(xccl_perf_mock PRIVATE ${mock_libs} m)
  foreach(coll allreduce reducescatter sendrecv)
    xccl_add_test(NAME gpu_mock_perf_${coll} TARGET xccl_perf_mock RANKS 3 LABELS unit TIMEOUT 300
                  ARGS ${coll} --device -b 4 -e 4M -f 32 -n 2 -w 1 -c 1 ENV "XCCL_TIMEOUT=60;XCCL_ALGO=ring")
  endforeach()

  # The planner's rings in a communicator (issue 24): the stand-in gives each
  # local rank a GPU of a saved two-socket 4-GPU machine; the dumped graph is
  # xccl-topo --job's, a graph file's two different rings run, a graph file
  # that does not fit fails every rank naming the file and line.
  add_test(NAME gpu_mock_plan COMMAND sh ${gpu}/plan_mock.sh $<TARGET_FILE:xccl-run> $<TARGET_FILE:test_gpu_coll_mock>
           $<TARGET_FILE:xccl-topo> ${PROJECT_SOURCE_DIR}/tests/data/topologies/hwloc/hwloc-supermicro-x9drg-gpus-mlx5-v2fmt.xml)
  set_tests_properties(gpu_mock_plan PROPERTIES LABELS "unit;topo" TIMEOUT 600 ENVIRONMENT "${XCCL_TEST_ENV}")

  # The local reduction kernel against a device-to-device copy (run.sh).
  add_executable(bench_reduce ${gpu}/bench_reduce.c)
  target_link_libraries(bench_reduce PRIVATE xccl_testlib)

  # What run.sh builds: the GPU suite and no more.
  add_custom_target(xccl_gpu_tests DEPENDS test_gpu_coll gpu_nodriver bench_reduce unit_ring_plan xccl-run xccl-perf xccl-topo xccl)
endif()
