"""Every function NVIDIA's nccl.h declares is exported by xccl's libnccl.so.2.

    abi_symbols.py REAL_NCCL_H SHIM_SO [NVIDIA_LIBNCCL_SO]

Reads the declarations from the header (comments and macros removed), the
library's dynamic symbols with `nm -D --defined-only`, and fails naming each
function that is missing, not a function, or where ncclX is not a weak alias
of pncclX as in NCCL. With NVIDIA's library it also lists what that library
exports beyond its header (not required: no public header declares them).
"""
import re
import subprocess
import sys


def header_functions(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # drop preprocessor lines, with their continuations
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return sorted(set(re.findall(r"\b(p?nccl[A-Za-z0-9_]*)\s*\(", text)))


def dynamic_symbols(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2].split("@")[0]] = parts[1]
    return syms


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    header, shim = sys.argv[1], sys.argv[2]
    funcs = header_functions(header)
    syms = dynamic_symbols(shim)
    errors = []
    if len(funcs) < 40:
        errors.append(f"only {len(funcs)} functions read from {header}: is it NCCL's nccl.h?")
    for f in funcs:
        kind = syms.get(f)
        if kind is None:
            errors.append(f"{f} is declared in {header} but not exported")
        elif kind not in ("T", "W"):
            errors.append(f"{f} is exported as '{kind}', not as a function")
        elif not f.startswith("p") and ("p" + f) in funcs and kind != "W":
            errors.append(f"{f} is not a weak alias (nm says '{kind}'), so a profiler cannot interpose on it")
    extra = sorted(s for s in syms if re.match(r"p?nccl", s) and s not in funcs)
    print(f"{len(funcs)} functions declared in {header}; {len(funcs) - len(errors)} exported by {shim}")
    if extra:
        print("also exported, not in the header: " + " ".join(extra))
    if len(sys.argv) == 4:
        nv = dynamic_symbols(sys.argv[3])
        nv_only = sorted(s for s in nv if re.match(r"p?nccl", s) and nv[s] in ("T", "W") and s not in syms)
        print(f"NVIDIA's {sys.argv[3]} exports {len(nv_only)} functions that are not in nccl.h and not here "
              "(internal, or the device API's inline helpers): "
              + (" ".join(nv_only) or "none"))
    for e in errors:
        print("MISSING: " + e)
    sys.exit(1 if errors else 0)


main()
