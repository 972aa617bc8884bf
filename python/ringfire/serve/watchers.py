"""Long-polled status reads woken by the job's worker instead of polling it.

A status read that waits for a job to move on (``GET /v1/jobs/{id}?wait=...``) holds an
``asyncio.Event`` registered under the job; the worker thread that changes the job's state
sets it through the event loop (``call_soon_threadsafe``). Four clients polling every few
milliseconds cost the server a tenth of its Python time; waiting costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class Watchers:
    def __init__(self):
        self._lock = threading.Lock()
        self._by_key: dict[str, set] = {}

    @contextlib.contextmanager
    def watching(self, key: str):
        """An event set whenever :meth:`notify` names ``key`` (call on the event loop)."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._by_key.setdefault(key, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                waiting = self._by_key.get(key)
                if waiting is not None:
                    waiting.discard(entry)
                    if not waiting:
                        del self._by_key[key]

    def notify(self, key: str) -> None:
        """Wakes every reader watching ``key`` (from any thread)."""
        with self._lock:
            waiting = list(self._by_key.get(key, ()))
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # a loop that closed meanwhile
                loop.call_soon_threadsafe(event.set)
