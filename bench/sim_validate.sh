#!/usr/bin/env bash
# xccl-sim against xccl-perf on namespace clusters (issue 25, "The
# simulator"): on NODES namespace nodes x 2 ranks (bridge; sockets between
# nodes, shared memory inside one) it measures
#   - the links: a 2-rank sendrecv across two nodes (the network) and on one
#     node (shared memory): latency = the 16-byte time, bandwidth = 16 MiB over
#     the time it adds to the 16-byte one;
#   - all-reduce with xccl-perf --algo ring,tree,hier, 8 B to 16 MiB;
# then runs xccl-sim on that cluster (one NIC per node, the measured links)
# and prints measured against predicted, with their ratio. Needs root. Not a
# test: the numbers mean something only on a quiet machine.
#   sim_validate.sh BUILD_DIR [NODES...]      (default: 2 4)
set -u
build=$(cd "${1:?usage: sim_validate.sh BUILD_DIR [NODES...]}" && pwd)
shift
[ $# -gt 0 ] || set -- 2 4
perf=$build/tools/xccl-perf sim=$build/tools/sim/xccl-sim
for x in "$perf" "$sim"; do [ -x "$x" ] || { echo "sim_validate: $x is not built"; exit 1; }; done
. "$(cd "$(dirname "$0")" && pwd)/../tests/netns/netns.sh"
netns_need_root || exit 77
per=2 iters=${ITERS:-10} warm=${WARM:-3}
export XCCL_NCHANNELS=${XCCL_NCHANNELS:-2} XCCL_TIMEOUT=${XCCL_TIMEOUT:-120}
out=$(mktemp -d)
# netns_up sets its own EXIT trap: put ours back after it
up() { netns_up "$@" && trap 'netns_down; rm -rf "$out"' EXIT; }

# perf_json NAME RANKS_PER_NODE xccl-perf args...: rank 0's result lines, into $out/NAME.json
perf_json() {
  local name=$1 n=$2
  shift 2
  NETNS_LOG=$out/$name.rank
  if ! netns_launch "$n" 600 "$perf" "$@" -n "$iters" -w "$warm" -c 0 --json; then
    echo "sim_validate: xccl-perf $* failed:" >&2
    tail -5 "$NETNS_LOG.0" >&2
    return 1
  fi
  grep '"kind":"result"' "$NETNS_LOG.0" >"$out/$name.json"
}

# time_us FILE BYTES: the time of that size's row
time_us() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["size"] == int(sys.argv[2]): print(r["time_us"]); break' "$1" "$2"; }

# link FILE: "LATENCY_US GBPS" from a sendrecv of 16 B and 16 MiB
link() {
  local t8 t16
  t8=$(time_us "$1" 16) t16=$(time_us "$1" 16777216)
  python3 -c 'import sys; t8, t16 = map(float, sys.argv[1:]); print("%.3f %.3f" % (t8, 16777216 * 8 / ((t16 - t8) * 1e-6) / 1e9 if t16 > t8 else 1e3))' "$t8" "$t16"
}

up 2 bridge || { echo "sim_validate: could not build the namespaces"; exit 1; }
perf_json net 1 sendrecv -b 16 -e 16M -f 1048576 || exit 1
NETNS_COUNTS="2 0" perf_json shm 1 sendrecv -b 16 -e 16M -f 1048576 || exit 1
read -r net_us net_gbps <<<"$(link "$out/net.json")"
read -r shm_us shm_gbps <<<"$(link "$out/shm.json")"
echo "# links: between nodes (sockets over veth) ${net_us} us, ${net_gbps} Gb/s; inside a node (shm) ${shm_us} us, ${shm_gbps} Gb/s"
netns_down

printf '# %-9s %-5s %10s %14s %14s %8s\n' cluster algo bytes measured_us predicted_us pred/meas
for nodes in "$@"; do
  up "$nodes" bridge || { echo "sim_validate: could not build $nodes namespaces"; exit 1; }
  perf_json ar$nodes $per allreduce -b 8 -e 16M -f 8 --algo ring,tree,hier || exit 1
  netns_down
  "$sim" --hosts "$nodes" --gpus $per --nics 1 --channels "$XCCL_NCHANNELS" --nic-us "$net_us" --nic-gbps "$net_gbps" \
    --local-us "$shm_us" --local-gbps "$shm_gbps" allreduce -b 8 -e 16M -f 8 --algo ring,tree,hier --json \
    >"$out/sim$nodes.json" || { echo "sim_validate: xccl-sim failed"; exit 1; }
  python3 - "$out/ar$nodes.json" "$out/sim$nodes.json" "${nodes}x$per" <<'PY'
import json, sys
meas = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    meas[(r["algo"], r["size"])] = r["time_us"]
for r in json.load(open(sys.argv[2])):
    m = meas.get((r["algo"], r["bytes"]))
    if m is None:
        continue
    print("  %-9s %-5s %10d %14.1f %14.1f %8.2f" % (sys.argv[3], r["algo"], r["bytes"], m, r["time_us"], r["time_us"] / m))
PY
done
