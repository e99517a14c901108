"""Every collective, send/recv and group across the ranks of one xccl-run
job (cmake/python.cmake runs this module under 1, 2, 3 and 4 ranks). Every
rank runs every test in the same order, so the collectives match; each rank
checks its own result against what it computes from all ranks' inputs."""
import array
import ctypes

import numpy as np
import pytest

import xccl
from xccl_testdata import DTYPES, check, empty, make, read, reduce, values

COUNTS = [1, 7, 1001]
OPS = [xccl.SUM, xccl.PROD, xccl.MAX, xccl.MIN, xccl.AVG]


def has(name):
    return not isinstance(xccl._lib.fn[name], xccl._lib._Missing)


def test_from_env(comm):
    import os
    assert comm.size == int(os.environ["XCCL_NRANKS"])
    assert comm.rank == int(os.environ["XCCL_RANK"])
    assert comm.get_async_error() is None


# ---- all-reduce ----

@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_all_reduce(comm, dt, count, inplace):
    send, kw = make(dt, values(comm.rank, count))
    if inplace:
        out = comm.all_reduce(send, **kw)
        assert out is send
    else:
        recv = empty(dt, count)
        out = comm.all_reduce(send, recv, **kw)
        assert out is recv
        check(dt, send, values(comm.rank, count))  # the input is left as it was
    check(dt, out, reduce(xccl.SUM, [values(r, count) for r in range(comm.size)]))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("dt", ["int8", "uint32", "int64", "float16", "float32", "float64", "bfloat16"])
def test_all_reduce_ops(comm, dt, op):
    n = 33
    send, kw = make(dt, values(comm.rank, n, op))
    recv = empty(dt, n)
    comm.all_reduce(send, recv, op=op, **kw)
    check(dt, recv, reduce(op, [values(r, n, op) for r in range(comm.size)]), op)


def test_all_reduce_large(comm):
    n = 300_001  # 1.2 MB: several slots and channels
    send = values(comm.rank, n).astype(np.float32)
    comm.all_reduce(send)
    check("float32", send, reduce(xccl.SUM, [values(r, n) for r in range(comm.size)]))


# ---- broadcast and reduce ----

def roots(comm):
    return sorted({0, comm.size - 1})


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("dt", DTYPES)
def test_broadcast(comm, dt, inplace):
    n = 1001
    for root in roots(comm):
        mine, kw = make(dt, values(comm.rank, n, salt=root))
        if inplace:
            out = comm.broadcast(mine, root=root, **kw)
            assert out is mine
        else:
            out = comm.broadcast(mine if comm.rank == root else None, empty(dt, n), root=root, **kw)
        check(dt, out, values(root, n, salt=root))


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("dt", DTYPES)
def test_reduce(comm, dt, inplace):
    n = 7
    for root in roots(comm):
        for op in (xccl.SUM, xccl.MAX):
            send, kw = make(dt, values(comm.rank, n, op, salt=root))
            recv = None if inplace else empty(dt, n)
            out = comm.reduce(send, recv, op=op, root=root, **kw)
            if comm.rank == root:
                assert out is (send if inplace else recv)
                check(dt, out, reduce(op, [values(r, n, op, salt=root) for r in range(comm.size)]), op)
            else:
                assert out is None
                if not inplace:
                    check(dt, recv, np.full(n, 99.0))  # not the root: recv untouched


# ---- all-gather and reduce-scatter ----

