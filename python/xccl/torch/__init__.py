"""xccl as a torch.distributed backend.

``import xccl.torch`` registers the backend ``"xccl"``; then, under torchrun::

    import torch.distributed as dist
    import xccl.torch
    dist.init_process_group("xccl")              # or
    group = dist.new_group(ranks, backend="xccl")

The backend is the C++ extension ``xccl.torch._C`` (a c10d ProcessGroup over
an xccl communicator, linked to libxccl). A build tree or ``cmake --install``
has it prebuilt; where it is missing (a pip install) it is built once with
``torch.utils.cpp_extension`` into a cache directory (see ``_build.py``).

What it does and does not take: CPU tensors of float32/64/16, bfloat16,
int8/32/64, uint8 and bool; ReduceOp SUM, PRODUCT, MIN, MAX, AVG; sends and
receives match in posting order per pair (tags are not used); see README.md,
"PyTorch".

After a failure, and to add ranks (``_elastic.py``)::

    new = xccl.torch.shrink(group, [dead_rank])       # the survivors, renumbered
    uid = xccl.torch.grow_id(group)                   # on one rank; carry it, e.g.
    store.set("uid", uid)                             # through a c10d store
    big = xccl.torch.grow(group, nranks, uid, store)  # every rank of group
    big = xccl.torch.join(nranks, rank, store.get("uid"), store)  # a new process

Each returns a ProcessGroupXCCL over a communicator made from the old one
(xcclCommShrink, xcclCommGrow), registered with torch.distributed.
"""
import glob
import os

import torch.distributed as _dist

from . import _compat


def _load_extension():
    here = os.path.dirname(os.path.abspath(__file__))
    if glob.glob(os.path.join(here, "_C.*.so")) or glob.glob(os.path.join(here, "_C.so")):
        from . import _C  # a prebuilt module that fails to load says why itself
        return _C
    from . import _build
    return _build.load()


_C = _load_extension()
ProcessGroupXCCL = _C.ProcessGroupXCCL


def _create(store, rank, size, timeout):
    """The creator torch calls: (store, rank, size, timeout) as in torch 1.13."""
    return ProcessGroupXCCL(store, rank, size, timeout.total_seconds())


_compat.register("xccl", _create)

from ._elastic import grow, grow_id, join, shrink  # noqa: E402  (needs ProcessGroupXCCL above)

__all__ = ["ProcessGroupXCCL", "shrink", "grow_id", "grow", "join"]
