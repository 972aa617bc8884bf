"""Turns at the CPU, given in the order they were asked for.

Encrypted inference alternates between the two parties: the server computes a job's layers,
the key holder refreshes its client-aided rounds, the server goes on. When many requests share
a side's cores and all compute at once, the cores are shared evenly among them: they all
finish together, cross to the other side together, and leave these cores idle while the
other side works through them (a convoy). Served one after the other (as many at once as the
kernels' threads leave cores for), each request crosses as soon as its own work is done, and
both sides stay busy. The server on one core and eight clients on the other (2-vCPU Xeon), against
in-process on the server's core: the MLP from 85-89 % to 103-106 %, the CNN from 96-99 % to 107 %
(BENCHMARKS.md). With fewer jobs interleaved, the server's CPU an MLP request also fell, from
53-56 to 46-47 ms.

The server's job workers hold a turn while they compute and give it back while a job waits
for its client (``JobRunner``); ``rf.serve.Client`` takes one for each session's encryption,
rounds and decryption.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable


def cores_per_kernel_pool() -> int:
    """How many computations can run at once without sharing a core: the cores this process may
    use over the threads ringfire's kernels run each one on (read at every turn: a caller may
    change the kernels' threads)."""
    from .. import num_threads
    return max(1, len(os.sched_getaffinity(0)) // max(1, num_threads()))


class Turns:
    """At most ``most`` holders at once; the others wait, first come first served."""

    def __init__(self, most: Callable[[], int] | int | None = None):
        self._most = most if callable(most) else (lambda: most) if most else cores_per_kernel_pool
        self._lock = threading.Lock()
        self._holding = 0
        self._waiting: collections.deque[threading.Event] = collections.deque()

    @property
    def most(self) -> int:
        """How many may hold a turn at once now."""
        return self._most()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def acquire(self) -> None:
        with self._lock:
            if not self._waiting and self._holding < self.most:
                self._holding += 1
                return
            mine = threading.Event()
            self._waiting.append(mine)
        mine.wait()  # the releasing holder counted this one in before setting it

    def release(self) -> None:
        with self._lock:
            self._holding -= 1
            while self._waiting and self._holding < self.most:
                self._holding += 1
                self._waiting.popleft().set()

    @contextlib.contextmanager
    def turn(self):
        self.acquire()
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def given_back(self):
        """Inside a turn: the turn handed on for the block (a wait that uses no CPU), taken
        again, in line, after it."""
        self.release()
        try:
            yield
        finally:
            self.acquire()
