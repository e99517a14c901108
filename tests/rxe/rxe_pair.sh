#!/bin/bash
# rxe_pair.sh — xccl's ib transport between two hosts: two qemu guests, each
# with its own kernel and Soft-RoCE (rdma_rxe) on its own virtual NIC.
#
#   rxe_pair.sh BUILD_DIR [--long]
#
# Both guests boot the initramfs of rxe_vm.sh (vm_lib.sh builds it) with the
# virtio-net driver added, and perftest's ib_write_bw and ib_write_lat when the
# host has them. Their NICs are joined by qemu's dgram netdev (two Unix datagram
# sockets in BUILD_DIR/rxe-pair): one Ethernet link, 10.47.0.1 (A) and
# 10.47.0.2 (B), with rxe0 on eth0 in each. /init (vm_init.sh) is told its node
# by "xccl_node=N" on the kernel command line and runs pair_plan.sh: every job
# is rank 0 in A and rank 1 in B over the ib transport, bootstrap at A.
# The plan's figures (perftest, then xccl-perf all-reduce) are printed as a
# table: xccl's bus bandwidth against ib_write_bw's, its 8 B all-reduce time
# against ib_write_lat's round trip. They are reported, not judged: emulated
# timing is noisy.
#
# Exit: 0 both guests passed everything, 1 a failure (a guest that does not
# finish within the limit is one, with its console tail), 77 skipped with the
# reason (no qemu / kernel package / rdma-core, or no verbs in BUILD_DIR).
#
# Environment:
#   XCCL_RXE_CACHE    where the kernel package is kept (BUILD_DIR/rxe-cache)
#   XCCL_RXE_TIMEOUT  seconds the guests may run (default 240; 900 with --long)
#   XCCL_RXE_PAIR_LONG=1  same as --long
#   XCCL_RXE_PAIR_ONLY=faults  only the fault cell (the plan's section 4)
#   XCCL_RXE_PAIR_FAULT  link (default: guest B's NIC goes down mid-job) or kill
#                     (guest A powers off mid-job)
#   XCCL_RXE_SMP      virtual CPUs per guest (default 2; 1 makes a rank and its
#                     proxy share one, and the jobs about twice as slow)
set -u
me=rxe_pair
. "$(dirname "$0")/vm_lib.sh"

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--long]" >&2; exit 2; }
long=${XCCL_RXE_PAIR_LONG:-0}
[ "${2:-}" = --long ] && long=1
vm_begin "$1"
vm_timeout=${XCCL_RXE_TIMEOUT:-$([ "$long" = 1 ] && echo 900 || echo 240)}
vm_host_packages
# perftest is for the figures only: without it (and no way to install it) the rig still runs.
if ! command -v ib_write_bw >/dev/null && [ "$(id -u)" -eq 0 ]; then
  DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends perftest >/dev/null 2>&1 ||
    say "perftest could not be installed: no ib_write_bw figures"
fi
vm_kernel

# ---- Initramfs (one, booted twice) ---------------------------------------------
work=$B/rxe-pair
vm_root "$work/root" drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
  drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci net/core/failover drivers/net/net_failover \
  drivers/net/virtio_net
for p in ib_write_bw ib_write_lat; do
  command -v $p >/dev/null && copy_elf "$(command -v $p)"
done
cp "$here/pair_plan.sh" "$root/plan.sh" || fail "cannot copy the plan"
echo "PAIR_LONG=$long" >>"$root/rxe_env"
echo "PAIR_ONLY=${XCCL_RXE_PAIR_ONLY:-}" >>"$root/rxe_env"
echo "PAIR_FAULT=${XCCL_RXE_PAIR_FAULT:-link}" >>"$root/rxe_env"
initrd=$work/initrd.gz
vm_pack "$root" "$initrd"
say "initramfs $(du -h "$initrd" | cut -f1), kernel $kv"

# ---- Boot both ----------------------------------------------------------------------
# The link: qemu's dgram netdev between two Unix datagram sockets, one per guest;
# a second such link is the second rail (eth1, 10.48.0.0/24, rxe1 in each guest).
# A full receiver makes the sender wait (a UDP port would drop the frame and rxe
# would wait for its retransmit timer), and no stream is there for Nagle's delay
# to hold small frames back (the socket netdev over TCP: ~25 ms per 8 B write).
rm -f "$work"/link.?.sock "$work"/rail1.?.sock
smp=${XCCL_RXE_SMP:-2}
say "booting two guests (qemu -accel tcg, at most $vm_timeout s); consoles in $work/console.{a,b}.log"
t0=$(date +%s)
# guest NODE HERE PEER
# Guest A's frames are also written to a pcap (headers only) for the traffic-class check.
rm -f "$work/link.pcap"
guest() {
  local dump=()
  [ "$1" = 0 ] && dump=(-object "filter-dump,id=d0,netdev=n0,file=$work/link.pcap,maxlen=96")
  vm_qemu "$work/console.$2.log" "$vm_timeout" "xccl_node=$1" -m 2048 -smp "$smp" \
    -netdev "dgram,id=n0,local.type=unix,local.path=$work/link.$2.sock,remote.type=unix,remote.path=$work/link.$3.sock" \
    "${dump[@]}" -device "virtio-net-pci,netdev=n0,mac=52:54:00:47:00:0$(($1 + 1))" \
    -netdev "dgram,id=n1,local.type=unix,local.path=$work/rail1.$2.sock,remote.type=unix,remote.path=$work/rail1.$3.sock" \
    -device "virtio-net-pci,netdev=n1,mac=52:54:00:48:00:0$(($1 + 1))"
}
guest 0 a b &
pid_a=$!
guest 1 b a
qrc_b=$?
wait $pid_a
qrc_a=$?
say "guests ran $(($(date +%s) - t0)) s (qemu exit A $qrc_a, B $qrc_b)"

