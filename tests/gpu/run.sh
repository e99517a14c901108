#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU check in one command, for a machine with an
# NVIDIA GPU and a CUDA toolkit: configures and builds xccl with CUDA (only
# what the GPU suite needs), runs `ctest -L gpu` (the collectives on device
# buffers with 1, 2 and 4 ranks on one GPU, sends and receives, abort of a
# running kernel, the deadline), runs the kernel benchmark, and prints one
# summary line:
#
#   GPU SUMMARY: tests P/T passed (S skipped, F failed) | reduce kernel float32 sum R GB/s
#                = X of a D2D copy (C GB/s) | allreduce 2 ranks 256 MiB busbw P GB/s
#                CUDA IPC, H GB/s host slots | <GPU> | N s          (one line)
#
# The all-reduce figures are xccl-perf --device with two ranks on the GPU,
# once with the p2p transport (slots in GPU memory, CUDA IPC) and once with
# XCCL_P2P_DISABLE=1 (slots in mapped host memory).
#
# Logs stay in BUILD/gpu-logs. Exit 0 when every test passed or was skipped
# and the benchmark ran; 1 otherwise (the summary says where it stopped).
#
# XCCL_GPU_PREBUILT=1 runs a build made elsewhere as it is (tests/gpu/pack.sh
# packs one for a machine without xccl's build dependencies).
#
# usage: tests/gpu/run.sh [BUILD_DIR]      (default: build/gpu)
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build/gpu}
logs=$build/gpu-logs
mkdir -p "$logs"
start=$(date +%s)
jobs=$(nproc 2>/dev/null || echo 4)

summary() { # summary RESULT TEXT
  echo "GPU SUMMARY: $2 | $(($(date +%s) - start)) s"
  exit "$1"
}
tail_of() { tail -n 15 "$1" | sed 's/^/    /'; }

command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
# Every kernel loaded at start: a kernel loaded lazily while another of this
# process spins on the GPU may wait for it.
export CUDA_MODULE_LOADING=EAGER
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "run.sh: source $src, build $build, GPU: ${gpu:-unknown (nvidia-smi gave nothing)}," \
  "nvcc: $(command -v nvcc || echo none)"

if [ "${XCCL_GPU_PREBUILT:-0}" = 1 ]; then
  # Built elsewhere and unpacked here (tests/gpu/pack.sh): no configure, no build.
  echo "run.sh: XCCL_GPU_PREBUILT=1: running the build in $build as it is"
  [ -x "$build/tests/test_gpu_coll" ] || summary 1 "FAILED: XCCL_GPU_PREBUILT=1 but $build/tests/test_gpu_coll is missing"
else
  echo "run.sh: configuring (XCCL_WITH_CUDA=ON) ..."
  if ! cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DXCCL_WITH_CUDA=ON >"$logs/configure.log" 2>&1; then
    tail_of "$logs/configure.log"
    summary 1 "FAILED: configure with CUDA (see $logs/configure.log)"
  fi
  echo "run.sh: building the GPU suite with $jobs jobs ..."
  if ! cmake --build "$build" -j "$jobs" --target xccl_gpu_tests >"$logs/build.log" 2>&1; then
    tail_of "$logs/build.log"
    summary 1 "FAILED: build (see $logs/build.log)"
  fi
fi

echo "run.sh: ctest -L gpu ..."
ctest --test-dir "$build" -L gpu --output-on-failure >"$logs/ctest.log" 2>&1
ctest_rc=$?
grep -E "Test +#|tests passed|FAILED|CHECK" "$logs/ctest.log" | sed 's/^/    /'
# Why tests skipped: their output is in ctest's own log, not on the console.
grep -h "SKIPPED" "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort | uniq -c | sed 's/^/    /'
total=$(grep -cE "Test +#[0-9]+:" "$logs/ctest.log")
passed=$(grep -cE "Test +#[0-9]+:.* Passed" "$logs/ctest.log")
skipped=$(grep -cE "Test +#[0-9]+:.*(Skipped|Not Run)" "$logs/ctest.log")
failed=$((total - passed - skipped))
tests="tests $passed/$total passed ($skipped skipped, $failed failed)"

echo "run.sh: kernel benchmark ..."
"$build/tests/bench_reduce" >"$logs/bench.log" 2>&1
bench_rc=$?
sed 's/^/    /' "$logs/bench.log"
line=$(grep '^BENCH ' "$logs/bench.log" | tail -n 1)
field() { echo "$line" | sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
if [ "$bench_rc" -eq 0 ] && [ -n "$line" ]; then
  bench="reduce kernel float32 sum $(field reduce_GBps) GB/s = $(field fraction) of a D2D copy"
  bench="$bench ($(field copy_GBps) GB/s)"
else
  bench="benchmark did not run (exit $bench_rc, see $logs/bench.log)"
fi

echo "run.sh: xccl-perf allreduce --device, 2 ranks, with and without CUDA IPC ..."
perf_busbw() { # perf_busbw P2P_DISABLE: busbw (GB/s) of the largest size, or "failed"
  XCCL_P2P_DISABLE=$1 timeout 300 "$build/tools/xccl-run" -n 2 "$build/tools/xccl-perf" allreduce --device \
    -b 1M -e 256M -f 4 -n 20 -w 5 -c 1 >"$logs/perf_p2p$1.log" 2>&1 || { echo failed; return 1; }
  sed 's/^/    /' "$logs/perf_p2p$1.log" >&2
  awk '!/^#/ && NF >= 8 { b = $8 } END { print b }' "$logs/perf_p2p$1.log"
}
ipc=$(perf_busbw 0)
perf_rc=$?
hostslots=$(perf_busbw 1)
perf_rc=$((perf_rc + $?))
perf="allreduce 2 ranks 256 MiB busbw $ipc GB/s CUDA IPC, $hostslots GB/s host slots"

# The graph the communicator runs on this machine (issue 24): the lowest rank
# writes it (XCCL_GRAPH_DUMP_FILE) and it is printed beside what the planner
# alone gives for one host of this shape (xccl-topo --job 1x2).
echo "run.sh: the communicator's dumped graph (XCCL_GRAPH_DUMP_FILE), 2 ranks ..."
XCCL_GRAPH_DUMP_FILE=$logs/graph_comm.xml XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT timeout 120 \
  "$build/tools/xccl-run" -n 2 "$build/tools/xccl-perf" allreduce --device -b 1M -e 1M -n 2 -w 1 \
  >"$logs/graph_comm.log" 2>&1
grep -E "Channel [0-9]+/|Ring [0-9]+ :" "$logs/graph_comm.log" | sed 's/^/    /'
sed 's/^/    /' "$logs/graph_comm.xml" 2>/dev/null || echo "    (no graph written: see $logs/graph_comm.log)"
"$build/tools/xccl-topo" --job 1x2 --format nccl-graph >"$logs/graph_job.xml" 2>&1 &&
  { cmp -s "$logs/graph_comm.xml" "$logs/graph_job.xml" && echo "    = xccl-topo --job 1x2" ||
    { echo "    differs from xccl-topo --job 1x2:"; sed 's/^/    /' "$logs/graph_job.xml"; }; }

rc=0
{ [ "$perf_rc" -ne 0 ] || [ "$ctest_rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$total" -eq 0 ] || [ "$bench_rc" -ne 0 ]; } && rc=1
summary "$rc" "$tests | $bench | $perf | ${gpu:-unknown GPU}"
