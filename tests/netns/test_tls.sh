#!/usr/bin/env bash
# test_tls.sh BUILD_DIR PROBE — XCCL_TLS=1 on the socket transport (issue 48),
# two namespace hosts joined by a veth pair, one rank each:
#   1. without TLS a capture on the veth shows the phrase that the probe's
#      broadcast buffer repeats (so the check below can fail), and
#   2. with TLS it never does, while the broadcast still arrives bit for bit,
#      and no bootstrap frame crosses in clear (only the TLS preamble);
#   3. every collective of xccl-perf, checked element by element, with TLS;
#   4. a rank without XCCL_TLS beside one with it: init fails on both within
#      a bounded time, with sentences naming XCCL_TLS (met in the bootstrap,
#      which runs TLS too);
#   5. a rank with another secret: refused with a sentence, within a bounded
#      time, and no rank hangs.
# (A stranger on the data port with another key, or in plaintext, is
# tests/unit/test_sock_tls.c.) Needs root, veth and tcpdump (skips with 77
# and why otherwise); the namespaces go on exit, whatever happens.
set -u
build=$1
probe=$2
perf=$build/tools/xccl-perf
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
command -v tcpdump >/dev/null || { echo "SKIPPED: tcpdump is not installed (scripts/deps.sh installs it)"; exit 77; }
[ -x "$perf" ] && [ -x "$probe" ] || { echo "FAIL: $perf or $probe is not built"; exit 1; }
netns_up 2 veth || { echo "FAIL: could not build the namespaces"; exit 1; }
tmp=$(mktemp -d)
export NETNS_LOG=$tmp/rank
phrase="xccl-tls-probe-$$-this-must-not-cross-the-wire-in-clear"
fail=0
dump_logs() { for f in "$NETNS_LOG".*; do echo "--- $f"; tail -n 20 "$f"; done; }

# capture LABEL TLS: runs the probe with XCCL_TLS=TLS while tcpdump records
# the veth of node 1; sets CAPTURED to how many captured lines hold the
# phrase. (Not run in $(...): that subshell would run netns.sh's EXIT trap.)
capture() {
  local pcap=$tmp/$1.pcap td n
  netns_exec 1 tcpdump -i "$(netns_dev 1)" -U -s 0 -w "$pcap" tcp 2>"$tmp/$1.tcpdump" &
  td=$!
  for _ in $(seq 50); do [ -s "$pcap" ] && break; sleep 0.1; done
  sleep 0.5
  if ! XCCL_TIMEOUT=60 XCCL_NET=socket XCCL_TLS=$2 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET netns_launch 1 120 \
    "$probe" "$phrase"; then
    echo "FAIL: the probe's broadcast (XCCL_TLS=$2)"
    dump_logs
    fail=1
  fi
  sleep 0.5
  kill "$td" 2>/dev/null
  wait "$td" 2>/dev/null
  n=$(grep -a -c -F "$phrase" "$pcap")
  CAPTURED=${n:-0}
}

capture plain 0
clear=$CAPTURED
echo "without TLS: $clear captured lines hold the phrase ($(stat -c %s "$tmp/plain.pcap") bytes captured)"
if [ "$clear" -eq 0 ]; then
  echo "FAIL: the capture does not show the phrase even without TLS: it could not show a leak either"
  cat "$tmp/plain.tcpdump"
  fail=1
fi
capture tls 1
sealed=$CAPTURED
echo "with TLS: $sealed captured lines hold the phrase ($(stat -c %s "$tmp/tls.pcap") bytes captured)"
if [ "$sealed" -ne 0 ]; then
  echo "FAIL: with XCCL_TLS=1 the broadcast's bytes crossed the veth in clear"
  fail=1
fi
# The bootstrap: each of its frames starts with the magic "XCBS" (and the
# peer info they carry holds addresses and host names). Without TLS they
# show; with it the only clear bytes are the acceptors' preamble.
bs_clear=$(grep -a -o "XCBS" "$tmp/plain.pcap" | wc -l)
bs_magic=$(grep -a -o "XCBS" "$tmp/tls.pcap" | wc -l)
bs_preamble=$(grep -a -o "XCBS TLS1.3 PSK" "$tmp/tls.pcap" | wc -l)
echo "bootstrap frame magics in clear: $bs_clear without TLS; $bs_magic with TLS, $bs_preamble of them preambles"
if [ "$bs_clear" -eq 0 ] || [ "$bs_preamble" -eq 0 ]; then
  echo "FAIL: the capture shows no bootstrap traffic: it could not show a leak either"
  fail=1
