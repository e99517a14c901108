#!/usr/bin/env bash
# bench/tls.sh — what encryption costs on the wire (issue 48): a 2-host
# all-reduce over a veth pair between two network namespaces (one rank each,
# socket transport), plaintext and XCCL_TLS=1 alternating, and the cipher's
# own speed on one core (`openssl speed -evp aes-128-gcm`) beside them.
#
#   bench/tls.sh BUILD_DIR [ROUNDS] [SIZE]     (defaults 3, 16M)
#
# Prints the processor, one row per round (plain and TLS bus bandwidth in
# GB/s and their ratio), the medians, and TLS ÷ the cipher at 16 KiB
# records. Run it on a quiet machine: two ranks, their proxies and the
# ciphers share the cores. Needs root (namespaces).
set -u
build=${1:?usage: bench/tls.sh BUILD_DIR [ROUNDS] [SIZE]}
rounds=${2:-3}
size=${3:-16M}
perf=$build/tools/xccl-perf
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/netns/netns.sh"
netns_need_root || exit 77
[ -x "$perf" ] || { echo "bench/tls: $perf is not built" >&2; exit 1; }
netns_up 2 veth || { echo "bench/tls: could not build the namespaces" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'netns_down; rm -rf "$tmp"' EXIT
export NETNS_LOG=$tmp/rank

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# kernel TLS offload: $(grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null && echo available || echo absent)"

# busbw TLS: the all-reduce's bus bandwidth at SIZE (GB/s), rank 0's row.
busbw() {
  XCCL_NET=socket XCCL_TLS=$1 XCCL_TIMEOUT=120 netns_launch 1 300 "$perf" allreduce -b "$size" -e "$size" -n 10 -w 2 ||
    { echo "bench/tls: the all-reduce failed (XCCL_TLS=$1); rank 0 said:" >&2; tail -n 5 "$NETNS_LOG.0" >&2; exit 1; }
  awk '$1 ~ /^[0-9]+$/ && NF >= 8 {b = $8} END {print b}' "$NETNS_LOG.0"
}
printf "%-6s %10s %10s %8s\n" round plain tls ratio
: >"$tmp/rows"
for ((r = 1; r <= rounds; r++)); do
  p=$(busbw 0) || exit 1
  t=$(busbw 1) || exit 1
  echo "$p $t" >>"$tmp/rows"
  awk -v r=$r -v p="$p" -v t="$t" 'BEGIN {printf "%-6s %10s %10s %8.2f\n", r, p, t, (p > 0 ? t / p : 0)}'
done
# One core's AES-128-GCM at 16 KiB (TLS's record size), in GB/s.
cipher=$(taskset -c 0 openssl speed -seconds 2 -bytes 16384 -evp aes-128-gcm 2>/dev/null |
  awk '/^AES-128-GCM|^aes-128-gcm/ {v = $NF; sub(/k$/, "", v); print v * 1000 / 1e9}')
awk -v c="${cipher:-0}" '
  {p[NR] = $1; t[NR] = $2}
  function median(a, n,   i, j, x) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) {x = a[i]; a[i] = a[j]; a[j] = x}
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    mp = median(p, NR); mt = median(t, NR)
    printf "median %10.3f %10.3f %8.2f   (TLS / plain)\n", mp, mt, (mp > 0 ? mt / mp : 0)
    if (c > 0) printf "cipher %10s %10.3f %8.2f   (TLS busbw / openssl speed aes-128-gcm, one core, 16 KiB)\n", "", c, mt / c
  }' "$tmp/rows"
