# tests/rxe/vm_lib.sh — what the Soft-RoCE VM rigs share, sourced by
# rxe_vm.sh (one guest, rxe on a veth inside it) and rxe_pair.sh (two guests
# on one virtual link). The caller sets `me` (its name in messages) first.
#
#   vm_begin BUILD_DIR          B, here, cache; skips unless amd64 and an ib build
#   vm_host_packages [PKG...]   installs what the rig needs (and PKG...), or skips
#   vm_kernel                   vmlinuz, kv, kmod: Debian's 6.1 kernel, fetched once
#   vm_root DIR [MODULE...]     an initramfs tree in DIR: modules (the rxe set, then
#                               MODULE..., paths under kernel/ without .ko), busybox,
#                               the build's test programs, /init; copy_elf adds more
#   vm_pack DIR OUT             packs DIR into the gzip'd cpio OUT
#   vm_qemu LOG LIMIT APPEND ARGS...
#                               boots the kernel and \$initrd, console to LOG, for at
#                               most LIMIT s; APPEND adds to the kernel command line
#   vm_results LOG QRC LIMIT [TAG]
#                               prints the guest's result lines (prefixed by TAG);
#                               0 if it reported no failure, 1 otherwise (with the
#                               console tail when it never reported at all)
#
# Result protocol (vm_init.sh): "XCCL-RXE-RESULT name PASS|FAIL ..." per test,
# "XCCL-RXE-EXIT n" at the end, on the serial console.
SKIP=77
say() { echo "$me: $*"; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }
fail() { echo "$me: FAIL: $*" >&2; exit 1; }

vm_begin() {
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
  B=$(cd "$1" && pwd -P) || fail "no build directory '$1'"
  cache=${XCCL_RXE_CACHE:-$B/rxe-cache}
  local arch
  arch=$(uname -m)
  [ "$arch" = x86_64 ] || skip "the rig boots an amd64 kernel; this host is $arch"
  grep -q '^XCCL_HAVE_IB:[A-Z]*=\(ON\|1\|TRUE\)' "$B/CMakeCache.txt" 2>/dev/null ||
    skip "$B was built without the ib transport (libibverbs-dev and librdmacm-dev were not found)"
  multiarch=/usr/lib/x86_64-linux-gnu
}

