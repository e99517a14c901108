#!/bin/sh
# Ranks in PID namespaces of their own that still share /dev/shm and the
# network, as containers run with --ipc=host --net=host do: each rank sees
# itself as pid 1. xccl must not take the peer for itself (the CUDA p2p
# transport would use the peer's address as its own) nor judge its liveness
# by a pid from another namespace. Runs the device collectives against the
# stand-in CUDA runtime (CUDA IPC areas offered and taken across the
# namespaces) and a host all-reduce check.
#   pidns.sh XCCL_RUN TEST_GPU_COLL_MOCK TEST_ALLREDUCE
run=$1 gpu=$2 host=$3
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for PID namespaces (unshare --pid)"
command -v unshare >/dev/null 2>&1 || skip "no unshare (util-linux)"
unshare --pid --fork --kill-child true 2>/dev/null || skip "unshare --pid is refused here"
ns="unshare --pid --fork --kill-child"
echo "pidns: every rank in a PID namespace of its own (each is pid 1 there)"
$run -n 2 --grace 5 $ns sh -c 'echo "rank $XCCL_RANK sees itself as pid $$"' || exit 1
GPU_TEST_P2P=1 $run -n 2 --grace 5 $ns "$gpu" coll || { echo "FAIL: device collectives across PID namespaces"; exit 1; }
$run -n 3 --grace 5 $ns "$host" repeat || { echo "FAIL: host all-reduce across PID namespaces"; exit 1; }
echo "pidns: OK"
