"""xccl as a torch.distributed backend.

``import xccl.torch`` registers the backend ``"xcl"``; then, under torchrun::

    import torch.distributed as dist
    import xccl.torch
    dist.init_process_group("xcl")                   # every tensor on xccl, or
    dist.init_process_group("cpu:xcl,cuda:nccl")     # CPU tensors on xccl
    group = dist.new_group(ranks, backend="xcl")

Why ``"xcl"`` and not ``"xccl"``: since torch 2.8 the name ``"xccl"`` is
torch's own backend for Intel XPU GPUs (``Backend.XCCL``), which
``init_process_group`` takes before any plugin. Where torch does not own it
(1.13 to 2.7) ``"xccl"`` is registered too, as the same backend, so older
programs keep working; on a torch that owns it, ``"xccl"`` is Intel's.

The backend is the C++ extension ``xccl.torch._C_t<major>_<minor>`` (a
c10d Backend for torch 2.x, a ProcessGroup for 1.13, over an xccl
communicator, linked to libxccl), one per torch version. A build tree has it
prebuilt for each torch the build found; where the one for this torch is
missing (a pip install) it is built once with ``torch.utils.cpp_extension``
into a cache directory (see ``_build.py``).

What it takes: CPU tensors of float32/64/16, bfloat16, float8 (e4m3fn,
e5m2), int8/32/64, uint8 and bool; ReduceOp SUM, PRODUCT, MIN, MAX, AVG and
PREMUL_SUM; see README.md, "PyTorch".

After a failure, and to add ranks (``_elastic.py``)::

    new = xccl.torch.shrink(group, [dead_rank])       # the survivors, renumbered
    new = dist.shrink_group([dead_rank], group)       # the same, torch >= 2.10's API
    uid = xccl.torch.grow_id(group)                   # on one rank; carry it, e.g.
    store.set("uid", uid)                             # through a c10d store
    big = xccl.torch.grow(group, nranks, uid, store)  # every rank of group
    big = xccl.torch.join(nranks, rank, store.get("uid"), store)  # a new process
"""
try:
    import torch  # noqa: F401
except ImportError as _e:
    import sys as _sys
    raise ImportError("xccl.torch needs torch 1.13 or later (tested: 1.13.1 and 2.13.0), and this Python (%s) has "
                      "none that imports: %s. Install one (pip install torch==2.13.0, or Debian's python3-torch)."
                      % (_sys.executable, _e)) from None

from . import _compat  # noqa: E402
from ._compat import BACKEND  # noqa: E402  the name to pass to init_process_group / new_group

_compat.check_torch()
_C = _compat.load_extension()
ProcessGroupXCCL = _C.ProcessGroupXCCL

_compat.register(ProcessGroupXCCL)

from ._elastic import grow, grow_id, join, shrink  # noqa: E402  (needs ProcessGroupXCCL above)

__all__ = ["BACKEND", "ProcessGroupXCCL", "shrink", "grow_id", "grow", "join"]
