"""Design-space and sensitivity sweeps over the cycle model (seed 004 §VI, Figs. 4, 7-10).

Every point regenerates the NTT program for its configuration (the optimized
program is list-scheduled against that machine, as SPIRAL did with its
analyzer) and runs the timing model; correctness does not depend on the
configuration and is checked separately (``run_ntt``, the tests).
"""

from __future__ import annotations

from .codegen import generate_ntt
from .config import RpuConfig
from .cycle import simulate

SWEEP_HPLES = (4, 8, 16, 32, 64, 128, 256)
SWEEP_BANKS = (32, 64, 128, 256)


def ntt_point(n: int, config: RpuConfig, optimized: bool = True, inverse: bool = False) -> dict:
    """Cycles and time of one generated NTT on one configuration."""
    prog = generate_ntt(n, inverse=inverse, optimized=optimized, config=config)
    report = simulate(prog.program, config)
    theory = n * (n.bit_length() - 1) // config.hples
    return {"n": n, "hples": config.hples, "banks": config.banks, "optimized": optimized, "inverse": inverse,
            "cycles": report.cycles, "seconds": report.seconds, "frequency_hz": report.frequency_hz,
            "theoretical_cycles": theory, "ratio_to_theory": report.cycles / theory,
            "utilization": report.utilization,
            "busyboard_stalls": dict(report.busyboard_stalls)}


def hple_bank_sweep(n: int = 65536, hples=SWEEP_HPLES, banks=SWEEP_BANKS, optimized: bool = True,
                    base: RpuConfig | None = None) -> list[dict]:
    """Seed 004 Fig. 4/5 as runtime per (HPLEs, banks)."""
    base = base or RpuConfig()
    return [ntt_point(n, base.replace(hples=h, banks=b), optimized) for h in hples for b in banks]


def sensitivity(n: int, parameter: str, values, base: RpuConfig | None = None, **fixed) -> list[dict]:
    """Cycles as one latency parameter varies (seed 004 Figs. 8-9); ``fixed`` sets others."""
    base = (base or RpuConfig()).replace(**fixed)
    rows = []
    for v in values:
        row = ntt_point(n, base.replace(**{parameter: v}))
        row[parameter] = v
        row.update(fixed)
        rows.append(row)
    return rows


def size_sweep(sizes=(1024, 2048, 4096, 8192, 16384, 32768, 65536), config: RpuConfig | None = None,
               optimized: bool = True) -> list[dict]:
    """NTT time vs ring size with the n*log2(n)/HPLEs bound (seed 004 Fig. 10)."""
    config = config or RpuConfig()
    return [ntt_point(n, config, optimized) for n in sizes]
