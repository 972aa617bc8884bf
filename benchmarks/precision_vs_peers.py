#!/usr/bin/env python3
"""CKKS bits of precision, ringfire next to SEAL, OpenFHE and DESILO, in one run.

    python benchmarks/precision_vs_peers.py [--log-n 13,14,15,16] [--libs ...] [--json OUT]

ringfire is measured in-process by benchmarks/ckks_precision.measure (exact
decryption); each peer runs benchmarks/peers/precision_<peer>.py in a subprocess
under its own interpreter (venvs made by benchmarks/peers/setup_peers.sh: py311
for SEAL and DESILO, py310 for OpenFHE), with the same depth, the same inputs
(same seed) and the same rows. Prints one markdown table per N: the operations
as rows, a column per library, bits = -log2(largest slot error) against NumPy,
"n/a" with a footnote where a library cannot do the operation.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
sys.path.insert(0, str(HERE))
from ckks_precision import DEPTH, measure  # noqa: E402

# column key -> (header, venv, script, extra arguments)
LIBS = {
    "ringfire": ("ringfire", None, None, []),
    "seal": ("SEAL", "py311", "precision_seal.py", []),
    "openfhe": ("OpenFHE FIXEDMANUAL", "py310", "precision_openfhe.py", ["--scaling", "fixedmanual"]),
    "openfhe-flex": ("OpenFHE FLEXIBLEAUTO", "py310", "precision_openfhe.py", ["--scaling", "flexibleauto"]),
    "desilo": ("DESILO", "py311", "precision_desilo.py", []),
}


def run_ringfire(log_n: int) -> dict:
    import ringfire as rf
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # insecure_exact / no-security-check warn on every call
        doc = measure(log_n)
    doc.update(library="ringfire", version=getattr(rf, "__version__", "unknown"), unavailable={},
               notes=["decrypt(insecure_exact=True)"], wall_s=round(time.perf_counter() - t0, 1))
    return doc


def run_peer(key: str, log_n: int, home: Path, dnum: int | None, timeout: float) -> dict:
    header, venv, script, extra = LIBS[key]
    cmd = [str(home / venv / "bin" / "python"), str(PEERS / script), "--log-n", str(log_n),
           "--depth", str(DEPTH[log_n]), *extra]
    if key.startswith("openfhe") and dnum:
        cmd += ["--dnum", str(dnum)]  # ringfire's digit count: the same key-switching shape
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"library": header, "error": f"{type(e).__name__}: {e}", "bits": {}, "unavailable": {}}
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"library": header, "error": f"exit {out.returncode}: {tail[:300]}", "bits": {}, "unavailable": {}}
    doc = json.loads(lines[-1])
    doc["command"] = portable(" ".join(cmd))
    return doc


def portable(command: str) -> str:
    """A command as anyone can rerun it: no home directory or checkout path in it."""
    return command.replace(str(HERE.parent) + "/", "").replace(str(Path.home()), "~")


def git_state() -> str:
    """Commit of the checkout (+ "dirty"): which benchmark scripts made the numbers."""
    try:
        git = lambda *a: subprocess.run(["git", *a], cwd=HERE, capture_output=True, text=True).stdout.strip()
        return git("rev-parse", "HEAD") + (" dirty" if git("status", "--porcelain") else "")
    except OSError:
        return "unknown"


def cell(value) -> str:
    return "inf" if value == math.inf else f"{value:.1f}"


def table(log_n: int, docs: dict) -> str:
    """One markdown table for one N, with footnotes for the n/a cells and each library's notes."""
    ops = []
    for doc in docs.values():  # ringfire's order first, then anything a peer adds
        ops += [op for op in doc.get("bits", {}) if op not in ops]
    heads = [LIBS[k][0] for k in docs]
    lines = [f"**N=2^{log_n}**, depth {DEPTH[log_n]}", "",
             "| operation | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    feet: dict[str, int] = {}

    def na(text):
        return f"n/a [{feet.setdefault(text, len(feet) + 1)}]"

    for op in ops:
        cells = []
        for key, doc in docs.items():
            value = doc.get("bits", {}).get(op)
            if value is not None:
                cells.append(cell(value))
            elif "error" in doc:
                cells.append(na(f"{LIBS[key][0]}: did not run ({doc['error']})"))
            else:
                cells.append(na(f"{LIBS[key][0]}: {doc.get('unavailable', {}).get(op, 'not measured')}"))
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"[{n}] {text}" for text, n in feet.items()]
    lines.append("")
    for key, doc in docs.items():
        params = doc.get("params")
        params = params if isinstance(params, str) else json.dumps(params)
        lines.append(f"- {LIBS[key][0]} {doc.get('version', '')}: {params}")
        lines += [f"  - {note}" for note in doc.get("notes", [])]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", default="13,14,15,16")
    ap.add_argument("--libs", default=",".join(LIBS), help="comma-separated subset of " + ",".join(LIBS))
    ap.add_argument("--peers-home", default=os.environ.get("RINGFIRE_PEERS_HOME", str(Path.home() / ".ringfire-peers")))
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per peer run")
    ap.add_argument("--json", metavar="OUT", help="also save every document to OUT")
    args = ap.parse_args()
    asked = {k.strip() for k in args.libs.split(",") if k.strip()}
    if asked - set(LIBS):
        ap.error(f"unknown libraries {sorted(asked - set(LIBS))}")
    libs = [k for k in LIBS if k in asked]  # ringfire first, whatever the order asked

    t0 = time.perf_counter()
    sizes = [int(v) for v in args.log_n.split(",")]
    results = {log_n: {} for log_n in sizes}
    # Library by library, ringfire first: its sizes are all measured with the one
    # build loaded at start, and its dnum is known before OpenFHE runs.
    for key in libs:
        for log_n in sizes:
            print(f"{key} N=2^{log_n} ...", file=sys.stderr, flush=True)
            docs = results[log_n]
            if key == "ringfire":
                docs[key] = run_ringfire(log_n)
            else:
                m = re.search(r"dnum=(\d+)", str(docs.get("ringfire", {}).get("params", "")))
                docs[key] = run_peer(key, log_n, Path(args.peers_home), m and int(m.group(1)), args.timeout)
    for log_n in sizes:
        print(table(log_n, results[log_n]) + "\n", flush=True)

    if args.json:
        versions = {LIBS[k][0]: next((d[k].get("version") for d in results.values() if d[k].get("version")), None)
                    for k in libs}
        out = {"date": datetime.date.today().isoformat(), "command": " ".join(["python"] + sys.argv),
               "host": {"machine": platform.machine(), "processor": platform.processor(), "cpus": os.cpu_count()},
               "repo": git_state(),
               "wall_s": round(time.perf_counter() - t0, 1), "versions": versions,
               "results": {str(k): v for k, v in results.items()}}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"saved {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
