#!/usr/bin/env python3
"""Runs one torch test as a torchrun job and checks what each rank reported.

    launch.py --nproc N [--timeout S] [--pass-ranks 0,2] [--may-fail] [--monitor-interval S] SCRIPT [ARGS...]

torchrun (torch.distributed.run of this interpreter) runs with a c10d
rendezvous on a free loopback port (--standalone would take the fixed
port 29400, which tests running side by side would share), --redirects 1
--tee 1 (torchrun 1.13 fails without them on Python 3.11) and no restarts.
Each rank that passes writes rank<R>.pass in $TORCH_XCCL_TEST_OUT (a fresh
directory). The test passes when torchrun exits 0 (unless --may-fail: a job
where a rank is killed on purpose) and every rank of --pass-ranks (default:
all) wrote its file. The whole job is killed at --timeout.
Exit 77 (CTest: skipped) when this interpreter has no torch.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--pass-ranks", default=None)
    ap.add_argument("--may-fail", action="store_true")
    ap.add_argument("--monitor-interval", type=float, default=1,
                    help="how often torchrun looks at its workers; once one has died it stops the others, so a "
                    "test where a rank dies on purpose gives the survivors time to report")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("skipped: %s has no torch (%s); configure with -DXCCL_TORCH_PYTHON=<a Python that has it>"
              % (sys.executable, e))
        return 77
    ranks = list(range(a.nproc)) if a.pass_ranks is None else [int(r) for r in a.pass_ranks.split(",") if r]
    with tempfile.TemporaryDirectory(prefix="xccl-torch-") as out:
        env = dict(os.environ, TORCH_XCCL_TEST_OUT=out, OMP_NUM_THREADS="1")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--rdzv_backend", "c10d",
               "--rdzv_endpoint", "127.0.0.1:%d" % free_port(), "--rdzv_id", uuid.uuid4().hex,
               "--nnodes", "1", "--nproc_per_node", str(a.nproc), "--redirects", "1", "--tee", "1",
               "--max_restarts", "0", "--monitor_interval", str(a.monitor_interval), "--log_dir", os.path.join(out, "logs"),
               a.script] + a.args
        print("+", " ".join(cmd), flush=True)
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print("FAIL: the job ran past %g s and was killed" % a.timeout, flush=True)
            return 1
        took = time.monotonic() - start
        ok = True
        if rc != 0 and not a.may_fail:
            print("FAIL: torchrun exited %d" % rc)
            ok = False
        for r in ranks:
            path = os.path.join(out, "rank%d.pass" % r)
            if os.path.exists(path):
                with open(path) as f:
                    print("rank %d passed: %s" % (r, f.read().strip()))
            else:
                print("FAIL: rank %d did not report a pass" % r)
                ok = False
        print("%s in %.1f s (torchrun exit %d)" % ("PASS" if ok else "FAIL", took, rc), flush=True)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
