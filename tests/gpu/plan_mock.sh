#!/bin/sh
# The planner's rings in a running communicator (issue 24), with the
# stand-in CUDA runtime giving local rank L GPU L of a saved machine
# (MOCK_CUDA_GPU_FROM_TOPO=1, tests/gpu/mock_cuda.c):
#   1. the graph a communicator dumps (XCCL_GRAPH_DUMP_FILE) is the graph
#      xccl-topo --job prints for that machine and shape, byte for byte, and
#      the device and host collectives on those rings pass;
#   2. a graph file whose two channels order the GPUs differently forces
#      those rings (INFO's Channel lines), and the collectives pass on them;
#   3. a graph file that does not fit fails init on every rank, naming the
#      file and the line.
# Usage: plan_mock.sh XCCL_RUN TEST_GPU_COLL_MOCK XCCL_TOPO TOPO_FILE
set -u
run=$1 prog=$2 tool=$3 topo=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset XCCL_GRAPH_FILE NCCL_GRAPH_FILE XCCL_NCHANNELS XCCL_MIN_NCHANNELS XCCL_MAX_NCHANNELS
export XCCL_TOPO_FILE="$topo" MOCK_CUDA_GPU_FROM_TOPO=1 XCCL_TIMEOUT=60 XCCL_ALGO=ring

# 1. Dumped graph = the tool's; collectives on it.
XCCL_GRAPH_DUMP_FILE=$tmp/comm.xml XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT \
  timeout 240 "$run" -n 4 --grace 5 "$prog" coll > "$tmp/run1.log" 2>&1 || { tail -40 "$tmp/run1.log"; fail "mixed collectives on the planned rings"; }
[ -s "$tmp/comm.xml" ] || fail "no graph written to XCCL_GRAPH_DUMP_FILE"
"$tool" --file "$topo" --job 1x4 --format nccl-graph > "$tmp/job.xml" || fail "xccl-topo --job 1x4"
cmp "$tmp/comm.xml" "$tmp/job.xml" || { diff "$tmp/comm.xml" "$tmp/job.xml"; fail "the communicator's graph differs from xccl-topo --job's"; }
grep -q "Channel 00/" "$tmp/run1.log" || fail "no 'Channel 00/NN' INFO line"
grep -q "GPU channel search\|GPU rings\|GPU" "$tmp/run1.log" || fail "the INFO plan does not say it followed the GPUs"
echo "ok: the dumped graph equals xccl-topo --job 1x4's ($(grep -c '<channel>' "$tmp/comm.xml") channels)"

# 2. Two channels that order the GPUs differently.
cat > "$tmp/two.xml" <<'EOF'
<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="6" speedinter="6" latencyinter="0" typeintra="SYS" typeinter="PIX" samechannels="0">
    <channel>
      <gpu dev="0"/>
      <gpu dev="1"/>
      <gpu dev="2"/>
      <gpu dev="3"/>
    </channel>
    <channel>
      <gpu dev="2"/>
      <gpu dev="0"/>
      <gpu dev="3"/>
      <gpu dev="1"/>
    </channel>
  </graph>
</graphs>
EOF
XCCL_GRAPH_FILE=$tmp/two.xml XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=INIT \
  timeout 240 "$run" -n 4 --grace 5 "$prog" coll > "$tmp/run2.log" 2>&1 || { tail -40 "$tmp/run2.log"; fail "collectives on two different rings"; }
grep -Eq "Channel 00/02 : +0 1 2 3\b" "$tmp/run2.log" || { grep Channel "$tmp/run2.log"; fail "channel 0 is not the file's 0 1 2 3"; }
grep -Eq "Channel 01/02 : +2 0 3 1\b" "$tmp/run2.log" || { grep Channel "$tmp/run2.log"; fail "channel 1 is not the file's 2 0 3 1"; }
echo "ok: XCCL_GRAPH_FILE's two rings run (0 1 2 3 and 2 0 3 1)"

# 3. A graph that does not fit: GPU 7 on a 4-GPU machine.
sed 's/<gpu dev="3"\/>/<gpu dev="7"\/>/' "$tmp/two.xml" > "$tmp/bad.xml"
XCCL_GRAPH_FILE=$tmp/bad.xml XCCL_TIMEOUT=30 timeout 120 "$run" -n 4 --grace 10 "$prog" coll > "$tmp/run3.log" 2>&1 && fail "a graph naming GPU 7 was accepted"
n=$(grep -c "bad.xml" "$tmp/run3.log")
[ "$n" -ge 4 ] || { cat "$tmp/run3.log"; fail "every rank should name the graph file ($n lines do)"; }
grep -q "bad.xml:[0-9]" "$tmp/run3.log" || grep -q "line [0-9]" "$tmp/run3.log" || { cat "$tmp/run3.log"; fail "no line named"; }
echo "ok: a graph file that does not fit fails every rank, naming the file and line"
