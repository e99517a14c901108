#!/bin/sh
# check_install.sh BUILD_DIR [CMAKE] [CONFIG]
#
# Installs the xccl build tree BUILD_DIR into a temporary prefix and checks
# that a user can consume it:
#   1. the expected files are there (library, archive, header, .pc, CMake package);
#   2. tests/install/consumer, a stand-alone CMake project, finds it with
#      find_package(xccl) via CMAKE_PREFIX_PATH, builds against xccl::xccl and
#      xccl::xccl_static, and both programs run;
#   3. consumer/main.c builds with `cc $(pkg-config --cflags --libs xccl)` and
#      runs with LD_LIBRARY_PATH;
#   4. the same links statically against libxccl.a using
#      `pkg-config --static --libs xccl`, and runs without libxccl.so;
#   5. where the build has libnccl.so.2 (XCCL_WITH_NCCL), an NCCL program
#      builds against the installed xccl-nccl/nccl.h and libnccl.so.2 and runs.
#
# The compiler, generator and XCCL_SANITIZE are taken from BUILD_DIR's cache,
# so a sanitizer build is consumed by sanitizer-built programs.
#
# Exit: 0 pass, 77 skipped (pkg-config missing), anything else a failure.
# Set XCCL_KEEP_TMP=1 to keep the temporary directory for inspection.

set -u

me=check_install
SKIP=77

say() { printf '%s: %s\n' "$me" "$*"; }
fail() {
  printf '%s: FAIL: %s\n' "$me" "$*" >&2
  exit 1
}
step() { printf '\n==== %s: %s\n' "$me" "$*"; }

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR [CMAKE] [CONFIG]" >&2
  exit 2
fi

build_dir=$1
cmake=${2:-cmake}
config=${3:-}
here=$(cd "$(dirname "$0")" && pwd -P) || fail "cannot find the script's directory"
consumer_src=$here/consumer

[ -f "$build_dir/CMakeCache.txt" ] || fail "'$build_dir' is not a configured CMake build tree (no CMakeCache.txt)"
if [ ! -f "$consumer_src/CMakeLists.txt" ] || [ ! -f "$consumer_src/main.c" ]; then
  fail "consumer project missing in $consumer_src"
fi
"$cmake" --version >/dev/null 2>&1 || fail "cannot run cmake as '$cmake'"

if ! command -v pkg-config >/dev/null 2>&1; then
  say "SKIP: pkg-config not found in PATH; install it (Debian: apt-get install pkg-config) to run this test"
  exit $SKIP
fi

# Reads one variable from the build tree's cache (empty when unset).
cache_get() {
  sed -n "s/^$1:[A-Z_]*=//p" "$build_dir/CMakeCache.txt" | head -n 1
}

cc=$(cache_get CMAKE_C_COMPILER)
[ -n "$cc" ] || cc=cc
generator=$(cache_get CMAKE_GENERATOR)
make_program=$(cache_get CMAKE_MAKE_PROGRAM)
sanitize=$(cache_get XCCL_SANITIZE)
libdir=$(cache_get CMAKE_INSTALL_LIBDIR)
[ -n "$libdir" ] || libdir=lib
incdir=$(cache_get CMAKE_INSTALL_INCLUDEDIR)
[ -n "$incdir" ] || incdir=include
[ -n "$config" ] || config=$(cache_get CMAKE_BUILD_TYPE)
[ -n "$config" ] || config=Release

san_flags=
if [ -n "$sanitize" ]; then
  san_flags="-fsanitize=$sanitize -fno-omit-frame-pointer"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xccl-install.XXXXXX") || fail "mktemp -d failed"
cleanup() {
  if [ "${XCCL_KEEP_TMP:-0}" = 1 ]; then
    say "keeping $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tmp=$(cd "$tmp" && pwd -P) || fail "cannot enter $tmp"
case $tmp in
  *[[:space:]]*) fail "temporary directory '$tmp' contains whitespace; pkg-config output cannot express it (set TMPDIR)" ;;
esac
prefix=$tmp/prefix
pkgdir=$prefix/$libdir/cmake/xccl

say "build tree: $build_dir (config $config, compiler $cc${sanitize:+, sanitize=$sanitize})"

# ---- 1. install ------------------------------------------------------------
step "cmake --install into $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix" --config "$config" ||
  fail "cmake --install '$build_dir' --prefix '$prefix' failed"

