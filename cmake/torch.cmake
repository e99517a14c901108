# xccl's torch.distributed backend: the C++ extension xccl.torch._C_t<M>_<m>
# (python/xccl/torch/csrc), built once for each torch this configure finds.
#
# XCCL_WITH_TORCH: AUTO builds it for every interpreter with torch that is
# found, ON fails without one, OFF skips it (the sanitizer presets do: torch's
# libraries are not instrumented). XCCL_TORCH_PYTHON lists the interpreters;
# unset, these are tried: /usr/bin/python3 (Debian's python3-torch is built
# for it), the venv scripts/torch-venv.sh makes (build/torch-venv, torch 2.x
# from PyPI) and the python3 on PATH. Two interpreters whose torch has the
# same major.minor give one build (the first).
#
# Torch's include directories, libraries, C++ ABI and pybind11 ABI tags and
# the extension suffix come from each interpreter, so each module loads in
# its own. The module's name carries torch's major.minor (_C_t2_13), so
# modules for several torches sit side by side in
# ${CMAKE_BINARY_DIR}/python/xccl/torch, beside the package's Python files:
# PYTHONPATH=${CMAKE_BINARY_DIR}/python finds the one for the torch that runs.
#
# For the tests: XCCL_TORCH_TAGS (t1_13;t2_13...), and per tag
# XCCL_TORCH_PY_<tag> (the interpreter) and XCCL_TORCH_VER_<tag> (1.13);
# XCCL_HAVE_TORCH when at least one was built, else XCCL_TORCH_WHY.

set(XCCL_WITH_TORCH AUTO CACHE STRING "Build the torch.distributed backend: AUTO (for each Python with torch found), ON or OFF")
set_property(CACHE XCCL_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(XCCL_TORCH_PYTHON "" CACHE STRING "Python interpreters (a ;-list) whose torch the backend is built for (empty: look for them)")
set(XCCL_HAVE_TORCH OFF CACHE INTERNAL "the torch backend is built")
set(XCCL_TORCH_WHY "" CACHE INTERNAL "why the torch backend is not built")
set(XCCL_TORCH_TAGS "" CACHE INTERNAL "the torch versions the backend is built for")

set(_xccl_torch_pkg ${PROJECT_SOURCE_DIR}/python/xccl/torch)

function(_xccl_torch_candidates out)
  if(XCCL_TORCH_PYTHON)
    set(${out} ${XCCL_TORCH_PYTHON} PARENT_SCOPE)
    return()
  endif()
  find_program(_xccl_path_python3 NAMES python3 NO_CACHE)
  set(candidates)
  foreach(c /usr/bin/python3 ${PROJECT_SOURCE_DIR}/build/torch-venv/bin/python ${_xccl_path_python3})
    if(EXISTS ${c})
      list(APPEND candidates ${c})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES candidates)
  set(${out} ${candidates} PARENT_SCOPE)
endfunction()

