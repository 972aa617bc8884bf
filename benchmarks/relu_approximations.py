#!/usr/bin/env python3
"""ReLU on [-1, 1]: one minimax polynomial against composite sign approximations, at equal depth.

    python benchmarks/relu_approximations.py [--json]

ReLU(x) = x (1 + sign(x)) / 2. Composite approximations (Lee et al. 2021; Orion) approximate
sign by p_k(...p_1(x)), each p_i odd and minimax on the interval its predecessor leaves
([eps, 1] for the first; eps searched on a grid), then multiply by x: depth
sum(ceil(log2(d_i + 1))) + 1. A single minimax polynomial of ReLU (``rf.ckks.minimax_fit``)
of degree 2^k - 1 has depth k. Printed: the largest |error| of each on [-1, 1] (fine grid).
NumPy only; seconds to run.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

import ringfire as rf

GRID = np.linspace(0.0, 1.0, 200001)  # ReLU's error is symmetric for odd sign approximations


def relu_error_single(degree: int) -> float:
    p = rf.ckks.minimax_fit(lambda z: np.maximum(z, 0.0), (-1.0, 1.0), degree)
    t = np.concatenate([-GRID, GRID])
    return float(np.max(np.abs(p(t) - np.maximum(t, 0.0))))


def odd_minimax_to_one(lo: float, hi: float, degree: int, iterations: int = 200) -> np.ndarray:
    """Odd monomial coefficients (x, x^3, ...) minimizing max |p - 1| on [lo, hi] (Lawson)."""
    t = np.linspace(lo, hi, 4001)
    basis = np.stack([t ** k for k in range(1, degree + 1, 2)], axis=1)
    weights, best = np.full(t.size, 1.0 / t.size), (math.inf, None)
    for _ in range(iterations):
        root = np.sqrt(weights)
        coeffs = np.linalg.lstsq(basis * root[:, None], root, rcond=None)[0]
        error = np.abs(basis @ coeffs - 1.0)
        if error.max() < best[0]:
            best = (error.max(), coeffs)
        total = np.sum(weights * error)
        if not (np.isfinite(total) and total > 0):
            break
        weights = weights * error / total
    return best[1]


def odd_eval(coeffs, t):
    return sum(c * t ** (2 * i + 1) for i, c in enumerate(coeffs))


def relu_error_composite(degrees) -> tuple[float, float]:
    """(largest ReLU error, the eps that gave it) of the stage-wise minimax composite."""
    best = (math.inf, None)
    for eps in np.geomspace(1e-3, 0.3, 40):
        s, lo, hi = GRID.copy(), eps, 1.0
        for d in degrees:
            coeffs = odd_minimax_to_one(lo, hi, d)
            coeffs = coeffs / np.max(np.abs(odd_eval(coeffs, np.linspace(0.0, hi, 4001))))  # image in [-1, 1]
            lo, hi = float(np.min(odd_eval(coeffs, np.linspace(lo, hi, 4001)))), 1.0
            s = odd_eval(coeffs, s)
        error = float(np.max(GRID * np.abs(1.0 - s)) / 2.0)
        best = min(best, (error, float(eps)))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for degree in (31, 63, 127, 255, 1023):
        rows.append({"method": f"minimax degree {degree}", "depth": math.ceil(math.log2(degree + 1)),
                     "relu_error": relu_error_single(degree)})
    for degrees in ((7, 7), (15, 3), (7, 7, 7), (15, 15), (15, 15, 15)):
        error, eps = relu_error_composite(degrees)
        depth = sum(math.ceil(math.log2(d + 1)) for d in degrees) + 1
        rows.append({"method": f"composite {degrees} x x", "depth": depth, "relu_error": error, "eps": eps})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'method':28s} {'depth':>5s} {'max |error| on [-1, 1]':>24s}")
    for r in sorted(rows, key=lambda r: (r["depth"], r["relu_error"])):
        print(f"{r['method']:28s} {r['depth']:5d} {r['relu_error']:24.5f}")


if __name__ == "__main__":
    main()
