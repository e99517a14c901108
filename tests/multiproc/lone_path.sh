#!/usr/bin/env bash
# The lone all-reduce (issue 29): an all-reduce by recursive doubling, alone
# outside any group, whose partners are all in shared memory, runs without
# a group launch (group.c's launch_lone, algo_rd.c's rd_lone; algo_line.c's
# line_lone likewise). Checks, with
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

# kill_case NAME WORD [ENV=VALUE...]: a partner (rank 1) dies at its first
# send of the third all-reduce of fault_victim (1 MiB unless
# TEST_VICTIM_COUNT says otherwise); rank 0 must fail within XCCL_TIMEOUT +
# grace, naming the all-reduce, WORD (the algorithm) and rank 1.
kill_case() {
  local name=$1 word=$2
  shift 2
  env XCCL_TIMEOUT=5 XCCL_DEBUG=NONE XCCL_FAULT="rank=1,op=allreduce,seq=3,step=0,action=kill" "$@" \
    timeout 60 "$run" -n 2 --grace 4 "$victim" >"$tmp/out" 2>&1
  local line t
  line=$(grep "^rank 0:" "$tmp/out" | head -1)
  echo "$name: $line"
  case "$line" in
    *": ERROR after"*)
      echo "$line" | grep -q "allreduce #3" || bad "$name: rank 0's error does not name allreduce #3"
      echo "$line" | grep -q "$word" || bad "$name: rank 0's error does not name $word"
      echo "$line" | grep -Eq "rank 1" || bad "$name: rank 0's error does not name rank 1"
      t=$(echo "$line" | sed -n 's/.*ERROR after \([0-9.]*\) s.*/\1/p')
      [ "$(echo "$t <= 9" | bc)" = 1 ] || bad "$name: rank 0 took $t s to fail" ;;
    *) bad "$name: rank 0 did not return an error" ;;
  esac
}
kill_case kill "rd, channel" XCCL_ALGO=allreduce:rd
# 2 floats: the tuner picks line on shared memory; the partner dies as it
# writes its half of the line.
kill_case kill-line "line, channel" TEST_VICTIM_COUNT=2
exit $fail
