#!/usr/bin/python3
"""XCCL_TRACE: the ranks' timelines, merged and drawn by tools/xccl-trace.

  test_trace.py late       XCCL_RUN TRACE_RANK XCCL_TRACE_TOOL
      4 ranks run 4 all-reduces; XCCL_FAULT holds rank 2's messages of
      all-reduce #3 back DELAY ms. After `xccl-trace merge`: each rank is
      its own process named "rank N (host)" holding exactly its file's
      events; in #3 every other rank waits for a peer most of DELAY while
      rank 2 hardly waits; the ranks' #3 ends line up on rank 0's clock.
      Then rank 1's file is moved 5 s onto another clock (its events and
      its offset): the merge is the same to the microsecond; moving only
      its events (a wrong offset) breaks the alignment, which the check
      must see.
      Over sockets (XCCL_TRANSPORT=socket) the proxy holds the messages back
      instead of the kernel, and the same holds.
  test_trace.py png        ...   `xccl-trace png` writes a PNG (skipped,
      exit 77, when matplotlib is missing)
  test_trace.py off        ...   XCCL_TRACE unset: no file is written and no
      rank says it wrote one; XCCL_TRACE set on rank 1 only: the job still
      ends at once, and rank 1's file has no clock offset
  test_trace.py kill       ...   rank 2 is killed in all-reduce #3: each
      survivor's file, written when its communicator failed, says so and
      holds #1 to #3; the merge takes the three
  test_trace.py unwritable ...   XCCL_TRACE in a directory that does not
      exist: one WARN per rank naming the path and the error; the job ends
      well
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from observe_util import check, run

SKIP = 77
DELAY_MS = 400
NRANKS = 4
LATE = 2


def job(xrun, prog, tmp, extra=None, nranks=NRANKS):
    env = {"XCCL_TRACE": tmp, "XCCL_ALGO": "allreduce:ring"}
    env.update(extra or {})
    rc, out = run([xrun, "-n", str(nranks), "--grace", "5", "--timeout", "60", prog, "4"], env)
    check(rc == 0, "the job failed (exit %d)" % rc, out)
    return out


def merge(tool, directory):
    rc = subprocess.run([tool, "merge", directory], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        timeout=60)
    check(rc.returncode == 0, "xccl-trace merge %s failed: %s" % (directory, rc.stderr))
    return json.loads(rc.stdout)


def calls(merged, seq):
    """{rank: its call event of all-reduce #seq} of a merged trace."""
    return {e["pid"]: e for e in merged["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "call" and e["args"]["seq"] == seq}


def longest_wait(merged, rank, call):
    ws = [e["dur"] for e in merged["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "wait" and
          e["pid"] == rank and call["ts"] <= e["ts"] <= call["ts"] + call["dur"]]
    return max(ws, default=0.0)


def ends_aligned(merged, seq, tol_us):
    ends = [c["ts"] + c["dur"] for c in calls(merged, seq).values()]
    return len(ends) == NRANKS and max(ends) - min(ends) <= tol_us, ends


def late(xrun, prog, tool):
    tmp = tempfile.mkdtemp(prefix="xccl-trace-test.")
    rule = "rank=%d,op=allreduce,seq=3,step=0,p=1,action=delay:%d" % (LATE, DELAY_MS)
    job(xrun, prog, tmp, {"XCCL_FAULT": rule})
    files = sorted(glob.glob(os.path.join(tmp, "xccl-trace-*-r*.json")))
    check(len(files) == NRANKS, "expected %d files, found %s" % (NRANKS, files))
    per_file = {}
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        meta = d["xccl"]
        check(meta["clock_offset_ns"] is not None, "%s has no clock offset" % f)
        # One host, one CLOCK_MONOTONIC: the measured offset is 0 within its uncertainty (and a margin for a busy machine).
        check(abs(meta["clock_offset_ns"]) <= meta["clock_uncertainty_ns"] + 2_000_000,
              "%s: offset %d ns is beyond its uncertainty %d ns" % (f, meta["clock_offset_ns"],
                                                                    meta["clock_uncertainty_ns"]))
        per_file[meta["rank"]] = sum(1 for e in d["traceEvents"] if e.get("ph") == "X")
    merged = merge(tool, tmp)
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"}
    for r in range(NRANKS):
        check(names.get(r, "").startswith("rank %d (" % r), "rank %d's lane is named %r" % (r, names.get(r)))
        n = sum(1 for e in merged["traceEvents"] if e.get("ph") == "X" and e["pid"] == r)
        check(n == per_file[r], "rank %d's lane holds %d events, its file %d" % (r, n, per_file[r]))
    c3 = calls(merged, 3)
    check(sorted(c3) == list(range(NRANKS)), "all-reduce #3 is not on every rank's lane: %s" % sorted(c3))
    waits = {r: longest_wait(merged, r, c3[r]) for r in c3}
    print("longest waits in all-reduce #3 (us):", {r: round(w) for r, w in waits.items()})
    for r in c3:
        if r != LATE:
            check(waits[r] >= 0.6 * DELAY_MS * 1e3, "rank %d waited only %.0f us in all-reduce #3 while rank %d "
                  "held its messages %d ms" % (r, waits[r], LATE, DELAY_MS))
    check(waits[LATE] < 0.5 * min(w for r, w in waits.items() if r != LATE),
          "the late rank %d waited %.0f us, as long as the others" % (LATE, waits[LATE]))
    ok, ends = ends_aligned(merged, 3, 50e3)
    check(ok, "all-reduce #3 ends %s apart on rank 0's clock" % ends)

    # Rank 1 on a clock 5 s ahead: its events and its offset move together.
    other = tempfile.mkdtemp(prefix="xccl-trace-test.")
    wrong = tempfile.mkdtemp(prefix="xccl-trace-test.")
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        if d["xccl"]["rank"] == 1:
            for e in d["traceEvents"]:
                if e.get("ph") == "X":
                    e["ts"] += 5e6
            with open(os.path.join(wrong, os.path.basename(f)), "w") as fh:
                json.dump(d, fh)
            d["xccl"]["clock_offset_ns"] += 5_000_000_000
        else:
            shutil.copy(f, wrong)
        with open(os.path.join(other, os.path.basename(f)), "w") as fh:
            json.dump(d, fh)
    moved = merge(tool, other)
    a = sorted((e["pid"], e["ts"]) for e in merged["traceEvents"] if e.get("ph") == "X")
    b = sorted((e["pid"], e["ts"]) for e in moved["traceEvents"] if e.get("ph") == "X")
    check(len(a) == len(b) and all(x[0] == y[0] and abs(x[1] - y[1]) < 1.0 for x, y in zip(a, b)),
          "rank 1 on another clock merges differently: its offset was not applied")
    ok, ends = ends_aligned(merge(tool, wrong), 3, 50e3)
    check(not ok, "a wrong offset went unnoticed: the alignment check cannot fail")
    for d in (tmp, other, wrong):
        shutil.rmtree(d)
    print("OK")


def png(xrun, prog, tool):
    tmp = tempfile.mkdtemp(prefix="xccl-trace-test.")
    job(xrun, prog, tmp, {"XCCL_FAULT": "rank=%d,op=allreduce,seq=2,step=0,p=1,action=delay:100" % LATE})
    out = os.path.join(tmp, "job.png")
    p = subprocess.run([tool, "png", tmp, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    if p.returncode == 3:
        print("SKIP: %s" % p.stdout.strip())
        sys.exit(SKIP)
    check(p.returncode == 0, "xccl-trace png failed", p.stdout)
    with open(out, "rb") as fh:
        head = fh.read(8)
    check(head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(out) > 2000, "%s is not a PNG of a timeline" % out)
    check("%d ranks" % NRANKS in p.stdout, "xccl-trace png says %r" % p.stdout)
    print(p.stdout.strip())
    if os.environ.get("XCCL_TRACE_KEEP_PNG"):
        shutil.copy(out, os.environ["XCCL_TRACE_KEEP_PNG"])
    shutil.rmtree(tmp)
    print("OK")


def off(xrun, prog, tool):
    tmp = tempfile.mkdtemp(prefix="xccl-trace-test.")
    env = {"XCCL_TRACE": None, "XCCL_DEBUG": "INFO", "XCCL_DEBUG_SUBSYS": "INIT", "TMPDIR": tmp}
    rc, out = run([xrun, "-n", "2", "--timeout", "60", prog, "2"], env)
    check(rc == 0, "the job failed (exit %d)" % rc, out)
    check("timeline written" not in out, "a rank wrote a timeline with XCCL_TRACE unset", out)
    found = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs]
    found += glob.glob("xccl-trace-*")
    check(not found, "files appeared with XCCL_TRACE unset: %s" % found)
    # Set on rank 1 only (not rank 0): nobody waits for the clock exchange.
    wrapper = os.path.join(tmp, "one.sh")
    with open(wrapper, "w") as fh:
        fh.write('#!/bin/sh\n[ "$XCCL_RANK" = 1 ] && export XCCL_TRACE="%s"\nexec "%s" 2\n' % (tmp, prog))
    os.chmod(wrapper, 0o755)
    rc, out = run([xrun, "-n", "2", "--timeout", "20", wrapper], {"XCCL_TRACE": None, "XCCL_TIMEOUT": "30"})
    check(rc == 0, "XCCL_TRACE on rank 1 only: the job failed (exit %d)" % rc, out)
    files = glob.glob(os.path.join(tmp, "xccl-trace-*-r*.json"))
    check(len(files) == 1 and files[0].endswith("-r1.json"), "XCCL_TRACE on rank 1 only wrote %s" % files)
    with open(files[0]) as fh:
        check(json.load(fh)["xccl"]["clock_offset_ns"] is None, "rank 1 claims an offset rank 0 never measured")
    shutil.rmtree(tmp)
    print("OK")


def kill(xrun, prog, tool):
    tmp = tempfile.mkdtemp(prefix="xccl-trace-test.")
    env = {"XCCL_TRACE": tmp, "XCCL_TIMEOUT": "5", "XCCL_DUMP_DIR": tmp,
           "XCCL_FAULT": "rank=%d,op=allreduce,seq=3,step=1,action=kill" % LATE}
    rc, out = run([xrun, "-n", str(NRANKS), "--grace", "10", "--timeout", "60", prog, "4"], env)
    check(rc != 0, "the job survived the kill", out)
    files = sorted(glob.glob(os.path.join(tmp, "xccl-trace-*-r*.json")))
    check(len(files) == NRANKS - 1, "expected the %d survivors' files, found %s" % (NRANKS - 1, files), out)
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        check(d["xccl"]["state"] == "failed", "%s says %s, not failed" % (f, d["xccl"]["state"]))
        seqs = [e["args"]["seq"] for e in d["traceEvents"] if e.get("cat") == "call"]
        check(seqs == [1, 2, 3], "%s holds the calls %s, not 1, 2 and the failed 3" % (f, seqs))
    merged = merge(tool, tmp)
    check(sorted(calls(merged, 3)) == [r for r in range(NRANKS) if r != LATE], "the merge lost a survivor")
    shutil.rmtree(tmp)
    print("OK")


def unwritable(xrun, prog, tool):
    bad = "/nonexistent-xccl-trace-dir/sub"
    rc, out = run([xrun, "-n", "2", "--timeout", "60", prog, "2"], {"XCCL_TRACE": bad})
    check(rc == 0, "the job failed with an unwritable XCCL_TRACE (exit %d)" % rc, out)
    warns = [l for l in out.splitlines() if "WARN" in l and bad in l]
    check(len(warns) == 2, "expected one WARN per rank naming %s, got %d" % (bad, len(warns)), out)
    check(all("No such file or directory" in l for l in warns), "the WARN does not say why", out)
    check(out.count("OK") == 2, "the ranks did not finish", out)
    print("OK")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: test_trace.py late|png|off|kill|unwritable XCCL_RUN TRACE_RANK XCCL_TRACE_TOOL")
    {"late": late, "png": png, "off": off, "kill": kill, "unwritable": unwritable}[sys.argv[1]](*sys.argv[2:])
