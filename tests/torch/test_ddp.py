"""DistributedDataParallel training, 50 steps on synthetic data, once over
gloo and once over xccl in the same job, then once in one process on the
whole batch (rank 0). The parameters after training must be
  - the same on every rank (DDP keeps them in sync),
  - xccl's equal to gloo's: bit for bit on 2 ranks (a sum of two terms has one
    value), within 1e-6 relative on more (the two sum in different orders),
  - equal within float32 tolerance to the single process's.
Small buckets, so several all_reduces are in flight at once.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import RANK, WORLD, failed, init_pair, passed, say  # noqa: E402

STEPS = 50
BATCH = 48  # the whole batch; each rank takes BATCH / WORLD of it


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 4))


def data():
    g = torch.Generator().manual_seed(99)
    x = torch.randn(STEPS, BATCH, 16, generator=g)
    y = torch.randn(STEPS, BATCH, 4, generator=g)
    return x, y


def train(model, x, y, rows):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[step, rows]), y[step, rows])
        loss.backward()
        opt.step()
    return loss.item()


def flat(model):
    m = model.module if isinstance(model, DDP) else model
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def main():
    xg, gg = init_pair("gloo")
    x, y = data()
    b = BATCH // WORLD
    rows = slice(RANK * b, (RANK + 1) * b)
    result = {}
    for name, group in (("gloo", gg), ("xccl", xg)):
        ddp = DDP(make_model(), process_group=group, bucket_cap_mb=0.005)
        loss = train(ddp, x, y, rows)
        result[name] = flat(ddp)
        say("%s: final loss %.6f" % (name, loss))
    problems = []
    # Every rank holds the same parameters (compared over gloo).
    for name, p in result.items():
        everyone = [torch.empty_like(p) for _ in range(WORLD)]
        dist.all_gather(everyone, p, group=gg)
        if not all(torch.equal(e, p) for e in everyone):
            problems.append("%s: the ranks' parameters differ" % name)
    d = rel(result["xccl"], result["gloo"])
    if WORLD <= 2:
        if not torch.equal(result["xccl"], result["gloo"]):
            problems.append("xccl and gloo differ (max relative %.3g), bit for bit expected" % d)
    elif d > 1e-6:
        problems.append("xccl and gloo differ by %.3g relative (1e-6 allowed)" % d)
    single = float("nan")
    if RANK == 0:
        model = make_model()
        train(model, x, y, slice(0, BATCH))
        single = rel(result["xccl"], flat(model))
        if single > 1e-5:
            problems.append("xccl and one process on the whole batch differ by %.3g relative (1e-5 allowed)" % single)
    dist.barrier(group=gg)
    if problems:
        failed("; ".join(problems))
    passed("%d steps, %d ranks: xccl vs gloo max relative %.3g%s, %s" % (
        STEPS, WORLD, d, " (bit for bit)" if d == 0 else "",
        "vs one process on the whole batch %.3g" % single if RANK == 0 else "(rank 0 compares with one process)"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
