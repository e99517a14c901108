"""torch 2.x parallelism over the backend, each trained a few steps on the CPU
once over gloo and once over the backend under test (--backend, default
"xcl") in the same job; the default group is gloo.

  ddp   DistributedDataParallel with a comm hook that averages each bucket
        with dist.all_reduce(async_op=True).get_future().then(...): the
        Work's future must complete with the reduced tensor.
  fsdp  FSDP2 (fully_shard on a 1-D mesh of every rank, the backend picked
        by init_device_mesh's backend_override): all_gather_into_tensor and
        reduce_scatter_tensor with ReduceOp.AVG; then once more with a
        gradient divide factor of 2 * WORLD, which FSDP2 sends as
        PREMUL_SUM(1 / factor) (gloo has no PREMUL_SUM: its run divides
        after a SUM instead, set_force_sum_reduction_for_comms).
  mesh  a 2-D DeviceMesh (dp = WORLD / 2, tp = 2): tensor parallel
        (ColwiseParallel, RowwiseParallel) on "tp", fully_shard on "dp".

The parameters after training (whole, gathered by the same backend) must be
the same on every rank and equal gloo's: bit for bit where each reduction
has at most two terms (any mesh dimension of size 2: a + b is b + a; and
multiplying by a power of two is exact), else within 1e-6 relative.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common2 import RANK, WORLD, compare, failed, init, parse_args, passed, same_everywhere, say  # noqa: E402

STEPS = 6
BATCH = 16  # the whole batch; each data-parallel rank takes its share


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 8),
                               torch.nn.Tanh(), torch.nn.Linear(8, 4))


def data():
    g = torch.Generator().manual_seed(99)
    return torch.randn(STEPS, BATCH, 8, generator=g), torch.randn(STEPS, BATCH, 4, generator=g)


def train(model, rows, steps=STEPS):
    x, y = data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[step, rows]), y[step, rows])
        loss.backward()
        opt.step()
    return loss.item() if not isinstance(loss, DTensor) else loss.full_tensor().item()


def flat(model):
    """Every parameter, whole (a DTensor gathered by its own mesh's backend)."""
    parts = []
    for p in model.parameters():
        p = p.detach()
        if isinstance(p, DTensor):
            p = p.full_tensor()
        parts.append(p.reshape(-1))
    return torch.cat(parts)


def share(n_dp, dp_rank):
    b = BATCH // n_dp
    return slice(dp_rank * b, (dp_rank + 1) * b)


def run_ddp(backend):
    group = dist.new_group(backend=backend)
    hooked = []

    def hook(_state, bucket):
        # The average, through the Work's future; the divide by a power of two is exact.
        buf = bucket.buffer().div_(WORLD)
        fut = dist.all_reduce(buf, group=group, async_op=True).get_future()

        def done(f):
            hooked.append(1)
            return f.value()[0]
        return fut.then(done)

    model = DDP(make_model(), process_group=group, bucket_cap_mb=0.001)
    model.register_comm_hook(None, hook)
    loss = train(model, share(WORLD, RANK))
    if not hooked:
        failed("ddp over %s: the comm hook never ran" % backend)
    return flat(model.module), loss, WORLD


def run_fsdp(backend, premul):
    mesh = init_device_mesh("cpu", (WORLD,), mesh_dim_names=("dp",), backend_override={"dp": backend})
    model = make_model()
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if premul:
        # 2 * WORLD is not the group's size, so FSDP2 asks for PREMUL_SUM(1 / factor).
        model.set_gradient_divide_factor(2.0 * WORLD)
        if backend == "gloo":
            model.set_force_sum_reduction_for_comms(True)
    loss = train(model, share(WORLD, RANK))
    return flat(model), loss, WORLD


def run_mesh(backend):
    dp = WORLD // 2
    mesh = init_device_mesh("cpu", (dp, 2), mesh_dim_names=("dp", "tp"),
                            backend_override={"dp": backend, "tp": backend})
    model = make_model()
    parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    if dp > 1:
        fully_shard(model, mesh=mesh["dp"])
    loss = train(model, share(dp, mesh.get_local_rank("dp")))
    return flat(model), loss, 2


def main():
    a = parse_args()
    init()
    modes = [("ddp", run_ddp), ("fsdp", lambda b: run_fsdp(b, False)), ("fsdp_premul", lambda b: run_fsdp(b, True))]
    if WORLD % 2 == 0:
        modes.append(("mesh", run_mesh))
    problems, notes = [], []
    for name, fn in modes:
        result = []
        for backend in ("gloo", a.backend):
            start = time.monotonic()
            try:
                params, loss, n = fn(backend)
            except Exception as e:  # one mode's failure should not hide the others'
                problems.append("%s over %s raised %s: %s" % (name, backend, type(e).__name__, str(e)[:300]))
                say("%s over %s raised:" % (name, backend), repr(e))
                break
            result.append(params)
            say("%s over %s: loss %.6f in %.2f s" % (name, backend, loss, time.monotonic() - start))
            p = same_everywhere("%s over %s" % (name, backend), params)
            if p:
                problems.append(p)
        if len(result) < 2:
            continue
        p, d = compare(name, result[1], result[0], n)
        if p:
            problems.append(p)
        notes.append("%s %s" % (name, "bit for bit" if d == 0 else "%.3g relative" % d))
        dist.barrier()
    if problems:
        failed("; ".join(problems))
    passed("%d ranks, %d steps each, %s vs gloo: %s" % (WORLD, STEPS, a.backend, ", ".join(notes)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
