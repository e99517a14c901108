# What the Soft-RoCE VM runs, sourced by its /init (vm_init.sh defines t and
# tx). $B is the build tree (same path as on the host). Every rank runs in the
# one VM on the one rxe0 device; XCCL_SHM_DISABLE keeps ranks off shared
# memory, so every connection goes through the ib transport. Sizes are kept
# small: under emulation rxe moves ~100 Mbit/s.
RUN="$B/tools/xccl-run --grace 10"
export XCCL_SOCKET_IFNAME=va XCCL_TIMEOUT=60
IB="env XCCL_NET=ib XCCL_SHM_DISABLE=1"

# 1. The transport's contract (tests/net), with one QP and with three.
t net_conformance_ib env XCCL_NET=ib "$B/tests/test_net_conformance"
t net_conformance_ib_qps3 env XCCL_NET=ib XCCL_IB_QPS_PER_CONNECTION=3 "$B/tests/test_net_conformance" \
  sizes ordered smaller_recv inflight kill_sender flush
# Messages split over three QPs (XCCL_IB_SPLIT_DATA_ON_QPS=1; the default sends each whole on
# the next QP), and the adaptive-routing form (a write, then an empty write with immediate)
# for every size, on two QPs; the INFO line says which form each connection took, and the
# dma-buf probe says what rxe answered.
t net_conformance_ib_split_qps3 env XCCL_NET=ib XCCL_IB_QPS_PER_CONNECTION=3 XCCL_IB_SPLIT_DATA_ON_QPS=1 \
  "$B/tests/test_net_conformance" sizes ordered smaller_recv inflight kill_sender flush
t net_conformance_ib_ar_qps2 env XCCL_NET=ib XCCL_IB_QPS_PER_CONNECTION=2 XCCL_IB_ADAPTIVE_ROUTING=1 \
  XCCL_IB_AR_THRESHOLD=0 "$B/tests/test_net_conformance" sizes ordered smaller_recv inflight
t allreduce_ar_ib_n3 env XCCL_IB_ADAPTIVE_ROUTING=1 XCCL_IB_AR_THRESHOLD=4096 XCCL_IB_QPS_PER_CONNECTION=2 \
  XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET XCCL_DEBUG_FILE=/tmp/ar-%p.log $IB $RUN -n 3 "$B/tests/test_allreduce" bytes
t ar_form_said sh -c 'grep -h "adaptive-routing form from 4096 bytes" /tmp/ar-*.log | head -n 2 &&
  grep -h "dma-buf registrations" /tmp/ar-*.log | head -n 1 &&
  [ $(grep -l "messages round-robin over the QPs; adaptive-routing form" /tmp/ar-*.log | wc -l) = 3 ]'
# A peer unreachable for a while: the first two address resolutions of each connection aim
# at 192.0.2.1 (XCCL_IB_FAULT_UNREACHABLE), rdma_cm fails them, and each is tried again after
# a backoff, at INFO; the job's data is right. With fewer retries than failures init fails
# naming the setting.
t connect_retry_ib_n2 env XCCL_IB_FAULT_UNREACHABLE=2 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET \
  XCCL_DEBUG_FILE=/tmp/retry-%p.log $IB $RUN -n 2 "$B/tests/test_allreduce" bytes
t connect_retry_said sh -c 'grep -h "retry 2 of 5" /tmp/retry-*.log | head -n 2 && grep -q "retry 1 of 5 in 100 ms" /tmp/retry-*.log'
tx connect_retry_exhausted "XCCL_IB_CONNECT_RETRIES=1" env XCCL_IB_FAULT_UNREACHABLE=3 XCCL_IB_CONNECT_RETRIES=1 \
  $IB $RUN -n 2 "$B/tests/test_allreduce" bytes
# Kernel TLS: this guest's kernel has the tls ULP (net/tls, loaded by rxe_vm.sh), which the
# build machines' kernels lack; XCCL_TLS=1 over the socket transport must hand the records to
# the kernel after OpenSSL's handshake (the INFO line) and the data must be right. OpenSSL 3.0
# (Debian 12) offloads TLS 1.3's send side only ("send only"); later ones receive too.
t ktls_socket_n2 env XCCL_NET=socket XCCL_SHM_DISABLE=1 XCCL_TLS=1 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET \
  XCCL_DEBUG_FILE=/tmp/ktls-%p.log $RUN -n 2 "$B/tests/test_allreduce" bytes
