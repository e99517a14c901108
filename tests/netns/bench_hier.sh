#!/usr/bin/env bash
# Hierarchical against flat ring all-reduce on NODES namespace nodes x PER
# ranks (bridge, sockets between nodes, shared memory inside one): xccl-perf
# busbw per algorithm at SIZE, and the bytes the nodes' interfaces sent per
# rank per all-reduce (TCP/IP headers and acknowledgements included). Needs
# root. Not a test: prints a table.
#   bench_hier.sh BUILD_DIR [NODES PER SIZE ITERS]
set -u
build=$1 nodes=${2:-4} per=${3:-2} size=${4:-16M} iters=${5:-10}
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
netns_up "$nodes" bridge || { echo "could not build the namespaces"; exit 1; }
NETNS_LOG=$(mktemp -d)/rank
tx_total() {
  local i t=0
  for ((i = 0; i < nodes; i++)); do t=$((t + $(netns_exec $i cat /sys/class/net/$(netns_dev $i)/statistics/tx_bytes))); done
  echo $t
}
for algo in ring hier; do
  before=$(tx_total)
  XCCL_TIMEOUT=120 netns_launch "$per" 300 "$build/tools/xccl-perf" allreduce -b "$size" -e "$size" -n "$iters" -w 2 -c 0 \
    --algo "$algo" || { echo "xccl-perf failed ($algo)"; tail "$NETNS_LOG".0; exit 1; }
  after=$(tx_total)
  row=$(grep -E "^ +[0-9]+ .* $algo" "$NETNS_LOG.0" | tail -1)
  busbw=$(echo "$row" | awk '{print $8}')
  time_us=$(echo "$row" | awk '{print $6}')
  tuner=$(echo "$row" | awk '{print $11}')
  per_rank=$(( (after - before) / (iters + 2) / (nodes * per) ))
  printf '%-5s %s ranks (%s x %s)  %s B  time %s us  busbw %s GB/s  between nodes per rank per op %d B %s\n' \
    "$algo" $((nodes * per)) "$nodes" "$per" "$(echo "$row" | awk '{print $1}')" "$time_us" "$busbw" "$per_rank" "${tuner:+(tuner pick)}"
done
