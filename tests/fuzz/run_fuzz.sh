#!/bin/sh
# run_fuzz.sh FUZZER SECONDS SEED... — runs a libFuzzer target for a bounded
# time from the given seed files (the fixtures) in a scratch corpus. Exit 77
# (skipped) when the target was not built (no clang with libFuzzer here).
# The random seed is fixed (XCCL_FUZZ_SEED, default 1) so that a failure in
# CI happens again on a developer's machine; XCCL_FUZZ_SEED=0 draws a fresh
# one for exploratory runs, and the log's first lines say which was used.
set -u
fuzzer=$1
secs=$2
shift 2
if [ ! -x "$fuzzer" ]; then
  echo "run_fuzz: SKIP: $fuzzer not built (needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev; sanitizer builds leave it out)"
  exit 77
fi
seeds=
for s in "$@"; do seeds="${seeds:+$seeds,}$s"; done
here=$(cd "$(dirname "$0")" && pwd)
corpus=$(mktemp -d) || exit 1
trap 'rm -rf "$corpus"' EXIT
cd "$corpus" || exit 1
mkdir corpus || exit 1
export LSAN_OPTIONS="suppressions=$here/lsan_hwloc.supp:print_suppressions=0"
"$fuzzer" -seed="${XCCL_FUZZ_SEED:-1}" -error_exitcode=1 -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -max_len=65536 -print_final_stats=1 \
  -seed_inputs="$seeds" corpus > log 2>&1
rc=$?
grep -m1 "INFO: Seed" log
tail -30 log
# A deep stack pushes the report's first line out of the tail: say it again.
[ $rc -ne 0 ] && grep -m3 -E "Assertion|ERROR: |runtime error|deadly signal" log
[ $rc -ne 0 ] && ls crash-* leak-* timeout-* oom-* 2>/dev/null && echo "run_fuzz: FAIL: the input above is in $corpus (kept)" && trap - EXIT
exit $rc