step "checking the installed layout"
for f in \
  "$incdir/xccl.h" \
  "$libdir/libxccl.so" \
  "$libdir/libxccl.a" \
  "$libdir/pkgconfig/xccl.pc" \
  "$libdir/cmake/xccl/xcclConfig.cmake" \
  "$libdir/cmake/xccl/xcclConfigVersion.cmake" \
  "$libdir/cmake/xccl/xcclTargets.cmake"; do
  # -e follows symlinks, so a dangling libxccl.so link fails here too.
  [ -e "$prefix/$f" ] || fail "missing after install: $f"
  say "ok: $f"
done
set -- "$prefix/$libdir"/libxccl.so.[0-9]*
[ -e "$1" ] || fail "missing after install: $libdir/libxccl.so.<version> (the soname file)"
for f in "$@"; do say "ok: $libdir/${f##*/}"; done

# Returns 0 if the ELF file $1 records a dependency (DT_NEEDED) on libxccl.so.
needs_libxccl() {
  if command -v readelf >/dev/null 2>&1; then
    readelf -d "$1" | grep NEEDED | grep -q 'libxccl\.so'
  elif command -v objdump >/dev/null 2>&1; then
    objdump -p "$1" | grep NEEDED | grep -q 'libxccl\.so'
  else
    return 2
  fi
}

# Checks that program $1 loads libxccl.so from the temporary prefix, with
# LD_LIBRARY_PATH set to $2 when given.
check_loads_installed() {
  command -v ldd >/dev/null 2>&1 || return 0
  line=$(
    if [ -n "${2:-}" ]; then
      LD_LIBRARY_PATH=$2
      export LD_LIBRARY_PATH
    fi
    ldd "$1" 2>/dev/null | grep 'libxccl\.so'
  ) || fail "ldd $1: libxccl.so not among its libraries"
  case $line in
    *"=> $prefix/$libdir/"*) say "ok: $(basename "$1") loads $(echo "$line" | sed 's/^[[:space:]]*//')" ;;
    *) fail "$(basename "$1") does not load libxccl.so from $prefix/$libdir: $line" ;;
  esac
}

check_static() {
  needs_libxccl "$1"
  case $? in
    0) fail "$(basename "$1") was meant to link libxccl.a but depends on libxccl.so" ;;
    1) say "ok: $(basename "$1") has no dependency on libxccl.so" ;;
    *) say "note: neither readelf nor objdump found; not checking $(basename "$1")'s dependencies" ;;
  esac
}

