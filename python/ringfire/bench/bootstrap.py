"""``ringfire bench bootstrap``: one CKKS bootstrap measured end to end.

Rows (measure, value, unit) for a preset (default ``N16_BOOT``, 128-bit):
the one-time precomputation (DFT diagonals, EvalMod polynomial), bootstrap
key generation, the median bootstrap time and each phase's (ModRaise,
CoeffsToSlots, EvalMod, SlotsToCoeffs) over ``repeat`` runs after a warm-up,
precision in bits against NumPy (mean and minimum over the slots, N/2
uniform reals in [-1, 1] encrypted with the public key at the default scale)
and against the input's own decryption (the bootstrap's own error, without
the encryption's),
levels left, key and plaintext bytes, key switches, failure probability and
the process's peak memory. ``meta=True`` adds Meta-BTS on an input precise
enough to show its gain (scale q_0 / 2^7, secret-key encryption).
On a GPU each phase ends with a synchronisation.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
import warnings

import numpy as np


def _bits(got, want) -> tuple[float, float]:
    err = np.abs(np.asarray(got) - np.asarray(want))
    return float(-np.log2(err.mean())), float(-np.log2(err.max()))


def bench_bootstrap(preset: str = "N16_BOOT", repeat: int = 2, device: str = "cpu", meta: bool = False,
                    quiet: bool = False, stc_first: bool = False, chained_rotations: bool = False) -> list[dict]:
    from .. import ckks

    def say(text):
        if not quiet:
            print(f"[bench bootstrap] {text}", file=sys.stderr, flush=True)

    rows = []

    def row(measure, value, unit):
        rows.append({"preset": preset, "device": device, "stc_first": stc_first,
                     "chained_rotations": chained_rotations, "measure": measure, "value": value, "unit": unit})

    ctx = ckks.Context.preset(preset, bootstrap={"stc_first": stc_first, "chained_rotations": chained_rotations})
    t = time.perf_counter()
    plan = ctx.bootstrap_plan()
    row("precomputation", time.perf_counter() - t, "s")
    say(f"{plan}")
    t = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    row("keygen (all keys)", time.perf_counter() - t, "s")
    say("keys ready; timing")
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = ctx.decrypt(ct, sk, insecure_exact=True)
    on_device = ctx.evaluator(keys.to(device) if device != "cpu" else keys)
    ct = ct.to(device)
    runs, phases, out = [], {}, None
    for i in range(repeat + 1):
        times = {}
        t = time.perf_counter()
        out = on_device.bootstrap(ct, timings=times)
        ctx.synchronize()
        elapsed = time.perf_counter() - t
        if i == 0:
            say(f"warm-up {elapsed:.2f} s")
            continue
        say(f"run {i}: {elapsed:.2f} s")
        runs.append(elapsed)
        for name, seconds in times.items():
            phases.setdefault(name, []).append(seconds)
    row("bootstrap", statistics.median(runs), "s")
    for name in ("mod_raise", "coeffs_to_slots", "eval_mod", "slots_to_coeffs"):
        row(f"  {name}", statistics.median(phases[name]), "s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ctx.decrypt(out, sk, insecure_exact=True)
    mean, low = _bits(got, x)
    row("precision mean", mean, "bits")
    row("precision min", low, "bits")
    mean, low = _bits(got, before)
    row("own error vs the input's decryption, mean", mean, "bits")
    row("own error vs the input's decryption, min", low, "bits")
    # Rescalings before the next bootstrap (SlotsToCoeffs first keeps its own levels at the bottom).
    row("levels left", out.level - ctx.bootstrap_min_level, "levels")
    if meta:
        q0 = ctx.params.q_primes[0]
        ratio = ctx.bootstrap_options["log_message_ratio"]
        # At the lowest level a bootstrap takes (0, or SlotsToCoeffs' levels when it runs first).
        precise = ctx.encrypt(ctx.encode(x, level=ctx.bootstrap_min_level, scale=float(2 ** int(np.log2(q0) - ratio))), sk)
        t = time.perf_counter()
        refined = on_device.bootstrap(precise.to(device), iterations=2, correction_bits=20)
        ctx.synchronize()
        row("Meta-BTS (2 bootstraps)", time.perf_counter() - t, "s")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean, low = _bits(ctx.decrypt(refined, sk, insecure_exact=True), x)
        row("Meta-BTS precision mean", mean, "bits")
        row("Meta-BTS precision min", low, "bits")
    row("Galois keys", plan.rotation_keys, "keys")
    row("bootstrap key bytes", plan.key_bytes / 2**30, "GiB")
    row("DFT plaintext bytes", plan.plaintext_bytes / 2**30, "GiB")
    row("key switches", plan.key_switches, "per bootstrap")
    row("failure probability", plan.failure_log2, "log2")
    row("planned peak for bootstrapping", plan.peak_bytes / 2**30, "GiB")
    row("  of which temporaries", plan.temporary_bytes / 2**30, "GiB")
    row("peak memory", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "GiB")
    return rows
