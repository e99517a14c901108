#!/bin/sh
# check_tool_env.sh XCCL_TOPO DATA_DIR — xccl-topo without --file shows what
# the library would use (issue 18): the file XCCL_TOPO_FILE names (its GPUs),
# or NCCL_TOPO_FILE's when only that is set, XCCL_TOPO_FILE winning over it,
# else the live machine; the text output says which. --file still wins. A
# file that cannot be read fails (exit 1) naming the variable and the file.
set -u
tool=$1
data=$2
fail() { echo "check_tool_env: FAIL: $*" >&2; exit 1; }
f=$data/nccl/aws-p4d.24xlarge-a100-topo.xml
g=$data/lenient/nccl-dev-gaps.xml
tmp=$(mktemp -d) || fail mktemp
trap 'rm -rf "$tmp"' EXIT
unset XCCL_TOPO_FILE NCCL_TOPO_FILE

XCCL_TOPO_FILE=$f "$tool" > "$tmp/x" 2> "$tmp/x.err" || fail "XCCL_TOPO_FILE: exit $?: $(cat "$tmp/x.err")"
grep -q "^Source: from XCCL_TOPO_FILE=$f\$" "$tmp/x" || fail "XCCL_TOPO_FILE: no source line: $(head -3 "$tmp/x")"
grep -q "GPUs 8, NICs 4, NUMA domains 2" "$tmp/x" || fail "XCCL_TOPO_FILE: not the file's GPUs: $(head -3 "$tmp/x")"

NCCL_TOPO_FILE=$f "$tool" > "$tmp/n" 2> "$tmp/n.err" || fail "NCCL_TOPO_FILE: exit $?: $(cat "$tmp/n.err")"
grep -q "^Source: from NCCL_TOPO_FILE=$f\$" "$tmp/n" || fail "NCCL_TOPO_FILE: no source line: $(head -3 "$tmp/n")"
grep -q "GPUs 8, NICs 4, NUMA domains 2" "$tmp/n" || fail "NCCL_TOPO_FILE: not the file's GPUs: $(head -3 "$tmp/n")"

XCCL_TOPO_FILE=$g NCCL_TOPO_FILE=$f "$tool" > "$tmp/b" 2> "$tmp/b.err" || fail "both set: exit $?"
grep -q "^Source: from XCCL_TOPO_FILE=$g\$" "$tmp/b" || fail "both set: XCCL_TOPO_FILE does not win: $(head -3 "$tmp/b")"
grep -q "^GPUs 3," "$tmp/b" || fail "both set: not XCCL_TOPO_FILE's 3 GPUs: $(head -3 "$tmp/b")"
grep -q "nccl-dev-gaps.xml:7: GPU dev numbers 0 2 5" "$tmp/b.err" || fail "both set: the file's warning is not shown: $(cat "$tmp/b.err")"

XCCL_TOPO_FILE=$g "$tool" --file "$f" > "$tmp/o" 2>/dev/null || fail "--file with XCCL_TOPO_FILE: exit $?"
grep -q "^Source: from --file $f\$" "$tmp/o" || fail "--file does not win: $(head -3 "$tmp/o")"

"$tool" > "$tmp/l" 2>/dev/null || fail "live: exit $?"
grep -q "^Source: live (hwloc)\$" "$tmp/l" || fail "live: no source line: $(head -3 "$tmp/l")"

XCCL_TOPO_FILE=/nonexistent.xml "$tool" > /dev/null 2> "$tmp/e"; rc=$?
[ $rc -eq 1 ] || fail "XCCL_TOPO_FILE=/nonexistent.xml: exit $rc"
grep -q "XCCL_TOPO_FILE=/nonexistent.xml: cannot open topology file /nonexistent.xml" "$tmp/e" ||
  fail "XCCL_TOPO_FILE=/nonexistent.xml: message: $(cat "$tmp/e")"
echo "check_tool_env: OK"
