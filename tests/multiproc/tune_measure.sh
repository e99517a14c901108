#!/bin/sh
# tune_measure.sh XCCL_RUN TEST_ALLREDUCE — XCCL_TUNE=measure (issue 25):
# every rank logs the same measured per-step latency and bandwidth (the
# medians of all ranks' figures), the all-reduces after it are right, the
# sockets on loopback measure slower steps than shared memory, and a value
# other than table or measure fails init on every rank with the sentence.
run=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "tune_measure: FAILED: $*"; exit 1; }

# Runs 3 ranks of test_allreduce repeat under transport $1; prints the one
# "A us per step, B GB/s" all ranks agree on.
measured() {
  XCCL_TRANSPORT=$1 XCCL_TUNE=measure XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT "$run" -n 3 "$prog" repeat \
    >"$dir/$1.log" 2>&1 || { cat "$dir/$1.log"; fail "the $1 run exited $?"; }
  sed -n 's/.*XCCL_TUNE=measure: \([0-9.]*\) us per step, \([0-9.]*\) GB\/s.*/\1 \2/p' "$dir/$1.log" | sort -u >"$dir/$1.v"
  [ "$(grep -c 'XCCL_TUNE=measure:' "$dir/$1.log")" = 3 ] || { cat "$dir/$1.log"; fail "$1: not 3 ranks logged a measurement"; }
  [ "$(wc -l <"$dir/$1.v")" = 1 ] || { cat "$dir/$1.v"; fail "$1: the ranks hold different constants"; }
  awk '$1 > 0 && $2 > 0 { ok = 1 } END { exit !ok }' "$dir/$1.v" || fail "$1: a figure is not positive: $(cat "$dir/$1.v")"
  cat "$dir/$1.v"
}
shm=$(measured shm) || exit 1
sock=$(measured socket) || exit 1
echo "tune_measure: shm $shm, socket $sock (us per step, GB/s)"
echo "$shm $sock" | awk '{ exit !($3 > $1) }' || fail "sockets measured no slower a step than shared memory"

XCCL_TUNE=foo "$run" -n 2 "$prog" repeat >"$dir/bad.log" 2>&1 && fail "XCCL_TUNE=foo was accepted"
[ "$(grep -c 'XCCL_TUNE=foo: expected table' "$dir/bad.log")" -ge 2 ] || { cat "$dir/bad.log"; fail "XCCL_TUNE=foo: no sentence from each rank"; }
echo "tune_measure: passed"
