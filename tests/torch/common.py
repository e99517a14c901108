"""Shared by the torch tests: each runs as one torchrun job (tests/torch/launch.py).

A rank that passes calls passed(text); the launcher then finds
$TORCH_XCCL_TEST_OUT/rank<R>.pass and prints it. A rank that fails raises
(the traceback is in the job's output) or calls failed(text).
"""
import os
import sys

import torch
import torch.distributed as dist

import xccl.torch  # noqa: F401  registers "xcl"
from xccl.torch import BACKEND  # "xcl"

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


def say(*args):
    print("[rank %d/%d]" % (RANK, WORLD), *args, flush=True)


def _write(kind, text):
    out = os.environ.get("TORCH_XCCL_TEST_OUT")
    if out:
        with open(os.path.join(out, "rank%d.%s" % (RANK, kind)), "w") as f:
            f.write(text + "\n")


def passed(text="ok"):
    _write("pass", text)
    say("PASS", text)


def failed(text):
    _write("fail", text)
    say("FAIL", text)
    sys.exit(1)


def init_pair(first="gloo", timeout_s=60):
    """The default group with one backend and a group of every rank with the
    other: returns (xccl group, gloo group)."""
    from datetime import timedelta
    dist.init_process_group(first, timeout=timedelta(seconds=timeout_s))
    other = BACKEND if first == "gloo" else "gloo"
    group = dist.new_group(backend=other, timeout=timedelta(seconds=timeout_s))
    if first == "gloo":
        return group, dist.group.WORLD
    return dist.group.WORLD, group
