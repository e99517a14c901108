"""A new process group from an xccl one: shrink after a failure, grow to more ranks.

On torch 2.10 and later, torch.distributed.shrink_group(ranks_to_exclude,
group) reaches xccl's Backend.shrink (xcclCommShrink) directly.
xccl.torch.shrink is the same for any torch, 1.13 included: the same
arguments (ranks of the group, not global ranks; only the ranks that stay
call it), and the new group is registered with torch.distributed as
new_group's are. What differs from torch's: the default group is never
replaced (the caller passes the new group on), there are no shrink_flags
(xcclCommShrink works on a failed communicator without an abort first) and
no pg_options.
torch has no grow; grow_id / grow / join follow NCCL's ncclCommGetUniqueId and
ncclCommGrow.

The new groups' own keys in the c10d store (sends' announcements, failure
reports) go to the parent's store for a shrink, or to the store passed to
grow and join, which every member of the grown group must share.
"""
import datetime
import itertools

import torch
import torch.distributed as dist

from . import _compat

_names = itertools.count(1)


def _xccl_group(pg, who):
    from . import ProcessGroupXCCL
    if pg is None:
        if not dist.is_initialized():
            raise RuntimeError("xccl.torch.%s: group is None and there is no default process group; pass the "
                               "xccl group" % who)
        pg = _compat.default_group()
    if isinstance(pg, ProcessGroupXCCL):
        return pg
    backend = None
    if hasattr(pg, "_get_backend"):  # torch 2.x: a ProcessGroup over backends
        try:
            backend = pg._get_backend(torch.device("cpu"))
        except Exception:  # no CPU backend in it: say what it is below
            backend = None
    if isinstance(backend, ProcessGroupXCCL):
        return backend
    raise TypeError("xccl.torch.%s: the group is a %s, not an xccl group; pass one made with backend=\"xcl\" "
                    "(init_process_group or new_group), or by xccl.torch.shrink/grow/join"
                    % (who, type(pg).__name__))


def _timeout_s(timeout, who):
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    else:
        try:
            seconds = float(timeout)
        except (TypeError, ValueError):
            raise TypeError("xccl.torch.%s: timeout=%r is neither a datetime.timedelta nor seconds"
                            % (who, timeout)) from None
    if seconds <= 0:
        raise ValueError("xccl.torch.%s: the timeout must be positive, got %g s" % (who, seconds))
    return seconds


def _uid_bytes(uid, who):
    if isinstance(uid, str):
        raise TypeError("xccl.torch.%s: uid is a str; pass the bytes grow_id() returned (bytes.fromhex() of a "
                        "hex form)" % who)
    try:
        return bytes(uid)  # bytes, bytearray, or an xccl.UniqueId
    except TypeError:
        raise TypeError("xccl.torch.%s: uid is a %s; pass the bytes grow_id() returned" % (who, type(uid).__name__)) \
            from None


def _ranks(ranks, who):
    if not isinstance(ranks, (list, tuple)):
        raise TypeError("xccl.torch.%s: exclude_ranks must be a list of ranks of the group, got %s"
                        % (who, type(ranks).__name__))
    out = []
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError("xccl.torch.%s: exclude_ranks holds %r, not an int rank" % (who, r))
        out.append(r)
    return out


def shrink(group, exclude_ranks, store=None):
    """A new process group of the ranks of ``group`` not in ``exclude_ranks``
    (ranks of ``group``), made by xcclCommShrink from its communicator: no new
    rendezvous. Only the ranks that stay call it, each with the same list, and
    it works on a group whose operation just failed (a dead peer): that is
    what it is for. The survivors are numbered 0.. in their order in
    ``group``, as NCCL's ncclCommShrink numbers them.

    ``group`` None is the default group. ``store`` (None: the old group's) is
    the c10d store the new group keeps its keys in; pass another if the old
    one died with a rank (the rank that hosts a TCPStore). The new group is
    registered with torch.distributed under the survivors' global ranks, so
    ``dist.broadcast(t, src=<global rank>, group=new)`` works; its timeout is
    the old group's. ``group`` is left as it was (failed, if it had), still to
    be destroyed; a failure raises RuntimeError with xccl's sentence and
    leaves ``group`` as it was.

    As torch.distributed.shrink_group of newer torch (NCCL), but: the default
    group is never replaced by the new one, and there are no shrink_flags (a
    failed group needs no abort first) nor pg_options.
    """
    pg = _xccl_group(group, "shrink")
    ranks = _ranks(exclude_ranks, "shrink")
    parent = _compat.global_ranks(group if group is not None else _compat.default_group())
    store = store or _compat.group_store(group if group is not None else _compat.default_group())
    dropped = set(ranks)
    survivors = [g for i, g in enumerate(parent) if i not in dropped]
    return _register(pg._shrink(ranks, store), "xccl_shrink_%d" % next(_names), survivors, store)


def _register(backend, name, globals_by_rank, store):
    """The new group as torch.distributed's calls take it, registered."""
    new = _compat.wrap_backend(backend, name, store)
    _compat.register_group(new, name, globals_by_rank, store)
    return new


def grow_id(group=None):
    """The id (bytes) that grow() and join() take, made by
    xcclCommGetUniqueId on ``group``'s communicator. One rank of ``group``
    makes it and carries it to the others and to the joining processes, e.g.
    ``store.set("grow/uid", uid)`` and ``store.get("grow/uid")`` on a c10d
    store. This process then serves the new group's rendezvous for the
    group's timeout: it must live until the grow is done. The id holds a
    secret that admits a process to the group: keep it to the job. Refused
    (RuntimeError) on a group that has failed: shrink it first."""
    return _xccl_group(group, "grow_id")._grow_id()


def grow(group, nranks, uid, store):
    """A new process group of ``nranks`` ranks: every rank of ``group`` calls
    it and keeps its number; the processes that come in call join() with the
    ranks ``group.size()`` .. ``nranks - 1``. ``uid`` is grow_id()'s;
    ``store`` is a c10d store that every member shares (the joiners pass the
    same one to join()): the new group keeps its keys there. Its timeout is
    ``group``'s. Registered with torch.distributed with its own ranks as its
    global ranks (the joiners have no other). ``group`` is left as it was.
    Refused on a group that has failed (shrink it first)."""
    pg = _xccl_group(group, "grow")
    if store is None:
        raise ValueError("xccl.torch.grow: store is None; pass the c10d store the joining processes pass to join()")
    new = pg._grow(int(nranks), _uid_bytes(uid, "grow"), store)
    return _register(new, "xccl_grow_%d" % next(_names), list(range(new.size())), store)


def join(nranks, rank, uid, store, timeout=datetime.timedelta(minutes=30)):
    """The process group that a grow() of another group makes, for a process
    that was in none: it becomes ``rank`` (from the old group's size to
    ``nranks - 1``) of ``nranks``. ``uid`` is grow_id()'s (read it from
    ``store``, where a rank of the old group put it), ``store`` the one the
    old group's ranks pass to grow(); ``timeout`` (datetime.timedelta or
    seconds) becomes the new group's per-operation timeout. Needs no default
    process group: use the group's rank() and size(), and pass it as
    ``group=`` to torch.distributed's calls."""
    if store is None:
        raise ValueError("xccl.torch.join: store is None; pass the c10d store the group's ranks pass to grow()")
    from . import ProcessGroupXCCL
    new = ProcessGroupXCCL._join(int(nranks), int(rank), _uid_bytes(uid, "join"), store,
                                 _timeout_s(timeout, "join"))
    return _register(new, "xccl_grow_%d" % next(_names), list(range(new.size())), store)
