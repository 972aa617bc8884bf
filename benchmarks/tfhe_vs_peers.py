#!/usr/bin/env python3
"""FHEW/TFHE: ringfire beside OpenFHE's binfhe, in one run on one machine.

    python benchmarks/tfhe_vs_peers.py [--quick] [--openfhe-python PATH] [--concrete-python PATH] [--json PATH]

* ringfire: ``ringfire bench tfhe --json`` in a child process (STD128,
  STD128_LMKCDEY, STD128_LP, STD128_LUT and the torus sets: key generation, key bytes, NAND on one thread, a
  batch of NANDs on every thread, 2- and 3-bit tables, 16-bit integer addition
  and comparison, the noise model's failure probabilities).
* OpenFHE 1.6.1 binfhe (the ``openfhe`` wheel, which needs Python 3.10:
  benchmarks/peers/setup_peers.sh makes ~/.ringfire-peers/py310):
  benchmarks/tfhe/openfhe_binfhe.py with OMP_NUM_THREADS=1 (NAND with GINX and
  LMKCDEY at STD128, EvalFunc on 3 bits, EvalSign and EvalFloor on 9 and 21 bits, key bytes).
* Zama's Concrete 2.10 (the ``concrete-python`` wheel, its own venv:
  benchmarks/peers/setup_peers.sh makes ~/.ringfire-peers/concrete):
  benchmarks/tfhe/concrete_tfhe.py on one thread -- NAND and 2-, 3- and 4-bit tables,
  each compiled by Concrete's optimizer for a requested failure probability (its
  parameters, key bytes and times; a second table below the first sets each beside
  ringfire's fastest set that fails no more often).
* tfhe-rs: its published numbers, cited with their machine (not run here: its crates
  cannot be fetched on this machine).

Both libraries' security comes from the same lattice parameters (OpenFHE's
STD128 and STD128_3 rows), so the gates compare at matched security; the
failure probabilities differ and are printed. Key bytes are serialized
evaluation keys for both (what a client sends a server); ringfire's in
memory are printed too.
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

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_OPENFHE_PYTHON = pathlib.Path.home() / ".ringfire-peers" / "py310" / "bin" / "python"
DEFAULT_CONCRETE_PYTHON = pathlib.Path.home() / ".ringfire-peers" / "concrete" / "bin" / "python"

# tfhe-rs, from its docs (research/tfhe_anchors.md): AWS hpc7a (EPYC 9R14, AVX-512), one PBS.
TFHE_RS = [
    ("boolean gate, DEFAULT_PARAMETERS_KS_PBS (p_fail 2^-64)", 9.98, "ms", "hpc7a, EPYC 9R14, AVX-512 (June 2024 docs)"),
    ("4-bit KS-PBS, PARAM_MESSAGE_2_CARRY_2 (p_fail 2^-128)", 7.28, "ms", "hpc8a, EPYC 9R45, AVX-512"),
]


def run_ringfire(quick: bool) -> dict:
    cmd = [sys.executable, "-m", "ringfire", "bench", "tfhe", "--json", "--quiet", "--repeat", "10" if quick else "30"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_peer(name: str, python: pathlib.Path, script: str, args: list[str]) -> dict | None:
    """A peer's script under its own interpreter, on one thread; its JSON, or None without it."""
    if not python.exists():
        print(f"[tfhe_vs_peers] no {name} interpreter at {python}: run benchmarks/peers/setup_peers.sh "
              f"or pass --{name.lower()}-python", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "peer.json"
        env = dict(os.environ, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1")
        subprocess.run([str(python), str(HERE / "tfhe" / script), "--json", str(out)] + args, check=True, env=env,
                       stdout=sys.stderr)
        return json.loads(out.read_text())


def run_openfhe(python: pathlib.Path, quick: bool) -> dict | None:
    parts = ("nand", "lut") if quick else ("nand", "lut", "sign", "floor", "wide")
    args = (["--quick", "--no-key-sizes"] if quick else []) + [a for part in parts for a in ("--only", part)]
    return run_peer("OpenFHE", python, "openfhe_binfhe.py", args)


def run_concrete(python: pathlib.Path, quick: bool) -> dict | None:
    return run_peer("Concrete", python, "concrete_tfhe.py", ["--quick"] if quick else [])


def value(rows, set_name, routine):
    for r in rows:
        if r["set"] == set_name and r["routine"] == routine:
            return r["value"]
    return None


def table(rf: dict, ofhe: dict | None) -> str:
    rows = rf["results"]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    by_op = {}
    if ofhe:
        for r in ofhe["results"]:
            by_op[(r["op"].split()[0], r["method"])] = r
    nand_g = by_op.get(("NAND", "GINX"))
    nand_l = by_op.get(("NAND", "LMKCDEY"))
    lut = next((r for (op, _), r in by_op.items() if op == "LUT"), None)
    def peer(op, p):  # OpenFHE's sign or floor row on its context of plaintext modulus p
        found = [r for r in (ofhe or {}).get("results", []) if r["op"].startswith(op) and r["plaintext_modulus"] == p]
        return found[0] if found else None

    sign, floor = peer("sign,", 512), peer("floor,", 512)
    sign21, floor21 = peer("sign,", 1 << 21), peer("floor,", 1 << 21)

    def f(x, fmt=".2f"):
        return "n/a" if x is None else format(x, fmt)

    def mb(r):
        return None if not r or r.get("bt_key_bytes") is None else r["bt_key_bytes"] / 1e6

    def ours(routine, fmt=".2f", suffix=""):
        return [f(value(rows, s, routine), fmt) + suffix for s in sets]

    head = ["operation"] + [f"ringfire {s}" for s in sets] + ["OpenFHE GINX", "OpenFHE LMKCDEY"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def add(label, cells, g="", lm=""):
        lines.append("| " + " | ".join([label] + cells + [g, lm]) + " |")

    add("NAND, one thread (ms)", ours("NAND"), f(nand_g and nand_g["median_ms"]), f(nand_l and nand_l["median_ms"]))
    add("NANDs per second, both cores", ours("NAND batch", ".0f"),
        f(nand_g and 1e3 / nand_g["median_ms"], ".0f") + " (one thread)",
        f(nand_l and 1e3 / nand_l["median_ms"], ".0f") + " (one thread)")
    add("key generation (s)", ours("keygen"), f(nand_g and nand_g["btkeygen_s"]), f(nand_l and nand_l["btkeygen_s"]))
    add("evaluation keys serialized (MB)", ours("keys serialized", ".1f"), f(mb(nand_g), ".0f"), f(mb(nand_l), ".0f"))
    add("evaluation keys in memory (MB)",
        [f(sum(value(rows, s, k) or 0 for k in ("bootstrap key", "key switch key")), ".0f") for s in sets])
    add("log2 p_fail: NAND", ours("p_fail NAND", ".0f"), "-135 (its constant)", "-60 (its constant)")
    add("2-bit table, one thread (ms)", ours("LUT 2-bit"))
    add("log2 p_fail: 2-bit table", ours("p_fail LUT 2-bit", ".0f"))
    add("3-bit table, one thread (ms)", ours("LUT 3-bit"), f(lut and lut["median_ms"]) + " (EvalFunc, its own set)")
    add("log2 p_fail: 3-bit table", ours("p_fail LUT 3-bit", ".0f"))
    add("4-bit table, one thread (ms)", ours("LUT 4-bit"))
    add("4-bit tables in a batch of 32, one thread (ms each)", ours("LUT 4-bit batch, one thread"))
    add("4-bit tables per second, batch of 64, both cores", ours("LUT 4-bit batch", ".0f"))
    add("log2 p_fail: 4-bit table", ours("p_fail LUT 4-bit", ".0f"))
    add("9-bit sign, one ciphertext, one thread (ms)", ours("sign 9-bit"),
        f(sign and sign["median_ms"], ".0f") + " (EvalSign, its own set)")
    add("log2 p_fail: 9-bit sign (bootstrapped input)", ours("p_fail sign 9-bit", ".0f"))
    add("9-bit floor(x / 16), one ciphertext, one thread (ms)", ours("9-bit >> 4"),
        f(floor and floor["median_ms"], ".0f") + " (EvalFloor, its own set)")
    add("log2 p_fail: 9-bit floor(x / 16) (bootstrapped input)", ours("p_fail 9-bit >> 4", ".0f"))
    add("21-bit sign, one ciphertext, one thread (ms)", ours("sign 21-bit", ".0f"),
        f(sign21 and sign21["median_ms"], ".0f") + " (EvalSign, log Q = 29)")
    add("21-bit floor(x / 16), one ciphertext, one thread (ms)", ours("21-bit >> 4", ".0f"),
        f(floor21 and floor21["median_ms"], ".0f") + " (EvalFloor, log Q = 29)")
    add("log2 p_fail: 18-bit sign (bootstrapped input)", ours("p_fail sign 18-bit", ".0f"))
    add("16-bit addition, both cores (ms)", ours("uint16 add", ".0f"))
    add("16-bit addition, radix-4 blocks, both cores (ms)", ours("radix16 add", ".0f"))
    add("16-bit comparison, radix-4 blocks, both cores (ms)", ours("radix16 <", ".0f"))
    add("16-bit max, radix-4 blocks, both cores (ms)", ours("radix16 max", ".0f"))
    add("16-bit product by a constant, radix-4 blocks, both cores (ms)", ours("radix16 * c", ".0f"))
    add("16-bit product, radix-4 blocks, both cores (ms)", ours("radix16 * y", ".0f"))
    add("16-bit comparison, both cores (ms)", ours("uint16 <", ".0f"),
        f(sign and sign["median_ms"], ".0f") + " (EvalSign, 9 bits, its own set)")
    ratio = value(rows, "STD128", "NAND")
    if nand_g and ratio:
        lines.append(f"\nOpenFHE GINX / ringfire STD128, NAND: {nand_g['median_ms'] / ratio:.2f}x")
    lmk = value(rows, "STD128_LMKCDEY", "NAND")
    if nand_l and lmk:
        lines.append(f"OpenFHE LMKCDEY / ringfire STD128_LMKCDEY, NAND: {nand_l['median_ms'] / lmk:.2f}x")
    return "\n".join(lines)


def concrete_table(rf: dict, conc: dict) -> str:
    """Each Concrete case beside ringfire's fastest set whose modelled failure probability is
    at most the one Concrete reached (ringfire's routine, its p_fail row); where no set is that
    safe, the safest one's time in parentheses."""
    rows = rf["results"]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    ours = {"NAND": ("NAND", "p_fail NAND")}
    ours.update({f"lut {b}-bit": (f"LUT {b}-bit", f"p_fail LUT {b}-bit") for b in (2, 3, 4)})
    head = ["operation", "p_fail (Concrete reached)", "ringfire: fastest set at least as safe", "ringfire ms",
            "ringfire ms per lookup in a batch (that set / fastest at least as safe)",
            "Concrete ms per bootstrap (batch) / one call", "Concrete parameters", "Concrete keys MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in conc["results"]:
        routine, p_row = ours[c["op"]]
        reached = c["p_error_log2"]
        measured = [(value(rows, s_, routine), s_, value(rows, s_, p_row)) for s_ in sets]
        measured = [m for m in measured if m[0] is not None and m[2] is not None]
        fits = [m for m in measured if m[2] <= reached]
        best = min(fits) if fits else None
        # None as safe: the safest set, said to fail more often.
        safest = min(measured, key=lambda m: m[2]) if measured and not fits else None
        batch = "n/a"
        if c["op"] == "lut 4-bit" and best:
            batched = [(value(rows, s_, "LUT 4-bit batch, one thread"), s_) for _, s_, p_ in fits]
            batched = [b for b in batched if b[0] is not None]
            if batched:
                fastest = min(batched)
                batch = f"{value(rows, best[1], 'LUT 4-bit batch, one thread'):.2f} / {fastest[0]:.2f} ({fastest[1]})"
        p = c["parameters"]["bootstrap_keys"][0]
        params = f"n={p['n']}, N={p['N']}, k={p['k']}, br {p['br_level']}x2^{p['br_base_log']}"
        if c["pbs_count"] != 1:
            params += f", {c['pbs_count']} bootstraps"
        lines.append("| " + " | ".join([
            c["op"], f"2^{reached:.0f}",
            f"{best[1]} (2^{best[2]:.0f})" if best else
            f"none; safest: {safest[1]} (2^{safest[2]:.1f}, fails more often)" if safest else
            "none: " + ", ".join(f"{s_} 2^{value(rows, s_, p_row):.1f}" for s_ in sets
                                 if value(rows, s_, p_row) is not None) + " (not timed)",
            f"{best[0]:.2f}" if best else f"({safest[0]:.2f})" if safest else "n/a", batch,
            f"{c['per_bootstrap_in_batch_ms']:.2f} / {c['run_one_ms']:.2f}", params,
            f"{(c['bootstrap_key_bytes'] + c['keyswitch_key_bytes']) / 1e6:.0f}"]) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions; OpenFHE without sign and key sizes")
    ap.add_argument("--openfhe-python", type=pathlib.Path, default=DEFAULT_OPENFHE_PYTHON)
    ap.add_argument("--concrete-python", type=pathlib.Path, default=DEFAULT_CONCRETE_PYTHON)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args()
    t0 = time.time()
    rf = run_ringfire(args.quick)
    ofhe = run_openfhe(args.openfhe_python, args.quick)
    conc = run_concrete(args.concrete_python, args.quick)
    print(table(rf, ofhe))
    if conc:
        print()
        print(f"Concrete {conc['version']} beside ringfire (one thread each):")
        print(concrete_table(rf, conc))
    print()
    print("tfhe-rs, published (not run here):")
    for op, v, unit, machine in TFHE_RS:
        print(f"  {op}: {v} {unit} ({machine})")
    doc = {"ringfire": rf, "openfhe": ofhe, "concrete": conc, "tfhe_rs_published": TFHE_RS,
           "seconds": time.time() - t0}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
