#!/usr/bin/env bash
# bench/ab.sh — two builds of xccl side by side, alternating, in one run: for
# a change that must not change speed (a refactor), or one that should.
#
#   bench/ab.sh OLD_BUILD NEW_BUILD [ROUNDS]      (default 5 rounds)
#
# Each round runs, for OLD and then NEW (the order flips every round, so a
# drift of the machine falls on both), on 2 local ranks over shared memory
# and over sockets (XCCL_TRANSPORT=socket, loopback):
#   - the 8-byte all-reduce latency (xccl-perf -L, 1000 iterations),
#   - the 1 MiB all-reduce bus bandwidth (100 iterations after 10 warm-up),
#     where the per-call path and the copies both weigh, and
#   - the 16 MiB all-reduce bus bandwidth (20 iterations after 5 warm-up).
# It prints every measurement, then per cell the median of each build and
# NEW/OLD. Run nothing else meanwhile: on a small machine a background build
# halves a figure. Every command runs under `timeout`; exits non-zero when a
# run failed or gave wrong elements.
set -u

if [ $# -lt 2 ]; then
  echo "usage: bench/ab.sh OLD_BUILD NEW_BUILD [ROUNDS]" >&2
  exit 2
fi
old=$1 new=$2 rounds=${3:-5}
for b in "$old" "$new"; do
  for exe in tools/xccl-run tools/xccl-perf; do
    [ -x "$b/$exe" ] || { echo "ab.sh: $b/$exe not found: build it first" >&2; exit 2; }
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# host: $(uname -sr), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); OLD=$old NEW=$new; $rounds rounds"
status=0

# one BUILD TRANSPORT KIND: prints the figure (us for lat, GB/s for bw).
one() {
  local b=$1 t=$2 kind=$3 env=() args
  [ "$t" = socket ] && env=(XCCL_TRANSPORT=socket)
  case $kind in
    lat) args=(-b 8 -e 8 -L -n 1000) ;;
    bw1m) args=(-b 1M -e 1M -n 100 -w 10) ;;
    *) args=(-b 16M -e 16M -n 20 -w 5) ;;
  esac
  if ! env "${env[@]}" XCCL_SOCKET_IFNAME=lo timeout 120 "$b/tools/xccl-run" -n 2 "$b/tools/xccl-perf" allreduce \
      "${args[@]}" --json >"$tmp/out" 2>&1; then
    echo "ab.sh: $b $t $kind failed:" >&2
    tail -5 "$tmp/out" >&2
    return 1
  fi
  awk -v kind="$kind" -F'[:,]' '/"kind":"result"/ {
      for (i = 1; i <= NF; i++) { if ($i == "\"time_us\"") t = $(i + 1); if ($i == "\"busbw_gbps\"") bw = $(i + 1);
                                  if ($i == "\"wrong\"") w = $(i + 1) + 0 }
      if (w) { print "wrong"; exit } print (kind == "lat" ? t : bw) }' "$tmp/out"
}

printf '%-6s %-5s %-7s %-4s %10s\n' round build transp kind figure
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for which in $order; do
    if [ "$which" = old ]; then b=$old; else b=$new; fi
    for t in shm socket; do
      for kind in lat bw1m bw; do
        v=$(one "$b" "$t" "$kind") || { status=1; continue; }
        [ "$v" = wrong ] && { echo "ab.sh: $b $t $kind: wrong elements" >&2; status=1; continue; }
        printf '%-6s %-5s %-7s %-4s %10s\n' "$r" "$which" "$t" "$kind" "$v"
        echo "$which $t $kind $v" >>"$tmp/all"
      done
    done
  done
done

echo
echo "# medians (lat: 8-byte all-reduce, us; bw1m, bw: 1 MiB, 16 MiB all-reduce busbw, GB/s)"
printf '%-7s %-4s %10s %10s %9s\n' transp kind old new new/old
for t in shm socket; do
  for kind in lat bw1m bw; do
    med() { awk -v w="$1" -v t="$t" -v k="$kind" '$1 == w && $2 == t && $3 == k { print $4 }' "$tmp/all" 2>/dev/null |
            sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
    o=$(med old) n=$(med new)
    [ -n "$o" ] && [ -n "$n" ] || continue
    printf '%-7s %-4s %10s %10s %9s\n' "$t" "$kind" "$o" "$n" "$(awk -v o="$o" -v n="$n" 'BEGIN { printf "%.3f", n / o }')"
  done
done
exit $status
