# The Python package xccl (python/xccl, ctypes over libxccl.so).
#
# Included from the top-level CMakeLists.txt after the library and tools.
#  - XCCL_PYTHON (cache): an interpreter that imports numpy and pytest, for
#    the python tests; looked for when empty (/usr/bin/python3 first: the
#    python3 first on PATH may lack them). None found: the tests are still
#    registered and exit 77 (skipped) saying why.
#  - The build tree gets a copy of python/xccl in ${CMAKE_BINARY_DIR}/python
#    (target xccl_python, re-copied when a source changes) with a generated
#    xccl/_paths.py naming this build's libxccl.so, so
#    PYTHONPATH=<build>/python python3 -c "import xccl" works.
#  - XCCL_PYTHON_SITE_DIR: where cmake/install.cmake installs the package,
#    relative to the prefix (cache XCCL_PYTHON_INSTALL_DIR overrides it), and
#    the _paths.py installed with it, which names the installed library
#    relative to the package, so `cmake --install --prefix` and DESTDIR work.
#  - Tests (label python): tests/python/*.py under pytest, the multi-rank
#    ones under xccl-run.
#
# Run as a script (cmake -DSRC=dir -DDST=dir -P python.cmake) it copies the
# package's files from SRC to DST, leaving out caches and _paths.py.

if(CMAKE_SCRIPT_MODE_FILE)
  file(GLOB_RECURSE _files RELATIVE "${SRC}" "${SRC}/*")
  foreach(_f ${_files})
    if(_f MATCHES "(^|/)__pycache__/|\\.py[co]$|^_paths\\.py$")
      continue()
    endif()
    get_filename_component(_dir "${DST}/${_f}" DIRECTORY)
    file(MAKE_DIRECTORY "${_dir}")
    file(COPY_FILE "${SRC}/${_f}" "${DST}/${_f}" ONLY_IF_DIFFERENT)
  endforeach()
  return()
endif()

# ---- The interpreter for the tests ----------------------------------------

set(XCCL_PYTHON "" CACHE FILEPATH
    "Python 3 interpreter that imports numpy and pytest, for the python tests (empty: look for one)")
function(_xccl_python_usable exe out_reason)
  execute_process(COMMAND "${exe}" -c "import sys, numpy, pytest; sys.exit(sys.version_info < (3, 8))"
                  RESULT_VARIABLE rv OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 60)
  if(rv EQUAL 0)
    set(${out_reason} "" PARENT_SCOPE)
  else()
    string(REGEX MATCH "[A-Za-z]*Error: [^\n]*" err "${err}")
    if(NOT err)
      set(err "exit status ${rv}")
    endif()
    set(${out_reason} "${exe} (${err})" PARENT_SCOPE)
  endif()
endfunction()

set(XCCL_PYTHON_SKIP_REASON "")
if(XCCL_PYTHON)
  _xccl_python_usable("${XCCL_PYTHON}" _why)
  if(_why)
    set(XCCL_PYTHON_SKIP_REASON "XCCL_PYTHON=${_why} cannot run the python tests, which need numpy and pytest \
(Debian: python3-numpy python3-pytest). Reconfigure with -DXCCL_PYTHON=<a python3 that has them>")
  endif()
else()
  set(_tried "")
  set(_candidates /usr/bin/python3)
  foreach(_name python3 python)
    find_program(_exe NAMES ${_name} NO_CACHE)
    if(_exe)
      list(APPEND _candidates "${_exe}")
    endif()
    unset(_exe)
  endforeach()
  list(REMOVE_DUPLICATES _candidates)
  foreach(_exe ${_candidates})
    if(EXISTS "${_exe}")
      _xccl_python_usable("${_exe}" _why)
      if(NOT _why)
        set(XCCL_PYTHON "${_exe}" CACHE FILEPATH
            "Python 3 interpreter that imports numpy and pytest, for the python tests (empty: look for one)" FORCE)
        break()
      endif()
      list(APPEND _tried "${_why}")
    endif()
  endforeach()
  if(XCCL_PYTHON)
    message(STATUS "xccl: python tests use ${XCCL_PYTHON}")
  else()
    list(JOIN _tried ", " _tried)
    set(XCCL_PYTHON_SKIP_REASON "no Python 3 interpreter with numpy and pytest was found (tried: ${_tried}). \
Install python3-numpy and python3-pytest, or reconfigure with -DXCCL_PYTHON=/path/to/python3")
    message(STATUS "xccl: ${XCCL_PYTHON_SKIP_REASON}: the python tests will report themselves skipped")
  endif()
endif()

# ---- The package in the build tree ----------------------------------------

set(XCCL_PYTHON_SOURCE_DIR "${PROJECT_SOURCE_DIR}/python/xccl")
set(XCCL_PYTHON_BUILD_DIR "${CMAKE_BINARY_DIR}/python")
file(GLOB_RECURSE _xccl_py_sources CONFIGURE_DEPENDS "${XCCL_PYTHON_SOURCE_DIR}/*")
list(FILTER _xccl_py_sources EXCLUDE REGEX "/__pycache__/|\\.py[co]$")
add_custom_command(OUTPUT "${XCCL_PYTHON_BUILD_DIR}/.xccl-copied"
  COMMAND "${CMAKE_COMMAND}" "-DSRC=${XCCL_PYTHON_SOURCE_DIR}" "-DDST=${XCCL_PYTHON_BUILD_DIR}/xccl"
          -P "${CMAKE_CURRENT_LIST_FILE}"
  COMMAND "${CMAKE_COMMAND}" -E touch "${XCCL_PYTHON_BUILD_DIR}/.xccl-copied"
  DEPENDS ${_xccl_py_sources} "${CMAKE_CURRENT_LIST_FILE}"
  COMMENT "Copying the Python package xccl into ${XCCL_PYTHON_BUILD_DIR}"
  VERBATIM)
