# The torch.distributed backend (python/xccl/torch), CTest label torch: each
# test is one torchrun job run by launch.py, once for each torch the backend
# was built for (cmake/torch.cmake): torch113_ops_n2 on Debian 12's torch
# 1.13, torch213_ops_n2 on 2.13 from the venv. Without any (XCCL_HAVE_TORCH
# off) each test is still listed once, as torch_NAME_nN, and reports itself
# skipped with the reason.
set(_t ${CMAKE_CURRENT_SOURCE_DIR}/torch)
set(_torch_env "${XCCL_TEST_ENV};PYTHONPATH=${CMAKE_BINARY_DIR}/python")

# xccl_torch_test(NAME name NPROC n SCRIPT file [MIN_TORCH 2.13] [NEWEST]
#                 [TIMEOUT s] [ARGS ...] [LAUNCH ...] [ENV ...])
# MIN_TORCH: only for the torches of that version and later (features older
# ones lack, or a suite checked against that torch only). NEWEST: only for
# the newest torch built, for the variants (more ranks, sockets) that take
# no path of the backend's that differs by torch version, which the other
# torches' runs of the same script cover.
function(xccl_torch_test)
  cmake_parse_arguments(T "NEWEST" "NAME;NPROC;SCRIPT;MIN_TORCH;TIMEOUT" "ARGS;LAUNCH;ENV" ${ARGN})
  if(T_NEWEST)
    set(newest "")
    foreach(tag ${XCCL_TORCH_TAGS})
      if(NOT newest OR XCCL_TORCH_VER_${tag} VERSION_GREATER XCCL_TORCH_VER_${newest})
        set(newest ${tag})
      endif()
    endforeach()
    set(T_MIN_TORCH ${XCCL_TORCH_VER_${newest}})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 100)
  endif()
  math(EXPR ctest_timeout "${T_TIMEOUT} + 20")
  set(made OFF)
  foreach(tag ${XCCL_TORCH_TAGS})
    set(ver ${XCCL_TORCH_VER_${tag}})
    if(T_MIN_TORCH AND ver VERSION_LESS T_MIN_TORCH)
      continue()
    endif()
    string(REPLACE "." "" short ${ver})
    set(tname torch${short}_${T_NAME}_n${T_NPROC})
    add_test(NAME ${tname} COMMAND ${XCCL_TORCH_PY_${tag}} ${_t}/launch.py --nproc ${T_NPROC} --timeout ${T_TIMEOUT}
             ${T_LAUNCH} ${_t}/${T_SCRIPT} ${T_ARGS})
    set_tests_properties(${tname} PROPERTIES LABELS torch TIMEOUT ${ctest_timeout}
      SKIP_RETURN_CODE ${XCCL_SKIP_CODE} ENVIRONMENT "${_torch_env};${T_ENV}")
    set(made ON)
  endforeach()
  if(NOT made)
    set(why "${XCCL_TORCH_WHY}")
    if(NOT why)
      set(why "the torch backend is not built for a torch ${T_MIN_TORCH} or later (built for: ${XCCL_TORCH_TAGS}; XCCL_WITH_TORCH=${XCCL_WITH_TORCH}); scripts/torch-venv.sh makes one")
    endif()
    set(tname torch_${T_NAME}_n${T_NPROC})
    add_test(NAME ${tname} COMMAND sh -c "echo \"skipped: $1\"; exit ${XCCL_SKIP_CODE}" skip "${why}")
    set_tests_properties(${tname} PROPERTIES LABELS torch SKIP_RETURN_CODE ${XCCL_SKIP_CODE})
  endif()
endfunction()

