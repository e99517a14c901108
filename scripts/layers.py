#!/usr/bin/env python3
"""layers.py — who calls whom among a library's object files, from `nm`.

Reads the symbols each object defines and the ones it leaves undefined, links
every undefined symbol to the object that defines it, and prints:
  - the strongly connected components of that call graph (files that reach
    each other in a circle), largest first;
  - with --layers FILE: calls that go upward, from a lower layer's object to a
    higher layer's (FILE: one layer per line, "name: obj obj ..." from the
    bottom up; objects not listed are reported).
Exit status 1 when --max-cycle N is given and a circle is larger than N, or
when --layers finds an upward call.

  scripts/layers.py build/default/src/core/CMakeFiles/*.dir
"""
import argparse
import glob
import os
import subprocess
import sys


def objects(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(glob.glob(os.path.join(p, "**", "*.o"), recursive=True))
        else:
            out.append(p)
    return out


def symbols(obj):
    """(defined, undefined) global symbol names of one object."""
    text = subprocess.run(["nm", "-g", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def name_of(obj):
    base = os.path.basename(obj)
    return base[:-4] if base.endswith(".c.o") else base[:-2]


def graph(objs):
    owner, need = {}, {}
    for o in objs:
        d, u = symbols(o)
        n = name_of(o)
        need[n] = u
        for s in d:
            owner[s] = n
    edges = {n: {} for n in need}
    for n, u in need.items():
        for s in u:
            m = owner.get(s)
            if m and m != n:
                edges[n].setdefault(m, []).append(s)
    return edges


def sccs(edges):
    """Tarjan's strongly connected components, iterative."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return sorted(comps, key=len, reverse=True)


def read_layers(path):
    layer_of, names = {}, []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, objs = line.partition(":")
            names.append(name.strip())
            for o in objs.split():
                layer_of[o] = len(names) - 1
    return names, layer_of


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="object files or folders holding them")
    ap.add_argument("--max-cycle", type=int, help="fail when a circle has more files than this")
    ap.add_argument("--layers", help="layer file: 'name: obj ...' per line, bottom first")
    a = ap.parse_args()
    objs = objects(a.paths)
    if not objs:
        sys.exit(f"layers.py: no object files under {' '.join(a.paths)}: build first")
    edges = graph(objs)
    comps = [c for c in sccs(edges) if len(c) > 1]
    print(f"{len(edges)} objects; circles of calls: {len(comps)}")
    for c in comps:
        print(f"  {len(c)} files: {' '.join(c)}")
    bad = 0
    if a.max_cycle is not None and comps and len(comps[0]) > a.max_cycle:
        print(f"FAIL: a circle of {len(comps[0])} files, more than {a.max_cycle}")
        bad = 1
    if a.layers:
        names, layer_of = read_layers(a.layers)
        for n in sorted(edges):
            if n not in layer_of:
                print(f"FAIL: {n}.o is in no layer of {a.layers}")
                bad = 1
        for n, outs in sorted(edges.items()):
            for m, syms in sorted(outs.items()):
                if n in layer_of and m in layer_of and layer_of[m] > layer_of[n]:
                    print(f"FAIL: upward call {names[layer_of[n]]}/{n} -> {names[layer_of[m]]}/{m}: {' '.join(sorted(syms)[:4])}")
                    bad = 1
    sys.exit(bad)


if __name__ == "__main__":
    main()