# ---- 2. CMake consumer -----------------------------------------------------
step "CMake consumer: find_package(xccl) with CMAKE_PREFIX_PATH=$prefix"
cbuild=$tmp/consumer-build
set -- -S "$consumer_src" -B "$cbuild" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE="$config" \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
if [ -n "$generator" ]; then
  set -- "$@" -G "$generator"
  case $make_program in
    /*) [ -x "$make_program" ] && set -- "$@" -DCMAKE_MAKE_PROGRAM="$make_program" ;;
  esac
fi
if [ -n "$san_flags" ]; then
  set -- "$@" -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize"
fi
"$cmake" "$@" || fail "configuring the consumer project failed (find_package(xccl) against $prefix)"

found_dir=$(sed -n 's/^xccl_DIR:[A-Z]*=//p' "$cbuild/CMakeCache.txt")
found_dir=$(cd "$found_dir" 2>/dev/null && pwd -P)
[ "$found_dir" = "$pkgdir" ] ||
  fail "find_package(xccl) used '$found_dir', not the freshly installed $pkgdir"
say "ok: find_package(xccl) found $found_dir"

"$cmake" --build "$cbuild" --config "$config" || fail "building the consumer project failed"

for prog in consumer:xccl::xccl consumer_static:xccl::xccl_static; do
  target=${prog#*:}
  prog=${prog%%:*}
  exe=$cbuild/bin/$prog
  [ -x "$exe" ] || fail "consumer build did not produce $exe"
  step "running $prog (CMake, linked to $target)"
  "$exe" || fail "$prog ($target) exited with status $?"
done
check_loads_installed "$cbuild/bin/consumer"
check_static "$cbuild/bin/consumer_static"

# ---- 3. pkg-config, shared -------------------------------------------------
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH

step "pkg-config xccl (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
pkg-config --exists --print-errors xccl || fail "pkg-config cannot use the installed xccl.pc"
pc_version=$(pkg-config --modversion xccl)
cmake_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$pkgdir/xcclConfigVersion.cmake")
[ "$pc_version" = "$cmake_version" ] ||
  fail "xccl.pc says version '$pc_version' but xcclConfigVersion.cmake says '$cmake_version'"
say "ok: version $pc_version"
pc_cflags=$(pkg-config --cflags xccl) || fail "pkg-config --cflags xccl failed"
pc_libs=$(pkg-config --libs xccl) || fail "pkg-config --libs xccl failed"
pc_static_libs=$(pkg-config --static --libs xccl) || fail "pkg-config --static --libs xccl failed"
say "cflags: $pc_cflags"
say "libs: $pc_libs"
say "static libs: $pc_static_libs"

cflags="-std=c11 -Wall -Wextra -Werror $san_flags"
pc_shared=$tmp/pc_shared
# shellcheck disable=SC2086 # word splitting of flags is intended
"$cc" $cflags "$consumer_src/main.c" $pc_cflags $pc_libs -o "$pc_shared" ||
  fail "cc main.c \$(pkg-config --cflags --libs xccl) failed"
run_path=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
check_loads_installed "$pc_shared" "$run_path"
step "running pc_shared (LD_LIBRARY_PATH=$prefix/$libdir)"
LD_LIBRARY_PATH=$run_path "$pc_shared" ||
  fail "pc_shared (pkg-config, shared) exited with status $?"

# ---- 4. pkg-config, static -------------------------------------------------
# libxccl.a with its dependencies' shared libraries: what xccl.pc's
# Requires.private name (`pkg-config --libs` of each) and its Libs.private.
# `pkg-config --static` (printed above) gives the static closure of those
# too, which a Debian machine cannot link: rdma-core's .pc lists static
# providers, hwloc's names libudev.
step "static link against libxccl.a with xccl.pc's Requires.private and Libs.private"
archive=$prefix/$libdir/libxccl.a
case " $pc_static_libs " in *" -lxccl "*) ;; *) fail "pkg-config --static --libs xccl has no -lxccl: $pc_static_libs" ;; esac
requires_private=$(pkg-config --print-requires-private xccl | tr '\n' ' ')
libs_private=$(sed -n 's/^Libs.private://p' "$prefix/$libdir/pkgconfig/xccl.pc")
# shellcheck disable=SC2086
static_libs="$archive $(pkg-config --libs $requires_private) $libs_private" ||
  fail "pkg-config --libs $requires_private failed"
# A build with the CUDA device path: libxccl.a needs CUDA's static runtime,
# which xccl.pc leaves to the user (cmake/xccl.pc.in says why).
if [ "$(cache_get XCCL_HAVE_CUDA)" = ON ]; then
  static_libs="$static_libs $(cache_get CUDA_cudart_static_LIBRARY) -ldl -lrt"
fi
pc_static=$tmp/pc_static
# shellcheck disable=SC2086
"$cc" $cflags "$consumer_src/main.c" $pc_cflags $static_libs -o "$pc_static" ||
  fail "cc main.c <libxccl.a> <Requires.private and Libs.private of xccl.pc> failed"
check_static "$pc_static"
step "running pc_static"
"$pc_static" || fail "pc_static (pkg-config, static) exited with status $?"

# ---- 5. NCCL's API: xccl-nccl/nccl.h and libnccl.so.2 ----------------------
nccl_note=
if [ "$(cache_get XCCL_WITH_NCCL)" != OFF ]; then
  step "an NCCL program against $incdir/xccl-nccl/nccl.h and $libdir/xccl-nccl/libnccl.so.2"
  for f in "$incdir/xccl-nccl/nccl.h" "$libdir/xccl-nccl/libnccl.so.2" "$libdir/xccl-nccl/libnccl.so"; do
    [ -e "$prefix/$f" ] || fail "missing after install: $f"
    say "ok: $f"
  done
  [ -e "$prefix/$libdir/libnccl.so.2" ] && fail "libnccl.so.2 installed in $libdir itself, where it shadows a real NCCL"
  nccl_prog=$tmp/nccl_consumer
  # shellcheck disable=SC2086
  "$cc" $cflags "$consumer_src/nccl_main.c" -I"$prefix/$incdir/xccl-nccl" -L"$prefix/$libdir/xccl-nccl" \
    -Wl,-rpath,"$prefix/$libdir/xccl-nccl" -lnccl -o "$nccl_prog" || fail "cc nccl_main.c -lnccl failed"
  XCCL_SOCKET_IFNAME=lo "$nccl_prog" || fail "nccl_consumer exited with status $?"
  nccl_note=" and NCCL's API (libnccl.so.2)"
fi

say "PASS: install layout, CMake package (shared and static) and pkg-config (shared and static)$nccl_note all work"
exit 0
