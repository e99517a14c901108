"""What differs between torch versions on the Python side of the backend.

Tested here: torch 1.13.1 (Debian 12's python3-torch) and 2.13.0 (the CPU
wheel, in scripts/torch-venv.sh's venv).

torch 1.13: a backend is a ProcessGroup; Backend.register_backend(name, fn,
extended_api) has no devices=. torch 2.x: a backend is a c10d Backend that
torch wraps in its own ProcessGroup, one per device type; register_backend
takes devices= (a list: a bare string was iterated letter by letter before
mid-2026). Both pass _DistributedBackendOptions with extended_api=True.
Since 2.8 torch owns the name "xccl" (Intel XPU): the alias is registered
only where torch has no Backend.XCCL.
"""
import glob
import importlib
import inspect
import os
import sys

import torch
import torch.distributed as dist

MIN_TORCH = (1, 13)


def torch_version():
    """torch's (major, minor), from torch.__version__ ("2.13.0+cpu")."""
    parts = torch.__version__.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


def check_torch():
    """One sentence when this torch cannot carry the backend."""
    found = torch_version()
    if found < MIN_TORCH:
        raise ImportError("xccl.torch needs torch %d.%d or later; this Python (%s) has torch %s. Install a newer "
                          "one (pip install 'torch>=2'), or use Debian 12's python3-torch 1.13 with /usr/bin/python3."
                          % (MIN_TORCH + (sys.executable, torch.__version__)))
    if not dist.is_available():
        raise ImportError("xccl.torch: torch %s in %s was built without torch.distributed "
                          "(torch.distributed.is_available() is False); install a build that has it."
                          % (torch.__version__, sys.executable))


def extension_tag():
    """The suffix of the extension module built for this torch: t2_13."""
    return "t%d_%d" % torch_version()


def load_extension():
    """The extension module for this torch: prebuilt beside this file (a
    build tree), else built now (_build.py)."""
    name = "_C_" + extension_tag()
    here = os.path.dirname(os.path.abspath(__file__))
    if glob.glob(os.path.join(here, name + ".*so")):
        # A prebuilt module that fails to load says why itself.
        return importlib.import_module("." + name, __package__)
    from . import _build
    return _build.load(name)


BACKEND = "xcl"  # the backend's name; "xccl" is torch's own from 2.8 (Intel XPU)


def register(cls):
    """Registers the backend as BACKEND, and as "xccl" where torch does not
    own that name. extended_api (torch 1.13 and later) hands the creator
    torch's group name and the members' global ranks."""
    backend = dist.Backend
    if BACKEND.upper() in getattr(backend, "_plugins", {}):
        return  # already registered (the module imported twice under two names)

    def create(opts, backend_options=None):
        # group_id is torch's name for the group ("0" for the default one,
        # a hash for new_group's): xccl's errors and dumps name it.
        ranks = [int(r) for r in (opts.global_ranks_in_group or [])]
        return cls(opts.store, opts.group_rank, opts.group_size, opts.timeout.total_seconds(),
                   str(opts.group_id or ""), ranks)

    kwargs = {"extended_api": True}
    if "devices" in inspect.signature(backend.register_backend).parameters:
        kwargs["devices"] = ["cpu"]
    backend.register_backend(BACKEND, create, **kwargs)
    if not hasattr(backend, "XCCL") and "XCCL" not in getattr(backend, "_plugins", {}):
        backend.register_backend("xccl", create, **kwargs)


# ---- Groups made outside new_group (xccl.torch.shrink / grow / join) -------
#
# torch 1.13 keeps its groups in module dicts of distributed_c10d (_pg_map,
# _pg_names, _pg_group_ranks); torch 2.x in the same dicts on its _World
# object. Registering a group there is what lets dist.broadcast(src=...) and
# get_rank(group) translate ranks, and destroy_process_group(group) forget
# it. On 2.x the backend is first wrapped in a ProcessGroup of torch's, as
# new_group does.

def _registry():
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_pg_group_ranks"):
        return c10d._pg_map, c10d._pg_names, c10d._pg_group_ranks
    world = c10d._world
    return world.pg_map, world.pg_names, world.pg_group_ranks


def default_group():
    return dist.distributed_c10d._get_default_group()


def global_ranks(pg):
    """The global ranks of pg's members, by group rank (pg's own ranks where
    torch does not know it)."""
    _, _, group_ranks = _registry()
    if pg is dist.GroupMember.WORLD or pg is getattr(dist.group, "WORLD", None):
        return list(range(pg.size()))
    ranks = group_ranks.get(pg)
    if not ranks:
        return list(range(pg.size()))
    return [g for g, _ in sorted(ranks.items(), key=lambda kv: kv[1])]


def group_store(pg):
    pg_map, _, _ = _registry()
    entry = pg_map.get(pg)
    return entry[1] if entry else None


def wrap_backend(backend, name, store):
    """torch 2.x: a ProcessGroup of torch's over backend, for CPU tensors, as
    new_group makes one; torch 1.13: backend itself (it is a ProcessGroup)."""
    if torch_version() < (2, 0):
        return backend
    c10d = torch._C._distributed_c10d
    pg = c10d.ProcessGroup(store, backend.rank(), backend.size())
    kind = c10d.ProcessGroup.BackendType.CUSTOM
    pg._set_default_backend(kind)
    pg._register_backend(torch.device("cpu"), kind, backend)
    pg._set_group_name(name)
    return pg


def register_group(pg, name, globals_by_rank, store):
    rank_mapping = {g: r for r, g in enumerate(globals_by_rank)}
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_register_pg_in_world"):  # torch 2.x (2.9 and later): every map at once
        c10d._register_pg_in_world(pg, dist.Backend(BACKEND), store, name, "cpu:" + BACKEND, rank_mapping,
                                   add_to_default_tag=True)
        return
    pg_map, pg_names, group_ranks = _registry()
    pg_map[pg] = (dist.Backend(BACKEND), store)
    pg_names[pg] = name
    group_ranks[pg] = rank_mapping
