"""What a program written for gloo meets in xccl's sends and receives, and in
torch's profiler (issue 28):

- any-source receives (recv/irecv without src) from each sender in turn, and
  from all at once, with the reported source checked;
- tags crossed on purpose: receives posted in the other order from the sends,
  small and beyond what a connection buffers, any-source included, and in
  batch_isend_irecv;
- the timing cases of the worker's grouping window: a send, compute, then the
  receive (and the receive first), beyond what a connection buffers;
- torch.profiler and the autograd profiler: the events of a small job, read
  back by name and input shape, beside gloo's.

    launch.py --nproc N test_p2p.py       (N >= 2)
"""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BACKEND, RANK, WORLD, failed, init_pair, passed, say  # noqa: E402

BIG = 6 << 20  # float32 elements: 24 MiB, beyond a connection's 8 slots of 512 KiB
WAIT = timedelta(seconds=30)


class Checker:
    def __init__(self):
        self.failures = []
        self.count = 0

    def equal(self, what, got, want):
        self.count += 1
        if not torch.equal(got, want):
            self.failures.append("%s: got %s, want %s" % (what, got.flatten()[:4].tolist(), want.flatten()[:4].tolist()))

    def same(self, what, got, want):
        self.count += 1
        if got != want:
            self.failures.append("%s: got %r, want %r" % (what, got, want))


def any_source(chk, g, gg, label):
    me, W = RANK, WORLD
    # Each sender in turn; the receiver learns the source from recv's result
    # (blocking) and from the Work (irecv).
    for s in range(1, W):
        for blocking in (True, False):
            dist.barrier(group=gg)
            if me == s:
                dist.send(torch.full((7,), float(s * 10 + blocking)), dst=0, group=g)
            elif me == 0:
                t = torch.zeros(7)
                if blocking:
                    src = dist.recv(t, group=g)
                else:
                    w = dist.irecv(t, group=g)
                    w.wait(WAIT)
                    src = w._source_rank()
                chk.same("%s any-source %s from rank %d: source" % (label, "recv" if blocking else "irecv", s),
                         src, s)
                chk.equal("%s any-source from rank %d: data" % (label, s), t, torch.full((7,), float(s * 10 + blocking)))
    # Every sender at once, each twice: every message once, each with its source.
    dist.barrier(group=gg)
    if me == 0:
        got = []
        for _ in range(2 * (W - 1)):
            t = torch.zeros(3, dtype=torch.int64)
            src = dist.recv(t, group=g)
            got.append((src, int(t[0]), int(t[1])))
        got.sort()
        want = sorted((s, s, k) for s in range(1, W) for k in range(2))
        chk.same("%s any-source from all at once" % label, [(a, b, c) for a, b, c in got], want)
        chk.same("%s any-source: source matches payload" % label, all(a == b for a, b, _ in got), True)
    else:
        for k in range(2):
            dist.send(torch.tensor([me, k, 0]), dst=0, group=g)
    dist.barrier(group=gg)


def tags(chk, g, gg, label):
    me, W = RANK, WORLD
    peer = me ^ 1
    if peer >= W:
        dist.barrier(group=gg)
        return
    sender = me % 2 == 0
    # (gloo's run is the small case only: here gloo's crossed 24 MiB sends in
    # a new_group time out.)
    for n in ((5,) if label == "gloo" else (5, BIG)):
        # Two sends with tags 1 and 2; the receiver asks for 2 first.
        a, b = torch.full((n,), 1.0 + me), torch.full((n,), 100.0 + me)
        if sender:
            reqs = [dist.isend(a, peer, group=g, tag=1), dist.isend(b, peer, group=g, tag=2)]
            for q in reqs:
                q.wait(WAIT)
        else:
            x2, x1 = torch.zeros(n), torch.zeros(n)
            w2 = dist.irecv(x2, src=peer, group=g, tag=2)
            w1 = dist.irecv(x1, src=peer, group=g, tag=1)
            w2.wait(WAIT)
            w1.wait(WAIT)
            chk.equal("%s tag 2 received first (%d elements)" % (label, n), x2, torch.full((n,), 100.0 + peer))
            chk.equal("%s tag 1 received second (%d elements)" % (label, n), x1, torch.full((n,), 1.0 + peer))
        dist.barrier(group=gg)
    # Any source with a tag: tag 8 sent first, tag 9 asked for first.
    if sender:
        reqs = [dist.isend(torch.tensor([8.0]), peer, group=g, tag=8),
                dist.isend(torch.tensor([9.0]), peer, group=g, tag=9)]  # gloo's send waits for its receive
        for q in reqs:
            q.wait(WAIT)
    else:
        t9, t8 = torch.zeros(1), torch.zeros(1)
        s9 = dist.recv(t9, group=g, tag=9)
        s8 = dist.recv(t8, group=g, tag=8)
        chk.same("%s any-source by tag: sources" % label, (s9, s8), (peer, peer))
        chk.same("%s any-source by tag: values" % label, (float(t9), float(t8)), (9.0, 8.0))
    dist.barrier(group=gg)
    # batch_isend_irecv with tags, the receives listed in the other order.
    x = [torch.zeros(4), torch.zeros(4)]
    if sender:
        ops = [dist.P2POp(dist.isend, torch.full((4,), 3.0), peer, g, 3),
               dist.P2POp(dist.isend, torch.full((4,), 4.0), peer, g, 4)]
    else:
        ops = [dist.P2POp(dist.irecv, x[1], peer, g, 4), dist.P2POp(dist.irecv, x[0], peer, g, 3)]
    for q in dist.batch_isend_irecv(ops):
        q.wait(WAIT)
    if not sender:
        chk.equal("%s batch_isend_irecv tag 3" % label, x[0], torch.full((4,), 3.0))
        chk.equal("%s batch_isend_irecv tag 4" % label, x[1], torch.full((4,), 4.0))
    dist.barrier(group=gg)


