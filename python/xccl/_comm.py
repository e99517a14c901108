"""Communicators, collectives, point-to-point and groups.

Argument rules are NCCL's. Counts come from the buffers; every size and type
is checked here, before the C call, and a mismatch raises
xccl.InvalidArgument naming the argument and both sizes. Buffers that NCCL
reads or writes on the root only (broadcast's and scatter's send, reduce's
and gather's recv) are ignored on the other ranks and may be None there.

Every collective returns the buffer holding its result on this rank (recv,
or send when in place), or None where the call writes nothing here.
"""
import collections
import ctypes

from . import _lib
from ._buffers import Held
from ._errors import InvalidArgument, InvalidUsage, error_for
from ._types import DataType, RedOp, UniqueId

_fn = _lib.fn

PeerCounters = collections.namedtuple("PeerCounters", ["bytes_sent", "bytes_recv"])
PeerCounters.__doc__ = "Bytes moved between this rank and one peer since the communicator was made."


def _last_error(handle, code):
    msg = _fn["xcclGetLastError"](handle)
    text = msg.decode("utf-8", "replace") if msg else ""
    if not text:
        text = _fn["xcclGetErrorString"](code).decode("utf-8", "replace")
    return text


def _check(code, handle=None):
    """Raises the xccl.Error subclass for a result code that is not success."""
    if code != 0:
        raise error_for(code, _last_error(handle, code))


def _op(op, fn):
    try:
        if isinstance(op, str):
            return RedOp[op.upper()]
        if not isinstance(op, bool):
            return RedOp(op)
    except (KeyError, ValueError, TypeError):
        pass
    raise InvalidArgument("%s: op=%r is not an xccl reduction op; pass xccl.SUM, xccl.PROD, xccl.MAX, xccl.MIN "
                          "or xccl.AVG" % (fn, op))


def _int_arg(value, what, fn):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgument("%s: %s=%r is not an integer" % (fn, what, value))
    return value.__index__()


def _same_type(fn, a, b):
    if a.dtype != b.dtype:
        raise InvalidArgument("%s: %s is %s but %s is %s; both must be of one type (or pass dtype= to read both as "
                              "one)" % (fn, a.name, a.dtype.name.lower(), b.name, b.dtype.name.lower()))


def _count_is(fn, buf, want, why):
    if buf.count != want:
        raise InvalidArgument("%s: %s holds %d %s elements but must hold %d (%s)"
                              % (fn, buf.name, buf.count, buf.dtype.name.lower(), want, why))


def _as_uid(uid):
    """A UniqueId from one, its hex form or its 128 bytes."""
    if isinstance(uid, str):
        return UniqueId.fromhex(uid)
    return uid if isinstance(uid, UniqueId) else UniqueId(uid)


def get_unique_id():
    """A new xccl.UniqueId. This process then hosts the bootstrap root on a
    thread, so it must stay alive until every rank has made its Comm."""
    s = _lib.UniqueIdStruct()
    _check(_fn["xcclGetUniqueId"](ctypes.byref(s)))
    return UniqueId._from_struct(s)


