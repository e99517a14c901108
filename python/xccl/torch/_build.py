"""Builds xccl.torch._C_t<major>_<minor> on first import where no prebuilt
module for this torch is present (a pip install of the Python package, or a
build tree made for another torch), with torch.utils.cpp_extension.

It needs xccl.h and libxccl.so.0, looked for in this order:
  header: $XCCL_INCLUDE_DIR, <library dir>/../include, $XCCL_HOME/include,
          the source tree this file sits in (include/), /usr/local/include,
          /usr/include; xccl_version.h beside it, else in the same places
          or <library dir>/include (a build tree's);
  library: $XCCL_LIBRARY (a file), the one the xccl Python package loads,
          $XCCL_HOME/lib, the source tree's build/default, /usr/local/lib,
          /usr/lib/x86_64-linux-gnu, /usr/lib.
The build goes to $XCCL_TORCH_EXT_DIR, else ~/.cache/xccl/torch_ext/<torch
and Python versions>; torch rebuilds it when the sources or flags change,
and ranks that import at once wait for one build (torch's lock file).
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = ["ProcessGroupXCCL.cpp", "ops.cpp", "coalesced.cpp", "p2p.cpp", "failure.cpp", "elastic.cpp",
            "bindings.cpp"]
_SONAME = "libxccl.so.0"


def _find_library():
    env = os.environ.get("XCCL_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise ImportError("xccl.torch: XCCL_LIBRARY=%r is not a file; point it at libxccl.so.0" % env)
        return os.path.realpath(env)
    try:
        from .. import _lib  # the xccl Python package, where it is installed beside this one
        path = _lib.library_path()
        if os.path.isabs(path) and os.path.isfile(path):
            return path
    except Exception:  # no such package here, or it could not load the library: look ourselves
        pass
    dirs = []
    if os.environ.get("XCCL_HOME"):
        dirs.append(os.path.join(os.environ["XCCL_HOME"], "lib"))
    dirs += [os.path.normpath(os.path.join(_HERE, "..", "..", "..", "build", "default")),
             "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib"]
    for d in dirs:
        path = os.path.join(d, _SONAME)
        if os.path.isfile(path):
            return os.path.realpath(path)
    raise ImportError("xccl.torch: no prebuilt extension, and libxccl.so.0 was not found to build one (looked in "
                      "%s). Set XCCL_LIBRARY to its path, or XCCL_HOME to the prefix xccl was installed to."
                      % ", ".join(dirs))


def _find_include(libdir):
    dirs = []
    if os.environ.get("XCCL_INCLUDE_DIR"):
        dirs.append(os.environ["XCCL_INCLUDE_DIR"])
    dirs.append(os.path.normpath(os.path.join(libdir, "..", "include")))
    if os.environ.get("XCCL_HOME"):
        dirs.append(os.path.join(os.environ["XCCL_HOME"], "include"))
    dirs += [os.path.normpath(os.path.join(_HERE, "..", "..", "..", "include")), "/usr/local/include", "/usr/include"]
    header = next((d for d in dirs if os.path.isfile(os.path.join(d, "xccl.h"))), None)
    if header is None:
        raise ImportError("xccl.torch: no prebuilt extension, and xccl.h was not found to build one (looked in %s). "
                          "Set XCCL_INCLUDE_DIR to the directory that holds it." % ", ".join(dirs))
    # xccl_version.h, which xccl.h includes, is installed beside it; a source
    # tree's include/ lacks it (CMake writes it into <build>/include).
    dirs = [header] + dirs + [os.path.join(libdir, "include")]
    version = next((d for d in dirs if os.path.isfile(os.path.join(d, "xccl_version.h"))), None)
    if version is None:
        raise ImportError("xccl.torch: xccl_version.h (which xccl.h includes) was not found beside %s nor in %s; "
                          "it is written into <build>/include by CMake. Set XCCL_INCLUDE_DIR to an installed "
                          "include directory." % (header, ", ".join(dirs[1:])))
    return [header] if version == header else [header, version]


def _cache_dir():
    import torch
    env = os.environ.get("XCCL_TORCH_EXT_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = "torch-%s-py%d%d" % (torch.__version__, sys.version_info[0], sys.version_info[1])
    return os.path.join(base, "xccl", "torch_ext", tag)


def load(name):
    """Builds (once) and imports the module name (_C_t2_13) for this torch."""
    from torch.utils import cpp_extension
    lib = _find_library()
    libdir = os.path.dirname(lib)
    include = _find_include(libdir)
    build_dir = _cache_dir()
    os.makedirs(build_dir, exist_ok=True)
    if os.environ.get("LOCAL_RANK", "0") == "0":
        print("xccl.torch: no prebuilt extension beside %s; building it with torch.utils.cpp_extension into %s "
              "(once; about a minute)" % (_HERE, build_dir), file=sys.stderr, flush=True)
    return cpp_extension.load(
        name=name,
        sources=[os.path.join(_HERE, "csrc", s) for s in _SOURCES],
        extra_include_paths=include + [os.path.join(_HERE, "csrc")],
        extra_cflags=["-O2", "-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        extra_ldflags=[lib, "-Wl,-rpath," + libdir],
        build_directory=build_dir,
        verbose=False)

