#!/bin/sh
# check_graph_tool.sh XCCL_TOPO DATA_DIR — xccl-topo --format nccl-graph
# (issue 18): the output parses as NCCL's graph XML with the expected
# nchannels (as many <channel> elements, each holding every GPU);
# XCCL_GRAPH_FILE (and NCCL_GRAPH_FILE) reads it back to the same output;
# XCCL_MIN_NCHANNELS raises the count, XCCL_MAX_NCHANNELS and --max-channels
# lower it; a graph file that does not fit fails with
# exit 1, naming the file and the line.
set -u
tool=$1
data=$2
fail() { echo "check_graph_tool: FAIL: $*" >&2; exit 1; }
f=$data/nccl/aws-p4d.24xlarge-a100-topo.xml
tmp=$(mktemp -d) || fail mktemp
trap 'rm -rf "$tmp"' EXIT
unset XCCL_GRAPH_FILE NCCL_GRAPH_FILE XCCL_MIN_NCHANNELS XCCL_MAX_NCHANNELS NCCL_MIN_NCHANNELS NCCL_MAX_NCHANNELS

"$tool" --file "$f" --format nccl-graph -o "$tmp/g.xml" || fail "nccl-graph format"
head -1 "$tmp/g.xml" | grep -q '^<graphs version="1">' || fail "root: $(head -1 "$tmp/g.xml")"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/g.xml" 2 8 <<'PY' || fail "the graph does not parse or lacks what NCCL reads"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
want_ch, ngpus = int(sys.argv[2]), int(sys.argv[3])
assert root.tag == "graphs" and root.get("version") == "1", root.attrib
(g,) = root.findall("graph")
for a in ("id", "pattern", "crossnic", "nchannels", "speedintra", "speedinter", "latencyinter", "typeintra",
          "typeinter", "samechannels"):
    assert g.get(a) is not None, a
assert g.get("pattern") == "4" and g.get("id") == "0", g.attrib
assert int(g.get("nchannels")) == want_ch == len(g.findall("channel")), (g.get("nchannels"), want_ch)
for c in g.findall("channel"):
    gpus = sorted(int(x.get("dev"), 16) for x in c.findall("gpu"))
    assert gpus == list(range(ngpus)), gpus
    nets = c.findall("net")
    assert len(nets) == 2 and nets[0].get("dev") == nets[1].get("dev"), [n.attrib for n in nets]
PY
else
  [ "$(grep -c '<channel>' "$tmp/g.xml")" = 2 ] || fail "want 2 channels: $(cat "$tmp/g.xml")"
fi
XCCL_GRAPH_FILE=$tmp/g.xml "$tool" --file "$f" --format nccl-graph > "$tmp/g2.xml" || fail "XCCL_GRAPH_FILE read"
cmp -s "$tmp/g.xml" "$tmp/g2.xml" || fail "the graph read back differs: $(diff "$tmp/g.xml" "$tmp/g2.xml")"
NCCL_GRAPH_FILE=$tmp/g.xml "$tool" --file "$f" --format nccl-graph > "$tmp/g3.xml" || fail "NCCL_GRAPH_FILE read"
cmp -s "$tmp/g.xml" "$tmp/g3.xml" || fail "NCCL_GRAPH_FILE's graph differs"
XCCL_MIN_NCHANNELS=4 "$tool" --file "$f" --format nccl-graph > "$tmp/g4.xml" || fail "XCCL_MIN_NCHANNELS=4"
grep -q 'nchannels="4"' "$tmp/g4.xml" || fail "XCCL_MIN_NCHANNELS=4: $(grep nchannels "$tmp/g4.xml")"
[ "$(grep -c '<channel>' "$tmp/g4.xml")" = 4 ] || fail "XCCL_MIN_NCHANNELS=4: channels"
XCCL_MAX_NCHANNELS=1 "$tool" --file "$f" --format nccl-graph | grep -q 'nchannels="1"' || fail "XCCL_MAX_NCHANNELS=1"
"$tool" --file "$f" --format nccl-graph --max-channels 1 | grep -q 'nchannels="1"' || fail "--max-channels 1"
"$tool" --file "$f" --format matrix --channels | grep -q "^Channels: 2 channels" || fail "matrix channels"
sed 's/<gpu dev="0x7"\/>/<gpu dev="0x17"\/>/' "$tmp/g.xml" > "$tmp/bad.xml"
line=$(grep -n 'dev="0x17"' "$tmp/bad.xml" | head -1 | cut -d: -f1)
[ -n "$line" ] || fail "no GPU 7 in the graph to break"
XCCL_GRAPH_FILE=$tmp/bad.xml "$tool" --file "$f" --format nccl-graph > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "a graph with GPU 0x17: exit $rc"
grep -q "bad.xml:$line: .*GPU dev 0x17 is not in this topology" "$tmp/err" || fail "bad graph message: $(cat "$tmp/err")"
echo "check_graph_tool: OK"