# Asks py how to build against its torch; sets _tq_* in the caller, and
# _tq_why when it cannot be built for.
macro(_xccl_torch_query py)
  unset(_tq_why)
  unset(_tq_version)
  execute_process(COMMAND ${py} -c [=[
import sysconfig, torch, torch.utils.cpp_extension as ext
print("version=" + torch.__version__)
print("mm=%s.%s" % tuple(torch.__version__.split(".")[:2]))
print("includes=" + "|".join(ext.include_paths()))
print("libdirs=" + "|".join(ext.library_paths()))
print("abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
print("suffix=" + sysconfig.get_config_var("EXT_SUFFIX"))
print("pyinclude=" + sysconfig.get_paths()["include"])
for tag in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    v = getattr(torch._C, "_PYBIND11_" + tag, None)
    if v is not None:
        print("pybind11_" + tag + "=" + v)
]=]
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 120)
  if(NOT _rc EQUAL 0)
    set(_tq_why "${py} does not import torch")
  else()
    string(REPLACE "\n" ";" _lines "${_out}")
    set(_tq_pybind_defs)
    foreach(line ${_lines})
      if(line MATCHES "^([a-zA-Z0-9_]+)=(.*)$")
        set(_k ${CMAKE_MATCH_1})
        set(_v "${CMAKE_MATCH_2}")
        if(_k MATCHES "^pybind11_(.*)$")
          list(APPEND _tq_pybind_defs "PYBIND11_${CMAKE_MATCH_1}=\"${_v}\"")
        else()
          string(REPLACE "|" ";" _v "${_v}")
          set(_tq_${_k} "${_v}")
        endif()
      endif()
    endforeach()
    set(_tq_libs)
    foreach(lib c10 torch torch_cpu torch_python)
      find_library(_tq_lib_${lib} ${lib} PATHS ${_tq_libdirs} NO_DEFAULT_PATH NO_CACHE)
      if(_tq_lib_${lib})
        list(APPEND _tq_libs ${_tq_lib_${lib}})
      else()
        set(_tq_why "lib${lib}.so is not in ${_tq_libdirs} (torch ${_tq_version} of ${py})")
      endif()
      unset(_tq_lib_${lib})
    endforeach()
    if(NOT EXISTS ${_tq_pyinclude}/Python.h)
      set(_tq_why "Python.h is not in ${_tq_pyinclude} (${py}); Debian: apt-get install python3-dev")
    endif()
    set(_tq_have_headers OFF)
    foreach(dir ${_tq_includes})
      if(EXISTS ${dir}/torch/csrc/distributed/c10d/ProcessGroup.hpp)
        set(_tq_have_headers ON)
      endif()
    endforeach()
    if(NOT _tq_have_headers)
      set(_tq_why "torch's C++ headers (torch/csrc/distributed/c10d/ProcessGroup.hpp) are not in ${_tq_includes} (torch ${_tq_version} of ${py}); Debian: apt-get install libtorch-dev")
    endif()
  endif()
endmacro()

# The extension for one torch: target xccl_torch_ext_<tag>, module _C_<tag>.
function(_xccl_torch_ext tag)
  set(target xccl_torch_ext_${tag})
  add_library(${target} MODULE
    ${_xccl_torch_pkg}/csrc/ProcessGroupXCCL.cpp
    ${_xccl_torch_pkg}/csrc/ops.cpp
    ${_xccl_torch_pkg}/csrc/coalesced.cpp
    ${_xccl_torch_pkg}/csrc/p2p.cpp
    ${_xccl_torch_pkg}/csrc/failure.cpp
    ${_xccl_torch_pkg}/csrc/elastic.cpp
    ${_xccl_torch_pkg}/csrc/bindings.cpp)
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME _C_${tag} SUFFIX "${_tq_suffix}"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/xccl/torch
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
    CXX_VISIBILITY_PRESET hidden)
  target_include_directories(${target} SYSTEM PRIVATE ${_tq_includes} ${_tq_pyinclude})
  target_compile_definitions(${target} PRIVATE TORCH_EXTENSION_NAME=_C_${tag} TORCH_API_INCLUDE_EXTENSION_H
    _GLIBCXX_USE_CXX11_ABI=${_tq_abi} ${_tq_pybind_defs})
  target_link_libraries(${target} PRIVATE xccl ${_tq_libs})
  # -Wshadow (the project's) fires inside pybind11's macros in our own file.
  target_compile_options(${target} PRIVATE -Wno-shadow)
endfunction()

if(NOT XCCL_WITH_TORCH STREQUAL "OFF")
  _xccl_torch_candidates(_xccl_torch_cands)
  set(_tags)
  set(_whys)
  foreach(py ${_xccl_torch_cands})
    _xccl_torch_query(${py})
    if(_tq_why)
      list(APPEND _whys "${_tq_why}")
      continue()
    endif()
    string(REPLACE "." "_" _tag "t${_tq_mm}")
    if(_tag IN_LIST _tags)
      continue()  # this torch has its build already
    endif()
    enable_language(CXX)
    _xccl_torch_ext(${_tag})
    list(APPEND _tags ${_tag})
    set(XCCL_TORCH_PY_${_tag} ${py} CACHE INTERNAL "")
    set(XCCL_TORCH_VER_${_tag} ${_tq_mm} CACHE INTERNAL "")
    message(STATUS "xccl: torch backend for torch ${_tq_version} (${py}): xccl.torch._C_${_tag}")
  endforeach()
  set(XCCL_TORCH_TAGS "${_tags}" CACHE INTERNAL "")
  if(_tags)
    set(XCCL_HAVE_TORCH ON CACHE INTERNAL "")
    set(XCCL_TORCH_WHY "" CACHE INTERNAL "")
  else()
    set(XCCL_HAVE_TORCH OFF CACHE INTERNAL "")
    if(NOT _xccl_torch_cands)
      set(_whys "no Python interpreter was found")
    endif()
    string(REPLACE ";" "; " _whys "${_whys}")
    set(XCCL_TORCH_WHY "no interpreter to build the torch backend for (${_whys}); Debian: apt-get install python3-torch libtorch-dev pybind11-dev python3-dev, or scripts/torch-venv.sh for torch 2.x" CACHE INTERNAL "")
    if(XCCL_WITH_TORCH STREQUAL "AUTO")
      message(STATUS "xccl: not building the torch backend: ${XCCL_TORCH_WHY}")
    else()
      message(FATAL_ERROR "xccl: XCCL_WITH_TORCH=${XCCL_WITH_TORCH} but ${XCCL_TORCH_WHY}; or configure with -DXCCL_WITH_TORCH=OFF")
    endif()
  endif()
  # Its Python files reach the build tree with the rest of python/xccl
  # (cmake/python.cmake).
endif()
unset(_xccl_torch_pkg)
