#!/usr/bin/env python3
"""What a client sends: Galois keys made directly against master keys the server derives
them from (hierarchical rotation keys, docs/keys.md), and the bootstrapping keys.

    python benchmarks/key_sizes.py [--cases bgv,bfv,cnn,resnet8,resnet32,boot] [--json out.json]

Each case runs in its own process (its peak RSS is its own) and reports: the rotations the
workload needs and the level they serve, the serialized bytes of the direct Galois keys and
of the master keys, the client's time to make each, the server's time to derive the keys
from the loaded master bytes, and one rotation checked against NumPy with both key sets
(CKKS: bits of precision; BGV/BFV: exact). ``boot`` reports N16_BOOT's bootstrapping keys
(bytes, keygen time, streamed saving and loading against whole) and why derivation cannot
shrink them (the levels they serve leave no room under the 128-bit bound); ``keygen`` times
the client's keygen on N16_BOOT; ``first_use`` times ``keygen(bootstrap=True)`` and then four
bootstraps in the same process, with the process's peak RSS (the bootstrapping keys expand per
use by default; the relinearization key at its first use), and ``first_use_expanded`` the same
after ``keys.expand()`` (every key kept expanded: the fastest bootstraps); ``per_use_paired``
bootstraps with both kinds of bootstrapping keys in one process, alternating, so that the
machine's drift hits both alike; ``prng`` the seed expansion's throughput on one thread (uniform
residues below a 61-bit prime from the ChaCha20 stream); ``cold`` three bootstraps with the keys
and the DFT plaintexts in spill files (``rf.memory.spill`` with a 2 GiB limit, ``rf.memory.cold``;
the directory: $RINGFIRE_SPILL_DIR or the system's temporary one, which should be a disk), the
peak RSS split into anonymous memory and mapped file pages. Workloads:

- ``bgv``, ``bfv``: N = 2^15 (the N15 preset), every rotation 1..127 (the baby and giant
  steps of a 4096-wide BSGS matrix-vector product, or a 128-wide diagonal one) at level 8 of 17;
- ``cnn``: the digits CNN with inter packing (N = 2^13, one image per ciphertext);
- ``resnet8``, ``resnet32``: ResNet-20 at 8x8 and 32x32 with inter packing on N16_BOOT
  (sparse bootstrap over the model's period), as benchmarks/nn_bootstrapped_inter.py runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import ringfire as rf  # noqa: E402
from nn_scale import PeakSampler  # noqa: E402

CASES = ("bgv", "bfv", "cnn", "resnet8", "resnet32", "boot", "keygen", "first_use", "first_use_expanded",
         "per_use_paired", "prng", "cold")


def peak_rss_bytes() -> int:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited across fork and exec)."""
    return PeakSampler.status("VmHWM")


def workload(case: str):
    """(context, rotation steps, what it is)."""
    if case in ("bgv", "bfv"):
        return getattr(rf, case).Context.preset("N15"), list(range(1, 128)), "diagonal mat-vec 128x128"
    from ringfire.nn import zoo
    if case == "cnn":
        import nn_models as M
        x_train, y_train, _, _ = M.digits_split()
        onnx = M.cnn_onnx(M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="avg"), pool="avg")
        ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
        model = rf.nn.load(onnx, ctx, packing="inter", calibration=x_train[:64].reshape(-1, 1, 8, 8))
        return ctx, model.rotations(), "digits CNN, inter packing"
    from nn_bootstrapped import context
    r = 8 if case == "resnet8" else 32
    onnx = zoo.resnet20(resolution=r, classes=10, seed=0)[0].SerializeToString()
    ctx = context("N16_BOOT", rf.nn.inter_period(onnx))
    calibration = np.random.default_rng(0).uniform(0, 1, (64, 3, r, r))
    model = rf.nn.load(onnx, ctx, activation="poly", calibration=calibration, packing="inter")
    return ctx, model.rotations(), f"ResNet-20 {r}x{r}, inter packing"


