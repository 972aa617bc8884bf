"""Benchmarks behind ``ringfire bench``: each returns rows (dicts) that the CLI
prints as a table or JSON. Timing loops run natively (``_core.time_*``) and
report the median of ``reps`` runs after a warm-up."""

from __future__ import annotations

import math
import platform
import statistics
import sys
import time

from .. import _core

MODMUL_METHODS = ("native", "barrett", "dhem", "alg4", "shoup", "mad_mod")


def _reps_for(seconds_per_call: float, budget: float, lo: int = 3, hi: int = 200) -> int:
    return max(lo, min(hi, int(budget / max(seconds_per_call, 1e-9))))


def _progress(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def machine_info() -> dict:
    return {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "threads": _core.num_threads(),
        "cuda_compiled": _core.cuda_compiled(),
        "rns_isa": _core.rns_isa(),  # the CPU kernels CKKS, BGV and BFV ran on (avx512, avx2)
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def bench_ntt(sizes, limbs_list, directions=("forward", "inverse"), bits=61, budget=0.3, quiet=False):
    """Batched NTT timings: one call transforms ``limbs`` limbs of degree N."""
    rows = []
    for n in sizes:
        log_n = int(math.log2(n))
        for limbs in limbs_list:
            for direction in directions:
                inverse = direction == "inverse"
                probe = _core.time_ntt(n, limbs, inverse, 1, bits)
                reps = _reps_for(probe, budget)
                seconds = _core.time_ntt(n, limbs, inverse, reps, bits)
                butterflies = limbs * (n // 2) * log_n
                row = {
                    "n": n, "limbs": limbs, "direction": direction, "bits": bits, "reps": reps,
                    "us_per_call": seconds * 1e6,
                    "us_per_limb": seconds * 1e6 / limbs,
                    "ns_per_butterfly": seconds * 1e9 / butterflies,
                    "limbs_per_second": limbs / seconds,
                }
                rows.append(row)
                _progress(f"  ntt N=2^{log_n} limbs={limbs:<3} {direction:<7} "
                          f"{row['us_per_limb']:9.1f} us/limb  {row['ns_per_butterfly']:.2f} ns/butterfly", quiet)
    return rows


def bench_modmul(bits_list=(30, 50, 60, 61), methods=MODMUL_METHODS, count=1 << 16, quiet=False):
    """Nanoseconds per modular product for each reduction."""
    rows = []
    for bits in bits_list:
        for method in methods:
            if method == "dhem" and bits > 60:
                rows.append({"bits": bits, "method": method, "ns_per_op": None,
                             "note": "needs len(q) <= 60 (4-bit headroom)"})
                continue
            seconds = _core.time_modmul(method, count, bits, 21)
            rows.append({"bits": bits, "method": method, "ns_per_op": seconds * 1e9 / count, "note": ""})
            _progress(f"  modmul {bits}-bit {method:<8} {rows[-1]['ns_per_op']:.2f} ns/op", quiet)
    return rows


def bench_polymul(sizes, limbs_list, bits=61, budget=0.3, quiet=False):
    """Negacyclic products: plain NTT path vs the Karatsuba-fused path."""
    rows = []
    for n in sizes:
        for limbs in limbs_list:
            result = {"n": n, "limbs": limbs, "bits": bits}
            for method in ("ntt", "karatsuba"):
                probe = _core.time_poly_mul(n, limbs, method, 1, bits)
                seconds = _core.time_poly_mul(n, limbs, method, _reps_for(probe, budget), bits)
                result[f"{method}_us"] = seconds * 1e6
            result["karatsuba_speedup"] = result["ntt_us"] / result["karatsuba_us"]
            rows.append(result)
            _progress(f"  polymul N={n} limbs={limbs}: ntt {result['ntt_us']:.1f} us, "
                      f"karatsuba {result['karatsuba_us']:.1f} us", quiet)
    return rows


def median_ms(fn, repeat: int, sync=lambda: None) -> float:
    """Median milliseconds of `repeat` calls after a warm-up; `sync` ends each call (a GPU synchronisation)."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def format_table(rows, columns) -> str:
    """Plain-text table; columns are (key, header, format)."""
    cells = [[h for _, h, _ in columns]]
    for row in rows:
        line = []
        for key, _, fmt in columns:
            value = row.get(key)
            line.append("n/a" if value is None else format(value, fmt))
        cells.append(line)
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    out = []
    for i, r in enumerate(cells):
        out.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)



def bench_ntt_gpu(sizes, limbs_list, device="cuda", bits=60, quiet=False):
    """GPU NTT timings (CUDA events, L2-defeating buffer rotation): both kernels, both directions."""
    from .. import cuda

    index = int(cuda.require_device(device).split(":")[1])
    rows = []
    for n in sizes:
        for limbs in limbs_list:
            for direction in ("forward", "inverse"):
                for kernel in ("shared", "radix2"):
                    t = _core.cuda_time_kernel(f"ntt_{direction}", n, limbs, bits=bits, kernel=kernel, device=index)
                    rows.append(dict(n=n, limbs=limbs, direction=direction, kernel=kernel,
                                     us_per_call=t["median_s"] * 1e6, us_per_limb=t["median_s"] * 1e6 / limbs,
                                     gb_per_s=16 * n * limbs / t["median_s"] / 1e9))
                    _progress(f"  N={n} limbs={limbs} {direction} {kernel}: {rows[-1]['us_per_call']:.2f} us", quiet)
    return rows
