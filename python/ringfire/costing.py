"""One cost model for traces: ring operations times a cost per operation.

A workload is ``{(primitive, n): count}`` (``Trace.primitives()``); a cost
table gives seconds per operation at each size. Summing count x cost is the
whole model; what differs between targets is where the costs come from:

* :func:`measure_cpu_costs` times ringfire's own kernels on this machine
  (per limb, batched over ``limbs`` limbs as the schemes call them, with
  the threads the process uses);
* :mod:`ringfire.rpu.projection` derives them from the RPU cycle model or
  seed 003's published latencies, and adds tiles and chip I/O.

>>> costs = measure_cpu_costs([2**14])                  # doctest: +SKIP
>>> price(trace, costs).seconds                          # doctest: +SKIP

The model prices each primitive as if it ran alone. ringfire's fused
kernels do better than their parts (a base conversion sums products
lazily; the key-switching inner product reduces once per 32 terms), so a
CPU projection over-estimates key switching; ``docs/projection.md`` gives
the measured ratios.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import _core
from .tracing import PRIMITIVES, Trace


@dataclass
class Priced:
    """A workload priced on one cost table: total seconds and one row per (primitive, n)."""
    seconds: float
    rows: list = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{'primitive':<13}{'n':>7}{'count':>15}{'each (us)':>11}{'total (s)':>11}"]
        for r in self.rows:
            lines.append(f"{r['primitive']:<13}{r['n']:>7}{r['count']:>15,}{r['each'] * 1e6:>11.3f}{r['total']:>11.4g}")
        lines.append(f"total {self.seconds:.4g} s")
        return "\n".join(lines)


def workload_counts(workload) -> dict:
    """``{(primitive, n): count}`` from a Trace, a saved trace dict, or such a mapping."""
    if isinstance(workload, Trace):
        return workload.primitives()
    if isinstance(workload, dict) and workload.get("format") == "ringfire-trace":
        return Trace.from_dict(workload).primitives()
    if isinstance(workload, dict):
        for key in workload:
            if not (isinstance(key, tuple) and len(key) == 2 and key[0] in PRIMITIVES):
                raise ValueError(f"[costing] workload keys are (primitive, n) with a primitive in "
                                 f"{', '.join(PRIMITIVES)}; got {key!r}")
        return dict(workload)
    raise TypeError(f"[costing] expected a ringfire Trace or a {{(primitive, n): count}} mapping, "
                    f"got {type(workload).__name__}")


def price(workload, cost) -> Priced:
    """Prices ``workload``; ``cost`` is a ``{(primitive, n): seconds}`` table or a function ``(primitive, n) -> seconds``."""
    lookup = cost if callable(cost) else _table_lookup(cost)
    rows, total = [], 0.0
    for (prim, n), count in sorted(workload_counts(workload).items(),
                                   key=lambda kv: (PRIMITIVES.index(kv[0][0]), kv[0][1])):
        if count == 0:
            continue
        each = lookup(prim, n)
        rows.append({"primitive": prim, "n": n, "count": int(count), "each": each, "total": count * each})
        total += count * each
    return Priced(total, rows)


def _table_lookup(table: dict):
    def lookup(prim: str, n: int) -> float:
        key = (prim, 0) if prim == "move_words" else (prim, n)
        if key not in table:
            sizes = sorted({k[1] for k in table if k[0] == prim})
            raise ValueError(f"[costing] the cost table has no {prim} at n={n} (it has n in {sizes}); "
                             f"measure that size")
        return table[key]
    return lookup


def measure_cpu_costs(sizes, limbs: int = 8, reps: int = 9, bits: int = 50) -> dict:
    """Seconds per limb operation at each ring size in ``sizes``, measured on this CPU.

    Each kernel runs over ``limbs`` limbs at once (the schemes' batched calls;
    the thread pool splits limbs) and its median time is divided by ``limbs``.
    ``move_words`` is per word (a copy of ``limbs`` x N words).
    """
    table = {}
    for n in sizes:
        n = int(n)
        if n < 1024 or n & (n - 1):
            raise ValueError(f"[costing] sizes must be powers of two >= 1024, got {n}")
        table[("ntt", n)] = _core.time_ntt(n, limbs, False, reps, bits) / limbs
        table[("intt", n)] = _core.time_ntt(n, limbs, True, reps, bits) / limbs
        table[("add", n)] = _core.time_ring_op(n, limbs, "add", reps, bits) / limbs
        table[("mult", n)] = _core.time_ring_op(n, limbs, "mult", reps, bits) / limbs
        table[("automorphism", n)] = _core.time_data_kernel(n, limbs, "automorphism", reps, bits) / limbs
        table[("move_words", 0)] = _core.time_data_kernel(n, limbs, "copy", reps, bits) / (limbs * n)
    return table
