"""Host memory: where the caching pool's blocks live, and runs larger than RAM.

Every ciphertext, plaintext and key on the CPU lives in one caching pool. Freed blocks stay
in the pool for the next request of their size; a request of 1 MiB or more also takes a cached
block up to half again its size, so the temporaries of neighbouring levels share blocks instead
of each level keeping its own (N16_BOOT with its keys expanded: a bootstrap's peak RSS went
from 14.3 to 10.8 GiB; ``flush()`` returns what is cached to the system, and
``set_cache_limit()`` bounds it; a guarded run keeps it within half the room the run's
plan leaves, :func:`bounded_cache`). With
:func:`spill`, blocks the pool would take from the system beyond a RAM limit come
from files in a directory instead (memory-mapped; seed 001 ran models larger than
DRAM the same way, with Optane behind a DRAM cache). The kernel keeps the pages in
use in RAM and writes cold ones to disk, so a run larger than RAM slows down
instead of being killed::

    with rf.memory.spill("/scratch", ram_limit_gib=16):
        out = model(enc)                 # may hold more than 16 GiB of ciphertexts
    print(rf.memory.stats())             # bytes in RAM and in spill files

The limit counts the pool's blocks (ciphertexts, keys, their temporaries), not the
rest of the process. Blocks made inside :func:`cold` go to the files first whatever
the limit: data written once and read now and then belongs there, so that the RAM
holds what is rewritten all the time. Make the keys there too (``with rf.memory.cold():
sk, keys = ctx.keygen(...)`` after starting to spill; ``ringfire infer --spill-dir`` does):
the kernel keeps the ones read most in its page cache, and the temporaries stay in RAM
(ResNet-20 at 32x32 on N16_BOOT: 174 s per image instead of 224, no disk writes after the
first image; BENCHMARKS.md). A spilled block's pages are dropped when it is freed, so a
temporary that did land in a file is not written back once it is dead. Before a linear
transform multiplies by a giant step's diagonals it asks the kernel to read the next
step's (``MADV_WILLNEED``). Leave the kernel room beside it: the pages of spilled blocks
that are in use sit in the page cache, so a limit of about two thirds of the
machine's RAM keeps the working set in memory. The files are unlinked as soon as
they are made: nothing is left on disk when the process ends, even if it is killed.
Disk space is reserved a file (1 GiB) at a time before blocks are handed out, so a
full disk raises a clear error (on file systems where ``fallocate`` reserves space:
ext4, xfs).

Fork: a child gets private copies of spilled blocks (it never writes into its
parent's) and spills to files of its own. Pages the parent rewrites or frees after
the fork can show through in the child until the child writes them, so a forked
child's view of inherited blocks holds only while the parent leaves them alone:
use the ``spawn`` start method where the parent keeps computing. The directory's
file system should be a disk: on tmpfs the "files" are RAM.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import tempfile
import threading
import warnings

from . import _core

__all__ = ["bounded_cache", "cache_limit", "cold", "flush", "reset_peaks", "retain_freed", "retained_freed",
           "set_cache_limit", "spill", "stats", "total_ram_bytes"]

_NO_LIMIT = 2**64 - 1  # the pool's "no limit" (SIZE_MAX)

# The pool keeps the least of the user's limit (set_cache_limit) and every open
# bounded_cache scope's: runs in other threads each keep their own bound.
_limits_lock = threading.Lock()
_user_limit: int | None = None
_scope_limits: dict[object, int] = {}


def stats() -> dict:
    """The host pool: ``bytes_in_use`` (held by live objects), ``bytes_cached`` (kept for
    reuse), ``peak_bytes_in_use`` and ``peak_bytes_held`` (the most in use, and in use and
    cached, since the process began or :func:`reset_peaks`: ``ctx.bootstrap_plan()``'s
    ``temporary_bytes`` predicts the second's growth over a bootstrap), ``bytes_resident``
    and ``bytes_spilled`` (of all blocks, in RAM and in files), ``bytes_mapped`` (file space
    mapped so far), and the spill settings
    (``active``, ``ram_limit``, ``directory``), ``cache_limit`` (:func:`set_cache_limit`)
    and ``cache_limit_in_force`` (the least of it and the open :func:`bounded_cache` scopes')."""
    in_force = _core.host_pool_cache_limit()
    return {**_core.host_pool_stats(), **_core.host_spill_stats(), "cache_limit": cache_limit(),
            "cache_limit_in_force": None if in_force == _NO_LIMIT else in_force}


def cache_limit() -> int | None:
    """The most bytes of freed blocks the pool keeps for reuse, as :func:`set_cache_limit`
    set it (None: no limit)."""
    return _user_limit


def _check_limit(limit, where: str) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, numbers.Integral)
                              or not 0 <= limit < _NO_LIMIT):
        raise ValueError(f"[memory.{where}] the limit must be None or a number of bytes >= 0, got {limit!r}")


