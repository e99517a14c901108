#!/bin/sh
# A program linked at build time with NVIDIA's libnccl.so.2 runs unchanged on
# xccl's: the same binary, pointed at xccl's directory by LD_LIBRARY_PATH.
#   swap_lib.sh PROG XCCL_NCCL_DIR NVIDIA_LIBNCCL
prog=$1 dir=$2 nv=$3
fail() { echo "FAILED: $*"; exit 1; }
readelf -d "$prog" | grep -q 'NEEDED.*libnccl\.so\.2' || fail "$prog does not need libnccl.so.2"
readelf -d "$prog" | grep -Eq 'RPATH|RUNPATH' && fail "$prog carries an rpath: LD_LIBRARY_PATH would not be the test"
echo "built against: $nv"
for mode in colls split nonblocking; do
  out=$(LD_LIBRARY_PATH="$dir" "$prog" $mode 3 2>&1) || { echo "$out"; fail "$mode on xccl's library"; }
  echo "$out" | grep -q "from $dir/libnccl.so.2" || { echo "$out"; fail "ncclAllReduce did not come from $dir"; }
  echo "$out" | tail -n 1
done
