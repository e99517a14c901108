#!/usr/bin/env bash
# The hierarchical all-reduce (issue 25) on clusters of namespace "nodes":
# XCCL_ALGO=allreduce:hier on 2 nodes x 2 ranks, 3 nodes with uneven ranks
# (1+2+2 and 2+1+3) and 4 nodes x 2. On each: the bytes every rank sends to
# every peer, between nodes included, against the formula (2(H-1)/H of each
# shard a rank owns; test_allreduce hierbytes, from xccl's byte counters),
# and what the nodes' interfaces sent against the sum of those; the
# all-reduce matrix (results bit for bit) on 2x2 and 1+2+2, the repeat loop
# on the others (the full matrix at 6-8 ranks on 2 cores would take minutes);
# and the repeat loop of rd, the tree and Rabenseifner on 2+1+3.
#   test_hier.sh BUILD_DIR
set -u
build=$1
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
netns_up 4 bridge || { echo "FAIL: could not build the namespaces"; exit 1; }
export NETNS_LOG NETNS_COUNTS TEST_HIER_HOSTS
NETNS_LOG=$(mktemp -d)/rank
export XCCL_TIMEOUT=60 XCCL_ALGO=allreduce:hier
fail=0

tx_total() { # bytes sent by the 4 nodes' interfaces
  local i t=0
  for i in 0 1 2 3; do t=$((t + $(netns_exec $i cat /sys/class/net/$(netns_dev $i)/statistics/tx_bytes))); done
  echo $t
}

run() { # name counts prog args...
  local name=$1 i c n=0
  NETNS_COUNTS=$2
  shift 2
  TEST_HIER_HOSTS=""
  i=0
  for c in $NETNS_COUNTS; do
    for ((; c > 0; c--)); do TEST_HIER_HOSTS+="${TEST_HIER_HOSTS:+,}$i"; n=$((n + 1)); done
    i=$((i + 1))
  done
  local t0=$SECONDS
  if netns_launch 0 120 "$@"; then
    echo "PASS: $name ($NETNS_COUNTS ranks per node, $((SECONDS - t0)) s)"
  else
    echo "FAIL: $name ($NETNS_COUNTS ranks per node, status $?)"
    for ((i = 0; i < n; i++)); do echo "--- $NETNS_LOG.$i"; tail -n 20 "$NETNS_LOG.$i"; done
    fail=1
  fi
}

# hierbytes, and the interfaces: what crossed nodes is the ranks' bytes to
# other nodes plus TCP/IP headers, acknowledgements and the bootstrap (within
# 25 %), and never less.
bytes() { # counts
  local before after want=0 r
  before=$(tx_total)
  run "hierbytes" "$1" "$build/tests/test_allreduce" hierbytes
  after=$(tx_total)
  for r in "$NETNS_LOG".*; do
    local b
    b=$(sed -n 's/^hierbytes: .*: \([0-9]*\) bytes of [0-9]* to other hosts.*/\1/p' "$r")
    [ -n "$b" ] && want=$((want + b))
  done
  local sent=$((after - before))
  echo "  between nodes: ranks' counters $want bytes, interfaces sent $sent"
  if [ "$want" -eq 0 ] || [ "$sent" -lt "$want" ] || [ $((sent * 100)) -gt $((want * 125)) ]; then
    echo "FAIL: interfaces sent $sent bytes between nodes, expected $want to $((want * 125 / 100))"
    fail=1
  fi
  rm -f "$NETNS_LOG".*
}

for counts in "2 2" "1 2 2" "2 1 3" "2 2 2 2"; do bytes "$counts"; done
run matrix "2 2" "$build/tests/test_allreduce" matrix
run matrix "1 2 2" "$build/tests/test_allreduce" matrix
run repeat "2 1 3" "$build/tests/test_allreduce" repeat
run repeat "2 2 2 2" "$build/tests/test_allreduce" repeat
# The other all-reduce algorithms on the uneven cluster too: their partners
# cross nodes wherever the ranks fall.
for XCCL_ALGO in allreduce:rd allreduce:tree allreduce:rab; do
  run "repeat $XCCL_ALGO" "2 1 3" "$build/tests/test_allreduce" repeat
done
exit $fail
