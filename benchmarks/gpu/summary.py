"""One screen of what device_check.sh found: each step's exit and time, the test
and sanitizer verdicts, and the headline numbers from the benchmarks' JSON,
beside the issue's goals. Reads the log folder the script writes.

    python benchmarks/gpu/summary.py LOGDIR
"""

from __future__ import annotations

import json
import pathlib
import re
import sys


def _json(folder: pathlib.Path, name: str):
    path = folder / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _last_match(path: pathlib.Path, pattern: str) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if re.search(pattern, line)]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(no verdict line)"


def steps(folder: pathlib.Path) -> list[str]:
    out = []
    for line in (folder / "steps.txt").read_text().splitlines() if (folder / "steps.txt").exists() else []:
        name, rc, seconds = line.split()
        verdict = "ok" if rc == "0" else ("TIMED OUT" if rc in ("124", "137") else f"exit {rc}")
        out.append(f"{name}: {verdict} ({seconds} s)")
    return ["steps: " + "; ".join(out)] if out else ["steps: none recorded"]


def ckks(folder: pathlib.Path, name: str = "ckks_gpu.json", title: str = "CKKS routines") -> list[str]:
    data = _json(folder, name)
    if not data:
        return [f"{title}: no result"]
    lines = [f"{title}, GPU ms synced (queued) / CPU ms:"]
    by_set: dict = {}
    for r in data["rows"]:
        by_set.setdefault(r["set"], []).append(f"{r['routine']} {r['gpu_ms']:.3f} ({r['gpu_queued_ms']:.3f})/"
                                               f"{r['cpu_ms']:.1f}")
    lines += [f"  {name}: " + ", ".join(rows) for name, rows in by_set.items()]
    fused = {r["set"]: r["gpu_ms"] for r in data["rows"] if r["set"].startswith("n16l24")
             and r["routine"] == "MulLinRS_fused"}
    if fused:
        lines.append("  goal: N=2^16 24 limbs multiply+relinearize+rescale <= 0.3 ms, fused: "
                     + ", ".join(f"{name} {ms:.3f} ms" for name, ms in fused.items())
                     + " (2026-11-22: 1.51 ms unfused, n16l24)")
    if data.get("streams"):
        lines.append("  streams: " + ", ".join(f"{s['streams']}: {s['ops_per_s']:.0f}/s" for s in data["streams"]))
    return lines


def ntt(folder: pathlib.Path) -> list[str]:
    data = _json(folder, "ntt_gpu.json")
    if not data:
        return ["NTT: no result"]
    pick = {(r["log_n"], r["limbs"]): r for r in data["rows"] if r["op"] == "ntt_forward" and r["kernel"] == "shared"}
    cells = [f"2^{n}x{limbs}: {r['us_per_limb']:.2f}" for (n, limbs), r in sorted(pick.items()) if n >= 14]
    copy = data.get("copy_gb_per_s")
    return [f"NTT forward us/limb (copy {copy:.0f} GB/s): " + ", ".join(cells) if copy else
            "NTT forward us/limb: " + ", ".join(cells),
            "  goals: batched 2^16 <= 1.0 us/limb, single <= 8 us"]


def ntt_side_by_side(folder: pathlib.Path) -> list[str]:
    """The ntt_batch step (and the ntt_blocks / ntt_pipeline steps of 2026-12-04, whose variants were
    removed after them): us per limb of each kernel variant, per shape."""
    out = []
    for name, title in (("ntt_gpu_blocks.json", "NTT us/limb, default vs four blocks an SM"),
                        ("ntt_gpu_pipeline.json", "NTT us/limb, one tile a block vs double-buffered"),
                        ("ntt_gpu_batch.json", "NTT us/limb, a batch: limb-major (shared) vs polynomial-major "
                                               "(shared_poly)")):
        data = _json(folder, name)
        if not data:
            continue
        cells: dict = {}
        for r in data["rows"]:
            key = f"{r['op'].replace('ntt_', '')} 2^{r['log_n']}x{r['limbs']}"
            cells.setdefault(key, []).append(f"{r['kernel']} {r['us_per_limb']:.3f}")
        out.append(f"{title}:")
        out += [f"  {key}: " + ", ".join(v) for key, v in cells.items()]
    return out