# ---- Host packages ----------------------------------------------------------
vm_is_static() { [ -x "$1" ] && ! ldd "$1" >/dev/null 2>&1; }
vm_missing() {
  local m=() p
  command -v qemu-system-x86_64 >/dev/null || m+=(qemu-system-x86)
  vm_is_static /bin/busybox || m+=(busybox-static)
  command -v cpio >/dev/null || m+=(cpio)
  command -v rdma >/dev/null || m+=(iproute2)
  [ -n "$rxe_provider" ] || m+=(ibverbs-providers)
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || m+=("$p"); done
  echo "${m[@]}"
}
vm_host_packages() {
  local need
  rxe_provider=$(ls $multiarch/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
  need=$(vm_missing "$@")
  if [ -n "$need" ]; then
    [ "$(id -u)" -eq 0 ] || skip "needs packages: $need (install them, or run as root so the rig installs them)"
    say "installing $need"
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 ||
      { timeout 120 apt-get update -qq >/dev/null 2>&1 &&
        timeout 300 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1; } ||
      skip "needs packages: $need, and apt-get could not install them (offline?)"
    rxe_provider=$(ls $multiarch/libibverbs/librxe-rdmav*.so 2>/dev/null | head -n 1)
    need=$(vm_missing "$@")
    [ -z "$need" ] || skip "still missing after apt-get: $need"
  fi
}

# ---- Kernel: Debian's stock 6.1 image has rdma_rxe as a module ------------
vm_kernel() {
  mkdir -p "$cache" || fail "cannot create $cache"
  vmlinuz=$(ls "$cache"/k/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$vmlinuz" ]; then
    pkgs() { apt-cache pkgnames linux-image-6.1.0- 2>/dev/null | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V; }
    local pkg
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
}

# ---- Initramfs ----------------------------------------------------------------
# A program or library with everything ldd says it loads, at the same paths, into $root.
copy_elf() {
  local f dep
  for f in "$@"; do
    case $copied in *" $f "*) continue ;; esac
    copied="$copied$f "
    mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f" || fail "cannot copy $f"
    for dep in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do copy_elf "$dep"; done
  done
}

vm_root() {
  root=$1
  shift
  copied=" "
  rm -rf "$root" && mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,etc,lib/modules,root,run} || fail "cannot create $root"
  local m f p applet d
  local modules="crypto/crc32_generic drivers/net/veth drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs
    net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel drivers/infiniband/sw/rxe/rdma_rxe fs/configfs/configfs
    drivers/infiniband/core/ib_cm drivers/infiniband/core/iw_cm drivers/infiniband/core/rdma_cm
    drivers/infiniband/core/rdma_ucm net/sched/sch_netem $*"
  : >"$root/modules.list"
  for m in $modules; do
    f=$kmod/$m.ko
    [ -f "$f" ] || { [ -f "$f.xz" ] && xz -dc "$f.xz" >"$root/lib/modules/${m##*/}.ko"; } || fail "kernel $kv has no $m"
    [ -f "$f" ] && cp "$f" "$root/lib/modules/"
    echo "${m##*/}" >>"$root/modules.list"
  done
  copy_elf "$(command -v ip)" "$(command -v rdma)" "$rxe_provider"
  # tc and bash for the netem cells (tests/netns/netns_faults.sh netem; sch_netem is above).
  command -v tc >/dev/null || fail "no tc (iproute2) on this host"
  copy_elf "$(command -v tc)" "$(command -v bash)"
  local libgcc
  libgcc=$(ls $multiarch/libgcc_s.so.1 /lib/x86_64-linux-gnu/libgcc_s.so.1 2>/dev/null | head -n 1)
  [ -n "$libgcc" ] && copy_elf "$libgcc" # pthread_exit loads it at run time
  mkdir -p "$root/etc/libibverbs.d" && cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/" ||
    fail "no /etc/libibverbs.d/rxe.driver (ibverbs-providers)"
  for p in tests/test_net_conformance tests/test_allreduce tests/test_collectives tests/test_p2p tests/test_barrier \
    tests/test_rma tests/test_fault tests/netns_victim tools/xccl-run tools/xccl-perf tools/xccl-info; do
    [ -x "$B/$p" ] || fail "$B/$p is not built (build everything before this test)"
    copy_elf "$B/$p"
  done
  # The GPUDirect cells (plan.sh section 7) need the stand-in CUDA runtime's test: CUDA builds only.
  [ -x "$B/tests/test_gpu_coll_mock" ] && copy_elf "$B/tests/test_gpu_coll_mock"
  # busybox for everything else (after the real programs, which win).
  cp /bin/busybox "$root/bin/busybox" || fail "cannot copy busybox"
  for applet in $(/bin/busybox --list); do
    for d in bin sbin usr/bin usr/sbin; do [ -e "$root/$d/$applet" ] && continue 2; done
    ln -s busybox "$root/bin/$applet"
  done
  cp "$here/vm_init.sh" "$root/init" && chmod +x "$root/init" || fail "cannot write /init"
  mkdir -p "$root/netns" && cp "$here/../netns/netns.sh" "$here/../netns/netns_faults.sh" "$root/netns/" ||
    fail "cannot copy tests/netns/netns.sh and netns_faults.sh"
  # Full paths: busybox's shell runs its own applets before anything on PATH.
  printf 'B=%s\nGCDA_DIR=%s\nIP=%s\nRDMA=%s\nBASH_BIN=%s\nexport B\n' "$B" "${gcda_dir:-}" "$(command -v ip)" \
    "$(command -v rdma)" "$(command -v bash)" >"$root/rxe_env"
}

vm_pack() {
  (cd "$1" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$2" || fail "cannot pack the initramfs"
}

# ---- Boot -----------------------------------------------------------------------
# Software emulation (tcg): qemu with KVM hung in the firmware on the build machines.
vm_qemu() {
  local log=$1 limit=$2 append=$3
  shift 3
  timeout --kill-after=10 "$limit" qemu-system-x86_64 -accel tcg -cpu max -kernel "$vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 $append" -display none -monitor none -serial stdio \
    -no-reboot "$@" </dev/null 2>&1 | tr -d '\r' >"$log"
  return "${PIPESTATUS[0]}"
}

# ---- Results ----------------------------------------------------------------------
vm_results() {
  local log=$1 qrc=$2 limit=$3 tag=${4:-} exit_line nfail
  grep -a -E '^XCCL-RXE-(RESULT|EXIT)|^XCCL-RXE ' "$log" | sed "s/^/$tag/"
  exit_line=$(grep -a '^XCCL-RXE-EXIT ' "$log" | tail -n 1)
  if [ -z "$exit_line" ]; then
    tail -n 40 "$log" | sed "s/^/$tag/"
    if [ "$qrc" = 124 ]; then
      say "FAIL: ${tag}the VM did not finish within $limit s" >&2
    else
      say "FAIL: ${tag}the VM ended without an exit marker (see $log)" >&2
    fi
    return 1
  fi
  nfail=$(echo "$exit_line" | awk '{print $2}')
  [ "$nfail" = 0 ] || {
    say "${tag}$nfail test(s) failed in the VM; their output is in $log"
    return 1
  }
  return 0
}