def rotation_check(ctx, sk, keys, galois, steps: int, level: int) -> float:
    """Bits of precision (CKKS) or 1.0 if exact / 0.0 if not (BGV/BFV) of one rotation."""
    ev = ctx.evaluator(rf.rlwe.KeySet(public=keys.public, relin=keys.relin, galois=galois))
    if ctx.scheme == "ckks":
        x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
        ct = ev.mod_switch(ctx.encrypt(x, sk), level) if level < ctx.max_level else ctx.encrypt(x, sk)
        err = np.max(np.abs(ctx.decrypt(ev.rotate(ct, steps), sk).real - np.roll(x, -steps)))
        return float(-np.log2(err))
    t, row = ctx.params.plain_modulus, ctx.slots // 2
    x = np.random.default_rng(1).integers(0, t, ctx.slots)
    ct = ctx.encrypt(x, sk)
    while ct.level > level:
        ct = ev.mod_switch(ct, ct.level - 1)
    got = np.mod(ctx.decrypt(ev.rotate(ct, steps), sk), t)
    return float(np.array_equal(got, np.concatenate([np.roll(x[:row], -steps), np.roll(x[row:], -steps)])))


def measure_galois(case: str) -> dict:
    t0 = time.perf_counter()
    ctx, steps, what = workload(case)
    setup = time.perf_counter() - t0
    # BGV/BFV: the mat-vec after half the chain (a modulus switch makes its keys smaller and
    # its rotations faster); the models: where their rotations run, the top of the user's chain.
    level = ctx.max_level // 2 if ctx.scheme != "ckks" else ctx.master_key_level
    sk, keys = ctx.keygen()
    probe = steps[len(steps) // 2]
    t0 = time.perf_counter()
    direct = ctx.galois_keys(sk, steps, level=level)
    direct_s = time.perf_counter() - t0
    direct_bytes, direct_memory = len(direct.to_bytes()), direct.nbytes
    probe_direct = rotation_check(ctx, sk, keys, direct, probe, level)
    del direct  # one key set in memory at a time
    t0 = time.perf_counter()
    master = ctx.master_keys(sk, level=level)
    master_s = time.perf_counter() - t0
    wire = master.to_bytes()
    t0 = time.perf_counter()
    derived = ctx.derive_galois_keys(ctx.load(wire), steps)
    derive_s = time.perf_counter() - t0
    return {"case": case, "workload": what, "N": ctx.poly_degree, "scheme": ctx.scheme, "rotations": len(steps),
            "level": level, "max_level": ctx.max_level, "setup_s": setup,
            "direct_bytes": direct_bytes, "direct_in_memory_bytes": direct_memory, "direct_keygen_s": direct_s,
            "master_keys": len(master), "master_bytes": len(wire), "master_keygen_s": master_s,
            "server_derive_s": derive_s, "bytes_ratio": direct_bytes / len(wire),
            "keygen_ratio": direct_s / master_s, "probe_rotation": probe, "probe_direct": probe_direct,
            "probe_derived": rotation_check(ctx, sk, keys, derived, probe, level),
            "derived_in_memory_bytes": derived.nbytes, "peak_rss_bytes": peak_rss_bytes()}


def measure_boot(case: str) -> dict:
    """N16_BOOT's bootstrapping keys: bytes, keygen time, what saving and loading them costs
    in memory beyond the keys (streamed against whole), and why derivation cannot help."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    plan = ctx.bootstrap_plan()
    sk, _ = ctx.keygen()
    t0 = time.perf_counter()
    keys = ctx.bootstrap_keys(sk)
    keygen_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=os.environ.get("RINGFIRE_BENCH_DIR")) as tmp:
        path = pathlib.Path(tmp) / "bootstrap.keys"
        at_rest = PeakSampler.rss()
        with PeakSampler(0.02) as peak:
            t0 = time.perf_counter()
            size = keys.save_to(path)
            stream_s = time.perf_counter() - t0
        stream_over = peak.peak_rss - at_rest
        with PeakSampler(0.02) as peak:
            t0 = time.perf_counter()
            whole = keys.to_bytes()
            whole_s = time.perf_counter() - t0
        whole_over = peak.peak_rss - at_rest
        assert len(whole) == size
        del whole, keys
        loads = {mode: json.loads(subprocess.run([sys.executable, __file__, "--load", str(path), "--mode", mode],
                                                 capture_output=True, text=True, check=True).stdout)
                 for mode in ("stream", "whole")}
    rl = ctx._core.rlwe
    highest = rf._core.highest_derivation_level(rl)
    levels = sorted(set(ctx._native_bootstrapper("bench").rotation_levels.values()))
    return {"case": case, "workload": "N16_BOOT bootstrapping keys", "N": ctx.poly_degree,
            "galois_keys": plan.rotation_keys, "in_memory_bytes": plan.key_bytes, "wire_bytes": size,
            "keygen_s": keygen_s, "save_stream_s": stream_s, "save_stream_rss_over_keys": stream_over,
            "to_bytes_s": whole_s, "to_bytes_rss_over_keys": whole_over, "load": loads,
            "key_levels": levels, "highest_derivable_level": highest,
            "derivable_key_levels": [lvl for lvl in levels if lvl <= highest],
            "log_qp": ctx.params.log_qp, "bound": rf._core.max_log_qp(ctx.poly_degree, 128),
            "peak_rss_bytes": peak_rss_bytes()}


def measure_keygen(case: str) -> dict:
    """The client's keygen on N16_BOOT: the bootstrapping keys, 95 Galois keys at the user's
    top level, and the master keys (the DFT precomputation is made first and not counted)."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    ctx.bootstrap_plan()
    sk, _ = ctx.keygen()
    out = {"case": case, "workload": "N16_BOOT client keygen", "N": ctx.poly_degree,
           "threads": rf._core.num_threads() if hasattr(rf._core, "num_threads") else None}
    for name, make in (("bootstrap_keys_s", lambda: ctx.bootstrap_keys(sk)),
                       ("galois_95_s", lambda: ctx.galois_keys(sk, list(range(1, 96)))),
                       ("master_keys_s", lambda: ctx.master_keys(sk))):
        t0 = time.perf_counter()
        keys = make()
        out[name] = time.perf_counter() - t0
        del keys
    return out


def measure_first_use(case: str) -> dict:
    """keygen(bootstrap=True) on N16_BOOT, the RSS it leaves, then four bootstraps in the same
    process: where the seeded keys' expansion lands (the first use), and that later ones pay
    nothing for it."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    ctx.bootstrap_plan()
    t0 = time.perf_counter()
    sk, keys = ctx.keygen(bootstrap=True)
    out = {"case": case, "workload": "N16_BOOT keygen, then bootstraps", "keygen_s": time.perf_counter() - t0,
           "rss_after_keygen_bytes": peak_rss_bytes()}
    if case == "first_use_expanded":
        t0 = time.perf_counter()
        keys.expand()
        out["expand_s"] = time.perf_counter() - t0
    out["bootstrap_keys_resident_bytes"] = keys.bootstrap.resident_bytes
    ev = ctx.evaluator(keys)
    x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    out["bootstrap_s"] = []
    for _ in range(4):
        t0 = time.perf_counter()
        result = ev.bootstrap(ct)
        out["bootstrap_s"].append(time.perf_counter() - t0)
    out["bits"] = float(-np.log2(np.max(np.abs(ctx.decrypt(result, sk).real - x))))
    out["peak_rss_bytes"] = peak_rss_bytes()
    pool = rf.memory.stats()
    out["pool_in_use_bytes"], out["pool_cached_bytes"] = int(pool["bytes_in_use"]), int(pool["bytes_cached"])
    return out


def measure_per_use_paired(case: str, rounds: int = 6) -> dict:
    """Bootstrapping keys expanded per use (the default) against the same secret's keys kept
    expanded, in one process, alternating which goes first: the cost of expanding per use."""
    import statistics
    ctx = rf.ckks.Context.preset("N16_BOOT")
    sk, keys = ctx.keygen(bootstrap=True)
    keys.relin.expand()
    expanded = rf.rlwe.KeySet(public=keys.public, relin=keys.relin, bootstrap=ctx.bootstrap_keys(sk).expand())
    evaluators = {"per_use": ctx.evaluator(keys), "expanded": ctx.evaluator(expanded)}
    ct = ctx.encrypt(np.random.default_rng(1).uniform(-1, 1, ctx.slots), keys)
    for ev in evaluators.values():
        ev.bootstrap(ct)  # first uses: the relinearization key, the per-use keys' row positions
    times = {name: [] for name in evaluators}
    for i in range(rounds):
        for name in (("per_use", "expanded") if i % 2 == 0 else ("expanded", "per_use")):
            t0 = time.perf_counter()
            evaluators[name].bootstrap(ct)
            times[name].append(time.perf_counter() - t0)
    ratios = [a / b for a, b in zip(times["per_use"], times["expanded"])]
    return {"case": case, "workload": "N16_BOOT bootstraps, per-use and expanded keys alternating",
            "bootstrap_s": times, "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "resident_bytes": {"per_use": keys.bootstrap.resident_bytes,
                                                         "expanded": expanded.bootstrap.resident_bytes}}


def measure_cold(case: str, ram_limit_gib: float = 2.0) -> dict:
    """Bootstraps with the bootstrapping keys and the DFT plaintexts made in spill files: the
    process's anonymous memory against its mapped file pages (page cache the kernel may drop)."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    directory = tempfile.mkdtemp(dir=os.environ.get("RINGFIRE_SPILL_DIR"))
    with rf.memory.spill(directory, ram_limit_gib=ram_limit_gib):
        with rf.memory.cold():
            ctx.bootstrap_plan()
            sk, keys = ctx.keygen(bootstrap=True)
        ev = ctx.evaluator(keys)
        x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
        ct = ctx.encrypt(x, keys)
        times = []
        with PeakSampler(period=0.01) as peak:
            for _ in range(3):
                t0 = time.perf_counter()
                result = ev.bootstrap(ct)
                times.append(time.perf_counter() - t0)
    return {"case": case, "workload": f"N16_BOOT bootstraps, keys and plaintexts spilled ({ram_limit_gib:g} GiB limit)",
            "bootstrap_s": times, "bits": float(-np.log2(np.max(np.abs(ctx.decrypt(result, sk).real - x)))),
            "peak_rss_bytes": peak_rss_bytes(), "peak_anon_bytes": peak.peak_anon, "peak_file_bytes": peak.peak_file}


def measure_prng(case: str, chunk_mib: int = 4, chunks: int = 64, repeats: int = 5) -> dict:
    """GB/s of uniform residues below 2^61 - 1 (``uniform_below_many``, what a seed expands
    into), one thread, best of ``repeats``. In
    chunks of a few MiB, which the allocator reuses: fresh pages cost more than the expansion
    on a virtual machine and would be what this measured."""
    prng = rf._core.Prng.from_seed(bytes(32))
    size = chunk_mib << 20

    def best(run) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(chunks):
                run()
            times.append(time.perf_counter() - t0)
        return size * chunks / min(times) / 1e9

    return {"case": case, "workload": "seed expansion, one thread",
            "uniform_61bit_gb_s": best(lambda: prng.uniform_below_many((1 << 61) - 1, size // 8))}


def measure_load(path: str, mode: str) -> dict:
    """Loads the keys at ``path`` streamed (ctx.load_from) or whole (read, then ctx.load):
    the process's peak RSS against the keys' own size."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    base = PeakSampler.rss()
    t0 = time.perf_counter()
    keys = ctx.load_from(path) if mode == "stream" else ctx.load(pathlib.Path(path).read_bytes())
    seconds = time.perf_counter() - t0
    return {"mode": mode, "seconds": seconds, "peak_rss_over_start": peak_rss_bytes() - base,
            "keys_in_memory": ctx.bootstrap_plan().key_bytes, "keys": len(keys)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="bgv,bfv,cnn,resnet8")
    ap.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    ap.add_argument("--load", help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["stream", "whole"], help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.load:
        warnings.simplefilter("ignore")
        print(json.dumps(measure_load(args.load, args.mode)), flush=True)
        return
    if args.one:
        warnings.simplefilter("ignore")
        measure = {"boot": measure_boot, "keygen": measure_keygen,
                   "first_use": measure_first_use, "first_use_expanded": measure_first_use,
                   "per_use_paired": measure_per_use_paired, "prng": measure_prng,
                   "cold": measure_cold}.get(args.one, measure_galois)
        row = measure(args.one)
        print(json.dumps(row), flush=True)
        return
    rows = []
    for case in args.cases.split(","):
        out = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{case}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    mb = 1e6
    print("| workload | N | rotations | level | direct keys MB | master keys MB | ratio | client keygen s "
          "(direct / master) | server derive s | probe (direct / derived) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["case"] in ("boot", "keygen", "first_use", "first_use_expanded", "per_use_paired", "prng", "cold"):
            continue
        probe = (f"{r['probe_direct']:.1f} / {r['probe_derived']:.1f} bits" if r["scheme"] == "ckks"
                 else ("exact / exact" if r["probe_direct"] and r["probe_derived"] else "MISMATCH"))
        print(f"| {r['workload']} | 2^{r['N'].bit_length() - 1} | {r['rotations']} | {r['level']} | "
              f"{r['direct_bytes'] / mb:.0f} | {r['master_bytes'] / mb:.0f} | {r['bytes_ratio']:.1f}x | "
              f"{r['direct_keygen_s']:.2f} / {r['master_keygen_s']:.2f} | {r['server_derive_s']:.2f} | {probe} |")
    for r in rows:
        if r["case"] == "boot":
            gib, mib = 2**30, 2**20
            print(f"\nN16_BOOT bootstrapping keys: {r['galois_keys']} Galois keys at levels {r['key_levels']}, "
                  f"{r['in_memory_bytes'] / gib:.2f} GiB in memory, {r['wire_bytes'] / gib:.2f} GiB serialized, "
                  f"keygen {r['keygen_s']:.1f} s; master keys fit levels <= {r['highest_derivable_level']} only "
                  f"(log2 QP = {r['log_qp']:.0f} of {r['bound']} bits)")
            print(f"saving: streamed +{r['save_stream_rss_over_keys'] / mib:.0f} MiB over the keys "
                  f"({r['save_stream_s']:.1f} s), to_bytes +{r['to_bytes_rss_over_keys'] / mib:.0f} MiB "
                  f"({r['to_bytes_s']:.1f} s)")
            for mode, load in r["load"].items():
                print(f"loading {mode}: peak RSS +{load['peak_rss_over_start'] / gib:.2f} GiB "
                      f"({load['keys_in_memory'] / gib:.2f} GiB of keys once expanded; they load seeded, "
                      f"{r['wire_bytes'] / gib:.2f} GiB) in {load['seconds']:.1f} s")
        if r["case"] == "keygen":
            print(f"\nN16_BOOT client keygen: bootstrapping keys {r['bootstrap_keys_s']:.1f} s, 95 Galois keys "
                  f"{r['galois_95_s']:.1f} s, master keys {r['master_keys_s']:.2f} s")
        if r["case"] in ("first_use", "first_use_expanded"):
            expanded = f", keys.expand() {r['expand_s']:.1f} s" if "expand_s" in r else ", keys as made"
            print(f"\nN16_BOOT keygen(bootstrap=True) {r['keygen_s']:.1f} s{expanded}, RSS after keygen "
                  f"{r['rss_after_keygen_bytes'] / 2**30:.2f} GiB; bootstraps "
                  + ", ".join(f"{t:.1f}" for t in r["bootstrap_s"]) + f" s; {r['bits']:.1f} bits; "
                  f"peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB")
        if r["case"] == "cold":
            print(f"\n{r['workload']}: bootstraps " + ", ".join(f"{t:.1f}" for t in r["bootstrap_s"])
                  + f" s, {r['bits']:.1f} bits; peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB (anonymous "
                  f"{r['peak_anon_bytes'] / 2**30:.2f}, file pages {r['peak_file_bytes'] / 2**30:.2f})")
        if r["case"] == "prng":
            print(f"\nseed expansion, one thread: uniform residues below 2^61 - 1 at "
                  f"{r['uniform_61bit_gb_s']:.2f} GB/s")
        if r["case"] == "per_use_paired":
            print("\nN16_BOOT bootstraps in one process, alternating: per-use keys "
                  + ", ".join(f"{t:.2f}" for t in r["bootstrap_s"]["per_use"]) + " s; expanded keys "
                  + ", ".join(f"{t:.2f}" for t in r["bootstrap_s"]["expanded"])
                  + f" s; per-use / expanded median {r['ratio_median']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f})")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
