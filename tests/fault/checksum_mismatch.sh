#!/bin/sh
# XCCL_CHECKSUM must be the same on every rank: rank 1 turns it on alone, and
# every rank's init must fail with the sentence that says so (not hang, not
# run with half the ranks appending CRCs).
#   checksum_mismatch.sh XCCL_RUN TEST_ALLREDUCE
run=$1 prog=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
XCCL_TIMEOUT=20 timeout 90 "$run" -n 3 --grace 10 sh -c \
  'XCCL_CHECKSUM=$([ "$XCCL_RANK" = 1 ] && echo 1 || echo 0) exec "$0" matrix' "$prog" >"$out" 2>&1
status=$?
fail=0
[ $status -ne 0 ] || { echo "FAIL: the job succeeded with XCCL_CHECKSUM set on one rank only"; fail=1; }
for r in 0 1 2; do
  grep -q "rank $r of 3: init failed: .*XCCL_CHECKSUM=[01] but rank [0-9] .*with XCCL_CHECKSUM=[01]: every rank must use the same value" "$out" ||
    { echo "FAIL: rank $r did not fail its init naming the XCCL_CHECKSUM mismatch"; fail=1; }
done
[ $fail -eq 0 ] && echo "checksum_mismatch: OK (every rank refused to start)" || cat "$out"
exit $fail
