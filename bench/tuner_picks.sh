#!/usr/bin/env bash
# tuner_picks.sh XCCL_SIM [HOSTS] [GBPS] [US] — the tuner's pick for every
# collective, 2..8 ranks a host, 8 B to 1 GiB (x2), as xccl-sim's "chosen"
# column gives it on links of GBPS Gbit/s and US µs inside a host (default:
# 1 host at shared memory's table values, 56 Gb/s = 7 GB/s and 0.5 µs).
# One line per cell, "ranks collective bytes algo": diff two runs to see
# which picks a change to the cost model moves (issue 45: windowing the
# one-host pieces moved 36 of 1,176 host-memory picks).
set -euo pipefail
sim=${1:?usage: tuner_picks.sh XCCL_SIM [HOSTS] [GBPS] [US]}
hosts=${2:-1} gbps=${3:-56} us=${4:-0.5}
for k in 2 3 4 5 6 7 8; do
  for c in allreduce allgather reducescatter broadcast reduce alltoall; do
    "$sim" --hosts "$hosts" --gpus "$k" --nvlink-gbps "$gbps" --nvlink-us "$us" "$c" -b 8 -e 1G -f 2 --json |
      python3 -c "
import json, sys
for r in json.load(sys.stdin):
    if r['chosen']:
        print('$k', '$c', r['bytes'], r['algo'])"
  done
done
