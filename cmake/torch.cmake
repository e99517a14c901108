# xccl's torch.distributed backend: the C++ extension xccl.torch._C
# (python/xccl/torch/csrc), built against the torch of a Python interpreter.
#
# XCCL_WITH_TORCH: AUTO builds it when an interpreter with torch is found,
# ON fails without one, OFF skips it (the sanitizer presets do: torch's
# libraries are not instrumented). XCCL_TORCH_PYTHON names the interpreter;
# unset, the first of /usr/bin/python3 (Debian's python3-torch is built for
# it) and the python3 on PATH that imports torch is taken.
#
# Torch's include directories, libraries, C++ ABI and pybind11 ABI tags and
# the extension suffix come from that interpreter, so the module loads in it.
# The module lands in ${CMAKE_BINARY_DIR}/python/xccl/torch beside the
# package's Python files, so PYTHONPATH=${CMAKE_BINARY_DIR}/python finds it.
# Sets XCCL_HAVE_TORCH and XCCL_TORCH_PYTHON for the tests.

set(XCCL_WITH_TORCH AUTO CACHE STRING "Build the torch.distributed backend: AUTO (when a Python with torch is found), ON or OFF")
set_property(CACHE XCCL_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(XCCL_TORCH_PYTHON "" CACHE FILEPATH "Python interpreter whose torch the backend is built for (empty: look for one)")
set(XCCL_HAVE_TORCH OFF CACHE INTERNAL "the torch backend is built")
set(XCCL_TORCH_WHY "" CACHE INTERNAL "why the torch backend is not built")

set(_xccl_torch_pkg ${PROJECT_SOURCE_DIR}/python/xccl/torch)

function(_xccl_torch_find_python out)
  set(candidates)
  if(XCCL_TORCH_PYTHON)
    set(candidates ${XCCL_TORCH_PYTHON})
  else()
    find_program(_xccl_path_python3 NAMES python3 NO_CACHE)
    foreach(c /usr/bin/python3 ${_xccl_path_python3})
      if(EXISTS ${c})
        list(APPEND candidates ${c})
      endif()
    endforeach()
    list(REMOVE_DUPLICATES candidates)
  endif()
  foreach(c ${candidates})
    execute_process(COMMAND ${c} -c "import torch" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
    if(rc EQUAL 0)
      set(${out} ${c} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

if(NOT XCCL_WITH_TORCH STREQUAL "OFF")
  _xccl_torch_find_python(_xccl_torch_py)
  if(NOT _xccl_torch_py)
    set(XCCL_TORCH_WHY "no Python interpreter that imports torch was found (tried XCCL_TORCH_PYTHON, /usr/bin/python3, python3 on PATH); Debian: apt-get install python3-torch libtorch-dev pybind11-dev python3-dev" CACHE INTERNAL "")
  else()
    # One query for everything the build needs, as key=value lines (lists
    # joined with |, since CMake splits lines on ;).
    execute_process(COMMAND ${_xccl_torch_py} -c [=[
import sysconfig, torch, torch.utils.cpp_extension as ext
print("version=" + torch.__version__)
print("includes=" + "|".join(ext.include_paths()))
print("libdirs=" + "|".join(ext.library_paths()))
print("abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
print("suffix=" + sysconfig.get_config_var("EXT_SUFFIX"))
print("pyinclude=" + sysconfig.get_paths()["include"])
for tag in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    v = getattr(torch._C, "_PYBIND11_" + tag, None)
    if v is not None:
        print("pybind11_" + tag + "=" + v)
print("cuda=" + str(int(torch.version.cuda is not None)))
]=]
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 120)
    if(NOT _rc EQUAL 0)
      set(XCCL_TORCH_WHY "${_xccl_torch_py} imports torch but could not say how to build against it: ${_err}" CACHE INTERNAL "")
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
      unset(_tq_libs)
      foreach(lib c10 torch torch_cpu torch_python)
        find_library(_tq_lib_${lib} ${lib} PATHS ${_tq_libdirs} NO_DEFAULT_PATH NO_CACHE)
        if(_tq_lib_${lib})
          list(APPEND _tq_libs ${_tq_lib_${lib}})
        else()
          set(XCCL_TORCH_WHY "lib${lib}.so is not in ${_tq_libdirs} (torch ${_tq_version} of ${_xccl_torch_py})" CACHE INTERNAL "")
        endif()
      endforeach()
      if(NOT EXISTS ${_tq_pyinclude}/Python.h)
        set(XCCL_TORCH_WHY "Python.h is not in ${_tq_pyinclude}; Debian: apt-get install python3-dev" CACHE INTERNAL "")
      endif()
      set(_tq_have_headers OFF)
      foreach(dir ${_tq_includes})
        if(EXISTS ${dir}/torch/csrc/distributed/c10d/ProcessGroup.hpp)
          set(_tq_have_headers ON)
        endif()
      endforeach()
      if(NOT _tq_have_headers)
        set(XCCL_TORCH_WHY "torch's C++ headers (torch/csrc/distributed/c10d/ProcessGroup.hpp) are not in ${_tq_includes}; Debian: apt-get install libtorch-dev" CACHE INTERNAL "")
      endif()
    endif()
  endif()

  if(XCCL_TORCH_WHY)
    if(XCCL_WITH_TORCH STREQUAL "AUTO")
      message(STATUS "xccl: not building the torch backend: ${XCCL_TORCH_WHY}")
    else()
      message(FATAL_ERROR "xccl: XCCL_WITH_TORCH=${XCCL_WITH_TORCH} but ${XCCL_TORCH_WHY}; or configure with -DXCCL_WITH_TORCH=OFF")
    endif()
  else()
    set(XCCL_TORCH_PYTHON ${_xccl_torch_py} CACHE FILEPATH "Python interpreter whose torch the backend is built for (empty: look for one)" FORCE)
    set(XCCL_HAVE_TORCH ON CACHE INTERNAL "the torch backend is built")
    message(STATUS "xccl: torch backend on (torch ${_tq_version}, ${XCCL_TORCH_PYTHON})")
    enable_language(CXX)

    add_library(xccl_torch_ext MODULE
      ${_xccl_torch_pkg}/csrc/ProcessGroupXCCL.cpp
      ${_xccl_torch_pkg}/csrc/ops.cpp
      ${_xccl_torch_pkg}/csrc/failure.cpp
      ${_xccl_torch_pkg}/csrc/elastic.cpp
      ${_xccl_torch_pkg}/csrc/bindings.cpp)
    set_target_properties(xccl_torch_ext PROPERTIES
      PREFIX "" OUTPUT_NAME _C SUFFIX "${_tq_suffix}"
      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/xccl/torch
      CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
      CXX_VISIBILITY_PRESET hidden)
    target_include_directories(xccl_torch_ext SYSTEM PRIVATE ${_tq_includes} ${_tq_pyinclude})
    target_compile_definitions(xccl_torch_ext PRIVATE TORCH_EXTENSION_NAME=_C TORCH_API_INCLUDE_EXTENSION_H
      _GLIBCXX_USE_CXX11_ABI=${_tq_abi} ${_tq_pybind_defs})
    target_link_libraries(xccl_torch_ext PRIVATE xccl ${_tq_libs})
    # -Wshadow (the project's) fires inside pybind11's macros in our own file.
    target_compile_options(xccl_torch_ext PRIVATE -Wno-shadow)

    # Its Python files reach the build tree with the rest of python/xccl
    # (cmake/python.cmake).
  endif()
endif()
unset(_xccl_torch_pkg)
