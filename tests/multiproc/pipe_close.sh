#!/bin/sh
# xccl-run and a closed output pipe (issue 19): `xccl-run ... | head` must end
# at once when head exits, with status 141 (or 0 when the job had already
# ended), and leave no rank behind. --grace is 60 s here, so a run that waited
# for it fails the time limit.
#   pipe_close.sh XCCL_RUN XCCL_PERF
run=$1 perf=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PIDS="$dir/pids"
limit_s=10
fail=0 runs=0 closed=0

now() { date +%s.%N; }

# run_case NAME WANT HEAD_LINES xccl-run-args...: one pipeline; WANT is the
# set of exit statuses allowed ("141" or "141 0").
run_case() {
  name=$1 want=$2 lines=$3
  shift 3
  : >"$PIDS"
  t0=$(now)
  { "$run" --grace 60 "$@" 2>"$dir/err"; echo $? >"$dir/status"; } | head -"$lines" >/dev/null
  took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  status=$(cat "$dir/status")
  runs=$((runs + 1))
  [ "$status" = 141 ] && closed=$((closed + 1))
  case " $want " in
    *" $status "*) ;;
    *) echo "FAIL: $name: xccl-run exited $status, want one of: $want"; cat "$dir/err"; fail=1 ;;
  esac
  awk -v t="$took" -v l="$limit_s" 'BEGIN { exit !(t < l) }' ||
    { echo "FAIL: $name: took $took s (limit $limit_s s, grace 60 s)"; cat "$dir/err"; fail=1; }
  for pid in $(cat "$PIDS"); do
    kill -0 "$pid" 2>/dev/null && { echo "FAIL: $name: rank process $pid is still running"; kill -9 "$pid"; fail=1; }
  done
  n=$(grep -c "output pipe was closed" "$dir/err")
  if [ "$status" = 141 ] && [ "$n" != 1 ]; then
    echo "FAIL: $name: $n lines say the output pipe was closed, want 1"; cat "$dir/err"; fail=1
  fi
}

# Each rank records its pid (exec keeps it), then becomes the program.
printf '%s\n' 'echo $$ >>"$PIDS"' 'exec "$@"' >"$dir/rank.sh"
rank="sh $dir/rank.sh"

# 1. The pipeline of the issue, bounded: xccl-perf's header fills head.
for i in 1 2 3 4 5 6; do
  n=$((2 + i % 2))
  run_case "perf n=$n #$i" "141 0" 3 -n $n $rank "$perf" allreduce -b 8 -e 8 -n 1
done
# 2. Rank 0 writes until the pipe closes while rank 1 would run on for 30 s:
#    xccl-run must stop rank 1 at once, not after the grace.
run_case "yes + sleep" 141 1 -n 2 $rank sh -c '[ "$XCCL_RANK" = 0 ] && exec yes; exec sleep 30'
# 3. With --prefix the ranks write to xccl-run, whose own write fails (EPIPE).
run_case "prefix" 141 1 -p -n 2 $rank yes

[ $fail -eq 0 ] && echo "pipe_close: OK ($runs runs, $closed ended by the closed pipe with 141, the rest 0)"
exit $fail
