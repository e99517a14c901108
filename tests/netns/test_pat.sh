#!/usr/bin/env bash
# PAT (issue 45) where it is meant to run: one rank per node, over sockets
# between namespace nodes. On 5 nodes (not a power of two) and 8: the bytes
# every rank sends every peer against the schedule's formula and the cost
# model's work, and the tuner's pick (small shares: pat on 5, rab's equal
# half on 8); on 5, the
# all-gather and reduce-scatter matrices (every type and op, in place and
# out, results bit for bit) with pat forced. Needs root (skipped otherwise).
#   test_pat.sh BUILD_DIR
set -u
build=$1
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
export NETNS_LOG XCCL_TIMEOUT=60
NETNS_LOG=$(mktemp -d)/rank
fail=0

run() { # name prog args...
  local name=$1 t0=$SECONDS r
  shift
  if netns_launch 1 300 "$@"; then
    echo "PASS: $name ($NETNS_NODES nodes x 1 rank, $((SECONDS - t0)) s)"
    grep -h "^pat bytes\|^pick" "$NETNS_LOG.0" | sed 's/^/  /'
  else
    echo "FAIL: $name ($NETNS_NODES nodes x 1 rank, status $?)"
    for r in "$NETNS_LOG".*; do echo "--- $r"; tail -n 20 "$r"; done
    fail=1
  fi
  rm -f "$NETNS_LOG".*
}

for nodes in 5 8; do
  netns_up $nodes bridge || { echo "FAIL: could not build the namespaces"; exit 1; }
  export XCCL_ALGO=reducescatter:pat,allgather:pat
  run "bytes" "$build/tests/test_scatter_gather" bytes pat
  if [ $nodes -eq 5 ]; then
    for coll in allgather reducescatter; do run "matrix $coll" "$build/tests/test_collectives" matrix $coll; done
  fi
  unset XCCL_ALGO
  run "pick" "$build/tests/test_scatter_gather" pick
  netns_down
done
exit $fail
