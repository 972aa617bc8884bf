#!/usr/bin/env python3
"""Keeps the layer chain one-way: a file may include ringfire headers only from
its own layer or the layers below it (see DESIGN.md).

    base -> arith -> ring -> rlwe -> ckks/bfv/bgv -> io -> backends -> python

Checks every C++/CUDA file under cpp/ and python/bindings/; exits 1 and lists
each offending include otherwise.
"""

from __future__ import annotations

import pathlib
import re
import sys

ORDER = ["base", "arith", "ring", "rlwe", "ckks", "bfv", "bgv", "io", "backends", "python"]
# Schemes sit side by side: none of them may include another.
PEERS = {"ckks", "bfv", "bgv"}
RANK = {name: i for i, name in enumerate(ORDER)}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]ringfire/([a-z0-9_]+)/', re.MULTILINE)
SUFFIXES = {".h", ".hpp", ".cpp", ".cu", ".cuh"}


def layer_of(path: pathlib.Path, root: pathlib.Path) -> str | None:
    rel = path.relative_to(root).parts
    if rel[:3] == ("cpp", "include", "ringfire") or rel[:2] == ("cpp", "src"):
        return rel[3] if rel[0] == "cpp" and rel[1] == "include" else rel[2]
    if rel[:2] == ("cpp", "backends"):
        return "backends"
    if rel[:2] == ("python", "bindings"):
        return "python"
    return None  # tests and tools may include anything


def violations(root: pathlib.Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in SUFFIXES or "build" in path.relative_to(root).parts:
            continue
        layer = layer_of(path, root)
        if layer is None:
            continue
        if layer not in RANK:
            found.append(f"{path.relative_to(root)}: unknown layer '{layer}' (add it to tools/check_layers.py)")
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            if target not in RANK:
                found.append(f"{path.relative_to(root)}: includes unknown layer '{target}'")
            elif RANK[target] > RANK[layer] or (target in PEERS and layer in PEERS and target != layer):
                found.append(f"{path.relative_to(root)}: layer '{layer}' includes '{target}', which sits above it")
    return found


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    found = violations(root)
    for line in found:
        print(line)
    print(f"layer check: {'FAILED' if found else 'ok'} ({len(found)} violation(s))")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
