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
