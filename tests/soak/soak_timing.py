#!/usr/bin/env python3
"""soak_timing.py — the soak's times: percentiles, and where a recovery's time goes (imported by
soak_driver.py)."""

# The steps of a recovery the table breaks 'after' into (Fault.marks): each from the one before it, the first
# from detection (the last survivor's error; the driver decides at the first, so it can be negative).
# (The replacements start at the decision or, after a link or partition fault, once the grow id is seen:
# Fault.marks "spawned" and "seen", not steps of their own.)
STEPS = {"decide": "decide", "id": "shrink (to the grow id)", "grown": "grow (to all ranks in the new epoch)",
         "back": "first iteration"}


def pctl(xs, p):
    """Nearest-rank percentile; '-' when there is no sample."""
    if not xs:
        return "-"
    s = sorted(xs)
    return "%.2f" % s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def steps_line(faults):
    """Where a recovery's time goes: p50/p99 of each step, over the recoveries with no second failure; None
    without one."""
    fs = [f for f in faults if f.recover_s is not None and f.second is None and f.detect_s is not None
          and all(k in f.marks for k in STEPS)]
    if not fs:
        return None
    prev, parts = "detect", []
    for k in STEPS:
        ds = [f.marks[k] - (f.t + f.detect_s if prev == "detect" else f.marks[prev]) for f in fs]
        parts.append("%s %s/%s" % (STEPS[k], pctl(ds, 50), pctl(ds, 99)))
        prev = k
    return ("recovery steps after detection, s p50/p99 over %d recoveries (no second failure): %s" %
            (len(fs), ", ".join(parts)))
