"""from_env.py — one rank of a job started by a real launcher (tests/launch/run.sh):
xccl.Comm.from_env() must find rank, size and rendezvous by itself, and an
all-reduce of rank + 1 must sum to size * (size + 1) / 2 on every rank."""
import numpy as np

import xccl

c = xccl.Comm.from_env()
a = np.full(1000, c.rank + 1, np.float32)
c.all_reduce(a)
assert (a == c.size * (c.size + 1) / 2).all(), f"rank {c.rank}: all-reduce gave {a[:4]}..."
print(f"rank {c.rank} of {c.size}: ok", flush=True)