@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_all_gather(comm, dt, count, inplace):
    want = np.concatenate([values(r, count) for r in range(comm.size)])
    if inplace:  # send is this rank's block of recv
        recv, kw = make(dt, np.where(np.arange(want.size) // count == comm.rank, want, 99.0))
        send = recv[comm.rank * count:(comm.rank + 1) * count]
    else:
        send, kw = make(dt, values(comm.rank, count))
        recv = empty(dt, comm.size * count)
    assert comm.all_gather(send, recv, **kw) is recv
    check(dt, recv, want)


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("dt", DTYPES)
def test_reduce_scatter(comm, dt, count, inplace):
    n = comm.size * count
    send, kw = make(dt, values(comm.rank, n))
    recv = send[comm.rank * count:(comm.rank + 1) * count] if inplace else empty(dt, count)
    assert comm.reduce_scatter(send, recv, **kw) is recv
    full = reduce(xccl.SUM, [values(r, n) for r in range(comm.size)])
    check(dt, recv, full[comm.rank * count:(comm.rank + 1) * count])


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_reduce_scatter_ops(comm, op):
    count = 5
    n = comm.size * count
    send = values(comm.rank, n, op).astype(np.int32)
    recv = np.zeros(count, np.int32)
    comm.reduce_scatter(send, recv, op=op)
    full = reduce(op, [values(r, n, op) for r in range(comm.size)])
    check("int32", recv, full[comm.rank * count:(comm.rank + 1) * count], op)


# ---- gather, scatter, all-to-all ----

@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("dt", DTYPES)
def test_gather(comm, dt, inplace):
    count = 7
    for root in roots(comm):
        want = np.concatenate([values(r, count, salt=root) for r in range(comm.size)])
        if comm.rank == root:
            if inplace:
                recv, kw = make(dt, np.where(np.arange(want.size) // count == root, want, 99.0))
                send = recv[root * count:(root + 1) * count]
            else:
                send, kw = make(dt, values(comm.rank, count, salt=root))
                recv = empty(dt, comm.size * count)
            assert comm.gather(send, recv, root=root, **kw) is recv
            check(dt, recv, want)
        else:
            send, kw = make(dt, values(comm.rank, count, salt=root))
            assert comm.gather(send, root=root, **kw) is None


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
@pytest.mark.parametrize("dt", DTYPES)
def test_scatter(comm, dt, inplace):
    count = 7
    for root in roots(comm):
        full = values(root, comm.size * count, salt=1)
        if comm.rank == root:
            send, kw = make(dt, full)
            recv = send[root * count:(root + 1) * count] if inplace else empty(dt, count)
            out = comm.scatter(send, recv, root=root, **kw)
        else:
            recv, kw = make(dt, np.full(count, 99.0))
            out = comm.scatter(None, recv, root=root, **kw)
        assert out is recv
        check(dt, recv, full[comm.rank * count:(comm.rank + 1) * count])


def a2a_values(src, dst, count):
    """What rank src sends rank dst: distinct per pair."""
    return (np.arange(count) % 3 + 1 + src * 4 + dst).astype(np.float64)


@pytest.mark.parametrize("count", [1, 7, 300])
@pytest.mark.parametrize("dt", DTYPES)
def test_all_to_all(comm, dt, count):
    send, kw = make(dt, np.concatenate([a2a_values(comm.rank, p, count) for p in range(comm.size)]))
    recv = empty(dt, comm.size * count)
    assert comm.all_to_all(send, recv, **kw) is recv
    check(dt, recv, np.concatenate([a2a_values(p, comm.rank, count) for p in range(comm.size)]))


def v_count(src, dst):
    return (src * 2 + dst * 3) % 5  # some pairs send nothing


@pytest.mark.skipif(not has("xcclAllToAllv"), reason="this libxccl has no xcclAllToAllv")
@pytest.mark.parametrize("packed", [False, True], ids=["displs", "packed"])
@pytest.mark.parametrize("dt", ["int8", "int32", "float16", "float64", "bfloat16"])
def test_all_to_all_v(comm, dt, packed):
    n, me = comm.size, comm.rank
    scounts = [v_count(me, p) for p in range(n)]
    rcounts = [v_count(p, me) for p in range(n)]
    gap = 0 if packed else 2  # explicit displacements leave gaps, which must stay untouched
    sdispls = list(np.cumsum([0] + [c + gap for c in scounts[:-1]]))
    rdispls = list(np.cumsum([0] + [c + gap for c in rcounts[:-1]]))
    svals = np.full(sdispls[-1] + scounts[-1] + gap, 99.0)
    for p in range(n):
        svals[sdispls[p]:sdispls[p] + scounts[p]] = a2a_values(me, p, scounts[p])
    send, kw = make(dt, svals)
    recv = empty(dt, rdispls[-1] + rcounts[-1] + gap)
    comm.all_to_all_v(send, scounts, None if packed else sdispls, recv, rcounts, None if packed else rdispls, **kw)
    want = np.full(recv.size, 99.0)
    for p in range(n):
        want[rdispls[p]:rdispls[p] + rcounts[p]] = a2a_values(p, me, rcounts[p])
    check(dt, recv, want)


# ---- send/recv and groups ----

@pytest.mark.parametrize("dt", ["uint8", "int64", "float32", "bfloat16"])
def test_send_recv_ring_in_group(comm, dt):
    n, me, count = comm.size, comm.rank, 1001
    send, kw = make(dt, a2a_values(me, (me + 1) % n, count))
    recv = empty(dt, count)
    with xccl.group():
        comm.send(send, (me + 1) % n, **kw)
        comm.recv(recv, (me - 1) % n, **kw)
    check(dt, recv, a2a_values((me - 1) % n, me, count))


def test_send_recv_pairs_outside_group(comm):
    # Even ranks send first, odd ranks receive first: no group needed.
    me, n = comm.rank, comm.size
    peer = me ^ 1
    if peer >= n:
        pytest.skip("rank %d has no partner in %d ranks" % (me, n))
    out = np.arange(77, dtype=np.float64) + me
    got = np.zeros(77, np.float64)
    if me % 2 == 0:
        comm.send(out, peer)
        assert comm.recv(got, peer) is got
    else:
        comm.recv(got, peer)
        comm.send(out, peer)
    np.testing.assert_array_equal(got, np.arange(77) + peer)


def test_send_recv_self_in_group(comm):
    out = np.arange(10, dtype=np.int32) + 100
    got = np.zeros(10, np.int32)
    with xccl.group():
        comm.send(out, comm.rank)
        comm.recv(got, comm.rank)
    np.testing.assert_array_equal(got, out)


def test_group_of_collectives(comm):
    a = values(comm.rank, 100).astype(np.float32)
    b = values(comm.rank, 50, salt=1).astype(np.int32)
    c = np.zeros(comm.size * 3, np.int64)
    with xccl.group():
        comm.all_reduce(a)
        comm.all_reduce(b, op=xccl.MAX)
        with xccl.group():  # nested: only the outermost end runs them
            comm.all_gather(np.full(3, comm.rank, np.int64), c)
        assert c.sum() == 0  # nothing ran yet
    check("float32", a, reduce(xccl.SUM, [values(r, 100) for r in range(comm.size)]))
    check("int32", b, reduce(xccl.MAX, [values(r, 50, salt=1) for r in range(comm.size)]))
    np.testing.assert_array_equal(c, np.repeat(np.arange(comm.size), 3))


def test_barrier(comm):
    comm.barrier()
    comm.barrier()


def test_peer_counters(comm):
    before = [comm.peer_counters(p) for p in range(comm.size)]
    x = np.ones(100_000, np.float32)
    comm.all_reduce(x)
    after = [comm.peer_counters(p) for p in range(comm.size)]
    sent = sum(a.bytes_sent - b.bytes_sent for a, b in zip(after, before))
    if comm.size > 1:
        assert sent >= x.nbytes // comm.size
    else:
        assert sent == 0


def test_algorithm(comm):
    small, large = comm.algorithm("allreduce", 2), comm.algorithm("allreduce", 1 << 26, xccl.FLOAT32)
    assert small in ("ring", "rd", "tree", "direct", "rab", "line") and large in ("ring", "tree", "direct", "rab")
    assert comm.algorithm("broadcast", 1024) in ("ring", "tree", "direct")
    assert comm.algorithm("alltoall", 8) in ("pairwise", "bruck")
    with pytest.raises(xccl.InvalidArgument, match="not one with algorithms"):
        comm.algorithm("gather", 8)


# ---- buffers of several kinds ----

def test_buffer_kinds(comm):
    n = comm.size
    total = sum(range(1, n + 1))
    ba = bytearray([comm.rank + 1] * 5)
    comm.all_reduce(ba)
    assert ba == bytearray([total] * 5)
    arr = array.array("d", [comm.rank + 1.5] * 4)
    comm.all_reduce(arr)
    assert list(arr) == [total + 0.5 * n] * 4
    ai = array.array("i", [comm.rank] * 3)
    out = array.array("i", [0] * (3 * n))
    comm.all_gather(ai, out)
    assert list(out) == [r for r in range(n) for _ in range(3)]
    ct = (ctypes.c_int64 * 6)(*([comm.rank + 1] * 6))
    comm.all_reduce(ct, op=xccl.MAX)
    assert list(ct) == [n] * 6
    raw = bytearray(np.full(8, comm.rank + 1, np.float32).tobytes())
    comm.all_reduce(memoryview(raw).cast("f"))
    assert np.frombuffer(raw, np.float32).tolist() == [float(total)] * 8
    two_d = np.full((3, 4), comm.rank + 1, np.int32)
    comm.all_reduce(two_d)
    assert (two_d == total).all()
    send = bytes(np.full(4, comm.rank + 1, np.int32))  # read-only send, typed by dtype=
    recv = bytearray(16)
    comm.all_reduce(send, recv, dtype=np.int32)
    assert np.frombuffer(recv, np.int32).tolist() == [total] * 4
    empty_arr = np.zeros(0, np.float32)  # count 0: a valid no-op
    assert comm.all_reduce(empty_arr) is empty_arr


# ---- argument errors: raised on every rank alike, the comm stays usable ----

def test_argument_errors(comm):
    x = np.ones(7, np.float32)
    n = comm.size
    cases = [
        (lambda: comm.all_reduce(x, np.zeros(6, np.float32)), ["recv", "6", "7"]),
        (lambda: comm.all_reduce(x, np.zeros(7, np.float64)), ["float32", "float64"]),
        (lambda: comm.all_reduce(np.ones(14, np.float32)[::2]), ["C-contiguous"]),
        (lambda: comm.all_reduce(np.ones((4, 3), np.float32, order="F")), ["C-contiguous"]),
        (lambda: comm.all_reduce(b"abcd"), ["read-only"]),
        (lambda: comm.all_reduce(x, bytes(28), dtype=xccl.FLOAT32), ["recv", "read-only"]),
        (lambda: comm.all_reduce(np.ones(3, np.int16)), ["int16"]),
        (lambda: comm.all_reduce(np.ones(3, np.complex64)), ["complex64"]),
        (lambda: comm.all_reduce(x, op=17), ["op"]),
        (lambda: comm.all_reduce([1, 2, 3]), ["buffer protocol"]),
        (lambda: comm.all_reduce(bytearray(3), dtype=xccl.BFLOAT16), ["3 bytes", "bfloat16"]),
        (lambda: comm.broadcast(x, root=n), ["root", str(n)]),
        (lambda: comm.reduce(x, root=-1), ["root"]),
        (lambda: comm.all_gather(x, np.zeros(7 * n + 1, np.float32)), ["recv", str(7 * n + 1), str(7 * n)]),
        (lambda: comm.reduce_scatter(np.zeros(7 * n + 1, np.float32), x), ["send", str(7 * n + 1)]),
        (lambda: comm.all_to_all(np.zeros(n * 3 + (1 if n > 1 else 0), np.float32),
                                 np.zeros(n * 3 + (1 if n > 1 else 0), np.float32)) if n > 1
            else comm.all_to_all(x, np.zeros(8, np.float32)), ["send" if n > 1 else "recv"]),
        (lambda: comm.send(x, n), ["peer", str(n)]),
        (lambda: comm.recv(np.ones(3, np.float32).view(), -1), ["peer"]),
        (lambda: comm.all_to_all_v(x, [1] * (n + 1), None, x.copy(), [1] * n, None), ["send_counts", str(n + 1)]),
        (lambda: comm.all_to_all_v(x, [8] + [0] * (n - 1), None, np.zeros(8, np.float32), [0] * n, None),
            ["block 0", "7 elements"]),
    ]
    if comm.rank == 0:
        cases.append((lambda: comm.gather(x, None, root=0), ["recv is None", "root"]))
        cases.append((lambda: comm.gather(x, np.zeros(1, np.float32), root=0), ["recv", "1"]))
        cases.append((lambda: comm.scatter(None, x, root=0), ["send is None"]))
        cases.append((lambda: comm.broadcast(None, x, root=0), ["send is None"]))
    for call, words in cases:
        with pytest.raises(xccl.InvalidArgument) as info:
            call()
        err = info.value
        assert err.code == 4 and err.code_name == "xcclInvalidArgument"
        for w in words:
            assert w in str(err), (w, str(err))
    # The comm is still fine.
    comm.all_reduce(x)
    assert (x == n).all()


def test_errors_from_the_library(comm):
    # Checks the C library makes, with its own sentence.
    raw = bytearray(41)
    misaligned = np.frombuffer(raw, np.float32, count=10, offset=1)
    with pytest.raises(xccl.InvalidArgument, match="not aligned"):
        comm.all_reduce(np.ones(10, np.float32), misaligned)
    x = np.ones(8, np.float32)
    with pytest.raises(xccl.InvalidArgument, match="overlap"):
        comm.all_reduce(x[:4], x[2:6])
    with pytest.raises(xccl.InvalidUsage, match="group"):
        with xccl.group():
            comm.barrier()
    comm.barrier()  # usable, and the group was closed
    y = np.ones(3, np.int64)
    comm.all_reduce(y)
    assert (y == comm.size).all()
