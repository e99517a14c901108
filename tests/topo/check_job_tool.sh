#!/bin/sh
# check_job_tool.sh XCCL_TOPO DATA_DIR — xccl-topo --job (issue 24): on an
# 8-GPU machine with 4 NICs, 2x8 in text (one NCCL-style Channel line per
# channel, where each enters and leaves every host), json (the topology's
# keys plus "job": rings over all 16 ranks, each host's NICs by index into
# "nics", the same rail leaving one host and entering the next) and
# nccl-graph (host 0's GPU rings, read back as themselves); fewer GPUs than
# the machine's (2x4); on a machine without GPUs, host-buffer ranks,
# nccl-graph refused; bad --job values and combinations exit 2 with a
# sentence. On a node whose four GPUs each have their own NIC, 2x4 runs
# channels over all four NICs (issue 45).
set -u
tool=$1
data=$2
fail() { echo "check_job_tool: FAIL: $*" >&2; exit 1; }
f=$data/nccl/aws-p4d.24xlarge-a100-topo.xml
nogpu=$data/nccl/aws-g5.48xlarge-a10g-topo.xml
tmp=$(mktemp -d) || fail mktemp
trap 'rm -rf "$tmp"' EXIT
unset XCCL_GRAPH_FILE NCCL_GRAPH_FILE XCCL_MIN_NCHANNELS XCCL_MAX_NCHANNELS NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS
unset XCCL_NCHANNELS NCCL_NCHANNELS

"$tool" --file "$f" --job 2x8 > "$tmp/t.txt" || fail "--job 2x8 text"
grep -q '^Job: 2 hosts, 16 ranks, ' "$tmp/t.txt" || fail "text header: $(head -3 "$tmp/t.txt")"
grep -Eq '^Channel 00/0[0-9] :  ([0-9]+ ){15}[0-9]+$' "$tmp/t.txt" || fail "no Channel line: $(cat "$tmp/t.txt")"
grep -Eq '^  host 1: enters at rank [0-9]+ \(GPU [0-9]+ [0-9a-f:.]+\) via NIC .*, leaves at rank' "$tmp/t.txt" ||
  fail "no host line: $(cat "$tmp/t.txt")"
grep -q 'socket crossing' "$tmp/t.txt" || fail "no crossing count"

"$tool" --file "$f" --job 2x8 --format json -o "$tmp/j.json" || fail "--job 2x8 json"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/j.json" 2 8 <<'PY' || fail "the JSON does not parse or lacks the job"
import json, sys
d = json.load(open(sys.argv[1]))
hosts, per = int(sys.argv[2]), int(sys.argv[3])
for k in ("version", "source", "gpus", "nics", "channels", "nodes", "links", "job"):
    assert k in d, k
j = d["job"]
assert j["hosts"] == hosts and j["ranks_per_host"] == per, j
assert j["nics"] == [n["name"] for n in d["nics"]], (j["nics"], d["nics"])
assert len(j["channels"]) >= 1
used = set()
for c in j["channels"]:
    ring = c["ring"]
    assert sorted(ring) == list(range(hosts * per)), ring
    changes = sum(ring[i] // per != ring[(i + 1) % len(ring)] // per for i in range(len(ring)))
    assert changes == hosts, (changes, ring)
    assert len(c["hosts"]) == hosts
    for h in range(hosts):
        out, nxt = c["hosts"][h]["nic_out"], c["hosts"][(h + 1) % hosts]["nic_in"]
        assert out == nxt and 0 <= out < len(j["nics"]), c["hosts"]
        used.add(out)
assert len(used) == min(len(j["channels"]), len(j["nics"])), (used, len(j["channels"]))
PY
else
  grep -q '"job": {' "$tmp/j.json" || fail "no job key"
fi

"$tool" --file "$f" --job 2x8 --format nccl-graph > "$tmp/g.xml" || fail "--job 2x8 nccl-graph"
n=$(grep -c '<channel>' "$tmp/g.xml")
grep -q "^Job: 2 hosts, 16 ranks, $n channels" "$tmp/t.txt" || fail "host 0's graph has $n channels: $(head -2 "$tmp/t.txt")"
XCCL_GRAPH_FILE=$tmp/g.xml "$tool" --file "$f" --job 2x8 --format nccl-graph > "$tmp/g1.xml" ||
  fail "--job 2x8 with its own graph as XCCL_GRAPH_FILE"
cmp -s "$tmp/g.xml" "$tmp/g1.xml" || fail "host 0's graph does not read back as itself: $(diff "$tmp/g.xml" "$tmp/g1.xml")"

# Channels over every NIC (issue 45): JURECA-DC, 4 A100 each beside its own
# HDR NIC; 2x4 runs over all four (text line and json "channels_per_nic").
jureca=$data/hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml
"$tool" --file "$jureca" --job 2x4 > "$tmp/r.txt" || fail "jureca --job 2x4"
grep -Eq '^Channels per NIC of host 0: mlx5_0 [1-9][0-9]*, mlx5_1 [1-9][0-9]*, mlx5_2 [1-9][0-9]*, mlx5_3 [1-9][0-9]*,' \
  "$tmp/r.txt" || fail "jureca 2x4 leaves a NIC idle: $(cat "$tmp/r.txt")"
"$tool" --file "$jureca" --job 2x4 --format json |
  python3 -c 'import json,sys; j=json.load(sys.stdin)["job"]; assert all(k >= 1 for k in j["channels_per_nic"][:4]), j["channels_per_nic"]' ||
  fail "jureca 2x4 json: channels_per_nic"

"$tool" --file "$f" --job 2x4 | grep -Eq '^Channel 00/0[0-9] :  ([0-9]+ ){7}[0-9]+$' || fail "--job 2x4"
XCCL_NCHANNELS=3 "$tool" --file "$f" --job 4x8 | grep -q '^Job: 4 hosts, 32 ranks, 3 channels' ||
  fail "XCCL_NCHANNELS=3 does not force 3 channels"

"$tool" --file "$nogpu" --job 2x8 > "$tmp/h.txt" || fail "--job 2x8 without GPUs"
grep -q 'NUMA order' "$tmp/h.txt" || fail "host buffers: $(cat "$tmp/h.txt")"
grep -q 'enters at rank 0 (NUMA ' "$tmp/h.txt" || fail "host buffers' domains: $(cat "$tmp/h.txt")"
"$tool" --file "$nogpu" --job 2x8 --format json | python3 -c 'import json,sys; json.load(sys.stdin)["job"]' ||
  fail "host-buffer JSON"
"$tool" --file "$nogpu" --job 2x8 --format nccl-graph > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "nccl-graph without GPUs: exit $rc"
grep -q 'the NCCL graph format lists GPUs' "$tmp/err" || fail "nccl-graph without GPUs: $(cat "$tmp/err")"

for bad in 0x8 2x0 2x x8 2x8x 2x-1 abc 2x9; do
  "$tool" --file "$f" --job "$bad" > /dev/null 2> "$tmp/err"; rc=$?
  [ $rc -eq 2 ] || fail "--job $bad: exit $rc"
  grep -q 'xccl-topo: --job' "$tmp/err" || fail "--job $bad: $(cat "$tmp/err")"
done
grep -q 'this machine has 8 GPUs' "$tmp/err" || fail "--job 2x9: $(cat "$tmp/err")"
"$tool" --file "$f" --job 2x8 --format dot > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--job with --format dot: exit $rc"
"$tool" --file "$f" --job 2x8 --channels > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--job with --channels: exit $rc"
echo "check_job_tool: OK"
