"""Refuses to load a native build on a CPU that lacks the instructions it was
compiled for, with a message instead of a crash (SIGILL) at the first kernel.

The build writes the x86 extensions its CPU target lets the compiler use to
``_build_isa.txt`` (the compiler's predefined macros, e.g. ``AVX2 BMI2``); we
compare them with the flags the kernel reports in ``/proc/cpuinfo``.
"""

from __future__ import annotations

import pathlib

# Predefined-macro names whose /proc/cpuinfo flag is not just the lower case.
_CPUINFO_NAME = {"BMI": "bmi1"}


def _flag_names(macro: str) -> set[str]:
    name = _CPUINFO_NAME.get(macro, macro.lower())
    return {name, name.replace("avx512", "avx512_")}  # cpuinfo writes avx512_vnni, avx512_bf16, ...


def required_extensions(isa_file: pathlib.Path) -> list[str]:
    try:
        return isa_file.read_text().split()
    except OSError:
        return []  # no record (an older or non-x86 build): nothing to check


def cpu_flags(cpuinfo: pathlib.Path = pathlib.Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU's flags, or None where the system does not say (then we do not check)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return None


def missing_extensions(required: list[str], flags: set[str] | None) -> list[str]:
    if flags is None:
        return []
    return [name for name in required if not _flag_names(name) & flags]


def check_cpu(package_dir: pathlib.Path) -> None:
    missing = missing_extensions(required_extensions(package_dir / "_build_isa.txt"), cpu_flags())
    if missing:
        raise ImportError(
            f"ringfire was compiled for a CPU with {', '.join(missing)}, which this CPU lacks (the build's "
            "build's CPU target, RINGFIRE_ARCH, was x86-64-v3 or that of the machine that built it): rebuild from "
            "the sources on this machine (pip install .), or build with RINGFIRE_ARCH= for any x86-64")