t ktls_offload_said sh -c 'cat /proc/sys/net/ipv4/tcp_available_ulp; grep -h "kernel offload" /tmp/ktls-*.log | sort | uniq -c | head -n 3;
  ! grep -h "kernel offload" /tmp/ktls-*.log | grep -qv "kernel offload send"'
# Device choice and connection settings from the configuration table.
t net_conformance_ib_settings env XCCL_NET=ib XCCL_IB_HCA==rxe0:1 XCCL_IB_GID_INDEX=1 XCCL_IB_TC=32 \
  XCCL_IB_TIMEOUT=14 XCCL_IB_RETRY_CNT=3 "$B/tests/test_net_conformance" handshake sizes
tx net_ib_hca_excludes_all "XCCL_IB_HCA lets through" env XCCL_NET=ib XCCL_IB_HCA=^rxe0 \
  "$B/tests/test_net_conformance" handshake
# 2. Every collective on 4 ranks (2 ranks, one per host, run in the two-guest rig: pair_plan.sh).
for n in 4; do
  t allreduce_repeat_ib_n$n $IB $RUN -n $n "$B/tests/test_allreduce" repeat
  t allreduce_bytes_ib_n$n $IB $RUN -n $n "$B/tests/test_allreduce" bytes
  t collectives_matrix_ib_n$n $IB $RUN -n $n "$B/tests/test_collectives" matrix
  t sendrecv_ib_n$n $IB $RUN -n $n "$B/tests/test_p2p" sendrecv
  t alltoall_ib_n$n $IB $RUN -n $n "$B/tests/test_p2p" alltoall
  t gatherscatter_ib_n$n $IB $RUN -n $n "$B/tests/test_p2p" gatherscatter
  t barrier_ib_n$n $IB $RUN -n $n "$B/tests/test_barrier"
done
# The one-sided calls over verbs (tests/multiproc/test_rma.c): puts from 0 bytes to 16 slots of
# XCCL_RMA_CHUNK_SIZE, every byte and its guards checked, signal counts; a put whose header is
# corrupted on the way (XCCL_FAULT) fails the target's waits on rank 0 and writes nothing.
t rma_puts_ib_n2 $IB $RUN -n 2 "$B/tests/test_rma" puts
t rma_corrupt_ib_n2 env XCCL_FAULT=rank=0,action=corrupt $IB $RUN -n 2 "$B/tests/test_rma" corrupt
# (Four QPs per connection: in the two-guest rig, pair_plan.sh.)
# ib is the default when a verbs device is there.
t allreduce_default_net_n2 env XCCL_SHM_DISABLE=1 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET \
  XCCL_DEBUG_FILE=/tmp/default-net-%p.log $RUN -n 2 "$B/tests/test_allreduce" bytes
t default_net_is_ib sh -c 'grep -h "device 0 is\|using network transport" /tmp/default-net-*.log &&
  [ $(grep -l "using network transport .ib." /tmp/default-net-*.log | wc -l) = 2 ]'
# 3. Failures: a rank killed mid-transfer, a wrong remote key.
t fault_kill_ib env XCCL_NET=ib XCCL_TRANSPORT=socket "$B/tests/test_fault" kill
tx allreduce_bad_rkey_ib_n2 "remote access error" env XCCL_IB_FAULT_RKEY=1 $IB $RUN -n 2 \
  "$B/tests/test_allreduce" repeat
