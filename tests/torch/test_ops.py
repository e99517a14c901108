"""Every c10d operation the xccl backend serves, for every dtype, against a
reference computed from every rank's inputs and against gloo's result in the
same job (where gloo serves that operation and dtype).

    launch.py --nproc N test_ops.py [--default xcl|gloo]

--default says which backend is the default group; the other is a new_group
of every rank. Inputs are small integers, so every result is exact in every
dtype (AVG excepted: a tolerance of one rounding).
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BACKEND, RANK, WORLD, failed, init_pair, passed, say  # noqa: E402

R = dist.ReduceOp
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
          torch.int64, torch.bool]
N = 37  # elements per rank: odd, so nothing lines up by accident


def inp(r, n, dt, salt=0, lo=1, hi=5):
    """Rank r's input: values lo..hi (0..1 for bool), the same wherever computed."""
    v = (torch.arange(n, dtype=torch.int64) * 7 + r * 3 + salt * 11) % (hi - lo + 1) + lo
    if dt == torch.bool:
        return (v % 2).to(torch.bool)
    return v.to(dt)


def ref_reduce(tensors, op, dt):
    s = torch.stack([t.to(torch.float64) for t in tensors])
    if op == R.SUM:
        v = s.sum(0)
    elif op == R.PRODUCT:
        v = s.prod(0)
    elif op == R.MIN:
        v = s.amin(0)
    elif op == R.MAX:
        v = s.amax(0)
    elif op == R.AVG:
        v = s.sum(0) / len(tensors)
        if not dt.is_floating_point:
            v = torch.floor(v)  # xccl truncates toward zero; these are positive
    return v.to(dt)


def ops_for(dt):
    if dt == torch.bool:
        return [(R.MIN, 1, 5), (R.MAX, 1, 5), (R.PRODUCT, 1, 5)]
    return [(R.SUM, 1, 5), (R.PRODUCT, 1, 2), (R.MIN, 1, 5), (R.MAX, 1, 5), (R.AVG, 1, 5)]


def split(r, p):
    """Rows rank r sends to rank p in the uneven all-to-alls (0 happens)."""
    return (r + 2 * p) % 3


class Checker:
    def __init__(self):
        self.count = 0
        self.gloo_compared = 0
        self.failures = []

    def same(self, what, got, want, dt, exact=True):
        self.count += 1
        for i, (g, w) in enumerate(zip(got, want)):
            if g.dtype != w.dtype or g.shape != w.shape:
                self.failures.append("%s [%d]: got %s %s, want %s %s" % (what, i, g.dtype, tuple(g.shape), w.dtype,
                                                                          tuple(w.shape)))
                return
            if exact:
                ok = torch.equal(g, w)
            else:
                rtol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}.get(dt, 1e-6)
                ok = torch.allclose(g.to(torch.float64), w.to(torch.float64), rtol=rtol, atol=0)
            if not ok:
                self.failures.append("%s [%d]: got %s, want %s" % (what, i, g.flatten()[:8].tolist(),
                                                                    w.flatten()[:8].tolist()))
                return
        if len(got) != len(want):
            self.failures.append("%s: %d results, want %d" % (what, len(got), len(want)))


def run_case(chk, xg, gg, name, dt, fn, want, exact=True):
    """fn(group) -> list of result tensors (None on ranks without a result)."""
    got = fn(xg)
    if got is not None:
        chk.same("xccl %s %s" % (name, dt), got, want, dt, exact)
    try:
        g = fn(gg)  # on every rank, result or not: gloo's call is collective too
    except RuntimeError:
        return  # gloo does not serve this operation or dtype (the same on every rank)
    if got is not None:
        chk.gloo_compared += 1
        chk.same("xccl vs gloo %s %s" % (name, dt), got, g, dt, exact)


