#!/usr/bin/env bash
# A shared-memory peer killed mid all-reduce whose parent does not reap it
# (torchrun looks at its children only every few seconds): the dead rank is a
# zombie, which kill(pid, 0) still finds. The survivor must fail within a few
# seconds naming it, not wait out XCCL_TIMEOUT=30.
#   zombie_peer.sh XCCL_RUN FAULT_VICTIM
set -u
run=$1 victim=$2
command -v perl >/dev/null || { echo "SKIP: perl is needed to hold a zombie"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Rank 1's parent forks the victim and sleeps without ever calling wait().
XCCL_TIMEOUT=30 XCCL_TRANSPORT=shm XCCL_FAULT="rank=1,op=allreduce,seq=3,step=1,action=kill" \
  timeout 90 "$run" -n 2 --grace 2 sh -c \
  'if [ "$XCCL_RANK" = 1 ]; then exec perl -e "exec @ARGV if !fork(); sleep 20" "$0"; else exec "$0"; fi' \
  "$victim" >"$out" 2>&1
line=$(grep "^rank 0:" "$out" | head -1)
echo "$line"
s=$(echo "$line" | sed -n 's/^rank 0: ERROR after \([0-9.]*\) s.*/\1/p')
[ -n "$s" ] || { echo "FAIL: rank 0 did not report an error"; cat "$out"; exit 1; }
echo "$line" | grep -q "rank 1" || { echo "FAIL: rank 0's error does not name rank 1"; exit 1; }
if [ "$(echo "$s < 10" | bc)" != 1 ]; then
  echo "FAIL: rank 0 took $s s to see its zombie peer (XCCL_TIMEOUT=30)"
  exit 1
fi
echo "OK: rank 0 saw the zombie peer in $s s"
