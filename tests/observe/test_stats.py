#!/usr/bin/python3
"""XCCL_STATS_FILE, read back with Prometheus' own parser (prometheus_client).

  test_stats.py counts     XCCL_RUN STATS_RANK
      4 ranks run stats_rank.c's calls with XCCL_STATS_FILE=DIR/stats.%r.prom:
      each rank's file parses, counts each call exactly, and its bytes per
      peer equal the library's counters (and the ring's formula), and every
      byte one rank sent another received. While the ranks wait before
      destroying, the file is rewritten every XCCL_STATS_INTERVAL: the copy
      each takes shows the communicator ready with the same counts. The
      transport label is XCCL_TRANSPORT's (shm when unset).
  test_stats.py kill       XCCL_RUN FAULT_VICTIM
      rank 2 of 4 is killed in all-reduce #3 (XCCL_FAULT): every survivor's
      file shows the communicator failed, with the error, its reason and a
      peer, and the neighbours name rank 2.
  test_stats.py unwritable XCCL_RUN STATS_RANK
      XCCL_STATS_FILE in a directory that does not exist: one WARN per rank
      naming the path and the error, and the job completes.

Exits 77 (skipped) with the reason when python3-prometheus-client is missing.
"""
import os
import re
import sys
import tempfile

from observe_util import check, run

SKIP = 77


def parser():
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError as e:
        print(f"SKIP: the Prometheus parser is missing ({e}); apt-get install python3-prometheus-client")
        sys.exit(SKIP)
    return text_string_to_metric_families


def parse(path):
    """{metric family name: [(sample name, labels, value)]} of one file."""
    with open(path) as f:
        text = f.read()
    fams = {}
    for fam in parser()(text):
        fams[fam.name] = [(s.name, s.labels, s.value) for s in fam.samples]
    return text, fams


def by_peer(fams, family, key):
    """{peer: bytes} summed over transports, from xccl_bytes_*_total."""
    out = {}
    for _, labels, v in fams.get(family, []):
        out[int(labels["peer"])] = out.get(int(labels["peer"]), 0) + int(v)
    return out


def counts(xrun, prog):
    parser()
    n = 4
    tmp = tempfile.mkdtemp(prefix="xccl-stats-")
    env = {"XCCL_STATS_FILE": f"{tmp}/stats.%r.prom", "XCCL_NCHANNELS": "2", "XCCL_ALGO": "allreduce:ring",
           "XCCL_TIMEOUT": "30", "XCCL_STATS_INTERVAL": "0.2"}
    # the proxy thread, which rewrites the file, wakes at least once a second when idle
    rc, out = run([xrun, "-n", str(n), "--grace", "5", prog, tmp, "1.5"], env)
    check(rc == 0, f"the job failed (exit {rc})", out)
    B = n * 2 * 65536 * 4
    ring_share = 5 * 2 * (n - 1) * B // n
    sent_to, recv_from = {}, {}
    for r in range(n):
        path = f"{tmp}/stats.{r}.prom"
        check(os.path.exists(path), f"rank {r} wrote no {path}", out)
        check(not [f for f in os.listdir(tmp) if f.startswith(".stats")], "a temporary file was left behind")
        text, fams = parse(path)
        check(text.count("# TYPE xccl_operations_total counter") == 1, f"rank {r}: no TYPE line for the operations",
              text)
        ops = {}
        for _, labels, v in fams["xccl_operations"]:
            check(labels["rank"] == str(r), f"rank {r}: a series labelled rank {labels['rank']}", text)
            ops[(labels["collective"], labels["algorithm"])] = v
        check(ops.get(("allreduce", "ring")) == 5, f"rank {r}: {ops} has not 5 ring all-reduces", text)
        check(ops.get(("send", "p2p")) == 4 and ops.get(("recv", "p2p")) == 4, f"rank {r}: {ops}: not 4 sends and 4 "
              "receives", text)
        check(sum(v for (c, _), v in ops.items() if c == "broadcast") == 3, f"rank {r}: {ops}: not 3 broadcasts", text)
        check(sum(v for (c, _), v in ops.items() if c == "allgather") == 2, f"rank {r}: {ops}: not 2 all-gathers", text)
        check(len(ops) == 5, f"rank {r}: {ops}: operations that were not called", text)
        # the library's own counters after each phase: phase -> peer -> (sent, received)
        phases = {}
        with open(f"{tmp}/counters.{r}") as f:
            for line in f:
                ph, p, s, rv = map(int, line.split())
                phases.setdefault(ph, {})[p] = (s, rv)
        ring = {p: c for p, c in phases[1].items() if c != (0, 0)}
        check(len(ring) in (1, 2) and sum(s for s, _ in ring.values()) == ring_share and
              sum(rv for _, rv in ring.values()) == ring_share,
              f"rank {r}: after 5 ring all-reduces {phases[1]}, expected {ring_share} bytes each way")
        p2p = {p: (phases[2][p][0] - phases[1][p][0], phases[2][p][1] - phases[1][p][1]) for p in phases[2]}
        check(p2p[(r + 1) % n][0] == 4 * 100000 and p2p[(r + n - 1) % n][1] == 4 * 100000 and
              sum(s for s, _ in p2p.values()) == 4 * 100000 and sum(rv for _, rv in p2p.values()) == 4 * 100000,
              f"rank {r}: the sends and receives moved {p2p}")
        sent, recv = by_peer(fams, "xccl_bytes_sent", "sent"), by_peer(fams, "xccl_bytes_received", "received")
        for p, (s, rv) in phases[3].items():
            check(sent.get(p, 0) == s and recv.get(p, 0) == rv,
                  f"rank {r}, peer {p}: the file says {sent.get(p, 0)} sent, {recv.get(p, 0)} received; the library "
                  f"{s}, {rv}", text)
        want = os.environ.get("XCCL_TRANSPORT", "shm")  # one host: shared memory unless the test says socket
        for _, labels, _ in fams["xccl_bytes_sent"]:
            check(labels["transport"] == want, f"rank {r}: transport {labels['transport']}, not {want}", text)
        state = {labels["state"]: v for _, labels, v in fams["xccl_communicator_state"]}
        check(state["destroyed"] == 1 and sum(state.values()) == 1, f"rank {r}: state {state}", text)
        info = fams["xccl_communicator_info"]
        check(len(info) == 1 and info[0][1]["nranks"] == str(n), f"rank {r}: info {info}", text)
        check(fams["xccl_errors"][0][2] == 0 and fams["xccl_timeouts"][0][2] == 0, f"rank {r}: errors counted", text)
        check(fams["xccl_wait_seconds"][0][2] >= 0, f"rank {r}: negative wait", text)
        check(not fams.get("xccl_communicator_error"), f"rank {r}: an error on a good job", text)
        _, mid = parse(f"{tmp}/midrun.{r}.prom")
        state = {labels["state"]: v for _, labels, v in mid["xccl_communicator_state"]}
        check(state["ready"] == 1 and sum(state.values()) == 1, f"rank {r}: while it ran, state {state}")
        mid_ops = {(labels["collective"], labels["algorithm"]): v for _, labels, v in mid["xccl_operations"]}
        check(mid_ops == ops, f"rank {r}: while it ran {mid_ops}, at the end {ops}")
        sent_to[r], recv_from[r] = sent, recv
    for a in range(n):
        for b in range(n):
            check(sent_to[a].get(b, 0) == recv_from[b].get(a, 0),
                  f"rank {a} sent rank {b} {sent_to[a].get(b, 0)} bytes, which received {recv_from[b].get(a, 0)}")
    print(f"counts: {n} files parsed; every call counted, every byte matched")


