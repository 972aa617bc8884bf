#!/usr/bin/env python3
"""Zama's Concrete (TFHE) peer numbers: table lookups and a NAND, at chosen failure probabilities.

Standalone: runs in a venv holding ``concrete-python`` (benchmarks/peers/setup_peers.sh
makes ~/.ringfire-peers/concrete; by hand: ``python3.11 -m venv VENV && VENV/bin/pip
install concrete-python==2.10.0 'setuptools<70'`` -- its namespace package still imports
``pkg_resources``), then:

    ~/.ringfire-peers/concrete/bin/python benchmarks/tfhe/concrete_tfhe.py --json out.json

benchmarks/tfhe_vs_peers.py runs it beside ringfire and OpenFHE in one run.

What it measures. Each case is a one-operation circuit compiled by Concrete's optimizer
for a requested failure probability per bootstrap (``p_error``) at its default 128-bit
security; the optimizer picks the TFHE parameters (printed: LWE dimension n, ring size N,
GLWE dimension k, the blind rotation's and key switch's gadgets) and reports the p_error
it reached:

* ``lut B-bit``: ``table[x]`` for a B-bit encrypted x (one programmable bootstrap and one
  key switch, its KS-PBS order);
* ``NAND``: ``1 - (x & y)`` on two encrypted bits (Concrete packs them into one table
  lookup).

Times: key generation; ``circuit.run`` on one encrypted input (the median of ``--repeat``
calls after a warm-up, timed by the peers' shared ``median_ms`` with the garbage collector
off: one bootstrap plus the runtime's call overhead); and the same on a
tensor of ``--batch`` inputs with every parallelisation option off, divided by the batch
(the per-bootstrap cost without the call overhead). Every result is decrypted and checked
against the table. One thread: OMP_NUM_THREADS and RAYON_NUM_THREADS are set to 1 before
Concrete loads. Key sizes are Concrete's own counts of its evaluation keys
(``size_of_bootstrap_keys``, ``size_of_keyswitch_keys``): whole keys, as held in memory
(n (k+1)^2 l N words of 8 bytes for a bootstrapping key), not the compressed bytes it can
serialize.
"""
# Before `import concrete`: its runtimes read the thread counts when they load.
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from concrete import fhe  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "peers"))
from _common import cpu_model, median_ms  # noqa: E402

# (name, input bits, log2 of the requested p_error)
CASES = [
    ("NAND", 1, -64),
    ("lut 2-bit", 2, -64),
    ("lut 3-bit", 3, -52),
    ("lut 3-bit", 3, -64),
    ("lut 4-bit", 4, -64),
    ("lut 4-bit", 4, -128),
]


def concrete_version():
    try:
        from importlib.metadata import version
        return version("concrete-python")
    except Exception:  # pragma: no cover
        return None


def table_for(bits: int) -> list[int]:
    """A permutation-like table with no structure the compiler could exploit."""
    size = 1 << bits
    return [(5 * m + 3) % size for m in range(size)]


def compile_case(name: str, bits: int, log_p: int, batch: int | None = None):
    """The case's circuit for one input (batch None) or for arrays of ``batch`` inputs, with
    its plaintext reference and its number of encrypted arguments."""
    config = fhe.Configuration(p_error=2.0 ** log_p, compress_evaluation_keys=True, loop_parallelize=False,
                               dataflow_parallelize=False, auto_parallelize=False)
    values = [0, 1] if name == "NAND" else list(range(1 << bits))
    shaped = (lambda v: v) if batch is None else (lambda v: np.full(batch, v))
    if name == "NAND":
        @fhe.compiler({"x": "encrypted", "y": "encrypted"})
        def nand(x, y):
            return 1 - (x & y)

        inputset = [(shaped(a), shaped(b)) for a in values for b in values]
        return nand.compile(inputset, configuration=config), (lambda x, y: 1 - (x & y)), 2
    table = np.asarray(table_for(bits))
    lut = fhe.LookupTable(list(table))

    @fhe.compiler({"x": "encrypted"})
    def f(x):
        return lut[x]

    return f.compile([shaped(v) for v in values], configuration=config), (lambda x: table[x]), 1


