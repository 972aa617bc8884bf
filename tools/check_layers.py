#!/usr/bin/env python3
"""Keeps the layers one-way (DESIGN.md), in C++ and in Python.

C++ (every .h/.cpp/.cu/.cuh under cpp/ and python/bindings/):

    base -> arith -> ring -> rlwe -> ckks/bfv/bgv/tfhe -> io -> python
                      \\-> backends (base, arith and ring only)

* ``#include "ringfire/<layer>/..."`` may name the file's own layer or one
  below it; the schemes may not include each other; the backends only base,
  arith and ring.
* ``#include "backends/..."`` is for the backends, the bindings and the tests.
* Relative includes are refused: a quoted include is rooted
  (``ringfire/...``, ``backends/...``) or names a file beside the includer.

(The CMake build enforces the ringfire/ rules as well: each layer compiles
against a view of the headers below it.)

Python (python/ringfire/):

    _core, _checks, _progress, _cpu -> arith, arith128, ring, cuda, io, memory, tracing -> rlwe, costing,
        memory_guard, parallel -> ckks, bgv, tfhe (side by side) -> bfv (a mode of bgv) -> nn, rpu, switching
        (side by side) -> apps, bench, distributed -> serve -> cli -> __main__, the package

* a module imports only from its own package or from lower ranks;
* no module reaches into another package's private names: an attribute
  ``x._name`` must be defined in the module's own package, in the shared
  internal ``_checks``, or in ``rlwe``, whose base classes the schemes
  derive from (their underscored members are the subclassing protocol);
  ``_core`` is the native module everyone uses.

Exits 1 and lists every violation.
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ORDER = ["base", "arith", "ring", "rlwe", "ckks", "bfv", "bgv", "tfhe", "io", "backends", "python"]
# Schemes sit side by side: none of them may include another.
PEERS = {"ckks", "bfv", "bgv", "tfhe"}
RANK = {name: i for i, name in enumerate(ORDER)}
BACKENDS_MAY_USE = {"base", "arith", "ring"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
SUFFIXES = {".h", ".hpp", ".cpp", ".cu", ".cuh"}

PY_RANK = {
    "_core": 0, "_checks": 0, "_progress": 0, "_cpu": 0,
    "arith": 1, "arith128": 1, "ring": 1, "cuda": 1, "io": 1, "memory": 1, "tracing": 1,
    "rlwe": 2, "costing": 2, "memory_guard": 2, "parallel": 2,
    "ckks": 3, "bgv": 3, "tfhe": 3,
    "bfv": 4,
    "nn": 5, "rpu": 5, "switching": 5,
    "apps": 6, "bench": 6, "distributed": 6,  # apps: whole workloads on the schemes and switching
    "serve": 7,
    "cli": 8,
    "__main__": 9, "__init__": 9,
}
# Modules and packages whose private names every unit may use.
SHARED_INTERNALS = ("_checks.py", "rlwe")


def layer_of(path: pathlib.Path, root: pathlib.Path) -> str | None:
    rel = path.relative_to(root).parts
    if rel[:3] == ("cpp", "include", "ringfire"):
        return rel[3]
    if rel[:2] == ("cpp", "src"):
        return rel[2]
    if rel[:2] == ("cpp", "backends"):
        return "backends"
    if rel[:2] == ("python", "bindings"):
        return "python"
    return None  # tests and examples: any layer, but no relative includes


def cpp_files(root: pathlib.Path):
    for top in ("cpp", "python/bindings", "examples"):
        base = root / top
        if base.exists():
            for path in sorted(base.rglob("*")):
                if path.suffix in SUFFIXES and "build" not in path.relative_to(root).parts:
                    yield path


def include_violation(layer: str | None, target: str) -> str | None:
    if ".." in target.split("/"):
        return f"relative include \"{target}\" (root it: \"ringfire/...\" or \"backends/...\")"
    parts = target.split("/")
    if parts[0] == "ringfire" and len(parts) > 2:
        dep = parts[1]
        if dep not in RANK:
            return f"includes unknown layer '{dep}'"
        if layer is None:
            return None
        if layer == "backends" and dep not in BACKENDS_MAY_USE:
            return f"a backend includes '{dep}' (backends use base, arith and ring only)"
        if RANK[dep] > RANK[layer] or (dep in PEERS and layer in PEERS and dep != layer):
            return f"layer '{layer}' includes '{dep}', which sits above it"
        return None
    if parts[0] == "backends":
        if layer in (None, "backends", "python"):
            return None
        return f"layer '{layer}' includes a backend header (core code names no backend)"
    if len(parts) > 1:
        return f"include \"{target}\" is neither rooted (ringfire/..., backends/...) nor beside the file"
    return None


def cpp_violations(root: pathlib.Path) -> list[str]:
    found = []
    for path in cpp_files(root):
        layer = layer_of(path, root)
        if layer is not None and layer not in RANK:
            found.append(f"{path.relative_to(root)}: unknown layer '{layer}' (add it to tools/check_layers.py)")
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            problem = include_violation(layer, target)
            if problem:
                found.append(f"{path.relative_to(root)}: {problem}")
    return found


# ---- Python ---------------------------------------------------------------------------

def py_unit(path: pathlib.Path, pkg_root: pathlib.Path) -> str:
    """The top-level unit a module belongs to: its subpackage, or its own name."""
    rel = path.relative_to(pkg_root).parts
    return rel[0] if len(rel) > 1 else path.stem


def imported_units(tree: ast.AST, path: pathlib.Path, pkg_root: pathlib.Path) -> list[tuple[int, str]]:
    """(line, unit) for every import of a ringfire module (relative or absolute)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                up = node.level - 1  # "." is this package
                parts = list(path.relative_to(pkg_root).parts[:-1])
                if up > len(parts):
                    continue
                base = parts[:len(parts) - up] if up else parts
                module = base + (node.module.split(".") if node.module else [])
                if module:
                    out.append((node.lineno, module[0]))
                else:  # "from .. import x, y": each name is a unit
                    out.extend((node.lineno, alias.name) for alias in node.names)
            elif node.module and node.module.split(".")[0] == "ringfire":
                rest = node.module.split(".")[1:]
                if rest:
                    out.append((node.lineno, rest[0]))
                else:
                    out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ringfire" and len(parts) > 1:
                    out.append((node.lineno, parts[1]))
    return out


