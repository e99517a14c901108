"""A new process group after a failure, and a larger one: xccl.torch.shrink,
grow_id, grow and join.

    test_elastic.py shrink VICTIM  the default group is xccl; XCCL_FAULT (the
                                   test's environment) SIGKILLs rank VICTIM in
                                   its third all_reduce. The others get the
                                   error, shrink the group without it, and
                                   check all_reduce, broadcast and a ring of
                                   sends on the survivors' group (renumbered
                                   densely), and that the failed group stays
                                   failed and cannot grow. With "regrow", rank
                                   0 then starts a new process that joins the
                                   survivors in the victim's place (grow_id,
                                   grow, join; the id through rank 0's c10d
                                   store), and the 4 ranks are checked.
    test_elastic.py grow           ranks 0..WORLD-2 make an xccl group; rank 0
                                   makes a grow id and puts it in a c10d
                                   store; the last rank, in no group so far,
                                   reads it and joins while the others grow:
                                   all_reduce, broadcast from the newcomer and
                                   a ring of sends on the grown group.
"""
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BACKEND, RANK, WORLD, failed, passed, say  # noqa: E402

import xccl.torch  # noqa: E402

TIMEOUT_S = 30
N = 1000


def expect_raise(what, fn, *words):
    try:
        fn()
    except (RuntimeError, ValueError, TypeError) as e:
        text = str(e)
        for w in words:
            if w not in text:
                failed("%s raised, but without %r: %s" % (what, w, text))
        return text
    failed("%s did not raise" % what)


def check_group(pg, globals_by_rank, label, root=1, ids=None):
    """all_reduce of rank-dependent tensors, broadcast from group rank root and a
    ring of sends on pg, whose group rank r is global rank globals_by_rank[r]
    (the rank torch.distributed's calls take) and the process of RANK ids[r]
    (default: the global rank), which the values depend on."""
    ids = ids or globals_by_rank
    me, n = pg.rank(), pg.size()
    if n != len(ids) or ids[me] != RANK:
        failed("%s: rank %d of %d, expected rank %d of %d" % (label, me, n, ids.index(RANK), len(ids)))
    base = torch.arange(N, dtype=torch.float64)
    t = base * (RANK + 1)
    dist.all_reduce(t, group=pg)
    want = base * sum(i + 1 for i in ids)
    if not torch.equal(t, want):
        failed("%s: all_reduce gave %s..., expected %s..." % (label, t[:4].tolist(), want[:4].tolist()))
    b = torch.full((N,), float(RANK * 10 + 7)) if me == root else torch.zeros(N)
    dist.broadcast(b, src=globals_by_rank[root], group=pg)
    if not torch.equal(b, torch.full((N,), float(ids[root] * 10 + 7))):
        failed("%s: broadcast from group rank %d gave %s" % (label, root, b[:4].tolist()))
    nxt, prv = (me + 1) % n, (me - 1) % n
    out = torch.full((N,), float(RANK), dtype=torch.float32)
    got = torch.zeros(N, dtype=torch.float32)
    send = dist.isend(out, dst=globals_by_rank[nxt], group=pg)
    dist.recv(got, src=globals_by_rank[prv], group=pg)
    send.wait()
    if not torch.equal(got, torch.full((N,), float(ids[prv]))):
        failed("%s: received %s from group rank %d" % (label, got[:4].tolist(), prv))
    dist.barrier(group=pg)


def master_store():
    """A client of the TCPStore that rank 0 hosts for the job (env://)."""
    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                         timedelta(seconds=TIMEOUT_S))


def replace(new, survivors, victim):
    """Grows the survivors' group back to WORLD ranks with a new process (rank
    0's child) in the victim's place; returns the grown group."""
    store = master_store()
    nranks = new.size() + 1
    child = None
    if new.rank() == 0:
        store.set("replace/uid", xccl.torch.grow_id(new))
        env = {k: v for k, v in os.environ.items() if k != "XCCL_FAULT"}
        env["RANK"] = str(victim)  # the pass file it writes stands for the victim's
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "joiner", str(victim)], env=env)
    uid = store.get("replace/uid")
    big = xccl.torch.grow(new, nranks, uid, dist.PrefixStore("replaced", store))
    check_group(big, list(range(nranks)), "regrown group", root=nranks - 1, ids=survivors + [victim])
    if child is not None and child.wait(timeout=TIMEOUT_S) != 0:
        failed("the process that joined in rank %d's place exited %d" % (victim, child.returncode))
    return big


def joiner(victim):
    survivors = [r for r in range(WORLD) if r != victim]
    store = master_store()
    uid = store.get("replace/uid")
    big = xccl.torch.join(WORLD, WORLD - 1, uid, dist.PrefixStore("replaced", store),
                          timeout=timedelta(seconds=TIMEOUT_S))
    check_group(big, list(range(WORLD)), "regrown group", root=WORLD - 1, ids=survivors + [victim])
    passed("joined the survivors as rank %d of %d in rank %d's place; all_reduce, broadcast and sends checked"
           % (WORLD - 1, WORLD, victim))
    sys.stdout.flush()
    os._exit(0)


