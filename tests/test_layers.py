"""The layers stay one-way (DESIGN.md), in C++ and Python; runs the same lint as CI
and shows that each rule catches a planted violation."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import check_layers  # noqa: E402


def test_layer_lint_passes():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "check_layers.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def plant(root: pathlib.Path, relative: str, text: str) -> list[str]:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return check_layers.violations(root)


@pytest.mark.parametrize("relative, text, message", [
    ("cpp/include/ringfire/arith/oops.h", '#include "ringfire/ring/poly.h"\n', "includes 'ring', which sits above it"),
    ("cpp/src/ckks/oops.cpp", '#include "ringfire/bgv/context.h"\n', "includes 'bgv'"),
    ("cpp/backends/cpu/oops.cpp", '#include "ringfire/ckks/evaluator.h"\n', "backends use base, arith and ring only"),
    ("cpp/backends/cpu/oops.cpp", '#include "ringfire/rlwe/keys.h"\n', "backends use base, arith and ring only"),
    ("cpp/src/rlwe/oops.cpp", '#include "backends/cuda/cuda_info.h"\n', "core code names no backend"),
    ("python/bindings/oops.cpp", '#include "../../cpp/backends/cuda/bench.h"\n', "relative include"),
    ("cpp/tests/oops.cpp", '#include "../include/ringfire/base/errors.h"\n', "relative include"),
    ("cpp/backends/oops.cpp", '#include "cpu/cpu_backend.h"\n', "neither rooted"),
])
def test_each_cpp_rule_catches_a_planted_violation(tmp_path, relative, text, message):
    found = plant(tmp_path, relative, text)
    assert len(found) == 1 and message in found[0], found


@pytest.mark.parametrize("relative, text, message", [
    ("python/ringfire/ckks/oops.py", "from ..nn import load\n", "'ckks' imports 'nn', which is not below it"),
    ("python/ringfire/rpu/oops.py", "from ..nn.model import Model\n", "'rpu' imports 'nn'"),
    ("python/ringfire/ring.py", "import ringfire.ckks\n", "'ring' imports 'ckks'"),
    ("python/ringfire/nn/oops.py", "def f(ct):\n    return ct._native\n", "private name '_native'"),
])
def test_each_python_rule_catches_a_planted_violation(tmp_path, relative, text, message):
    found = plant(tmp_path, relative, text)
    assert len(found) == 1 and message in found[0], found


def test_allowed_shapes_pass(tmp_path):
    assert plant(tmp_path, "cpp/backends/cpu/fine.cpp",
                 '#include "backends/cpu/cpu_backend.h"\n#include "ringfire/ring/poly.h"\n#include "local.h"\n') == []
    assert plant(tmp_path, "python/ringfire/nn/fine.py",
                 "from .. import _core\nfrom ..ckks import Context\n\nclass A:\n    def __init__(self):\n"
                 "        self._x = 1\n\n    def f(self):\n        return self._x + _core._hidden\n") == []
