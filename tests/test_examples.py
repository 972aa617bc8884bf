"""Every tutorial under examples/ runs to completion (they assert their own results)."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
