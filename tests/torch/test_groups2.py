"""torch 2.x group management over the backend (--backend, default "xcl";
the default group is gloo unless said otherwise).

    test_groups2.py split     torch.distributed.split_group refuses on a
                              machine without an accelerator (it needs the
                              default group's bound device, which
                              init_process_group accepts only for an
                              accelerator, or torchcomms): checked. The C++
                              path under it, ProcessGroup.split_group, is
                              called directly on a new_group of every rank:
                              halves (each rank passes its own), then one
                              pair (the ranks outside it pass the pair and get
                              None); each split's rank, size, backend name,
                              all_reduce and broadcast checked, and the
                              parent's all_reduce after the splits.
    test_groups2.py shrink [--default]
                              rank --victim (default: the last) dies before
                              (or, with XCCL_FAULT set, in) the third
                              all_reduce of a group of every rank; the others
                              see it raise, then torch.distributed.shrink_group
                              the group without the victim and check
                              all_reduce and broadcast on the result.
                              --default: the default group is the backend,
                              and it is shrunk (torch makes the result the new
                              default group). A backend without shrinking
                              (gloo) must raise TypeError instead.
    test_groups2.py destroy   the victim dies as above; on the survivors the
                              failed operation must raise within the group's
                              timeout naming the dead rank ("rank N"; not
                              asked of gloo, which does not), and
                              destroy_process_group of the failed group must
                              return within DESTROY_S; so must that of a
                              second group with an all_reduce in flight
                              (which cannot complete), whose wait() must
                              then raise within DESTROY_S.

The victim's death ends the job early: the survivors ignore torchrun's
SIGTERM to finish (run it with launch.py --may-fail --pass-ranks <the
others> --monitor-interval 5).
"""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common2 import RANK, WORLD, expect_raise, failed, finish, parse_args, passed, say  # noqa: E402

TIMEOUT_S = 30
DESTROY_S = 10  # destroy_process_group of a group whose peer died


def sum_ranks(ranks):
    return float(sum(r + 1 for r in ranks))


def check_pg(label, pg, ranks, backend):
    """pg (not in torch.distributed's tables: its methods are called
    directly) holds the global ranks `ranks`, in order."""
    if pg is None:
        failed("%s: None, on a rank of it" % label)
    if pg.size() != len(ranks) or pg.rank() != ranks.index(RANK):
        failed("%s: rank %d of %d, expected %d of %d" % (label, pg.rank(), pg.size(), ranks.index(RANK), len(ranks)))
    name = pg._get_backend(torch.device("cpu")).name()
    if name != backend:
        failed("%s: its backend is %r, expected %r" % (label, name, backend))
    t = torch.full((1000,), float(RANK + 1))
    pg.allreduce([t]).wait()
    if not torch.equal(t, torch.full((1000,), sum_ranks(ranks))):
        failed("%s: all_reduce gave %s, expected %g" % (label, t[:4].tolist(), sum_ranks(ranks)))
    b = torch.full((100,), float(RANK)) if pg.rank() == len(ranks) - 1 else torch.zeros(100)
    opts = dist.BroadcastOptions()
    opts.rootRank = len(ranks) - 1
    pg.broadcast([b], opts).wait()
    if not torch.equal(b, torch.full((100,), float(ranks[-1]))):
        failed("%s: broadcast from its last rank gave %s" % (label, b[:4].tolist()))


