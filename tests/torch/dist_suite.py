#!/usr/bin/env python3
"""Run PyTorch's own backend suite on xccl's torch.distributed backend.

The suite is torch.testing._internal.distributed.distributed_test
(DistributedTest._DistTestBase): the one torch's test/distributed/
test_distributed_spawn.py runs for gloo, nccl and ucc. That file accepts no
other backend, so this driver does what it does: a TestCase class over
TestDistBackend and _DistTestBase, each test run by --world fresh processes
(rank 0..world-1) that init_process_group(BACKEND) through a file:// store.
They are forked from the driver (--start fork, the default: a spawned rank
imports torch again, 10-30 s a test on a busy 2-core machine instead of
under 1) or spawned as test_distributed_spawn.py does (--start spawn).

  dist_suite.py [--backend xcl|gloo] [--full | -k RE | --list-file F]
                [--out F.json|F.tsv] [--junit F.xml] [--timeout S]
  dist_suite.py --compare [selection]   run gloo, then xcl, and compare
  dist_suite.py --compare-files GLOO.json XCL.json

Without --full, -k or --list-file it runs CI_TESTS below (the short form).
The last line printed is "N passed, N failed, N skipped" (xcl's in compare
mode). Exit status: 1 when a test fails that is not in dist_suite_known.txt
(compare mode: when xcl fails a test gloo passes and that file does not
list it), else 0.

How "xcl" is treated: torch's suite reads BACKEND at import and decides many
skips by looking the name up in DistTestCases' tables, or by comparing it to
the string "gloo". XCL_FEATURES puts "xcl" in the tables gloo is in where the
backend does what the table claims (see there). The string comparisons are
left alone: a test torch runs only for gloo is skipped for xcl, and the
result says so with torch's own reason. Nothing is patched to pass.
--gloo-gates (not for CI) runs those tests on xcl too, to look for bugs.
"""
import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN_FILE = os.path.join(HERE, "dist_suite_known.txt")

# The short form: tests of torch's suite for each collective it runs on CPU
# tensors, point-to-point (tags, any source, the profiler's records),
# barrier, groups and DDP on CPU; all run for gloo and for xcl on 2 ranks
# (none of torch's gloo-only ones). On CPU the suite has no all_to_all or
# reduce_scatter test (MPI or NCCL only) and its DDP tests are mostly GPU.
CI_TESTS = """
test_broadcast test_broadcast_full_group
test_all_reduce_sum test_all_reduce_max test_all_reduce_min test_all_reduce_product
test_all_reduce_sum_async test_all_reduce_sum_complex test_all_reduce_full_group_sum
test_all_reduce_complex_unsupported_ops
test_reduce_sum test_reduce_max test_reduce_full_group_min
test_all_gather test_all_gather_full_group
test_all_gather_coalesced_simple test_all_gather_coalesced_with_empty
test_gather test_gather_checks test_scatter test_scatter_checks
test_send_recv test_send_recv_with_tag test_send_recv_any_source
test_isend test_irecv test_send_recv_torch_profiler
test_barrier test_barrier_full_group
test_get_rank_size_group test_get_rank_size_full_group test_destroy_group
test_destroy_full_group test_get_backend test_Backend_enum_class
test_DistributedDataParallelCPU test_DistributedDataParallel_requires_grad
test_ddp_create_graph test_static_graph_api_cpu
""".split()

# "xcl"'s entries in torch's feature tables (common_distributed.DistTestCases
# and distributed_test's profiling lists): those gloo has and xccl's backend
# does too. Left out: "gpu"/"cuda" (the backend takes CPU tensors only), and
# xcl stays out of DistTestCases.skip_collective (it implements
# allgather_coalesced, any-source receives and the CPU barrier, as gloo).
XCL_FEATURES = {
    "backend_feature": ["ddp", "subgroup", "plugin"],
    # The backend's Work objects carry a profiling title "<name>:<op>".
    "profiling_lists": ["PROFILING_SUPPORTED_BACKENDS",
                        "SEND_RECV_PROFILING_SUPPORTED_BACKENDS"],
}

CLASS_NAME = "TestDistBackendWithSpawn"


