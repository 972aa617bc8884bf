"""``ringfire bench fbs``: lookup tables by CKKS functional bootstrapping, measured end
to end (:mod:`ringfire.ckks.lookup`).

Rows (table, measure, value, unit) for a bootstrappable preset (default ``N16_BOOT``,
128-bit, full packing): the precomputation and key generation once; then, for each
table size ``p``, a random table over ``Z_p``, the slots filled with every residue
(repeated, shuffled) and encrypted with the public key: the median time of ``ev.lut``
over ``repeat`` runs after a warm-up and its phases, the time per slot, the precision
in bits against the plaintext table (mean and minimum over all slots; the minimum again
after the default decryption, whose added noise masks the key), the level it
lands on and the table's error gain; then four tables of the same input in one
functional bootstrap (``ev.luts``), and two inputs packed as ``a + ib`` (``ev.lut_pair``);
with ``sign_bits``, the sign of wider integers by digits (``ev.sign_integer``); with
``floor = (bits, shift)``, their floor division by ``2^shift`` (``ev.floor_divide``); with
``slots``, a context of that many slots (sparse packing: every vector repeats with that
period, and the per-slot figures divide by it).
A plain bootstrap of the same ciphertext is timed
in the same run, so the ratio between the two reads on any machine.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
import warnings

import numpy as np


def bench_fbs(preset: str = "N16_BOOT", tables=(16, 256), repeat: int = 1, device: str = "cpu",
              quiet: bool = False, sign_bits=(), slots: int | None = None, floor=()) -> list[dict]:
    from .. import ckks
    from ..ckks import lookup

    def say(text):
        if not quiet:
            print(f"[bench fbs] {text}", file=sys.stderr, flush=True)

    rows = []

    def row(table, measure, value, unit):
        rows.append({"preset": preset, "device": device, "table": table, "measure": measure, "value": value,
                     "unit": unit})

    def timed(run):
        """Median seconds of `repeat` runs after a warm-up, with the last result and phases."""
        seconds, phases, out = [], {}, None
        for i in range(repeat + 1):
            times = {}
            t = time.perf_counter()
            out = run(times)
            ctx.synchronize()
            if i == 0:
                continue
            seconds.append(time.perf_counter() - t)
            for name, value in times.items():
                phases.setdefault(name, []).append(value)
        return statistics.median(seconds), {k: statistics.median(v) for k, v in phases.items()}, out

    if floor and len(floor) != 2:
        raise ValueError(f"[bench fbs] --floor is BITS,SHIFT (two integers), got {floor!r}")
    ctx = ckks.Context.preset(preset, bootstrap={"slots": slots}) if slots else ckks.Context.preset(preset)
    n = slots or ctx.slots  # the slots that hold distinct values (sparse packing: a period)
    t = time.perf_counter()
    ctx.bootstrap_plan()
    row("", "precomputation", time.perf_counter() - t, "s")
    t = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    row("", "keygen (all keys)", time.perf_counter() - t, "s")
    ev = ctx.evaluator(keys.to(device) if device != "cpu" else keys)
    rng = np.random.default_rng(0)
    say(f"{preset}: {n} slots; keys ready")
    for p in tables:
        table = rng.uniform(-1, 1, p)
        m = np.tile(rng.permutation(np.resize(np.arange(p), n)), ctx.slots // n)
        ct = ctx.encrypt(m.astype(float), keys).to(device)
        first = time.perf_counter()
        ev.lut(ct, table, modulus=p)  # the first lookup also builds its transforms
        ctx.synchronize()
        row(p, "first lookup (builds its transforms)", time.perf_counter() - first, "s")
        seconds, phases, out = timed(lambda times: ev.lut(ct, table, modulus=p, timings=times))
        say(f"p={p}: {seconds:.2f} s")
        row(p, "lookup", seconds, "s")
        for name in ("slots_to_coeffs", "mod_raise", "coeffs_to_slots", "eval_lut"):
            row(p, f"  {name}", phases[name], "s")
        row(p, "per slot", seconds / n * 1e3, "ms")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = ctx.decrypt(out, sk, insecure_exact=True).real
        err = np.abs(got - table[m])
        row(p, "precision mean", float(-np.log2(err.mean())), "bits")
        row(p, "precision min", float(-np.log2(err.max())), "bits")
        # What a user reads: the default decryption adds noise the size of the result's
        # own error (its estimate: a lookup's imaginary parts cannot measure it).
        released = np.abs(ctx.decrypt(out, sk).real - table[m])
        row(p, "precision min, default decryption", float(-np.log2(released.max())), "bits")
        row(p, "output level", out.level, "level")
        row(p, "error gain", lookup.error_gain(table), "x")
        several = [rng.uniform(-1, 1, p) for _ in range(4)]
        seconds, _, outs = timed(lambda times: ev.luts(ct, several, modulus=p, timings=times))
        row(p, "4 tables in one (ev.luts)", seconds, "s")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            worst = max(np.abs(ctx.decrypt(o, sk, insecure_exact=True).real - t[m]).max() for o, t in zip(outs, several))
        row(p, "4 tables, precision min", float(-np.log2(worst)), "bits")
        m2 = np.tile(rng.permutation(m[:n]), ctx.slots // n)
        ct2 = ctx.encrypt(m2.astype(float), keys).to(device)
        seconds, _, pair = timed(lambda times: ev.lut_pair(ct, ct2, table, modulus=p, timings=times))
        row(p, "2 inputs as a + ib (ev.lut_pair)", seconds, "s")
        row(p, "  per value", seconds / (2 * n) * 1e3, "ms")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            worst = max(np.abs(ctx.decrypt(o, sk, insecure_exact=True).real - table[v]).max()
                        for o, v in zip(pair, (m, m2)))
        row(p, "2 inputs, precision min", float(-np.log2(worst)), "bits")

    def integers(bits, label, measure, run, exact):
        """Integers of `bits` bits (the extremes and 0 among them), `run` on them timed, and
        its slots against `exact` of them in NumPy."""
        half = 2 ** (bits - 1)
        period = rng.integers(-half, half, n)
        period[:3] = [-half, 0, half - 1]
        v = np.tile(period, ctx.slots // n)
        ct = ctx.encrypt(v.astype(float), keys).to(device)
        seconds, _, out = timed(lambda times: run(ct))
        row(label, measure, seconds, "s")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            error = np.abs(ctx.decrypt(out, sk, insecure_exact=True).real - exact(v))
        row(label, "wrong slots (|error| >= 1/2)", int(np.sum(error >= 0.5)), "slots")
        row(label, "precision min", float(-np.log2(error.max())), "bits")

    # Flat digit tables where they fit (rf.ckks.lookup.uses_flat_tables): the label says which ran.
    digits = "4-bit digits, " + ("flat" if lookup.uses_flat_tables(ctx, 16, None) else "plain")
    for bits in sign_bits:
        integers(bits, f"sign {bits}-bit", f"ev.sign_integer ({digits})",
                 lambda ct: ev.sign_integer(ct, bits=bits), np.sign)
    if floor:
        bits, shift = floor
        integers(bits, f"floor {bits}-bit / 2^{shift}", f"ev.floor_divide ({digits})",
                 lambda ct: ev.floor_divide(ct, shift, bits=bits), lambda v: np.floor_divide(v, 2**shift))
    x = ctx.encrypt(np.tile(rng.uniform(-1, 1, n), ctx.slots // n), keys).to(device)
    seconds, _, _ = timed(lambda times: ev.bootstrap(x, timings=times))
    row("", "plain bootstrap, same run", seconds, "s")
    row("", "peak memory", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "GiB")
    return rows