def bootstrap(folder: pathlib.Path, name: str = "bootstrap_gpu.json", title: str = "bootstrap") -> list[str]:
    rows = _json(folder, name)
    if not rows:
        return [f"{title}: no result"]
    out = []
    for r in rows:
        p = r["gpu_phases_s"]
        out.append(f"{title} {r['preset']} {r['order']}: GPU {r['gpu_s'] * 1e3:.1f} ms (first {r['gpu_first_s']:.2f} s;"
                   f" CtS {p['coeffs_to_slots'] * 1e3:.1f}, EvalMod {p['eval_mod'] * 1e3:.1f}, StC "
                   f"{p['slots_to_coeffs'] * 1e3:.1f}), CPU {r['cpu_s']:.2f} s (first {r.get('cpu_first_s', float('nan')):.2f}), "
                   f"{r['speedup']:.0f}x, "
                   f"{r['bits_mean']:.1f}/{r['bits_min']:.1f} bits, bit-identical {r['bit_identical']}")
    out.append("  goal: <= 100 ms (Cheddar 31.2 ms)")
    return out


def helr(folder: pathlib.Path, name: str = "helr_gpu.json", title: str = "HELR") -> list[str]:
    data = _json(folder, name)
    if not data:
        return [f"{title}: no result"]
    its = ", ".join(f"{s:.3f}" for s in data["iteration_s"])
    out = [f"{title} iterations on {data.get('device')} (s): {its}; bootstraps {data['bootstraps']} "
           f"(goal <= 0.1 s per iteration; Cheddar 40.7 ms)"]
    for key, label in (("profile", "warm iteration + bootstrap"),
                       ("profile_mask_encoded_each_time", "the same, mask encoded at every product")):
        prof = data.get(key)
        if prof:
            ops = ", ".join(f"{o['name']} {o['total_ms']:.1f}" for o in prof["by_operation"][:5])
            out.append(f"  {label}: wall {prof['wall_s'] * 1e3:.1f} ms, kernels {prof['kernel_s'] * 1e3:.1f} ms "
                       f"in {prof['launches']} launches, pool misses {prof['pool_misses']}; ms by operation: {ops}")
    return out


def resnet20(folder: pathlib.Path) -> list[str]:
    r = _json(folder, "resnet20_gpu.json")
    if not r:
        return ["ResNet-20 32x32: no result"]
    return [f"ResNet-20 {r['resolution']}x{r['resolution']} on {r.get('device')}: first image {r['first_image_s']} s, "
            f"next {r['per_image_s']} s ({r['bootstraps_per_image']} bootstraps, last image's {r['last_image_bootstrap_s']} s),"
            f" keygen {r['keygen_s']} s, top-1 {r['top1_agreement']}, max err {r['max_error_vs_polynomial_model']:.1e}"
            " vs the polynomial model (goal <= 10 s per image)"]


NCU_METRICS = ("Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput", "Achieved Occupancy",
                       "Registers Per Thread", "Issue Slots Busy", "Executed Ipc Active", "Duration")


def ncu_profile(folder: pathlib.Path, log: str, kernel: str, title: str) -> list[str]:
    """Nsight Compute's headline metrics of each profiled launch of `kernel`, one line each."""
    path = folder / log
    if not path.exists():
        return []
    launches, current = [], None
    for line in path.read_text(errors="replace").splitlines():
        if kernel in line:
            current = []
            launches.append(current)
            continue
        parts = line.split()
        for metric in NCU_METRICS:
            if current is not None and line.strip().startswith(metric) and len(parts) >= 2:
                current.append(f"{metric} {parts[-1]}{'' if parts[-2] in metric.split() else ' ' + parts[-2]}")
    if not launches:
        return [f"{title}: " + _last_match(path, r"ERR|rror|==PROF==")]
    return [f"{title} {i}: " + ", ".join(p) for i, p in enumerate(launches)]


def ntt_profile(folder: pathlib.Path) -> list[str]:
    return ncu_profile(folder, "ntt_profile.log", "ntt_pass_kernel", "NTT profile pass")


def convert_profile(folder: pathlib.Path) -> list[str]:
    return ncu_profile(folder, "convert_profile.log", "base_convert_fused", "fused base conversion profile")


def digits(folder: pathlib.Path) -> list[str]:
    rows = _json(folder, "digits.json")
    if not rows:
        return ["digits: no result"]
    return ["digits " + ", ".join(f"{r['model']} {r['activation']} {r['packing']} {r['device']}: "
                                  f"{r['images_per_s']:.0f} img/s" for r in rows)]