def shrink(victim, regrow):
    # torchrun stops the job with SIGTERM once it sees the victim dead: the
    # survivors ignore it, to shrink, check and report first.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group(BACKEND, timeout=timedelta(seconds=TIMEOUT_S))
    world = dist.group.WORLD
    gloo = dist.new_group(backend="gloo")
    expect_raise("shrink of a gloo group", lambda: xccl.torch.shrink(gloo, [victim]), "not an xccl group")
    for _ in range(2):  # operations 1 and 2 pass
        t = torch.ones(1024)
        dist.all_reduce(t)
        assert t[0].item() == WORLD
    big = torch.ones(4 << 20)  # 16 MiB: many steps; XCCL_FAULT kills the victim at one of operation 3's
    try:
        dist.all_reduce(big)
        failed("all_reduce returned although rank %d was killed in it (is XCCL_FAULT set?)" % victim)
    except RuntimeError as e:
        failed_at = time.monotonic()
        say("all_reduce raised: %s" % str(e)[:200])
    if RANK == victim:
        failed("the victim survived its own kill")
    # Refused with sentences before anything is sent.
    expect_raise("shrink excluding the caller", lambda: xccl.torch.shrink(world, [RANK]), "only the ranks that stay")
    expect_raise("shrink of rank WORLD", lambda: xccl.torch.shrink(world, [WORLD]), "not a rank of the group")
    expect_raise("shrink of nobody", lambda: xccl.torch.shrink(world, []), "exclude_ranks is empty")
    start = time.monotonic()
    new = xccl.torch.shrink(None, [victim])  # None: the default group
    took = time.monotonic() - start
    survivors = [r for r in range(WORLD) if r != victim]
    say("shrunk in %.2f s: rank %d of %d" % (took, new.rank(), new.size()))
    check_group(new, survivors, "shrunk group")
    if dist.get_rank(new) != survivors.index(RANK):
        failed("dist.get_rank(new) is %d, expected %d" % (dist.get_rank(new), survivors.index(RANK)))
    # The old group stays failed, and cannot grow.
    expect_raise("all_reduce on the failed group", lambda: dist.all_reduce(torch.ones(4)))
    expect_raise("grow_id of the failed group", lambda: xccl.torch.grow_id(world), "Shrink it first")
    if regrow:
        replace(new, survivors, victim)
    # A second shrink of the new group (a healthy one) drops its last rank.
    last = survivors[-1]
    if RANK != last:
        smaller = xccl.torch.shrink(new, [new.size() - 1])
        check_group(smaller, survivors[:-1], "group shrunk twice")
    dist.barrier(group=new)  # rank 0 hosts the store: nobody leaves while another may still use it
    passed("shrunk in %.2f s to %d ranks after rank %d died%s; all_reduce, broadcast and sends checked; "
           "done %.1f s after the failure" % (took, new.size(), victim, ", and grown back with a new process"
                                              if regrow else "", time.monotonic() - failed_at))
    sys.stdout.flush()
    os._exit(0)  # skip teardown of a group whose peer is gone


def grow():
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    store = dist.TCPStore(addr, port, WORLD, RANK == 0, timedelta(seconds=60))
    old_size = WORLD - 1
    grown_store = dist.PrefixStore("grown", store)
    if RANK < old_size:
        dist.init_process_group(BACKEND, store=dist.PrefixStore("old", store), rank=RANK, world_size=old_size,
                                timeout=timedelta(seconds=TIMEOUT_S))
        old = dist.group.WORLD
        t = torch.full((8,), float(RANK + 1))
        dist.all_reduce(t)
        if t[0].item() != old_size * (old_size + 1) / 2:
            failed("the old group's all_reduce gave %s" % t.tolist())
        if RANK == 0:
            uid = xccl.torch.grow_id(old)
            if not isinstance(uid, bytes) or len(uid) != 128:
                failed("grow_id returned %r" % type(uid))
            store.set("grow/uid", uid)
        uid = store.get("grow/uid")
        expect_raise("grow to the same size", lambda: xccl.torch.grow(old, old_size, uid, grown_store),
                     "not above the group's size")
        expect_raise("grow with a short id", lambda: xccl.torch.grow(old, WORLD, uid[:10], grown_store),
                     "128")
        start = time.monotonic()
        new = xccl.torch.grow(old, WORLD, uid, grown_store)
    else:
        uid = store.get("grow/uid")  # waits for rank 0 to put it there
        expect_raise("join as a rank out of range", lambda: xccl.torch.join(WORLD, WORLD, uid, grown_store),
                     "is not a rank of a group")
        start = time.monotonic()
        new = xccl.torch.join(WORLD, RANK, uid, grown_store, timeout=timedelta(seconds=TIMEOUT_S))
    took = time.monotonic() - start
    say("grew in %.2f s: rank %d of %d" % (took, new.rank(), new.size()))
    check_group(new, list(range(WORLD)), "grown group", root=WORLD - 1)  # broadcast from the newcomer
    if RANK < old_size:  # the old group is still there, and works
        t = torch.ones(4)
        dist.all_reduce(t)
        if t[0].item() != old_size:
            failed("the old group's all_reduce after the grow gave %s" % t.tolist())
    dist.barrier(group=new)
    dist.destroy_process_group(new)
    if RANK < old_size:
        dist.destroy_process_group()
    store.set("done/%d" % RANK, "1")
    if RANK == 0:  # hosts the store: leave last
        store.wait(["done/%d" % r for r in range(WORLD)])
    passed("grew from %d to %d ranks in %.2f s; all_reduce, broadcast from the newcomer and sends checked"
           % (old_size, WORLD, took))


if __name__ == "__main__":
    if sys.argv[1] == "shrink":
        shrink(int(sys.argv[2]), "regrow" in sys.argv[3:])
    elif sys.argv[1] == "joiner":
        joiner(int(sys.argv[2]))
    else:
        grow()
