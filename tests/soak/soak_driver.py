#!/usr/bin/env python3
"""soak_driver.py — the soak's driver (run by soak.sh, which builds the hosts).

It starts the ranks (soak_rank) 'per' to a host, injects a random fault every
few seconds and plays the elastic agent: it reads the survivors' reports in the
control directory, decides whom to exclude (it knows what it broke), starts
the replacements with its decision (they wait for the grow id the shrunk
communicator's rank 0 writes; after a link or partition fault, once the id is
there and the host healed), and at the end of the budget stops the job and
prints one table. Forged traffic: soak_forge.py; the hosts' /dev/shm and CPU
cgroup: soak_hosts.py; times: soak_timing.py. The file protocol is
soak_rank.c's header comment. Standard library only.
"""
import argparse
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time

from soak_forge import Forger
from soak_hosts import CGROUP_CPU, SHM_MB, SLOW_HOLD_S, SLOW_PERIOD_US, SLOW_QUOTA_US, HostResources
from soak_timing import pctl, steps_line

# delay: the rank is stopped (SIGSTOP) for DELAY_S, well below XCCL_TIMEOUT, then
# continued: a pause (a page-in storm, a GC, a hypervisor steal), not a
# failure. Its peers wait and go on; nothing may time out. The driver watches
# for DELAY_WATCH_S after the pause so that a wait timing out would show.
# (This host's kernel has no sch_netem, and a tbf qdisc only shapes: a
# process pause is the delay every kernel can make.)
DELAY_FRACTION = 0.4  # of XCCL_TIMEOUT
KINDS = ["kill", "stop", "link", "partition", "slow", "delay", "corrupt", "shmfull"]
EXPECTED = {"kill": True, "stop": True, "link": True, "partition": True, "slow": False, "delay": False,
            "corrupt": True, "shmfull": True, "kill-in-recovery": True, "none": False}
# corrupt: a rank is killed (counted as a kill) and its replacement starts with
# XCCL_FAULT rules that flip a bit of what it sends in one of operations
# CORRUPT_SEQ.. of the grown communicator; every rank runs XCCL_CHECKSUM=1, so
# a receiver must fail the call (an error, never a wrong result).
# (forged traffic: soak_forge.py.)
# kill-in-recovery: one failure in SECOND_P gets a second one while the job
# recovers from it: a survivor killed as the driver hands out the exclude list
# (the shrink is under way) or a replacement killed as it starts (the grow is).
# The survivors' xcclCommShrink or xcclCommGrow must fail with an error (never
# hang); they report it (retry.<E>.<pid>), the driver decides again and they
# shrink epoch E's communicator again, back to 8 ranks.
SECOND_P = 0.25
# The faults healed before their replacements start (at the grow id); the others' start at the decision.
HEAL_FIRST = ("link", "partition")
CORRUPT_SEQ = 100  # ~20 iterations in: the kill before it has recovered by then
CORRUPT_WAIT_S = 60.0


def now():
    return time.time()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def parse_status(text):
    """st.<pid>: 'epoch E rank R iter I colls C wrong W state S t T'."""
    if not text:
        return None
    w = text.split()
    d = dict(zip(w[0::2], w[1::2]))
    try:
        return {"epoch": int(d["epoch"]), "rank": int(d["rank"]), "iter": int(d["iter"]),
                "colls": int(d["colls"]), "wrong": int(d["wrong"]), "state": d["state"]}
    except (KeyError, ValueError):
        return None


class Fault:
    def __init__(self, kind, t, victims, host):
        self.kind, self.t, self.victims, self.host = kind, t, victims, host  # victims: pids
        self.excl = []          # their ranks in the epoch the fault hit
        self.detect_s = None    # last survivor's report, s after the fault
        self.recover_s = None
        self.detected = False
        self.healed = False
        self.arm_corrupt = False  # a kill whose replacement corrupts
        self.joiners = []
        self.fakes = []           # the wrong-secret joiners of the current attempt
        self.crc = False          # corrupt: a report names the CRC32C check
        self.rates = None         # slow: (iterations/s before, during)
        self.stopped_pid = None
        self.second = None        # a failure: "shrink" or "grow" when a second one lands in its recovery
        self.attempt = 0          # the recovery's attempt (decide.<E>.<A>, grow.<E+1>.<A>.id)
        self.base_epoch = 0       # the epoch it hit
        self.marks = {}           # recovery step -> when (time.time()): soak_timing.STEPS


