#!/usr/bin/env bash
# xccl-sim against xccl-perf on namespace clusters (issues 25 and 45): on
# NODES namespace nodes x PER ranks (bridge; sockets between nodes, shared
# memory inside one) it measures, in each of REPEAT passes,
#   - the links with a 2-rank sendrecv: between two nodes (the network) and,
#     where PER > 1, on one node (shared memory): latency = the 8-byte time,
#     bandwidth = LINK bytes over the time they add to the 8-byte one;
#   - all-reduce with xccl-perf --algo ALGOS, MIN to MAX by FACTOR (and MAX);
# then runs xccl-sim on that cluster (one NIC per node, the measured links)
# and prints measured against predicted, their ratio and the spread over
# the passes (sim_validate.py does the arithmetic; every time is the least
# over the passes: other work on the machine only adds time). Nothing is fitted to the all-reduce unless CALIBRATE=1,
# which first scales every latency and every bandwidth by one factor each so
# that the ring's smallest and largest sizes match, and predicts the rest.
# TOLERANCE=0.25 makes it a check: exit 1, naming each algorithm and size
# whose prediction is more than 25 % off the measurement (the table is
# printed first, always), but for the rows ALLOW names ("rab:8M": rab from
# 8 MiB up; the caller says why). Where rows are outside after REPEAT
# passes, further passes run, up to MAX_REPEAT (default REPEAT): the least
# of more passes is less disturbed. The nodes share the machine's cores (CORES,
# default nproc): xccl-sim --cores prices ranks taking turns on them as the
# tuner does. Needs root (exit 77 and the reason otherwise).
#
#   [PER=2] [ALGOS=ring,tree,rab,hier] [MIN=8] [MAX=64M] [FACTOR=2] [REPEAT=1]
#   [MAX_REPEAT=N] [ITERS=10] [ITERS_SMALL=200] [WARM=3] [LINK=16M] [TOLERANCE=0]
#   [ALLOW=algo:bytes,...] [PIN=1] [CALIBRATE=1] [MSG=1] [CORES=N]
#   sim_validate.sh BUILD_DIR [NODES...]                                (default: 2 4)
#
# ITERS_SMALL timed iterations for sizes under 1 MiB, ITERS for the rest.
# PIN=1 runs node i's ranks on core i % nproc only (a rank's proxy thread
# then shares its core). The CTest netns_sim_validate_2x1
# (tests/netns/tests.cmake) runs it as a check on 2 nodes x 1 rank.
set -u
# QUIET=VAR: run only where the environment variable VAR is 1 (a machine
# known quiet, with a core per rank), else exit 77 saying so: the check
# times things, and on a shared 2-core machine its ratios move by 30 %.
if [ -n "${QUIET:-}" ] && [ "$(printenv "$QUIET")" != 1 ]; then
  echo "sim_validate: skipped: it times sockets against a model; set $QUIET=1 on a quiet machine with a core per rank"
  exit 77
