"""The layer chain stays one-way (DESIGN.md); runs the same lint as CI."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_layer_lint_passes():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "check_layers.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_layer_lint_catches_an_upward_include(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import check_layers

    bad = tmp_path / "cpp" / "include" / "ringfire" / "arith"
    bad.mkdir(parents=True)
    (bad / "oops.h").write_text('#include "ringfire/ring/poly.h"\n')
    found = check_layers.violations(tmp_path)
    assert len(found) == 1 and "includes 'ring'" in found[0]
