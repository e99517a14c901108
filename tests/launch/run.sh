#!/bin/sh
# run.sh LAUNCHER DIR PYTHONPATH PROGRAM [ARGS...] — starts PROGRAM as 4 ranks
# under a real launcher with no XCCL_* rendezvous variable, and checks that
# it succeeded and that every rank's xcclCommInitFromEnv said it found its
# job through that launcher's rendezvous (XCCL_DEBUG=INFO, one log per rank).
#   LAUNCHER: torchrun (default static rendezvous: the agent store),
#             torchrun_standalone, mpirun (PMIx), srun (no PMI), srun_pmix
#   PROGRAM "python": /usr/bin/python3 ARGS, with PYTHONPATH (the xccl
#             package of the build tree); skipped until that package exists.
# Exits 77 with the reason when the launcher (or root, for srun) is missing.
set -u
launcher=$1
dir=$2/$1.$$
pypath=$3
shift 3

skip() { echo "SKIPPED: $1"; exit 77; }
fail() { echo "FAILED: $1"; exit 1; }

# Only the launcher may say where the job meets: drop every XCCL_* variable
# but the log and dump settings this script makes.
for v in $(env | sed -n 's/^\(XCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do
  [ "$v" = XCCL_DUMP_DIR ] || unset "$v"
done
rm -rf "$dir"
mkdir -p "$dir"
export XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT XCCL_DEBUG_FILE="$dir/xccl.%h.%p.log" XCCL_TIMEOUT=40
# ASan builds: whole stacks for allocations, so that what libpmix keeps after
# PMIx_Finalize (its frames cross libc's, which have no frame pointers) meets
# the libpmix line of tests/lsan.supp. Other builds ignore the variable.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0

if [ "$1" = python ]; then
  shift
  py=/usr/bin/python3
  [ -x $py ] || skip "no $py (Debian's python3)"
  why=$(PYTHONPATH=$pypath${PYTHONPATH:+:$PYTHONPATH} $py -c 'import xccl' 2>&1) ||
    skip "python package xccl not built (in $pypath: $(echo "$why" | tail -n 1))"
  export PYTHONPATH=$pypath${PYTHONPATH:+:$PYTHONPATH}
  set -- $py "$@"
fi

case $launcher in
torchrun | torchrun_standalone)
  command -v torchrun >/dev/null 2>&1 || skip "no torchrun (Debian: apt-get install python3-torch)"
  /usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null || skip "torchrun's python3 has no torch.distributed"
  # --redirects/--tee: torchrun of torch 1.13 on Python 3.11 needs them to show the workers' output.
  opts="--nproc_per_node 4 --redirects 1 --tee 1 --no_python"
  # Default static rendezvous, on a port that was free rather than 29500, which
  # another torch job on this host may hold.
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  [ $launcher = torchrun ] && opts="--master_port $port $opts"
  [ $launcher = torchrun_standalone ] && opts="--standalone $opts"
  set -- torchrun $opts "$@"
  ;;
mpirun)
  command -v mpirun >/dev/null 2>&1 || skip "no mpirun (Debian: apt-get install openmpi-bin)"
  root=
  [ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
  set -- mpirun -np 4 --oversubscribe --bind-to none $root "$@"
  ;;
srun | srun_pmix)
  slurm=$(dirname "$dir")/slurm
  [ -s "$slurm/env" ] || skip "no Slurm of the tests running ($(cat "$slurm/skip" 2>/dev/null || echo 'launch_slurm_start did not run'))"
  export $(cat "$slurm/env")
  mpi=
  [ $launcher = srun_pmix ] && mpi=--mpi=pmix
  set -- srun -n 4 --overcommit $mpi -t 2 "$@"
  ;;
*) fail "unknown launcher $launcher" ;;
esac

case $launcher in
torchrun) want="from torchrun, rendezvous: torchrun's agent store" ;;
torchrun_standalone) want="from torchrun, rendezvous: root at .* (MASTER_ADDR:MASTER_PORT)" ;;
mpirun) want="from Open MPI (PMIx), rendezvous: PMIx" ;;
srun) want="from Slurm, rendezvous: Slurm job" ;;
srun_pmix) want="from Slurm (PMIx), rendezvous: PMIx" ;;
esac

echo "+ $*"
start=$(date +%s.%N)
timeout -k 5 100 "$@" > "$dir/out" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$dir/out"
echo "$launcher: exit $rc after $(awk "BEGIN { printf \"%.1f\", $end - $start }") s"
[ $rc -eq 0 ] || { tail -n 20 "$dir"/xccl.*.log 2>/dev/null; fail "$launcher exited with $rc"; }
lines=$(cat "$dir"/xccl.*.log 2>/dev/null | grep "xcclCommInitFromEnv: rank" || true)
echo "$lines" | sed 's/^[^ ]* xccl INFO INIT [^ ]* /  /'
found=$(echo "$lines" | grep -c "$want")
inits=$(echo "$lines" | grep -c "xcclCommInitFromEnv: rank")
[ "$found" -ge 4 ] && [ "$found" -eq "$inits" ] ||
  fail "$found of $inits calls of xcclCommInitFromEnv (at least 4 wanted) found their job $want"
rm -rf "$dir"
echo "PASSED: $launcher"