def setup_suite():
    """Import torch's suite for os.environ["BACKEND"] and define CLASS_NAME.

    Runs in the driver and again in each spawned rank (module level, below),
    so the class a rank unpickles is the same as the driver's."""
    backend = os.environ["BACKEND"]
    if backend == "xcl":
        import xccl.torch  # noqa: F401  registers "xcl" with torch.distributed
    from torch.testing._internal import common_distributed as cd
    cd.logger.setLevel(logging.WARNING)  # not "Started process ..." per rank and test
    for feature in XCL_FEATURES["backend_feature"] if backend == "xcl" else []:
        cd.DistTestCases.backend_feature[feature].add(backend)
    if os.environ.get("DIST_SUITE_TIMEOUT"):
        cd.TIMEOUT_DEFAULT = int(os.environ["DIST_SUITE_TIMEOUT"])
    # Only now: the suite reads BACKEND and the tables while defining tests.
    # --gloo-gates: its decorators see "gloo" (so torch's gloo-only tests
    # are not skipped), and the tests then run on the real backend.
    gloo_gates = backend != "gloo" and os.environ.get("DIST_SUITE_GLOO_GATES") == "1"
    os.environ["BACKEND"] = "gloo" if gloo_gates else backend
    from torch.testing._internal.distributed import distributed_test as dt
    os.environ["BACKEND"] = dt.BACKEND = backend
    for name in XCL_FEATURES["profiling_lists"] if backend == "xcl" else []:
        getattr(dt, name).append(backend)

    class Suite(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()  # a fresh TEMP_DIR and file:// INIT_METHOD per test
            if os.environ.get("DIST_SUITE_START") == "fork":
                import torch.multiprocessing as mp
                self._start_processes(mp.get_context("fork").Process)
            else:
                self._spawn_processes()  # as test_distributed_spawn.py

        def tearDown(self):
            super().tearDown()
            if os.path.exists(self.file_name):  # the test's FileStore file
                os.remove(self.file_name)

        @classmethod
        def _run(cls, rank, test_name, file_name, pipe, **kwargs):
            # A forked rank has the INIT_METHOD the suite read at import;
            # a spawned one reads this test's, which this makes both do.
            dt.INIT_METHOD = os.environ["INIT_METHOD"]
            super()._run(rank, test_name, file_name, pipe, **kwargs)

        def run_test(self, test_name, parent_pipe):
            # A rank that skips exits with one code for every reason; keep
            # the reason in TEMP_DIR so that the driver can report it.
            test = getattr(self, test_name)

            def keep_skip_reason():
                try:
                    test()
                except unittest.SkipTest as e:
                    path = os.path.join(os.environ["TEMP_DIR"], f"skip.{self.rank}")
                    with open(path, "w") as f:
                        f.write(str(e))
                    raise
            setattr(self, test_name, keep_skip_reason)
            super().run_test(test_name, parent_pipe)

        def _check_return_codes(self, fn, elapsed_time):
            try:
                super()._check_return_codes(fn, elapsed_time)
            except unittest.SkipTest as e:
                path = os.path.join(os.environ["TEMP_DIR"], "skip.0")
                if os.path.exists(path):
                    with open(path) as f:
                        raise unittest.SkipTest(f"{e} ({f.read().strip()})") from None
                raise

    Suite.__name__ = Suite.__qualname__ = CLASS_NAME
    globals()[CLASS_NAME] = Suite
    return Suite


if __name__ == "__mp_main__":  # a rank started by multiprocessing's spawn
    setup_suite()


def short_reason(err_text):
    """The exception line of a (rank's) traceback, with the one after it."""
    lines = [ln.strip() for ln in err_text.splitlines()]
    where = re.findall(r'distributed_test\.py", line (\d+), in (\w+)', err_text)
    where = f" [distributed_test.py:{where[-1][0]} {where[-1][1]}]" if where else ""
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[\w.]*(Error|Exception|Failure)\b", lines[i]):
            more = lines[i + 2] if i + 2 < len(lines) and not lines[i + 1] else ""
            return f"{lines[i]} {more}".strip()[:400] + where
    return next((ln for ln in reversed(lines) if ln), "")[:400]


class Recorder(unittest.TextTestResult):
    """Keeps name -> {status, reason, time, detail} for every test."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = {}
        self._t0 = {}

    def _put(self, test, status, reason="", detail=""):
        name = test.id().split(".")[-1]
        took = round(time.time() - self._t0.get(name, time.time()), 2)
        self.records[name] = dict(status=status, reason=reason, time=took, detail=detail)

    def startTest(self, test):
        self._t0[test.id().split(".")[-1]] = time.time()
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip", reason)

    def addFailure(self, test, err):  # (the suite has no expectedFailure)
        super().addFailure(test, err)
        self._put(test, "fail", short_reason(self.failures[-1][1]), self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "fail", short_reason(self.errors[-1][1]), self.errors[-1][1])


def select(names, args):
    """The tests to run, in the suite's (alphabetical) order."""
    if args.list_file:
        with open(args.list_file) as f:
            wanted = {w for ln in f for w in ln.split("#")[0].split()}
        names = [n for n in names if n in wanted]
    elif not args.full and not args.filter:
        names = [n for n in names if n in set(CI_TESTS)]
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]
    return names


