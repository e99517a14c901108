#!/usr/bin/env python3
"""sim_validate.py — the arithmetic of bench/sim_validate.sh.

    sim_validate.py link OUT LINK_BYTES     the links, from the passes
    sim_validate.py report OUT CLUSTER CALIBRATED TOLERANCE ALLOW

OUT holds one folder per pass (pass1, pass2, ...), each with xccl-perf's
JSON result lines: sr8.json and sr_big.json (a 2-rank sendrecv of 8 and
LINK_BYTES bytes between two nodes), shm8.json and shm_big.json (the same
inside one node; absent with one rank per node) and ar.json (the
all-reduces); OUT/sim.json holds xccl-sim's rows. Every time used is the
least over the passes: other work on the machine only adds time, so the
least is the run it disturbed least (a pass-by-pass comparison, each pass
replayed on its own links, did worse on a loaded machine: a disturbed
8-byte sendrecv throws off every prediction of its pass).

link prints one line, "NET_US NET_GBPS SHM_US SHM_GBPS" (the shm figures 0
without shm files): latency = the 8-byte time; bandwidth = LINK_BYTES over
the time they add to the 8-byte one.

report prints measured, predicted, their ratio and the spread (the most
over the least of the passes' measurements) per algorithm and size, then
how many predictions are within TOLERANCE (a fraction: 0.25 is 25 %); with
TOLERANCE > 0 it names every row outside it and exits 1 if there is one.
ALLOW ("" or "algo:bytes,...", K/M/G suffixes) names rows that may be
outside: an algorithm's rows from that size up, whose known cause the
caller states; they are marked and counted apart. CALIBRATED=1 marks the
ring's smallest and largest rows as the calibration (not counted).
"""
import glob
import json
import os
import sys


def rows(path, key):
    """{(algo, size): time_us} of a file of JSON lines or a JSON list."""
    text = open(path).read().strip()
    items = json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines()]
    return {(r.get("algo") or "-", r[key]): r["time_us"] for r in items}


def least(out, name, key=("-", 0)):
    """The least time of row key over the passes' files called name."""
    t = [rows(f, "size")[key] for f in sorted(glob.glob(os.path.join(out, "pass*", name)))]
    if not t:
        sys.exit("sim_validate: no row %s in %s/pass*/%s" % (key, out, name))
    return min(t)


def link(out, nbytes):
    words = []
    for prefix in ("sr", "shm"):
        if not glob.glob(os.path.join(out, "pass*", prefix + "8.json")):
            words += ["0", "0"]
            continue
        t8 = least(out, prefix + "8.json", ("-", 8))
        tb = least(out, prefix + "_big.json", ("-", nbytes))
        gbps = (nbytes - 8) * 8 / ((tb - t8) * 1e-6) / 1e9 if tb > t8 else 1e3
        words += ["%.3f" % t8, "%.4f" % gbps]
    print(" ".join(words))


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    m = units.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if m > 1 else text) * m)


def report(out, cluster, calibrated, tol, allow):
    allowed = {}
    for word in filter(None, allow.split(",")):
        algo, _, at = word.partition(":")
        allowed[algo] = size(at or "0")
    pds = sorted(glob.glob(os.path.join(out, "pass*")))
    pred = rows(os.path.join(out, "sim.json"), "bytes")
    per = {}  # (algo, size): the measured times, one per pass
    for pd in pds:
        for key, m in rows(os.path.join(pd, "ar.json"), "size").items():
            per.setdefault(key, []).append(m)
    sizes = sorted({s for _, s in per})
    largest = sizes[-1] if sizes else 0
    print("# %-7s %-5s %10s %12s %12s %9s %7s" % ("cluster", "algo", "bytes", "measured_us", "predicted_us",
                                                  "pred/meas", "spread"))
    near = n = excused = 0
    outside = []
    for (algo, nbytes), ts in sorted(per.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if (algo, nbytes) not in pred:
            continue
        m, p = min(ts), pred[(algo, nbytes)]
        ratio = p / m
        cal = calibrated and algo == "ring" and nbytes in (sizes[0], largest)
        note = "  (calibration)" if cal else ""
        if not cal:
            n += 1
            if abs(ratio - 1) <= (tol if tol > 0 else 0.25):
                near += 1
            elif algo in allowed and nbytes >= allowed[algo]:
                excused += 1
                note = "  (outside, allowed)"
            elif tol > 0:
                outside.append("%s %d B: predicted %.1f us, measured %.1f us (x%.2f)" % (algo, nbytes, p, m, ratio))
        print("  %-7s %-5s %10d %12.1f %12.1f %9.2f %7.2f%s" % (cluster, algo, nbytes, m, p, ratio,
                                                              max(ts) / m, note))
    print("# %s: %d of %d predictions within %g %% of the measurement%s (least of %d pass(es))" %
          (cluster, near, n, 100 * (tol if tol > 0 else 0.25), ", %d outside where allowed" % excused if excused else "",
           len(pds)))
    for o in outside:
        print("sim_validate: %s: outside %g %%: %s" % (cluster, 100 * tol, o))
    return 1 if outside else 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "link":
        link(sys.argv[2], int(sys.argv[3]))
        return 0
    if len(sys.argv) == 7 and sys.argv[1] == "report":
        return report(sys.argv[2], sys.argv[3], sys.argv[4] == "1", float(sys.argv[5]), sys.argv[6])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
