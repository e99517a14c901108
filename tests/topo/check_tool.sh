#!/bin/sh
# check_tool.sh XCCL_TOPO DATA_DIR — xccl-topo's command line: every format
# on a saved machine, channels for a subset of GPUs, JSON that parses and has
# the documented keys, a PNG when Graphviz is installed, and clear failures
# (exit 1 for an unreadable file, 2 for bad usage).
set -u
tool=$1
data=$2
fail() { echo "check_tool: FAIL: $*" >&2; exit 1; }
f=$data/nccl/aws-p4d.24xlarge-a100-topo.xml
tmp=$(mktemp -d) || fail mktemp
trap 'rm -rf "$tmp"' EXIT

"$tool" --file "$f" > "$tmp/text" || fail "text format"
grep -q "GPUs 8, NICs 4, NUMA domains 2" "$tmp/text" || fail "text summary: $(head -3 "$tmp/text")"
"$tool" --file "$f" --format matrix --channels > "$tmp/matrix" || fail "matrix"
grep -q "^GPU0 *X *PIX/16" "$tmp/matrix" || fail "matrix row GPU0: $(sed -n 2p "$tmp/matrix")"
grep -q "^Channels: 2 channels" "$tmp/matrix" || fail "matrix channels line"
"$tool" --file "$f" --format xml -o "$tmp/dump.xml" || fail "xml"
head -1 "$tmp/dump.xml" | grep -q '^<system version="1">' || fail "xml root"
"$tool" --file "$tmp/dump.xml" --format matrix --channels > "$tmp/matrix2" || fail "xml reload"
cmp -s "$tmp/matrix" "$tmp/matrix2" || fail "matrix differs after xml dump and reload"
"$tool" --file "$f" --format dot > "$tmp/g.dot" || fail "dot"
grep -q "^graph xccl_topology {" "$tmp/g.dot" || fail "dot header"
"$tool" --file "$f" --format json > "$tmp/j.json" || fail "json"
for key in '"gpus"' '"nics"' '"channels"' '"nodes"' '"links"' '"nearest_nic"' '"nic_path"' '"speed_gbps"' '"bw_gbs"'; do
  grep -q "$key" "$tmp/j.json" || fail "json lacks $key"
done
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/j.json" <<'PY' || fail "json does not parse or breaks the schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["gpus"]) == 8 and len(d["nics"]) == 4
for i, g in enumerate(d["gpus"]):
    assert g["index"] == i and g["busid"] and g["nearest_nic"] is not None and g["nic_path"] == "PIX", g
for c in d["channels"]:
    assert sorted(c["gpus"]) == list(range(8)) and c["bw_gbs"] > 0, c
PY
fi
"$tool" --file "$f" --channels --gpus 4,5 --format text > "$tmp/sub" || fail "--gpus"
grep -q "GPUs 4 5\|GPUs 5 4" "$tmp/sub" || fail "--gpus 4,5 ring: $(grep -A3 Channels "$tmp/sub")"
if command -v dot >/dev/null 2>&1; then
  "$tool" --file "$f" --png "$tmp/g.png" > /dev/null || fail "--png"
  [ -s "$tmp/g.png" ] || fail "no PNG written"
else
  echo "check_tool: Graphviz not installed, --png not checked"
fi
"$tool" --file /nonexistent.xml > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"
grep -q "nonexistent.xml" "$tmp/err" || fail "missing file message: $(cat "$tmp/err")"
"$tool" --format nope > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad format: exit $rc"
"$tool" --file "$f" --gpus 0,x > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "bad --gpus: exit $rc"
echo "check_tool: OK"