def version():
    """(major, minor, patch) of the loaded libxccl."""
    v = ctypes.c_int()
    _check(_fn["xcclGetVersion"](ctypes.byref(v)))
    return (v.value // 10000, v.value // 100 % 100, v.value % 100)


class group:
    """``with xccl.group(): ...`` queues the operations issued inside
    (xcclGroupStart) and runs them together on leaving (xcclGroupEnd), which
    returns when all are done; its error raises. Groups nest; only the
    outermost runs them. When the block raises, the group is still ended
    (so the queue is not left open) and the block's exception propagates."""

    def __enter__(self):
        _check(_fn["xcclGroupStart"]())
        return self

    def __exit__(self, exc_type, exc, tb):
        code = _fn["xcclGroupEnd"]()
        if exc_type is None:
            _check(code)
        elif code != 0 and hasattr(exc, "add_note"):
            exc.add_note("xccl.group: ending the group also failed: " + _last_error(None, code))
        return False


class Comm:
    """A communicator: ``xccl.Comm(nranks, uid, rank)`` on every rank (each
    with the same uid and nranks and its own rank), or Comm.from_env() under
    a launcher.

    ``with xccl.Comm(...) as c:`` destroys c when the block ends normally and
    aborts it when the block raises. Destroy is the orderly end; abort closes
    the connections at once, so that peers still waiting on this rank fail
    promptly (naming it) instead of waiting XCCL_TIMEOUT. That is what NCCL
    asks for after an error (ncclCommAbort) and what MPI's default error
    handler does. A Comm that is neither destroyed nor aborted lives until
    the process exits; garbage collection does not free it.
    """

    def __init__(self, nranks, uid, rank):
        fn = "xccl.Comm"
        nranks = _int_arg(nranks, "nranks", fn)
        rank = _int_arg(rank, "rank", fn)
        if nranks < 1:
            raise InvalidArgument("%s: nranks=%d; a communicator has at least one rank" % (fn, nranks))
        if not 0 <= rank < nranks:
            raise InvalidArgument("%s: rank=%d is not in 0..%d (nranks=%d)" % (fn, rank, nranks - 1, nranks))
        uid = _as_uid(uid)
        h = _lib.comm_t()
        _check(_fn["xcclCommInitRank"](ctypes.byref(h), nranks, uid._as_struct(), rank))
        self._adopt(h.value)

    @classmethod
    def from_env(cls):
        """Rank, size and rendezvous from the environment (xcclCommInitFromEnv):
        XCCL_UNIQUE_ID/XCCL_RANK/XCCL_NRANKS as xccl-run sets them, then
        XCCL_ROOT, torchrun, Open MPI, Slurm and PMI variables."""
        h = _lib.comm_t()
        _check(_fn["xcclCommInitFromEnv"](ctypes.byref(h)))
        return cls._wrap(h.value)

    @classmethod
    def _wrap(cls, handle):
        self = cls.__new__(cls)
        self._adopt(handle)
        return self

    def _adopt(self, handle):
        self._handle = handle
        n, r = ctypes.c_int(), ctypes.c_int()
        _check(_fn["xcclCommCount"](handle, ctypes.byref(n)), handle)
        _check(_fn["xcclCommUserRank"](handle, ctypes.byref(r)), handle)
        self._size, self._rank = n.value, r.value
        self._ended = None

    # ---- state ----

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def handle(self):
        """The xcclComm_t as an int (for C extensions), None once destroyed or aborted."""
        return self._handle

    def _live(self, fn):
        h = self._handle
        if h is None:
            raise InvalidUsage("comm.%s: this communicator was %s and can no longer be used; make a new one"
                               % (fn, self._ended))
        return h

    def __repr__(self):
        state = "" if self._handle is not None else ", %s" % self._ended
        return "<xccl.Comm rank %d of %d%s>" % (self._rank, self._size, state)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._handle is not None:
            if exc_type is None:
                self.destroy()
            else:
                self.abort()
        return False

    # ---- lifecycle ----

    def destroy(self):
        """Frees the communicator (xcclCommDestroy). A second call does nothing."""
        h = self._handle
        if h is None:
            return
        _check(_fn["xcclCommDestroy"](h), h)
        self._handle, self._ended = None, "destroyed"

    def abort(self):
        """Stops everything on the communicator, from any thread: an operation
        waiting on another thread raises xccl.RemoteError promptly, peers see
        the connections close. The communicator is freed. A second call does
        nothing."""
        h = self._handle
        if h is None:
            return
        self._handle, self._ended = None, "aborted"
        _check(_fn["xcclCommAbort"](h))

    def shrink(self, exclude_ranks):
        """A new Comm of the ranks not in exclude_ranks, in their order
        (xcclCommShrink). Every rank that stays calls it with the same list;
        it works on a communicator that has failed. This one stays as it was
        (and still has to be destroyed or aborted)."""
        h = self._live("shrink")
        ranks = [_int_arg(r, "exclude_ranks[%d]" % i, "shrink") for i, r in enumerate(exclude_ranks)]
        arr = (ctypes.c_int * max(len(ranks), 1))(*ranks)
        out = _lib.comm_t()
        _check(_fn["xcclCommShrink"](h, arr, len(ranks), ctypes.byref(out)), h)
        return Comm._wrap(out.value)

    def grow_id(self):
        """A new xccl.UniqueId for growing this communicator
        (xcclCommGetUniqueId): one rank makes it and carries it to the others
        and to the joining processes. This process then hosts the new
        communicator's bootstrap root for XCCL_TIMEOUT, so it must live until
        the grow is done."""
        h = self._live("grow_id")
        s = _lib.UniqueIdStruct()
        _check(_fn["xcclCommGetUniqueId"](h, ctypes.byref(s)), h)
        return UniqueId._from_struct(s)

    def grow(self, nranks, uid):
        """A new Comm of nranks ranks: this one's, keeping their numbers, and
        processes joining with Comm.join(nranks, uid, rank) (xcclCommGrow).
        Every rank of this communicator calls it with uid from grow_id(). This
        one stays as it was (and still has to be destroyed or aborted)."""
        h = self._live("grow")
        nranks = _int_arg(nranks, "nranks", "grow")
        uid = _as_uid(uid)
        out = _lib.comm_t()
        _check(_fn["xcclCommGrow"](h, nranks, ctypes.byref(uid._as_struct()), -1, ctypes.byref(out), None), h)
        return Comm._wrap(out.value)

    @classmethod
    def join(cls, nranks, uid, rank):
        """Joins a communicator that grows to nranks as rank (from its present
        size to nranks - 1), with the uid its grow_id() made (xcclCommGrow)."""
        nranks = _int_arg(nranks, "nranks", "join")
        rank = _int_arg(rank, "rank", "join")
        uid = _as_uid(uid)
        out = _lib.comm_t()
        _check(_fn["xcclCommGrow"](None, nranks, ctypes.byref(uid._as_struct()), rank, ctypes.byref(out), None))
        return cls._wrap(out.value)

    def get_async_error(self):
        """None, or (not raised) the xccl.Error a failed operation left the communicator in."""
        h = self._live("get_async_error")
        code = _lib.res_t()
        _check(_fn["xcclCommGetAsyncError"](h, ctypes.byref(code)), h)
        return None if code.value == 0 else error_for(code.value, _last_error(h, code.value))

    def peer_counters(self, peer):
        """PeerCounters(bytes_sent, bytes_recv) with one peer."""
        h = self._live("peer_counters")
        peer = self._peer(peer, "peer", "peer_counters")
        c = _lib.PeerCountersStruct()
        _check(_fn["xcclCommGetPeerCounters"](h, peer, ctypes.byref(c)), h)
        return PeerCounters(c.bytesSent, c.bytesRecv)

    def algorithm(self, collective, count, dtype=DataType.FLOAT32):
        """The algorithm ("ring", "rd", "tree", ...) this communicator runs for
        one collective ("allreduce", "allgather", "reducescatter", "broadcast"
        or "reduce") of count elements of dtype per rank (xcclCommGetAlgorithm)."""
        h = self._live("algorithm")
        count = _int_arg(count, "count", "algorithm")
        if count < 0:
            raise InvalidArgument("algorithm: count=%d is negative" % count)
        name = ctypes.c_char_p()
        _check(_fn["xcclCommGetAlgorithm"](h, str(collective).encode(), count, int(dtype), ctypes.byref(name)), h)
        return name.value.decode()

    def set_timeout(self, seconds):
        """Per-operation timeout for later operations on this communicator
        (xcclCommSetTimeout); XCCL_TIMEOUT is the default."""
        h = self._live("set_timeout")
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            raise InvalidArgument("set_timeout: seconds=%r is not a number" % (seconds,)) from None
        _check(_fn["xcclCommSetTimeout"](h, seconds), h)

    def _peer(self, value, what, fn):
        value = _int_arg(value, what, fn)
        if not 0 <= value < self._size:
            raise InvalidArgument("%s: %s %d is not a rank of this communicator (0..%d)"
                                  % (fn, what, value, self._size - 1))
        return value

    # ---- collectives ----

    def all_reduce(self, send, recv=None, op=RedOp.SUM, *, dtype=None):
        """recv[i] = op over ranks of send[i]; in place (into send) when recv is None."""
        fn, h = "all_reduce", self._live("all_reduce")
        op = _op(op, fn)
        with Held(fn, dtype) as held:
            if recv is None:
                s = r = held.buf(send, "send", writable=True, why="recv=None makes the call in place")
            else:
                s, r = held.buf(send, "send"), held.buf(recv, "recv", writable=True)
                _same_type(fn, s, r)
                _count_is(fn, r, s.count, "as many as send")
            _check(_fn["xcclAllReduce"](s.address, r.address, s.count, s.dtype, op, h, None), h)
        return send if recv is None else recv

    def broadcast(self, send, recv=None, root=0, *, dtype=None):
        """recv = root's send on every rank; in place (send on every rank) when
        recv is None. Out of place, send is read on the root only."""
        fn, h = "broadcast", self._live("broadcast")
        root = self._peer(root, "root", fn)
        with Held(fn, dtype) as held:
            if recv is None:
                s = r = held.buf(send, "send", writable=True, why="recv=None makes the call in place")
            else:
                r = held.buf(recv, "recv", writable=True)
                s = None
                if self._rank == root:
                    if send is None:
                        raise InvalidArgument("%s: send is None on the root (rank %d); the root sends it" % (fn, root))
                    s = held.buf(send, "send")
                    _same_type(fn, s, r)
                    _count_is(fn, s, r.count, "as many as recv")
            _check(_fn["xcclBroadcast"](s.address if s else None, r.address, r.count, r.dtype, root, h, None), h)
        return send if recv is None else recv

    def reduce(self, send, recv=None, op=RedOp.SUM, root=0, *, dtype=None):
        """root's recv = op over ranks of send; in place (into the root's send)
        when recv is None. Returns the result on the root, None elsewhere."""
        fn, h = "reduce", self._live("reduce")
        op = _op(op, fn)
        root = self._peer(root, "root", fn)
        at_root = self._rank == root
        with Held(fn, dtype) as held:
            if recv is None and at_root:
                s = r = held.buf(send, "send", writable=True, why="recv=None makes the call in place")
            else:
                s, r = held.buf(send, "send"), None
                if at_root:
                    r = held.buf(recv, "recv", writable=True)
                    _same_type(fn, s, r)
                    _count_is(fn, r, s.count, "as many as send")
            _check(_fn["xcclReduce"](s.address, r.address if r else None, s.count, s.dtype, op, root, h, None), h)
        if not at_root:
            return None
        return send if recv is None else recv

    def all_gather(self, send, recv, *, dtype=None):
        """recv = every rank's send, in rank order (recv holds size x send).
        In place when send is recv's block of this rank (a view of it)."""
        fn, h = "all_gather", self._live("all_gather")
        with Held(fn, dtype) as held:
            s, r = held.buf(send, "send"), held.buf(recv, "recv", writable=True)
            _same_type(fn, s, r)
            _count_is(fn, r, self._size * s.count, "nranks %d x send's %d" % (self._size, s.count))
            _check(_fn["xcclAllGather"](s.address, r.address, s.count, s.dtype, h, None), h)
        return recv

    def reduce_scatter(self, send, recv, op=RedOp.SUM, *, dtype=None):
        """recv = block <rank> of op over ranks of send (send holds size x recv).
        In place when recv is send's block of this rank (a view of it)."""
        fn, h = "reduce_scatter", self._live("reduce_scatter")
        op = _op(op, fn)
        with Held(fn, dtype) as held:
            s, r = held.buf(send, "send"), held.buf(recv, "recv", writable=True)
            _same_type(fn, s, r)
            _count_is(fn, s, self._size * r.count, "nranks %d x recv's %d" % (self._size, r.count))
            _check(_fn["xcclReduceScatter"](s.address, r.address, r.count, r.dtype, op, h, None), h)
        return recv

    def gather(self, send, recv=None, root=0, *, dtype=None):
        """root's recv = every rank's send in rank order (size x send); recv is
        needed on the root only. Returns recv on the root, None elsewhere."""
        fn, h = "gather", self._live("gather")
        root = self._peer(root, "root", fn)
        with Held(fn, dtype) as held:
            s, r = held.buf(send, "send"), None
            if self._rank == root:
                if recv is None:
                    raise InvalidArgument("%s: recv is None on the root (rank %d); the root needs a buffer of "
                                          "nranks x send's count" % (fn, root))
                r = held.buf(recv, "recv", writable=True)
                _same_type(fn, s, r)
                _count_is(fn, r, self._size * s.count, "nranks %d x send's %d" % (self._size, s.count))
            _check(_fn["xcclGather"](s.address, r.address if r else None, s.count, s.dtype, root, h, None), h)
        return recv if self._rank == root else None

    def scatter(self, send, recv, root=0, *, dtype=None):
        """recv = block <rank> of root's send (size x recv); send is read on the
        root only (None elsewhere)."""
        fn, h = "scatter", self._live("scatter")
        root = self._peer(root, "root", fn)
        with Held(fn, dtype) as held:
            r, s = held.buf(recv, "recv", writable=True), None
            if self._rank == root:
                if send is None:
                    raise InvalidArgument("%s: send is None on the root (rank %d); the root sends nranks x recv's "
                                          "count" % (fn, root))
                s = held.buf(send, "send")
                _same_type(fn, s, r)
                _count_is(fn, s, self._size * r.count, "nranks %d x recv's %d" % (self._size, r.count))
            _check(_fn["xcclScatter"](s.address if s else None, r.address, r.count, r.dtype, root, h, None), h)
        return recv

    def all_to_all(self, send, recv, *, dtype=None):
        """recv's block p = block <rank> of rank p's send; both hold size equal
        blocks and must not overlap."""
        fn, h = "all_to_all", self._live("all_to_all")
        with Held(fn, dtype) as held:
            s, r = held.buf(send, "send"), held.buf(recv, "recv", writable=True)
            _same_type(fn, s, r)
            _count_is(fn, r, s.count, "as many as send")
            if s.count % self._size:
                raise InvalidArgument("%s: send holds %d elements, not a multiple of nranks %d (one equal block per "
                                      "rank)" % (fn, s.count, self._size))
            _check(_fn["xcclAllToAll"](s.address, r.address, s.count // self._size, s.dtype, h, None), h)
        return recv

    def _counts(self, fn, name, values, buf, displs_name, displs):
        n = self._size
        values = [_int_arg(v, "%s[%d]" % (name, i), fn) for i, v in enumerate(values)]
        if len(values) != n:
            raise InvalidArgument("%s: %s has %d entries; it needs one per rank (%d)" % (fn, name, len(values), n))
        if displs is None:  # packed, in rank order
            displs, at = [], 0
            for v in values:
                displs.append(at)
                at += v
        else:
            displs = [_int_arg(v, "%s[%d]" % (displs_name, i), fn) for i, v in enumerate(displs)]
            if len(displs) != n:
                raise InvalidArgument("%s: %s has %d entries; it needs one per rank (%d)"
                                      % (fn, displs_name, len(displs), n))
        for p in range(n):
            if values[p] < 0 or displs[p] < 0:
                raise InvalidArgument("%s: %s[%d]=%d and %s[%d]=%d must not be negative"
                                      % (fn, name, p, values[p], displs_name, p, displs[p]))
            if displs[p] + values[p] > buf.count:
                raise InvalidArgument("%s: block %d (%s %d + %s %d) ends past the %d elements %s holds"
                                      % (fn, p, displs_name, displs[p], name, values[p], buf.count, buf.name))
        return (ctypes.c_size_t * n)(*values), (ctypes.c_size_t * n)(*displs)

    def all_to_all_v(self, send, send_counts, send_displs, recv, recv_counts, recv_displs, *, dtype=None):
        """All-to-all with a count per peer: send_counts[p] elements from
        send[send_displs[p]:] go to rank p, which puts them at
        recv[recv_displs[p]:] (its recv_counts[<this rank>] must equal them).
        Counts and displacements are in elements, one per rank; None for
        displacements means packed in rank order."""
        fn, h = "all_to_all_v", self._live("all_to_all_v")
        with Held(fn, dtype) as held:
            s, r = held.buf(send, "send"), held.buf(recv, "recv", writable=True)
            _same_type(fn, s, r)
            sc, sd = self._counts(fn, "send_counts", send_counts, s, "send_displs", send_displs)
            rc, rd = self._counts(fn, "recv_counts", recv_counts, r, "recv_displs", recv_displs)
            _check(_fn["xcclAllToAllv"](s.address, sc, sd, r.address, rc, rd, s.dtype, h, None), h)
        return recv

    def send(self, buf, peer, *, dtype=None):
        """Sends buf to peer (matched with peer's recv in posting order)."""
        fn, h = "send", self._live("send")
        peer = self._peer(peer, "peer", fn)
        with Held(fn, dtype) as held:
            b = held.buf(buf, "buf")
            _check(_fn["xcclSend"](b.address, b.count, b.dtype, peer, h, None), h)

    def recv(self, buf, peer, *, dtype=None):
        """Receives into buf from peer; the peer sends as many elements of the same type."""
        fn, h = "recv", self._live("recv")
        peer = self._peer(peer, "peer", fn)
        with Held(fn, dtype) as held:
            b = held.buf(buf, "buf", writable=True)
            _check(_fn["xcclRecv"](b.address, b.count, b.dtype, peer, h, None), h)
        return buf

    def barrier(self):
        """Returns once every rank has called it. Not allowed inside a group."""
        h = self._live("barrier")
        _check(_fn["xcclBarrier"](h), h)