def collectives(chk, xg, gg, dt):
    W, me = WORLD, RANK
    for op, lo, hi in ops_for(dt):
        def f(g, op=op, lo=lo, hi=hi):
            t = inp(me, N, dt, lo=lo, hi=hi)
            dist.all_reduce(t, op=op, group=g)
            return [t]
        want = [ref_reduce([inp(r, N, dt, lo=lo, hi=hi) for r in range(W)], op, dt)]
        run_case(chk, xg, gg, "all_reduce %s" % op, dt, f, want, exact=(op != R.AVG))

    # Non-contiguous, in place: a transposed view.
    def f(g):
        base = inp(me, 3 * N, dt).view(N, 3)
        t = base.t()
        dist.all_reduce(t, op=R.MAX, group=g)
        return [base.clone()]
    want = [ref_reduce([inp(r, 3 * N, dt) for r in range(W)], R.MAX, dt).view(N, 3)]
    run_case(chk, xg, gg, "all_reduce non-contiguous", dt, f, want)

    red = R.MAX if dt == torch.bool else R.SUM

    def f(g):
        ts = [inp(me, N, dt), inp(me, 5, dt, salt=1)]
        dist.all_reduce_coalesced(ts, op=red, group=g)
        return ts
    want = [ref_reduce([inp(r, N, dt) for r in range(W)], red, dt),
            ref_reduce([inp(r, 5, dt, salt=1) for r in range(W)], red, dt)]
    run_case(chk, xg, gg, "all_reduce_coalesced", dt, f, want)

    src = W - 1

    def f(g):
        t = inp(me, N, dt)
        dist.broadcast(t, src=src, group=g)
        return [t]
    run_case(chk, xg, gg, "broadcast", dt, f, [inp(src, N, dt)])

    dst = 1 % W

    def f(g):
        t = inp(me, N, dt)
        dist.reduce(t, dst=dst, op=red, group=g)
        return [t] if me == dst else None
    run_case(chk, xg, gg, "reduce", dt, f, [ref_reduce([inp(r, N, dt) for r in range(W)], red, dt)])

    def f(g):
        outs = [torch.zeros(N, dtype=dt) for _ in range(W)]
        dist.all_gather(outs, inp(me, N, dt), group=g)
        return outs
    run_case(chk, xg, gg, "all_gather", dt, f, [inp(r, N, dt) for r in range(W)])

    def f(g):
        out = torch.zeros(W * N, dtype=dt)
        dist.all_gather_into_tensor(out, inp(me, N, dt), group=g)
        return [out]
    run_case(chk, xg, gg, "all_gather_into_tensor", dt, f, [torch.cat([inp(r, N, dt) for r in range(W)])])

    def f(g):
        outs = [[torch.zeros(N, dtype=dt), torch.zeros(4, dtype=dt)] for _ in range(W)]
        dist.all_gather_coalesced(outs, [inp(me, N, dt), inp(me, 4, dt, salt=1)], group=g)
        return [t for lst in outs for t in lst]
    run_case(chk, xg, gg, "all_gather_coalesced", dt, f,
             [t for r in range(W) for t in (inp(r, N, dt), inp(r, 4, dt, salt=1))])

    def f(g):
        out = torch.zeros(N, dtype=dt)
        dist.reduce_scatter(out, [inp(me, N, dt, salt=p) for p in range(W)], op=red, group=g)
        return [out]
    run_case(chk, xg, gg, "reduce_scatter", dt, f, [ref_reduce([inp(r, N, dt, salt=me) for r in range(W)], red, dt)])

    def f(g):
        out = torch.zeros(N, dtype=dt)
        dist.reduce_scatter_tensor(out, inp(me, W * N, dt), op=red, group=g)
        return [out]
    want = [ref_reduce([inp(r, W * N, dt)[me * N:(me + 1) * N] for r in range(W)], red, dt)]
    run_case(chk, xg, gg, "reduce_scatter_tensor", dt, f, want)

    def f(g):
        out = torch.zeros(W * N, dtype=dt)
        dist.all_to_all_single(out, inp(me, W * N, dt), group=g)
        return [out]
    want = [torch.cat([inp(p, W * N, dt)[me * N:(me + 1) * N] for p in range(W)])]
    run_case(chk, xg, gg, "all_to_all_single", dt, f, want)

    # Uneven splits along dim 0 of a 2-D tensor, some of them empty.
    def rows_of(r):
        return sum(split(r, p) for p in range(W))

    def f(g):
        x = inp(me, rows_of(me) * 2, dt).view(-1, 2)
        out = torch.zeros(sum(split(p, me) for p in range(W)), 2, dtype=dt)
        dist.all_to_all_single(out, x, output_split_sizes=[split(p, me) for p in range(W)],
                               input_split_sizes=[split(me, p) for p in range(W)], group=g)
        return [out]
    pieces = []
    for p in range(W):
        x = inp(p, rows_of(p) * 2, dt).view(-1, 2)
        off = sum(split(p, q) for q in range(me))
        pieces.append(x[off:off + split(p, me)])
    run_case(chk, xg, gg, "all_to_all_single uneven", dt, f, [torch.cat(pieces)])

    def f(g):
        outs = [torch.zeros(split(p, me) + 1, dtype=dt) for p in range(W)]
        dist.all_to_all(outs, [inp(me, split(me, p) + 1, dt, salt=p) for p in range(W)], group=g)
        return outs
    run_case(chk, xg, gg, "all_to_all uneven", dt, f, [inp(p, split(p, me) + 1, dt, salt=me) for p in range(W)])

    def f(g):
        lst = [torch.zeros(N, dtype=dt) for _ in range(W)] if me == 0 else None
        dist.gather(inp(me, N, dt), gather_list=lst, dst=0, group=g)
        return lst
    run_case(chk, xg, gg, "gather", dt, f, [inp(r, N, dt) for r in range(W)])

    def f(g):
        out = torch.zeros(N, dtype=dt)
        lst = [inp(src, N, dt, salt=p) for p in range(W)] if me == src else None
        dist.scatter(out, scatter_list=lst, src=src, group=g)
        return [out]
    run_case(chk, xg, gg, "scatter", dt, f, [inp(src, N, dt, salt=me)])


