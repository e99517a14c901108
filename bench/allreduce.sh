#!/usr/bin/env bash
# bench/allreduce.sh — xccl allreduce bandwidth next to what loopback TCP can
# carry on this machine.
#
#   bench/allreduce.sh [BUILD_DIR]     (default: build/default)
#
# 1. Loopback TCP throughput with iperf3 on 127.0.0.1 (one 3 s stream). If
#    iperf3 is missing it is installed with apt-get when we are root;
#    otherwise that part is skipped with a message.
# 2. xccl-run -n 2 and -n 4 of `xccl-perf allreduce -b 1K -e 64M -f 2 -c 1`.
# Every command runs under `timeout`. Exits non-zero if an xccl run failed.
set -u

build=${1:-build/default}
run=$build/tools/xccl-run
perf=$build/tools/xccl-perf
port=5299
for exe in "$run" "$perf"; do
  if [ ! -x "$exe" ]; then
    echo "allreduce.sh: $exe not found; build first (cmake --build $build) or pass the build dir as \$1" >&2
    exit 2
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# host: $(uname -sr), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo

echo "== loopback TCP (iperf3, 127.0.0.1, 1 stream, 3 s)"
if ! command -v iperf3 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "iperf3 is missing; installing it with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get install -y -q iperf3 >"$tmp/apt.log" 2>&1 ||
      { timeout 300 apt-get update -q >>"$tmp/apt.log" 2>&1 &&
        timeout 300 apt-get install -y -q iperf3 >>"$tmp/apt.log" 2>&1; } ||
      { echo "apt-get install iperf3 failed:"; tail -5 "$tmp/apt.log"; }
  else
    echo "iperf3 is not installed and we are not root: skipping the TCP measurement"
    echo "(install the Debian package iperf3 to get it)"
  fi
fi
tcp_gbit=""
if command -v iperf3 >/dev/null 2>&1; then
  timeout 30 iperf3 -s -1 -B 127.0.0.1 -p "$port" >"$tmp/iperf-server.log" 2>&1 &
  server=$!
  # The server needs a moment to listen; retry the client (at most ~5 s).
  # (A bare connect probe would use up the one test that -1 allows.)
  ok=0
  for _ in $(seq 10); do
    sleep 0.5
    if timeout 30 iperf3 -c 127.0.0.1 -p "$port" -t 3 -f g >"$tmp/iperf.log" 2>&1; then ok=1; break; fi
    grep -q "Connection refused" "$tmp/iperf.log" || break
  done
  if [ "$ok" = 1 ]; then
    cat "$tmp/iperf.log"
    tcp_gbit=$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1) }' "$tmp/iperf.log")
    if [ -n "$tcp_gbit" ]; then
      echo "loopback TCP: $tcp_gbit Gbit/s = $(awk -v g="$tcp_gbit" 'BEGIN { printf "%.2f", g / 8 }') GB/s"
    fi
  else
    echo "iperf3 client failed:"
    cat "$tmp/iperf.log"
  fi
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
fi
echo

status=0
for n in 2 4; do
  echo "== xccl-run -n $n xccl-perf allreduce -b 1K -e 64M -f 2 -c 1"
  timeout 600 "$run" -n "$n" --timeout 590 "$perf" allreduce -b 1K -e 64M -f 2 -c 1 2>&1 | tee "$tmp/perf$n.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    echo "allreduce.sh: the $n-rank run failed with status $rc"
    status=1
  fi
  echo
done

echo "== summary"
if [ -n "$tcp_gbit" ]; then
  echo "loopback TCP (iperf3, 1 stream): $tcp_gbit Gbit/s ($(awk -v g="$tcp_gbit" 'BEGIN { printf "%.2f", g / 8 }') GB/s)"
else
  echo "loopback TCP (iperf3): not measured"
fi
for n in 2 4; do
  echo "xccl allreduce, $n ranks: $(sed -n 's/^# avg busbw: //p' "$tmp/perf$n.log" 2>/dev/null | grep . || echo 'no result')"
done
exit $status