# ---- Results ----------------------------------------------------------------------
st=0
vm_results "$work/console.a.log" "$qrc_a" "$vm_timeout" "A: " || st=1
vm_results "$work/console.b.log" "$qrc_b" "$vm_timeout" "B: " || st=1

# The figures: the larger of the two guests' (rank 0 alone prints xccl-perf's rows, and
# perftest's one-way server can print zeros where its client has the figure).
fig() { cat "$work"/console.[ab].log | grep -a "^XCCL-RXE figure $1 " | awk '$4 > m {m = $4} END {if (m > 0) print m}'; }
bw=$(fig ib_write_bw_bidir_gbps) oneway=$(fig ib_write_bw_oneway_gbps) lat=$(fig ib_write_lat_typical_us)
busbw=$(fig xccl_allreduce_busbw_gbytes) size=$(fig xccl_allreduce_size) t8=$(fig xccl_allreduce_8B_us)
awk -v bw="$bw" -v oneway="$oneway" -v lat="$lat" -v busbw="$busbw" -v size="$size" -v t8="$t8" '
  function row(what, x, y) {
    printf "rxe_pair: %-50s %12s %12s %8s\n", what, x == "" ? "-" : x, y == "" ? "-" : y,
      (x != "" && y + 0 > 0) ? sprintf("%.2f", x / y) : "-"
  }
  BEGIN {
    printf "rxe_pair: %-50s %12s %12s %8s\n", "figure (emulated: reported, not judged)", "xccl", "bound", "ratio"
    # ib_write_bw -b counts both directions; a 2-rank ring all-reduce moves its
    # busbw each way at once, so its bound is half of that (Gb/s to GB/s: / 8).
    # Without it, one direction alone (an upper bound: nothing comes the other way).
    if (bw != "") row("all-reduce busbw at " size " B / write_bw -b (GB/s)", busbw, sprintf("%.5f", bw / 16))
    else row("all-reduce busbw at " size " B / write_bw 1-way (GB/s)", busbw, oneway == "" ? "" : sprintf("%.5f", oneway / 8))
    row("all-reduce 8 B time / write round trip (us)", t8, lat == "" ? "" : sprintf("%.1f", 2 * lat))
  }'
# The traffic class on the wire: the plan's traffic_class_ib job ran with
# XCCL_IB_TC=104 (DSCP 26), so RoCE v2 frames (UDP to port 4791) with IP TOS 104
# must be in the capture, both ways, and the jobs without it sent TOS 0.
if [ "${XCCL_RXE_PAIR_ONLY:-}" != faults ] && grep -aq "^XCCL-RXE-RESULT traffic_class_ib PASS" "$work/console.a.log"; then
  if ! command -v tcpdump >/dev/null; then
    say "traffic class on the wire: not checked (no tcpdump on the host)"
  elif [ ! -s "$work/link.pcap" ]; then
    say "FAIL: qemu wrote no capture of guest A's link ($work/link.pcap)"
    st=1
  else
    tos() { tcpdump -nn -r "$work/link.pcap" "udp dst port 4791 and ip[1] == $1 and $2" 2>/dev/null | wc -l; }
    a104=$(tos 104 "src host 10.47.0.1") b104=$(tos 104 "src host 10.47.0.2") any0=$(tos 0 "udp")
    say "traffic class on the wire: RoCE frames with TOS 104: $a104 from A, $b104 from B; with TOS 0: $any0"
    if [ "$a104" -lt 10 ] || [ "$b104" -lt 10 ]; then
      say "FAIL: XCCL_IB_TC=104 is not the traffic class on the wire (fewer than 10 frames each way carry it)"
      st=1
    elif [ "$any0" -lt 10 ]; then
      say "FAIL: no RoCE frames with TOS 0: the capture does not tell the jobs apart"
      st=1
    fi
  fi
fi
[ $st = 0 ] || exit 1
say "both guests passed all $(grep -c '^XCCL-RXE-RESULT .* PASS ' "$work/console.a.log") tests, rank 0 in A and rank 1 in B over Soft-RoCE"
exit 0
