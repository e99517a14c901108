#!/usr/bin/env bash
# bench/nccl_shim.sh — the cost of NCCL's API over xccl: an 8-byte all-reduce
# through libnccl.so.2 (nccl-latency) beside the same loop on xcclAllReduce
# (xccl-latency), alternating, ROUNDS times, on 2 and 4 ranks.
#
#   bench/nccl_shim.sh [BUILD_DIR] [ROUNDS] [BYTES]   (defaults: build/default, 5, 8)
set -u
build=${1:-build/default}
rounds=${2:-5}
bytes=${3:-8}
run=$build/tools/xccl-run
export XCCL_SOCKET_IFNAME=${XCCL_SOCKET_IFNAME:-lo}
for n in 2 4; do
  xs=() ns=()
  for ((i = 0; i < rounds; i++)); do
    xs+=("$($run -n $n $build/bench/xccl-latency $bytes | awk '{print $(NF-6)}')")
    ns+=("$($run -n $n $build/bench/nccl-latency $bytes | awk '{print $(NF-6)}')")
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  mx=$(med "${xs[@]}") mn=$(med "${ns[@]}")
  echo "$n ranks, $bytes B: xcclAllReduce ${xs[*]} us (median $mx); ncclAllReduce ${ns[*]} us (median $mn); " \
       "shim/xccl = $(awk -v a="$mn" -v b="$mx" 'BEGIN {printf "%.3f", a / b}')"
done