def _apply_limits_locked() -> None:
    limits = [v for v in (_user_limit, *_scope_limits.values()) if v is not None]
    _core.host_pool_set_cache_limit(min(limits) if limits else _NO_LIMIT)


def set_cache_limit(limit: int | None) -> int | None:
    """Keeps at most ``limit`` bytes of freed blocks for reuse (None: no limit, the
    default; 0: none) and returns the previous limit. A block freed beyond the limit goes
    back to the system, and lowering it gives back cached blocks, the largest first.

    The pool's cache is what lets repeated temporaries skip the system allocator; it also
    holds memory no live object uses, which the process's RSS counts. A model's plan counts
    it (``Plan.pool_cache_bytes``) only under a limit: unbounded, an inter-packed
    MobileNetV3-Small image with no diagonals kept held 1.2 to 2.7 GiB of them beside 1.45 GiB
    in use (BENCHMARKS.md). A limit trades some of the reuse for RSS that stays near the bytes in
    use. Blocks of 1 MiB or more are mappings of their own, so their pages leave the
    process as soon as they are given back."""
    global _user_limit
    _check_limit(limit, "set_cache_limit")
    with _limits_lock:
        previous, _user_limit = _user_limit, None if limit is None else int(limit)
        _apply_limits_locked()
    return previous


@contextlib.contextmanager
def bounded_cache(limit: int | None):
    """Within the block, the pool keeps at most ``limit`` bytes of freed blocks for reuse
    (None: no bound of its own), or less where :func:`set_cache_limit` or another open
    scope (any thread) says less; the bound in force before comes back after. The memory
    guard opens one around every run it admits, at what is cached already plus half the
    room the run's predicted peak leaves, so that blocks kept for reuse never take the
    memory the run was predicted to need."""
    _check_limit(limit, "bounded_cache")
    token = object()
    with _limits_lock:
        if limit is not None:
            _scope_limits[token] = int(limit)
        _apply_limits_locked()
    try:
        yield
    finally:
        with _limits_lock:
            _scope_limits.pop(token, None)
            _apply_limits_locked()


def reset_peaks() -> None:
    """Starts the pool's peaks (``peak_bytes_in_use``, ``peak_bytes_held`` in :func:`stats`)
    again from its counts now, to measure what one step of a run adds."""
    _core.host_pool_reset_peaks()


