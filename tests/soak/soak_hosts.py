#!/usr/bin/env python3
"""soak_hosts.py — the hosts' own resources two of the soak's faults use (a mixin of soak_driver.py's Driver,
which holds self.holders and self.cgroup): a private /dev/shm per host (shmfull) and a CPU-quota cgroup
(slow)."""
import os
import subprocess

CGROUP_CPU = "/sys/fs/cgroup/cpu"
# slow: 10 ms of CPU in every 100 ms for 6 s. CFS throttles within a period, so
# the longest the rank sits still is about 90 ms (plus its share of 2 busy
# cores): far below XCCL_TIMEOUT (5 s), so no wait may time out; the job only
# runs slower (the table shows by how much).
SLOW_QUOTA_US, SLOW_PERIOD_US, SLOW_HOLD_S = 10000, 100000, 6.0
# shmfull: each host runs in its own mount namespace with a private SHM_MB MiB
# tmpfs on /dev/shm (never the machine's). The driver fills the host's, kills
# a rank there, and its replacement runs XCCL_SHM_MEMFD=0 (named segments in
# /dev/shm): xccl must say /dev/shm is full and use TCP for that connection;
# the job recovers as from a kill, and the space is freed once it has.
SHM_MB = 64


class HostResources:
    """Mixed into the Driver: self.holders (a shm_holder() per host, or none) and self.cgroup (the slow group)."""

    def shm_holder(self):
        """A process holding a mount namespace whose /dev/shm is a private SHM_MB MiB tmpfs; None if none."""
        try:
            p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                  "mount -t tmpfs -o size=%dm tmpfs /dev/shm && echo ok && exec sleep 100000" % SHM_MB],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return None
        if p.stdout.readline().strip() != "ok":
            p.kill()
            p.wait()
            return None
        return p

    def host_shm(self, host):
        return "/proc/%d/root/dev/shm" % self.holders[host].pid

    def end_holders(self):
        for p in self.holders:
            if p:
                p.kill()
                p.wait()
        self.holders = []

    def fill_shm(self, host):
        """Writes /dev/shm/soak-fill in the host's namespace until the tmpfs is full."""
        with open(os.path.join(self.host_shm(host), "soak-fill"), "wb", buffering=0) as f:
            try:
                while True:
                    f.write(bytes(1 << 20))
            except OSError:
                pass

    def slow(self, pid):
        self.cgroup = os.path.join(CGROUP_CPU, "xccl-soak-%d" % os.getpid())
        os.makedirs(self.cgroup, exist_ok=True)
        with open(os.path.join(self.cgroup, "cpu.cfs_period_us"), "w") as f:
            f.write(str(SLOW_PERIOD_US))
        with open(os.path.join(self.cgroup, "cpu.cfs_quota_us"), "w") as f:
            f.write(str(SLOW_QUOTA_US))
        with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def unslow(self):
        """Every process of the slow group back to the root group; the group removed."""
        if not self.cgroup:
            return
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs")) as f:
                pids = f.read().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                with open(os.path.join(CGROUP_CPU, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass
        try:
            os.rmdir(self.cgroup)
        except OSError as e:
            print("soak: cannot remove %s: %s" % (self.cgroup, e))
        self.cgroup = None
