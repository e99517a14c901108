#!/usr/bin/env bash
# In-flight state dumps and xccl-stuck on real jobs of 4 ranks.
#   test_dump.sh stall  XCCL_RUN FAULT_VICTIM   XCCL_STUCK
#       rank 2 stops (XCCL_FAULT action=stall: SIGSTOP) in all-reduce #3; the
#       others fail after XCCL_TIMEOUT (the neighbour times out naming rank 2,
#       the ones further away fail naming their own neighbour). Each survivor
#       must have written its dump, rank 2 none, and xccl-stuck must name
#       rank 2 as the rank that everyone waits on.
#   test_dump.sh signal XCCL_RUN TEST_DUMP_RANK XCCL_STUCK [COUNT [p2p]]
#       rank 2 holds back from all-reduce #3 (p2p: a ring of sends and
#       receives in a group) while the others block in it;
#       every rank gets XCCL_DUMP_SIGNAL=USR1 and must write a dump,
#       xccl-stuck must name rank 2 (in no operation), and once rank 2 joins
#       the job must complete with right results: the signal harmed nothing.
set -u
mode=$1 run=$2 prog=$3 stuck=$4 count=${5:-1048576} what=${6:-}
tmp=$(mktemp -d)
job=""
cleanup() {
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    kill -TERM "$job" 2>/dev/null # xccl-run passes it on to the ranks
    sleep 3
    kill -KILL "$job" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/out "$tmp"/stuck "$tmp"/dumps/*.dump; do
    [ -f "$f" ] && { echo "--- $f"; sed 's/^/    /' "$f" | tail -n 30; }
  done
  exit 1
}
# The dumps are JSON (src/observe/dump.h); jq checks their content where it
# is installed (xccl-stuck reads them either way).
jq=$(command -v jq || true)
has() { # FILE JQ-EXPRESSION: true when the expression holds (or without jq)
  [ -z "$jq" ] || "$jq" -e "$2" "$1" >/dev/null 2>&1
}
[ -n "$jq" ] || echo "note: no jq: the dumps' content is not checked, only xccl-stuck's verdict"
mkdir -p "$tmp/dumps"
export XCCL_DUMP_DIR="$tmp/dumps"

case "$mode" in
stall)
  XCCL_TIMEOUT=3 XCCL_FAULT="rank=2,op=allreduce,seq=3,step=1,action=stall" \
    timeout 120 "$run" -n 4 --grace 4 "$prog" >"$tmp/out" 2>&1
  for r in 0 1 3; do
    grep -q "^rank $r: ERROR" "$tmp/out" || fail "rank $r did not fail with an error"
    f=$(ls "$tmp"/dumps/xccl-*-r$r.dump 2>/dev/null)
    [ -n "$f" ] || fail "rank $r wrote no dump"
    grep -q "in-flight state written to $f" "$tmp/out" || fail "rank $r did not log its dump's path"
    has "$f" '.process.reason == "timeout" or .process.reason == "error"' || fail "rank $r's dump does not give a timeout or error as its reason"
    has "$f" '.op.name == "allreduce" and .op.seq == 3' || fail "rank $r's dump does not name all-reduce #3"
    has "$f" '(.waits | length) > 0 and (.waits[0].peer | type) == "number"' || fail "rank $r's dump names no wait"
  done
  ls "$tmp"/dumps/xccl-*-r2.dump >/dev/null 2>&1 && fail "the stopped rank 2 wrote a dump"
  ;;
signal)
  XCCL_TIMEOUT=60 XCCL_DUMP_SIGNAL=USR1 timeout 150 "$run" -n 4 --grace 5 "$prog" "$tmp" "$count" 2 $what \
    >"$tmp/out" 2>&1 &
  job=$!
  for i in $(seq 300); do
    [ "$(ls "$tmp"/pid.* 2>/dev/null | wc -l)" = 4 ] && break
    kill -0 "$job" 2>/dev/null || fail "the job ended before every rank wrote its pid"
    sleep 0.1
  done
  [ "$(ls "$tmp"/pid.* 2>/dev/null | wc -l)" = 4 ] || fail "the ranks did not all start within 30 s"
  sleep 1 # ranks 0, 1 and 3 are inside all-reduce #3, waiting
  for r in 0 1 2 3; do
    kill -USR1 "$(cat "$tmp/pid.$r")" || fail "cannot signal rank $r"
  done
  for i in $(seq 100); do
    [ "$(ls "$tmp"/dumps/xccl-*.dump 2>/dev/null | wc -l)" = 4 ] && break
    sleep 0.1
  done
  for r in 0 1 2 3; do
    f=$(ls "$tmp"/dumps/xccl-*-r$r.dump 2>/dev/null)
    [ -n "$f" ] || fail "rank $r wrote no dump on the signal"
    has "$f" '.process.reason == "signal"' || fail "rank $r's dump does not say it came from the signal"
  done
  has "$(ls "$tmp"/dumps/xccl-*-r2.dump)" '.state.run == "idle" and .state.done == 2' || fail "rank 2's dump does not say it is idle after #2"
  for r in 0 1 3; do
    f=$(ls "$tmp"/dumps/xccl-*-r$r.dump)
    has "$f" '.state.run == "running" and .state.done == 2' || fail "rank $r's dump does not say it runs #3"
    if [ "$what" = p2p ]; then
      has "$f" '.op.name == "send" and .op.seq == 3 and .op.nops == 2' || fail "rank $r's dump does not name its group of send #3 and a receive"
    fi
  done
  ;;
*)
  echo "usage: test_dump.sh stall|signal XCCL_RUN PROG XCCL_STUCK [COUNT [p2p]]" >&2
  exit 2
  ;;
esac

"$stuck" "$tmp/dumps" >"$tmp/stuck" 2>&1
rc=$?
cat "$tmp/stuck"
[ $rc = 0 ] || fail "xccl-stuck exited $rc, expected 0 (a verdict)"
head -1 "$tmp/stuck" | grep -q "^stuck: rank 2 (pid [0-9]* on host [^ ]*): ranks [0-9,]* wait for it" ||
  fail "xccl-stuck's verdict does not name rank 2"
if [ "$mode" = stall ]; then
  head -1 "$tmp/stuck" | grep -q "it wrote no dump (stopped or dead)" || fail "the verdict does not say rank 2 wrote no dump"
else
  head -1 "$tmp/stuck" | grep -q "it is in no operation" || fail "the verdict does not say rank 2 is in no operation"
  touch "$tmp/go"
  wait "$job"
  rc=$?
  job=""
  [ $rc = 0 ] || fail "the job did not complete after the dumps (xccl-run exited $rc)"
  [ "$(grep -c ": OK$" "$tmp/out")" = 4 ] || fail "not every rank finished right after the signal"
fi
echo "dump $mode: OK"
