#!/usr/bin/env python3
"""Tables over Z_t on BGV/BFV slots, and the functional bootstrap of slots built on them
(ringfire.bgv.SlotTable, ringfire.switching.LweToSlots, ringfire.switching.BgvSlotBootstrap):
time, time per slot, keys, memory, and agreement with NumPy.

    python benchmarks/bgv_slot_tables.py [--degree 15] [--depth 19] [--fhew STD128] [--bits 3]
        [--inputs 32768] [--counts 16,256,4096] [--boot-fhew STD128] [--boot-bits 8] [--scheme bgv]
        [--wide-counts 256] [--skip table,lwe,boot,tournament,wide] [--keep-bits 100] [--json out.json]

At ring degree 2^degree with t = 65537 (a batching prime up to N = 2^15) and a chain of a
60-bit q_0 and ``depth`` 36-bit primes (what ``depth=`` sizes, but for q_0; 128-bit):

1. ``SlotTable``: a random table of all 65537 residues with its values summed to 0 (degree
   65535, 16 levels) on every slot of a fresh ciphertext.
2. ``LweToSlots`` (Liu and Wang's amortized functional bootstrap): ``inputs`` FHEW ciphertexts
   of ``bits``-bit integers decrypted into the slots of one ciphertext and a table applied:
   the decryption, the table, per input; beside it, FHEW's own programmable bootstrap per value
   on the same machine (``fhew.apply``, batches of 256 on both cores).
3. ``BgvSlotBootstrap``: the first ``count`` slots of ``boot-bits``-bit integers into LWE in
   FHEW's ring and back through the table: the switch, the decryption, the table.
4. The largest of 16 slots and its one-hot position (``max_of_slots``, ``argmax_of_slots``:
   4 and 5 bootstraps).
5. 16-bit integers, the whole of Z_t (``--wide-counts``): the read's error measured against
   its model (``lut_wide`` of the identity), a fixed-point rescale by 2^7 (``rescale``, one
   bootstrap) and an exact refresh (``refresh_wide``, two bootstraps) of uniform integers.

Every result is decrypted and compared with NumPy (``wrong`` counts the slots that differ).
No peer evaluates tables on BGV/BFV slots; OpenFHE's 3-bit FHEW table (EvalFunc) took 477 ms
on this machine (issue 39's anchor).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings

import numpy as np

import ringfire as rf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402

from ringfire.switching.bgv_slot_bootstrap import _identity  # noqa: E402
from ringfire.switching.bgv_to_fhew import unit_factor  # noqa: E402

T = 65537


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def table_alone(ctx, sk, keys, keep_bits: float) -> dict:
    rng = np.random.default_rng(0)
    values = rng.integers(0, T, T)
    values[1] = (values[1] - values.sum()) % T                         # degree t - 2
    x = rng.integers(0, T, ctx.slots)
    ct = ctx.encrypt(x, keys)
    start = time.perf_counter()
    table = rf.bgv.SlotTable(ctx, values, signed=False)
    built = time.perf_counter()
    out = table(ct, keep_bits=keep_bits)
    done = time.perf_counter()
    wrong = int(np.sum(ctx.decrypt(out, sk, signed=False) != values[x]))
    return {"degree": table.degree, "levels": table.levels, "interpolation_s": round(built - start, 3),
            "evaluation_s": round(done - built, 2), "per_slot_ms": round((done - built) / ctx.slots * 1e3, 4),
            "slots": ctx.slots, "wrong": wrong, "out_level": out.level, "keep_bits": keep_bits,
            "noise_budget_bits": round(ctx.noise_budget(out, sk), 1)}


def lwe_to_slots(ctx, sk, fhew, fsk, bits: int, inputs: int) -> dict:
    switch = rf.switching.LweToSlots(ctx, fhew, bits=bits)
    start = time.perf_counter()
    key = switch.keygen(sk, fsk)
    keygen_s = time.perf_counter() - start
    m = np.random.default_rng(1).integers(0, 1 << bits, inputs)
    lwe = fhew.encrypt(m, fsk, bits=bits)

    def fn(v):
        return 3 * v * v + 1

    start = time.perf_counter()
    table = switch.table(fn)
    built = time.perf_counter()
    phases = switch.decrypt_in_slots(lwe, key)
    decrypted = time.perf_counter()
    out = table(phases)
    done = time.perf_counter()
    got = ctx.decrypt(out, sk)[:inputs]
    # FHEW's own programmable bootstrap of the same table, per value, batches of 256.
    sample = fhew.encrypt(m[:256], fsk, bits=bits)
    lut = fhew.lut(lambda v: (3 * v * v + 1) % (1 << bits), bits=bits)
    fhew.apply(lut, sample[:8])
    pbs_start = time.perf_counter()
    fhew.apply(lut, sample)
    pbs_ms = (time.perf_counter() - pbs_start) / 256 * 1e3
    total = done - built
    return {"fhew": fhew.params.name, "bits": bits, "inputs": inputs, "keygen_s": round(keygen_s, 2),
            "key_bytes": len(key.to_bytes()), "table_s": round(built - start, 3),
            "decryption_s": round(decrypted - built, 2), "table_eval_s": round(done - decrypted, 2),
            "total_s": round(total, 2), "per_input_ms": round(total / inputs * 1e3, 4),
            "fhew_pbs_per_value_ms": round(pbs_ms, 3), "wrong": int(np.sum(got != fn(m))),
            "failure_probability": switch.failure_probability(lwe), "out_level": out.level,
            "noise_budget_bits": round(ctx.noise_budget(out, sk), 1)}


def slot_bootstrap(ctx, sk, keys, fhew, fsk, bits: int, count: int) -> dict:
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=count, bits=bits)
    start = time.perf_counter()
    bkeys = boot.keygen(sk, fsk)
    keygen_s = time.perf_counter() - start
    half = 1 << bits
    x = np.random.default_rng(2).integers(-half, half, count)
    ct = ctx.encrypt(x, keys)
    boot.refresh(ct, bkeys)                                            # the table's interpolation, once
    start = time.perf_counter()
    mapped = boot.reader.at_level_zero(ct, bkeys.galois,
                                       lambda level, c: unit_factor(ctx, level, c, boot.unit))
    words = boot.ring._lwe_words(mapped, bkeys.switch, boot.reader.slot_map.positions)
    switched = time.perf_counter()
    phases = boot.decryption.decrypt(words.astype(np.int64), bkeys.decryption)
    decrypted = time.perf_counter()
    out = boot._table(_identity)(phases)
    done = time.perf_counter()
    got = ctx.decrypt(out, sk)[:count]
    return {"fhew_ring": fhew.params.name, "bits": bits, "count": count, "map": boot.reader.slot_map.method,
            "keygen_s": round(keygen_s, 2), "key_bytes": len(bkeys.to_bytes()),
            "switch_s": round(switched - start, 2), "decryption_s": round(decrypted - switched, 2),
            "table_s": round(done - decrypted, 2), "total_s": round(done - start, 2),
            "per_slot_ms": round((done - start) / count * 1e3, 2), "wrong": int(np.sum(got != x)),
            "failure_probability": boot.failure_probability(bkeys), "out_level": out.level,
            "noise_budget_bits": round(ctx.noise_budget(out, sk), 1)}


def tournament(ctx, sk, keys, fhew, fsk, bits: int, count: int) -> dict:
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=count, bits=bits)
    bkeys, galois = boot.keygen(sk, fsk), ctx.galois_keys(sk, boot.tournament_rotations)
    x = np.random.default_rng(3).integers(0, 1 << bits, count)
    ct = ctx.encrypt(x, keys)
    start = time.perf_counter()
    largest = boot.max_of_slots(ct, bkeys, galois)
    maxed = time.perf_counter()
    hot = boot.argmax_of_slots(ct, bkeys, galois)
    done = time.perf_counter()
    return {"count": count, "bits": bits, "max_of_slots_s": round(maxed - start, 1),
            "argmax_of_slots_s": round(done - maxed, 1), "bootstraps": (count.bit_length() - 1, count.bit_length()),
            "max_right": bool(ctx.decrypt(largest, sk)[0] == x.max()),
            "argmax_right": bool(np.array_equal(ctx.decrypt(hot, sk), (x == x.max()) * 1))}


def wide(ctx, sk, keys, fhew, fsk, count: int) -> dict:
    # Dense: refresh_wide reads its second digit from the first's level, below the staged map's.
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=count, bits=8, method="dense")
    bkeys = boot.keygen(sk, fsk)
    half = (T - 1) // 2
    x = np.random.default_rng(4).integers(-half, half + 1, count)
    ct = ctx.encrypt(x, keys)
    boot.lut_wide(ct, _identity, bkeys)                                 # the tables' interpolation, once
    boot.rescale(ct, 7, bkeys)
    start = time.perf_counter()
    read = boot.lut_wide(ct, _identity, bkeys)
    read_s = time.perf_counter() - start
    error = (ctx.decrypt(read, sk) - x + half) % T - half
    start = time.perf_counter()
    rescaled = boot.rescale(ct, 7, bkeys)
    rescale_s = time.perf_counter() - start
    off = ctx.decrypt(rescaled, sk) - x / 128
    inner = np.abs(x) < half - 64                      # within the read's error of +-(t-1)/2 a read may wrap
    start = time.perf_counter()
    fresh = boot.refresh_wide(ct, bkeys)
    refresh_s = time.perf_counter() - start
    return {"count": count, "map": boot.reader.slot_map.method, "read_error_model": round(boot.read_error(bkeys), 2),
            "read_error_measured": round(float(error.std()), 2), "read_error_max": int(np.abs(error).max()),
            "identity_read_s": round(read_s, 2), "rescale_s": round(rescale_s, 2),
            "rescale_max_off": round(float(np.abs(off[inner]).max()), 3),
            "rescale_rounded_exactly": round(float(np.mean(np.abs(off) <= 0.5)), 4),
            "refresh_wide_s": round(refresh_s, 2), "refresh_wide_wrong": int(np.sum(ctx.decrypt(fresh, sk) != x)),
            "out_level": fresh.level, "noise_budget_bits": round(ctx.noise_budget(fresh, sk), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--degree", type=int, default=15)
    ap.add_argument("--depth", type=int, default=19)
    ap.add_argument("--scheme", default="bgv", choices=["bgv", "bfv"])
    ap.add_argument("--fhew", default="STD128")
    ap.add_argument("--bits", type=int, default=3)
    ap.add_argument("--inputs", type=int, default=None, help="LweToSlots inputs (default: every slot)")
    ap.add_argument("--boot-fhew", default="STD128", help="the FHEW set whose ring the bootstrap switches through")
    ap.add_argument("--boot-bits", type=int, default=8)
    ap.add_argument("--counts", default="16,256,4096")
    ap.add_argument("--wide-counts", default="256", help="slots of the 16-bit part (lut_wide, rescale, refresh_wide)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: table, lwe, boot, tournament, wide")
    ap.add_argument("--keep-bits", type=float, default=rf.bgv.tables.KEEP_BITS,
                    help="BFV: the budget the table alone keeps (SlotTable's keep_bits)")
    ap.add_argument("--json")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    skip = set(filter(None, args.skip.split(",")))
    # The chain depth= sizes, but for a 60-bit q_0: the switch to FHEW reads level 0.
    ctx = getattr(rf, args.scheme).Context(2 ** args.degree, plain_modulus=T, coeff_bits=[60] + [36] * args.depth + [60])
    sk, keys = ctx.keygen()
    result = {"machine": cpu_model(), "cores": os.cpu_count(), "threads": os.environ.get("RINGFIRE_NUM_THREADS", "all"),
              "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "all"), "scheme": args.scheme,
              "N": ctx.poly_degree, "t": T, "levels": ctx.max_level, "log_q": round(ctx.params.log_qp, 1),
              "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d")}
    print(f"{args.scheme.upper()} N=2^{args.degree}, t={T}, {ctx.max_level} levels, log2 QP={ctx.params.log_qp:.0f}; "
          f"{result['machine']}")
    if "table" not in skip:
        result["table"] = table_alone(ctx, sk, keys, args.keep_bits)
        r = result["table"]
        print(f"SlotTable degree {r['degree']} ({r['levels']} levels) on {r['slots']} slots: {r['evaluation_s']} s "
              f"({r['per_slot_ms']} ms a slot), wrong {r['wrong']}, budget left {r['noise_budget_bits']} bits")
    if "lwe" not in skip:
        fhew = rf.tfhe.Context(args.fhew)
        fsk = fhew.keygen()
        r = result["lwe_to_slots"] = lwe_to_slots(ctx, sk, fhew, fsk, args.bits, args.inputs or ctx.slots)
        print(f"LweToSlots {r['fhew']} {r['bits']}-bit, {r['inputs']} inputs: decryption {r['decryption_s']} s + "
              f"table {r['table_eval_s']} s = {r['total_s']} s ({r['per_input_ms']} ms an input; FHEW's own "
              f"bootstrap {r['fhew_pbs_per_value_ms']} ms a value), wrong {r['wrong']}, keys "
              f"{r['key_bytes'] / 1e6:.0f} MB, p_fail {r['failure_probability']:.2g}")
    if "boot" not in skip:
        fhew = rf.tfhe.Context(args.boot_fhew)
        fsk = fhew.keygen()
        result["slot_bootstrap"] = []
        for count in map(int, args.counts.split(",")):
            r = slot_bootstrap(ctx, sk, keys, fhew, fsk, args.boot_bits, count)
            result["slot_bootstrap"].append(r)
            print(f"BgvSlotBootstrap through {r['fhew_ring']}'s ring, {r['bits']}-bit, {count} slots ({r['map']} map): "
                  f"switch {r['switch_s']} s + decryption {r['decryption_s']} s + table {r['table_s']} s = "
                  f"{r['total_s']} s ({r['per_slot_ms']} ms a slot), wrong {r['wrong']}, p_fail "
                  f"{r['failure_probability']:.2g}, out level {r['out_level']}, budget {r['noise_budget_bits']} bits, "
                  f"keys {r['key_bytes'] / 1e6:.0f} MB")
    if "tournament" not in skip:
        fhew = rf.tfhe.Context(args.boot_fhew)
        fsk = fhew.keygen()
        r = result["tournament"] = tournament(ctx, sk, keys, fhew, fsk, args.boot_bits, 16)
        print(f"max_of_slots over 16 {r['bits']}-bit slots: {r['max_of_slots_s']} s ({r['bootstraps'][0]} bootstraps), "
              f"right {r['max_right']}; argmax_of_slots {r['argmax_of_slots_s']} s ({r['bootstraps'][1]}), right "
              f"{r['argmax_right']}")
    if "wide" not in skip:
        fhew = rf.tfhe.Context(args.boot_fhew)
        fsk = fhew.keygen()
        result["wide"] = []
        for count in map(int, args.wide_counts.split(",")):
            r = wide(ctx, sk, keys, fhew, fsk, count)
            result["wide"].append(r)
            print(f"16-bit, {count} slots ({r['map']} map): read error {r['read_error_measured']} units (model "
                  f"{r['read_error_model']}, largest {r['read_error_max']}; the identity's table, degree 1: "
                  f"{r['identity_read_s']} s); rescale by 2^7 "
                  f"{r['rescale_s']} s, within {r['rescale_max_off']} of x/128 ({r['rescale_rounded_exactly']:.1%} "
                  f"rounded exactly); refresh_wide {r['refresh_wide_s']} s, wrong {r['refresh_wide_wrong']}, out level "
                  f"{r['out_level']}, budget {r['noise_budget_bits']} bits")
    result["peak_rss_gib"] = round(peak_gib(), 2)
    print(f"peak RSS {result['peak_rss_gib']} GiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
