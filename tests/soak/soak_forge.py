#!/usr/bin/env python3
"""soak_forge.py — the soak's forged traffic (imported by soak_driver.py).

Every FORGE_EVERY_S, each TCP port a rank listens on (ss in its host's
namespace) gets one connection from another host carrying garbage, a
bootstrap frame with a forged MAC, or a socket-transport stream header with a
made-up connection id. xccl must refuse each, log one WARN per source host
(and process), and the job must not notice; warn_lines() checks the logs at
the end. (The wrong-secret joiner at each grow is the driver's: it is a
soak_rank, SOAK_FORGE_JOIN.) Standard library only.
"""
import os
import re
import socket
import struct
import subprocess
import sys
import threading

FORGE_EVERY_S = 3.0
FORGE_KINDS = ["garbage", "hello", "stream"]


def forge_payload(kind):
    if kind == "hello":  # bootstrap header {magic, version 2, HELLO, length, 0}, payload and MAC random
        return struct.pack("<IHHII", 0x53424358, 2, 2, 112, 0) + os.urandom(112 + 32)
    if kind == "stream":  # socket transport stream header {magic, index, nstreams, pad, conn_id}
        return struct.pack("<IIIIQ", 0x58534F43, 0, 1, 0, int.from_bytes(os.urandom(8), "little"))
    return os.urandom(1 + os.urandom(1)[0])


def forge_one(target, out):
    """Connect, send, half-close, wait up to 1.5 s for the rank to close: 'refused', 'open' (the listener
    is polled only now and then: it refuses later) or 'unreachable'."""
    addr, port, kind = target.rsplit(":", 2)
    try:
        c = socket.create_connection((addr, int(port)), timeout=1.0)
    except OSError:
        out.append("%s %s unreachable" % (target, kind))
        return
    res = "open"
    try:
        c.sendall(forge_payload(kind))
        c.shutdown(socket.SHUT_WR)
        c.settimeout(1.5)
        while c.recv(4096):
            pass
        res = "refused"
    except socket.timeout:
        pass
    except OSError:
        res = "refused"
    c.close()
    out.append("%s %s" % (target, res))


def forge_round(targets):
    """Forges to each addr:port:kind at once; one result line each."""
    out = []
    ts = [threading.Thread(target=forge_one, args=(t, out)) for t in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def serve():
    """--serve: one long-lived process per source host (started in its namespace once, not per round: a Python
    start costs ~0.1 s of CPU the ranks' recovery would wait for). Each stdin line is a round's targets
    (addr:port:kind ...); it answers one line per target, then '.'. Ends at EOF."""
    for line in sys.stdin:
        out = forge_round(line.split())
        sys.stdout.write("".join(r + "\n" for r in out) + ".\n")
        sys.stdout.flush()


class Forger:
    """The background thread that sends forged and garbage traffic to the ranks' ports."""

    def __init__(self, d):
        self.d = d
        self.stop = threading.Event()
        self.conns = {k: 0 for k in FORGE_KINDS}
        self.results = {"refused": 0, "open": 0, "unreachable": 0}
        self.ports = set()     # (pid, port) ever targeted
        self.loopback = set()  # (pid, port) listening on loopback only: not reachable from another host
        self.rounds = 0
        self.servers = {}  # source host -> Popen of its serve() process
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def start(self):
        for h, ns in enumerate(self.d.ns):
            self.servers[h] = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__),
                                                "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.thread.start()

    def close(self):
        """The thread stopped, the servers ended (EOF) and their pipes closed."""
        self.stop.set()
        self.thread.join()
        for p in self.servers.values():
            p.stdin.close()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()
        self.servers = {}

    def ask(self, src, targets):
        """One round of src's targets through its server: the result words."""
        p = self.servers[src]
        p.stdin.write(" ".join(targets) + "\n")
        p.stdin.flush()
        out = []
        for line in p.stdout:
            if line.strip() == ".":
                return out
            out.append(line.split()[-1])
        raise RuntimeError("host %d's forger ended" % src)

    def loop(self):
        while not self.stop.wait(FORGE_EVERY_S):
            try:
                self.round()
            except Exception as e:  # the forger must never take the driver down
                print("soak: forger: %s" % e, flush=True)

    def listeners(self, h, pids):
        out = subprocess.run(["ss", "-N", self.d.ns[h], "-ltnpH"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            w = line.split()
            mine = [int(p) for p in re.findall(r"pid=(\d+)", line) if int(p) in pids]
            if len(w) < 4 or not mine:
                continue
            host, port = w[3].rsplit(":", 1)
            if host.startswith("127.") or host == "[::1]":
                self.loopback.add((mine[0], port))
                continue
            yield mine[0], self.d.addrs[h] if host in ("*", "0.0.0.0", "[::]") else host, port

    def round(self):
        pids = set(self.d.procs)
        by_src = {}
        for h in range(self.d.hosts):
            for pid, addr, port in self.listeners(h, pids):
                src = self.d.rng_forge.choice([x for x in range(self.d.hosts) if x != h])
                kind = self.d.rng_forge.choice(FORGE_KINDS)
                by_src.setdefault(src, []).append("%s:%s:%s" % (addr, port, kind))
                self.ports.add((pid, port))
                self.conns[kind] += 1
        for src, targets in by_src.items():
            for res in self.ask(src, targets):
                self.results[res] = self.results.get(res, 0) + 1
        self.rounds += 1

    def warn_lines(self, logdir):
        """WARN lines of refusals in the ranks' logs: (lines, (pid, source) pairs with more than one)."""
        seen = {}
        pat = re.compile(r"^\S+?:(\d+):\d+ xccl WARN .*refused a connection from ([0-9a-f.:\[\]]+?):\d+")
        for name in os.listdir(logdir):
            if name.startswith("log."):
                with open(os.path.join(logdir, name), errors="replace") as f:
                    lines = f.read().splitlines()
                for line in lines:
                    m = pat.match(line)
                    if m:
                        seen[m.groups()] = seen.get(m.groups(), 0) + 1
        return sum(seen.values()), sorted(k for k, v in seen.items() if v > 1)


    def report(self, d, unexpected):
        """The forged traffic's lines of the table; True when a refusal went wrong (a WARN more than once per
        source and process, or a wrong-secret joiner accepted)."""
        lines, dup = self.warn_lines(d.dir)
        joins = [m for ep in range(d.epoch + 1) for _, _, _, m in d.events("forgedjoin", ep)]
        accepted = sum(not m.startswith("refused") for m in joins)
        bad = bool(dup) or accepted > 0
        print("forged: connections %d (%s) to %d ports, refused-WARN lines %d, more than one WARN per source"
              " and process %d, ranks affected %d" %
              (sum(self.conns.values()), ", ".join("%s %d" % kv for kv in self.conns.items()), len(self.ports), lines,
               len(dup), unexpected))
        print("forged: closed by the rank at once %d, left open 1.5 s (refused when next polled) %d,"
              " unreachable %d; listeners on loopback only (not reachable from another host) %d" %
              (self.results.get("refused", 0), self.results.get("open", 0), self.results.get("unreachable", 0),
               len(self.loopback)))
        print("forged: wrong-secret joiners at grows %d, refused %d, accepted %d%s" %
              (len(joins), len(joins) - accepted, accepted,
               ("; e.g. " + min(joins, key=len)[:160]) if joins else ""))
        return bad


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
