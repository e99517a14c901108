#!/usr/bin/env bash
# A cluster of 2 "nodes" (network namespaces on a bridge), 2 ranks each:
# TCP between nodes, shared memory inside one. Runs the all-reduce matrix,
# the other collectives and point-to-point, and checks from the logs that
# each rank used shared memory for its neighbour on the same node only.
#   test_cluster.sh BUILD_DIR
set -u
build=$1
. "$(dirname "$0")/netns.sh"
netns_need_root || exit 77
netns_up 2 bridge || { echo "FAIL: could not build the namespaces"; exit 1; }
export NETNS_LOG
NETNS_LOG=$(mktemp -d)/rank
fail=0
run() { # name prog args...
  local name=$1
  shift
  if XCCL_TIMEOUT=60 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT netns_launch 2 240 "$@"; then
    echo "PASS: $name"
  else
    echo "FAIL: $name (status $?)"
    for f in "$NETNS_LOG".*; do echo "--- $f"; tail -n 20 "$f"; done
    fail=1
  fi
}
export XCCL_TIMEOUT XCCL_DEBUG XCCL_DEBUG_SUBSYS
run allreduce_matrix "$build/tests/test_allreduce" matrix
# Ring neighbours: 0->1 and 2->3 share a node (shared memory), 1->2 and 3->0
# do not. Each rank logs "rank R: S of C channels to rank N ... through shared memory".
shm_to_next() { sed -n "s/.*rank $1: \([0-9]*\) of [0-9]* channels to rank .* through shared memory.*/\1/p" "$NETNS_LOG.$1"; }
for r in 0 1 2 3; do
  s=$(shm_to_next $r)
  if [ $((r % 2)) -eq 0 ] && [ "${s:-0}" -eq 0 ]; then
    echo "FAIL: rank $r did not use shared memory to rank $((r + 1)) on its own node"
    fail=1
  elif [ $((r % 2)) -eq 1 ] && [ "${s:-0}" -ne 0 ]; then
    echo "FAIL: rank $r used shared memory to rank $(((r + 1) % 4)) in another namespace"
    fail=1
  fi
done
run collectives_bytes "$build/tests/test_collectives" bytes
run p2p_alltoall "$build/tests/test_p2p" alltoall
# Ranks dealt to the nodes in turn (0 and 2 on node 0, 1 and 3 on node 1):
# the ring must still visit each node once, 0 -> 2 -> 1 -> 3, and every
# collective must place each rank's block by rank, not by ring position.
export NETNS_PLACEMENT=cyclic
run cyclic_collectives_matrix "$build/tests/test_collectives" matrix
for r in 0 1 2 3; do
  want=$(case $r in 0) echo "3 -> 0 -> 2" ;; 1) echo "2 -> 1 -> 3" ;; 2) echo "0 -> 2 -> 1" ;; 3) echo "1 -> 3 -> 0" ;; esac)
  grep -q "ring $want," "$NETNS_LOG.$r" || { echo "FAIL: rank $r's ring is not $want:"; grep "ring .* ->" "$NETNS_LOG.$r"; fail=1; }
done
# The ring's bytes (the tuner would take hier here, which test_hier.sh checks).
XCCL_ALGO=allreduce:ring run cyclic_allreduce_bytes "$build/tests/test_allreduce" bytes
run cyclic_p2p_gatherscatter "$build/tests/test_p2p" gatherscatter
exit $fail
