"""Helpers for the torch 2.x tests (test_parallel, test_functional,
test_groups2), beside common.py's passed/failed/say.

Each of those scripts takes --backend NAME (default xccl.torch.BACKEND,
"xcl"): the backend it checks against gloo. --backend gloo runs the same
script with gloo in both places, which is how they were written before the
backend existed, and shows what gloo itself does.
"""
import argparse
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BACKEND, RANK, WORLD, failed, passed, say  # noqa: E402,F401

TIMEOUT_S = 60


def parse_args(extra=None):
    """--backend, plus the positional arguments extra(ap) adds."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default=BACKEND, help="the backend under test, against gloo")
    if extra:
        extra(ap)
    return ap.parse_args()


def init(timeout_s=TIMEOUT_S):
    """The default group is gloo (on the CPU); the backend under test gets
    groups and meshes of its own."""
    dist.init_process_group("cpu:gloo", timeout=timedelta(seconds=timeout_s))


def rel(a, b):
    """The largest difference relative to the largest magnitude of b."""
    scale = b.abs().max().item()
    return (a - b).abs().max().item() / (scale if scale else 1.0)


def compare(label, got, want, group_size):
    """got (the backend under test) against want (gloo), two flat tensors:
    bit for bit where every reduction has at most two terms (a + b is b + a,
    whatever the order), else within 1e-6 relative. Returns a problem, or
    None, and the relative difference."""
    d = rel(got, want)
    if group_size <= 2:
        if not torch.equal(got, want):
            return "%s differs from gloo (max relative %.3g), bit for bit expected" % (label, d), d
    elif d > 1e-6:
        return "%s differs from gloo by %.3g relative (1e-6 allowed)" % (label, d), d
    return None, d


def same_everywhere(label, t, group=None):
    """A problem if t differs between the ranks of group (compared over gloo)."""
    n = dist.get_world_size(group)
    everyone = [torch.empty_like(t) for _ in range(n)]
    dist.all_gather(everyone, t, group=group)
    if not all(torch.equal(e, t) for e in everyone):
        return "%s: the ranks' values differ" % label
    return None


def expect_raise(what, fn, *words, kinds=(RuntimeError, ValueError, TypeError)):
    """Calls fn, which must raise one of kinds with each of words in its text;
    returns the text."""
    try:
        fn()
    except kinds as e:
        text = "%s: %s" % (type(e).__name__, e)
        for w in words:
            if w not in text:
                failed("%s raised, but without %r: %s" % (what, w, text))
        return text
    failed("%s did not raise" % what)


def finish(text):
    """passed(text), then leave at once: skips the teardown of groups whose
    peer is gone (and torch's atexit hooks, which would wait on them)."""
    passed(text)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
