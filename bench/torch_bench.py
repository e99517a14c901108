#!/usr/bin/env python3
"""xccl through torch.distributed against gloo, and against xccl-perf.

    build/torch-venv/bin/python bench/torch_bench.py [--build build/default] [--ranks 2 4] [--rounds 3]
                               [--min 1K] [--max 128M] [--factor 4] [--ddp-steps 10]
    (or /usr/bin/python3, Debian's torch 1.13: no FSDP2 there)

For each rank count, one torchrun job (this script with --worker) that
  - times torch.distributed.all_reduce (float32, sum, in place) over an xccl
    group and a gloo group, alternating backend at every size, for --rounds
    rounds, and reports each size's best round as bus bandwidth
    (bytes * 2(n-1)/n / time, the convention of xccl-perf and nccl-tests);
  - times DistributedDataParallel training steps of a 25.2M-parameter MLP
    (1024-4096-4096-1024, batch 32 per rank) with each backend, alternating,
    and on torch 2.x the same model's steps under FSDP2 (fully_shard per
    layer and at the root, on a DeviceMesh over each backend's group);
then runs `xccl-run -n N xccl-perf allreduce` at the same sizes, and prints
one table per rank count: busbw of xccl via torch, gloo, xccl-perf, and the
ratios the targets are stated in (xccl/gloo >= 3 from 1 MiB; xccl via
torch / xccl-perf >= 0.8).

Needs the build tree's python/ (xccl.torch) and tools/; sets
XCCL_SOCKET_IFNAME=lo unless set (one host). Long: the full run (2 and 4
ranks, 1 KiB-128 MiB, 3 rounds) takes minutes on a small machine; run it
when nothing else is. --quick is a smoke run (2 ranks, up to 1 MiB, 1 round,
2 DDP steps).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def human(n):
    for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= m and n % m == 0:
            return "%d%s" % (n // m, unit)
    return str(n)


def sizes_of(a):
    out, s = [], a.min
    while s <= a.max:
        out.append(s)
        s *= a.factor
    if out[-1] != a.max:
        out.append(a.max)
    return out


# ---- worker (one rank of the torchrun job) -----------------------------------

def worker(a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import xccl.torch

    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"xccl": dist.new_group(backend=xccl.torch.BACKEND), "gloo": dist.group.WORLD}
    torch.set_num_threads(1)

    def slowest(seconds):
        t = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
        return t.item()

    def time_allreduce(g, buf, iters):
        time.sleep(a.settle)  # let the other backend's threads go quiet (see --settle)
        for _ in range(5):
            dist.all_reduce(buf, group=g)
        dist.barrier(group=groups["gloo"])
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf, group=g)
        return slowest((time.perf_counter() - start) / iters)

    best = {}
    order = ["xccl", "gloo"]
    for rnd in range(a.rounds):
        for size in sizes_of(a):
            buf = torch.ones(size // 4, dtype=torch.float32)
            iters = max(5, min(500, (64 << 20) // size))
            for name in order:
                t = time_allreduce(groups[name], buf, iters)
                key = (name, size)
                best[key] = min(best.get(key, t), t)
            order.reverse()  # alternate which backend goes first
        if rank == 0:
            print("round %d of %d done" % (rnd + 1, a.rounds), file=sys.stderr, flush=True)

    ddp = {}
    if a.ddp_steps > 0:
        def make():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                       torch.nn.ReLU(), torch.nn.Linear(4096, 1024))
        params = sum(p.numel() for p in make().parameters())
        x, y = torch.randn(32, 1024), torch.randn(32, 1024)

        def median_steps(wrap):
            """The median step time of the model wrapped by wrap(model,
            group) for each backend, alternating which goes first."""
            models = {}
            for name in ("xccl", "gloo"):
                m = wrap(make(), groups[name])
                models[name] = (m, torch.optim.SGD(m.parameters(), lr=1e-3))
            times = {"xccl": [], "gloo": []}
            for step in range(a.ddp_steps + 2):  # the first two are warm-up
                for name in (("xccl", "gloo") if step % 2 == 0 else ("gloo", "xccl")):
                    m, opt = models[name]
                    dist.barrier(group=groups["gloo"])
                    start = time.perf_counter()
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(m(x), y).backward()
                    opt.step()
                    t = slowest(time.perf_counter() - start)
                    if step >= 2:
                        times[name].append(t)
            return {name: sorted(v)[len(v) // 2] for name, v in times.items()}

        ddp = dict(median_steps(lambda m, g: DDP(m, process_group=g)), params=params)
        try:
            from torch.distributed.device_mesh import DeviceMesh
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # torch 1.13: no FSDP2
            fully_shard = None
        if fully_shard is not None:
            def fsdp2(m, g):
                mesh = DeviceMesh.from_group(g, "cpu")
                for layer in m:
                    if isinstance(layer, torch.nn.Linear):
                        fully_shard(layer, mesh=mesh)
                return fully_shard(m, mesh=mesh)
            med = median_steps(fsdp2)
            ddp["fsdp2_xccl"], ddp["fsdp2_gloo"] = med["xccl"], med["gloo"]

    if rank == 0:
        res = {"nranks": n, "allreduce": [{"backend": k[0], "size": k[1], "time_s": v} for k, v in best.items()],
               "ddp": ddp}
        with open(a.out, "w") as f:
            json.dump(res, f)
    dist.barrier(group=groups["gloo"])
    dist.destroy_process_group()


# ---- driver ------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch_job(a, n, env):
    with tempfile.TemporaryDirectory(prefix="xccl-torch-bench-") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--rdzv_backend", "c10d",
               "--rdzv_endpoint", "127.0.0.1:%d" % free_port(), "--rdzv_id", uuid.uuid4().hex, "--nnodes", "1",
               "--nproc_per_node", str(n), "--redirects", "1", "--tee", "1", "--log_dir", os.path.join(tmp, "logs"),
               os.path.abspath(__file__), "--worker"]
        # The worker's options go through the environment: torchrun 2.x's
        # parser takes --max after the script for its own --max-restarts.
        env = dict(env, TORCH_BENCH_ARGS=json.dumps({"out": out, "rounds": a.rounds, "min": a.min, "max": a.max,
                                                     "factor": a.factor, "ddp_steps": a.ddp_steps,
                                                     "settle": a.settle}))
        subprocess.run(cmd, env=env, check=True, timeout=a.timeout)
        with open(out) as f:
            return json.load(f)


def run_xccl_perf(a, n, env):
    """xccl-perf's busbw by size: its sizes are min * factor^k up to max, and
    max itself (which the torch job times too) gets a run of its own when it
    is off that grid."""
    tools = os.path.join(a.build, "tools")
    out = {}
    for lo, hi in ((a.min, a.max), (a.max, a.max)):
        if a.max in out:
            break
        cmd = [os.path.join(tools, "xccl-run"), "-n", str(n), os.path.join(tools, "xccl-perf"), "allreduce",
               "-b", str(lo), "-e", str(hi), "-f", str(a.factor), "--inplace", "--json"]
        p = subprocess.run(cmd, env=env, check=True, timeout=a.timeout, capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                if r.get("kind") == "result":
                    out[r["size"]] = r["busbw_gbps"]
    return out


def report(n, res, perf):
    f = 2.0 * (n - 1) / n if n > 1 else 1.0
    by = {(r["backend"], r["size"]): r["time_s"] for r in res["allreduce"]}
    sizes = sorted({s for (_, s) in by})
    print("\n## all_reduce, float32 sum in place, %d ranks: bus bandwidth in GB/s (best of the rounds)" % n)
    print("%10s %12s %12s %12s %10s %12s" % ("size", "xccl/torch", "gloo/torch", "xccl-perf", "xccl/gloo",
                                             "torch/perf"))
    for s in sizes:
        bx = s * f / by[("xccl", s)] / 1e9
        bg = s * f / by[("gloo", s)] / 1e9
        bp = perf.get(s)
        print("%10s %12.3f %12.3f %12s %10.2f %12s" % (human(s), bx, bg, "%.3f" % bp if bp else "-", bx / bg,
                                                       "%.2f" % (bx / bp) if bp else "-"))
    d = res.get("ddp")
    if d:
        print("DDP step, %.1fM-parameter MLP, batch 32 per rank: xccl %.1f ms, gloo %.1f ms (xccl/gloo %.2f)"
              % (d["params"] / 1e6, d["xccl"] * 1e3, d["gloo"] * 1e3, d["xccl"] / d["gloo"]))
        if "fsdp2_xccl" in d:
            print("FSDP2 step, the same model: xccl %.1f ms, gloo %.1f ms (xccl/gloo %.2f)"
                  % (d["fsdp2_xccl"] * 1e3, d["fsdp2_gloo"] * 1e3, d["fsdp2_xccl"] / d["fsdp2_gloo"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min", type=parse_size, default=parse_size("1K"))
    ap.add_argument("--max", type=parse_size, default=parse_size("128M"))
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--ddp-steps", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per job")
    ap.add_argument("--settle", type=float, default=0.5,
                    help="seconds of rest before each timing: right after gloo's all_reduce, xccl's measured "
                    "3-4x slower on a 2-core machine for a few hundred ms (and fast again after a 0.5 s pause)")
    ap.add_argument("--no-perf", action="store_true", help="skip xccl-perf")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 ranks, up to 1 MiB, 1 round, 2 DDP steps")
    a = ap.parse_args()
    if a.worker:
        vars(a).update(json.loads(os.environ["TORCH_BENCH_ARGS"]))
        return worker(a)
    if a.quick:
        a.ranks, a.max, a.rounds, a.ddp_steps = [2], parse_size("1M"), 1, 2
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("torch_bench: %s has no torch; run it with the Python that has it (build/torch-venv/bin/python, "
                 "or Debian's /usr/bin/python3)"
                 % sys.executable)
    env = dict(os.environ)
    env.setdefault("XCCL_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.path.join(a.build, "python") + (os.pathsep + env["PYTHONPATH"]
                                                           if env.get("PYTHONPATH") else "")
    print("# torch_bench: ranks %s, %s-%s x%d, %d rounds, %d DDP steps, build %s" % (
        a.ranks, human(a.min), human(a.max), a.factor, a.rounds, a.ddp_steps, a.build), flush=True)
    for n in a.ranks:
        res = run_torch_job(a, n, env)
        perf = {} if a.no_perf else run_xccl_perf(a, n, env)
        report(n, res, perf)
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
