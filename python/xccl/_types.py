"""Datatypes, reduction ops and the unique id, with the C values."""
import ctypes as _ctypes
import enum

from . import _lib


class DataType(enum.IntEnum):
    """xcclDataType_t."""
    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9
    FLOAT8E4M3 = 10
    FLOAT8E5M2 = 11

    @property
    def itemsize(self):
        """Bytes per element (xcclTypeSize)."""
        return _ITEMSIZE[self]


_ITEMSIZE = {DataType.INT8: 1, DataType.UINT8: 1, DataType.INT32: 4, DataType.UINT32: 4, DataType.INT64: 8,
             DataType.UINT64: 8, DataType.FLOAT16: 2, DataType.FLOAT32: 4, DataType.FLOAT64: 8,
             DataType.BFLOAT16: 2, DataType.FLOAT8E4M3: 1, DataType.FLOAT8E5M2: 1}


class RedOp(enum.IntEnum):
    """xcclRedOp_t. AVG divides the sum by the number of ranks (truncating
    toward zero for integer types)."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


class UniqueId:
    """The 128 bytes that let ranks find each other (xcclUniqueId). Made by
    xccl.get_unique_id() on one process, which then hosts the bootstrap root
    on a thread and must live until every rank has made its Comm; carried to
    the others as bytes(uid) or uid.hex(). It holds a secret that admits a
    process to the communicator, so repr() does not print it."""

    __slots__ = ("_bytes",)

    def __init__(self, data):
        if isinstance(data, UniqueId):
            data = data._bytes
        elif isinstance(data, str):
            raise TypeError("xccl.UniqueId(data): data is a str; for the hex form use xccl.UniqueId.fromhex(s)")
        data = bytes(data)
        if len(data) != _lib.UNIQUE_ID_BYTES:
            from ._errors import InvalidArgument
            raise InvalidArgument("xccl.UniqueId: a unique id is %d bytes, not %d; pass bytes(uid) of an id made "
                                  "by xccl.get_unique_id()" % (_lib.UNIQUE_ID_BYTES, len(data)))
        self._bytes = data

    @classmethod
    def fromhex(cls, text):
        """The id from its hex form (uid.hex(), or XCCL_UNIQUE_ID as xccl-run sets it)."""
        try:
            data = bytes.fromhex(text)
        except ValueError as e:
            from ._errors import InvalidArgument
            raise InvalidArgument("xccl.UniqueId.fromhex: not a hex string (%s); pass what uid.hex() returned"
                                  % e) from None
        return cls(data)

    def hex(self):
        return self._bytes.hex()

    def __bytes__(self):
        return self._bytes

    def __eq__(self, other):
        return isinstance(other, UniqueId) and other._bytes == self._bytes

    def __hash__(self):
        return hash(self._bytes)

    def __reduce__(self):  # picklable, so multiprocessing can hand it to children
        return (UniqueId, (self._bytes,))

    def __repr__(self):
        return "xccl.UniqueId(<%d bytes, secret>)" % len(self._bytes)

    def _as_struct(self):
        s = _lib.UniqueIdStruct()
        # memmove, not field assignment: the bytes hold NULs, which ctypes' char fields stop at.
        _ctypes.memmove(_ctypes.addressof(s), self._bytes, _lib.UNIQUE_ID_BYTES)
        return s

    @classmethod
    def _from_struct(cls, s):
        return cls(_ctypes.string_at(_ctypes.addressof(s), _lib.UNIQUE_ID_BYTES))
