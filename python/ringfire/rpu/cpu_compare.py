"""Seed 003's Table 2: kernel latency on one CPU core against one RPU tile and whole chips.

CPU latencies are measured on this machine, one thread, three ways: ringfire's
64-bit RNS kernels on one 60-bit limb and on two (a ~120-bit tower as
RNS holds it), and a plain 128-bit-word implementation (``Modulus128``, one
~124-bit prime), the arithmetic seed 003's PALISADE baseline used. RPU
latencies come from the cycle model (TREBUCHET tile v2, the tile of
seed 003's 12.3 us NTT) and from the paper.
"""

from __future__ import annotations

from .. import _core
from .config import trebuchet_tile
from .projection import CONFIGS, model_cost

SEED003_TABLE2_US = {"ringAdd": (333.0, 1.73), "ringMult": (1240.0, 1.73), "NTT": (7807.0, 12.3)}
CHIPLET_TILES = 14
CHIPLETS = 4


def table2(n: int = 65536, reps: int = 15) -> list[dict]:
    """One row per kernel: CPU microseconds (three ways), RPU microseconds (model, paper), speedups."""
    tile = trebuchet_tile(CONFIGS["model2"]["tile"])
    rows = []
    for kernel, prim in (("ringAdd", "add"), ("ringMult", "mult"), ("NTT", "ntt")):
        if prim == "ntt":
            one = _core.time_ntt(n, 1, False, reps, 60)
            two = _core.time_ntt(n, 2, False, reps, 60)
        else:
            one = _core.time_ring_op(n, 1, prim, reps, 60)
            two = _core.time_ring_op(n, 2, prim, reps, 60)
        wide = _core.time_ring128(n, prim, reps, 124)
        rpu = model_cost(prim, n, tile)
        paper_cpu, paper_rpu = SEED003_TABLE2_US[kernel]
        rows.append({"kernel": kernel, "n": n, "cpu_rns64_1limb_us": one * 1e6, "cpu_rns64_2limbs_us": two * 1e6,
                     "cpu_128bit_us": wide * 1e6, "rpu_model_us": rpu * 1e6, "rpu_seed003_us": paper_rpu,
                     "seed003_cpu_us": paper_cpu,
                     "speedup_tile_128bit": wide / rpu, "speedup_tile": two / rpu,
                     "speedup_chiplet": two / rpu * CHIPLET_TILES,
                     "speedup_4_chiplets": two / rpu * CHIPLET_TILES * CHIPLETS,
                     "seed003_speedup_tile": paper_cpu / paper_rpu})
    return rows


def format_table2(rows: list[dict]) -> str:
    head = (f"{'kernel':<9}{'CPU 1x64b':>11}{'CPU 2x64b':>11}{'CPU 128b':>10}{'paper CPU':>11}"
            f"{'RPU model':>11}{'paper RPU':>11}{'tile x 128b':>13}{'tile x':>8}{'chiplet x':>11}{'4 chiplets x':>14}"
            f"{'paper tile x':>14}")
    lines = [head, "(microseconds; speedups of the model tile over the 128-bit column, then over the two-limb RNS "
                   "column, a ~120-bit tower as ringfire computes it; chiplet = 14 tiles)"]
    for r in rows:
        lines.append(f"{r['kernel']:<9}{r['cpu_rns64_1limb_us']:>11.1f}{r['cpu_rns64_2limbs_us']:>11.1f}"
                     f"{r['cpu_128bit_us']:>10.1f}{r['seed003_cpu_us']:>11.0f}{r['rpu_model_us']:>11.2f}"
                     f"{r['rpu_seed003_us']:>11.2f}{r['speedup_tile_128bit']:>13.0f}{r['speedup_tile']:>8.0f}{r['speedup_chiplet']:>11.0f}"
                     f"{r['speedup_4_chiplets']:>14.0f}{r['seed003_speedup_tile']:>14.0f}")
    return "\n".join(lines)

