"""Failures seen through torch.distributed.

    test_fault.py kill      the last rank is SIGKILLed in the middle of an
                            all_reduce (XCCL_FAULT=...,action=kill, set by
                            the test's environment): every other rank must
                            raise RuntimeError within the group's timeout,
                            naming the dead rank. Run it over shared memory
                            and over sockets (XCCL_SHM_DISABLE=1).
    test_fault.py mismatch  with XCCL_CHECK=1, ranks call all_reduce with
                            different counts: every rank must raise, naming
                            the ranks that differ.
"""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BACKEND, RANK, WORLD, failed, passed, say  # noqa: E402

TIMEOUT_S = 30


def finish(text):
    passed(text)
    sys.stdout.flush()
    os._exit(0)  # skip teardown of groups whose peer is gone


def kill():
    # Once torchrun sees the victim dead it stops the job with SIGTERM: the
    # survivors ignore it, to raise and report first.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT_S))
    xg = dist.new_group(backend=BACKEND, timeout=timedelta(seconds=TIMEOUT_S))
    victim = WORLD - 1
    for _ in range(2):  # operations 1 and 2 pass
        t = torch.ones(1024)
        dist.all_reduce(t, group=xg)
        assert t[0].item() == WORLD
    big = torch.ones(4 << 20)  # 16 MiB: many steps; XCCL_FAULT kills the victim at one of operation 3's
    start = time.monotonic()
    try:
        dist.all_reduce(big, group=xg)
    except RuntimeError as e:
        took = time.monotonic() - start
        text = str(e)
        say("raised after %.2f s: %s" % (took, text))
        if RANK == victim:
            failed("the victim survived its own kill")
        if "rank %d" % victim not in text:
            failed("the error does not name rank %d: %s" % (victim, text))
        c10d = dist.distributed_c10d
        names = c10d._pg_names if hasattr(c10d, "_pg_names") else c10d._world.pg_names  # 1.13 / 2.x
        if "torch process group '%s'" % names[xg] not in text:
            failed("the error does not name torch's group %r: %s" % (names[xg], text))
        if took > TIMEOUT_S:
            failed("raised after %.1f s, past the %d s timeout" % (took, TIMEOUT_S))
        finish("raised in %.2f s naming rank %d: %s" % (took, victim, text[:200]))
    failed("all_reduce returned although rank %d was killed in it (is XCCL_FAULT set?)" % victim)


def mismatch():
    dist.init_process_group(BACKEND, timeout=timedelta(seconds=TIMEOUT_S))
    t = torch.ones(10 + 2 * RANK)  # every rank a different count
    start = time.monotonic()
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        took = time.monotonic() - start
        text = str(e)
        say("raised after %.2f s: %s" % (took, text))
        finish("raised in %.2f s: %s" % (took, text[:300]))
    failed("all_reduce with counts that differ between ranks returned (is XCCL_CHECK=1 set?)")


if __name__ == "__main__":
    {"kill": kill, "mismatch": mismatch}[sys.argv[1]]()
