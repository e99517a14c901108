#!/usr/bin/env bash
# Which memory shared-memory connections live in (issue 19): by default
# memory without a name (a rank's mappings show memfd:xccl-shm, and /dev/shm
# never holds a segment of the job); with XCCL_SHM_MEMFD=0 named segments
# (/dev/shm/xccl-<pid>-..., unlinked once mapped, so "(deleted)" in the
# mappings). Each job is 2 ranks running all-reduces long enough to look at
# rank 0's /proc/<pid>/maps while it runs.
#   shm_kind.sh XCCL_RUN XCCL_PERF
set -u
run=$1 perf=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PIDS="$dir/pids"
printf '%s\n' 'echo $$ >>"$PIDS"' 'exec "$@"' >"$dir/rank.sh"
fail=0

# look MEMFD_SETTING WANT: WANT is memfd or named.
look() {
  : >"$PIDS"
  XCCL_SHM_MEMFD=$1 timeout 60 "$run" -n 2 bash "$dir/rank.sh" "$perf" allreduce -b 64K -e 64K -n 200000 -w 1 \
    >/dev/null 2>&1 &
  job=$!
  seen="" named_file=""
  for _ in $(seq 100); do # at most ~10 s for the connections to appear
    sleep 0.1
    pid=$(head -1 "$PIDS" 2>/dev/null)
    [ -n "$pid" ] || continue
    maps=$(cat /proc/"$pid"/maps 2>/dev/null)
    ls /dev/shm/xccl-"$pid"-* >/dev/null 2>&1 && named_file=yes
    if grep -q "memfd:xccl-shm" <<<"$maps"; then seen=memfd; break; fi
    if grep -q "/dev/shm/xccl-$pid-.* (deleted)" <<<"$maps"; then seen=named; break; fi
  done
  kill -TERM "$job" 2>/dev/null
  for pid in $(cat "$PIDS"); do kill -9 "$pid" 2>/dev/null; done
  wait "$job" 2>/dev/null
  if [ "$seen" != "$2" ]; then
    echo "FAIL: XCCL_SHM_MEMFD=$1: rank 0's shared memory is '${seen:-not found}', want $2"
    fail=1
  fi
  if [ "$2" = memfd ] && [ -n "$named_file" ]; then
    echo "FAIL: XCCL_SHM_MEMFD=$1: a segment of rank 0 appeared in /dev/shm"
    fail=1
  fi
  for pid in $(cat "$PIDS"); do rm -f /dev/shm/xccl-"$pid"-*; done # the job was killed: a named one may stay
}

look 1 memfd
look 0 named
[ $fail -eq 0 ] && echo "shm_kind: OK (memory without a name by default, named segments with XCCL_SHM_MEMFD=0)"
exit $fail
