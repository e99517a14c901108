"""Inputs and expected results for the collective tests: every rank can
compute every rank's input, so each checks its own result locally."""
import numpy as np

import xccl

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16"]
_RTOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}
_SENTINEL = 99


def values(rank, n, op=xccl.SUM, salt=0):
    """Rank's input as float64: small integers, exact in every type, whose
    sum over 4 ranks (or product, for PROD) fits int8."""
    i = np.arange(n, dtype=np.int64)
    if op == xccl.PROD:
        return ((i + rank + salt) % 2 + 1).astype(np.float64)
    return ((i + 3 * rank + salt) % 5 + 1).astype(np.float64)


def make(dt, vals):
    """(array, call keywords) holding vals in type dt; bfloat16 is a uint16
    array of bit patterns passed with dtype=xccl.BFLOAT16."""
    if dt == "bfloat16":
        f = np.asarray(vals, dtype=np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": xccl.BFLOAT16}
    return np.asarray(vals).astype(dt), {}


def empty(dt, n):
    """A receive buffer filled with a value no result has, so an element left unwritten shows."""
    return make(dt, np.full(n, _SENTINEL, dtype=np.float64))[0]


def read(dt, arr):
    arr = np.asarray(arr)
    if dt == "bfloat16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return arr.astype(np.float64)


def reduce(op, arrays):
    stack = np.stack(arrays)
    if op == xccl.SUM:
        return stack.sum(axis=0)
    if op == xccl.PROD:
        return stack.prod(axis=0)
    if op == xccl.MAX:
        return stack.max(axis=0)
    if op == xccl.MIN:
        return stack.min(axis=0)
    return stack.sum(axis=0) / len(arrays)  # AVG; integer types truncate, see check()


def check(dt, got, want, op=xccl.SUM):
    got = read(dt, got)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    if dt in _RTOL:
        np.testing.assert_allclose(got, want, rtol=_RTOL[dt], atol=0)
    else:
        if op == xccl.AVG:
            want = np.trunc(want)
        np.testing.assert_array_equal(got, want)
