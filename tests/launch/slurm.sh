#!/bin/sh
# slurm.sh start|stop DIR — a single-node Slurm of its own for the srun tests
# (tests/launch/tests.cmake): munged on a socket in DIR, slurmctld and slurmd
# with a ~20-line slurm.conf in DIR on ports that were free, MpiDefault=none.
# start writes DIR/env (SLURM_CONF=...) once the node is idle; on any failure
# it stops what it started. stop ends the daemons by the pids in their pid
# files and removes DIR. Needs root (slurmd runs the tasks as their user);
# otherwise exits 77 with the reason, also written to DIR/skip for the cases.
set -u
cmd=$1
mkdir -p "$2" && dir=$(cd "$2" && pwd) || exit 1 # the daemons chdir to /: absolute paths

# TERM to all three at once (each takes 1-2 s to go), KILL what is left after 5 s.
stop_all() {
  pids=
  for d in slurmd slurmctld munged; do
    f=$dir/$d.pid
    [ -s "$f" ] && pids="$pids $(cat "$f")"
  done
  for pid in $pids; do kill "$pid" 2>/dev/null; done
  i=0
  for pid in $pids; do
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null
  done
  rm -f "$dir"/*.pid
}

skip() {
  mkdir -p "$dir"
  echo "$1" > "$dir/skip"
  echo "SKIPPED: $1"
  exit 77
}

# A TCP port nothing listens on now, from 20000 + a number of this shell.
free_port() {
  p=$((20000 + ($$ * 7 + $1 * 131) % 9000))
  while ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; do p=$((p + 1)); done
  echo $p
}

case $cmd in
stop)
  stop_all
  rm -rf "$dir"
  exit 0
  ;;
start) ;;
*) echo "usage: slurm.sh start|stop DIR" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || skip "not root: slurmd must run as root to start tasks"
for b in munged slurmctld slurmd srun sinfo; do
  command -v $b >/dev/null 2>&1 || skip "no $b (Debian: apt-get install slurm-wlm munge)"
done
[ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key (installing munge makes it)"

[ -d "$dir" ] && stop_all
rm -rf "$dir"
mkdir -p "$dir/spool" "$dir/state"
trap 'stop_all' EXIT
host=$(hostname -s)
cpus=$(nproc)
mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
mem=$(( ${mem:-2048} / 2 ))
cat > "$dir/slurm.conf" <<EOF
ClusterName=xccltest
SlurmctldHost=$host
SlurmctldPort=$(free_port 1)
SlurmdPort=$(free_port 2)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/builtin
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$dir/slurm.conf
munged --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
  --seed-file="$dir/munged.seed" --force 2>"$dir/munged.err" || {
  echo "munged did not start: $(cat "$dir/munged.err")"; exit 1; }
slurmctld -c -i || { echo "slurmctld did not start: $(tail -5 "$dir/slurmctld.log")"; exit 1; }
slurmd -c || { echo "slurmd did not start: $(tail -5 "$dir/slurmd.log")"; exit 1; }
end=$(($(date +%s) + 20))
until timeout 3 sinfo -h -o %t 2>/dev/null | grep -q idle; do
  if [ "$(date +%s)" -ge $end ]; then
    echo "the node did not become idle in 20 s: sinfo says '$(sinfo -h -o '%t %E' 2>&1)'"
    tail -5 "$dir/slurmctld.log" "$dir/slurmd.log"
    exit 1
  fi
  sleep 0.2
done
echo "SLURM_CONF=$SLURM_CONF" > "$dir/env"
trap - EXIT
echo "Slurm up in $dir: $(sinfo -h -o '%P %D %t')"