def bgv(folder: pathlib.Path) -> list[str]:
    out = []
    for scheme in ("bgv", "bfv"):
        gpu, cpu = (((_json(folder, f"{scheme}_{d}.json") or {}).get("results") or []) for d in ("gpu", "cpu"))
        if not gpu:
            continue
        cpu_ms = {r["routine"]: r["ms"] for r in cpu}
        cells = [f"{r['routine']} {r['ms']:.2f}" + (f"/{cpu_ms[r['routine']]:.1f}" if r["routine"] in cpu_ms else "")
                 + ("" if r["exact"] != "NO" else " NOT EXACT") for r in gpu if r["routine"] in ("MulRelin", "Rotate")]
        out.append(f"{scheme} {gpu[0]['set']} GPU/CPU ms: " + ", ".join(cells))
    return out or ["BGV/BFV bench: no result"]


def serve(folder: pathlib.Path) -> list[str]:
    data = _json(folder, "serve_gpu.json")
    if not data:
        return ["service on the GPU: no result (needs ringfire[serve]'s wheels in .whl/)"]
    return ["service on the GPU (ringfire serve --device cuda) " + ", ".join(
        f"{r['model']}: {r['service']['requests_per_s']:.1f} req/s, in-process {r['in_process']['requests_per_s']:.1f} "
        f"({100 * r['throughput_ratio']:.0f} %), health p99 {r['service']['health_p99_ms']:.0f} ms"
        for r in data.get("runs", []))]


def main(folder: str) -> None:
    d = pathlib.Path(folder)
    lines = ["=" * 30 + " device check summary " + "=" * 30]
    lines.append(_last_match(d / "gpu.txt", r"H100|H200|NVIDIA"))
    lines += steps(d)
    lines.append("tests: " + _last_match(d / "tests.log", r"passed|failed|error"))
    lines.append("sanitizer: " + _last_match(d / "sanitizer.log", r"ERROR SUMMARY") + " | "
                 + _last_match(d / "sanitizer.log", r"passed|failed"))
    if (d / "racecheck.log").exists():
        lines.append("racecheck: " + _last_match(d / "racecheck.log", r"ERROR SUMMARY|RACECHECK SUMMARY") + " | "
                     + _last_match(d / "racecheck.log", r"passed|failed"))
    # The variant steps: the same benchmarks with the three-pass base conversion
    # (split), the NTT's run-time pass shapes (generic), ModUp's separate scatter
    # (separate) or both (old), ModUp's digits one by one (digits) or the NTT's batches
    # polynomial-major (poly), for side-by-side views on one device (only when they
    # ran); blocks4 and pipelined are the logs of two variants removed on 2026-12-04.
    variants = {"split": "split base conversion", "generic": "NTT passes shaped at run time",
                "separate": "ModUp scatter kernel", "digits": "ModUp's digits one by one",
                "old": "NTT and ModUp as before 2026-11-28", "poly": "NTT batches polynomial-major",
                # measured on 2026-12-04 and removed (BENCHMARKS.md): kept so those logs still summarise
                "blocks4": "NTT at four blocks an SM", "pipelined": "NTT passes double-buffered"}
    extra = []
    for key, label in variants.items():
        for bench, title in ((ckks, "CKKS routines"), (bootstrap, "bootstrap"), (helr, "HELR")):
            name = f"{bench.__name__}_gpu_{key}.json"
            if (d / name).exists():
                part = (lambda folder, b=bench, n=name, t=f"{title}, {label}": b(folder, n, t))
                part.__name__ = name
                extra.append(part)

    def ntt_generic(folder):
        data = _json(folder, "ntt_gpu.json")
        rows = {(r["log_n"], r["limbs"], r["kernel"]): r for r in (data or {}).get("rows", [])
                if r["op"] == "ntt_forward"}
        cells = [f"2^{n}x{limbs}: {r['us_per_limb']:.2f}" for (n, limbs, k), r in sorted(rows.items())
                 if k == "generic" and n >= 14]
        return ["  the same, pass shapes read at run time: " + ", ".join(cells)] if cells else []

    parts = [ckks, bootstrap, ntt, ntt_generic, ntt_side_by_side, ntt_profile, convert_profile, helr, resnet20, digits,
             bgv, serve]
    parts[2:2] = extra
    for part in parts:
        try:
            lines += part(d)
        except Exception as e:  # a summary never hides the logs behind a traceback
            lines.append(f"{part.__name__}: could not summarise ({type(e).__name__}: {e})")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-out")
