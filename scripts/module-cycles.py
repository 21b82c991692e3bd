#!/usr/bin/env python3
"""Fails when the top-level modules of src/ import each other in a cycle (issue 34), or when a
layer of the server reaches above itself: `server/services` names neither `server::routes`,
`server::http` nor axum, and `server/http` does not name `server::routes`.

A top-level module is a file `src/<m>.rs` or a folder `src/<m>/`; it depends on another when
any of its files names `crate::<other>` (in a `use` or a path). Prints every cycle found
(one strongly connected component per line) and exits 1, or prints the layers and exits 0.
Only the standard library: it runs on a machine that has only Python 3.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
CRATE_PATH = re.compile(r"\bcrate::(\w+)")
# `use crate::{a, b::c}` names several modules at once.
CRATE_GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def top_level_modules():
    mods = {}
    for entry in sorted(os.listdir(ROOT)):
        path = os.path.join(ROOT, entry)
        if entry.endswith(".rs") and entry not in ("main.rs", "lib.rs"):
            mods[entry[:-3]] = [path]
        elif os.path.isdir(path):
            files = []
            for dirpath, _, names in os.walk(path):
                files += [os.path.join(dirpath, n) for n in names if n.endswith(".rs")]
            mods[entry] = sorted(files)
    return mods


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def dependencies(mods):
    deps = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            text = strip_comments(open(f, encoding="utf-8").read())
            names = set(CRATE_PATH.findall(text))
            for group in CRATE_GROUP.findall(text):
                names |= {part.strip().split("::")[0] for part in group.split(",")}
            deps[m] |= {n for n in names if n in mods and n != m}
    return deps


def strongly_connected(deps):
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


# (folder under src/, what no file in it may name, why)
LAYER_RULES = [
    ("server/services", re.compile(r"\bcrate::server::(routes|http)\b|\baxum::"),
     "services hold no HTTP: they are called by routes, the broker's policy and automation"),
    ("server/http", re.compile(r"\bcrate::server::routes\b"),
     "the HTTP plumbing sits under every route and names none"),
]


def layer_violations():
    found = []
    for folder, forbidden, why in LAYER_RULES:
        base = os.path.join(ROOT, folder)
        for dirpath, _, names in os.walk(base):
            for name in sorted(n for n in names if n.endswith(".rs")):
                path = os.path.join(dirpath, name)
                text = strip_comments(open(path, encoding="utf-8").read())
                for match in sorted(set(forbidden.findall(text))):
                    rel = os.path.relpath(path, ROOT)
                    found.append(f"src/{rel} names {match or 'axum'}: {why}")
    return found


def main():
    violations = layer_violations()
    for line in violations:
        print(line)
    deps = dependencies(top_level_modules())
    cycles = [c for c in strongly_connected(deps) if len(c) > 1]
    if cycles:
        for comp in cycles:
            inside = set(comp)
            edges = [f"{a} -> {b}" for a in comp for b in sorted(deps[a] & inside)]
            print(f"import cycle among {', '.join(comp)}: {'; '.join(edges)}")
        return 1
    if violations:
        return 1
    # Tarjan's components come out leaves first: print them as layers from the bottom.
    print("no import cycle between top-level modules; from the bottom up:")
    for comp in strongly_connected(deps):
        (m,) = comp
        print(f"  {m} -> {', '.join(sorted(deps[m])) or '(nothing)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
