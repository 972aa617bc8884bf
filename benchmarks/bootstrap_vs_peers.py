#!/usr/bin/env python3
"""CKKS bootstrapping at N = 2^16, ringfire, OpenFHE and DESILO in one run, one after the other.

    benchmarks/peers/setup_peers.sh                     # once: the OpenFHE and DESILO venvs
    python benchmarks/bootstrap_vs_peers.py [--repeat 3] [--json out.json]

ringfire runs ``ringfire bench bootstrap`` (preset N16_BOOT, 128-bit); OpenFHE runs
benchmarks/peers/peer_openfhe_bootstrap.py with its bootstrapping example's settings at N = 2^16, which are
not 128-bit secure there (that script says why no 128-bit setting runs); DESILO runs
benchmarks/peers/peer_desilo_bootstrap.py with its own bootstrapping engine, whose ring, primes and
levels cannot be set. Each library
runs in its own process, one at a time (each needs about 15 GB), on both threads, with the same data:
N/2 uniform reals in [-1, 1], public-key encrypted. The table gives the median bootstrap time, the
precision against NumPy, the user levels left and the process's peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_HOME = os.environ.get("RINGFIRE_PEERS_HOME", os.path.expanduser("~/.ringfire-peers"))


def run_ringfire(repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "ringfire", "bench", "bootstrap", "--repeat", str(repeat), "--json"],
                         capture_output=True, text=True, check=True)
    rows = {r["measure"].strip(): r["value"] for r in json.loads(out.stdout)["results"]}
    return {"library": "ringfire", "preset": "N16_BOOT (128-bit)", "bootstrap_s": rows["bootstrap"],
            "precision_mean_bits": rows["precision mean"], "precision_min_bits": rows["precision min"],
            "levels_left": rows["levels left"], "peak_memory_gib": rows["peak memory"],
            "keygen_s": rows["keygen (all keys)"],
            "own_error_mean_bits": rows["own error vs the input's decryption, mean"],
            "own_error_min_bits": rows["own error vs the input's decryption, min"]}


def run_peer(library: str, venv: str, script: str, preset: str, repeat: int) -> dict:
    python = os.path.join(PEERS_HOME, venv, "bin", "python")
    if not os.path.exists(python):
        return {"library": library, "preset": preset, "error": f"no {library} venv at {python} (run setup_peers.sh)"}
    out = subprocess.run([python, os.path.join(HERE, "peers", script), "--repeat", str(repeat), "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"library": library, "preset": preset, "error": out.stderr.strip().splitlines()[-1]}
    doc = json.loads(out.stdout)
    doc["preset"] = preset
    return doc


def run_openfhe(repeat: int) -> dict:
    return run_peer("OpenFHE", "py310", "peer_openfhe_bootstrap.py",
                    "its example: 59-bit primes, HEStd_NotSet (not 128-bit at 2^16)", repeat)


def run_desilo(repeat: int) -> dict:
    return run_peer("DESILO", "py311", "peer_desilo_bootstrap.py",
                    "its bootstrap engine (N = 2^16, its own primes)", repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    docs = [run_ringfire(args.repeat)]
    print(f"ringfire: {docs[-1]['bootstrap_s']:.1f} s; its own error {docs[-1]['own_error_mean_bits']:.1f} / "
          f"{docs[-1]['own_error_min_bits']:.1f} bits", file=sys.stderr, flush=True)
    docs.append(run_openfhe(args.repeat))
    print(f"OpenFHE: {docs[-1].get('bootstrap_s', docs[-1].get('error'))}", file=sys.stderr, flush=True)
    docs.append(run_desilo(args.repeat))
    print(f"DESILO: {docs[-1].get('bootstrap_s', docs[-1].get('error'))}", file=sys.stderr, flush=True)
    print("| library | settings | bootstrap (s) | bits vs NumPy, mean / min | user levels left | keygen (s) "
          "| peak (GiB) |")
    print("|---|---|---|---|---|---|---|")
    for d in docs:
        if "error" in d:
            print(f"| {d['library']} | {d['preset']} | {d['error']} | | | | |")
            continue
        print(f"| {d['library']} | {d['preset']} | {d['bootstrap_s']:.1f} | {d['precision_mean_bits']:.1f} / "
              f"{d['precision_min_bits']:.1f} | {d['levels_left']} | {d['keygen_s']:.1f} | "
              f"{d['peak_memory_gib']:.1f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(docs, f, indent=1)


if __name__ == "__main__":
    main()
