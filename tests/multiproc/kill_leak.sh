#!/usr/bin/env bash
# Whatever kills a rank, nothing is left behind (issue 19). Runs jobs of 2 or
# 3 ranks over shared memory and over sockets, and ends each at a random
# moment of init, connection set-up or its collectives: SIGKILL to one rank,
# or its output pipe closed (head exits; the rank dies of SIGPIPE and
# xccl-run stops the others with SIGTERM). After each job: no rank process
# is left, and /dev/shm holds no segment named by a rank of it
# (xccl-<pid>-...).
#   kill_leak.sh XCCL_RUN XCCL_PERF [ITERATIONS]     (default 200)
set -u
run=$1 perf=$2 iters=${3:-200}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PIDS="$dir/pids"
printf '%s\n' 'echo $$ >>"$PIDS"' 'exec "$@"' >"$dir/rank.sh" # exec keeps the pid
RANDOM=${XCCL_TEST_SEED:-1}                                   # the same moments every run
fail=0 leaked=0 left=0 slow=0
declare -A ends=()

for i in $(seq "$iters"); do
  : >"$PIDS"
  n=$((2 + RANDOM % 2))
  if [ $((i % 2)) = 0 ]; then transport=socket; else transport=shm; fi
  coll=allreduce
  [ $((RANDOM % 3)) = 0 ] && coll=alltoall # point-to-point connections too
  how=kill
  [ $((RANDOM % 4)) = 0 ] && how=pipe
  delay_ms=$((RANDOM % 400))
  t0=$(date +%s%N)
  if [ "$how" = pipe ]; then
    XCCL_TRANSPORT=$transport timeout 60 "$run" --grace 1 -n "$n" bash "$dir/rank.sh" "$perf" "$coll" -b 1K -e 4M \
      -n 3 -w 1 2>/dev/null | head -c $((RANDOM % 1200)) >/dev/null
  else
    XCCL_TRANSPORT=$transport timeout 60 "$run" --grace 1 -n "$n" bash "$dir/rank.sh" "$perf" "$coll" -b 1K -e 4M \
      -n 3 -w 1 >/dev/null 2>&1 &
    job=$!
    sleep "$(printf '0.%03d' "$delay_ms")"
    mapfile -t pids <"$PIDS"
    if [ ${#pids[@]} -gt 0 ]; then kill -9 "${pids[RANDOM % ${#pids[@]}]}" 2>/dev/null; fi
    wait "$job"
  fi
  took_ms=$((($(date +%s%N) - t0) / 1000000))
  [ "$took_ms" -gt 20000 ] && { echo "FAIL: #$i ($how, $transport, n=$n): the job took $took_ms ms"; slow=1; }
  ends[$transport/$how]=$((${ends[$transport/$how]:-0} + 1))
  # Ranks that xccl-run stopped are reaped by it before it exits; give the
  # kernel a moment to finish tearing a killed one down.
  for pid in $(cat "$PIDS"); do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "FAIL: #$i ($how, $transport, n=$n, after ${delay_ms} ms): rank process $pid is still running"
      kill -9 "$pid" 2>/dev/null
      left=$((left + 1))
    fi
    for seg in /dev/shm/xccl-"$pid"-*; do
      [ -e "$seg" ] || continue
      echo "FAIL: #$i ($how, $transport, n=$n, after ${delay_ms} ms): $seg was left behind"
      rm -f "$seg"
      leaked=$((leaked + 1))
    done
  done
done

summary=""
for k in "${!ends[@]}"; do summary="$summary $k=${ends[$k]}"; done
echo "kill_leak: $iters jobs ended early ($summary ); $leaked segments left in /dev/shm, $left rank processes left"
[ $leaked -eq 0 ] && [ $left -eq 0 ] && [ $slow -eq 0 ] || fail=1
exit $fail
