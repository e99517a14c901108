#!/bin/sh
# A /dev/shm too small for the shared-memory connections (2 MiB here, as in
# containers that get 64 MiB). With named segments (XCCL_SHM_MEMFD=0) init
# must say so in one actionable line, fall back to TCP, and the all-reduces
# must still be right. Memory without a name (the default) does not live in
# /dev/shm: the same job runs through shared memory, with no such line. Runs
# in a private mount namespace so no other test sees the small /dev/shm;
# needs root.
#   shm_small.sh XCCL_RUN TEST_ALLREDUCE
run=$1 prog=$2
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root to mount a small /dev/shm in a private mount namespace"; exit 77; }
command -v unshare >/dev/null || { echo "SKIPPED: unshare (util-linux) is not installed"; exit 77; }
out=$(mktemp)
small() { # small MEMFD: the job on a 2 MiB /dev/shm, its output in $out
  unshare --mount sh -c "mount -t tmpfs -o size=2m xccl-small-shm /dev/shm && XCCL_SHM_MEMFD=$1 XCCL_DEBUG=INFO \
    XCCL_DEBUG_SUBSYS=INIT \"$run\" -n 3 \"$prog\" repeat" >"$out" 2>&1
}
small 1
rc=$?
[ $rc = 77 ] && { rm -f "$out"; exit 77; }
[ $rc = 0 ] || { cat "$out"; echo "FAIL: the all-reduces failed with memory without a name (exit $rc)"; exit 1; }
if grep -q "cannot hold a" "$out" || ! grep -q "through shared memory" "$out"; then
  cat "$out"
  echo "FAIL: memory without a name should not care about a small /dev/shm"
  exit 1
fi
small 0
rc=$?
cat "$out"
if [ $rc = 77 ]; then rm -f "$out"; exit 77; fi
lines=$(grep -c "cannot hold a" "$out")
rm -f "$out"
[ $rc = 0 ] || { echo "FAIL: the all-reduces failed with a small /dev/shm (exit $rc)"; exit 1; }
[ "$lines" -ge 1 ] || { echo "FAIL: no line said that /dev/shm is too small"; exit 1; }
echo "shm_small: /dev/shm too small was reported ($lines line(s), one per rank at most) and TCP carried the job"
