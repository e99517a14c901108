#!/usr/bin/env bash
# The lone all-reduce (issue 29): an all-reduce by recursive doubling, alone
# outside any group, whose partners are all in shared memory, runs without
# a group launch (group.c's launch_lone, algo_rd.c's rd_lone). Checks, with
# every result checked by xccl-perf -c 1 (its #wrong column):
#   - on shared memory (2 and 3 ranks: the fold) every rank says it takes
#     the lone launch, and every result is right;
#   - XCCL_LONE=0: no rank does, results right;
#   - over TCP: every rank says why not (the partner it names), results right;
#   - a partner killed in the middle of a lone all-reduce: the survivor fails
#     within XCCL_TIMEOUT + grace, naming the all-reduce and a rank.
#   lone_path.sh XCCL_RUN XCCL_PERF FAULT_VICTIM
set -u
run=$1 perf=$2 victim=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; sed 's/^/    /' "$tmp/out" | tail -n 15; fail=1; }

# case NAME RANKS EXPECT_PATTERN EXPECT_COUNT [ENV=VALUE...]
case_run() {
  local name=$1 n=$2 pat=$3 want=$4
  shift 4
  env XCCL_ALGO=allreduce:rd XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=COLL "$@" timeout 120 "$run" -n "$n" \
    "$perf" allreduce -b 8 -e 256K -f 8 -n 20 -w 2 -c 1 >"$tmp/out" 2>&1
  local rc=$? got wrong rows
  got=$(grep -c -- "$pat" "$tmp/out")
  rows=$(awk '$1 ~ /^[0-9]+$/' "$tmp/out" | wc -l)
  wrong=$(awk '$1 ~ /^[0-9]+$/ && $NF != "0"' "$tmp/out" | wc -l)
  echo "$name: $n ranks, rc $rc, ranks saying \"$pat\": $got, sizes $rows, sizes with wrong results $wrong"
  [ "$rc" = 0 ] || bad "$name: xccl-perf failed"
  [ "$got" = "$want" ] || bad "$name: $got ranks said \"$pat\", expected $want"
  [ "$rows" -ge 6 ] || bad "$name: only $rows sizes ran"
  [ "$wrong" = 0 ] || bad "$name: wrong results"
}

lone="runs without a group launch"
case_run shm 2 "$lone" 2
case_run shm-fold 3 "$lone" 3
case_run lone-off 3 "$lone" 0 XCCL_LONE=0
case_run socket 2 "take the group launch: partner rank" 2 XCCL_TRANSPORT=socket

# A partner dies in the third all-reduce (fault_victim: 1 MiB, here by
# recursive doubling, so by the lone launch).
XCCL_TIMEOUT=5 XCCL_ALGO=allreduce:rd XCCL_DEBUG=NONE XCCL_FAULT="rank=1,op=allreduce,seq=3,step=1,action=kill" \
  timeout 60 "$run" -n 2 --grace 4 "$victim" >"$tmp/out" 2>&1
line=$(grep "^rank 0:" "$tmp/out" | head -1)
echo "kill: $line"
case "$line" in
  *": ERROR after"*)
    echo "$line" | grep -q "allreduce #3" || bad "kill: rank 0's error does not name allreduce #3"
    echo "$line" | grep -q "rd, channel" || bad "kill: rank 0's error does not name recursive doubling"
    echo "$line" | grep -Eq "rank 1" || bad "kill: rank 0's error does not name rank 1"
    t=$(echo "$line" | sed -n 's/.*ERROR after \([0-9.]*\) s.*/\1/p')
    [ "$(echo "$t <= 9" | bc)" = 1 ] || bad "kill: rank 0 took $t s to fail" ;;
  *) bad "kill: rank 0 did not return an error" ;;
esac
exit $fail
