"""Regenerates the numbers and figures of docs/rpu.md (the RPU reproduction report).

    python benchmarks/rpu_report.py [--out docs] [--quick]

Writes the figures ``docs/figures/rpu_*.png`` and, with ``--json-out PATH``,
every number quoted in the doc as JSON. matplotlib is optional: without it only the JSON
and the printed tables are produced. ``--quick`` uses a smaller sweep grid.
Takes ~2-3 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ringfire import ring
from ringfire.rpu import RpuConfig, generate_ntt, run_ntt, trebuchet_tile
from ringfire.rpu.sweep import SWEEP_BANKS, SWEEP_HPLES, hple_bank_sweep, ntt_point, sensitivity, size_sweep

N = 65536


def headline() -> dict:
    out = {}
    q = ring.find_primes(128, 1, N)[0]
    for inverse in (False, True):
        t0 = time.perf_counter()
        prog = generate_ntt(N, inverse=inverse)
        gen = time.perf_counter() - t0
        r = run_ntt(prog, q)
        r["codegen_seconds"] = gen
        r["wall_seconds"] = time.perf_counter() - t0
        out["inverse" if inverse else "forward"] = {k: r[k] for k in (
            "cycles", "seconds", "frequency_hz", "verified", "oracle", "theoretical_cycles", "utilization",
            "stalls", "instruction_counts", "codegen_seconds", "functional_seconds", "cycle_model_seconds",
            "wall_seconds")}
    literal = ntt_point(N, RpuConfig(busy_reads=True))
    out["busy_reads_literal"] = {"cycles": literal["cycles"], "seconds": literal["seconds"]}
    return out


def trebuchet() -> dict:
    return {f"v{v}": ntt_point(N, trebuchet_tile(v)) for v in (1, 2)}


def naive_vs_optimized() -> list[dict]:
    rows = []
    for h in SWEEP_HPLES:
        cfg = RpuConfig(hples=h, banks=128)
        opt, naive = ntt_point(N, cfg, True), ntt_point(N, cfg, False)
        rows.append({"hples": h, "optimized_cycles": opt["cycles"], "naive_cycles": naive["cycles"],
                     "speedup": naive["cycles"] / opt["cycles"],
                     "naive_shuffle_busyboard_wait": naive["busyboard_stalls"]["shuffle"],
                     "optimized_shuffle_busyboard_wait": opt["busyboard_stalls"]["shuffle"]})
    return rows


def sensitivities() -> dict:
    return {
        "mul_latency_ii": [r for ii in (1, 2, 3, 4) for r in sensitivity(N, "mul_latency", (4, 8, 12, 16, 24), mul_ii=ii)],
        "ls_shuffle": [r for ls in (4, 6, 8, 10) for r in sensitivity(N, "shuffle_latency", (1, 3, 5, 7, 9, 12, 16),
                                                                      ls_latency=ls)],
    }


def slim(rows, keys):
    return [{k: r[k] for k in keys if k in r} for r in rows]


def figures(report: dict, outdir: Path) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: skipping figures")
        return []
    figdir = outdir / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    made = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for b in sorted({r["banks"] for r in report["sweep"]}):
        rows = [r for r in report["sweep"] if r["banks"] == b]
        ax.plot([r["hples"] for r in rows], [r["seconds"] * 1e6 for r in rows], "o-", label=f"{b} banks")
    ax.axhline(6.7, color="k", ls="--", lw=1, label="seed 004: 6.7 us (128,128)")
    ax.set(xscale="log", yscale="log", xlabel="HPLEs", ylabel="64K NTT time (us)", title="HPLE x bank sweep")
    ax.set_xticks(SWEEP_HPLES, [str(h) for h in SWEEP_HPLES])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(figdir / "rpu_sweep.png", dpi=120)
    made.append("rpu_sweep.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    rows = report["naive_vs_optimized"]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["naive_cycles"] for r in rows], 0.4, label="naive")
    ax.bar([x + 0.2 for x in xs], [r["optimized_cycles"] for r in rows], 0.4, label="optimized")
    ax.set_xticks(list(xs), [str(r["hples"]) for r in rows])
    ax.set(yscale="log", xlabel="HPLEs (128 banks)", ylabel="64K NTT cycles", title="Optimized vs naive (Fig. 7)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figdir / "rpu_naive_vs_optimized.png", dpi=120)
    made.append("rpu_naive_vs_optimized.png")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    sens = report["sensitivity"]
    for ii in sorted({r["mul_ii"] for r in sens["mul_latency_ii"]}):
        rows = [r for r in sens["mul_latency_ii"] if r["mul_ii"] == ii]
        a1.plot([r["mul_latency"] for r in rows], [r["cycles"] for r in rows], "o-", label=f"II={ii}")
    a1.set(xlabel="multiplier latency", ylabel="64K NTT cycles", title="Multiplier (Fig. 8)")
    a1.legend()
    for ls in sorted({r["ls_latency"] for r in sens["ls_shuffle"]}):
        rows = [r for r in sens["ls_shuffle"] if r["ls_latency"] == ls]
        a2.plot([r["shuffle_latency"] for r in rows], [r["cycles"] for r in rows], "o-", label=f"LS latency {ls}")
    a2.set(xlabel="shuffle latency", ylabel="64K NTT cycles", title="SBAR / VBAR (Fig. 9)")
    a2.legend()
    fig.tight_layout()
    fig.savefig(figdir / "rpu_sensitivity.png", dpi=120)
    made.append("rpu_sensitivity.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    rows = report["sizes"]
    ax.plot([r["n"] for r in rows], [r["seconds"] * 1e6 for r in rows], "o-", label="model (128,128)")
    ax.plot([r["n"] for r in rows], [r["theoretical_cycles"] / r["frequency_hz"] * 1e6 for r in rows], "s--",
            label="n log2 n / (HPLEs f)")
    ax.plot([16384, 65536], [1.5, 6.7], "k*", ms=10, label="seed 004")
    ax.set(xscale="log", yscale="log", xlabel="ring size n", ylabel="NTT time (us)", title="NTT time vs n (Fig. 10)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figdir / "rpu_sizes.png", dpi=120)
    made.append("rpu_sizes.png")
    plt.close("all")
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json-out", default=None, help="write all numbers to this JSON file")
    args = parser.parse_args()
    out = Path(args.out)
    t0 = time.perf_counter()
    report = {"headline": headline()}
    print("headline", json.dumps({k: v["cycles"] for k, v in report["headline"].items()}))
    report["trebuchet"] = {k: {"cycles": v["cycles"], "seconds": v["seconds"]} for k, v in trebuchet().items()}
    print("trebuchet", report["trebuchet"])
    hples, banks = ((16, 128, 256), (32, 128)) if args.quick else (SWEEP_HPLES, SWEEP_BANKS)
    report["sweep"] = slim(hple_bank_sweep(N, hples, banks),
                           ("hples", "banks", "cycles", "seconds", "frequency_hz", "utilization"))
    report["naive_vs_optimized"] = naive_vs_optimized()
    report["sensitivity"] = {k: slim(v, ("mul_latency", "mul_ii", "ls_latency", "shuffle_latency", "cycles"))
                             for k, v in sensitivities().items()}
    report["sizes"] = slim(size_sweep(), ("n", "cycles", "seconds", "frequency_hz", "theoretical_cycles",
                                          "ratio_to_theory"))
    report["figures"] = figures(report, out)
    report["report_seconds"] = time.perf_counter() - t0
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("naive_vs_optimized", "sizes")}, indent=1))
    print(f"figures {report['figures']} in {report['report_seconds']:.0f} s")


if __name__ == "__main__":
    main()