add_custom_target(xccl_python ALL DEPENDS "${XCCL_PYTHON_BUILD_DIR}/.xccl-copied")
add_dependencies(xccl_python xccl)
file(GENERATE OUTPUT "${XCCL_PYTHON_BUILD_DIR}/xccl/_paths.py"
     CONTENT "# Written by cmake/python.cmake: the library of this build tree.\nLIBRARY = \"$<TARGET_FILE:xccl>\"\n")

# ---- Where the package installs --------------------------------------------

set(XCCL_PYTHON_INSTALL_DIR "" CACHE STRING
    "Where cmake --install puts the Python package, relative to the prefix (empty: automatic)")
set(XCCL_PYTHON_SITE_DIR "${XCCL_PYTHON_INSTALL_DIR}")
if(NOT XCCL_PYTHON_SITE_DIR AND XCCL_PYTHON AND NOT XCCL_PYTHON_SKIP_REASON)
  # The first entry of sys.path under the prefix, so the installed package
  # imports without PYTHONPATH (Debian: /usr/local/lib/python3.11/dist-packages
  # for /usr/local, /usr/lib/python3/dist-packages for /usr).
  execute_process(COMMAND "${XCCL_PYTHON}" -c
    "import os, sys\np = os.path.abspath(sys.argv[1])\nfor d in sys.path:\n    if d.startswith(p + '/lib') and d.endswith('-packages'):\n        print(os.path.relpath(d, p)); break"
    "${CMAKE_INSTALL_PREFIX}" OUTPUT_VARIABLE XCCL_PYTHON_SITE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
endif()
if(NOT XCCL_PYTHON_SITE_DIR)
  set(XCCL_PYTHON_SITE_DIR "lib/python3/dist-packages")
endif()
if(IS_ABSOLUTE "${XCCL_PYTHON_SITE_DIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_lib_rel "${CMAKE_INSTALL_FULL_LIBDIR}/libxccl.so.${PROJECT_VERSION_MAJOR}")
else()
  file(RELATIVE_PATH _lib_rel "/xccl-prefix/${XCCL_PYTHON_SITE_DIR}/xccl"
       "/xccl-prefix/${CMAKE_INSTALL_LIBDIR}/libxccl.so.${PROJECT_VERSION_MAJOR}")
endif()
file(WRITE "${CMAKE_BINARY_DIR}/python-install/_paths.py"
     "# Written by cmake/python.cmake: the installed library, relative to this package.\nLIBRARY = \"${_lib_rel}\"\n")
unset(_lib_rel)

# ---- Tests ------------------------------------------------------------------

if(BUILD_TESTING)
  set(_py_env "XCCL_SOCKET_IFNAME=lo" "XCCL_DUMP_DIR=${CMAKE_BINARY_DIR}/dumps" "XCCL_TIMEOUT=30"
      "PYTHONPATH=${XCCL_PYTHON_BUILD_DIR}" "PYTHONDONTWRITEBYTECODE=1"
      "XCCL_TEST_BUILD_DIR=${CMAKE_BINARY_DIR}" "XCCL_TEST_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
      "XCCL_TEST_CMAKE=${CMAKE_COMMAND}" "XCCL_TEST_VERSION=${PROJECT_VERSION}"
      "XCCL_TEST_PY_SITE_DIR=${XCCL_PYTHON_SITE_DIR}")
  # name, ranks (0: no launcher), module, timeout
  foreach(_t "python_local;0;test_local.py;120" "python_install;0;test_install.py;300"
             "python_ranks_n1;1;test_ranks.py;120" "python_ranks_n2;2;test_ranks.py;120"
             "python_ranks_n3;3;test_ranks.py;120" "python_ranks_n4;4;test_ranks.py;120"
             "python_faults_n3;3;test_faults.py;120")
    list(GET _t 0 _name)
    list(GET _t 1 _ranks)
    list(GET _t 2 _module)
    list(GET _t 3 _timeout)
    if(XCCL_PYTHON_SKIP_REASON)
      # No ';' in the words: CMake would split them.
      set(_cmd sh -c "echo \"skipped: $1\" >&2 && exit 77" sh "${XCCL_PYTHON_SKIP_REASON}")
    else()
      set(_cmd "${XCCL_PYTHON}" -m pytest -q -x -rs -p no:cacheprovider
               "${PROJECT_SOURCE_DIR}/tests/python/${_module}")
      if(_ranks GREATER 0)
        set(_cmd $<TARGET_FILE:xccl-run> -n ${_ranks} --grace 5 --prefix ${_cmd})
      endif()
    endif()
    add_test(NAME ${_name} COMMAND ${_cmd})
    set_tests_properties(${_name} PROPERTIES LABELS python TIMEOUT ${_timeout} SKIP_RETURN_CODE 77
                         ENVIRONMENT "${_py_env}")
  endforeach()
  unset(_py_env)
endif()
