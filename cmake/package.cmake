# Debian packages of xccl with CPack: `cpack -G DEB` in the build tree (or
# the `package` target) writes into <build>/packages, one package for each
# install component of cmake/install.cmake:
#   libxccl0       lib    libxccl.so.0 (the package carries the soname's major)
#   libxccl-dev    dev    headers, libxccl.a, xccl.pc, the CMake package
#   xccl-tools     tools  xccl-run, -perf, -info, -topo, -stuck, -sim, -plot, -trace
#   libnccl2-xccl  nccl   libnccl.so.2 (NCCL's API over xccl) and its nccl.h
# The python component is not packaged here: Debian's Python packages
# install into /usr/lib/python3/dist-packages, which is not where
# cmake/python.cmake puts it for a /usr/local configure.
#
# Installed under /usr. The libraries go to /usr/${CMAKE_INSTALL_LIBDIR}
# (/usr/lib for a default configure), on the loader's default path; the
# packages' own dependencies come from dpkg-shlibdeps over what they hold,
# plus the ones below.
#
# tests/package (label package) builds these, installs them into a clean
# Debian root and builds and runs programs against the installed files.

set(XCCL_PACKAGE_MAINTAINER "xccl maintainers <maintainers@users.noreply.a-seed-a7de9f65.example>"
  CACHE STRING "Maintainer field of the Debian packages")
mark_as_advanced(XCCL_PACKAGE_MAINTAINER)

set(CPACK_PACKAGE_NAME xccl)
set(CPACK_PACKAGE_VENDOR xccl)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/build/" "/\\\\.git/")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
if(XCCL_WITH_NCCL)
  list(APPEND CPACK_COMPONENTS_ALL nccl)
endif()
set(CPACK_COMPONENTS_GROUPING IGNORE)  # one package per component

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${XCCL_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # name_version-release_arch.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # needs dpkg-shlibdeps (dpkg-dev)
# shlibs and the ldconfig trigger for the packages holding a soname, so that a
# program packaged against libxccl0 depends on it through dpkg-shlibdeps too.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(_xccl_deb_version "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(_xccl_lib_package libxccl${PROJECT_VERSION_MAJOR})

# ---- lib --------------------------------------------------------------------
set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${_xccl_lib_package})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION "collective communication library
xccl moves data between the processes of a job: all-reduce, all-gather,
broadcast, reduce-scatter, all-to-all, send and receive, over shared
memory, sockets and InfiniBand verbs, with NCCL's shape of API.
.
This package holds the shared library.")

# ---- dev --------------------------------------------------------------------
# xccl.pc's Requires.private and the CMake package's find_dependency name
# these (CMakeLists.txt, XCCL_PKG_DEPS): pkg-config and find_package(xccl)
# fail without them, so the -dev package depends on their -dev packages.
set(_xccl_dev_of_libcrypto libssl-dev)
set(_xccl_dev_of_jansson libjansson-dev)
set(_xccl_dev_of_hwloc libhwloc-dev)
set(_xccl_dev_of_libxml-2.0 libxml2-dev)
set(_xccl_dev_of_libibverbs libibverbs-dev)
set(_xccl_dev_of_librdmacm librdmacm-dev)
set(_xccl_dev_of_libisal libisal-dev)
set(_xccl_dev_depends "${_xccl_lib_package} (= ${_xccl_deb_version})" libssl-dev pkg-config)
foreach(_dep ${XCCL_PKG_DEPS})
  string(REPLACE ":" ";" _dep "${_dep}")
  list(GET _dep 1 _module)
  if(NOT DEFINED _xccl_dev_of_${_module})
    message(FATAL_ERROR "xccl: cmake/package.cmake does not know the Debian -dev package of ${_module}")
  endif()
  list(APPEND _xccl_dev_depends ${_xccl_dev_of_${_module}})
endforeach()
list(JOIN _xccl_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libxccl-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION "collective communication library (development files)
xccl moves data between the processes of a job: all-reduce, all-gather,
broadcast, reduce-scatter, all-to-all, send and receive.
.
This package holds xccl.h, the static library, xccl.pc for pkg-config and
the CMake package for find_package(xccl).")

# ---- tools ------------------------------------------------------------------
# The tools link xccl statically, but speak to the library's processes (the
# rendezvous xccl-run sets up, the dumps xccl-stuck reads), so they come
# at the library's own version.
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME xccl-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${_xccl_lib_package} (= ${_xccl_deb_version}), python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "python3-matplotlib")  # xccl-plot, xccl-trace's drawings
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "collective communication library (tools)
xccl-run starts a job's ranks on one machine; xccl-perf measures the
collectives; xccl-info prints the configuration; xccl-topo shows the
machine's topology and rings; xccl-stuck names the rank a hung job waits
on; xccl-sim replays the algorithms over a modelled cluster; xccl-plot and
xccl-trace draw xccl-perf's results and XCCL_TRACE's files.")

# ---- nccl -------------------------------------------------------------------
# libnccl.so.2 is installed in /usr/lib/xccl-nccl/, off the loader's path: it
# is used by programs pointed at it (LD_LIBRARY_PATH, -L and rpath), and
# never shadows NVIDIA's library. So the package neither Conflicts with nor
# Replaces NVIDIA's libnccl2/libnccl-dev (no file path is shared, both can be
# installed), and it does not Provide libnccl2: a package depending on
# libnccl2 expects libnccl.so.2 where the loader finds it, which this package
# does not put there. It holds xccl's objects itself (no libxccl0 needed).
if(XCCL_WITH_NCCL)
  set(CPACK_DEBIAN_NCCL_PACKAGE_NAME libnccl2-xccl)
  set(CPACK_DEBIAN_NCCL_PACKAGE_SECTION libs)
  set(CPACK_COMPONENT_NCCL_DESCRIPTION "NCCL's API over the xccl collective communication library
libnccl.so.2 and nccl.h with NCCL's functions (ncclAllReduce, ncclCommInitRank,
...) over xccl, for programs written to NCCL, in /usr/lib/xccl-nccl and
/usr/include/xccl-nccl. A program uses it when pointed at it
(-L/usr/lib/xccl-nccl and an rpath, or LD_LIBRARY_PATH); NVIDIA's libnccl2
can stay installed beside it.")
endif()

unset(_dep)
unset(_module)
unset(_xccl_dev_depends)
unset(_xccl_deb_version)
unset(_xccl_lib_package)
include(CPack)