fi
build=$(cd "${1:?usage: sim_validate.sh BUILD_DIR [NODES...]}" && pwd)
shift
[ $# -gt 0 ] || set -- 2 4
here=$(cd "$(dirname "$0")" && pwd)
perf=$build/tools/xccl-perf sim=$build/tools/sim/xccl-sim
for x in "$perf" "$sim"; do [ -x "$x" ] || { echo "sim_validate: $x is not built"; exit 1; }; done
. "$here/../tests/netns/netns.sh"
netns_need_root || exit 77
calc() { python3 -c "import sys; print($1)" "${@:2}"; }
per=${PER:-2} algos=${ALGOS:-ring,tree,rab,hier} repeat=${REPEAT:-1} tol=${TOLERANCE:-0}
max_repeat=${MAX_REPEAT:-$repeat} allow=${ALLOW:-}
iters=${ITERS:-10} iters_small=${ITERS_SMALL:-200} warm=${WARM:-3} cores=${CORES:-$(nproc)}
min=$(numfmt --from=iec "${MIN:-8}") max=$(numfmt --from=iec "${MAX:-64M}") factor=${FACTOR:-2}
linkb=$(numfmt --from=iec "${LINK:-16M}")
export XCCL_NCHANNELS=${XCCL_NCHANNELS:-2} XCCL_TIMEOUT=${XCCL_TIMEOUT:-120}
out=$(mktemp -d)
fail=0
pin=()
[ "${PIN:-0}" = 1 ] && pin=(sh -c 'exec taskset -c $((XCCL_RANK / $0 % $(nproc))) "$@"' "$per")

# groups: "FIRST LAST ITERS" per xccl-perf (and xccl-sim) run, which
# together cover MIN, MIN x FACTOR, ... up to MAX, and MAX itself where the
# steps miss it; the sizes under 1 MiB in one run of ITERS_SMALL iterations.
groups() {
  local s=$min small="" large="" last=""
  while [ "$s" -le "$max" ]; do
    if [ "$s" -lt 1048576 ]; then small="${small:-$s} $s"; else large="${large:-$s} $s"; fi
    last=$s s=$((s * factor))
  done
  [ -n "$small" ] && echo "$(echo $small | awk '{print $1, $NF}') $iters_small"
  [ -n "$large" ] && echo "$(echo $large | awk '{print $1, $NF}') $iters"
  [ "$last" = "$max" ] || echo "$max $max $iters"
}

# perf_json FILE COUNTS ITERS xccl-perf args...: rank 0's result lines,
# appended to FILE; COUNTS is the ranks on each node (NETNS_COUNTS).
perf_json() {
  local file=$1 counts=$2 n=$3
  shift 3
  NETNS_LOG=$out/log NETNS_COUNTS=$counts
  if ! netns_launch 0 600 "${pin[@]}" "$@" -n "$n" -w "$warm" -c 0 --json; then
    echo "sim_validate: $* failed on nodes '$counts':" >&2
    tail -5 "$NETNS_LOG.0" >&2
    return 1
  fi
  grep '"kind":"result"' "$NETNS_LOG.0" >>"$file"
}

# links DIR COUNTS PREFIX: a 2-rank sendrecv on those nodes, of 8 bytes
# (ITERS_SMALL iterations: it is the latency) and of LINK bytes.
links() {
  perf_json "$1/${3}8.json" "$2" "$iters_small" "$perf" sendrecv -b 8 -e 8 &&
    perf_json "$1/${3}_big.json" "$2" "$iters" "$perf" sendrecv -b "$linkb" -e "$linkb"
}

# counts NODES RANKS: NETNS_COUNTS for RANKS on each of the first NODES of
# the $most nodes up, none on the others.
counts() { local i c=""; for ((i = 0; i < most; i++)); do c="$c $((i < $1 ? $2 : 0))"; done; echo $c; }

# pass: one more pass of measurements on the cluster $nodes x $per, into
# $dir/pass$p. Links and all-reduces alternate pass by pass, so that
# whatever else runs on the machine meets both alike.
pass() {
  p=$((p + 1))
  local pd=$dir/pass$p b e n
  mkdir -p "$pd"
  links "$pd" "$(counts 2 1)" sr || return 1
  if [ "$per" -gt 1 ]; then links "$pd" "2" shm || return 1; fi
  while read -r b e n; do
    perf_json "$pd/ar.json" "$(counts "$nodes" "$per")" "$n" "$perf" allreduce -b "$b" -e "$e" -f "$factor" \
      --algo "$algos" || return 1
  done < <(groups)
}

# sim_run FILE LAT_SCALE BW_SCALE: xccl-sim on the cluster, the links'
# latencies times LAT_SCALE and bandwidths over BW_SCALE, over the sizes
# that xccl-perf ran, into FILE (one JSON list).
sim_run() {
  local nu su ng sg
  nu=$(calc 'float(sys.argv[1]) * float(sys.argv[2])' "$net_us" "$2")
  su=$(calc 'float(sys.argv[1]) * float(sys.argv[2])' "$shm_us" "$2")
  ng=$(calc 'float(sys.argv[1]) / float(sys.argv[2])' "$net_gbps" "$3")
  sg=$(calc 'float(sys.argv[1]) / float(sys.argv[2])' "$shm_gbps" "$3")
  # MSG=1: a link's 8-byte time is the sender's own time per message
  # (--msg-us), not a delay on the wire: on a machine with fewer cores
  # than ranks it is CPU time, one message after another.
  local lat="--nic-us $nu --local-us $su"
  [ "${MSG:-0}" = 1 ] && lat="--nic-us 0 --local-us 0 --msg-us $nu --local-msg-us $su"
  # The nodes share this machine's cores: each gets cores / nodes of them
  # (--cores; CORES=0 leaves it out), as a fact of the machine, not a fit.
  [ "$cores" != 0 ] && lat="$lat --cores $(calc 'float(sys.argv[1]) / int(sys.argv[2])' "$cores" "$nodes")"
  local b e n rows=$out/rows.json
  : >"$1.lines"
  while read -r b e n; do
    "$sim" --hosts "$nodes" --gpus "$per" --nics 1 --channels "$XCCL_NCHANNELS" $lat --nic-gbps "$ng" \
      --local-gbps "$sg" allreduce -b "$b" -e "$e" -f "$factor" --algo "$algos" --json >"$rows" ||
      { echo "sim_validate: xccl-sim failed"; return 1; }
    python3 -c 'import json, sys; [print(json.dumps(r)) for r in json.load(open(sys.argv[1]))]' "$rows" >>"$1.lines"
  done < <(groups)
  python3 -c 'import json, sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1])]))' "$1.lines" >"$1"
}

# time_of FILES KEY ALGO BYTES: a row's least time in the files the
# pattern FILES names (JSON lines or a list), its size under KEY
# (xccl-perf's "size", xccl-sim's "bytes").
time_of() { python3 -c '
import glob, json, sys
pattern, key, algo, size = sys.argv[1:]
items = []
for f in glob.glob(pattern):
    text = open(f).read().strip()
    items += json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines()]
print(min(r["time_us"] for r in items if r["algo"] == algo and r[key] == int(size)))' "$@"; }

# predict: the links (the least times over the passes), and xccl-sim's
# replay with them into $dir/sim.json; prints what it took.
predict() {
  local pd=$dir
  read -r net_us net_gbps shm_us shm_gbps <<<"$(python3 "$here/sim_validate.py" link "$dir" "$linkb")"
  [ -n "$shm_gbps" ] || return 1
  if [ "$per" -gt 1 ]; then
    echo "# $cluster links: between nodes (sockets over veth) $net_us us, $net_gbps Gb/s; inside a node (shm)" \
      "$shm_us us, $shm_gbps Gb/s"
  else
    # One rank per node: no shared-memory link to measure, and none that
    # the replay uses (xccl-sim's local link carries nothing there), so
    # xccl-sim's defaults stand in.
    echo "# $cluster link: between nodes (sockets over veth) $net_us us, $net_gbps Gb/s"
    shm_us=1 shm_gbps=1000
  fi
  sim_run "$pd/sim.json" 1 1 || return 1
  [ "${CALIBRATE:-0}" = 1 ] || return 0
  # Calibrated on the ring: one factor on every latency so that the ring's
  # smallest size matches, then one on every bandwidth so that its largest
  # does; the other algorithms, and the ring's other sizes, are then
  # predictions.
  local la bw
  la=$(calc 'float(sys.argv[1]) / float(sys.argv[2])' "$(time_of "$pd/pass*/ar.json" size ring "$min")" \
    "$(time_of "$pd/sim.json" bytes ring "$min")")
  sim_run "$pd/sim.json" "$la" 1 || return 1
  bw=$(calc 'float(sys.argv[1]) / float(sys.argv[2])' "$(time_of "$pd/pass*/ar.json" size ring "$max")" \
    "$(time_of "$pd/sim.json" bytes ring "$max")")
  sim_run "$pd/sim.json" "$la" "$bw" || return 1
  printf '# %s: calibrated on the ring: latencies x %.2f, bandwidths / %.2f\n' "$cluster" "$la" "$bw"
}

report() { python3 "$here/sim_validate.py" report "$dir" "$cluster" "${CALIBRATE:-0}" "$tol" "$allow"; }

most=2
for nodes in "$@"; do [ "$nodes" -gt "$most" ] && most=$nodes; done
netns_up "$most" bridge || { echo "sim_validate: could not build $most namespaces"; exit 1; }
trap 'netns_down; rm -rf "$out"' EXIT # netns_up set its own EXIT trap: ours undoes it too

printf '# sim_validate: %s node(s) x %d rank(s), %s, %s to %s by %s, %d pass(es)%s\n' "$*" "$per" "$algos" \
  "$(numfmt --to=iec "$min")" "$(numfmt --to=iec "$max")" "$factor" "$repeat" "${pin:+, pinned}"
for nodes in "$@"; do
  cluster="${nodes}x$per" dir=$out/${nodes}x$per p=0
  # Where rows are outside after REPEAT passes, more passes, up to MAX_REPEAT.
  while :; do
    pass || exit 1
    [ "$p" -ge "$repeat" ] || continue
    predict >"$out/predict.txt" || { cat "$out/predict.txt"; exit 1; }
    report >"$out/report.txt" && break
    [ "$p" -lt "$max_repeat" ] || break
    echo "# $cluster: $(grep -c '^sim_validate: .*outside' "$out/report.txt") row(s) outside after $p pass(es): one more"
  done
  cat "$out/predict.txt"
  report || fail=1
done
exit $fail
