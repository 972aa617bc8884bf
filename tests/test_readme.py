"""CI must run exactly the test command README.md gives newcomers."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README.md must mark its test command with <!-- test-command -->"
    assert match.group(1).strip() in (ROOT / ".ci" / "run").read_text()


def python_blocks(text: str) -> list[tuple[str, str]]:
    """(marker, code) for every ```python block: the HTML comment just before it, if any."""
    return re.findall(r"(<!-- [^>]*-->\s*)?```python\n(.+?)\n```", text, re.S)


def test_readme_python_snippets_run():
    """Every Python snippet in README.md runs as written; a snippet that is not meant to
    run says so with <!-- not run: why --> right above it (the service's, which needs a server)."""
    blocks = python_blocks((ROOT / "README.md").read_text())
    runnable = [code for marker, code in blocks if "not run" not in marker]
    assert len(runnable) >= 7
    for code in runnable:
        exec(compile(code, "README.md", "exec"), {})
