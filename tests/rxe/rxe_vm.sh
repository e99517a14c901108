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
SKIP=77
me=rxe_vm
say() { echo "$me: $*"; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }
fail() { echo "$me: FAIL: $*" >&2; exit 1; }

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [PLAN]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd -P)
B=$(cd "$1" && pwd -P) || fail "no build directory '$1'"
plan=${2:-$here/plan.sh}
[ -f "$plan" ] || fail "no plan '$plan'"
cache=${XCCL_RXE_CACHE:-$B/rxe-cache}
vm_timeout=${XCCL_RXE_TIMEOUT:-540}
arch=$(uname -m)
[ "$arch" = x86_64 ] || skip "the rig boots an amd64 kernel; this host is $arch"

grep -q '^XCCL_HAVE_IB:[A-Z]*=\(ON\|1\|TRUE\)' "$B/CMakeCache.txt" 2>/dev/null ||
  skip "$B was built without the ib transport (libibverbs-dev and librdmacm-dev were not found)"

# ---- Host packages ----------------------------------------------------------
multiarch=/usr/lib/x86_64-linux-gnu
rxe_provider=$(ls $multiarch/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
is_static() { [ -x "$1" ] && ! ldd "$1" >/dev/null 2>&1; }
missing() {
  local m=()
  command -v qemu-system-x86_64 >/dev/null || m+=(qemu-system-x86)
  is_static /bin/busybox || m+=(busybox-static)
  command -v cpio >/dev/null || m+=(cpio)
  command -v rdma >/dev/null || m+=(iproute2)
  [ -n "$rxe_provider" ] || m+=(ibverbs-providers)
  echo "${m[@]}"
}
need=$(missing)
if [ -n "$need" ]; then
  [ "$(id -u)" -eq 0 ] || skip "needs packages: $need (install them, or run as root so the rig installs them)"
  say "installing $need"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 ||
    { timeout 120 apt-get update -qq >/dev/null 2>&1 &&
      timeout 300 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1; } ||
    skip "needs packages: $need, and apt-get could not install them (offline?)"
  rxe_provider=$(ls $multiarch/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
  need=$(missing)
  [ -z "$need" ] || skip "still missing after apt-get: $need"
fi

# ---- Kernel: Debian's stock 6.1 image has rdma_rxe as a module ------------
mkdir -p "$cache" || fail "cannot create $cache"
vmlinuz=$(ls "$cache"/k/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
if [ -z "$vmlinuz" ]; then
  pkgs() { apt-cache pkgnames linux-image-6.1.0- 2>/dev/null | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V; }
  pkg=$(pkgs | tail -n 1)
  if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
    timeout 120 apt-get update -qq >/dev/null 2>&1
    pkg=$(pkgs | tail -n 1)
  fi
  [ -n "$pkg" ] || skip "no linux-image-6.1.0-*-amd64 package known to apt (not Debian 12, or no archive)"
  say "downloading $pkg into $cache"
  (cd "$cache" && rm -f linux-image-*.deb && timeout 300 apt-get download "$pkg" >/dev/null 2>&1) ||
    skip "apt-get download $pkg failed (offline?)"
  rm -rf "$cache/k" && dpkg -x "$cache"/linux-image-*.deb "$cache/k" || fail "dpkg -x of $pkg failed"
  rm -f "$cache"/linux-image-*.deb
  vmlinuz=$(ls "$cache"/k/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
  [ -n "$vmlinuz" ] || fail "$pkg holds no vmlinuz"
fi
kv=${vmlinuz##*/vmlinuz-}
kmod=$cache/k/lib/modules/$kv/kernel

# ---- Initramfs ----------------------------------------------------------------
work=$B/rxe-vm
root=$work/root
rm -rf "$root" && mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc,lib/modules,root,run} || fail "cannot create $root"
modules="crypto/crc32_generic drivers/net/veth drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs
  net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel drivers/infiniband/sw/rxe/rdma_rxe fs/configfs/configfs
  drivers/infiniband/core/ib_cm drivers/infiniband/core/iw_cm drivers/infiniband/core/rdma_cm
  drivers/infiniband/core/rdma_ucm net/sched/sch_netem"
: >"$root/modules.list"
for m in $modules; do
  f=$kmod/$m.ko
  [ -f "$f" ] || { [ -f "$f.xz" ] && xz -dc "$f.xz" >"$root/lib/modules/${m##*/}.ko"; } || fail "kernel $kv has no $m"
  [ -f "$f" ] && cp "$f" "$root/lib/modules/"
  echo "${m##*/}" >>"$root/modules.list"
done

# A program or library with everything ldd says it loads, at the same paths.
copied=" "
copy_elf() {
  local f dep
  for f in "$@"; do
    case $copied in *" $f "*) continue ;; esac
    copied="$copied$f "
    mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f" || fail "cannot copy $f"
    for dep in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do copy_elf "$dep"; done
  done
}
copy_elf "$(command -v ip)" "$(command -v rdma)" "$rxe_provider"
# tc and bash for the netem cells (tests/netns/netns_faults.sh netem; sch_netem is above).
command -v tc >/dev/null || fail "no tc (iproute2) on this host"
copy_elf "$(command -v tc)" "$(command -v bash)"
libgcc=$(ls $multiarch/libgcc_s.so.1 /lib/x86_64-linux-gnu/libgcc_s.so.1 2>/dev/null | head -n 1)
[ -n "$libgcc" ] && copy_elf "$libgcc" # pthread_exit loads it at run time
mkdir -p "$root/etc/libibverbs.d" && cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/" ||
  fail "no /etc/libibverbs.d/rxe.driver (ibverbs-providers)"
for p in tests/test_net_conformance tests/test_allreduce tests/test_collectives tests/test_p2p tests/test_barrier \
  tests/test_fault tests/netns_victim tools/xccl-run tools/xccl-perf tools/xccl-info; do
  [ -x "$B/$p" ] || fail "$B/$p is not built (build everything before this test)"
  copy_elf "$B/$p"
done
# The GPUDirect cells (plan.sh section 7) need the stand-in CUDA runtime's test: CUDA builds only.
[ -x "$B/tests/test_gpu_coll_mock" ] && copy_elf "$B/tests/test_gpu_coll_mock"
gcda_dir=
if [ "${XCCL_RXE_GCOV:-0}" = 1 ]; then
  gcda_dir=$B
  find "$B" -name '*.gcda' -delete
  # The counters are written next to the objects, under the same paths.
  (cd "$B" && find . -name '*.gcno' -printf '%h\n' | sort -u | while read -r d; do mkdir -p "$root$B/$d"; done)
fi
# busybox for everything else (after the real programs, which win).
cp /bin/busybox "$root/bin/busybox" || fail "cannot copy busybox"
for applet in $(/bin/busybox --list); do
  for d in bin sbin usr/bin usr/sbin; do [ -e "$root/$d/$applet" ] && continue 2; done
  ln -s busybox "$root/bin/$applet"
done
cp "$here/vm_init.sh" "$root/init" && chmod +x "$root/init" || fail "cannot write /init"
cp "$plan" "$root/plan.sh" || fail "cannot copy the plan"
mkdir -p "$root/netns" && cp "$here/../netns/netns.sh" "$here/../netns/netns_faults.sh" "$root/netns/" ||
  fail "cannot copy tests/netns/netns.sh and netns_faults.sh"
# Full paths: busybox's shell runs its own applets before anything on PATH.
printf 'B=%s\nGCDA_DIR=%s\nIP=%s\nRDMA=%s\nBASH_BIN=%s\nexport B\n' "$B" "$gcda_dir" "$(command -v ip)" \
  "$(command -v rdma)" "$(command -v bash)" >"$root/rxe_env"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz" || fail "cannot pack the initramfs"
say "initramfs $(du -h "$work/initrd.gz" | cut -f1), kernel $kv"

# ---- Boot -----------------------------------------------------------------------
log=$work/console.log
say "booting (qemu -accel tcg, at most $vm_timeout s); console in $log"
t0=$(date +%s)
timeout --kill-after=10 "$vm_timeout" qemu-system-x86_64 -accel tcg -cpu max -m 3072 -smp "${XCCL_RXE_SMP:-2}" \
  -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyS0 quiet loglevel=3 panic=-1" \
  -display none -monitor none -serial stdio -no-reboot -nic none </dev/null 2>&1 | tr -d '\r' >"$log"
qrc=${PIPESTATUS[0]}
say "VM ran $(($(date +%s) - t0)) s (qemu exit $qrc)"

# ---- Results ----------------------------------------------------------------------
grep -a -E '^XCCL-RXE-(RESULT|EXIT)|^XCCL-RXE ' "$log"
if [ -n "$gcda_dir" ] && grep -q '^XCCL-RXE-GCDA-END' "$log"; then
  sed -n '/^XCCL-RXE-GCDA-BEGIN/,/^XCCL-RXE-GCDA-END/p' "$log" | sed '1d;$d' | base64 -d | tar xzf - -C "$B" &&
    say "coverage counters unpacked into $B" || say "could not unpack the coverage counters"
fi
exit_line=$(grep -a '^XCCL-RXE-EXIT ' "$log" | tail -n 1)
[ -n "$exit_line" ] || {
  tail -n 40 "$log"
  [ "$qrc" = 124 ] && fail "the VM did not finish within $vm_timeout s"
  fail "the VM ended without an exit marker (see $log)"
}
nfail=$(echo "$exit_line" | awk '{print $2}')
npass=$(grep -c '^XCCL-RXE-RESULT .* PASS ' "$log")
[ "$nfail" = 0 ] || {
  say "$nfail test(s) failed in the VM; their output is in $log"
  exit 1
}
say "all $npass tests passed on Soft-RoCE"
exit 0
