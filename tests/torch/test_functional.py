"""torch.distributed._functional_collectives over the backend (--backend,
default "xcl"; the default group is gloo), eagerly and inside torch.compile
(--compiler, default inductor; aot_eager or none to choose):

  all_reduce           sum, avg and max, float32; sum int64
  all_gather_single    (all_gather_tensor's new name) along dim 0 and dim 1
  reduce_scatter_single (reduce_scatter_tensor's) sum along dim 0 and dim 1
  all_to_all_single    even (no split sizes) and uneven: rank r sends
                       (r + d) % 3 + 1 rows to rank d
  *_coalesced          all_reduce, all_gather and reduce_scatter of two
                       tensors at once (the backend's
                       allgather_into_tensor_coalesced and
                       reduce_scatter_tensor_coalesced)

Every result is checked, bit for bit, against values computed here: the
inputs are small integers in float32, so any order of summation gives the
same sum, and an average over 2 or 4 ranks divides by a power of two.
"""
import os
import sys
import time

# One compile thread: on a 2-core runner inductor's pool of compile workers
# costs more to start than it saves (4 ranks, cold cache: 46 s against 52 s).
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common2 import RANK, WORLD, failed, init, parse_args, passed, say  # noqa: E402

# The names torch 2.13 prefers; older torch has only the *_tensor ones.
all_gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
reduce_scatter = getattr(funcol, "reduce_scatter_single", None) or funcol.reduce_scatter_tensor
all_gather_co = getattr(funcol, "all_gather_single_coalesced", None) or funcol.all_gather_into_tensor_coalesced
reduce_scatter_co = (getattr(funcol, "reduce_scatter_single_coalesced", None)
                     or funcol.reduce_scatter_tensor_coalesced)


def value(r, shape, dtype=torch.float32):
    """Rank r's input: small integers, different on every rank."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.int64).reshape(shape) % 7 * (r + 1) + r).to(dtype)


def a2a_split(src, dst):
    return (src + dst) % 3 + 1


def a2a_input(r):
    """Rank r's uneven all_to_all input: to rank d, a2a_split(r, d) rows of 3,
    each row 100 r + 10 d + its index."""
    rows = []
    for d in range(WORLD):
        for i in range(a2a_split(r, d)):
            rows.append(torch.full((3,), float(100 * r + 10 * d + i)))
    return torch.stack(rows)


def inputs(r=RANK):
    """Rank r's inputs."""
    return {"x": value(r, (4, 6)), "xi": value(r, (4, 6), torch.int64), "small": value(r, (3, 2 * WORLD)),
            "big": value(r, (2 * WORLD, 2 * WORLD)), "even": value(r, (2 * WORLD, 3)), "uneven": a2a_input(r)}


def expected():
    """What every collective must give on this rank, computed from every rank's inputs."""
    each = [inputs(r) for r in range(WORLD)]
    xs = torch.stack([e["x"] for e in each])
    big_sum = sum(e["big"] for e in each)
    want = {
        "ar_sum": xs.sum(0) * 2 + WORLD, "ar_avg": xs.sum(0) / WORLD, "ar_max": xs.max(0).values,
        "ar_int": sum(e["xi"] for e in each),
        "ag0": torch.cat([e["small"] for e in each], 0), "ag1": torch.cat([e["small"] for e in each], 1),
        "rs0": big_sum.chunk(WORLD, 0)[RANK], "rs1": big_sum.chunk(WORLD, 1)[RANK],
        "a2a": torch.cat([e["even"].chunk(WORLD, 0)[RANK] for e in each]),
    }
    rows = []
    for s in range(WORLD):
        before = sum(a2a_split(s, d) for d in range(RANK))
        rows.append(each[s]["uneven"][before:before + a2a_split(s, RANK)])
    want["a2a_uneven"] = torch.cat(rows)
    want["co_ar"] = [xs.sum(0), sum(e["small"] for e in each)]
    want["co_ag"] = [torch.cat([e["x"] for e in each]), torch.cat([e["even"] for e in each])]
    want["co_rs"] = [big_sum.chunk(WORLD, 0)[RANK], sum(e["even"] for e in each).chunk(WORLD, 0)[RANK]]
    return want


def collectives(group, t):
    """Every collective on the inputs t; some arithmetic around them, so that
    a compiler has kernels to generate between the communications."""
    out_sizes = [a2a_split(s, RANK) for s in range(WORLD)]
    in_sizes = [a2a_split(RANK, d) for d in range(WORLD)]
    return {
        "ar_sum": funcol.all_reduce(t["x"] * 2 + 1, "sum", group),
        "ar_avg": funcol.all_reduce(t["x"], "avg", group),
        "ar_max": funcol.all_reduce(t["x"], "max", group),
        "ar_int": funcol.all_reduce(t["xi"], "sum", group),
        "ag0": all_gather(t["small"], 0, group),
        "ag1": all_gather(t["small"], 1, group),
        "rs0": reduce_scatter(t["big"], "sum", 0, group),
        "rs1": reduce_scatter(t["big"], "sum", 1, group),
        "a2a": funcol.all_to_all_single(t["even"], None, None, group),
        "a2a_uneven": funcol.all_to_all_single(t["uneven"], out_sizes, in_sizes, group),
        "co_ar": funcol.all_reduce_coalesced([t["x"], t["small"]], "sum", group),
        "co_ag": all_gather_co([t["x"], t["even"]], group),
        "co_rs": reduce_scatter_co([t["big"], t["even"]], "sum", [0, 0], group),
    }


def check(label, got, want):
    problems = []
    for k, w in want.items():
        g = got[k]
        pairs = zip(g, w) if isinstance(w, list) else [(g, w)]
        for i, (gi, wi) in enumerate(pairs):
            gi = funcol.wait_tensor(gi) if isinstance(gi, funcol.AsyncCollectiveTensor) else gi
            if gi.shape != wi.shape or gi.dtype != wi.dtype or not torch.equal(gi, wi):
                problems.append("%s %s%s: got %s %s %s, want %s %s %s" % (
                    label, k, "[%d]" % i if isinstance(w, list) else "", tuple(gi.shape), gi.dtype,
                    gi.reshape(-1)[:6].tolist(), tuple(wi.shape), wi.dtype, wi.reshape(-1)[:6].tolist()))
    return problems


def main():
    a = parse_args(lambda ap: ap.add_argument("--compiler", default="inductor",
                                              help="torch.compile's backend (inductor, aot_eager), or none"))
    init()
    group = dist.new_group(backend=a.backend)
    want = expected()
    problems = check("eager", collectives(group, inputs()), want)
    notes = ["eager"]
    if a.compiler != "none":
        torch._dynamo.config.cache_size_limit = 4
        fn = torch.compile(lambda t: collectives(group, t), backend=a.compiler, fullgraph=True)
        for run in range(2):  # the first compiles; the second runs the compiled code again
            start = time.monotonic()
            problems += check("%s run %d" % (a.compiler, run + 1), fn(inputs()), want)
            took = time.monotonic() - start
            say("%s run %d took %.2f s" % (a.compiler, run + 1, took))
            notes.append("%s run %d %.1f s" % (a.compiler, run + 1, took))
    dist.barrier()
    if problems:
        failed("; ".join(problems[:6]) + ("; and %d more" % (len(problems) - 6) if len(problems) > 6 else ""))
    passed("%d ranks over %s: every functional collective checked: %s" % (WORLD, a.backend, ", ".join(notes)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