def run_suite(args):
    """Run the selection for one backend in this process; return a report."""
    tmp = tempfile.mkdtemp(prefix="dist_suite.")
    for sub in ("barrier", "test_dir", "init_dir"):
        os.makedirs(os.path.join(tmp, sub))
    os.environ.update(
        BACKEND=args.backend, WORLD_SIZE=str(args.world), TEMP_DIR=tmp,
        INIT_METHOD="file://" + os.path.join(tmp, "init_dir", "shared_init_file"),
        DIST_SUITE_TIMEOUT=str(args.timeout), DIST_SUITE_START=args.start,
        DIST_SUITE_GLOO_GATES="1" if args.gloo_gates else "0")
    # torch's "To execute this test, run ..." line names a command that is not ours
    os.environ.setdefault("PYTORCH_PRINT_REPRO_ON_FAILURE", "0")
    suite_cls = setup_suite()
    loader = unittest.TestLoader()
    names = select(loader.getTestCaseNames(suite_cls), args)
    tests = unittest.TestSuite(suite_cls(n) for n in names)
    print(f"dist_suite: {args.backend}, {args.world} ranks, {len(names)} tests, "
          f"start={args.start}", flush=True)
    t0 = time.time()
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Recorder)
    result = runner.run(tests)
    shutil.rmtree(tmp, ignore_errors=True)
    return dict(backend=args.backend, world=args.world, start=args.start, gloo_gates=args.gloo_gates,
                wall_s=round(time.time() - t0, 1), tests=result.records)


def counts(report):
    statuses = [r["status"] for r in report["tests"].values()]
    return {s: statuses.count(s) for s in ("pass", "fail", "skip")}


def count_line(report):
    c = counts(report)
    return f"{c['pass']} passed, {c['fail']} failed, {c['skip']} skipped"


def write_out(report, path):
    if path.endswith(".tsv"):
        with open(path, "w") as f:
            f.write("test\tstatus\ttime_s\treason\n")
            for name, r in sorted(report["tests"].items()):
                reason = r["reason"].replace("\t", " ").replace("\n", " ")
                f.write(f"{name}\t{r['status']}\t{r['time']}\t{reason}\n")
    else:
        with open(path, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)


def write_junit(report, path):
    c = counts(report)
    suite = ET.Element("testsuite", name=f"dist_suite.{report['backend']}",
                       tests=str(len(report["tests"])), failures=str(c["fail"]),
                       skipped=str(c["skip"]), time=str(report["wall_s"]))
    for name, r in sorted(report["tests"].items()):
        case = ET.SubElement(suite, "testcase", classname=f"{CLASS_NAME}.{report['backend']}",
                             name=name, time=str(r["time"]))
        if r["status"] == "fail":
            ET.SubElement(case, "failure", message=r["reason"]).text = r["detail"]
        elif r["status"] == "skip":
            ET.SubElement(case, "skipped", message=r["reason"])
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def load_known():
    """dist_suite_known.txt: "test_name  why" per line; # starts a comment."""
    known = {}
    if os.path.exists(KNOWN_FILE):
        with open(KNOWN_FILE) as f:
            for ln in f:
                ln = ln.split("#", 1)[0].strip()
                if ln:
                    name, _, why = ln.partition(" ")
                    known[name] = why.strip()
    return known


