"""One memory guard for every large run: before the first large allocation, the
predicted peak is compared with the memory this process can actually get, and the run
either goes ahead, spills to disk (``ringfire.memory.spill``), or is refused with the
numbers and the fixes -- never killed by the kernel halfway. A run that goes ahead keeps
the pool's cache of freed blocks within what it held already plus half the room the
prediction leaves (``ringfire.memory.bounded_cache``).

What the process can get is the least of: the kernel's ``MemAvailable``, what is left
under the cgroup's memory limit (v2 ``memory.max``, v1 ``memory.limit_in_bytes``), and
what is left under ``RLIMIT_AS`` (address space: spill files are mapped, so they count
there, and a spill cannot help under that limit).

Entry points that guard themselves: ``Model.__call__`` (``ringfire.nn``), ``ringfire
infer``, key generation with bootstrapping keys and the bootstrap precomputation
(``ckks.Context.keygen``), logistic-regression training (``ringfire.apps.logreg``), and
the benchmarks through them. ``memory_check=False`` opts out and warns.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import tempfile

from ._checks import warn_at_caller

GIB = 2**30
# Spilling keeps this share of what is available in RAM and the rest in files: the kernel
# needs room beside the pool for the pages of the spilled blocks in use.
RAM_SHARE_WHEN_SPILLING = 2 / 3


class NotEnoughMemory(MemoryError, ValueError):
    """A run predicted to need more memory than this process can get, and no room to spill."""


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return None if text in ("", "max") else int(text)


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup memory limit (None: no limit found)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2
            base = "/sys/fs/cgroup" + path
            limit, used = _read_int(base + "/memory.max"), _read_int(base + "/memory.current")
        elif "memory" in controllers.split(","):  # v1
            base = "/sys/fs/cgroup/memory" + path
            limit, used = _read_int(base + "/memory.limit_in_bytes"), _read_int(base + "/memory.usage_in_bytes")
        else:
            continue
        if limit is not None and used is not None and limit < 2**60:
            return max(0, limit - used)
    return None


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def proc_memory(*fields: str, pid="self", table: str = "status") -> dict[str, int]:
    """Memory fields of /proc/PID/status (``VmSize``, ``VmHWM``, ``RssAnon``, ...) or, with
    ``table="smaps_rollup"``, of /proc/PID/smaps_rollup (``Pss``, ...), in bytes. A field
    /proc does not give (another system, an older kernel) is left out."""
    out = {}
    try:
        with open(f"/proc/{pid}/{table}") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    out[name] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def reset_peak_rss() -> bool:
    """Resets the kernel's resident-set high-water mark (``VmHWM``) to the process's RSS now
    (Linux: "5" to /proc/self/clear_refs, proc(5)), so that a later ``proc_memory("VmHWM")``
    is the peak since this call; False where /proc does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _address_space_room() -> int | None:
    """Bytes of address space left under RLIMIT_AS (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    size = proc_memory("VmSize").get("VmSize")
    return soft if size is None else max(0, soft - size)


def available_bytes() -> dict:
    """What this process can allocate now: ``bytes`` (the least of the limits below),
    ``mem_available``, ``cgroup_room`` and ``address_space_room`` (None where no such
    limit applies), and ``spill_helps`` (False under an address-space limit)."""
    mem, cgroup, address = _mem_available(), _cgroup_room(), _address_space_room()
    return {"bytes": min(v for v in (mem, cgroup, address) if v is not None), "mem_available": mem,
            "cgroup_room": cgroup, "address_space_room": address, "spill_helps": address is None}


def _spilling() -> bool:
    from . import memory
    return bool(memory.stats()["active"])


@contextlib.contextmanager
def guard(predicted_bytes: int, what: str, *, memory_check: bool = True, fixes: str = ""):
    """Runs the block if ``predicted_bytes`` fit; spills while it runs when they do not but
    the excess fits on the temporary directory's disk (warning where, how much and how to
    choose); otherwise raises :class:`NotEnoughMemory` before anything is allocated.
    ``what`` names the run in messages, ``fixes`` adds its own remedies."""
    from . import memory
    predicted = int(predicted_bytes)
    if not memory_check:
        warn_at_caller(f"[memory] {what}: memory_check=False, so the predicted peak of {predicted / GIB:.2f} GiB is "
                       "not compared with what is available; if it does not fit, the kernel ends the process")
        yield
        return
    room = available_bytes()
    if _spilling():
        yield
        return
    if predicted <= room["bytes"]:
        # Freed blocks the pool keeps for reuse count in the RSS and in no plan without a
        # cache limit: they may keep what is cached now and half the room left beside the
        # prediction, never the memory the run was predicted to need.
        cached = int(memory.stats()["bytes_cached"])
        with memory.bounded_cache(cached + (room["bytes"] - predicted) // 2):
            yield
        return
    directory = tempfile.gettempdir()
    ram = int(room["bytes"] * RAM_SHARE_WHEN_SPILLING)
    disk = shutil.disk_usage(directory).free
    if room["spill_helps"] and predicted - ram <= 0.9 * disk:
        warn_at_caller(f"[memory] {what}: the predicted peak of {predicted / GIB:.2f} GiB exceeds the "
                       f"{room['bytes'] / GIB:.2f} GiB this process can get, so blocks beyond {ram / GIB:.2f} GiB go to "
                       f"unlinked files in {directory} (about {(predicted - ram) / GIB:.2f} GiB of its "
                       f"{disk / GIB:.0f} GiB free) while it runs: slower, not killed. Choose the directory and the "
                       "RAM limit with `with rf.memory.spill(dir, ram_limit_gib=...)` around the run (or "
                       "`ringfire infer --spill-dir DIR --ram-limit GIB`), or set TMPDIR")
        with memory.spill(directory, ram_limit_gib=ram / GIB):
            yield
        return
    reason = ("the address-space limit (RLIMIT_AS) counts spill files too, so spilling cannot help"
              if not room["spill_helps"] else
              f"spilling the excess would need {(predicted - ram) / GIB:.2f} GiB of disk, {directory} has "
              f"{disk / GIB:.2f} GiB free")
    limits = ", ".join(f"{name} {room[key] / GIB:.2f} GiB" for name, key in
                       (("MemAvailable", "mem_available"), ("cgroup room", "cgroup_room"),
                        ("address space left", "address_space_room")) if room[key] is not None)
    raise NotEnoughMemory(f"[memory] {what} is predicted to need {predicted / GIB:.2f} GiB at its peak, more than the "
                          f"{room['bytes'] / GIB:.2f} GiB this process can get ({limits}), and {reason}. Fixes: "
                          "`with rf.memory.spill(dir)` on a disk with room (`ringfire infer --spill-dir DIR`)"
                          + (f", {fixes}" if fixes else "") + "; memory_check=False runs anyway (and may be killed)")
