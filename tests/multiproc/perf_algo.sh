#!/bin/sh
# perf_algo.sh XCCL_RUN XCCL_PERF — xccl-perf --algo all (issue 25): every
# size has one row per algorithm of all-reduce that takes it (line: at most
# 12 bytes), each with its results checked
# (#wrong 0), and exactly one of them marked as the tuner's pick; a name that
# is not an algorithm, or --algo with a collective that has none, is refused
# with a sentence and exit 2.
run=$1 perf=$2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "perf_algo: FAILED: $*"; cat "$out" "$err"; exit 1; }

"$run" -n 4 "$perf" allreduce -b 8 -e 256K -f 64 -n 3 -w 1 -c 1 --algo all >"$out" 2>"$err" ||
  fail "xccl-perf --algo all exited $?"
# Rows: size count type redop root time algbw busbw #wrong algo [*]
# line takes at most 12 bytes: its row only at 8 B.
awk '
  !/^#/ && NF >= 10 {
    rows[$1]++; if ($9 != 0) bad = bad " " $1 "/" $10 " has " $9 " wrong";
    if ($11 == "*") stars[$1]++; algos[$10] = 1; if ($10 == "line") line[$1] = 1
  }
  END {
    n = 0; for (a in algos) n++
    if (n < 3) { print "only " n " algorithms"; exit 1 }
    if (!line[8]) { print "no line row at 8 B"; exit 1 }
    for (s in rows) {
      want = n - (s + 0 > 12 ? 1 : 0)
      if (rows[s] != want || (s + 0 > 12 && line[s])) { print "size " s ": " rows[s] " rows for " want " algorithms"; exit 1 }
      if (stars[s] != 1) { print "size " s ": " stars[s] + 0 " rows marked *"; exit 1 }
    }
    if (bad != "") { print bad; exit 1 }
    print "perf_algo: " length(rows) " sizes x " n " algorithms, one pick each"
  }' "$out" || fail "the table"

"$run" -n 2 "$perf" allreduce -b 8 -e 8 --algo ring,trie >"$out" 2>"$err"
rc=$?
[ $rc -eq 2 ] && grep -q "'trie' is not an algorithm of allreduce" "$err" || fail "--algo ring,trie: exit $rc"
"$run" -n 2 "$perf" gather -b 8 -e 8 --algo all >"$out" 2>"$err"
rc=$?
[ $rc -eq 2 ] && grep -q "gather has no algorithms to choose from" "$err" || fail "gather --algo all: exit $rc"
echo "perf_algo: OK"
