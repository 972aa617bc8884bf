"""CI must run exactly the test command README.md gives newcomers."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README.md must mark its test command with <!-- test-command -->"
    assert match.group(1).strip() in (ROOT / ".ci" / "run").read_text()


def test_readme_python_snippets_run():
    """The CKKS and ring-layer snippets in README.md run as written."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.+?)\n```", readme, re.S)
    runnable = [b for b in blocks if re.search(r"^import .*ringfire", b, re.M)]
    assert len(runnable) >= 2
    for block in runnable:
        exec(compile(block, "README.md", "exec"), {})
