#!/bin/sh
# /init of the Soft-RoCE VMs (built by rxe_vm.sh and rxe_pair.sh). Brings up
# rdma_rxe on a VM-internal veth link (or, in the two-guest rig, on the
# virtual NIC), runs /plan.sh, and reports on the serial console:
#   XCCL-RXE-RESULT <name> PASS|FAIL|SOFTFAIL rc=<n> <seconds>s   one line per test
#   XCCL-RXE-EXIT <failures>                                  at the very end
# then powers off. The one-guest VM has no NIC; the pair's NIC reaches only
# the other guest.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /tmp
mount -t tmpfs -o size=1g tmpfs /dev/shm
# /tmp stays part of the initramfs (already in memory): a build tree under
# /tmp (a CI clone there) was copied in at its own path and must stay visible.
dmesg -n 1
. /rxe_env

say() { echo "XCCL-RXE $*"; }
for m in $(cat /modules.list); do
  insmod /lib/modules/$m.ko || say "insmod $m failed"
done
"$IP" link set lo up
# xccl_node=N on the kernel command line: guest N of the two-guest rig
# (rxe_pair.sh), rxe on its virtual NIC eth0 at 10.47.0.(N+1). Otherwise the
# one-guest rig: rxe on a veth pair inside the VM.
NODE=$(sed -n 's/.*xccl_node=\([0-9]\).*/\1/p' /proc/cmdline)
if [ -n "$NODE" ]; then
  hostname "xccl-vm$NODE" # two hosts to xccl: the host identity includes the name
  i=0
  while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
  "$IP" addr add 10.47.0.$((NODE + 1))/24 dev eth0
  "$IP" link set eth0 up
  "$RDMA" link add rxe0 type rxe netdev eth0 || say "rdma link add failed"
  if [ -e /sys/class/net/eth1 ]; then # the second rail
    "$IP" addr add 10.48.0.$((NODE + 1))/24 dev eth1
    "$IP" link set eth1 up
    "$RDMA" link add rxe1 type rxe netdev eth1 || say "rdma link add rxe1 failed"
  fi
else
  hostname xccl-vm
  "$IP" link add va type veth peer name vb
  "$IP" addr add 169.254.1.1/24 dev va
  "$IP" link set va up
  "$IP" link set vb up
  "$RDMA" link add rxe0 type rxe netdev va || say "rdma link add failed"
fi
say "kernel $(uname -r), $(nproc) cpus; verbs devices: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"

fails=0
ran=0
# t NAME CMD...: runs CMD; PASS on 0, FAIL otherwise (a skip, 77, is a failure
# here: the VM exists to have what tests skip for elsewhere).
t() {
  name=$1
  shift
  say "START $name"
  start=$(date +%s)
  timeout "${T_LIMIT:-300}" "$@" >/tmp/out 2>&1
  rc=$?
  tail -n "${T_TAIL:-60}" /tmp/out
  case $rc in
    0) st=PASS ;;
    *) st=FAIL; fails=$((fails + 1)) ;;
  esac
  # T_SOFT=1: a failure is reported (SOFTFAIL) but not counted.
  [ "$st" = FAIL ] && [ "${T_SOFT:-0}" = 1 ] && st=SOFTFAIL && fails=$((fails - 1))
  ran=$((ran + 1))
  echo "XCCL-RXE-RESULT $name $st rc=$rc $(($(date +%s) - start))s"
}
# tx NAME PATTERN CMD...: CMD must fail, and its output must contain PATTERN.
tx() {
  name=$1
  pat=$2
  shift 2
  say "START $name (must fail with: $pat)"
  start=$(date +%s)
  timeout "${T_LIMIT:-300}" "$@" >/tmp/out 2>&1
  rc=$?
  grep -m 3 -i -- "$pat" /tmp/out
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -i -- "$pat" /tmp/out; then
    st=PASS
  else
    st=FAIL
    fails=$((fails + 1))
    tail -n "${T_TAIL:-60}" /tmp/out
  fi
  ran=$((ran + 1))
  echo "XCCL-RXE-RESULT $name $st rc=$rc $(($(date +%s) - start))s"
}

if [ -d /sys/class/infiniband/rxe0 ]; then
  . /plan.sh
else
  say "no rxe0 device: Soft-RoCE did not come up"
  fails=$((fails + 1))
fi

if [ -n "${GCDA_DIR:-}" ]; then
  # Coverage counters travel out as base64 of a tar.gz, between two markers.
  cd "$GCDA_DIR" && find . -name '*.gcda' >/tmp/gcda.list
  say "gcda files: $(wc -l </tmp/gcda.list)"
  echo "XCCL-RXE-GCDA-BEGIN"
  tar czf - $(cat /tmp/gcda.list) | base64 # busybox tar has no -T
  echo "XCCL-RXE-GCDA-END"
fi
echo "XCCL-RXE-EXIT $fails ran=$ran"
sync
poweroff -f