def point_to_point(chk, xg, gg, dt):
    W, me = WORLD, RANK
    nxt, prv = (me + 1) % W, (me - 1) % W
    if W > 1:
        # Blocking send/recv: rank 0 to every other rank.
        def f(g):
            if me == 0:
                for p in range(1, W):
                    dist.send(inp(0, N, dt, salt=p), dst=p, group=g)
                return [torch.zeros(0, dtype=dt)]
            t = torch.zeros(N, dtype=dt)
            dist.recv(t, src=0, group=g)
            return [t]
        run_case(chk, xg, gg, "send/recv", dt, f, [torch.zeros(0, dtype=dt) if me == 0 else inp(0, N, dt, salt=me)])

        # isend/irecv around the ring, ordered so the blocking sends meet their receives.
        def f(g):
            out = torch.zeros(N, dtype=dt)
            if me % 2 == 0:
                reqs = [dist.isend(inp(me, N, dt), dst=nxt, group=g), dist.irecv(out, src=prv, group=g)]
            else:
                reqs = [dist.irecv(out, src=prv, group=g), dist.isend(inp(me, N, dt), dst=nxt, group=g)]
            for q in reqs:
                q.wait()
            return [out]
        run_case(chk, xg, gg, "isend/irecv ring", dt, f, [inp(prv, N, dt)])

    # batch_isend_irecv: both directions of the ring at once (to itself on one rank), in one xccl group.
    def f(g):
        a, b = torch.zeros(N, dtype=dt), torch.zeros(N + 1, dtype=dt)
        sends = [dist.P2POp(dist.isend, inp(me, N, dt), nxt, g),
                 dist.P2POp(dist.isend, inp(me, N + 1, dt, salt=2), prv, g)]
        recvs = [dist.P2POp(dist.irecv, a, prv, g), dist.P2POp(dist.irecv, b, nxt, g)]
        # Per pair and direction they match in posting order (with 2 ranks
        # prv == nxt); between directions the order is free.
        ops = sends + recvs if me % 2 == 0 else recvs + sends
        for q in dist.batch_isend_irecv(ops):
            q.wait()
        return [a, b]
    want = [inp(prv, N, dt), inp(nxt, N + 1, dt, salt=2)]
    got = f(xg)
    chk.same("xccl batch_isend_irecv %s" % dt, got, want, dt)


def exchange_large(chk, xg):
    """Every rank isends 32 MiB to the next and only then irecvs from the
    previous: each send needs its receiver, so the worker must run a send
    and the receive queued right behind it together (one xccl group)."""
    W, me = WORLD, RANK
    if W < 2:
        return
    nxt, prv = (me + 1) % W, (me - 1) % W
    n = 8 << 20
    out = torch.zeros(n)
    reqs = [dist.isend(torch.full((n,), float(me + 1)), dst=nxt, group=xg), dist.irecv(out, src=prv, group=xg)]
    start = time.monotonic()
    try:
        for q in reqs:
            q.wait(timeout=timedelta(seconds=20))
    except RuntimeError as e:
        chk.failures.append("isend then irecv of 32 MiB around the ring: %s" % str(e).splitlines()[0])
        return
    chk.same("isend then irecv of 32 MiB around the ring (%.2f s)" % (time.monotonic() - start), [out],
             [torch.full((n,), float(prv + 1))], torch.float32)


def expect_error(chk, what, fn, *words):
    chk.count += 1
    try:
        fn()
    except RuntimeError as e:
        text = str(e)
        missing = [w for w in words if w not in text]
        if missing:
            chk.failures.append("%s: the error does not say %s: %s" % (what, missing, text))
        return text
    chk.failures.append("%s: did not raise" % what)


