"""The training loop the apps share: an encrypted step applied again and again, timed."""

from __future__ import annotations

import time

from .._progress import progress_bar


def run_iterations(step, W, iterations: int, *, label: str, progress: bool, seconds: list):
    """``W`` after ``iterations`` calls of ``step`` (the weights in, the next ones out), each
    call's wall time appended to ``seconds``; a progress bar when ``progress``."""
    with progress_bar(iterations, label, progress=progress, unit="iteration") as bar:
        for _ in range(iterations):
            start = time.perf_counter()
            W = step(W)
            seconds.append(time.perf_counter() - start)
            bar.update(1)
    return W
