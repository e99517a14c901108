#!/usr/bin/env bash
# XCCL_CPU_BIND (comm.c's comm_bind_cpu): where a host's ranks outnumber the
# CPUs they share, each binds to one CPU, local rank modulo the CPUs. The
# ranks run under taskset on two CPUs of this machine's, so the case is the
# same on any machine with two or more. Checks, every result checked by
# xccl-perf -c 1 (its #wrong column):
#   - 3 ranks on 2 CPUs: each rank says it binds, local ranks 0, 1, 2 to
#     the first, the second and the first CPU;
#   - XCCL_CPU_BIND=0: none does;
#   - 2 ranks on 2 CPUs (not outnumbered): none does.
#   cpu_bind.sh XCCL_RUN XCCL_PERF
set -u
run=$1 perf=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v taskset >/dev/null || { echo "SKIP: taskset (util-linux) is not installed"; exit 77; }
cpus=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done)
c0=$(echo "$cpus" | sed -n 1p) c1=$(echo "$cpus" | sed -n 2p)
[ -n "$c1" ] || { echo "SKIP: this process may run on one CPU only (two are needed)"; exit 77; }
fail=0

# case NAME RANKS [ENV=VALUE...]: sets $binds (the lines, rank and CPU) and checks the results
case_run() {
  local name=$1 n=$2
  shift 2
  env XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT "$@" timeout 120 taskset -c "$c0,$c1" "$run" -n "$n" \
    "$perf" allreduce -b 8 -e 64K -f 8 -n 20 -w 2 -c 1 >"$tmp/out" 2>&1
  local rc=$? wrong
  binds=$(sed -n 's/.*rank \([0-9]*\): .* now runs on CPU \([0-9]*\) only.*/\1 \2/p' "$tmp/out" | sort -n)
  wrong=$(awk '$1 ~ /^[0-9]+$/ && $NF != "0"' "$tmp/out" | wc -l)
  echo "$name: $n ranks on CPUs $c0,$c1, rc $rc, bound: $(echo $binds), sizes with wrong results $wrong"
  if [ "$rc" != 0 ] || [ "$wrong" != 0 ]; then
    echo "FAIL: $name: rc $rc, $wrong sizes wrong"; tail -n 15 "$tmp/out"; fail=1
  fi
}

case_run outnumbered 3
want=$(printf '0 %s\n1 %s\n2 %s' "$c0" "$c1" "$c0")
[ "$binds" = "$want" ] || { echo "FAIL: outnumbered: want bound $(echo $want)"; fail=1; }
case_run knob_off 3 XCCL_CPU_BIND=0
[ -z "$binds" ] || { echo "FAIL: knob_off: a rank bound with XCCL_CPU_BIND=0"; fail=1; }
case_run not_outnumbered 2
[ -z "$binds" ] || { echo "FAIL: not_outnumbered: a rank bound with a CPU each"; fail=1; }
exit $fail