def parameters(circuit) -> dict:
    info = circuit.client.specs.program_info.get_keyset_info()
    bsk = [{"n": b.input_lwe_dimension(), "N": b.polynomial_size(), "k": b.glwe_dimension(),
            "br_level": b.level(), "br_base_log": b.base_log()} for b in info.bootstrap_keys()]
    ksk = [{"ks_level": k.level(), "ks_base_log": k.base_log()} for k in info.keyswitch_keys()]
    return {"bootstrap_keys": bsk, "keyswitch_keys": ksk}


def run_case(name: str, bits: int, log_p: int, repeat: int, batch: int, rng) -> dict:
    t = time.perf_counter()
    circuit, reference, arity = compile_case(name, bits, log_p)
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    circuit.keygen(force=True)
    keygen_s = time.perf_counter() - t

    high = 2 if name == "NAND" else 1 << bits
    one = [int(rng.integers(high)) for _ in range(arity)]
    enc_one = circuit.encrypt(*one)
    ms_one = median_ms(lambda: circuit.run(enc_one), repeat)
    out = circuit.decrypt(circuit.run(enc_one))
    wrong = int(out != reference(*one))

    many = [rng.integers(high, size=batch) for _ in range(arity)]
    circuit_b = compile_case(name, bits, log_p, batch)[0]
    circuit_b.keygen(force=True)
    enc_many = circuit_b.encrypt(*many)
    ms_many = median_ms(lambda: circuit_b.run(enc_many), max(3, repeat // 5))
    wrong += int(np.count_nonzero(circuit_b.decrypt(circuit_b.run(enc_many)) != reference(*many)))

    return {
        "op": name, "bits": bits, "p_error_requested_log2": log_p,
        "p_error_log2": math.log2(circuit.p_error) if circuit.p_error > 0 else None,
        "parameters": parameters(circuit),
        "pbs_count": circuit.programmable_bootstrap_count,
        "compile_s": compile_s, "keygen_s": keygen_s,
        "bootstrap_key_bytes": circuit.size_of_bootstrap_keys, "keyswitch_key_bytes": circuit.size_of_keyswitch_keys,
        "run_one_ms": ms_one, "batch": batch, "per_bootstrap_in_batch_ms": ms_many / batch,
        "checked": 1 + batch, "wrong": wrong,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="repeat 5, batch 8, the 2^-64 cases only")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    repeat, batch = (5, 8) if args.quick else (args.repeat, args.batch)
    cases = [c for c in CASES if not args.quick or c[2] == -64]
    rng = np.random.default_rng(2026)
    results = []
    for name, bits, log_p in cases:
        r = run_case(name, bits, log_p, repeat, batch, rng)
        results.append(r)
        p = r["parameters"]["bootstrap_keys"][0]
        print(f"{name:10s} p_error 2^{log_p} (reached 2^{r['p_error_log2']:.0f}): one call {r['run_one_ms']:.2f} ms, "
              f"per bootstrap in a batch of {batch} {r['per_bootstrap_in_batch_ms']:.2f} ms; keygen "
              f"{r['keygen_s']:.2f} s; keys {(r['bootstrap_key_bytes'] + r['keyswitch_key_bytes']) / 1e6:.0f} MB; "
              f"n={p['n']} N={p['N']} k={p['k']} br {p['br_level']}x2^{p['br_base_log']}; wrong {r['wrong']}",
              flush=True)
    doc = {"library": "concrete-python", "version": concrete_version(), "machine": platform.machine(),
           "cpu": cpu_model(), "threads": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS")},
           "results": results}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    return 1 if any(r["wrong"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