def compare(gloo, xcl):
    """Print how xcl does on gloo's passes; return the regressions not known."""
    known = load_known()
    g, x = gloo["tests"], xcl["tests"]
    lost = sorted(n for n in g if g[n]["status"] == "pass" and x.get(n, {}).get("status") == "fail")
    skipped = sorted(n for n in g if g[n]["status"] == "pass" and x.get(n, {}).get("status") == "skip")
    gained = sorted(n for n in x if x[n]["status"] == "pass" and g.get(n, {}).get("status") != "pass")
    missing = sorted(n for n in g if n not in x)
    print(f"\n{'backend':8} {'tests':>6} {'pass':>6} {'fail':>6} {'skip':>6} {'wall_s':>8}")
    for rep in (gloo, xcl):
        c = counts(rep)
        print(f"{rep['backend']:8} {len(rep['tests']):6} {c['pass']:6} {c['fail']:6} "
              f"{c['skip']:6} {rep['wall_s']:8}")
    if xcl.get("gloo_gates"):
        print("\nxcl ran with --gloo-gates: torch's gloo-only tests ran on xcl too")
    print(f"\ngloo passes that xcl skips ({len(skipped)}), torch's reason:")
    for n in skipped:
        print(f"  {n}: {x[n]['reason']}")
    if gained:
        print(f"\nxcl passes that gloo does not ({len(gained)}): " + ", ".join(gained))
    if missing:
        print(f"\nnot run for xcl ({len(missing)}): " + ", ".join(missing))
    print(f"\ngloo passes that xcl fails ({len(lost)}):")
    bad = []
    for n in lost:
        tag = f"known: {known[n]}" if n in known else "NOT KNOWN"
        print(f"  {n}: {x[n]['reason']}  [{tag}]")
        if n not in known:
            bad.append(n)
    bad += missing
    print(f"\nregressions not in {os.path.basename(KNOWN_FILE)}: {len(bad)}")
    return bad


def run_child(args, backend, out):
    """Run one backend in its own driver process (BACKEND is read at import)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--backend", backend,
           "--world", str(args.world), "--timeout", str(args.timeout),
           "--start", args.start, "--out", out]
    cmd += ["--gloo-gates"] if args.gloo_gates else []
    cmd += ["--junit", f"{args.junit}.{backend}.xml"] if args.junit else []
    cmd += ["--full"] if args.full else []
    cmd += ["-k", args.filter] if args.filter else []
    cmd += ["--list-file", args.list_file] if args.list_file else []
    rc = subprocess.run(cmd, check=False).returncode
    if not os.path.exists(out):
        sys.exit(f"dist_suite: the {backend} run wrote no results (exit status {rc})")
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["xcl", "gloo"], default="xcl")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("-k", "--filter", help="regex on test names (re.search)")
    p.add_argument("--list-file", help="test names to run, whitespace separated, # comments")
    p.add_argument("--full", action="store_true", help="the whole suite, not the short CI form")
    p.add_argument("--timeout", type=int, default=120, help="seconds per test (torch's default 300)")
    p.add_argument("--start", choices=["spawn", "fork"], default="fork",
                   help="how ranks start: fork (fast) or spawn (as test_distributed_spawn.py)")
    p.add_argument("--gloo-gates", action="store_true",
                   help="xcl: also run the tests torch's suite runs only for gloo "
                   "(its skips that compare BACKEND with \"gloo\" see gloo); not for CI")
    p.add_argument("--out", help="results: .json (with tracebacks) or .tsv")
    p.add_argument("--junit", help="JUnit XML file")
    p.add_argument("--compare", action="store_true", help="run gloo then xcl, and compare")
    p.add_argument("--compare-files", nargs=2, metavar=("GLOO", "XCL"))
    args = p.parse_args()
    try:  # what torch's suite needs; without it CTest reads 77 as skipped
        import expecttest, torch  # noqa: F401
    except ImportError as e:
        print(f"skipped: {sys.executable} cannot run torch's suite ({e})")
        sys.exit(77)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # as launch.py: ranks share the cores

    if args.compare or args.compare_files:
        t0 = time.time()
        if args.compare_files:
            reports = [json.load(open(path)) for path in args.compare_files]
        else:
            with tempfile.TemporaryDirectory(prefix="dist_suite.") as tmp:
                reports = [run_child(args, b, args.out and f"{args.out}.{b}.json"
                                     or os.path.join(tmp, f"{b}.json")) for b in ("gloo", "xcl")]
        gloo, xcl = reports
        if (gloo["backend"], xcl["backend"]) != ("gloo", "xcl"):
            sys.exit("dist_suite: --compare-files wants gloo's results first, then xcl's")
        bad = compare(gloo, xcl)
        print(f"compare wall time {time.time() - t0:.1f} s; xcl's counts:")
        print(count_line(xcl))
        sys.exit(1 if bad else 0)

    report = run_suite(args)
    if args.out:
        write_out(report, args.out)
    if args.junit:
        write_junit(report, args.junit)
    known = load_known() if args.backend == "xcl" else {}
    bad = [n for n, r in report["tests"].items() if r["status"] == "fail" and n not in known]
    print(f"\ndist_suite: {args.backend} wall time {report['wall_s']} s")
    for n in sorted(bad):
        print(f"  FAILED {n}: {report['tests'][n]['reason']}")
    print(count_line(report))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
