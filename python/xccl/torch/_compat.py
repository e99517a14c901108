"""What differs between torch versions on the Python side of the backend.

torch 1.13 (tested): Backend.register_backend(name, fn) and fn(store, rank,
size, timeout) returns the ProcessGroup. torch 2.x (not tested): the same
call returns a c10d Backend, and register_backend takes the device types
the backend serves (``devices=``, from 2.1).
"""
import inspect

import torch.distributed as dist


def register(name, creator):
    backend = dist.Backend
    if name.upper() in getattr(backend, "_plugins", {}):
        return  # already registered (the module imported twice under two names)
    params = inspect.signature(backend.register_backend).parameters
    if "devices" in params:
        backend.register_backend(name, creator, devices=["cpu"])
    else:
        backend.register_backend(name, creator)


# ---- Groups made outside new_group (xccl.torch.shrink / grow / join) -------
#
# torch 1.13 keeps its groups in module dicts of distributed_c10d (_pg_map,
# _pg_names, _pg_group_ranks); torch 2.x in the same dicts on its _World
# object (not tested). Registering a group there is what lets
# dist.broadcast(src=...) and get_rank(group) translate ranks, and
# destroy_process_group(group) forget it.

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


def register_group(pg, name, globals_by_rank, store):
    pg_map, pg_names, group_ranks = _registry()
    pg_map[pg] = (dist.Backend("xccl"), store)
    pg_names[pg] = name
    group_ranks[pg] = {g: r for r, g in enumerate(globals_by_rank)}