# Every op x dtype, against gloo and a reference; the default group is xccl
# on odd sizes and gloo on even ones (the other backend a new_group).
xccl_torch_test(NAME ops NPROC 1 SCRIPT test_ops.py ARGS --default xcl)
xccl_torch_test(NAME ops NPROC 2 SCRIPT test_ops.py ARGS --default gloo)
xccl_torch_test(NAME ops NPROC 3 SCRIPT test_ops.py ARGS --default xcl)
xccl_torch_test(NAME ops NPROC 4 SCRIPT test_ops.py ARGS --default gloo NEWEST)
xccl_torch_test(NAME ops_socket NPROC 3 SCRIPT test_ops.py ARGS --default gloo NEWEST ENV XCCL_SHM_DISABLE=1)
# Any-source receives, tags crossed on purpose, sends and receives far outside
# the grouping window, and the profiler's events (issue 28).
xccl_torch_test(NAME p2p NPROC 2 SCRIPT test_p2p.py)
xccl_torch_test(NAME p2p NPROC 4 SCRIPT test_p2p.py NEWEST)
# DDP, 50 steps: gloo vs xccl vs one process.
xccl_torch_test(NAME ddp NPROC 2 SCRIPT test_ddp.py)
xccl_torch_test(NAME ddp NPROC 4 SCRIPT test_ddp.py NEWEST)
# The last rank SIGKILLed in the middle of its third all_reduce, over shared
# memory and over sockets; and XCCL_CHECK=1 with counts that differ.
set(_kill "XCCL_FAULT=rank=2,op=allreduce,seq=3,step=2,action=kill")
xccl_torch_test(NAME kill NPROC 3 SCRIPT test_fault.py ARGS kill LAUNCH --may-fail --pass-ranks 0,1 ENV ${_kill})
xccl_torch_test(NAME kill_socket NPROC 3 SCRIPT test_fault.py ARGS kill NEWEST LAUNCH --may-fail --pass-ranks 0,1
                ENV ${_kill} XCCL_SHM_DISABLE=1)
xccl_torch_test(NAME check_mismatch NPROC 3 SCRIPT test_fault.py ARGS mismatch ENV XCCL_CHECK=1)
# xccl.torch.shrink after a rank is SIGKILLed in its third all_reduce (the
# last rank; and rank 1, so the survivors are renumbered, and then a new
# process joins them in rank 1's place: its pass file is rank 1's), and
# grow_id / grow / join from 3 ranks to 4, the id carried through a c10d
# store. torchrun looks at its workers every 5 s here, not every second:
# once it sees the victim dead it gives the survivors 30 s before SIGKILL,
# and they have more to do than report. Each run takes 15 s of CI: the
# renumbering alone (ARGS shrink 1) and the regrow over TCP
# (XCCL_SHM_DISABLE=1; fault_grow_replace_socket covers that transport
# under the C API) are left to a by-hand run.
xccl_torch_test(NAME shrink NPROC 4 SCRIPT test_elastic.py ARGS shrink 3 LAUNCH --may-fail --pass-ranks 0,1,2
                --monitor-interval 5
                ENV XCCL_FAULT=rank=3,op=allreduce,seq=3,step=2,action=kill)
xccl_torch_test(NAME shrink_regrow NPROC 4 SCRIPT test_elastic.py ARGS shrink 1 regrow NEWEST LAUNCH --may-fail
                --monitor-interval 5 ENV XCCL_FAULT=rank=1,op=allreduce,seq=3,step=2,action=kill)
xccl_torch_test(NAME grow NPROC 4 SCRIPT test_elastic.py ARGS grow)

