"""Finds and loads libxccl.so and declares the C functions the package calls.

The library is looked for, first found wins:
  1. the path in the environment variable XCCL_LIBRARY;
  2. the path recorded when this copy of the package was made: the build tree
     writes xccl/_paths.py, ``cmake --install`` installs one pointing at the
     installed library (a pip install has none);
  3. ``libxccl.so.0`` through the dynamic loader's own search
     (LD_LIBRARY_PATH, the ldconfig cache, /usr/lib, ...).

The library is loaded with ctypes.CDLL, whose foreign functions release the
GIL for the whole of every call. Every xccl call that waits (init, the
collectives, send/recv, group end, barrier, shrink, destroy) therefore lets
the process's other Python threads run while it waits; that includes a thread
that calls Comm.abort() to end a wait.
"""
import ctypes
import os

SONAME = "libxccl.so.0"
UNIQUE_ID_BYTES = 128


def _recorded_path():
    try:
        from . import _paths
    except ImportError:
        return None
    path = getattr(_paths, "LIBRARY", None)
    if not path:
        return None
    if not os.path.isabs(path):  # installed copies record it relative to the package
        path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), path))
    return path


def _load():
    tried = []
    env = os.environ.get("XCCL_LIBRARY")
    if env:
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError(
                "xccl: XCCL_LIBRARY is set to %r, which could not be loaded (%s). Point XCCL_LIBRARY at "
                "libxccl.so.0 (the build tree's, or the one 'cmake --install' put in <prefix>/lib), "
                "or unset it to use the library this package was built with." % (env, e)) from None
    candidates = []
    recorded = _recorded_path()
    if recorded:
        candidates.append(("the path recorded in xccl/_paths.py", recorded))
    candidates.append(("the dynamic loader's search", SONAME))
    for how, path in candidates:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s): %s" % (path, how, e))
    raise ImportError(
        "xccl: could not load the xccl C library. Tried: " + "; ".join(tried) + ". Set XCCL_LIBRARY to the "
        "path of libxccl.so.0, or add the directory that holds it to LD_LIBRARY_PATH, or install xccl "
        "('cmake --install <build>', then ldconfig).")


lib, _loaded_as = _load()


def library_path():
    """The file the xccl C library was loaded from (resolved through
    /proc/self/maps when the loader's search found it)."""
    if os.path.isabs(_loaded_as):
        return os.path.realpath(_loaded_as)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libxccl.so"):
                    return os.path.realpath(fields[5].strip())
    except OSError:
        pass
    return _loaded_as


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class PeerCountersStruct(ctypes.Structure):
    _fields_ = [("bytesSent", ctypes.c_uint64), ("bytesRecv", ctypes.c_uint64)]


comm_t = ctypes.c_void_p
res_t = ctypes.c_int
_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_int = ctypes.c_int
_szp = ctypes.POINTER(ctypes.c_size_t)

# name: (argument types); every function returns an xcclResult_t unless listed in _RESTYPES.
_PROTOTYPES = {
    "xcclGetVersion": [ctypes.POINTER(ctypes.c_int)],
    "xcclGetErrorString": [res_t],
    "xcclGetLastError": [comm_t],
    "xcclGetUniqueId": [ctypes.POINTER(UniqueIdStruct)],
    "xcclCommInitRank": [ctypes.POINTER(comm_t), _int, UniqueIdStruct, _int],
    "xcclCommInitFromEnv": [ctypes.POINTER(comm_t)],
    "xcclCommDestroy": [comm_t],
    "xcclCommAbort": [comm_t],
    "xcclCommShrink": [comm_t, ctypes.POINTER(ctypes.c_int), _int, ctypes.POINTER(comm_t)],
    "xcclCommGetUniqueId": [comm_t, ctypes.POINTER(UniqueIdStruct)],
    "xcclCommGrow": [comm_t, _int, ctypes.POINTER(UniqueIdStruct), _int, ctypes.POINTER(comm_t), _vp],
    "xcclCommCount": [comm_t, ctypes.POINTER(ctypes.c_int)],
    "xcclCommUserRank": [comm_t, ctypes.POINTER(ctypes.c_int)],
    "xcclCommGetAsyncError": [comm_t, ctypes.POINTER(res_t)],
    "xcclCommGetPeerCounters": [comm_t, _int, ctypes.POINTER(PeerCountersStruct)],
    "xcclAllReduce": [_vp, _vp, _sz, _int, _int, comm_t, _vp],
    "xcclAllGather": [_vp, _vp, _sz, _int, comm_t, _vp],
    "xcclReduceScatter": [_vp, _vp, _sz, _int, _int, comm_t, _vp],
    "xcclBroadcast": [_vp, _vp, _sz, _int, _int, comm_t, _vp],
    "xcclReduce": [_vp, _vp, _sz, _int, _int, _int, comm_t, _vp],
    "xcclGather": [_vp, _vp, _sz, _int, _int, comm_t, _vp],
    "xcclScatter": [_vp, _vp, _sz, _int, _int, comm_t, _vp],
    "xcclAllToAll": [_vp, _vp, _sz, _int, comm_t, _vp],
    "xcclAllToAllv": [_vp, _szp, _szp, _vp, _szp, _szp, _int, comm_t, _vp],
    "xcclSend": [_vp, _sz, _int, _int, comm_t, _vp],
    "xcclRecv": [_vp, _sz, _int, _int, comm_t, _vp],
    "xcclGroupStart": [],
    "xcclGroupEnd": [],
    "xcclBarrier": [comm_t],
    "xcclCommSetTimeout": [comm_t, ctypes.c_double],
    "xcclCommGetAlgorithm": [comm_t, ctypes.c_char_p, _sz, _int, ctypes.POINTER(ctypes.c_char_p)],
    "xcclTypeSize": [_int],
}
_RESTYPES = {"xcclGetErrorString": ctypes.c_char_p, "xcclGetLastError": ctypes.c_char_p, "xcclTypeSize": _sz}


class _Missing:
    """Stands in for a function this libxccl does not export (an older
    library than the package): calling it says so."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        from ._errors import InvalidUsage
        raise InvalidUsage("%s is not in the xccl library loaded from %s: it is older than this Python package; "
                           "use the libxccl.so.0 of the same build (XCCL_LIBRARY)" % (self.name, library_path()))


def _declare():
    fns = {}
    for name, argtypes in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            fns[name] = _Missing(name)
            continue
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, res_t)
        fns[name] = fn
    return fns


fn = _declare()
