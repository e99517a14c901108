#!/bin/bash
# rxe_vm.sh — xccl's ib transport on real verbs: Soft-RoCE (rdma_rxe) in a VM.
#
#   rxe_vm.sh BUILD_DIR [PLAN]
#
# Boots Debian's stock kernel under qemu (software emulation, no NIC), with an
# initramfs that holds busybox, the RDMA kernel modules, rdma-core's libraries
# and the rxe provider, and the test programs of BUILD_DIR at the same paths;
# also sch_netem, tc and bash, for the netem cells of tests/netns/netns_faults.sh
# (the host kernel may have no netem; this one has it as a module).
# Its /init (vm_init.sh) brings up rxe0 on a veth link inside the VM and runs
# PLAN (default: plan.sh beside this script), which prints one
# "XCCL-RXE-RESULT name PASS|FAIL" line per test and a final
# "XCCL-RXE-EXIT n" on the serial console; this script reads them back.
#
# Exit: 0 all passed, 1 a failure (or no exit marker: the VM crashed or hung),
# 77 skipped with the reason (no qemu / kernel package / rdma-core here and
# none can be installed, or BUILD_DIR was built without verbs).
#
# Environment:
#   XCCL_RXE_CACHE    where the kernel package is kept (BUILD_DIR/rxe-cache)
#   XCCL_RXE_TIMEOUT  seconds the VM may run (default 540)
#   XCCL_RXE_GCOV=1   BUILD_DIR is a coverage build: carry the .gcda files
#                     out (base64 on the console) into BUILD_DIR
#   XCCL_RXE_SMP      virtual CPUs (default 2)
set -u
me=rxe_vm
. "$(dirname "$0")/vm_lib.sh"

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [PLAN]" >&2; exit 2; }
vm_begin "$1"
plan=${2:-$here/plan.sh}
[ -f "$plan" ] || fail "no plan '$plan'"
vm_timeout=${XCCL_RXE_TIMEOUT:-540}
vm_host_packages
vm_kernel

# ---- Initramfs ----------------------------------------------------------------
work=$B/rxe-vm
gcda_dir=
[ "${XCCL_RXE_GCOV:-0}" = 1 ] && gcda_dir=$B
# Kernel TLS (net/tls and the gcm(aes) it asks the crypto API for) for the plan's kTLS cells.
vm_root "$work/root" crypto/gf128mul crypto/ghash-generic crypto/ctr crypto/gcm net/tls/tls
if [ -n "$gcda_dir" ]; then
  find "$B" -name '*.gcda' -delete
  # The counters are written next to the objects, under the same paths.
  (cd "$B" && find . -name '*.gcno' -printf '%h\n' | sort -u | while read -r d; do mkdir -p "$root$B/$d"; done)
fi
cp "$plan" "$root/plan.sh" || fail "cannot copy the plan"
initrd=$work/initrd.gz
vm_pack "$root" "$initrd"
say "initramfs $(du -h "$initrd" | cut -f1), kernel $kv"

# ---- Boot -----------------------------------------------------------------------
log=$work/console.log
say "booting (qemu -accel tcg, at most $vm_timeout s); console in $log"
t0=$(date +%s)
vm_qemu "$log" "$vm_timeout" "" -m 3072 -smp "${XCCL_RXE_SMP:-2}" -nic none
qrc=$?
say "VM ran $(($(date +%s) - t0)) s (qemu exit $qrc)"

# ---- Results ----------------------------------------------------------------------
if [ -n "$gcda_dir" ] && grep -q '^XCCL-RXE-GCDA-END' "$log"; then
  sed -n '/^XCCL-RXE-GCDA-BEGIN/,/^XCCL-RXE-GCDA-END/p' "$log" | sed '1d;$d' | base64 -d | tar xzf - -C "$B" &&
    say "coverage counters unpacked into $B" || say "could not unpack the coverage counters"
fi
vm_results "$log" "$qrc" "$vm_timeout" || exit 1
say "all $(grep -c '^XCCL-RXE-RESULT .* PASS ' "$log") tests passed on Soft-RoCE"
exit 0
