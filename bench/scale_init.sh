#!/usr/bin/env bash
# bench/scale_init.sh [BUILD] [N...] — what a communicator costs as the local
# ranks grow (issue 25): for each N (default 8 64 256 512), N ranks under
# xccl-run start, run one 8-byte all-reduce and end. Prints per N: the wall
# time of the whole run, the slowest rank's init ("ready in", XCCL_DEBUG=INFO),
# a rank's receive slots as init reports them, and the machine's memory in use
# (anonymous + shared, from /proc/meminfo, sampled every 0.1 s) at its peak
# above the idle level, per rank. Run it on a quiet machine.
set -uo pipefail
build=${1:-build/default}
shift || true
counts=${*:-8 64 256 512}
used_kib() { awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {print t - a}' /proc/meminfo; }
printf "%6s %9s %12s %14s %14s %s\n" ranks "wall_s" "init_ms_max" "slots_MiB/rk" "mem_MiB/rank" status
for n in $counts; do
  log=$(mktemp) peakf=$(mktemp)
  base=$(used_kib)
  ( peak=0; while :; do u=$(used_kib); [ "$u" -gt "$peak" ] && peak=$u && echo "$peak" >"$peakf"; sleep 0.1; done ) &
  sampler=$!
  t0=$(date +%s.%N)
  XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT XCCL_TIMEOUT=600 timeout 900 "$build/tools/xccl-run" -n "$n" \
    "$build/tools/xccl-perf" allreduce -b 8 -e 8 -n 1 -w 0 -c 1 >"$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  peak=$(cat "$peakf" 2>/dev/null || echo "$base")
  init=$(grep -o 'ready in [0-9.]* ms' "$log" | awk '{ if ($3 > m) m = $3 } END { print m + 0 }')
  slots=$(grep -o '[0-9.]* MiB of receive slots' "$log" | awk '{ if ($1 > m) m = $1 } END { print m + 0 }')
  status=ok
  [ $rc -eq 0 ] || status="exit $rc: $(grep -m1 -E 'WARN|error|Killed' "$log" | cut -c1-120)"
  printf "%6d %9.2f %12.1f %14.1f %14.2f %s\n" "$n" "$(echo "$t1 - $t0" | bc)" "$init" "$slots" \
    "$(echo "($peak - $base) / 1024 / $n" | bc -l)" "$status"
  rm -f "$log" "$peakf"
done
