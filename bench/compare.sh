#!/usr/bin/env bash
# bench/compare.sh — all-reduce (float32 sum) of xccl beside Open MPI and
# PyTorch's Gloo on this machine, in one run, with the machine's limits.
#
#   bench/compare.sh [--plot FILE] [BUILD_DIR] [ROUNDS]     (defaults: build/default, 3)
#
# --plot FILE: the medians also as a picture (xccl-plot, matplotlib): busbw
# against size, a panel per number of ranks, a line per library, and on
# 2 ranks the zero-copy bound.
#
# Installs what it needs from Debian when it runs as root (openmpi-bin
# libopenmpi-dev python3-torch iperf3; Gloo runs under Debian's /usr/bin/python3,
# the one python3-torch is for). For each number of ranks (2, 4, 8)
# and size (8 B .. 128 MiB) it runs the three libraries one after the other,
# ROUNDS times, alternating, and prints per library the median time (us), the
# bus bandwidth 2(n-1)/n x size / time (GB/s) and xccl's speed-up over it.
# xccl runs twice: on malloc'd buffers, and on buffers from xcclMemAlloc
# registered as windows (xccl-perf --memalloc: the zero-copy path, issue 17).
# The bounds, in the same run: a cache line's one-way trip between two
# processes (cacheline_trip.c), the floor of a small message; memory
# traffic of two threads copying at each size (read + written bytes per
# second), and the zero-copy bound it implies for a 2-rank all-reduce
# (traffic / 4); loopback TCP; and over a veth pair, two iperf3 runs at
# once, one each way, with XCCL_NSOCKS streams each (an all-reduce sends
# both ways at once), beside the veth all-reduce run 5 times (median and
# spread).
set -u
plot=
if [ "${1:-}" = --plot ]; then
  plot=${2:?--plot needs a file}
  shift 2
  touch "$plot" 2>/dev/null || { echo "compare: --plot $plot: cannot write it" >&2; exit 2; }
  rm -f "$plot"
fi
build=${1:-build/default}
rounds=${2:-3}
run=$build/tools/xccl-run
perf=$build/tools/xccl-perf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XCCL_SOCKET_IFNAME=${XCCL_SOCKET_IFNAME:-lo}

need=()
command -v mpirun >/dev/null || need+=(openmpi-bin)
# mpicc comes with openmpi-bin, mpi.h only with libopenmpi-dev
printf '#include <mpi.h>\nint main(void) { return 0; }\n' | mpicc -x c - -o /dev/null 2>/dev/null || need+=(libopenmpi-dev)
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || need+=(python3-torch)
command -v iperf3 >/dev/null || need+=(iperf3)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
  else
    echo "compare.sh: missing ${need[*]} and not root to install them" >&2
    exit 2
  fi
fi