def defined_private_names(files: list[pathlib.Path]) -> set[str]:
    """Private names a group of modules defines: functions, classes, attributes set on self or at class level."""
    names = set()
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def foreign_modules(tree: ast.AST) -> set[str]:
    """Names bound to modules outside ringfire (``import sys``): their private
    names are their own business (``sys._getframe``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "ringfire":
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def python_violations(root: pathlib.Path) -> list[str]:
    pkg_root = root / "python" / "ringfire"
    if not pkg_root.exists():
        return []
    files = sorted(p for p in pkg_root.rglob("*.py") if "__pycache__" not in p.parts)
    by_unit: dict[str, list[pathlib.Path]] = {}
    for path in files:
        by_unit.setdefault(py_unit(path, pkg_root), []).append(path)
    shared_files = []
    for name in SHARED_INTERNALS:
        path = pkg_root / name
        shared_files += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
    shared = defined_private_names(shared_files)
    own_names = {unit: defined_private_names(paths) | shared for unit, paths in by_unit.items()}
    found = []
    for path in files:
        unit = py_unit(path, pkg_root)
        rel = path.relative_to(root)
        if unit not in PY_RANK:
            found.append(f"{rel}: unknown Python unit '{unit}' (add it to tools/check_layers.py)")
            continue
        tree = ast.parse(path.read_text(), str(path))
        for line, target in imported_units(tree, path, pkg_root):
            if target == unit or target not in PY_RANK:
                continue
            if PY_RANK[target] >= PY_RANK[unit]:
                found.append(f"{rel}:{line}: '{unit}' imports '{target}', which is not below it")
        foreign = foreign_modules(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and node.attr not in own_names[unit]
                    and not (isinstance(node.value, ast.Name) and node.value.id in foreign | {"_core"})):
                found.append(f"{rel}:{node.lineno}: '{unit}' reaches into the private name '{node.attr}' "
                             "of another module")
    return found


def violations(root: pathlib.Path) -> list[str]:
    return cpp_violations(root) + python_violations(root)


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    found = violations(root)
    for line in found:
        print(line)
    print(f"layer check: {'FAILED' if found else 'ok'} ({len(found)} violation(s))")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
