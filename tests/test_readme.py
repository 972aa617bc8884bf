"""CI must run exactly the test command README.md gives newcomers."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README.md must mark its test command with <!-- test-command -->"
    assert match.group(1).strip() in (ROOT / ".ci" / "run").read_text()
