#!/usr/bin/env bash
# xccl-sim against xccl-perf on namespace clusters (issue 25, "The
# simulator"): on NODES namespace nodes x 2 ranks (bridge; sockets between
# nodes, shared memory inside one) it measures
#   - the links: a 2-rank sendrecv across two nodes (the network) and on one
#     node (shared memory): latency = the 16-byte time, bandwidth = 16 MiB over
#     the time it adds to the 16-byte one;
#   - all-reduce with xccl-perf --algo ring,tree,hier, 8 B to 16 MiB;
# then runs xccl-sim on that cluster (one NIC per node, the measured links)
# and prints measured against predicted, with their ratio. CALIBRATE=1 first
# scales every latency and every bandwidth by one factor each so that the
# ring's 8 B and 16 MiB match, and predicts the rest. The nodes share the
# machine's cores (CORES, default nproc): xccl-sim --cores prices ranks
# taking turns on them as the tuner does. Needs root. Not a
# test: the numbers mean something only on a quiet machine.
#   [CALIBRATE=1] [MSG=1] [CORES=N] sim_validate.sh BUILD_DIR [NODES...]      (default: 2 4)
set -u
build=$(cd "${1:?usage: sim_validate.sh BUILD_DIR [NODES...]}" && pwd)
shift
[ $# -gt 0 ] || set -- 2 4
perf=$build/tools/xccl-perf sim=$build/tools/sim/xccl-sim
for x in "$perf" "$sim"; do [ -x "$x" ] || { echo "sim_validate: $x is not built"; exit 1; }; done
. "$(cd "$(dirname "$0")" && pwd)/../tests/netns/netns.sh"
netns_need_root || exit 77
per=2 iters=${ITERS:-10} warm=${WARM:-3} cores=${CORES:-$(nproc)}
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
  # sim_run FILE LAT_SCALE BW_SCALE: xccl-sim on this cluster, the links'
  # latencies times LAT_SCALE and bandwidths over BW_SCALE
  sim_run() {
    local nu su ng sg
    read -r nu su ng sg <<<"$(python3 -c 'import sys; a, b = map(float, sys.argv[5:]); n, s, ng, sg = map(float, sys.argv[1:5]); print(n * a, s * a, ng / b, sg / b)' \
      "$net_us" "$shm_us" "$net_gbps" "$shm_gbps" "$2" "$3")"
    # MSG=1: a link's 16-byte time is the sender's own time per message
    # (--msg-us), not a delay on the wire: on a machine with fewer cores
    # than ranks it is CPU time, one message after another.
    local lat="--nic-us $nu --local-us $su"
    [ "${MSG:-0}" = 1 ] && lat="--nic-us 0 --local-us 0 --msg-us $nu --local-msg-us $su"
    # The nodes share this machine's cores: each gets cores / nodes of them
    # (--cores; CORES=0 leaves it out), as a fact of the machine, not a fit.
    [ "$cores" != 0 ] && lat="$lat --cores $(python3 -c 'import sys; print(float(sys.argv[1]) / int(sys.argv[2]))' "$cores" "$nodes")"
    "$sim" --hosts "$nodes" --gpus $per --nics 1 --channels "$XCCL_NCHANNELS" $lat --nic-gbps "$ng" \
      --local-gbps "$sg" allreduce -b 8 -e 16M -f 8 --algo ring,tree,hier --json >"$1" ||
      { echo "sim_validate: xccl-sim failed"; exit 1; }
  }
  # sim_time FILE ALGO BYTES
  sim_time() { python3 -c '
import json, sys
for r in json.load(open(sys.argv[1])):
    if r["algo"] == sys.argv[2] and r["bytes"] == int(sys.argv[3]): print(r["time_us"])' "$@"; }
  # Calibrated on the ring (CALIBRATE=1): one factor on every latency so
  # that the ring's 8 bytes match, then one on every bandwidth so that its
  # 16 MiB does; the tree and hier, and the ring's other sizes, are then
  # predictions. On a machine with fewer cores than ranks a step costs the
  # scheduler's time too, which the 2-rank link figures do not hold.
  la=1 bw=1
  sim_run "$out/sim$nodes.json" 1 1
  if [ "${CALIBRATE:-0}" = 1 ]; then
    la=$(python3 -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' \
      "$(time_us "$out/ar$nodes.json" 8)" "$(sim_time "$out/sim$nodes.json" ring 8)")
    sim_run "$out/sim$nodes.json" "$la" 1
    bw=$(python3 -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' \
      "$(time_us "$out/ar$nodes.json" 16777216)" "$(sim_time "$out/sim$nodes.json" ring 16777216)")
    sim_run "$out/sim$nodes.json" "$la" "$bw"
    printf '# %s: calibrated on the ring: latencies x %.2f, bandwidths / %.2f\n' "${nodes}x$per" "$la" "$bw"
  fi
  python3 - "$out/ar$nodes.json" "$out/sim$nodes.json" "${nodes}x$per" "${CALIBRATE:-0}" <<'PY'
import json, sys
meas = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    meas[(r["algo"], r["size"])] = r["time_us"]
near = n = 0
for r in json.load(open(sys.argv[2])):
    m = meas.get((r["algo"], r["bytes"]))
    if m is None:
        continue
    cal = sys.argv[4] == "1" and r["algo"] == "ring" and r["bytes"] in (8, 16777216)
    ratio = r["time_us"] / m
    if not cal:
        n += 1
        near += abs(ratio - 1) <= 0.25
    print("  %-9s %-5s %10d %14.1f %14.1f %8.2f%s" % (sys.argv[3], r["algo"], r["bytes"], m, r["time_us"], ratio,
                                                      "  (calibration)" if cal else ""))
print("# %s: %d of %d predictions within 25 %% of the measurement" % (sys.argv[3], near, n))
PY
done
