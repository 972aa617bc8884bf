"""An upload's bytes written past the page cache (``O_DIRECT``).

Written through the page cache, each byte of an upload is copied into a page the kernel has
to find first. On the 2-vCPU machines of BENCHMARKS.md the hypervisor takes back the guest's
free pages a few seconds after they are freed, so a page the cache takes from free memory
faults in the host before it is written: N16_D30's 43 MB relinearization key cost the server
170-180 ms of CPU through the cache when its free memory had been handed back, 50-80 ms when
it had not, and 60-70 ms written past the cache either way (N16_BOOT's 3.15 GB: 340-367 MB/s
through the cache, 673 MB/s past it). A direct write copies nothing in the kernel, but it
must start on an aligned offset and carry whole aligned blocks from an aligned buffer, and it
waits for the disk: so the pieces are gathered in a staging buffer (mapped, so page-aligned,
and kept for the next chunks: fresh memory is what is slow to touch) and written a few MiB at
a time, and the tail that does not fill an aligned block goes through the page cache. Uploads
smaller than one staging buffer go through the cache (``DIRECT_FROM``).
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import threading

ALIGN = 4096  # what O_DIRECT asks of offsets, sizes and buffers on the file systems we meet
STAGE = 4 * 2**20  # bytes gathered before a write
DIRECT_FROM = STAGE  # uploads at least this large are written past the page cache
SPARE_STAGES = 4  # staging buffers kept for the next chunks (one per chunk arriving at once)
log = logging.getLogger("ringfire.serve")

_spare: list[mmap.mmap] = []
_spare_lock = threading.Lock()


def _take_stage() -> mmap.mmap:
    """A staging buffer: one a finished chunk left, else a fresh mapping. Reused because fresh
    memory is slow to touch where the hypervisor takes back the guest's free pages (every page
    of a new mapping faults; on the machine of BENCHMARKS.md a page the page cache took from
    such memory cost 11-12 µs)."""
    with _spare_lock:
        if _spare:
            return _spare.pop()
    return mmap.mmap(-1, STAGE)


def _give_stage(stage: mmap.mmap) -> None:
    with _spare_lock:
        if len(_spare) < SPARE_STAGES:
            _spare.append(stage)
            return
    stage.close()


def open_direct(path, offset: int) -> "DirectWriter | None":
    """A direct writer of `path` from `offset`, or None where direct writes cannot be used (an
    unaligned offset, a file system without O_DIRECT such as tmpfs, a platform without it)."""
    flag = getattr(os, "O_DIRECT", None)
    if flag is None or offset % ALIGN:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | flag)
    except OSError:
        return None
    return DirectWriter(fd, path, offset)


class DirectWriter:
    """Writes the bytes it is given to the file at increasing offsets from `offset`;
    ``close`` writes what is left (its unaligned tail through the page cache) and returns
    the offset after the last byte. Pieces are copied into the staging buffer, so a
    caller may reuse them at once."""

    def __init__(self, fd: int, path, offset: int):
        self._fd, self._path, self._at, self._fill = fd, path, offset, 0
        self._stage = _take_stage()
        self._view = memoryview(self._stage)
        self.direct = True  # False once a file system that opened with O_DIRECT refused a direct write

    def write(self, piece) -> None:
        piece = memoryview(piece).cast("B")
        while len(piece):
            take = min(STAGE - self._fill, len(piece))
            self._view[self._fill:self._fill + take] = piece[:take]
            self._fill += take
            piece = piece[take:]
            if self._fill == STAGE:
                self._write_staged(STAGE)

    def _write_staged(self, size: int) -> None:
        done = 0
        while done < size:
            try:
                done += os.pwrite(self._fd, self._view[done:size], self._at + done)
            except OSError as e:
                # Some file systems open with O_DIRECT and refuse the writes (a block size above
                # ALIGN, or no direct I/O behind the flag): the rest goes through the page cache.
                if not self.direct or e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                    raise
                self._through_the_cache(e)
        self._at += size
        self._fill -= size

    def _through_the_cache(self, why: OSError) -> None:
        log.warning("direct writes refused for %s (%s): writing through the page cache", self._path, why)
        plain = os.open(self._path, os.O_WRONLY)
        os.close(self._fd)
        self._fd, self.direct = plain, False

    def close(self) -> int:
        if self._fd is None:
            return self._at
        try:
            whole = self._fill // ALIGN * ALIGN
            tail = bytes(self._view[whole:self._fill])
            if whole:
                self._write_staged(whole)
        finally:
            os.close(self._fd)
            self._fd = None
            self._view.release()
            _give_stage(self._stage)
        if tail:
            with open(self._path, "r+b") as f:
                f.seek(self._at)
                f.write(tail)
            self._at += len(tail)
        return self._at
