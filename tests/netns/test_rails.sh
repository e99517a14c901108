#!/usr/bin/env bash
# test_rails.sh BUILD_DIR — the socket transport's rails (issue 24): two
# "hosts" (network namespaces, joined by netns.sh's veth pair for the
# rendezvous) joined by two more veth pairs, xr0 <-> xr0 and xr1 <-> xr1, each
# its own subnet. One rank per host, XCCL_SOCKET_IFNAME=xr and two channels:
# the transport offers xr0 and xr1 as two devices, channel 0 takes the first
# and channel 1 the second on both hosts, so a 64 MiB float all-reduce sends
# about half its bytes over each pair. Checks, from the interfaces' tx_bytes
# in the namespaces before and after, that each pair carried 40-60 % of what
# both carried, and that each rank's INFO output names both devices.
# Needs root and veth (skips with 77 and why otherwise); the namespaces go
# on exit, whatever happens.
set -u
build=$1
perf=$build/tools/xccl-perf
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
[ -x "$perf" ] || { echo "FAIL: $perf is not built"; exit 1; }
netns_up 2 veth || { echo "FAIL: could not build the namespaces"; exit 1; }
for pair in 0 1; do
  a="xccl$$r${pair}a" b="xccl$$r${pair}b"
  ip link add "$a" type veth peer name "$b" || { echo "SKIPPED: this kernel cannot make another veth pair"; exit 77; }
  for node in 0 1; do
    end=$a
    [ "$node" -eq 1 ] && end=$b
    ip link set "$end" netns "$(netns_name $node)" name "xr$pair" || exit 1
    ip -n "$(netns_name $node)" addr add "10.$((NETNS_NET + 1)).$((pair + 1)).$((node + 1))/24" dev "xr$pair" || exit 1
    ip -n "$(netns_name $node)" link set "xr$pair" up || exit 1
  done
done

# tx_bytes of interface IF on node NODE.
tx() { netns_exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }
# Bytes both ends of pair P sent so far.
pair_bytes() { echo $(($(tx 0 "xr$1") + $(tx 1 "xr$1"))); }

fail=0
before0=$(pair_bytes 0) before1=$(pair_bytes 1)
export NETNS_LOG
NETNS_LOG=$(mktemp -d)/rank
iters=4
if XCCL_TIMEOUT=60 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT,NET netns_launch 1 120 \
  env XCCL_SOCKET_IFNAME=xr XCCL_NCHANNELS=2 XCCL_NET=socket \
  "$perf" allreduce -b 64M -e 64M -n $iters -w 1 -d float; then
  echo "PASS: 64 MiB all-reduce over two rails"
else
  echo "FAIL: the all-reduce (status $?)"
  for f in "$NETNS_LOG".*; do echo "--- $f"; tail -n 30 "$f"; done
  exit 1
fi
b0=$(($(pair_bytes 0) - before0)) b1=$(($(pair_bytes 1) - before1))
total=$((b0 + b1))
# Each of the 2 ranks sends at least its whole buffer per all-reduce.
want=$((2 * (iters + 1) * 64 * 1024 * 1024))
echo "rails: xr0 pair $b0 bytes, xr1 pair $b1 bytes, total $total (at least $want expected)"
if [ "$total" -lt "$want" ]; then
  echo "FAIL: the rails carried $total bytes, less than the $want the all-reduces send"
  fail=1
else
  for pair in 0 1; do
    b=$b0
    [ "$pair" -eq 1 ] && b=$b1
    pct=$((b * 100 / total))
    echo "rails: pair xr$pair carried $pct % of the bytes"
    if [ "$pct" -lt 40 ] || [ "$pct" -gt 60 ]; then
      echo "FAIL: pair xr$pair carried $pct % of the bytes, not 40-60 %"
      fail=1
    fi
  done
fi
for r in 0 1; do
  line=$(grep -m1 "socket transport: 2 devices: xr0 (.*), xr1 (" "$NETNS_LOG.$r")
  if [ -z "$line" ]; then
    echo "FAIL: rank $r's INFO output does not name both rails:"
    grep -i "socket transport\|devices for" "$NETNS_LOG.$r"
    fail=1
  else
    echo "rank $r: ${line##*NET }"
  fi
  grep -m1 "devices for 2 channels" "$NETNS_LOG.$r"
done
[ $fail -eq 0 ] && echo "PASS: each rail carried its share"
exit $fail
