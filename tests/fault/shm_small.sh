#!/bin/sh
# A /dev/shm too small for the shared-memory connections (2 MiB here, as in
# containers that get 64 MiB): init must say so in one actionable line, fall
# back to TCP, and the all-reduces must still be right. Runs in a private
# mount namespace so no other test sees the small /dev/shm; needs root.
#   shm_small.sh XCCL_RUN TEST_ALLREDUCE
run=$1 prog=$2
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root to mount a small /dev/shm in a private mount namespace"; exit 77; }
command -v unshare >/dev/null || { echo "SKIPPED: unshare (util-linux) is not installed"; exit 77; }
out=$(mktemp)
unshare --mount sh -c "mount -t tmpfs -o size=2m xccl-small-shm /dev/shm && XCCL_DEBUG=WARN \"$run\" -n 3 \"$prog\" repeat" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc = 77 ]; then rm -f "$out"; exit 77; fi
lines=$(grep -c "cannot hold a" "$out")
rm -f "$out"
[ $rc = 0 ] || { echo "FAIL: the all-reduces failed with a small /dev/shm (exit $rc)"; exit 1; }
[ "$lines" -ge 1 ] || { echo "FAIL: no line said that /dev/shm is too small"; exit 1; }
echo "shm_small: /dev/shm too small was reported ($lines line(s), one per rank at most) and TCP carried the job"
