# Install rules for xccl. Included from the top-level CMakeLists.txt after the
# library targets (xccl, xccl_static) and tools/ have been defined.
#
# Layout under the install prefix (relative dirs from GNUInstallDirs):
#   ${CMAKE_INSTALL_LIBDIR}/libxccl.so*           shared library (+ soname links)
#   ${CMAKE_INSTALL_LIBDIR}/libxccl.a             static library
#   ${CMAKE_INSTALL_INCLUDEDIR}/xccl.h            the public header, and the
#                                                 xccl_version.h it includes
#   ${CMAKE_INSTALL_LIBDIR}/pkgconfig/xccl.pc     pkg-config file (relocatable)
#   ${CMAKE_INSTALL_LIBDIR}/cmake/xccl/           CMake package: xccl::xccl,
#                                                 xccl::xccl_static
#   ${CMAKE_INSTALL_BINDIR}/xccl-{run,perf,info,topo,stuck,sim,plot,trace}  the tools
#   ${CMAKE_INSTALL_LIBDIR}/xccl-nccl/libnccl.so*  NCCL's API over xccl, and its
#   ${CMAKE_INSTALL_INCLUDEDIR}/xccl-nccl/nccl.h  header (cmake/nccl.cmake)
#   ${XCCL_PYTHON_SITE_DIR}/xccl/                 the Python package (cmake/python.cmake
#                                                 says where), its _paths.py naming
#                                                 the installed libxccl.so.0
#
# Components, one per package of cmake/package.cmake, so that
# `cmake --install <build> --component X --prefix P` gives one of them:
#   lib     libxccl.so.0 and the file it links to         (libxccl0)
#   dev     headers, libxccl.a, the libxccl.so link, xccl.pc, the CMake
#           package                                        (libxccl-dev)
#   tools   every tool in bin/                             (xccl-tools)
#   nccl    libnccl.so.2, its link and nccl.h (nccl.cmake) (libnccl2-xccl)
#   python  the Python package                             (not packaged as a .deb)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(XCCL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/xccl"
  CACHE STRING "Where to install the xccl CMake package files, relative to the prefix")
mark_as_advanced(XCCL_INSTALL_CMAKEDIR)

# ---- Libraries and header ------------------------------------------------

install(TARGETS xccl xccl_static
  EXPORT xcclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT lib
    NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    COMPONENT lib
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(FILES ${PROJECT_SOURCE_DIR}/include/xccl.h ${PROJECT_BINARY_DIR}/include/xccl_version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev)

# ---- Tools (tools/) ---------------------------------------------------------

foreach(tool xccl-run xccl-perf xccl-info xccl-topo xccl-stuck xccl-sim)
  if(NOT TARGET ${tool})
    message(FATAL_ERROR "xccl: cmake/install.cmake installs ${tool}, which tools/ no longer defines")
  else()
    # If a tool links the shared library, let the installed binary find it
    # in ../lib without LD_LIBRARY_PATH. Harmless for statically linked tools.
    get_target_property(_xccl_tool_rpath ${tool} INSTALL_RPATH)
    if(NOT _xccl_tool_rpath)
      set_target_properties(${tool} PROPERTIES
        INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    endif()
    install(TARGETS ${tool}
      RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
      COMPONENT tools)
  endif()
endforeach()
unset(_xccl_tool_rpath)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/xccl-plot ${PROJECT_SOURCE_DIR}/tools/xccl-trace
        DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# ---- CMake package --------------------------------------------------------

install(EXPORT xcclTargets
  FILE xcclTargets.cmake
  NAMESPACE xccl::
  DESTINATION ${XCCL_INSTALL_CMAKEDIR}
  COMPONENT dev)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/xcclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/xcclConfig.cmake
  INSTALL_DESTINATION ${XCCL_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)

# The soname carries only the major version, so any x.* satisfies a request
# for x.y as long as x.* >= x.y.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/xcclConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)

install(FILES
    ${PROJECT_BINARY_DIR}/cmake/xcclConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/xcclConfigVersion.cmake
  DESTINATION ${XCCL_INSTALL_CMAKEDIR}
  COMPONENT dev)

# ---- pkg-config -----------------------------------------------------------

# Make the .pc file relocatable: express the prefix relative to the directory
# the .pc file is installed in (${pcfiledir}), so `cmake --install --prefix X`
# and DESTDIR staging give a working file. Absolute LIBDIR/INCLUDEDIR fall
# back to absolute paths.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(XCCL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _xccl_pc_up
    "/xccl-prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/xccl-prefix")
  string(REGEX REPLACE "/$" "" _xccl_pc_up "${_xccl_pc_up}")
  set(XCCL_PC_PREFIX "\${pcfiledir}/${_xccl_pc_up}")
  unset(_xccl_pc_up)
endif()
foreach(_xccl_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_xccl_dir}}")
    set(XCCL_PC_${_xccl_dir} "${CMAKE_INSTALL_${_xccl_dir}}")
  else()
    set(XCCL_PC_${_xccl_dir} "\${prefix}/${CMAKE_INSTALL_${_xccl_dir}}")
  endif()
endforeach()
unset(_xccl_dir)

configure_file(${CMAKE_CURRENT_LIST_DIR}/xccl.pc.in
  ${PROJECT_BINARY_DIR}/xccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/xccl.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

# ---- Python package (cmake/python.cmake) ----------------------------------

# Everything in python/xccl, sub-packages included, and the _paths.py that
# python.cmake wrote: the installed library's path relative to the package.
if(DEFINED XCCL_PYTHON_SITE_DIR)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/xccl
    DESTINATION ${XCCL_PYTHON_SITE_DIR}
    COMPONENT python
    PATTERN __pycache__ EXCLUDE
    PATTERN "*.py[co]" EXCLUDE
    PATTERN _paths.py EXCLUDE)
  install(FILES ${PROJECT_BINARY_DIR}/python-install/_paths.py
    DESTINATION ${XCCL_PYTHON_SITE_DIR}/xccl
    COMPONENT python)
endif()
