#!/usr/bin/env bash
# bench/nccl_shim.sh — the cost of NCCL's API over xccl: an 8-byte all-reduce
# through libnccl.so.2 (nccl-latency) beside the same loop on xcclAllReduce
# (xccl-latency), alternating, ROUNDS times, on 2 and 4 ranks. Each run
# prints the median of its batches; the script gives the median and the
# fastest run of each. With more ranks than cores the runs fall into two
# groups (how the scheduler places them), so compare the fastest too.
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
    xs+=("$($run -n $n $build/bench/xccl-latency $bytes | sed -n 's/.*: \([0-9.]*\) us per call.*/\1/p')")
    ns+=("$($run -n $n $build/bench/nccl-latency $bytes | sed -n 's/.*: \([0-9.]*\) us per call.*/\1/p')")
  done
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  low() { printf '%s\n' "$@" | sort -g | head -n 1; }
  mx=$(med "${xs[@]}") mn=$(med "${ns[@]}") lx=$(low "${xs[@]}") ln=$(low "${ns[@]}")
  echo "$n ranks, $bytes B: xcclAllReduce ${xs[*]} us; ncclAllReduce ${ns[*]} us"
  echo "  median $mx vs $mn us: shim/xccl = $(awk -v a="$mn" -v b="$mx" 'BEGIN {printf "%.3f", a / b}');" \
       "fastest $lx vs $ln us: $(awk -v a="$ln" -v b="$lx" 'BEGIN {printf "%.3f", a / b}')"
done
