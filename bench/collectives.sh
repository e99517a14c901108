#!/usr/bin/env bash
# bench/collectives.sh — every collective on 2 and 4 ranks at a few sizes,
# and the 8-byte all-reduce latency of each algorithm, in one run. Each
# size runs alone with 20 warm-up iterations: fewer leave TCP windows small
# (1 MiB all-reduce on 2 ranks: 1.5 ms after 2 warm-ups, 0.5 ms after 20).
#
#   bench/collectives.sh [BUILD_DIR]     (default: build/default)
set -u
build=${1:-build/default}
run=$build/tools/xccl-run
perf=$build/tools/xccl-perf
export XCCL_SOCKET_IFNAME=${XCCL_SOCKET_IFNAME:-lo}
echo "# host: $(uname -sr), $(nproc) cores; date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# float32 (sum where there is an op), time in us / busbw in GB/s, sizes as nccl-tests"
printf "%-14s %5s %22s %22s %22s %22s\n" coll ranks 8B 64KiB 1MiB 16MiB
for n in 2 4; do
  for coll in allreduce allgather reducescatter broadcast reduce gather scatter alltoall sendrecv; do
    row=""
    for size in 8 64K 1M 16M; do
      cell=$(timeout 300 "$run" -n "$n" "$perf" "$coll" -b "$size" -e "$size" -n 20 -w 20 -c 1 2>/dev/null |
        awk '$1 ~ /^[0-9]+$/ { printf "%.0f/%.3f%s", $6, $8, $9 == "0" ? "" : " WRONG" }')
      row="$row$(printf "%22s" "${cell:-failed}")"
    done
    printf "%-14s %5s %s\n" "$coll" "$n" "$row"
  done
done
echo
echo "# 8-byte all-reduce latency (us) per algorithm (XCCL_ALGO), 500 iterations"
printf "%-6s %10s %10s\n" ranks ring rd
for n in 2 3 4 8; do
  r=$(XCCL_ALGO=allreduce:ring timeout 120 "$run" -n "$n" "$perf" allreduce -b 8 -e 8 -n 500 -w 20 -c 1 2>/dev/null | awk '$1 == 8 {print $6 ($9 == "0" ? "" : " WRONG")}')
  d=$(XCCL_ALGO=allreduce:rd timeout 120 "$run" -n "$n" "$perf" allreduce -b 8 -e 8 -n 500 -w 20 -c 1 2>/dev/null | awk '$1 == 8 {print $6 ($9 == "0" ? "" : " WRONG")}')
  printf "%-6s %10s %10s\n" "$n" "$r" "$d"
done
