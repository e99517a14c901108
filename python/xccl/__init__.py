"""xccl: collective communication (all-reduce, all-gather, broadcast, ...)
between processes, over libxccl.so through ctypes.

    import numpy as np, xccl
    with xccl.Comm.from_env() as comm:          # under xccl-run, torchrun, mpirun, srun
        x = np.full(1000, comm.rank, dtype=np.float32)
        comm.all_reduce(x)                       # in place: x = sum over ranks
        y = np.empty(comm.size * 1000, np.float32)
        comm.all_gather(x, y)

Buffers are NumPy arrays or any C-contiguous object with the buffer protocol;
types and counts come from them. Calls that wait release the GIL for the
whole wait (ctypes.CDLL does so for every foreign call), so other Python
threads keep running, and one of them may call comm.abort() to end a wait.
Failures raise subclasses of xccl.Error carrying the result code and xccl's
own message. The C library is found as xccl._lib explains (XCCL_LIBRARY,
then the path recorded at build or install time, then libxccl.so.0).
"""
from ._errors import (CudaError, Error, InProgress, InternalError, InvalidArgument, InvalidUsage, RemoteError,
                      Result, Timeout, XcclSystemError)
from ._lib import library_path
from ._types import DataType, RedOp, UniqueId
from ._comm import Comm, PeerCounters, get_unique_id, group, version

SUM, PROD, MAX, MIN, AVG = RedOp.SUM, RedOp.PROD, RedOp.MAX, RedOp.MIN, RedOp.AVG
INT8, UINT8, INT32, UINT32, INT64, UINT64 = (DataType.INT8, DataType.UINT8, DataType.INT32, DataType.UINT32,
                                             DataType.INT64, DataType.UINT64)
FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.BFLOAT16
FLOAT8E4M3, FLOAT8E5M2 = DataType.FLOAT8E4M3, DataType.FLOAT8E5M2

__version__ = "0.1.0"

__all__ = [
    "Comm", "UniqueId", "get_unique_id", "group", "version", "library_path", "PeerCounters",
    "DataType", "RedOp", "Result", "SUM", "PROD", "MAX", "MIN", "AVG",
    "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16",
    "FLOAT8E4M3", "FLOAT8E5M2",
    "Error", "CudaError", "XcclSystemError", "InternalError", "InvalidArgument", "InvalidUsage", "RemoteError",
    "InProgress", "Timeout",
]