def errors_and_work(chk, xg):
    W, me = WORLD, RANK
    expect_error(chk, "BAND", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.BAND, group=xg),
                 "BAND", "all_reduce")
    expect_error(chk, "bool SUM", lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool), group=xg), "bool", "SUM")
    expect_error(chk, "int16", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int16), group=xg),
                 "not supported")
    if W > 1:
        # A receive of the wrong size fails, naming both sizes (the message is consumed).
        if me == 1:
            dist.send(torch.zeros(5), dst=0, tag=77, group=xg)
        elif me == 0:
            expect_error(chk, "recv of the wrong size", lambda: dist.recv(torch.zeros(3), src=1, tag=77, group=xg),
                         "20 bytes", "12")

    # Work: future, is_completed, result.
    t = torch.full((8,), float(me + 1))
    w = dist.all_reduce(t, group=xg, async_op=True)
    fut = w.get_future().then(lambda f: f.value()[0] * 2)
    v = fut.wait()
    chk.same("future of all_reduce", [v], [torch.full((8,), float(W * (W + 1)))], torch.float32)
    chk.count += 1
    if not w.is_completed() or not torch.equal(w.result()[0], t):
        chk.failures.append("work after its future: is_completed %s, result %s" % (w.is_completed(), w.result()))

    if W > 1:
        # wait(timeout) honours its timeout; the operation still completes afterwards.
        t = torch.ones(4)
        if me == 0:
            w = dist.all_reduce(t, group=xg, async_op=True)
            expect_error(chk, "wait(timeout)", lambda: w.wait(timeout=timedelta(milliseconds=200)),
                         "did not complete within the 200 ms")
            w.wait()
        else:
            time.sleep(1.5)
            dist.all_reduce(t, group=xg)
        chk.same("all_reduce after a timed-out wait", [t], [torch.full((4,), float(W))], torch.float32)
    dist.barrier(group=xg)


def premul_and_float8(chk, xg):
    """PREMUL_SUM (a number and a one-element tensor as the factor; each rank
    its own) and the float8 types, where this torch has them (2.1 and
    later). Compared in float64 against values computed here: float8 sums
    round at every step, so within one unit of the last place."""
    W, me = WORLD, RANK
    for dt in (torch.float32, torch.bfloat16, torch.float64):
        for factor in (float(me + 2), torch.tensor([0.5 * (me + 1)], dtype=torch.float64)):
            t = inp(me, N, dt)
            if not isinstance(factor, float) and not hasattr(torch, "float8_e4m3fn"):
                factor = [factor]  # torch 1.13 takes the tensor factor as a list (one per device)
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor), group=xg)
            f = [float(r + 2) if isinstance(factor, float) else 0.5 * (r + 1) for r in range(W)]  # what each rank passed
            want = sum(inp(r, N, torch.float64) * f[r] for r in range(W)).to(dt)
            chk.same("PREMUL_SUM %s factor %s" % (dt, type(factor).__name__), [t], [want], dt, exact=False)
        out = torch.zeros(N, dtype=dt)
        dist.reduce_scatter_tensor(out, torch.cat([inp(me, N, dt, salt=p) for p in range(W)]),
                                   op=dist._make_nccl_premul_sum(3.0), group=xg)
        want = sum(inp(r, N, torch.float64, salt=me) * 3.0 for r in range(W)).to(dt)
        chk.same("PREMUL_SUM reduce_scatter_tensor %s" % dt, [out], [want], dt, exact=False)
    for name in ("float8_e4m3fn", "float8_e5m2"):
        dt = getattr(torch, name, None)
        if dt is None:
            continue
        ulp = 0.125 if name == "float8_e4m3fn" else 0.25
        for op in (R.SUM, R.MAX, R.MIN):
            t = inp(me, N, dt, hi=3)
            dist.all_reduce(t, op=op, group=xg)
            want = ref_reduce([inp(r, N, dt, hi=3) for r in range(W)], op, torch.float64)
            chk.count += 1
            err = ((t.to(torch.float64) - want).abs() / want.abs()).max().item()
            if err > ulp:
                chk.failures.append("%s all_reduce %s: relative error %g above %g: got %s, want %s"
                                    % (name, op, err, ulp, t.to(torch.float32)[:6].tolist(), want[:6].tolist()))
        out = torch.zeros(W * N, dtype=dt)
        dist.all_gather_into_tensor(out, inp(me, N, dt), group=xg)
        want = torch.cat([inp(r, N, dt) for r in range(W)])
        chk.count += 1
        if not torch.equal(out.view(torch.uint8), want.view(torch.uint8)):
            chk.failures.append("%s all_gather_into_tensor: bytes differ" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--default", choices=[BACKEND, "gloo"], default="gloo")
    a = ap.parse_args()
    xg, gg = init_pair("gloo" if a.default == "gloo" else BACKEND)
    chk = Checker()
    start = time.monotonic()
    for dt in DTYPES:
        collectives(chk, xg, gg, dt)
        point_to_point(chk, xg, gg, dt)
    exchange_large(chk, xg)
    premul_and_float8(chk, xg)
    errors_and_work(chk, xg)
    dist.barrier(group=gg)
    if chk.failures:
        for f in chk.failures:
            say("mismatch:", f)
        failed("%d of %d checks failed" % (len(chk.failures), chk.count))
    passed("%d checks (%d against gloo) in %.1f s, default group %s" % (chk.count, chk.gloo_compared,
                                                                        time.monotonic() - start, a.default))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