def timing(chk, g, gg, label):
    """Far outside the grouping window (50 ms of compute between the calls),
    beyond what a connection buffers, around the ring."""
    me, W = RANK, WORLD
    nxt, prv = (me + 1) % W, (me - 1) % W
    for first in ("send", "recv"):
        out = torch.zeros(BIG)
        data = torch.full((BIG,), float(me + 1))
        start = time.monotonic()
        if first == "send":
            s = dist.isend(data, nxt, group=g)
            time.sleep(0.05)
            r = dist.irecv(out, src=prv, group=g)
        else:
            r = dist.irecv(out, src=prv, group=g)
            time.sleep(0.05)
            s = dist.isend(data, nxt, group=g)
        try:
            s.wait(WAIT)
            r.wait(WAIT)
        except RuntimeError as e:
            chk.failures.append("%s %s, compute, then the other: %s" % (label, first, str(e).splitlines()[0]))
            continue
        chk.equal("%s %s first, compute, then the other (%.2f s)" % (label, first, time.monotonic() - start), out,
                  torch.full((BIG,), float(prv + 1)))
        dist.barrier(group=gg)
    # A receive posted, then a collective, then the send that it needs.
    if W >= 2:
        t = torch.ones(3)
        if me == 0:
            r = dist.irecv(out[:3], src=1, group=g, tag=5)
            dist.all_reduce(t, group=g)
            r.wait(WAIT)
            chk.equal("%s irecv, all_reduce, then its send" % label, out[:3], torch.full((3,), 2.0))
        else:
            dist.all_reduce(t, group=g)
            if me == 1:
                dist.send(torch.full((3,), 2.0), 0, group=g, tag=5)
    dist.barrier(group=gg)


def job(g, x):
    """A small job: a few collectives and a send/receive on group g."""
    me, W = RANK, WORLD
    dist.all_reduce(x, group=g)
    dist.broadcast(x, 0, group=g)
    dist.all_gather([torch.zeros_like(x) for _ in range(W)], x, group=g)
    if me == 0:
        dist.send(x, 1, group=g)
        dist.recv(x, group=g)
    elif me == 1:
        dist.recv(x, 0, group=g)
        dist.send(x, 0, group=g)
    dist.barrier(group=g)


def profiler(chk, g, gg):
    x = torch.ones(5, 3)
    want = ["all_reduce", "broadcast", "all_gather", "barrier"]
    if RANK == 0:
        want += ["send", "recvAnySource"]
    elif RANK == 1:
        want += ["recv", "send"]
    for kind in ("torch.profiler", "autograd.profiler"):
        if kind == "torch.profiler":
            ctx = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
        else:
            ctx = torch.autograd.profiler.profile(record_shapes=True)
        with ctx as prof:
            job(g, x)
            job(gg, x.clone())
        events = prof.events() if kind == "torch.profiler" else prof.function_events
        names = {}
        for e in events:
            names.setdefault(e.name, e)
        for op in want:
            for backend in ("gloo", BACKEND):  # "<backend>:<op>", as torch's own tests look for them
                name = "%s:%s" % (backend, op)
                chk.count += 1
                if name not in names:
                    chk.failures.append("%s: no event %s among %s" % (kind, name,
                                        sorted(n for n in names if ":" in n)))
        ar = "%s:all_reduce" % BACKEND
        if ar in names:
            chk.same("%s: input shapes of %s" % (kind, ar), names[ar].input_shapes, [[5, 3]])
        if "gloo:all_reduce" in names and ar in names:
            chk.same("%s: shapes like gloo's" % kind, names[ar].input_shapes,
                     names["gloo:all_reduce"].input_shapes)


def main():
    if WORLD < 2:
        failed("needs 2 ranks or more")
    xg, gg = init_pair(BACKEND)
    chk = Checker()
    start = time.monotonic()
    any_source(chk, gg, gg, "gloo")  # the same program on gloo, to keep the test honest
    any_source(chk, xg, gg, "xccl")
    tags(chk, gg, gg, "gloo")
    tags(chk, xg, gg, "xccl")
    timing(chk, xg, gg, "xccl")
    profiler(chk, xg, gg)
    dist.barrier(group=gg)
    if chk.failures:
        for f in chk.failures:
            say("mismatch:", f)
        failed("%d of %d checks failed" % (len(chk.failures), chk.count))
    passed("%d checks in %.1f s" % (chk.count, time.monotonic() - start))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
