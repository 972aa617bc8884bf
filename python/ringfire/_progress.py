"""Progress bars for long runs: tqdm on stderr, shown only when asked for
(``progress=True``) or, with ``progress=None``, when stderr is a terminal."""

from __future__ import annotations

import sys


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def progress_bar(total: int | None, desc: str, progress: bool | None = None, unit: str = "it"):
    """A context-managed bar with ``update(n)`` (``total=None``: a count with no end known);
    silent when not wanted."""
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if not show or (total is not None and total <= 0):
        return _Silent()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True,
                mininterval=0.5)
