"""Failures and their recovery across three ranks (cmake/python.cmake runs
this module under xccl-run -n 3): a timeout naming the peer, abort from
another thread, shrink, `with`, and the GIL released while a call waits.

Each test that breaks a communicator breaks one made for it (comm.shrink),
and the ranks meet on the job's communicator (barrier) before and after, so
the next test starts from a healthy job."""
import threading
import time

import numpy as np
import pytest

import xccl

pytestmark = pytest.mark.skipif("int(__import__('os').environ.get('XCCL_NRANKS', '0')) != 3",
                                reason="run under xccl-run -n 3")


def test_gil_released_while_waiting(comm):
    """Rank 0's all-reduce waits a second for the others; a Python thread
    ticks all along. Were the GIL held in the C call, no tick could fall
    inside the wait."""
    wait_s = 1.0
    x = np.ones(1000, np.float32)
    comm.barrier()
    if comm.rank == 0:
        ticks, stop = [], threading.Event()

        def tick():
            while not stop.is_set():
                ticks.append(time.monotonic())
                time.sleep(0.005)

        t = threading.Thread(target=tick)
        t.start()
        start = time.monotonic()
        comm.all_reduce(x)
        end = time.monotonic()
        stop.set()
        t.join()
        inside = [s for s in ticks if start + 0.2 < s < end - 0.2]
        assert end - start > 0.7 * wait_s, "the all-reduce did not wait for the slow ranks"
        assert len(inside) >= 5, "only %d ticks while the call waited %.2f s: the GIL was held" % (
            len(inside), end - start)
    else:
        time.sleep(wait_s)
        comm.all_reduce(x)
    assert (x == 3).all()


def test_barrier_waits_for_the_last(comm):
    comm.barrier()
    start = time.monotonic()
    if comm.rank == 2:
        time.sleep(0.5)
    comm.barrier()
    assert time.monotonic() - start > 0.4


def test_shrink(comm):
    if comm.rank == 2:  # the excluded rank must not call it; if it does, it is refused at once
        with pytest.raises(xccl.InvalidArgument):
            comm.shrink([2])
    else:
        with pytest.raises(xccl.InvalidArgument):
            comm.shrink([3])  # not a rank: refused before anything is sent
        with comm.shrink([2]) as sub:
            assert (sub.size, sub.rank) == (2, comm.rank)
            x = np.full(5, comm.rank + 10, np.int64)
            sub.all_reduce(x)
            assert (x == 21).all()
        assert sub.handle is None and "destroyed" in repr(sub)
    comm.barrier()
    y = np.ones(3, np.int32)
    comm.all_reduce(y)  # the job's communicator was not disturbed
    assert (y == 3).all()


def test_grow(comm):
    """Ranks 0 and 1 shrink away rank 2, then grow back to 3 with rank 2
    joining as a new process would (Comm.join); the id travels over the
    job's communicator, as a launcher's store would carry it."""
    sub = comm.shrink([2]) if comm.rank != 2 else None
    uid = np.zeros(128, np.uint8)
    if comm.rank == 0:
        uid[:] = np.frombuffer(bytes(sub.grow_id()), np.uint8)
    comm.broadcast(uid, root=0)
    uid = xccl.UniqueId(uid.tobytes())
    if sub is not None:
        with pytest.raises(xccl.InvalidArgument, match="needs more"):
            sub.grow(2, uid)  # not larger: refused before anything is sent
        big = sub.grow(3, uid)
    else:
        with pytest.raises(xccl.InvalidArgument, match="takes a rank from 2"):
            xccl.Comm.join(3, uid, 1)  # a number the communicator has
        big = xccl.Comm.join(3, uid, 2)
    with big:
        assert (big.size, big.rank) == (3, comm.rank)
        x = np.full(4, comm.rank + 1, np.int32)
        big.all_reduce(x)
        assert (x == 6).all()
    if sub is not None:
        sub.destroy()
    comm.barrier()


def test_timeout_names_the_peer(comm):
    """Ranks 0 and 1 make a communicator of their own with a 1 s timeout;
    rank 1 skips an all-reduce, and rank 0's raises xccl.Timeout naming
    rank 1."""
    sub = comm.shrink([2]) if comm.rank != 2 else None
    if sub is not None:
        sub.set_timeout(1.0)
        sub.all_reduce(np.ones(100, np.float32))  # connected: what times out next is the data
    if comm.rank == 0:
        start = time.monotonic()
        with pytest.raises(xccl.Timeout) as info:
            sub.all_reduce(np.ones(100, np.float32))
        took = time.monotonic() - start
        err = info.value
        assert err.code == 8 and err.code_name == "xcclTimeout"
        assert "rank 1" in str(err) and "allreduce" in str(err), str(err)
        assert 0.9 < took < 10, took
        late = sub.get_async_error()  # the communicator stays failed, and says why
        assert isinstance(late, xccl.Error) and late.code != 0
        with pytest.raises(xccl.InvalidUsage, match="failed in an earlier operation"):
            sub.all_reduce(np.ones(1, np.float32))
    comm.barrier()  # rank 1 goes on only once rank 0 has timed out
    if sub is not None:
        sub.abort()
        with pytest.raises(xccl.InvalidUsage, match="aborted"):
            sub.barrier()
    comm.barrier()


def test_abort_from_another_thread(comm):
    """Rank 0 waits in an all-reduce rank 1 never joins; a thread aborts
    the communicator after 0.5 s and the call raises RemoteError at once,
    long before its 30 s timeout."""
    sub = comm.shrink([2]) if comm.rank != 2 else None
    if comm.rank == 0:
        sub.set_timeout(30)
        threading.Timer(0.5, sub.abort).start()
        start = time.monotonic()
        with pytest.raises(xccl.RemoteError, match="abort"):
            sub.all_reduce(np.ones(100, np.float32))
        assert time.monotonic() - start < 5
        assert sub.handle is None
        sub.abort()  # a second abort does nothing
    comm.barrier()
    if comm.rank == 1:
        sub.abort()
    comm.barrier()


def test_with_aborts_on_exception(comm):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with comm.shrink([]) as sub:
            sub.barrier()
            raise Boom()
    assert "aborted" in repr(sub)
    with comm.shrink([]) as sub:
        sub.barrier()
    assert "destroyed" in repr(sub)
    comm.barrier()