def flush() -> None:
    """Gives the blocks the pool keeps for reuse back to the system (spilled ones free their
    disk space); blocks in use are untouched. Starting to spill does this first."""
    _core.host_pool_flush()


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc refuses more on 64-bit (half its heaps' size)
_retained: int | None = None


def retain_freed(limit: int = 64 * 2**20) -> bool:
    """Lets the C library keep up to ``limit`` bytes of freed memory mapped for reuse
    (glibc; returns False and changes nothing elsewhere). Serialized ciphertexts, request
    bodies and NumPy arrays are Python and NumPy buffers, which do not come from the pool
    above but from the C library's ``malloc``: by default glibc maps each buffer of 128 KiB
    or more on its own and gives memory back to the system as soon as 128 KiB of it is
    free, so a service that sends and receives such buffers all the time has the kernel
    map and zero every one of their pages again (a fresh 131 KiB ``bytes``, a serialized
    N = 2^13 ciphertext's size, cost 51-57 µs on a 2-vCPU Zen 4). After this call buffers
    below 32 MiB come from the heap and up to ``limit`` bytes of free memory at its top stay
    mapped (per allocator arena: a process with many threads can hold several times
    that): through ``ringfire serve`` the digits MLP ran 4-8 % more requests a second and
    key uploads 12-52 % faster, for 3-40 MiB more of the server's memory (BENCHMARKS.md).
    ``ringfire serve`` calls it (``--retain-freed-mib``); a client that sends many requests
    can too. Process-wide and lasting: a later call sets other values, none restores glibc's
    adaptive defaults."""
    global _retained
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or not 0 <= limit <= 2**30:
        raise ValueError(f"[memory.retain_freed] limit: a number of bytes from 0 to 1 GiB, got {limit!r}")
    import platform
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a static or unusual build: leave its allocator alone
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    limit = int(limit)
    ok = (mallopt(_M_MMAP_THRESHOLD, min(_MMAP_THRESHOLD_MAX, max(limit, 128 * 1024)))
          and mallopt(_M_TRIM_THRESHOLD, max(limit, 128 * 1024))
          and mallopt(_M_TOP_PAD, min(limit // 4, 16 * 2**20)))
    if ok:
        _retained = limit
    return bool(ok)


def retained_freed() -> int | None:
    """The limit :func:`retain_freed` last set in this process (None: never called)."""
    return _retained


def total_ram_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class spill:
    """Spills host blocks beyond ``ram_limit_gib`` (default: two thirds of RAM) to files in
    ``directory`` (default: the system's temporary directory) from now on, until
    :meth:`stop` or the end of a ``with`` block. It first gives back the blocks the pool
    keeps for reuse (:func:`flush`). Blocks in use stay where they are, and blocks made
    while spilling stay in their files after it stops (they remain valid).

    Spilling is one setting for the whole process: a second ``spill`` replaces the first,
    and either one's :meth:`stop` ends it. Calling ``spill`` again on the same directory
    reuses its files. Raises ValueError for a limit that is not a number >= 0 and for a
    directory where no file can be made."""

    def __init__(self, directory: str | os.PathLike | None = None, ram_limit_gib: float | None = None):
        if ram_limit_gib is None:
            ram_limit_gib = total_ram_bytes() * 2 / 3 / 2**30
        if (isinstance(ram_limit_gib, bool) or not isinstance(ram_limit_gib, (int, float))
                or not 0 <= ram_limit_gib < 2**33):
            raise ValueError(f"[memory.spill] ram_limit_gib must be a number >= 0, got {ram_limit_gib!r}")
        directory = os.fspath(directory) if directory is not None else tempfile.gettempdir()
        if not os.path.isdir(directory):
            raise ValueError(f"[memory.spill] {directory!r} is not a directory")
        self.directory = directory
        self.ram_limit_bytes = int(ram_limit_gib * 2**30)
        _core.start_host_spill(self.ram_limit_bytes, directory)
        flush()  # blocks cached for reuse would otherwise be handed out again before any file

    def stop(self) -> None:
        """Later blocks come from RAM again: spilling stops (for the whole process) and the
        pool gives back the spilled blocks it kept for reuse. Blocks in use stay valid."""
        _core.stop_host_spill()
        flush()

    def __enter__(self) -> "spill":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        s = stats()
        return (f"spill(directory={self.directory!r}, ram_limit_gib={self.ram_limit_bytes / 2**30:.2f}; "
                f"{'active' if s['active'] else 'stopped'}, {s['bytes_spilled'] / 2**30:.2f} GiB in files)")


@contextlib.contextmanager
def cold():
    """While spilling, blocks made inside this block come from the spill files, whatever
    the RAM limit: spilled blocks the pool keeps for reuse, or new ones, never its RAM
    blocks (process-wide, every thread; no effect when not spilling). Once freed, such a
    block serves later cold requests, and other requests only where a new block would be
    spilled too. For data made once and read now and
    then, like the encoded diagonals an inter-packed model reuses for every input
    (``ringfire.nn`` marks them itself), or the keys: the RAM under the limit then serves
    the blocks rewritten all the time, such as a bootstrap's temporaries, whose pages in a
    file the kernel would keep writing back to disk."""
    _core.begin_cold_host_allocations()
    try:
        yield
    finally:
        _core.end_cold_host_allocations()


def _after_fork_in_child() -> None:
    global _limits_lock
    # Another thread may have held the lock at the fork, and the threads whose scopes are
    # open do not exist here: a fresh lock, and the user's limit alone.
    _limits_lock = threading.Lock()
    _scope_limits.clear()
    _apply_limits_locked()
    if _core.host_spill_stats()["bytes_spilled"]:
        warnings.warn("[memory.spill] this forked child inherited spilled blocks: it reads private copies, and "
                      "pages its parent rewrites can show through until the child writes them; read only "
                      "ciphertexts the parent has stopped computing on, or use the 'spawn' start method",
                      RuntimeWarning, stacklevel=1)


os.register_at_fork(after_in_child=_after_fork_in_child)