def split(backend):
    dist.init_process_group("cpu:gloo", timeout=timedelta(seconds=TIMEOUT_S))
    # "cpu:" + backend: new_group(backend="gloo") registers the one gloo
    # backend for cpu and cuda, and ProcessGroup.split_group then splits it
    # once per device type, under the same store keys: the two new gloo
    # contexts cross-connect, and about half the runs hang.
    parent = dist.new_group(backend="cpu:" + backend, timeout=timedelta(seconds=TIMEOUT_S))
    if parent._device_types != [torch.device("cpu")]:
        failed("new_group(backend='cpu:%s') has device types %s" % (backend, parent._device_types))
    t = torch.ones(8)
    dist.all_reduce(t, group=parent)  # the parent's communicator exists before it is split
    halves = [list(range(WORLD // 2)), list(range(WORLD // 2, WORLD))]
    notes = []
    if not torch.accelerator.is_available():
        text = expect_raise("split_group without an accelerator", lambda: dist.split_group(parent, halves),
                            "RuntimeError")
        notes.append("split_group refused (%s)" % text[:80])
    be = parent._get_backend(torch.device("cpu"))
    if not be.supports_splitting:
        failed("the %s backend does not say it supports splitting" % backend)
    mine = halves[0] if RANK in halves[0] else halves[1]
    sub = parent.split_group(mine, timeout=timedelta(seconds=TIMEOUT_S),
                             group_name="g2_half%d" % mine[0])
    check_pg("split half %s" % mine, sub, mine, backend)
    pair = [0, WORLD - 1] if WORLD > 2 else [0]
    sub2 = parent.split_group(pair, timeout=timedelta(seconds=TIMEOUT_S),
                              group_name="g2_pair")
    if RANK in pair:
        check_pg("split pair %s" % pair, sub2, pair, backend)
    elif sub2 is not None:
        failed("split_group(%s) on rank %d, outside it, returned a group of size %d" % (pair, RANK, sub2.size()))
    t = torch.full((8,), float(RANK + 1))
    dist.all_reduce(t, group=parent)
    if not torch.equal(t, torch.full((8,), sum_ranks(range(WORLD)))):
        failed("the parent's all_reduce after the splits gave %s" % t.tolist())
    dist.barrier()
    passed("%s; ProcessGroup.split_group into halves and %s (others None): all_reduce and broadcast checked"
           % ("; ".join(notes), pair))
    dist.destroy_process_group()


def lose_victim(group, victim):
    """Two all_reduces pass; the victim dies before (XCCL_FAULT: in) the
    third, which must raise on the others. Returns its text and how long it
    took."""
    for _ in range(2):
        t = torch.ones(1024)
        dist.all_reduce(t, group=group)
        if t[0].item() != WORLD:
            failed("all_reduce before the failure gave %s" % t[:4].tolist())
    if RANK == victim and not os.environ.get("XCCL_FAULT"):
        say("killing myself")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    big = torch.ones(4 << 20)  # 16 MiB: many steps, for XCCL_FAULT's step to fall in
    start = time.monotonic()
    try:
        dist.all_reduce(big, group=group)
    except RuntimeError as e:
        took = time.monotonic() - start
        if RANK == victim:
            failed("the victim survived its own kill")
        say("all_reduce raised after %.2f s: %s" % (took, str(e)[:300]))
        return str(e), took
    failed("all_reduce returned although rank %d died" % victim)


def shrink(backend, victim, default):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if default:
        dist.init_process_group(backend, timeout=timedelta(seconds=TIMEOUT_S))
        group = dist.group.WORLD
    else:
        dist.init_process_group("cpu:gloo", timeout=timedelta(seconds=TIMEOUT_S))
        group = dist.new_group(backend=backend, timeout=timedelta(seconds=TIMEOUT_S))
    be = group._get_backend(torch.device("cpu"))
    if not be.supports_shrinking:
        text = expect_raise("shrink_group of a %s group" % backend,
                            lambda: dist.shrink_group([WORLD - 1], group=group), "does not support shrinking")
        dist.barrier(group=group)
        finish("%s does not support shrinking; shrink_group raised %s" % (backend, text[:120]))
    expect_raise("shrink_group excluding the caller", lambda: dist.shrink_group([RANK], group=group),
                 "exclusion list")
    text, took = lose_victim(group, victim)
    survivors = [r for r in range(WORLD) if r != victim]
    start = time.monotonic()
    new = dist.shrink_group([victim], group=None if default else group)
    shrink_s = time.monotonic() - start
    say("shrunk in %.2f s: rank %d of %d" % (shrink_s, new.rank(), new.size()))
    if default and dist.group.WORLD is not new:
        failed("shrink_group of the default group did not make the result the default group")
    if dist.get_world_size(new) != len(survivors) or dist.get_rank(new) != survivors.index(RANK):
        failed("the shrunk group: rank %d of %d, expected %d of %d"
               % (dist.get_rank(new), dist.get_world_size(new), survivors.index(RANK), len(survivors)))
    t = torch.full((1000,), float(RANK + 1))
    dist.all_reduce(t, group=new)
    if not torch.equal(t, torch.full((1000,), sum_ranks(survivors))):
        failed("all_reduce on the shrunk group gave %s, expected %g" % (t[:4].tolist(), sum_ranks(survivors)))
    b = torch.full((100,), float(RANK)) if RANK == survivors[-1] else torch.zeros(100)
    # src: a global rank, which torch maps to the group's; a shrunk default
    # group renumbers the world itself, so there the global rank is the new one.
    dist.broadcast(b, src=len(survivors) - 1 if default else survivors[-1], group=new)
    if not torch.equal(b, torch.full((100,), float(survivors[-1]))):
        failed("broadcast on the shrunk group gave %s" % b[:4].tolist())
    dist.barrier(group=new)
    finish("the %s group shrunk in %.2f s to %d ranks after rank %d died (its all_reduce raised in %.2f s); "
           "all_reduce and broadcast checked" % ("default" if default else "new", shrink_s, new.size(), victim, took))


def destroy(backend, victim):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group("cpu:gloo", timeout=timedelta(seconds=TIMEOUT_S))
    group = dist.new_group(backend=backend, timeout=timedelta(seconds=TIMEOUT_S))
    other = dist.new_group(backend=backend, timeout=timedelta(seconds=TIMEOUT_S))
    dist.all_reduce(torch.ones(8), group=other)  # its communicator is up before the victim dies
    text, took = lose_victim(group, victim)
    problems = []
    if took > TIMEOUT_S + 5:
        problems.append("the failed all_reduce raised after %.1f s, past the %d s timeout" % (took, TIMEOUT_S))
    named = "rank %d" % victim in text
    if not named and backend != "gloo":  # gloo's says "Connection reset by peer", and the peer's address
        problems.append("the error does not name rank %d: %s" % (victim, text[:300]))
    start = time.monotonic()
    dist.destroy_process_group(group)
    gone_s = time.monotonic() - start
    if gone_s > DESTROY_S:
        problems.append("destroy_process_group took %.1f s (%d s allowed)" % (gone_s, DESTROY_S))
    # The other group, destroyed with an all_reduce still in flight that
    # cannot complete: destroy must not wait for it, and its wait() must
    # raise, not hang or pass.
    work = dist.all_reduce(torch.ones(4 << 20), group=other, async_op=True)
    start = time.monotonic()
    dist.destroy_process_group(other)
    pending_s = time.monotonic() - start
    if pending_s > DESTROY_S:
        problems.append("destroy_process_group with an operation in flight took %.1f s (%d s allowed)"
                        % (pending_s, DESTROY_S))
    start = time.monotonic()
    try:
        work.wait()
        problems.append("the in-flight all_reduce's wait() returned after its group was destroyed")
    except RuntimeError as e:
        say("the in-flight all_reduce's wait() raised after %.2f s: %s" % (time.monotonic() - start, str(e)[:200]))
    wait_s = time.monotonic() - start
    if wait_s > DESTROY_S:
        problems.append("the in-flight all_reduce's wait() took %.1f s after destroy" % wait_s)
    if problems:
        failed("; ".join(problems))
    finish("the failed all_reduce raised in %.2f s %s rank %d; destroy_process_group took %.2f s, and %.2f s "
           "with an all_reduce in flight (whose wait() then raised in %.2f s): %s"
           % (took, "naming" if named else "without naming", victim, gone_s, pending_s, wait_s, text[:160]))


def main():
    def extra(ap):
        ap.add_argument("mode", choices=("split", "shrink", "destroy"))
        ap.add_argument("--victim", type=int, default=WORLD - 1)
        ap.add_argument("--default", action="store_true", help="shrink: the default group is the backend")
    a = parse_args(extra)
    if a.mode == "split":
        split(a.backend)
    elif a.mode == "shrink":
        shrink(a.backend, a.victim, a.default)
    else:
        destroy(a.backend, a.victim)


if __name__ == "__main__":
    main()
