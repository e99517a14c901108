# Launched the way users launch (issue 15): real torchrun, mpirun and srun
# start xccl-perf, launch_twice (two communicators from the environment in
# one process) and tests/launch/from_env.py, with no XCCL_* rendezvous
# variable. Label launch, plus root for Slurm (it starts munged, slurmctld
# and slurmd of its own). Each test skips (77) with the reason when its
# launcher, root or the xccl Python package is missing.
add_executable(launch_twice ${CMAKE_CURRENT_LIST_DIR}/launch_twice.c)
target_link_libraries(launch_twice PRIVATE xccl)

set(_launch_run ${CMAKE_CURRENT_LIST_DIR}/run.sh)
set(_launch_py ${CMAKE_CURRENT_LIST_DIR}/from_env.py)
set(_launch_pypath ${CMAKE_BINARY_DIR}/python)
set(_launch_perf $<TARGET_FILE:xccl-perf> allreduce -b 4K -e 1M -f 16 -c 1 -n 3 -w 1)
set(_launch_dir ${CMAKE_BINARY_DIR}/launch)

# xccl_launch_test(name launcher program...): run.sh <launcher> <dir> <pythonpath> program...
function(xccl_launch_test name launcher labels)
  add_test(NAME launch_${name} COMMAND sh ${_launch_run} ${launcher} ${_launch_dir} ${_launch_pypath} ${ARGN})
  set_tests_properties(launch_${name} PROPERTIES LABELS "${labels}" TIMEOUT 120 SKIP_RETURN_CODE 77
    ENVIRONMENT "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps")
endfunction()

foreach(l torchrun torchrun_standalone mpirun srun srun_pmix)
  set(_labels launch)
  if(l MATCHES "^srun")
    set(_labels launch root)
  endif()
  xccl_launch_test(${l}_perf ${l} "${_labels}" ${_launch_perf})
  xccl_launch_test(${l}_python ${l} "${_labels}" python ${_launch_py})
  if(NOT l STREQUAL "torchrun_standalone")
    xccl_launch_test(${l}_twice ${l} "${_labels}" $<TARGET_FILE:launch_twice>)
  endif()
  if(l MATCHES "^srun")
    set_tests_properties(launch_${l}_perf launch_${l}_python launch_${l}_twice PROPERTIES FIXTURES_REQUIRED slurm)
  endif()
endforeach()

# One Slurm (munged, slurmctld, slurmd in ${_launch_dir}/slurm) for every srun case.
add_test(NAME launch_slurm_start COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/slurm.sh start ${_launch_dir}/slurm)
add_test(NAME launch_slurm_stop COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/slurm.sh stop ${_launch_dir}/slurm)
set_tests_properties(launch_slurm_start PROPERTIES FIXTURES_SETUP slurm LABELS "launch;root" TIMEOUT 60
  SKIP_RETURN_CODE 77)
set_tests_properties(launch_slurm_stop PROPERTIES FIXTURES_CLEANUP slurm LABELS "launch;root" TIMEOUT 60
  SKIP_RETURN_CODE 77)
