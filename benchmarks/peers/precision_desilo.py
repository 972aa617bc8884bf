#!/usr/bin/env python3
"""DESILO FHE (PyPI ``desilofhe``, CPU build): bits of precision of the rows of
benchmarks/ckks_precision.py.

    ~/.ringfire-peers/py311/bin/python benchmarks/peers/precision_desilo.py --log-n 14

DESILO picks N, every prime and the scale from ``max_level``; we take
max_level = depth when that gives the asked N, otherwise the nearest max_level
that does (noted). Its multiply (and plaintext / constant multiply) rescales
inside the product. Prints one JSON document {library, version, log_n, params,
bits, unavailable, notes}.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _precision_common as P  # noqa: E402

import desilofhe  # noqa: E402


def engine_for(n, depth):
    """The engine with N = n and the max_level closest to depth (DESILO's N grows with it)."""
    ring = lambda ml: 2 * desilofhe.Engine(max_level=ml, mode="cpu").slot_count
    ml = depth
    while ring(ml) > n and ml > 1:  # too many levels for n at 128 bits: fewer levels
        ml -= 1
    while ring(ml) < n:  # n larger than the levels need: more levels
        ml += 1
    return desilofhe.Engine(max_level=ml, mode="cpu"), ml


class Desilo:
    def __init__(self, log_n, depth, notes):
        n = 2 ** log_n
        e, ml = engine_for(n, depth)
        if 2 * e.slot_count != n:
            raise SystemExit(f"DESILO has no max_level with N={n}")
        if ml != depth:
            notes.append(f"max_level={ml} instead of {depth}: DESILO's N={n} (128-bit) allows "
                         f"{'at most' if ml < depth else 'no fewer than'} {ml} levels")
        self.e, self.slots, self.levels = e, e.slot_count, ml
        self.params = {"n": n, "max_level": ml, "asked_depth": depth}
        self.sk = e.create_secret_key()
        self.pk = e.create_public_key(self.sk)
        self.rk = e.create_relinearization_key(self.sk)
        self.rot = {k: e.create_fixed_rotation_key(self.sk, k) for k in (1, -1, 7)}
        self.ck = e.create_conjugation_key(self.sk)

    @staticmethod
    def _arr(v):
        v = np.asarray(v)
        return v.astype(complex) if np.iscomplexobj(v) else v.astype(float)

    def encode_decode(self, v):
        return np.asarray(self.e.decode(self.e.encode(self._arr(v))), dtype=complex)

    def encrypt(self, v, secret=False):
        return self.e.encrypt(self._arr(v), self.sk if secret else self.pk)

    def decrypt(self, ct):
        return np.asarray(self.e.decrypt(ct, self.sk), dtype=complex)

    def level(self, ct):
        return ct.level

    def add(self, u, v):
        return self.e.add(u, v)

    def add_plain(self, ct, v):
        return self.e.add(ct, self.e.encode(self._arr(v), ct.level))

    def add_scalar(self, ct, c):
        return self.e.add(ct, float(c))

    def multiply_integer(self, ct, k):
        return self.e.multiply(ct, int(k))  # the integer overload: no level used

    def multiply_plain(self, ct, v):
        return self.e.multiply(ct, self.e.encode(self._arr(v), ct.level))  # rescales inside

    def multiply_scalar(self, ct, c):
        return self.e.multiply(ct, float(c))  # rescales inside

    def multiply(self, u, v):
        if u.level > v.level:
            u = self.e.level_down(u, v.level)
        elif v.level > u.level:
            v = self.e.level_down(v, u.level)
        return self.e.relinearize(self.e.multiply(u, v), self.rk)  # multiply rescales inside

    def square(self, u):
        return self.e.relinearize(self.e.square(u), self.rk)

    def rotate(self, ct, k):
        return self.e.rotate(ct, self.rot[k])  # delta > 0 = left

    def conjugate(self, ct):
        return self.e.conjugate(ct, self.ck)


def main():
    args = P.parser(__doc__).parse_args()
    depth = args.depth or P.DEPTH[args.log_n]
    notes = []
    lib = Desilo(args.log_n, depth, notes)
    notes.append("DESILO picks all primes and the scale itself (not settable): its fresh ciphertexts "
                 "carry a larger scale than 2^40")
    notes.append("multiply / plaintext / constant multiplication rescale inside the product; plaintexts "
                 "at DESILO's own scale")
    P.run("DESILO", P.package_version("desilofhe"), args.log_n, depth, lib, lib.params, notes)


if __name__ == "__main__":
    main()