def kill(xrun, victim):
    parser()
    n = 4
    tmp = tempfile.mkdtemp(prefix="xccl-stats-")
    env = {"XCCL_STATS_FILE": f"{tmp}/stats.%r.prom", "XCCL_TIMEOUT": "3", "XCCL_DUMP_DIR": tmp,
           "XCCL_FAULT": "rank=2,op=allreduce,seq=3,step=1,action=kill"}
    rc, out = run([xrun, "-n", str(n), "--grace", "8", victim], env)
    check(rc != 0, "the job with a killed rank succeeded", out)
    named = []
    for r in (0, 1, 3):
        path = f"{tmp}/stats.{r}.prom"
        check(os.path.exists(path), f"survivor {r} wrote no {path}", out)
        text, fams = parse(path)
        state = {labels["state"]: v for _, labels, v in fams["xccl_communicator_state"]}
        check(state["failed"] == 1 and sum(state.values()) == 1, f"rank {r}: state {state}", text)
        errs = fams.get("xccl_communicator_error", [])
        check(len(errs) == 1 and errs[0][2] == 1, f"rank {r}: no error series", text)
        labels = errs[0][1]
        check(re.fullmatch(r"\d+", labels["peer"]) and labels["reason"] in ("connection", "timeout", "remote"),
              f"rank {r}: error {labels}", text)
        check(fams["xccl_errors"][0][2] >= 1, f"rank {r}: the failed call is not counted", text)
        named.append(int(labels["peer"]))
    check(2 in named, f"no survivor names the killed rank 2 (they name {named})")
    print(f"kill: survivors 0, 1, 3 show the failure, naming ranks {named}")


def unwritable(xrun, prog):
    tmp = tempfile.mkdtemp(prefix="xccl-stats-")
    bad = f"{tmp}/no-such-dir/stats.%r.prom"
    rc, out = run([xrun, "-n", "2", "--grace", "5", prog, tmp], {"XCCL_STATS_FILE": bad, "XCCL_NCHANNELS": "2"})
    check(rc == 0, f"the job failed (exit {rc}) over an unwritable XCCL_STATS_FILE", out)
    warns = [l for l in out.splitlines() if "WARN" in l and "XCCL_STATS_FILE" in l]
    check(len(warns) == 2, f"{len(warns)} WARN lines, not one per rank", out)
    for r in (0, 1):
        path = f"{tmp}/no-such-dir/stats.{r}.prom"
        check(any(path in w and "No such file or directory" in w for w in warns), f"no WARN names {path} and errno",
              out)
    print("unwritable:", warns[0])


if __name__ == "__main__":
    mode, xrun, prog = sys.argv[1:4]
    {"counts": counts, "kill": kill, "unwritable": unwritable}[mode](xrun, prog)