elif [ "$bs_magic" -ne "$bs_preamble" ]; then
  echo "FAIL: with XCCL_TLS=1 a bootstrap frame crossed the veth in clear"
  fail=1
fi
# 4 broadcasts of 4 MiB crossed; tcpdump may drop some under load, but half
# of them, at least, must be in the file for its silence to mean anything.
if [ "$(stat -c %s "$tmp/tls.pcap")" -lt $((8 << 20)) ]; then
  echo "FAIL: the TLS capture holds less than half the 16 MiB broadcast: it did not see the data"
  fail=1
fi
for r in 0 1; do
  if grep -q "TLS with .*TLSv1.3 TLS_AES_128_GCM_SHA256" "$NETNS_LOG.$r" && grep -q "TLS: .*kernel TLS offload" "$NETNS_LOG.$r"; then
    echo "rank $r: $(grep -m1 -o 'TLS with .*' "$NETNS_LOG.$r")"
  else
    echo "FAIL: rank $r's INFO output says neither the cipher nor the kernel offload"
    fail=1
  fi
done

for coll in allreduce allgather reducescatter broadcast reduce gather scatter alltoall sendrecv; do
  if XCCL_TIMEOUT=60 XCCL_NET=socket XCCL_TLS=1 netns_launch 1 120 "$perf" "$coll" -b 4 -e 4M -f 64 -n 2 -w 1 \
    -d int32 -c 1 >/dev/null; then
    echo "PASS: $coll with TLS, bit for bit from 4 B to 4 MiB"
  else
    echo "FAIL: $coll with TLS"
    dump_logs
    fail=1
  fi
done

# refused LABEL LIMIT_S PATTERN0 PATTERN1 ENV1 ENV0: rank 1 runs with ENV1,
# rank 0 with ENV0; both must fail within LIMIT_S, rank r's log holding
# PATTERNr.
refused() {
  local label=$1 limit=$2 env1=$5 env0=$6 t0 took r pattern
  local patterns=("$3" "$4")
  t0=$(date +%s)
  XCCL_TIMEOUT=15 XCCL_NET=socket netns_launch 1 60 sh -c \
    "if [ \"\$XCCL_RANK\" = 1 ]; then export $env1; else export $env0; fi; exec \"\$0\" \"\$1\"" "$probe" "$phrase"
  local st=$?
  took=$(($(date +%s) - t0))
  if [ $st -eq 0 ]; then
    echo "FAIL: $label: the ranks ran"
    fail=1
    return
  fi
  for r in 0 1; do
    pattern=${patterns[r]}
    if ! grep -q -- "$pattern" "$NETNS_LOG.$r"; then
      echo "FAIL: $label: rank $r's log lacks \"$pattern\":"
      tail -n 5 "$NETNS_LOG.$r"
      fail=1
    fi
  done
  if [ "$took" -gt "$limit" ]; then
    echo "FAIL: $label: refused after $took s, more than $limit s"
    fail=1
  fi
  echo "$label: refused in $took s"
  for r in 0 1; do echo "  rank $r: $(grep -m1 -- "${patterns[r]}" "$NETNS_LOG.$r" | cut -d' ' -f6- | head -c 300)"; done
}
# The bootstrap runs TLS too: the plaintext rank learns at once from the
# root's preamble, says so, and tells the root (an authentic notice), which
# fails rank 0 at once naming rank 1's host.
refused "plaintext peer" 10 "runs without TLS and the bootstrap root does" "runs TLS (XCCL_TLS=1" XCCL_TLS=0 XCCL_TLS=1
# The bootstrap's handshake refuses the stranger at once; the root gives up at XCCL_TIMEOUT.
refused "wrong secret" 40 "missing rank 1" "TLS handshake with bootstrap peer" "XCCL_TLS=1 XCCL_SECRET=another-job" \
  XCCL_TLS=1

rm -rf "$tmp"
[ $fail -eq 0 ] && echo "PASS: XCCL_TLS over the socket transport"
exit $fail