# 4. Figures under emulation (no target: the VM proves correctness, not speed).
T_TAIL=30 t perf_allreduce_ib_n2 $IB $RUN -n 2 "$B/tools/xccl-perf" allreduce -b 8 -e 4M -f 8 -n 5 -w 1
T_TAIL=30 t perf_sendrecv_ib_n2 $IB $RUN -n 2 "$B/tools/xccl-perf" sendrecv -b 8 -e 4M -f 8 -n 5 -w 1
# 5. The netem cells of the external-fault matrix (tests/netns/netns_faults.sh): two network
# namespaces over a veth pair, one rank each, socket transport, tc netem delay, loss and
# reordering on both ends. Every result must be right; the rows (time per call against no
# netem) go to the console as "XCCL-RXE netem: ..." lines.
T_LIMIT=120 t netem_socket env NETEM_CALLS=40 "$BASH_BIN" /netns/netns_faults.sh "$B" netem
grep -E '^(fault|baseline|delay|loss|reorder) ' /tmp/out | sed 's/^/XCCL-RXE netem: /'
# 6. Two verbs devices (rxe0 on va, rxe1 on a second veth pair): with no NUMA domain to prefer,
# a rank's channels take the devices in turn (src/core/net_select.c), and the data is right.
"$IP" link add vc type veth peer name vd && "$IP" addr add 169.254.2.1/24 dev vc && "$IP" link set vc up &&
  "$IP" link set vd up && "$RDMA" link add rxe1 type rxe netdev vc || say "could not add rxe1"
t allreduce_two_devices_ib_n2 env XCCL_NCHANNELS=2 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT \
  XCCL_DEBUG_FILE=/tmp/two-dev-%p.log $IB $RUN -n 2 "$B/tests/test_allreduce" bytes
t two_devices_one_per_channel sh -c 'grep -h "devices for" /tmp/two-dev-*.log &&
  [ $(grep -l "devices for 2 channels.* 0:rxe0:1 1:rxe1:1" /tmp/two-dev-*.log | wc -l) = 2 ]'
# Point-to-point connections take the same device at both ends (one subnet per device here,
# as with a network per rail): sends, receives and all-to-all over both devices.
t alltoall_two_devices_ib_n3 env XCCL_NCHANNELS=2 $IB $RUN -n 3 "$B/tests/test_p2p" alltoall
t sendrecv_two_devices_ib_n3 env XCCL_NCHANNELS=2 $IB $RUN -n 3 "$B/tests/test_p2p" sendrecv
# 7. GPUDirect RDMA over ib (src/cuda/cuda_gdr.c) with the stand-in CUDA runtime
# (tests/gpu/mock_cuda.c): its "GPU memory" is host memory, so rxe registers it through the
# plain ibv_reg_mr route and moves it, while the GPU-data marks, the proxy's receives into
# the GPU area, the flushes on the loopback QP and the kernel's reads are the real ones.
# Device results are checked against the host path; the log must show GPUDirect chosen on
# both ranks, and XCCL_NET_GDR_LEVEL=LOC must stage instead.
if [ -x "$B/tests/test_gpu_coll_mock" ]; then
  GDR="env XCCL_ALGO=ring GPU_TEST_P2P=0 XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=NET"
  t gpu_mock_gdr_ib_n2 $GDR XCCL_NET_GDR_LEVEL=SYS XCCL_DEBUG_FILE=/tmp/gdr-%p.log $IB $RUN -n 2 \
    "$B/tests/test_gpu_coll_mock" quick
  t gpu_mock_mixed_gdr_ib_n2 $GDR XCCL_NET_GDR_LEVEL=SYS $IB $RUN -n 2 "$B/tests/test_gpu_coll_mock" mixed
  t gdr_chosen sh -c 'grep -h "GPUDirect\|flush QP" /tmp/gdr-*.log | head -n 6 &&
    [ $(grep -l "goes GPUDirect RDMA" /tmp/gdr-*.log | wc -l) = 2 ] && grep -q "flush QP .* (loopback" /tmp/gdr-*.log'
  t gpu_mock_staged_ib_n2 $GDR XCCL_NET_GDR_LEVEL=LOC XCCL_DEBUG_FILE=/tmp/staged-%p.log $IB $RUN -n 2 \
    "$B/tests/test_gpu_coll_mock" quick
  t gdr_level_loc_stages sh -c '! grep -q "goes GPUDirect" /tmp/staged-*.log &&
    grep -q "staged through host memory: XCCL_NET_GDR_LEVEL=LOC" /tmp/staged-*.log'
else
  say "GPUDirect cells skipped: this build has no CUDA (no tests/test_gpu_coll_mock)"
fi
