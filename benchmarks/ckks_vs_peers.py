#!/usr/bin/env python3
"""CKKS peer comparison: ringfire vs SEAL, TenSEAL, OpenFHE and DESILO on the XeHE routines.

    benchmarks/peers/setup_peers.sh                  # once: venvs + peer wheels
    python benchmarks/ckks_vs_peers.py               # all sets, all libs, 1 and 2 threads
    python benchmarks/ckks_vs_peers.py --sets A --libs ringfire,seal --threads 1 --skip-matmul
    python benchmarks/ckks_vs_peers.py --json > out.json

ringfire runs in this process through ``run_ours(params)`` from
benchmarks/peers/peer_ringfire.py (reported as unavailable when ringfire.ckks does
not import); every peer runs in its own subprocess under the interpreter it needs
(OpenFHE: Python 3.10 venv; the others: Python 3.11 venv; see setup_peers.sh).
Routine definitions and parameter choices: benchmarks/peers/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep benchmarks/peers/ free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_DIR = os.path.join(HERE, "peers")
sys.path.insert(0, PEERS_DIR)
import _common as C  # noqa: E402

PEERS_HOME = os.environ.get("RINGFIRE_PEERS_HOME", os.path.expanduser("~/.ringfire-peers"))

# name -> (script, venv, display name, supports threads > 1)
PEERS = {
    "seal": ("peer_seal.py", "py311", "SEAL", False),
    "tenseal": ("peer_tenseal.py", "py311", "TenSEAL", True),
    "openfhe": ("peer_openfhe.py", "py310", "OpenFHE", True),
    "desilo": ("peer_desilo.py", "py311", "DESILO", True),
}
# "ringfire": the shape a user gets by default (special primes and dnum chosen for
# speed); "ringfire-1sp": the same chain with one special prime (SEAL's convention).
ALL_LIBS = ["ringfire", "ringfire-1sp"] + list(PEERS)

# Parameter sets.  "dnum" goes to every library (ringfire: None = its default, one
# digit per Q prime with the single special prime); "dnum_openfhe" overrides it for
# OpenFHE, which sizes P itself (values from shared/PEERS.md for A and B).
SETS = {
    "A": dict(n=1 << 14, coeff_bits=[60] + [40] * 6, special_bits=[60], scale_bits=40,
              dnum=None, dnum_openfhe=4, matmul=False,
              doc="PEERS.md set A: N=2^14, Q=60+6x40, P=60, scale 2^40"),
    "seed000": dict(n=1 << 15, coeff_bits=[60] + [40] * 7, special_bits=[60], scale_bits=40,
                    dnum=None, dnum_openfhe=None, matmul=False,
                    doc="seed 000 (XeHE Fig. 17): N=32K, RNS size L=8 -> Q=60+7x40, P=60, scale 2^40"),
    "B": dict(n=1 << 16, coeff_bits=[60] + [40] * 20, special_bits=[60], scale_bits=40,
              dnum=None, dnum_openfhe=3, matmul=False,
              doc="PEERS.md set B: N=2^16, Q=60+20x40, P=60, scale 2^40"),
    "matmul": dict(n=1 << 13, coeff_bits=[60, 40], special_bits=[60], scale_bits=40,
                   dnum=None, dnum_openfhe=None, matmul=True,
                   doc="seed 000 matMul (XeHE Fig. 20): 8K-coefficient polynomials -> N=2^13, Q=60+40, P=60"),
}
DEFAULT_SETS = ["A", "seed000", "B", "matmul"]


def peer_python(venv):
    exe = os.path.join(PEERS_HOME, venv, "bin", "python")
    return exe if os.path.exists(exe) else None


def set_params(name, s, threads, args):
    return {
        "n": s["n"], "coeff_bits": s["coeff_bits"], "special_bits": s["special_bits"],
        "scale_bits": s["scale_bits"], "dnum": s["dnum"], "threads": threads,
        "repeat": args.repeat, "keygen_repeat": None, "matmul_repeat": args.matmul_repeat,
        "skip_matmul": (not s["matmul"]) or args.skip_matmul, "only_matmul": s["matmul"],
        "seed": 1234, "json": True,
    }


def unavailable(lib, params, why):
    return {"library": lib, "version": None, "params": params, "threads": params["threads"],
            "results_ms": {k: None for k in C.ALL_KEYS}, "precision_bits": {},
            "notes": [why], "unavailable": True}


def run_ringfire(params, label="ringfire"):
    os.environ["RINGFIRE_NUM_THREADS"] = str(params["threads"])
    try:
        from peer_ringfire import run_ours
        doc = run_ours(params)
        doc["library"] = label
        return doc
    except ImportError as e:
        return unavailable("ringfire", params, "ringfire.ckks unavailable: %s" % e)
    except Exception as e:  # noqa: BLE001 - report, keep going with the peers
        return unavailable("ringfire", params, "ringfire failed: %s: %s" % (type(e).__name__, str(e)[:300]))


def run_peer(lib, params, dnum_override, timeout):
    script, venv, disp, _ = PEERS[lib]
    py = peer_python(venv)
    if py is None:
        return unavailable(disp, params, "no venv %s/%s: run benchmarks/peers/setup_peers.sh" % (PEERS_HOME, venv))
    cmd = [py, os.path.join(PEERS_DIR, script), "--json",
           "--n", str(params["n"]),
           "--coeff-bits", ",".join(map(str, params["coeff_bits"])),
           "--special-bits", ",".join(map(str, params["special_bits"])),
           "--scale-bits", str(params["scale_bits"]),
           "--threads", str(params["threads"]),
           "--repeat", str(params["repeat"]),
           "--matmul-repeat", str(params["matmul_repeat"])]
    dnum = dnum_override if dnum_override is not None else params["dnum"]
    if dnum is not None:
        cmd += ["--dnum", str(dnum)]
    if params["skip_matmul"]:
        cmd.append("--skip-matmul")
    if params["only_matmul"]:
        cmd.append("--only-matmul")
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(params["threads"])
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return unavailable(disp, params, "timed out after %d s" % timeout)
    lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("{")]
    if cp.returncode != 0 or not lines:
        return unavailable(disp, params, "exit %d: %s" % (cp.returncode, (cp.stderr or cp.stdout)[-400:].strip()))
    return json.loads(lines[-1])


def fmt(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return "%.0f" % v
    if v >= 100:
        return "%.1f" % v
    if v >= 10:
        return "%.2f" % v
    return "%.3f" % v


def table(set_name, threads, docs):
    """Markdown table: one column per library, then ours/theirs ratios."""
    ours = next((d for d in docs if d["library"] == "ringfire"), None)
    peers = [d for d in docs if not d["library"].startswith("ringfire")]
    cols = [d["library"] for d in docs]
    ratio_cols = ["rf/%s" % d["library"] for d in peers] if ours is not None else []
    keys = [k for k in C.ALL_KEYS if any(d["results_ms"].get(k) is not None for d in docs)]
    out = ["", "### set %s, %d thread%s (median ms)" % (set_name, threads, "" if threads == 1 else "s"), "",
           "| routine | " + " | ".join(cols + ratio_cols) + " |",
           "| --- |" + " --- |" * (len(cols) + len(ratio_cols))]
    for k in keys:
        row = [fmt(d["results_ms"].get(k)) for d in docs]
        if ours is not None:
            o = ours["results_ms"].get(k)
            for d in peers:
                t = d["results_ms"].get(k)
                row.append("%.2f" % (o / t) if (o is not None and t) else "n/a")
        out.append("| %s | %s |" % (k, " | ".join(row)))
    for pk in ("MulLinRS", "matmul_10x9x8"):
        if any(pk in d.get("precision_bits", {}) for d in docs):
            row = [("%.1f" % d["precision_bits"][pk]) if pk in d.get("precision_bits", {}) else "n/a" for d in docs]
            out.append("| bits after %s | %s |%s" % (pk, " | ".join(row), " |" * len(ratio_cols)))
    notes = []
    for d in docs:
        for n in d.get("notes", []):
            notes.append("- %s: %s" % (d["library"], n))
    return "\n".join(out), notes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(DEFAULT_SETS), help="comma list of %s" % ",".join(SETS))
    ap.add_argument("--libs", default=",".join(ALL_LIBS), help="comma list of %s" % ",".join(ALL_LIBS))
    ap.add_argument("--threads", default="1,2", help="thread counts for the routine sets")
    ap.add_argument("--matmul-threads", default="1",
                    help="thread counts for the matmul set (default 1: 100x100x1 is ~1 min per run)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--matmul-repeat", type=int, default=1)
    ap.add_argument("--skip-matmul", action="store_true", help="drop the matmul set")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per peer subprocess")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    ap.add_argument("--out", help="also write the JSON document to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args()

    sets = [s for s in args.sets.split(",") if s]
    libs = [lib for lib in args.libs.split(",") if lib]
    for s in sets:
        if s not in SETS:
            ap.error("unknown set %r (have %s)" % (s, ", ".join(SETS)))
    for lib in libs:
        if lib not in ALL_LIBS:
            ap.error("unknown lib %r (have %s)" % (lib, ", ".join(ALL_LIBS)))
    if args.skip_matmul:
        sets = [s for s in sets if not SETS[s]["matmul"]]

    t_start = time.time()
    runs = []
    for sname in sets:
        s = SETS[sname]
        tlist = [int(t) for t in (args.matmul_threads if s["matmul"] else args.threads).split(",") if t]
        for t in tlist:
            params = set_params(sname, s, t, args)
            docs = []
            for lib in libs:
                if not lib.startswith("ringfire") and t > 1 and not PEERS[lib][3]:
                    continue  # single-threaded library: its 1-thread column stands
                t0 = time.time()
                if not args.quiet:
                    print("[%6.0fs] set %s, %d thread(s): %s ..." % (t0 - t_start, sname, t, lib),
                          file=sys.stderr, flush=True)
                if lib == "ringfire":
                    d = run_ringfire(dict(params, special_bits="auto"))
                elif lib == "ringfire-1sp":
                    d = run_ringfire(dict(params), "ringfire-1sp")
                else:
                    d = run_peer(lib, params, s.get("dnum_openfhe") if lib == "openfhe" else None, args.timeout)
                d["set"] = sname
                d["elapsed_s"] = round(time.time() - t0, 1)
                docs.append(d)
            runs.append({"set": sname, "threads": t, "set_doc": s["doc"], "docs": docs})

    total = round(time.time() - t_start, 1)
    doc = {"sets": {k: {kk: vv for kk, vv in SETS[k].items()} for k in sets}, "runs": runs,
           "total_s": total, "host_cpus": os.cpu_count()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    all_notes = []
    for r in runs:
        text, notes = table(r["set"], r["threads"], r["docs"])
        print(text)
        print("(%s)" % r["set_doc"])
        all_notes += [n for n in notes if n not in all_notes]
    if all_notes:
        print("\nNotes:")
        print("\n".join(all_notes))
    print("\nrf/X = ringfire time / X time (< 1: ringfire faster). Total wall time: %.0f s" % total)


if __name__ == "__main__":
    main()