# ---- torch 2.x: what current programs call (checked against torch 2.13) ----
# DDP with a comm hook on the Work's future, FSDP2 (AVG, and PREMUL_SUM from
# a gradient divide factor), a 2-D DeviceMesh (data x tensor parallel with
# DTensor): parameters against gloo's, bit for bit where every reduction has
# two terms, else within 1e-6.
xccl_torch_test(NAME parallel NPROC 2 SCRIPT test_parallel.py MIN_TORCH 2.13)
xccl_torch_test(NAME parallel NPROC 4 SCRIPT test_parallel.py MIN_TORCH 2.13)
# Functional collectives (all_reduce, all_gather, reduce_scatter, uneven
# all_to_all_single, the coalesced forms), eagerly and under torch.compile
# (inductor), against values computed locally.
xccl_torch_test(NAME functional NPROC 2 SCRIPT test_functional.py MIN_TORCH 2.13)
xccl_torch_test(NAME functional NPROC 4 SCRIPT test_functional.py MIN_TORCH 2.13)
# split_group's refusal without an accelerator, and ProcessGroup.split_group
# (Backend.split, xcclCommSplit) underneath.
xccl_torch_test(NAME split NPROC 4 SCRIPT test_groups2.py ARGS split MIN_TORCH 2.13)
# torch.distributed.shrink_group after a SIGKILL: a new group (the victim is
# rank 1, so the survivors are renumbered) and the default group.
xccl_torch_test(NAME shrink_group NPROC 4 SCRIPT test_groups2.py ARGS shrink --victim 1 MIN_TORCH 2.13
                LAUNCH --may-fail --pass-ranks 0,2,3 --monitor-interval 5
                ENV XCCL_FAULT=rank=1,op=allreduce,seq=3,step=2,action=kill)
xccl_torch_test(NAME shrink_group_default NPROC 3 SCRIPT test_groups2.py ARGS shrink --default MIN_TORCH 2.13
                LAUNCH --may-fail --pass-ranks 0,1 --monitor-interval 5 ENV ${_kill})
# The failed operation names the dead rank; destroy_process_group returns at
# once after it, and with an operation still in flight.
xccl_torch_test(NAME destroy_dead NPROC 3 SCRIPT test_groups2.py ARGS destroy MIN_TORCH 2.13
                LAUNCH --may-fail --pass-ranks 0,1 --monitor-interval 5 ENV ${_kill})
# PyTorch's own backend suite (torch.testing._internal.distributed), run
# with xccl in gloo's place on 2 ranks: xccl must pass every test gloo
# passes but those in dist_suite_known.txt. CI runs a list that covers each
# collective, p2p, groups and DDP; the whole suite (285 tests, about 3
# minutes for both backends): build/torch-venv/bin/python
# tests/torch/dist_suite.py --compare --full.
foreach(tag ${XCCL_TORCH_TAGS})
  if(XCCL_TORCH_VER_${tag} VERSION_LESS 2.13)
    continue()
  endif()
  string(REPLACE "." "" short ${XCCL_TORCH_VER_${tag}})
  add_test(NAME torch${short}_dist_suite_n2
           COMMAND ${XCCL_TORCH_PY_${tag}} ${_t}/dist_suite.py --compare --world 2 --timeout 120)
  set_tests_properties(torch${short}_dist_suite_n2 PROPERTIES LABELS torch TIMEOUT 600
    SKIP_RETURN_CODE ${XCCL_SKIP_CODE} ENVIRONMENT "${_torch_env}")
endforeach()

# pip install ./python into a torch 2.x environment, then import xccl.torch
# builds the extension against that torch (about a minute on 2 cores); and
# the refusals of a missing or too old torch.
foreach(tag ${XCCL_TORCH_TAGS})
  if(XCCL_TORCH_VER_${tag} VERSION_GREATER_EQUAL 2.0)
    string(REPLACE "." "" short ${XCCL_TORCH_VER_${tag}})
    add_test(NAME torch${short}_pip_install COMMAND ${XCCL_TORCH_PY_${tag}} ${_t}/test_pip_install.py
             ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_COMMAND})
    set_tests_properties(torch${short}_pip_install PROPERTIES LABELS torch TIMEOUT 400
      SKIP_RETURN_CODE ${XCCL_SKIP_CODE} ENVIRONMENT "${XCCL_TEST_ENV}")
  endif()
endforeach()
unset(_t)
unset(_kill)
unset(_torch_env)
