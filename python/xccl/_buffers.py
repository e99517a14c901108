"""Buffers: any object with the buffer protocol (NumPy arrays, bytearray,
array.array, memoryview, ctypes arrays, ...), C-contiguous.

The element type comes from the buffer's format (a NumPy array's dtype shows
there too), or from an explicit dtype= (an xccl.DataType, its name, or a NumPy
dtype), which reinterprets the bytes: the way to pass bfloat16 and fp8, which
NumPy has no dtype for (e.g. a uint16 array of bfloat16 bit patterns with
dtype=xccl.BFLOAT16).

While a call runs, each buffer is held through the buffer protocol
(PyObject_GetBuffer), so another thread cannot resize or free it under the C
code, which runs without the GIL.
"""
import ctypes
import sys

from ._errors import InvalidArgument
from ._types import DataType

# (kind, itemsize) -> DataType; kind: 'i' signed, 'u' unsigned, 'f' float.
_BY_KIND = {("i", 1): DataType.INT8, ("u", 1): DataType.UINT8, ("i", 4): DataType.INT32, ("u", 4): DataType.UINT32,
            ("i", 8): DataType.INT64, ("u", 8): DataType.UINT64, ("f", 2): DataType.FLOAT16,
            ("f", 4): DataType.FLOAT32, ("f", 8): DataType.FLOAT64}
_FORMAT_KIND = {}
_FORMAT_KIND.update({c: "i" for c in "bhilqnc"})
_FORMAT_KIND.update({c: "u" for c in "BHILQN"})
_FORMAT_KIND.update({c: "f" for c in "efd"})
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_SUPPORTED = "int8 uint8 int32 uint32 int64 uint64 float16 float32 float64 (bfloat16 and fp8 with dtype=)"


def _format_type(fmt, itemsize):
    """The DataType of a buffer-protocol format string, or None."""
    if not fmt:
        return None
    order = ""
    if fmt[0] in "@=<>!":
        order, fmt = fmt[0], fmt[1:]
    if len(fmt) != 1 or fmt not in _FORMAT_KIND:
        return None
    if (order in (">", "!") and not _BIG_ENDIAN_HOST) or (order == "<" and _BIG_ENDIAN_HOST):
        return None  # not in the host's byte order
    return _BY_KIND.get((_FORMAT_KIND[fmt], itemsize))


def resolve_dtype(dtype, fn):
    """A DataType from what a caller may pass as dtype=."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, bool):
        pass
    elif isinstance(dtype, int):
        try:
            return DataType(dtype)
        except ValueError:
            pass
    elif isinstance(dtype, str):
        try:
            return DataType[dtype.upper()]
        except KeyError:
            pass
    kind, size = getattr(dtype, "kind", None), getattr(dtype, "itemsize", None)
    if kind is None and "numpy" in sys.modules:  # numpy scalar types such as numpy.float32
        try:
            d = sys.modules["numpy"].dtype(dtype)
            kind, size = d.kind, d.itemsize
        except TypeError:
            pass
    if isinstance(kind, str) and (kind, size) in _BY_KIND:
        if getattr(dtype, "byteorder", "=") in ("=", "|", ">" if _BIG_ENDIAN_HOST else "<"):
            return _BY_KIND[(kind, size)]
    raise InvalidArgument("%s: dtype=%r is not an xccl type; pass an xccl.DataType (for instance xccl.BFLOAT16), "
                          "its name, or a NumPy dtype of %s" % (fn, dtype, _SUPPORTED))


def _describe(obj, mv):
    dt = getattr(obj, "dtype", None)
    if dt is not None:
        return "NumPy dtype %s" % dt
    return "element format %r (%d bytes)" % (mv.format, mv.itemsize)


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (part of the stable ABI since 3.11)."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_PyBUF_SIMPLE, _PyBUF_WRITABLE = 0, 1


class Buffer:
    """One argument's buffer, held until release(): its address, DataType
    and element count."""

    __slots__ = ("obj", "name", "dtype", "count", "nbytes", "address", "_mv", "_view")

    def __init__(self, obj, name, fn, dtype=None, writable=False, why=None):
        self.obj, self.name = obj, name
        self._mv = self._view = None
        if obj is None:
            raise InvalidArgument("%s: %s is None; pass a buffer" % (fn, name))
        try:
            mv = memoryview(obj)
        except TypeError:
            raise InvalidArgument("%s: %s is of type %s, which does not support the buffer protocol; pass a NumPy array, "
                                  "bytearray, array.array, memoryview or another C-contiguous buffer"
                                  % (fn, name, type(obj).__name__)) from None
        except (ValueError, BufferError) as e:  # e.g. a NumPy dtype with no buffer format
            raise InvalidArgument("%s: %s cannot be used as a buffer (%s); xccl takes %s"
                                  % (fn, name, e, _SUPPORTED)) from None
        self._mv = mv
        try:
            self._check(fn, dtype, writable, why)
            view = _PyBuffer()
            _get_buffer(mv, ctypes.byref(view), _PyBUF_WRITABLE if writable else _PyBUF_SIMPLE)
            self._view = view
            self.address = view.buf
        except BaseException:
            self.release()
            raise

    def _check(self, fn, dtype, writable, why):
        mv, name = self._mv, self.name
        if not mv.c_contiguous:
            raise InvalidArgument("%s: %s is not C-contiguous (shape %s, strides %s); pass a contiguous copy, for "
                                  "instance numpy.ascontiguousarray(x)" % (fn, name, mv.shape, mv.strides))
        if writable and mv.readonly:
            raise InvalidArgument("%s: %s is read-only, but %s writes its result there%s; pass a writable buffer"
                                  % (fn, name, fn, " (%s)" % why if why else ""))
        self.nbytes = mv.nbytes
        if dtype is not None:
            self.dtype = resolve_dtype(dtype, fn)
            size = self.dtype.itemsize
            if self.nbytes % size:
                raise InvalidArgument("%s: %s holds %d bytes, not a whole number of %s elements (%d bytes each)"
                                      % (fn, name, self.nbytes, self.dtype.name.lower(), size))
        else:
            self.dtype = _format_type(mv.format, mv.itemsize)
            if self.dtype is None:
                raise InvalidArgument("%s: %s has %s, which xccl has no type for; xccl takes %s"
                                      % (fn, name, _describe(self.obj, mv), _SUPPORTED))
            size = mv.itemsize
        self.count = self.nbytes // size

    def release(self):
        if self._view is not None:
            _release_buffer(ctypes.byref(self._view))
            self._view = None
        if self._mv is not None:
            self._mv.release()
            self._mv = None


class Held:
    """Holds the buffers of one call: ``with Held(fn, dtype) as h: b = h.buf(x, "send")``."""

    def __init__(self, fn, dtype):
        self.fn, self.dtype, self._bufs = fn, dtype, []

    def buf(self, obj, name, writable=False, why=None):
        b = Buffer(obj, name, self.fn, self.dtype, writable, why)
        self._bufs.append(b)
        return b

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for b in reversed(self._bufs):
            b.release()
        return False
