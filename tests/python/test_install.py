"""Both ways of installing the package, into temporary directories:
``cmake --install --prefix`` (the package finds the installed library
through its _paths.py) and ``pip install --no-build-isolation ./python``
(it finds the library through the loader's search)."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

BUILD = os.environ.get("XCCL_TEST_BUILD_DIR")
SOURCE = os.environ.get("XCCL_TEST_SOURCE_DIR")
CMAKE = os.environ.get("XCCL_TEST_CMAKE", "cmake")

pytestmark = pytest.mark.skipif(not BUILD or not SOURCE, reason="XCCL_TEST_BUILD_DIR and XCCL_TEST_SOURCE_DIR are "
                                "not set (run through ctest)")

PROBE = """
import numpy, xccl
with xccl.Comm(1, xccl.get_unique_id(), 0) as c:
    x = numpy.arange(5, dtype=numpy.float32)
    c.all_reduce(x)
    assert x.tolist() == [0, 1, 2, 3, 4]
print(xccl.__file__)
print(xccl.library_path())
"""


def probe(pythonpath, cwd, **env_changes):
    """Imports xccl in a fresh interpreter that sees only pythonpath; returns
    (package file, library file)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XCCL_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(PYTHONPATH=pythonpath, **env_changes)
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    pkg, lib = r.stdout.split()[-2:]
    return pkg, lib


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    dest = tmp_path_factory.mktemp("prefix")
    r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", str(dest)], capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    return dest


def test_cmake_install(prefix, tmp_path):
    inits = glob.glob(str(prefix / "**" / "xccl" / "__init__.py"), recursive=True)
    assert len(inits) == 1, inits
    site = os.path.dirname(os.path.dirname(inits[0]))
    want = os.environ.get("XCCL_TEST_PY_SITE_DIR")
    if want:
        assert os.path.samefile(site, prefix / want)
    assert os.path.exists(os.path.join(site, "xccl", "_paths.py"))
    pkg, lib = probe(site, str(tmp_path))
    assert pkg.startswith(str(prefix)), pkg
    assert lib.startswith(str(prefix)) and "libxccl.so" in lib, lib  # the installed library, not the build's


def test_cmake_install_is_relocatable(prefix, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(prefix, moved, symlinks=True)
    site = os.path.dirname(os.path.dirname(glob.glob(str(moved / "**" / "xccl" / "__init__.py"),
                                                     recursive=True)[0]))
    pkg, lib = probe(site, str(tmp_path))
    assert lib.startswith(str(moved)), lib


def test_pip_install(prefix, tmp_path):
    for module, package in (("pip", "python3-pip"), ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        r = subprocess.run([sys.executable, "-c", "import " + module], capture_output=True, timeout=60)
        if r.returncode != 0:
            pytest.skip("%s has no %s module (Debian: %s)" % (sys.executable, module, package))
    src = tmp_path / "src"  # a copy, so that the build leaves nothing in the source tree
    shutil.copytree(os.path.join(SOURCE, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "_paths.py"))
    target = tmp_path / "site"
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                        "--target", str(target), str(src)], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(target / "xccl" / "__init__.py")
    assert not os.path.exists(target / "xccl" / "_paths.py")  # pip records no path: the loader finds it
    for sub in glob.glob(os.path.join(SOURCE, "python", "xccl", "*", "__init__.py")):
        name = os.path.basename(os.path.dirname(sub))
        assert os.path.exists(target / "xccl" / name / "__init__.py"), "sub-package xccl.%s was not installed" % name
    libdir = os.path.dirname(glob.glob(str(prefix / "**" / "libxccl.so.0"), recursive=True)[0])
    pkg, lib = probe(str(target), str(tmp_path), LD_LIBRARY_PATH=libdir)
    assert pkg.startswith(str(target)), pkg
    assert lib.startswith(libdir), lib
