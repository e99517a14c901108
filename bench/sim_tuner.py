#!/usr/bin/env python3
"""sim_tuner.py — does the tuner pick what the simulator finds fastest?

For each shape (hosts x GPUs), collective and size, runs xccl-sim over every
algorithm it replays and compares the row the tuner marks (chosen) with the
fastest row the tuner could have chosen (a price, model_us, not null): the
ratio chosen/fastest. Prints one line per cell where the
ratio passes --tolerance, then a table per shape, and exits 1 if any did.

  bench/sim_tuner.py BUILD_DIR|XCCL_SIM [--shapes 1x8,4x8,...] [--colls allreduce,...]
                     [--min 8] [--max 1G] [--factor 8] [--tolerance 1.10]
                     [--max-msgs N] [--json OUT]

The tuner and xccl-sim price with one cost model (src/core/cost.c) but
xccl-sim replays the schedules message by message, so where they disagree
the model's work statement is wrong for that shape, not the replay.

Both see one machine: xccl-sim's default links (NVLink 1 us, NIC 3 us), each
latency split as the tuner splits it (ALGO_MSG_ISSUE, src/core/algo.h: a
message sent beside others costs 1/8 of a step, its sender's issue) into the
wire's part and the sender's own time per message (--msg-frac; xccl-sim's
--msg-us and --local-msg-us). Without the split the replay issues a
thousand messages at once for free, and pairwise all-to-all on 128 x 8 looks
7x faster than Bruck's where the tuner prices it 12x slower.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

COLLS = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"]
UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def size(s):
    m = UNITS.get(s[-1:].upper(), 1)
    return int(float(s[:-1] if m > 1 else s) * m)


NVLINK_US, NIC_US = 1.0, 3.0  # xccl-sim's defaults: a message's latency inside a host and between hosts


def links(frac):
    """xccl-sim's latency flags with `frac` of each latency the sender's issue."""
    return ["--nvlink-us", repr(NVLINK_US * (1 - frac)), "--local-msg-us", repr(NVLINK_US * frac),
            "--nic-us", repr(NIC_US * (1 - frac)), "--msg-us", repr(NIC_US * frac)]


def run(sim, hosts, gpus, coll, lo, hi, factor, max_msgs, timeout_s, frac):
    cmd = [sim, "--hosts", str(hosts), "--gpus", str(gpus)] + links(frac) + [
        coll, "-b", str(lo), "-e", str(hi), "-f", str(factor), "--json"] + (
        ["--max-msgs", str(max_msgs)] if max_msgs else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {out.returncode}: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="a build folder, or xccl-sim itself")
    ap.add_argument("--shapes", default="1x8,4x8,128x8,1024x8,8192x8")
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--min", default="8")
    ap.add_argument("--max", default="1G")
    ap.add_argument("--factor", type=float, default=8)
    ap.add_argument("--tolerance", type=float, default=1.10)
    ap.add_argument("--max-msgs", help="xccl-sim's --max-msgs (its default when not given: fewer extrapolates "
                    "more rows, less exactly)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--msg-frac", type=float, default=1 / 8,
                    help="the share of each latency that is the sender's own time per message (ALGO_MSG_ISSUE)")
    ap.add_argument("--allow", default="",
                    help="cells known apart, SHAPE:COLL:BYTES comma-separated: printed, not failed")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="replays run at once (each xccl-sim is one thread; default: the machine's cores)")
    ap.add_argument("--json", help="write every cell here")
    a = ap.parse_args()
    sim = a.build if os.path.isfile(a.build) else a.build.rstrip("/") + "/tools/sim/xccl-sim"
    cells, bad = [], 0
    allowed = set(x for x in a.allow.split(",") if x)
    jobs = [(shape, coll) for shape in a.shapes.split(",") for coll in a.colls.split(",")]
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(run, sim, *(int(x) for x in shape.split("x")), coll, size(a.min), size(a.max),
                               a.factor, a.max_msgs, a.timeout, a.msg_frac) for shape, coll in jobs]
        for (shape, coll), fut in zip(jobs, futures):
            try:
                rows = fut.result()
            except subprocess.TimeoutExpired:
                print(f"{shape:>8} {coll:<13}: xccl-sim took over {a.timeout:.0f} s; not compared", file=sys.stderr)
                bad += 1
                continue
            for b in sorted({r["bytes"] for r in rows}):
                # only what the tuner may run there (it refuses the others: model_us null)
                at = [r for r in rows if r["bytes"] == b and r.get("model_us") is not None]
                best = min(at, key=lambda r: r["time_us"])
                chosen = next((r for r in at if r["chosen"]), None)
                if chosen is None:  # the tuner picked an algorithm xccl-sim does not replay
                    cells.append({"shape": shape, "coll": coll, "bytes": b, "chosen": None, "best": best["algo"]})
                    print(f"{shape:>8} {coll:<13} {b:>11}: the tuner's pick is not replayed", file=sys.stderr)
                    bad += 1
                    continue
                ratio = chosen["time_us"] / best["time_us"] if best["time_us"] > 0 else 1.0
                cells.append({"shape": shape, "coll": coll, "bytes": b, "chosen": chosen["algo"],
                              "chosen_us": chosen["time_us"], "model_us": chosen.get("model_us"),
                              "best": best["algo"], "best_us": best["time_us"], "ratio": ratio})
                if ratio > a.tolerance:
                    known = f"{shape}:{coll}:{b}" in allowed
                    bad += 0 if known else 1
                    print(f"{shape:>8} {coll:<13} {b:>11}: tuner {chosen['algo']} {chosen['time_us']:.1f} us, "
                          f"fastest {best['algo']} {best['time_us']:.1f} us (x{ratio:.2f})" + (" allowed" if known else ""))
    print()
    print(f"{'shape':>8} {'collective':<13} {'cells':>5} {'agree':>5} {'worst':>7}")
    for shape in a.shapes.split(","):
        for coll in a.colls.split(","):
            cs = [c for c in cells if c["shape"] == shape and c["coll"] == coll]
            ok = [c for c in cs if c.get("ratio") is not None and c["ratio"] <= a.tolerance]
            worst = max((c.get("ratio") or 0 for c in cs), default=0)
            print(f"{shape:>8} {coll:<13} {len(cs):>5} {len(ok):>5} {worst:>7.2f}")
    apart = sum(1 for c in cells if c.get("ratio") is None or c["ratio"] > a.tolerance)
    print(f"\n{len(cells) - apart} of {len(cells)} cells: the tuner's pick within x{a.tolerance:.2f} of the fastest"
          + (f"; {apart - bad} apart where --allow knows it" if apart > bad else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(cells, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
