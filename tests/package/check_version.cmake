# cmake -DSOURCE_DIR=<source> -DVERSION=<project()'s version> -P check_version.cmake
#
# project() in CMakeLists.txt holds xccl's version; xccl.h's macros and the
# packages are made from it. The Python package keeps a copy in
# python/xccl/__init__.py (__version__, which pyproject.toml reads), since
# `pip install ./python` builds without CMake: this says when the two part.
file(STRINGS "${SOURCE_DIR}/python/xccl/__init__.py" _line REGEX "^__version__ = ")
if(NOT _line MATCHES "^__version__ = \"([^\"]*)\"$")
  message(FATAL_ERROR "version: no __version__ = \"x.y.z\" line in python/xccl/__init__.py")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL VERSION)
  message(FATAL_ERROR "version: python/xccl/__init__.py says ${CMAKE_MATCH_1}, project() in CMakeLists.txt ${VERSION}: "
                      "change __version__ to ${VERSION}")
endif()
file(STRINGS "${SOURCE_DIR}/python/pyproject.toml" _line REGEX "^version *= *\"")
if(_line)
  message(FATAL_ERROR "version: python/pyproject.toml writes a version of its own (${_line}); it reads xccl.__version__")
endif()
message(STATUS "version: ${VERSION} in project() and python/xccl/__init__.py")
