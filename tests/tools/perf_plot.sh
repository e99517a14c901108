#!/bin/sh
# xccl-perf --plot and xccl-plot (issue 27, "Plots"): the picture holds a line
# per algorithm with a point per size, bad input is refused before anything
# runs, and xccl-plot reads rows with their own series (bench/compare.sh's).
#   perf_plot.sh XCCL_RUN XCCL_PERF       (skipped without matplotlib)
run=$1 perf=$2
plot=$(dirname "$perf")/xccl-plot
fail=0
say() { echo "FAIL: $*"; fail=1; }
tmp=${TMPDIR:-/tmp}/xccl-plot-test.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# png_size FILE: "WIDTH HEIGHT" from the PNG header, or nothing if not a PNG
png_size() {
  python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read(24)
if b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR": print(*struct.unpack(">II", b[16:24]))' "$1"
}

printf '{"kind":"result","size":8,"busbw_gbps":1}\n' | "$plot" -o "$tmp/probe.png" >"$tmp/probe.out" 2>&1
if grep -q "needs matplotlib" "$tmp/probe.out"; then
  echo "skipped: $(cat "$tmp/probe.out")"
  exit 77
fi

# Four sizes (8 B .. 4 KiB, x8), two algorithms: two series of four points.
rows_before=$(ls /tmp/xccl-perf-rows.* 2>/dev/null | wc -l)
"$run" -n 2 "$perf" allreduce -b 8 -e 4K -f 8 -n 5 -w 1 --algo ring,rd --plot "$tmp/ar.png" >"$tmp/ar.out" 2>&1 ||
  say "xccl-perf --plot exited $?: $(tail -3 "$tmp/ar.out")"
line=$(grep "^xccl-plot: " "$tmp/ar.out")
case "$line" in
"xccl-plot: 2 series (allreduce ring, allreduce rd), 8 points -> $tmp/ar.png" | \
  "xccl-plot: 2 series (allreduce rd, allreduce ring), 8 points -> $tmp/ar.png") ;;
*) say "xccl-perf --plot: not 2 series of 4 points: $line" ;;
esac
[ "$(png_size "$tmp/ar.png")" = "800 500" ] || say "ar.png is not an 800 x 500 PNG"
[ "$(ls /tmp/xccl-perf-rows.* 2>/dev/null | wc -l)" = "$rows_before" ] || say "xccl-perf --plot left its rows in /tmp"

# A folder that cannot be written: refused on every rank before the run,
# with the folder named; nothing drawn.
"$run" -n 2 "$perf" allreduce -b 8 -e 64 --plot "$tmp/no/such/dir/x.png" >"$tmp/bad.out" 2>&1 &&
  say "--plot into a missing folder accepted"
grep -q "cannot write in $tmp/no/such/dir" "$tmp/bad.out" || say "--plot's refusal does not name the folder: $(head -2 "$tmp/bad.out")"
grep -q "avg busbw" "$tmp/bad.out" && say "--plot into a missing folder ran the benchmark"

# Rows with their own series, as bench/compare.sh writes them; sizes of 0
# (no place on a log axis) and other kinds of lines left out.
cat >"$tmp/rows.json" <<'ROWS'
{"kind":"result","series":"xccl 2 ranks","size":1024,"busbw_gbps":1.5}
{"kind":"result","series":"xccl 2 ranks","size":2048,"busbw_gbps":2.5}
{"kind":"result","series":"mpi 2 ranks","size":1024,"busbw_gbps":0.5}
{"kind":"result","series":"mpi 2 ranks","size":0,"busbw_gbps":0}
{"kind":"summary","sizes":2}
# a comment line
ROWS
"$plot" -o "$tmp/rows.png" --title "two libraries" "$tmp/rows.json" >"$tmp/rows.out" 2>&1 || say "xccl-plot on rows exited $?"
grep -q "xccl-plot: 2 series (xccl 2 ranks, mpi 2 ranks), 3 points" "$tmp/rows.out" ||
  say "xccl-plot: series from the rows: $(cat "$tmp/rows.out")"
# A panel per value of "panel" (bench/compare.sh's numbers of ranks).
sed 's/"kind":"result",/&"panel":"P",/; 3s/"panel":"P"/"panel":"Q"/' "$tmp/rows.json" >"$tmp/panels.json"
"$plot" -o "$tmp/panels.png" "$tmp/panels.json" >"$tmp/panels.out" 2>&1 || say "xccl-plot on panels exited $?"
grep -q "xccl-plot: 2 series (xccl 2 ranks, mpi 2 ranks), 3 points, 2 panels" "$tmp/panels.out" ||
  say "xccl-plot: panels: $(cat "$tmp/panels.out")"
[ "$(png_size "$tmp/panels.png" | cut -d' ' -f1)" -gt 800 ] || say "two panels drawn no wider than one"
printf '{"kind":"result","size":8,\n' | "$plot" -o "$tmp/broken.png" >"$tmp/broken.out" 2>&1 && say "a broken line accepted"
grep -q "line 1 is not JSON" "$tmp/broken.out" || say "a broken line's message: $(cat "$tmp/broken.out")"
[ -e "$tmp/broken.png" ] && say "a picture drawn from a broken line"

[ $fail = 0 ] && echo "perf_plot: all checks passed"
exit $fail
