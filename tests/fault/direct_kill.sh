#!/usr/bin/env bash
# A rank killed in the middle of a direct collective (issue 17), with single
# copy (XCCL_SHM_COPY=single: its memory read with process_vm_readv) and zero
# copy (XCCL_SHM_COPY=zero on xcclMemAlloc buffers: its memory mapped), at
# each of its sends of the all-reduce (its buffer addresses, its "block
# reduced" token, its "done" token; zero copy pushes each block into every
# output and has no "reduced" token), on 2 and 3 ranks. The survivors read its
# memory or wait for its token: each must fail within seconds naming rank 1,
# not wait out XCCL_TIMEOUT=30 nor return wrong data.
#   direct_kill.sh XCCL_RUN FAULT_VICTIM
set -u
run=$1 victim=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fails=0
for copy in single zero; do
 for n in 2 3; do
  steps="0 1 2"
  [ "$copy" = zero ] && steps="0 1"
  for step in $steps; do
    memalloc=0
    [ "$copy" = zero ] && memalloc=1
    TEST_MEMALLOC=$memalloc XCCL_TIMEOUT=30 XCCL_SHM_COPY=$copy \
      XCCL_FAULT="rank=1,op=allreduce,seq=3,step=$step,action=kill" \
      timeout 90 "$run" -n "$n" --grace 2 "$victim" >"$out" 2>&1
    line=$(grep "^rank 0:" "$out" | head -1)
    s=$(echo "$line" | sed -n 's/^rank 0: ERROR after \([0-9.]*\) s.*/\1/p')
    if [ -z "$s" ]; then
      echo "FAIL: $n ranks, killed at send $step ($copy copy): rank 0 did not report an error"; cat "$out"; fails=$((fails + 1))
    elif ! echo "$line" | grep -q "rank 1"; then
      echo "FAIL: $n ranks, killed at send $step ($copy copy): rank 0's error does not name rank 1: $line"; fails=$((fails + 1))
    elif [ "$(echo "$s < 10" | bc)" != 1 ]; then
      echo "FAIL: $n ranks, killed at send $step ($copy copy): rank 0 took $s s (XCCL_TIMEOUT=30)"; fails=$((fails + 1))
    elif grep -q "WRONG" "$out"; then
      echo "FAIL: $n ranks, killed at send $step ($copy copy): a survivor returned wrong data"; fails=$((fails + 1))
    else
      echo "OK: $n ranks, killed at send $step ($copy copy): $line"
    fi
  done
 done
done
# Zero copy pushes: each rank sends two messages per peer (its addresses,
# "done"), so a rule for a third send never fires and every rank finishes.
# (A rank that pulled would send a third, be killed, and rank 0 would fail.)
for n in 2 3; do
  TEST_MEMALLOC=1 XCCL_TIMEOUT=30 XCCL_SHM_COPY=zero XCCL_FAULT="rank=1,op=allreduce,seq=3,step=2,action=kill" \
    timeout 90 "$run" -n "$n" --grace 2 "$victim" >"$out" 2>&1
  if [ "$(grep -c ': OK$' "$out")" = "$n" ]; then
    echo "OK: $n ranks, zero copy pushes (no third send to kill at)"
  else
    echo "FAIL: $n ranks, zero copy: a rank sent a third message (it did not push)"; cat "$out"; fails=$((fails + 1))
  fi
done
exit $((fails > 0))
