"""Every relative link in the project's Markdown (README, BENCHMARKS, docs/, examples/) points at a
file that exists, and every #anchor into a Markdown file names one of its headings."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "BENCHMARKS.md", *ROOT.glob("docs/*.md"), *ROOT.glob("examples/**/*.md"),
                *ROOT.glob("python/ringfire/**/*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _links(page: pathlib.Path):
    """(line number, target) of each Markdown link outside code blocks."""
    inside = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            for match in LINK.finditer(line):
                yield number, match.group(1)


def _anchors(page: pathlib.Path) -> set[str]:
    """The anchors of a Markdown file: its headings' as GitHub makes them (lower case, punctuation
    dropped, spaces to '-') and explicit <a id=...> ones."""
    text = page.read_text(encoding="utf-8")
    out = set(re.findall(r'<a (?:id|name)="([^"]+)"', text))  # explicit anchors
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for number, target in _links(page):
        if re.match(r"^[a-z]+:", target) or target.startswith("#") and not target[1:]:
            continue  # http(s), mailto: not checked here
        path, _, anchor = target.partition("#")
        resolved = page if not path else (page.parent / path).resolve()
        if not resolved.exists():
            broken.append(f"line {number}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"line {number}: {target} (no heading with that anchor)")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
