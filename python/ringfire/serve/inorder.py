"""Work on the pieces of a stream, in order, on a thread of its own.

The server hashes each upload chunk block by block and writes it to a file as its pieces
arrive, each on a thread of this kind. hashlib and file writes release the GIL, so handing
them to other threads leaves the event loop free to receive the next pieces (and to answer
other requests) meanwhile.
"""

from __future__ import annotations

import collections
import threading


class InOrder:
    """``work(piece)`` for every piece put, in the order put, on a thread started by the first
    put. At most ``bound`` bytes wait at a time: a put waits for room beyond that, so a slow
    consumer holds back the producer rather than growing memory. ``finish`` waits for the
    rest, ends the thread and raises the first error ``work`` met (a later put raises it too;
    the pieces after an error are dropped)."""

    def __init__(self, work, bound: int):
        self._work, self._bound = work, int(bound)
        self._pending: collections.deque = collections.deque()
        self._queued, self._error, self._done = 0, None, False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def put(self, piece) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ringfire-in-order", daemon=True)
                self._thread.start()
            while self._queued > self._bound and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error
            self._pending.append(piece)
            self._queued += len(piece)
            self._cond.notify_all()

    def finish(self) -> None:
        with self._cond:
            self._done = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._done:
                    self._cond.wait()
                if not self._pending:
                    return
                piece = self._pending.popleft()
            try:
                if self._error is None:
                    self._work(piece)
            except BaseException as e:  # noqa: BLE001 - raised by the producer's next put or finish
                self._error = e
            with self._cond:
                self._queued -= len(piece)
                self._cond.notify_all()
