#!/bin/sh
# check_tool_virtual.sh XCCL_TOPO DATA_DIR — xccl-topo lists the virtual
# interfaces of a file as excluded, with the reasons, after the text and the
# matrix outputs; the other formats stay as they were (JSON parses, and a
# NIC name with a quote and a backslash in it comes out escaped); a file
# without virtual interfaces has no such section.
set -u
tool=$1
data=$2
fail() { echo "check_tool_virtual: FAIL: $*" >&2; exit 1; }
f=$data/virtual/nccl-2gpu-eno1-beside-docker-veth-cali.xml
tmp=$(mktemp -d) || fail mktemp
trap 'rm -rf "$tmp"' EXIT
"$tool" --file "$f" --channels > "$tmp/text" || fail "text"
grep -q "^Excluded interfaces: 4 " "$tmp/text" || fail "no 'Excluded interfaces: 4': $(cat "$tmp/text")"
for item in "docker0: a docker bridge" "br-3e8f2a9c1d4b: a docker network bridge" "veth5a1c9e2: a veth pair end" \
  "cali8d2e1c4f7a0: a calico interface"; do
  grep -qF "  $item" "$tmp/text" || fail "text lacks '  $item'"
done
grep -q "GPUs 2, NICs 1," "$tmp/text" || fail "text summary: $(grep GPUs "$tmp/text")"
"$tool" --file "$f" --format matrix --channels > "$tmp/matrix" || fail "matrix"
grep -q "^Channels: .*nic eno1" "$tmp/matrix" || fail "matrix channels: $(grep Channels "$tmp/matrix")"
grep -Eq "nic (docker|br-|veth|cali)" "$tmp/matrix" && fail "a channel on a virtual NIC: $(grep Channels "$tmp/matrix")"
grep -q "^  veth5a1c9e2: a veth pair end" "$tmp/matrix" || fail "matrix lacks the excluded list"
"$tool" --file "$f" --format json > "$tmp/j.json" || fail "json"
grep -q "Excluded" "$tmp/j.json" && fail "json got the text section"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [n for n in d["nics"]] and len(d["nics"]) == 1, d["nics"]' \
    "$tmp/j.json" || fail "json does not parse, or has more than eno1"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); x={e["name"]: e["why"] for e in d["excluded"]}
assert x.get("veth5a1c9e2") == "a veth pair end" and len(x) >= 3, x' "$tmp/j.json" || fail "json lacks the excluded list"
  # A NIC named with a quote and a backslash comes out escaped, in the
  # topology's "nics" and in the job's.
  sed 's/name="eno1"/name="e\&quot;n\\o1"/' "$f" > "$tmp/quote.xml"
  "$tool" --file "$tmp/quote.xml" --job 2x2 --format json > "$tmp/q.json" || fail "json of a NIC with a quote"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=[d["nics"][0]["name"], d["job"]["nics"][0]]
assert n == ["e\"n\\o1"] * 2, n' "$tmp/q.json" || fail "a NIC name with a quote and a backslash: $(grep -m1 '"e' "$tmp/q.json")"
fi
"$tool" --file "$data/nccl/aws-p4d.24xlarge-a100-topo.xml" > "$tmp/plain" || fail "plain file"
grep -q "Excluded" "$tmp/plain" && fail "a file without virtual interfaces has an Excluded section"
echo "check_tool_virtual: OK"
