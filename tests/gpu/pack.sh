#!/usr/bin/env bash
# tests/gpu/pack.sh — packs what tests/gpu/run.sh needs from a build made
# here into one archive, for a GPU machine that has CUDA's driver but not
# xccl's build dependencies (hwloc, libxml2, OpenSSL, ISA-L, rdma-core: a
# CUDA image with no package registry). The archive holds the build's
# CTest files, the GPU suite's programs and libxccl, stripped of debug
# information, and under devlibs/ every shared library they load that is
# not the C or C++ runtime.
#
# On the GPU machine, from a checkout at the same path as here (the CTest
# files name absolute paths):
#   tar -xzf ARCHIVE -C BUILD_DIR
#   LD_LIBRARY_PATH=BUILD_DIR/devlibs XCCL_GPU_PREBUILT=1 tests/gpu/run.sh BUILD_DIR
#
# usage: tests/gpu/pack.sh BUILD_DIR ARCHIVE       (BUILD_DIR built with CUDA)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR ARCHIVE" >&2; exit 2; }
build=$(cd "$1" && pwd)
archive=$2
grep -q '^XCCL_HAVE_CUDA:INTERNAL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  { echo "pack.sh: $build was not configured with the CUDA device path (XCCL_HAVE_CUDA)" >&2; exit 1; }

# The GPU suite's programs (tests/gpu/tests.cmake, target xccl_gpu_tests).
progs=(tests/test_gpu_coll tests/gpu_nodriver tests/bench_reduce tests/unit_ring_plan
       tools/xccl-run tools/xccl-perf tools/xccl-topo)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for p in "${progs[@]}"; do
  [ -x "$build/$p" ] || { echo "pack.sh: $build/$p is missing: build the target xccl_gpu_tests first" >&2; exit 1; }
done
(cd "$build" && find . -name CTestTestfile.cmake -o -name 'libxccl.so*' | sed 's|^\./||') >"$stage/list"
printf '%s\n' "${progs[@]}" >>"$stage/list"
(cd "$build" && tar -cf - -T "$stage/list") | tar -xf - -C "$stage"
find "$stage" -type f \( -name 'libxccl.so*' -o -perm -u+x \) -exec strip --strip-debug {} + 2>/dev/null || true

# Libraries the programs load, less the C and C++ runtimes, which the GPU
# machine's own (newer) ones serve.
mkdir -p "$stage/devlibs"
for p in "${progs[@]}"; do ldd "$build/$p"; done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
  grep -v "^$build/" | while read -r lib; do cp -L "$lib" "$stage/devlibs/"; done
rm "$stage/list"
tar -czf "$archive" -C "$stage" .
echo "pack.sh: $archive, $(du -h "$archive" | cut -f1): $(ls "$stage/devlibs" | wc -l) libraries, ${#progs[@]} programs"
