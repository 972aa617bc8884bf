#!/usr/bin/env python3
"""BGV and BFV side by side: ringfire, SEAL (seal-python) and OpenFHE (openfhe) in one run.

    benchmarks/peers/setup_peers.sh                      # once: the peers' venvs
    python benchmarks/bgv_vs_peers.py                    # N14,N15,N16 x bfv,bgv x 1,2 threads
    python benchmarks/bgv_vs_peers.py --sets N14 --schemes bfv --threads 1 --repeat 3
    python benchmarks/bgv_vs_peers.py --json --out results.json

Every library runs the routines of ``ringfire bench bgv|bfv`` (ringfire/bench/bgv.py:
keygen, encrypt, decrypt, MulRelin, Rotate) on the same ring degree, plaintext modulus
(t = 786433) and multiplicative depth (5, 12, 25 at N = 2^14, 2^15, 2^16):
ringfire with the chain ``depth=`` chooses; SEAL on that same chain with one special
prime (its only key switching); OpenFHE with ``SetMultiplicativeDepth``, sizing Q itself,
as its users do. Configurations: ringfire default (what ``Context(depth=...)`` gives)
and one-special (the same chain with SEAL's one special prime, for reference); OpenFHE
default and best (HYBRID key switching; BFV HPSPOVERQLEVELED; BGV FIXEDMANUAL). Each peer
runs in a subprocess under its own interpreter (benchmarks/peers/peer_*_int.py),
ringfire in this process.

The table gives each routine's median ms and ``speedup`` = the fastest peer
configuration's time / ringfire's (default config, then one-special): above 1,
ringfire is faster. This machine's speed drifts by tens of percent over minutes, so
``--rounds R`` runs every configuration R times, interleaved (ringfire, SEAL, OpenFHE,
ringfire, ...), and reports the median of the rounds' medians.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
PEERS = HERE / "peers"
sys.path.insert(0, str(PEERS))
PEER_HOME = pathlib.Path(os.environ.get("RINGFIRE_PEERS_HOME", pathlib.Path.home() / ".ringfire-peers"))
ROUTINES = ["keygen", "encrypt", "decrypt", "MulRelin", "Rotate"]


def peer_runs(scheme, n, depth, coeff_bits, threads, repeat):
    """(label, interpreter, script, extra args) for each peer configuration."""
    common = ["--scheme", scheme, "--n", str(n), "--coeff-bits", ",".join(map(str, coeff_bits)), "--special-bits",
              "60", "--depth", str(depth), "--threads", str(threads), "--repeat", str(repeat), "--json"]
    runs = []
    if threads == 1:  # SEAL is single-threaded
        runs.append(("SEAL", PEER_HOME / "py311/bin/python", PEERS / "peer_seal_int.py", common))
    for config in ("default", "best"):
        runs.append((f"OpenFHE {config}", PEER_HOME / "py310/bin/python", PEERS / "peer_openfhe_int.py",
                     common + ["--config", config]))
    return runs


def run_peer(label, python, script, args):
    if not python.exists():
        return {"library": label, "notes": [f"{python} missing: run benchmarks/peers/setup_peers.sh"],
                "results_ms": {}}
    env = dict(os.environ)
    out = subprocess.run([str(python), str(script), *args], capture_output=True, text=True, env=env, timeout=3600)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"library": label, "notes": [f"failed: {out.stderr.strip()[-300:]}"], "results_ms": {}}


def run_ringfire(scheme, n, depth, config, threads, repeat):
    import ringfire as rf
    from ringfire.bench import bgv as bench_bgv

    rf.set_num_threads(threads)
    module = rf.bfv if scheme == "bfv" else rf.bgv
    ctx = bench_bgv.make_context(module, n, depth, config)
    ms, checks = bench_bgv.time_routines(ctx, repeat)
    return {"library": f"ringfire {config}", "results_ms": ms, "checks": checks,
            "params": {"coeff_bits": [p.bit_length() for p in ctx.params.q_primes],
                       "special": len(ctx.params.p_primes), "dnum": ctx.params.dnum,
                       "log2_QP": round(ctx.params.log_qp, 1)}}


def median_of_rounds(rounds):
    """Each configuration's document with every routine's median over the rounds."""
    merged = []
    for runs in zip(*rounds):
        doc = dict(runs[-1])
        doc["results_ms"] = {}
        for routine in ROUTINES:
            values = sorted(r.get("results_ms", {}).get(routine) for r in runs
                            if r.get("results_ms", {}).get(routine) is not None)
            doc["results_ms"][routine] = values[len(values) // 2] if values else None
        doc["rounds_ms"] = [r.get("results_ms", {}) for r in runs]
        merged.append(doc)
    return merged


def table(scheme, name, threads, docs):
    labels = [d["library"] if "config" not in d or d["library"] != "OpenFHE" else f"OpenFHE {d['config']}"
              for d in docs]
    ours = [d for d, label in zip(docs, labels) if label.startswith("ringfire")]
    peers = [d for d, label in zip(docs, labels) if not label.startswith("ringfire")]
    head = f"{scheme.upper()} {name}, {threads} thread(s)"
    lines = [head, "-" * len(head),
             "routine    " + "".join(f"{label:>18}" for label in labels) + "   speedup vs best peer (default / one-special)"]
    for routine in ROUTINES:
        cells = [d.get("results_ms", {}).get(routine) for d in docs]
        peer_times = [d.get("results_ms", {}).get(routine) for d in peers]
        peer_times = [t for t in peer_times if t]
        best_peer = min(peer_times) if peer_times else None
        speed = []
        for d in ours:
            t = d["results_ms"].get(routine)
            speed.append(f"{best_peer / t:.2f}x" if best_peer and t else "n/a")
        lines.append(f"{routine:<11}" + "".join(f"{c:>18.2f}" if c else f"{'n/a':>18}" for c in cells)
                     + "   " + " / ".join(speed))
    checks = {d["library"] if d["library"] != "OpenFHE" else f"OpenFHE {d.get('config')}": d.get("checks")
              for d in docs}
    lines.append(f"exact: {checks}")
    for d in peers:
        for note in d.get("notes", []):
            lines.append(f"note ({d['library']} {d.get('config', '')}): {note}")
    return "\n".join(lines)


def main():
    from ringfire.bench import bgv as bench_bgv

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default="N14,N15,N16")
    p.add_argument("--schemes", default="bfv,bgv")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every configuration (median)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=None, help="also write the JSON here")
    args = p.parse_args()
    results = []
    for name in args.sets.split(","):
        n, depth = bench_bgv.SETS[name]
        for scheme in args.schemes.split(","):
            coeff_bits = bench_bgv.chain_for_depth(scheme, n, depth, bench_bgv.PLAIN_MODULUS)
            for threads in (int(t) for t in args.threads.split(",")):
                rounds = []
                for _ in range(args.rounds):
                    docs = [run_ringfire(scheme, n, depth, config, threads, args.repeat)
                            for config in bench_bgv.CONFIGS]
                    docs += [run_peer(*run) for run in peer_runs(scheme, n, depth, coeff_bits, threads, args.repeat)]
                    rounds.append(docs)
                docs = median_of_rounds(rounds)
                results.append({"scheme": scheme, "set": name, "n": n, "threads": threads, "runs": docs})
                if not args.json:
                    print(table(scheme, name, threads, docs) + "\n", flush=True)
    doc = {"benchmark": "bgv_vs_peers", "results": results}
    if args.json:
        print(json.dumps(doc, indent=1))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
