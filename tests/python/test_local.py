"""The package in one process: loading, enums, ids, errors, buffers, and
one-rank communicators (no launcher needed)."""
import array
import ctypes
import ctypes.util
import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest

import xccl
from xccl_testdata import DTYPES, check, make, values

PKG_DIR = os.path.dirname(os.path.abspath(xccl.__file__))


@pytest.fixture
def comm1():
    with xccl.Comm(1, xccl.get_unique_id(), 0) as c:
        yield c


def run_python(code, env_changes, cwd=None):
    env = {k: v for k, v in os.environ.items() if k not in ("XCCL_LIBRARY", "LD_LIBRARY_PATH")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


# ---- loading ----

def test_loads_the_build_trees_library():
    build = os.environ.get("XCCL_TEST_BUILD_DIR")
    if not build:
        pytest.skip("XCCL_TEST_BUILD_DIR is not set (run through ctest)")
    assert os.path.samefile(os.path.dirname(xccl.library_path()), build)
    assert os.path.exists(os.path.join(PKG_DIR, "_paths.py"))


def test_xccl_library_wins_and_a_bad_one_says_so(tmp_path):
    lib = xccl.library_path()
    copy = tmp_path / "libxccl.so.0"
    shutil.copy(lib, copy)
    r = run_python("import xccl; print(xccl.library_path())", {"XCCL_LIBRARY": str(copy)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(copy)
    r = run_python("import xccl", {"XCCL_LIBRARY": str(tmp_path / "nothing.so")})
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "XCCL_LIBRARY" in r.stderr and "nothing.so" in r.stderr


def test_no_library_found_says_what_was_tried(tmp_path):
    if ctypes.util.find_library("xccl"):
        pytest.skip("a libxccl is installed where the loader looks, so the search cannot fail here")
    pkg = tmp_path / "xccl"
    shutil.copytree(PKG_DIR, pkg, ignore=shutil.ignore_patterns("_paths.py", "__pycache__"))
    r = run_python("import xccl", {"PYTHONPATH": str(tmp_path)}, cwd=str(tmp_path))
    assert r.returncode != 0
    assert "libxccl.so.0" in r.stderr and "XCCL_LIBRARY" in r.stderr and "LD_LIBRARY_PATH" in r.stderr
    # ... and with the library on the loader's path it is found there.
    r = run_python("import xccl; print(xccl.library_path())",
                   {"PYTHONPATH": str(tmp_path), "LD_LIBRARY_PATH": os.path.dirname(xccl.library_path())},
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert os.path.samefile(r.stdout.strip(), xccl.library_path())


# ---- constants ----

def test_version_is_the_librarys():
    want = os.environ.get("XCCL_TEST_VERSION")
    v = xccl.version()
    assert len(v) == 3 and all(isinstance(x, int) for x in v)
    if want:
        assert v == tuple(int(x) for x in want.split("."))


def test_enum_values_match_the_c_api():
    assert [int(t) for t in xccl.DataType] == list(range(12))
    type_size = xccl._lib.fn["xcclTypeSize"]
    for t in xccl.DataType:
        assert t.itemsize == type_size(t), t
    assert (xccl.SUM, xccl.PROD, xccl.MAX, xccl.MIN, xccl.AVG) == (0, 1, 2, 3, 4)
    assert isinstance(xccl.SUM, xccl.RedOp) and xccl.BFLOAT16 == 9 and xccl.FLOAT8E5M2 == 11


def test_every_result_code_has_its_class():
    classes = {1: xccl.CudaError, 2: xccl.XcclSystemError, 3: xccl.InternalError, 4: xccl.InvalidArgument,
               5: xccl.InvalidUsage, 6: xccl.RemoteError, 7: xccl.InProgress, 8: xccl.Timeout}
    for code, cls in classes.items():
        err = xccl._errors.error_for(code, "text %d" % code)
        assert type(err) is cls and isinstance(err, xccl.Error)
        assert err.code == code and str(err) == "text %d" % code
        assert err.code_name == "xccl" + xccl.Result(code).name.title().replace("_", "")
    assert xccl.XcclSystemError is not SystemError and not issubclass(xccl.XcclSystemError, SystemError)
    odd = xccl._errors.error_for(42, "later code")
    assert type(odd) is xccl.Error and odd.code == 42


# ---- unique ids ----

def test_unique_id_forms():
    uid = xccl.get_unique_id()
    raw = bytes(uid)
    assert len(raw) == 128 and len(uid.hex()) == 256
    assert xccl.UniqueId(raw) == uid and xccl.UniqueId.fromhex(uid.hex()) == uid
    assert pickle.loads(pickle.dumps(uid)) == uid
    assert uid.hex() not in repr(uid)  # the secret stays out of logs
    assert xccl.get_unique_id() != uid
    with pytest.raises(xccl.InvalidArgument, match="128 bytes"):
        xccl.UniqueId(raw[:100])
    with pytest.raises(xccl.InvalidArgument, match="hex"):
        xccl.UniqueId.fromhex("zz")


def test_comm_arguments():
    uid = xccl.get_unique_id()
    with pytest.raises(xccl.InvalidArgument, match="rank=1"):
        xccl.Comm(1, uid, 1)
    with pytest.raises(xccl.InvalidArgument, match="nranks=0"):
        xccl.Comm(0, uid, 0)
    with xccl.Comm(1, uid.hex(), 0) as c:  # the hex form works too
        assert (c.rank, c.size) == (0, 1)


# ---- one-rank communicators ----

@pytest.mark.parametrize("dt", DTYPES)
def test_one_rank_collectives(comm1, dt):
    n = 9
    x, kw = make(dt, values(0, n))
    want = values(0, n)
    out, _ = make(dt, np.zeros(n))
    check(dt, comm1.all_reduce(x, out, op=xccl.AVG, **kw), want)
    check(dt, comm1.broadcast(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.reduce(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.all_gather(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.reduce_scatter(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.gather(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.scatter(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.all_to_all(x, make(dt, np.zeros(n))[0], **kw), want)
    check(dt, comm1.all_to_all_v(x, [n], [0], make(dt, np.zeros(n))[0], [n], [0], **kw), want)


def test_one_rank_buffers_and_errors(comm1):
    ba = bytearray(b"abc")
    assert comm1.all_reduce(ba) is ba and ba == b"abc"
    out = array.array("f", [0.0] * 3)
    comm1.all_reduce(array.array("f", [1.5, 2.5, 3.5]), out)
    assert list(out) == [1.5, 2.5, 3.5]
    ct = (ctypes.c_uint32 * 2)(7, 8)
    assert list(comm1.all_reduce(ct)) == [7, 8]
    with pytest.raises(xccl.InvalidArgument, match="not C-contiguous"):
        comm1.all_reduce(np.zeros(10)[::3])
    with pytest.raises(xccl.InvalidArgument, match="read-only"):
        ro = np.zeros(3)
        ro.setflags(write=False)
        comm1.all_reduce(np.zeros(3), ro)
    with pytest.raises(xccl.InvalidArgument, match="dtype="):
        comm1.all_reduce(bytearray(4), dtype="int4")
    assert comm1.all_reduce(np.ones(3, np.int32))[0] == 1  # still usable


def test_destroyed_and_aborted_comms_refuse_calls():
    c = xccl.Comm(1, xccl.get_unique_id(), 0)
    c.destroy()
    c.destroy()  # a second destroy does nothing
    with pytest.raises(xccl.InvalidUsage, match="destroyed"):
        c.all_reduce(np.ones(1))
    assert c.handle is None and "destroyed" in repr(c)
    c = xccl.Comm(1, xccl.get_unique_id(), 0)
    c.abort()
    with pytest.raises(xccl.InvalidUsage, match="aborted"):
        c.barrier()


def test_with_destroys_or_aborts():
    with xccl.Comm(1, xccl.get_unique_id(), 0) as c:
        c.barrier()
    assert "destroyed" in repr(c)
    with pytest.raises(ZeroDivisionError):
        with xccl.Comm(1, xccl.get_unique_id(), 0) as c:
            1 / 0
    assert "aborted" in repr(c)


def test_group_end_error_raises(comm1):
    # A send to itself with no matching receive is refused by xcclGroupEnd.
    with pytest.raises(xccl.InvalidUsage, match="no matching receive"):
        with xccl.group():
            comm1.send(np.ones(4, np.float32), 0)
    out = np.zeros(4, np.float32)
    with xccl.group():
        comm1.send(np.ones(4, np.float32), 0)
        comm1.recv(out, 0)
    assert (out == 1).all()


def test_shrink_and_counters_on_one_rank(comm1):
    with comm1.shrink([]) as c:
        assert (c.rank, c.size) == (0, 1)
        assert c.peer_counters(0) == xccl.PeerCounters(0, 0)
        assert c.get_async_error() is None
        c.set_timeout(5.0)
        with pytest.raises(xccl.InvalidArgument):
            c.set_timeout(-1)
    with pytest.raises(xccl.InvalidArgument, match="peer 1"):
        comm1.peer_counters(1)