class Driver(HostResources):
    def __init__(self, a):
        self.a = a
        self.ns = os.environ["SOAK_NS"].split()
        self.addrs = os.environ["SOAK_ADDRS"].split()
        self.devs = os.environ["SOAK_DEVS"].split()
        self.hosts = len(self.ns)
        self.n = a.ranks
        self.per = self.n // self.hosts
        self.dir = a.dir
        self.rank_bin = os.path.abspath(os.path.join(a.build, "tests", "soak_rank"))  # nsenter leaves cwd at /
        self.rng = random.Random(a.seed)
        self.procs = {}          # pid -> Popen
        self.host_of = {}        # pid -> host
        self.all_pids = set()
        self.epoch = 0
        self.faults = []
        self.cur = None          # the fault being handled
        self.decided = False
        self.joined = False
        self.unexpected = 0      # errors no fault explains (restarts)
        self.hangs = 0
        self.hang_notes = []
        self.restarts = 0
        self.cgroup = None
        self.kinds = list(KINDS)
        self.nft = shutil.which("nft") is not None
        if not self.nft:
            self.kinds.remove("partition")
            print("soak: partition faults skipped: 'nft' (nftables) is not installed")
        if not os.path.isdir(CGROUP_CPU) or not os.path.exists(os.path.join(CGROUP_CPU, "cpu.cfs_quota_us")):
            self.kinds.remove("slow")
            print("soak: slow faults skipped: no cgroup v1 cpu controller at %s" % CGROUP_CPU)
        info = subprocess.run([os.path.join(a.build, "tools", "xccl-info")], capture_output=True, text=True).stdout
        self.checksum = "XCCL_CHECKSUM=1 available" in info
        if not self.checksum:
            self.kinds.remove("corrupt")
            print("soak: corrupt faults skipped: this build has no XCCL_CHECKSUM (ISA-L)")
        if a.kinds:  # only these (a replay of one kind)
            self.kinds = [k for k in self.kinds if k in a.kinds.split(",")]
        if a.no_faults:
            self.kinds = []
        self.sample = None  # (time, {pid: iteration}) when the last recovery ended
        self.rng_forge = random.Random(a.seed + 1)  # its own draws: --seed replays the faults alike
        self.forger = None if a.no_forge else Forger(self)
        self.log_path = {}  # pid -> its log
        self.stale = set()  # joiners of a failed recovery attempt: what they report does not count
        self.fakes = {}  # pid -> Popen of the wrong-secret joiners (no rank: not in procs)
        self.holders = [self.shm_holder() for _ in range(self.hosts)] if "shmfull" in self.kinds else []
        if "shmfull" in self.kinds and not all(self.holders):
            self.end_holders()
            self.kinds.remove("shmfull")
            print("soak: shmfull faults skipped: no private mount namespace with a tmpfs on /dev/shm")

    # ---- processes ------------------------------------------------------
    def env_base(self, host):
        e = dict(os.environ)
        e.update({"SOAK_DIR": self.dir, "SOAK_NRANKS": str(self.n), "XCCL_TIMEOUT": str(self.a.timeout),
                  "SOAK_DECIDE_S": str(self.decide_s()), "SOAK_LIMIT_S": str(int(self.a.minutes * 60 + 300)),
                  "XCCL_SOCKET_IFNAME": "=" + self.devs[host],
                  "XCCL_CHECKSUM": "1" if "corrupt" in self.kinds else "0"})
        for k in ("XCCL_RANK", "XCCL_NRANKS", "XCCL_LOCAL_RANK", "XCCL_ROOT", "XCCL_SECRET", "SOAK_JOIN_RANK",
                  "XCCL_FAULT", "SOAK_FORGE_JOIN", "XCCL_SHM_MEMFD"):
            e.pop(k, None)
        return e

    def spawn(self, host, env, tag, rank=True):
        log = open(os.path.join(self.dir, "log.%s" % tag), "ab")
        mnt = ["nsenter", "--mount=/proc/%d/ns/mnt" % self.holders[host].pid] if self.holders else []
        p = subprocess.Popen(mnt + ["ip", "netns", "exec", self.ns[host], self.rank_bin], env=env,
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        self.log_path[p.pid] = os.path.join(self.dir, "log.%s" % tag)
        (self.procs if rank else self.fakes)[p.pid] = p
        self.host_of[p.pid] = host
        self.all_pids.add(p.pid)
        return p.pid

    def start_all(self):
        """A fresh job of n ranks at self.epoch (the first, or after a restart)."""
        port = 20000 + (os.getpid() * 7 + self.epoch * 13) % 30000
        secret = secrets.token_hex(16)
        for r in range(self.n):
            h = r // self.per
            e = self.env_base(h)
            e.update({"SOAK_EPOCH": str(self.epoch), "XCCL_RANK": str(r), "XCCL_NRANKS": str(self.n),
                      "XCCL_LOCAL_RANK": str(r % self.per), "XCCL_ROOT": "%s:%d" % (self.addrs[0], port),
                      "XCCL_SECRET": secret})
            self.spawn(h, e, "e%d.r%d" % (self.epoch, r))

    def reap(self):
        for d in (self.procs, self.fakes):
            for pid, p in list(d.items()):
                if p.poll() is not None:
                    del d[pid]

    def kill(self, pid):
        p = self.procs.get(pid) or self.fakes.get(pid)
        if p and p.poll() is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.reap()

    def statuses(self):
        out = {}
        for pid in self.procs:
            st = parse_status(read(os.path.join(self.dir, "st.%d" % pid)))
            if st:
                out[pid] = st
        return out

    def members(self):
        """rank -> pid of the processes running the current epoch."""
        m = {}
        for pid, st in self.statuses().items():
            if st["epoch"] == self.epoch and st["state"] == "run":
                m[st["rank"]] = (pid, st)
        return m

    def healthy(self):
        m = self.members()
        return len(m) == self.n and all(st["iter"] >= 1 for _, st in m.values())

    # ---- deadlines ------------------------------------------------------
    def decide_s(self):
        # a survivor blocked on a live peer reports only at its own timeout
        return 3 * self.a.timeout + 20

    def recover_deadline_s(self):
        # shrink (leader: timeout + 5 s), two inits and the joiners' start
        return 6 * self.a.timeout + 30

    # ---- faults ---------------------------------------------------------
    def inject(self):
        kind = self.rng.choice(self.kinds)
        m = self.members()
        rank = self.rng.randrange(self.n)
        pid = m[rank][0]
        host = self.host_of[pid]
        t = now()
        arm, iters = kind == "corrupt", {p: st["iter"] for p, st in self.statuses().items()}
        if arm:
            kind = "kill"
        if kind == "shmfull":
            self.fill_shm(host)
        if kind in ("kill", "shmfull"):
            os.kill(pid, signal.SIGKILL)
        elif kind == "stop":
            os.kill(pid, signal.SIGSTOP)
        elif kind == "link":
            subprocess.run(["ip", "-n", self.ns[host], "link", "set", self.devs[host], "down"], check=False)
        elif kind == "partition":
            # one way: the host receives nothing on its link, and still sends
            rules = "table inet soak {\n chain in {\n  type filter hook input priority 0; policy accept;\n" \
                    "  iifname \"%s\" drop\n }\n}\n" % self.devs[host]
            subprocess.run(["ip", "netns", "exec", self.ns[host], "nft", "-f", "-"], input=rules.encode(), check=True)
        elif kind == "slow":
            self.slow(pid)
        elif kind == "delay":
            os.kill(pid, signal.SIGSTOP)
        if kind in ("link", "partition"):
            victims = [p for r, (p, _) in m.items() if self.host_of[p] == host]
        else:
            victims = [pid]
        f = Fault(kind, t, victims, host)
        f.excl = sorted(st["rank"] for p, st in self.statuses().items() if p in victims)
        if kind == "stop":
            f.stopped_pid = pid
        f.arm_corrupt = arm
        f.base_epoch = self.epoch
        if kind in ("kill", "stop", "link", "partition") and not arm and self.rng.random() < SECOND_P:
            f.second = self.rng.choice(["shrink", "grow"])
        if kind == "slow" and self.sample and pid in self.sample[1]:
            t0, i0 = self.sample[0], self.sample[1][pid]
            f.rates = [(iters[pid] - i0) / max(t - t0, 1e-3), iters[pid], None]
        self.cur, self.decided, self.joined = f, False, False
        self.faults.append(f)
        print("soak: %7.1f s: %s of %s (host %d, epoch %d ranks %s)%s" %
              (t - self.t0, kind, ",".join(map(str, victims)), host, self.epoch, f.excl,
               ", its replacement to corrupt" if arm else ""), flush=True)

    def corrupt_armed(self, pid):
        """The corrupting replacement runs: its fault is in flight until a receiver's checksum fails."""
        st = self.statuses().get(pid)
        f = Fault("corrupt", now(), [pid], self.host_of[pid])
        f.excl = [st["rank"]] if st else []
        f.base_epoch = self.epoch
        self.cur, self.decided, self.joined = f, False, False
        self.faults.append(f)
        print("soak: %7.1f s: corrupt armed in %d (epoch %d rank %s, operations %d-%d)" %
              (f.t - self.t0, pid, self.epoch, f.excl, CORRUPT_SEQ, CORRUPT_SEQ + 2), flush=True)

    def heal(self, f):
        if f.healed:
            return
        f.healed = True
        if f.kind == "link":
            subprocess.run(["ip", "-n", self.ns[f.host], "link", "set", self.devs[f.host], "up"], check=False)
        elif f.kind == "partition":
            subprocess.run(["ip", "netns", "exec", self.ns[f.host], "nft", "delete", "table", "inet", "soak"],
                           check=False)
        elif f.kind == "slow":
            self.unslow()
        elif f.kind == "shmfull":
            try:
                os.unlink(os.path.join(self.host_shm(f.host), "soak-fill"))
            except OSError as e:
                print("soak: cannot free host %d's /dev/shm: %s" % (f.host, e))
        elif f.kind == "delay":
            try:
                os.kill(f.victims[0], signal.SIGCONT)
            except ProcessLookupError:
                pass

    # ---- the agent ------------------------------------------------------
    def events(self, kind, epoch):
        """(pid, rank, t, msg) of kind.<epoch>.<pid> files."""
        out = []
        pre = "%s.%d." % (kind, epoch)
        for name in os.listdir(self.dir):
            if not name.startswith(pre) or name.endswith(".tmp"):
                continue
            text = read(os.path.join(self.dir, name)) or ""
            try:
                head, msg = text.split(": ", 1)
                w = head.split()
                out.append((int(name[len(pre):]), int(w[1]), float(w[3]), msg.strip()))
            except (ValueError, IndexError):
                pass
        return out

    def decide(self, text, attempt=0):
        path = os.path.join(self.dir, "decide.%d" % self.epoch + (".%d" % attempt if attempt else ""))
        with open(path + ".tmp", "w") as f:
            f.write(text + "\n")
        os.rename(path + ".tmp", path)
        self.decided = True
        if self.cur:
            self.cur.marks["decide"] = now()

    def restart(self, why):
        """Everyone out, the network healed, a fresh job at the next epoch."""
        print("soak: %7.1f s: restart at epoch %d: %s" % (now() - self.t0, self.epoch, why), flush=True)
        self.restarts += 1
        if not self.decided:
            self.decide("restart")
        time.sleep(1)
        for pid in list(self.procs) + list(self.fakes):
            self.kill(pid)
        if self.cur:
            self.heal(self.cur)
        self.cur = None
        self.epoch += 1
        self.start_all()
        self.wait_healthy(self.recover_deadline_s())
        self.take_sample()

    def wait_healthy(self, limit):
        end = now() + limit
        while now() < end:
            self.reap()
            if self.healthy():
                return True
            time.sleep(0.05)
        return False

    def take_sample(self):
        """Each process's iteration now: the slow fault's 'before' rate counts from here."""
        self.sample = (now(), {p: st["iter"] for p, st in self.statuses().items()})

    def hang(self, what):
        self.hangs += 1
        self.hang_notes.append(what)
        self.restart(what)

    def detect_time(self, f, survivors, errs):
        """Once every survivor has reported: seconds from the fault to the last report."""
        got = {pid: ts for pid, _, ts, _ in errs}
        if f.detect_s is None and survivors and all(p in got for p in survivors):
            f.detect_s = max(got[p] for p in survivors) - f.t

    def step(self):
        """One look at the control directory: the current fault's next move."""
        self.reap()
        f = self.cur
        errs = self.events("err", self.epoch)
        for kind in ("hang", "fail"):
            ev = [e for e in self.events(kind, self.epoch) + self.events(kind, self.epoch + 1)
                  if e[0] not in self.stale]
            if ev:
                pid, rank, _, msg = ev[0]
                self.hang("%s: pid %d rank %d: %s" % (kind, pid, rank, msg))
                return
        if errs and (f is None or not EXPECTED[f.kind]):
            if f is None:
                self.unexpected += 1
                f = Fault("none", now(), [], -1)
                self.faults.append(f)
            f.detected = True
            pid, rank, _, msg = errs[0]
            self.restart("an error no fault explains: rank %d: %s" % (rank, msg))
            return
        if f is None:
            return
        t = now()
        if f.kind == "corrupt" and not f.detected:
            if errs:  # the fault's moment is unknown: detection counts from the first report
                f.t = min(ts for _, _, ts, _ in errs)
                f.crc = any("CRC32C" in msg for _, _, _, msg in errs)
            elif t - f.t > CORRUPT_WAIT_S:
                print("soak: %7.1f s: the corrupting rank ran %g s and no rank reported an error" %
                      (t - self.t0, CORRUPT_WAIT_S), flush=True)
                self.cur = None
                return
        if f.kind == "delay":  # stopped for a while below the timeout, then watched
            hold = DELAY_FRACTION * self.a.timeout
            if t - f.t >= hold:
                self.heal(f)
            if t - f.t >= hold + self.a.timeout + 1:
                self.cur = None
            return
        if not EXPECTED[f.kind]:  # slow: hold, then release; nothing should fail
            if t - f.t >= SLOW_HOLD_S:
                st = self.statuses().get(f.victims[0])
                if f.rates and st and st["epoch"] == self.epoch:
                    f.rates[2] = (st["iter"] - f.rates[1]) / (t - f.t)
                self.heal(f)
                f.recover_s = None
                self.cur = None
            return
        survivors = [pid for pid in self.procs if pid not in f.victims and pid != f.stopped_pid
                     and pid not in f.joiners]
        if errs and not self.decided:
            f.detected = True
            self.decide("exclude " + " ".join(map(str, f.excl)))
            if f.kind not in HEAL_FIRST:
                self.replace(f)
            if f.second == "shrink":
                self.second_kill(f, survivors)
                return
        if not f.joiners:
            self.detect_time(f, survivors, errs)
        if self.retry(f, survivors):
            return
        if not self.decided and f.kind != "corrupt" and t - f.t > self.decide_s():
            self.hang("%s at %.1f s: no survivor reported within %d s" % (f.kind, f.t - self.t0, self.decide_s()))
            return
        grow_id = "grow.%d.id" % (self.epoch + 1) if not f.attempt else "grow.%d.%d.id" % (self.epoch + 1, f.attempt)
        if self.decided and not self.joined and os.path.exists(os.path.join(self.dir, grow_id)):
            f.marks["id"] = os.stat(os.path.join(self.dir, grow_id)).st_mtime
            f.marks["seen"] = now()
            self.detect_time(f, survivors, self.events("err", self.epoch))
            if f.kind != "shmfull":  # its /dev/shm stays full while the replacement connects
                self.heal(f)
            if not f.joiners:
                self.replace(f)
            self.joined = True
            self.epoch += 1
            if f.second == "grow" and f.attempt == 0:
                self.second_kill(f, survivors)
                return
        if self.joined and "grown" not in f.marks and len(self.members()) == self.n:
            f.marks["grown"] = now()
        if self.joined and self.healthy():
            f.recover_s = now() - f.t
            f.marks["back"] = now()
            if f.kind == "shmfull":
                self.heal(f)
                f.shm_said = [ln for j in f.joiners for ln in (read(self.log_path.get(j, "")) or "").splitlines()
                              if "/dev/shm cannot hold" in ln][:1]
            if getattr(f, "second_fault", None):
                f.second_fault.recover_s = now() - f.second_fault.t
            if f.stopped_pid:
                self.kill(f.stopped_pid)
            for p in f.victims:  # an excluded rank that has not left by itself
                self.kill(p)
            print("soak: %7.1f s: back to %d ranks at epoch %d in %.2f s (detect %s s)" %
                  (now() - self.t0, self.n, self.epoch, f.recover_s,
                   "-" if f.detect_s is None else "%.2f" % f.detect_s), flush=True)
            self.cur = None
            self.take_sample()
            if f.arm_corrupt:
                self.corrupt_armed(f.joiners[0])
            return
        limit = (self.decide_s() + self.recover_deadline_s()) * (2 if f.second else 1)
        if t - f.t > limit:
            self.hang("%s at %.1f s: not back to %d ranks within %d s" % (f.kind, f.t - self.t0, self.n, limit))

    def replace(self, f):
        """Starts f's replacements (and the wrong-secret joiner): they wait for the grow id themselves. Where the
        fault leaves the host as it was (not link, not partition: healed first), they start at the decision and
        their start overlaps the shrink."""
        hosts = sorted(self.host_of[p] for p in f.victims)
        for i, h in enumerate(hosts):
            r = self.n - len(hosts) + i
            e = self.env_base(h)
            e.update({"SOAK_EPOCH": str(self.epoch + 1), "SOAK_JOIN_RANK": str(r), "SOAK_ATTEMPT": str(f.attempt)})
            if f.kind == "shmfull":
                e["XCCL_SHM_MEMFD"] = "0"
            if f.arm_corrupt and i == 0:
                e["XCCL_FAULT"] = ";".join("rank=%d,seq=%d,action=corrupt" % (r, CORRUPT_SEQ + k) for k in range(3))
            f.joiners.append(self.spawn(h, e, "e%d.j%d" % (self.epoch + 1, r)))
        if self.forger:  # a joiner with the wrong secret, claiming the last seat
            h = self.rng_forge.randrange(self.hosts)
            e = self.env_base(h)
            e.update({"SOAK_EPOCH": str(self.epoch + 1), "SOAK_JOIN_RANK": str(self.n - 1), "SOAK_FORGE_JOIN": "1",
                      "SOAK_ATTEMPT": str(f.attempt)})
            f.fakes.append(self.spawn(h, e, "e%d.f" % (self.epoch + 1), rank=False))
        f.marks["spawned"] = now()

    def second_kill(self, f, survivors):
        """A second failure while f's recovery runs: a survivor (shrink) or a replacement (grow) killed."""
        if f.second == "shrink":
            pid = self.rng.choice(survivors)
            st = self.statuses().get(pid)
            f.excl2 = sorted(f.excl + ([st["rank"]] if st and st["epoch"] == self.epoch else []))
        else:
            pid = f.joiners[0]
            f.excl2 = f.excl
            self.stale.update(f.joiners)
        self.kill(pid)
        if f.second == "shrink":  # a survivor more to replace (a killed replacement is started anew)
            f.victims = f.victims + [pid]
        f2 = Fault("kill-in-recovery", now(), [pid], self.host_of[pid])
        f.second_fault = f2
        self.faults.append(f2)
        print("soak: %7.1f s: kill-in-recovery: %s %d killed during the %s" %
              (f2.t - self.t0, "survivor" if f.second == "shrink" else "replacement", pid, f.second), flush=True)

    def retry(self, f, survivors):
        """After a second failure: once every survivor has reported its failed attempt, decide again."""
        f2 = getattr(f, "second_fault", None)
        rs = self.events("retry", f.base_epoch)
        rs = [r for r in rs if r[3].startswith("attempt %d:" % f.attempt)]
        if not rs:
            return False
        if f2 is None:  # a recovery failed with no second fault to explain it
            pid, rank, _, msg = rs[0]
            self.hang("retry: pid %d rank %d: %s" % (pid, rank, msg))
            return True
        live = [p for p in survivors if p not in f.victims]
        got = {pid: ts for pid, _, ts, _ in rs}
        if not all(p in got for p in live):
            return True
        f2.detected = True
        f2.detect_s = max(got[p] for p in live) - f2.t
        f2.msgs = [m for _, _, _, m in rs]
        for p in f.joiners + f.fakes:  # the failed attempt's replacements (a wrong-secret one waits for its id)
            self.stale.add(p)
            self.kill(p)
        f.joiners, f.fakes = [], []
        self.epoch = f.base_epoch
        self.joined = False
        f.attempt += 1
        self.decide("exclude " + " ".join(map(str, f.excl2)), f.attempt)
        if f.kind not in HEAL_FIRST:
            self.replace(f)
        print("soak: %7.1f s: kill-in-recovery: every survivor's attempt failed within %.2f s (%s); decided again:"
              " exclude %s" % (now() - self.t0, f2.detect_s, rs[0][3][:120], f.excl2), flush=True)
        return True

    # ---- the run --------------------------------------------------------
    def run(self):
        self.t0 = now()
        self.fds0 = len(os.listdir("/proc/self/fd"))
        self.threads0 = self.threads()
        end = self.t0 + self.a.minutes * 60
        self.start_all()
        if not self.wait_healthy(self.recover_deadline_s()):
            self.hang("the job did not start within %d s" % self.recover_deadline_s())
        self.take_sample()
        if self.forger:
            self.forger.start()
        next_fault = now() + self.rng.uniform(2, 5)
        while True:
            self.step()
            t = now()
            if self.cur is None and t >= end:
                break
            if self.cur is None and next_fault is None:  # a few seconds after the last recovery
                next_fault = t + self.rng.uniform(2, 5)
            if self.cur is None and self.kinds and t >= next_fault and self.healthy():
                self.inject()
                next_fault = None
            time.sleep(0.05)
        self.finish()

    def threads(self):
        for line in (read("/proc/self/status") or "").splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
        return 0

    def finish(self):
        if self.forger:
            self.forger.close()
        open(os.path.join(self.dir, "stop"), "w").close()
        end = now() + 3 * self.a.timeout + 30
        while self.procs and now() < end:
            self.reap()
            time.sleep(0.1)
        for pid in list(self.fakes):  # a wrong-secret joiner still waiting: its verdict is already in
            self.kill(pid)
        stalled = list(self.procs)
        if stalled:
            self.hangs += 1
            self.hang_notes.append("%d ranks had not ended %d s after the stop" % (len(stalled), 3 * self.a.timeout + 30))
        for pid in stalled:
            self.kill(pid)
        time.sleep(0.5)
        self.report(stalled)

    def leftovers(self):
        shm = []
        for d in ["/dev/shm"] + [self.host_shm(h) for h in range(len(self.holders))]:
            shm += [os.path.join(d, n) for n in os.listdir(d) if n.startswith("xccl-") and n.split("-")[1].isdigit()
                    and int(n.split("-")[1]) in self.all_pids]
        procs, threads = [], 0
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.readlink("/proc/%s/exe" % d) == os.path.realpath(self.rank_bin):
                    procs.append(int(d))
                    threads += len(os.listdir("/proc/%s/task" % d))
            except OSError:
                pass
        fds = len(os.listdir("/proc/self/fd")) - self.fds0
        threads += self.threads() - self.threads0
        return shm, max(fds, 0), threads, procs

    def report(self, stalled):
        colls = wrong = 0
        for pid in self.all_pids:
            st = parse_status(read(os.path.join(self.dir, "st.%d" % pid)))
            if st:
                colls += st["colls"]
                wrong += st["wrong"]
        T = self.a.timeout
        rows = []
        F = D = want = 0
        for kind in KINDS + ["kill-in-recovery", "none"]:
            fs = [f for f in self.faults if f.kind == kind]
            if kind == "none" and not fs:
                continue
            det = sum(f.detected for f in fs)
            F += len(fs) if kind != "none" else 0
            D += det
            want += len(fs) if EXPECTED[kind] else 0
            dts = [f.detect_s for f in fs if f.detect_s is not None]
            rts = [f.recover_s for f in fs if f.recover_s is not None]
            ads = [f.recover_s - f.detect_s for f in fs if f.recover_s is not None and f.detect_s is not None
                   and not f.second]  # one with a second failure: in the kill-in-recovery row
            if kind != "none" and self.a.no_faults:
                continue
            drawn = kind in self.kinds or (kind == "kill-in-recovery" and self.kinds)
            label = "none (an error)" if kind == "none" else kind + ("" if drawn or fs else " (skipped)")
            rows.append((label, str(len(fs)),
                         "%d/%s" % (det, len(fs) if EXPECTED[kind] else 0), pctl(dts, 50), pctl(dts, 99),
                         pctl(rts, 50), pctl(rts, 99), pctl(ads, 50), pctl(ads, 99)))
        shm, fds, threads, procs = self.leftovers()
        leaked = len(shm) + fds + threads + len(procs)
        print()
        print("soak: %d ranks on %d hosts, %.1f min, XCCL_TIMEOUT %g s, %d epochs, %d restarts" %
              (self.n, self.hosts, (now() - self.t0) / 60, T, self.epoch + 1, self.restarts))
        fmt = "%-20s %6s %9s %9s %9s %10s %10s %9s %9s"
        print(fmt % ("fault", "count", "detected", "detect50", "detect99", "recover50", "recover99", "after50",
                     "after99"))
        for r in rows:
            print(fmt % r)
        if self.a.no_faults:
            print("(--no-faults: nothing injected; an error or a timed-out wait would show as a 'none' row)")
        elif "corrupt" in self.kinds:
            print("(kill counts the kills that let each corrupting replacement in)")
        if not self.a.no_faults:
            print("(detect: s from the fault to the last survivor's error, against XCCL_TIMEOUT %g s; recover: s from"
                  " the fault to %d ranks running again; after: recover - detect, s from the last survivor's error"
                  " to %d ranks running again, a second failure's in its row; slow: %d%% of a CPU for %g s; delay: stopped %g s, then"
                  " continued; neither may fail)" % (T, self.n, self.n, SLOW_QUOTA_US * 100 // SLOW_PERIOD_US, SLOW_HOLD_S,
                                         DELAY_FRACTION * T))
            if steps_line(self.faults):
                print(steps_line(self.faults))
        rates = [f.rates for f in self.faults if f.kind == "slow" and f.rates and f.rates[2] is not None]
        if rates:
            print("slow: the job's iterations/s before and while a rank was slowed: %s" %
                  ", ".join("%.1f -> %.1f" % (r[0], r[2]) for r in rates))
        if "corrupt" in self.kinds:
            cs = [f for f in self.faults if f.kind == "corrupt"]
            print("corrupt: detect and recover count from the first report (when the bit flipped is not known);"
                  " caught by the CRC32C check (a report says so): %d/%d" % (sum(f.crc for f in cs), len(cs)))
        forge_bad = self.forger.report(self, self.unexpected) if self.forger else False
        if "shmfull" in self.kinds:
            fs = [f for f in self.faults if f.kind == "shmfull" and f.recover_s is not None]
            print("shmfull: a private %d MiB /dev/shm per host, filled; replacements that said /dev/shm is full and"
                  " used TCP: %d/%d" % (SHM_MB, sum(bool(getattr(f, "shm_said", None)) for f in fs), len(fs)))
            said = [f.shm_said[0] for f in fs if getattr(f, "shm_said", None)]
            if said:
                print("shmfull: e.g. %s" % said[0].split(" xccl ", 1)[-1][:200])
        print("%-44s %d" % ("collectives completed and checked (all ranks' calls)", colls))
        print("%-44s %d" % ("wrong results", wrong))
        print("%-44s %d" % ("hangs (missed deadlines, failed recoveries)", self.hangs))
        for h in self.hang_notes:
            print("    %s" % h)
        print("%-44s %d" % ("errors no fault explains", self.unexpected))
        print("%-44s %d%s" % ("left: /dev/shm segments of xccl", len(shm), (" " + " ".join(shm[:4])) if shm else ""))
        print("%-44s %d" % ("left: driver fds", fds))
        print("%-44s %d" % ("left: threads", threads))
        print("%-44s %d%s" % ("left: soak_rank processes", len(procs), (" " + " ".join(map(str, procs))) if procs else ""))
        for pid in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for n in shm:
            try:
                os.unlink(n)
            except OSError:
                pass
        print("soak: faults %d detected %d wrong %d hangs %d leaked %d" % (F, D, wrong, self.hangs, leaked))
        self.ok = (not forge_bad and wrong == 0 and self.hangs == 0 and leaked == 0 and D == want
                   and not (self.a.no_faults and F))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--minutes", type=float, default=2)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=5)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--kinds", help="draw only these fault kinds (comma-separated)")
    ap.add_argument("--no-forge", action="store_true", help="no forged or garbage traffic, no wrong-secret joiner")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 30)
    print("soak: seed %d (--seed to replay the fault draws)" % a.seed, flush=True)
    d = Driver(a)
    if d.n % d.hosts:
        sys.exit("soak: --ranks must be a multiple of the %d hosts" % d.hosts)
    try:
        d.run()
    finally:
        d.unslow()
        d.end_holders()
    sys.exit(0 if d.ok else 1)


if __name__ == "__main__":
    main()