# --- the peers' benchmarks, written for this script ---
cat >"$tmp/mpi_ar.c" <<'EOF'
/* all-reduce float32 sum: mean time per call, max over ranks */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t bytes = strtoull(argv[1], NULL, 10), n = bytes / 4 ? bytes / 4 : 1;
  int iters = atoi(argv[2]), warm = atoi(argv[3]);
  float *a = malloc(n * 4), *b = malloc(n * 4);
  for (size_t i = 0; i < n; i++) a[i] = 1;
  for (int i = 0; i < warm; i++) MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - t0) / iters * 1e6, tmax;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.2f\n", tmax);
  MPI_Finalize();
  return 0;
}
EOF
cat >"$tmp/gloo_ar.py" <<'EOF'
# all-reduce float32 sum over torch.distributed's gloo: mean time per call, max over ranks
import os, sys, time, torch, torch.distributed as dist
size, iters, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group("gloo")
t = torch.ones(max(size // 4, 1), dtype=torch.float32)
for _ in range(warm): dist.all_reduce(t)
dist.barrier()
t0 = time.perf_counter()
for _ in range(iters): dist.all_reduce(t)
el = torch.tensor([(time.perf_counter() - t0) / iters * 1e6], dtype=torch.float64)
dist.all_reduce(el, op=dist.ReduceOp.MAX)
if dist.get_rank() == 0: print("%.2f" % el.item())
dist.destroy_process_group()
EOF
cat >"$tmp/memcpy.c" <<'EOF'
/* Two threads, each copying its own buffer of SIZE bytes to another, again
 * and again, timed after both have touched their memory: the read + written
 * bytes per second of both together. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static size_t n;
static int reps;
static pthread_barrier_t ready;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static void *copier(void *arg) {
  double *secs = arg;
  char *a = malloc(n), *b = malloc(n);
  memset(a, 1, n); memset(b, 2, n);
  pthread_barrier_wait(&ready);
  double t0 = now();
  for (int i = 0; i < reps; i++) memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
  *secs = now() - t0;
  free(a); free(b);
  return NULL;
}
int main(int argc, char **argv) {
  n = strtoull(argv[1], NULL, 10);
  reps = (int)((2ull << 30) / n) + 2;
  pthread_t t[2];
  double secs[2];
  pthread_barrier_init(&ready, NULL, 2);
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, copier, &secs[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  double s = secs[0] > secs[1] ? secs[0] : secs[1];
  printf("%.2f\n", 2.0 * 2.0 * reps * n / s / 1e9);
  return 0;
}
EOF
mpicc -O2 -o "$tmp/mpi_ar" "$tmp/mpi_ar.c" || exit 2
cc -O2 -pthread -o "$tmp/memcpy" "$tmp/memcpy.c" || exit 2
cc -O2 -o "$tmp/cacheline_trip" "$(dirname "$0")/cacheline_trip.c" || exit 2

iters_for() { # fewer iterations for large sizes
  # Four and eight ranks share two cores here: a few hundred small calls
  # measure the scheduler more than the library, so small sizes get many.
  if [ "$1" -le 65536 ]; then echo 2000; elif [ "$1" -le 1048576 ]; then echo 100; elif [ "$1" -le 16777216 ]; then echo 20; else echo 5; fi
}
run_xccl() { timeout 600 "$run" -n "$1" "$perf" allreduce -b "$2" -e "$2" -n "$3" -w "$4" -c 0 $5 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {print $6}'; }
run_mpi() { timeout 600 mpirun --allow-run-as-root --oversubscribe -np "$1" --mca btl self,vader "$tmp/mpi_ar" "$2" "$3" "$4" 2>/dev/null | tail -1; }
run_gloo() {
  local n=$1 port=$((29500 + RANDOM % 1000)) pids=() r
  for ((r = 0; r < n; r++)); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$n GLOO_SOCKET_IFNAME=lo \
      timeout 600 /usr/bin/python3 "$tmp/gloo_ar.py" "$2" "$3" "$4" >"$tmp/gloo.$r" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  cat "$tmp/gloo.0"
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "nan"}'; }

echo "# host: $(uname -sr), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); rounds: $rounds (median shown); float32 sum"
for size in 1048576 16777216 134217728; do
  t=$("$tmp/memcpy" "$size")
  awk -v s="$size" -v t="$t" 'BEGIN { printf "# memory traffic, two threads copying %d B: %.2f GB/s; zero-copy bound of a 2-rank all-reduce (/4): %.2f GB/s\n", s, t, t / 4 }'
  echo "$size $t" >>"$tmp/bounds"
done
trip=$("$tmp/cacheline_trip")
echo "# a cache line's one-way trip between two processes (cacheline_trip.c): $trip us; the floor of a 2-rank 8 B all-reduce"
iperf3 -s -1 -p 5298 >/dev/null 2>&1 &
sleep 0.5
tcp=$(timeout 20 iperf3 -c 127.0.0.1 -p 5298 -t 3 -J 2>/dev/null | python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8e9))' 2>/dev/null)
echo "# loopback TCP, iperf3 one stream: ${tcp:-n/a} GB/s"
echo
printf "%-5s %10s | %12s %8s | %12s %8s %7s | %12s %8s %7s | %12s %8s %7s %7s\n" ranks size "xccl us" busbw "mpi us" busbw "x/mpi" "gloo us" busbw "x/gloo" "xccl-zc us" busbw "mpi/zc" "zc/bnd"
for n in 2 4 8; do
  for size in 8 1048576 16777216 134217728; do
    it=$(iters_for "$size"); w=$((it / 5 + 2))
    : >"$tmp/x"; : >"$tmp/m"; : >"$tmp/g"; : >"$tmp/z"
    for ((k = 0; k < rounds; k++)); do # alternate, so drift hits all four alike
      run_xccl "$n" "$size" "$it" "$w" "" >>"$tmp/x"
      run_mpi "$n" "$size" "$it" "$w" >>"$tmp/m"
      run_gloo "$n" "$size" "$it" "$w" >>"$tmp/g"
      run_xccl "$n" "$size" "$it" "$w" --memalloc >>"$tmp/z"
    done
    x=$(median <"$tmp/x"); m=$(median <"$tmp/m"); g=$(median <"$tmp/g"); z=$(median <"$tmp/z")
    bound=$(awk -v s="$size" '$1 == s {print $2 / 4}' "$tmp/bounds" 2>/dev/null)
    awk -v n="$n" -v s="$size" -v x="$x" -v m="$m" -v g="$g" -v z="$z" -v bd="${bound:-0}" -v rows="$tmp/rows" 'BEGIN {
      f = 2 * (n - 1) / n
      bx = (x > 0) ? f * s / x / 1e3 : 0; bm = (m > 0) ? f * s / m / 1e3 : 0; bg = (g > 0) ? f * s / g / 1e3 : 0
      bz = (z > 0) ? f * s / z / 1e3 : 0
      rb = (n == 2 && bd > 0) ? sprintf("%7.2f", bz / bd) : sprintf("%7s", "-")
      printf "%-5d %10d | %12.1f %8.3f | %12.1f %8.3f %7.2f | %12.1f %8.3f %7.2f | %12.1f %8.3f %7.2f %s\n", n, s, x, bx, m, bm, (x > 0 ? m / x : 0), g, bg, (x > 0 ? g / x : 0), z, bz, (z > 0 ? m / z : 0), rb
      # rows for the picture (xccl-plot): a panel per number of ranks, a series per library
      row = "{\"kind\":\"result\",\"panel\":\"%d ranks\",\"series\":\"%s\",\"size\":%d,\"busbw_gbps\":%.6g}\n"
      printf row, n, "xccl", s, bx >>rows; printf row, n, "Open MPI", s, bm >>rows; printf row, n, "Gloo", s, bg >>rows
      printf row, n, "xccl zero copy", s, bz >>rows
      if (n == 2 && bd > 0) printf row, n, "zero-copy bound", s, bd >>rows
    }'
    if [ "$size" = 8 ] && [ -n "$trip" ]; then
      awk -v n="$n" -v x="$x" -v t="$trip" 'BEGIN { printf "#   8 B on %d ranks: xccl / one-way cache-line trip = %.2f\n", n, (t > 0 ? x / t : 0) }'
    fi

  done
done
if [ -n "$plot" ]; then
  "$build/tools/xccl-plot" -o "$plot" --title "all-reduce, float32 sum: xccl beside Open MPI and Gloo (medians of $rounds)" \
    "$tmp/rows" || echo "# --plot: xccl-plot failed"
fi

# --- the socket transport between two network namespaces joined by a veth
# pair, beside iperf3's single stream on the same link (needs root) ---
echo
here=$(cd "$(dirname "$0")/.." && pwd)
if (. "$here/tests/netns/netns.sh" && netns_need_root >/dev/null); then
  (
    . "$here/tests/netns/netns.sh"
    netns_up 2 veth || exit 1
    ns=${XCCL_NSOCKS:-4}
    # Two one-way runs at once, one each way, $ns streams each: the two-way bound.
    netns_exec 1 iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
    netns_exec 0 iperf3 -s -1 -p 5300 >/dev/null 2>&1 &
    sleep 0.5
    netns_exec 0 timeout 20 iperf3 -c "$(netns_addr 1)" -p 5299 -t 3 -P "$ns" -J >"$tmp/fwd.json" 2>/dev/null &
    netns_exec 1 timeout 20 iperf3 -c "$(netns_addr 0)" -p 5300 -t 3 -P "$ns" -J >"$tmp/rev.json" 2>/dev/null &
    wait
    gbps() { python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 8e9))' "$1" 2>/dev/null; }
    fwd=$(gbps "$tmp/fwd.json"); rev=$(gbps "$tmp/rev.json")
    : >"$tmp/v"
    # One run first, not counted (the link's first connections; the runs
    # above still exiting). Each run is 30 calls, about 0.2 s: with 10 calls,
    # 20 runs here spread from 1.87 to 2.38 GB/s and one of five in a run of
    # this script came out at 1.39; with 30, 12 runs spread from 2.03 to 2.45.
    for ((k = 0; k <= 5; k++)); do
      NETNS_LOG="$tmp/vlog" netns_launch 1 300 "$perf" allreduce -b 16M -e 16M -n 30 -w 5 -c 0 >/dev/null 2>&1
      [ "$k" -gt 0 ] && awk '$1 ~ /^[0-9]+$/ {print $8}' "$tmp/vlog.0" >>"$tmp/v"
    done
    vbus=$(median <"$tmp/v")
    vmin=$(sort -g "$tmp/v" | head -1); vmax=$(sort -g "$tmp/v" | tail -1)
    echo "# two namespaces over veth, 2 ranks (one each), socket transport ($ns streams), all-reduce 16 MiB, 5 runs:"
    echo "#   busbw per run (GB/s): $(tr '\n' ' ' <"$tmp/v")"
    awk -v b="$vbus" -v lo="$vmin" -v hi="$vmax" -v f="${fwd:-0}" -v r="${rev:-0}" -v ns="$ns" 'BEGIN {
      t = (f < r) ? f : r
      printf "#   xccl busbw median %.3f GB/s (slowest %.3f, fastest %.3f); iperf3 both ways at once, %d streams each: %.3f and %.3f GB/s\n", b, lo, hi, ns, f, r
      printf "#   median / two-way bound (the slower way) %.2f; slowest / bound %.2f\n", (t > 0 ? b / t : 0), (t > 0 ? lo / t : 0) }'
  )
else
  echo "# two namespaces over veth: skipped (needs root to make network namespaces)"
fi
