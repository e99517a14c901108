#!/bin/bash
# test_ifpick.sh IFPICK XCCL_TOPO — virtual interfaces are never chosen
# automatically (issue 18), on a live kernel: in a network namespace of its
# own, a veth pair (veth0, veth1), a bridge whose name no rule knows (xbr0:
# sysfs's bridge/ tells), and a dummy (dummy0, where the kernel has them),
# all up with addresses. Then
#  - the auto-pick (sock_pick_interface and xcclGetUniqueId's root) takes
#    loopback, and says at INFO which it skipped and why;
#  - XCCL_SOCKET_IFNAME==veth0 and the prefix veth still select a veth;
#  - an exclusion list (^lo) still leaves out the virtual ones;
#  - an interface no name rule knows and sysfs shows without a device (a
#    dummy called xd0; where the kernel has no dummies, a veth end called
#    ceth0, as a container's eth0 is) is the last resort before loopback, so
#    it is taken (and said so at INFO);
#  - xccl-topo lists them all as excluded, with the reasons.
# Needs root (skips with 77 and why otherwise); cleans up on exit.
set -u
ifpick=$1
topo=$2
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
ns="xccl$$ifp"
fails=0
fail() { echo "test_ifpick: FAIL: $*"; fails=$((fails + 1)); }
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$ns" || { echo "SKIPPED: ip netns add failed"; exit 77; }
in_ns() {
  timeout -k 2 30 ip netns exec "$ns" env -u XCCL_SOCKET_IFNAME -u NCCL_SOCKET_IFNAME -u XCCL_ROOT -u NCCL_COMM_ID \
    -u XCCL_SOCKET_FAMILY -u XCCL_DEBUG_FILE -u XCCL_TOPO_FILE -u NCCL_TOPO_FILE "$@"
}
ip -n "$ns" link set lo up || exit 1
ip -n "$ns" link add veth0 type veth peer name veth1 || { echo "SKIPPED: this kernel cannot make veth pairs"; exit 77; }
ip -n "$ns" link add xbr0 type bridge || { echo "SKIPPED: this kernel cannot make bridges"; exit 77; }
devs="veth0 veth1 xbr0"
dummy=1
if ip -n "$ns" link add dummy0 type dummy 2>/dev/null; then
  devs="$devs dummy0"
else
  dummy=0
  echo "test_ifpick: this kernel has no dummy interfaces: the dummy cases are not checked"
fi
n=1
for dev in $devs; do
  ip -n "$ns" addr add "10.77.$n.1/24" dev "$dev" || exit 1
  ip -n "$ns" link set "$dev" up || exit 1
  n=$((n + 1))
done
# ip netns exec mounts the namespace's own sysfs; without it the sysfs rules
# would read the host's interfaces.
in_ns test -d /sys/class/net/xbr0/bridge ||
  { echo "SKIPPED: ip netns exec does not show the namespace's sysfs here"; exit 77; }

out=$(in_ns env XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET "$ifpick" 2>&1) || fail "auto-pick failed: $out"
echo "$out" | grep -q "^pick lo 127\.0\.0\.1:" || fail "auto-pick did not take loopback: $out"
echo "$out" | grep -q "^uniqueid 127\.0\.0\.1:" || fail "xcclGetUniqueId's root is not on loopback: $out"
skipped=$(echo "$out" | grep "auto-pick skips virtual interfaces")
[ "$(echo "$skipped" | grep -c .)" -eq 1 ] || fail "want one INFO line of skipped interfaces: $out"
items=("veth0 (a veth pair end)" "veth1 (a veth pair end)" "xbr0 (a bridge)")
[ $dummy -eq 1 ] && items+=("dummy0 (a dummy interface)")
for item in "${items[@]}"; do
  echo "$skipped" | grep -qF "$item" || fail "INFO line lacks '$item': $skipped"
done

out=$(in_ns env XCCL_SOCKET_IFNAME==veth0 "$ifpick" 2>&1) || fail "=veth0 failed: $out"
echo "$out" | grep -q "^pick veth0 10\.77\.1\.1:" || fail "XCCL_SOCKET_IFNAME==veth0 did not pick it: $out"
echo "$out" | grep -q "^uniqueid 10\.77\.1\.1:" || fail "XCCL_SOCKET_IFNAME==veth0: unique id not there: $out"
out=$(in_ns env XCCL_SOCKET_IFNAME=veth "$ifpick" 2>&1) || fail "prefix veth failed: $out"
echo "$out" | grep -Eq "^pick veth[01] 10\.77\.[12]\.1:" || fail "XCCL_SOCKET_IFNAME=veth did not pick a veth: $out"
out=$(in_ns env XCCL_SOCKET_IFNAME=xbr0 "$ifpick" 2>&1) || fail "xbr0 failed: $out"
echo "$out" | grep -q "^pick xbr0 10\.77\.3\.1:" || fail "XCCL_SOCKET_IFNAME=xbr0 did not pick the bridge: $out"
out=$(in_ns env XCCL_SOCKET_IFNAME=^lo "$ifpick" 2>&1) && fail "^lo picked a virtual interface: $out"
echo "$out" | grep -q "no network interface matches" || fail "^lo: want 'no network interface matches': $out"

# An interface no name rule knows and without a device: a dummy called xd0,
# else a veth end called ceth0 (what a container's eth0 is).
if [ $dummy -eq 1 ]; then
  last=xd0
  ip -n "$ns" link add xd0 type dummy || exit 1
else
  last=ceth0
  ip -n "$ns" link add ceth0 type veth peer name ceth1 || exit 1
fi
ip -n "$ns" addr add 10.77.9.1/24 dev $last && ip -n "$ns" link set $last up || exit 1
out=$(in_ns env XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET "$ifpick" 2>&1) || fail "auto-pick with $last failed: $out"
echo "$out" | grep -q "^pick $last 10\.77\.9\.1:" || fail "a device-less $last is not the last resort before loopback: $out"
echo "$out" | grep -q "$last has no device in sysfs" || fail "no INFO line for device-less $last: $out"

out=$(in_ns "$topo" 2>&1) || fail "xccl-topo failed: $out"
echo "$out" | grep -Eq "^Excluded interfaces: [0-9]+ " || fail "xccl-topo has no Excluded section: $out"
items=("veth0: a veth pair end" "veth1: a veth pair end" "xbr0: a bridge" "$last: no device in sysfs")
[ $dummy -eq 1 ] && items+=("dummy0: a dummy interface")
for item in "${items[@]}"; do
  echo "$out" | grep -qF "  $item" || fail "xccl-topo does not list '$item'"
done
echo "$out" | grep -q "^  lo:" && fail "xccl-topo lists loopback as excluded"
[ $fails -eq 0 ] || exit 1
echo "test_ifpick: OK"
