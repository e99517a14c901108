#!/usr/bin/env python3
"""A user's install of the torch backend, as the README gives it:
``cmake --install`` of the C library, ``pip install ./python`` into an
environment with torch, then
``import torch.distributed; import xccl.torch``, which builds the extension
against that torch (torch.utils.cpp_extension) and registers "xcl".

    test_pip_install.py BUILD_DIR SOURCE_DIR [CMAKE]

Run with the interpreter whose torch to build for (the torch 2.x venv). It
  1. installs the build into a temporary prefix (cmake --install), and
     pip-installs a copy of python/ into a temporary --target (pip's own
     build isolation, as a user's plain command; setuptools comes from the
     package registry or pip's cache);
  2. imports xccl.torch from there in a fresh interpreter that finds
     <prefix>/lib/libxccl.so.0 through LD_LIBRARY_PATH only (and xccl.h
     beside it, in <prefix>/include): the extension must be built
     into XCCL_TORCH_EXT_DIR, for this torch, and a one-rank all_reduce run
     on it;
  3. checks the one-sentence refusals: an interpreter without torch, and a
     torch older than 1.13 (torch.__version__ set back before the import).
Prints "N passed, N failed" at the end.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
import sys, torch, torch.distributed as dist
import xccl.torch
assert dist.Backend.XCL == "xcl", dist.Backend.XCL
dist.init_process_group("xcl", store=dist.HashStore(), rank=0, world_size=1)
t = torch.arange(4, dtype=torch.float32)
dist.all_reduce(t)
assert t.tolist() == [0, 1, 2, 3], t
dist.destroy_process_group()
print(xccl.torch._C.__file__)
"""

OLD_TORCH = r"""
import torch
torch.__version__ = "1.12.1"
import xccl.torch
"""


def run(cmd, env, timeout):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def main():
    build, source = sys.argv[1], sys.argv[2]
    cmake = sys.argv[3] if len(sys.argv) > 3 else "cmake"
    passed, failed = 0, 0

    def check(ok, what, detail=""):
        nonlocal passed, failed
        print("%s: %s%s" % ("ok" if ok else "FAIL", what, ("\n" + detail) if not ok and detail else ""), flush=True)
        passed, failed = passed + ok, failed + (not ok)

    with tempfile.TemporaryDirectory(prefix="xccl-pip-") as tmp:
        prefix = os.path.join(tmp, "prefix")
        r = run([cmake, "--install", build, "--prefix", prefix], dict(os.environ), 300)
        check(r.returncode == 0, "cmake --install --prefix", r.stdout + r.stderr)
        libs = glob.glob(os.path.join(prefix, "**", "libxccl.so.0"), recursive=True)
        if r.returncode != 0 or not libs:
            print("%d passed, %d failed" % (passed, failed + 1))
            return 1
        libdir = os.path.dirname(libs[0])
        src = os.path.join(tmp, "src")  # a copy: the build leaves nothing in the source tree
        shutil.copytree(os.path.join(source, "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "_paths.py"))
        target = os.path.join(tmp, "site")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XCCL_LIBRARY", "LD_LIBRARY_PATH")}
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1")
        r = run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", target, src], env, 600)
        check(r.returncode == 0, "pip install ./python", r.stdout + r.stderr)
        if r.returncode != 0:
            print("%d passed, %d failed" % (passed, failed))
            return 1

        ext = os.path.join(tmp, "ext")
        env.update(PYTHONPATH=target, LD_LIBRARY_PATH=libdir, XCCL_TORCH_EXT_DIR=ext, LOCAL_RANK="0")
        r = run([sys.executable, "-c", PROBE], env, 600)
        lines = r.stdout.split()
        check(r.returncode == 0, "import xccl.torch builds the extension and runs an all_reduce",
              r.stdout + r.stderr)
        if r.returncode == 0:
            check(lines[-1].startswith(ext), "the extension was built into XCCL_TORCH_EXT_DIR: %s" % lines[-1])
            check("building it with torch.utils.cpp_extension" in r.stderr, "the build said so on stderr",
                  r.stderr)

        r = run([sys.executable, "-c", OLD_TORCH], env, 120)
        check(r.returncode != 0 and "needs torch 1.13 or later" in r.stderr and "1.12.1" in r.stderr,
              "a torch older than 1.13 is refused in one sentence naming both versions", r.stderr)

        bare = shutil.which("python3")
        if bare and run([bare, "-c", "import torch"], env, 60).returncode != 0:
            r = run([bare, "-c", "import xccl.torch"], env, 60)
            check(r.returncode != 0 and "xccl.torch needs torch 1.13 or later" in r.stderr,
                  "an interpreter without torch is told so (%s)" % bare, r.stderr)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
