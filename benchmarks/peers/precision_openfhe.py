#!/usr/bin/env python3
"""OpenFHE (PyPI ``openfhe``): bits of precision of the rows of
benchmarks/ckks_precision.py. The wheel only holds a CPython 3.10 extension:

    ~/.ringfire-peers/py310/bin/python benchmarks/peers/precision_openfhe.py --log-n 14 \
        [--dnum 7] [--scaling fixedmanual|flexibleauto]

CKKS-RNS, HYBRID key switching with --dnum digits (OpenFHE picks the special
primes P from it), FirstModSize 60, ScalingModSize 40, MultiplicativeDepth = depth.
Prints one JSON document {library, version, log_n, params, bits, unavailable, notes}.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _precision_common as P  # noqa: E402

import openfhe as o  # noqa: E402


class OpenFHE:
    def __init__(self, log_n, depth, dnum, scaling, notes):
        n = 2 ** log_n
        self.manual = scaling == "fixedmanual"

        def context(security):
            p = o.CCParamsCKKSRNS()
            p.SetRingDim(n)
            p.SetMultiplicativeDepth(depth)
            p.SetFirstModSize(60)
            p.SetScalingModSize(40)
            p.SetScalingTechnique(o.ScalingTechnique.FIXEDMANUAL if self.manual else o.ScalingTechnique.FLEXIBLEAUTO)
            p.SetKeySwitchTechnique(o.KeySwitchTechnique.HYBRID)
            p.SetNumLargeDigits(dnum)
            p.SetBatchSize(n // 2)
            # With the default REAL data type, Decode adds Gaussian noise (OpenFHE's
            # defence against key recovery, sqrt(2) x the noise it estimates from the
            # imaginary parts): COMPLEX is the only way to a plain decryption.
            p.SetCKKSDataType(o.CKKSDataType.COMPLEX)
            p.SetSecurityLevel(security)
            cc = o.GenCryptoContext(p)
            for feature in (o.PKESchemeFeature.PKE, o.PKESchemeFeature.KEYSWITCH, o.PKESchemeFeature.LEVELEDSHE):
                cc.Enable(feature)
            return cc

        try:
            cc = context(o.SecurityLevel.HEStd_128_classic)
        except Exception as e:  # noqa: BLE001 - OpenFHE says no by throwing
            cc = context(o.SecurityLevel.HEStd_NotSet)
            notes.append("OpenFHE rejects 128-bit security (%s): ran with HEStd_NotSet"
                         % str(e).strip().split(":")[-1].strip()[:150])
        self.cc, self.slots, self.levels = cc, n // 2, depth
        self.params = {"n": n, "depth": depth, "first_mod_bits": 60, "scaling_mod_bits": 40, "dnum": dnum,
                       "scaling": scaling.upper(), "log2_Q": round(math.log2(float(cc.GetModulus())), 2),
                       "data_type": "COMPLEX"}
        kp = cc.KeyGen()
        self.pk, self.sk = kp.publicKey, kp.secretKey
        cc.EvalMultKeyGen(self.sk)
        cc.EvalRotateKeyGen(self.sk, [1, -1, 7])
        # No conjugation call in the Python API: the automorphism X -> X^(2N-1), with its key.
        self.conj_index = cc.GetCyclotomicOrder() - 1
        self.conj_keys = cc.EvalAutomorphismKeyGen(self.sk, [self.conj_index])

    def _rescale(self, ct):
        if self.manual:
            return self.cc.Rescale(ct)
        # FLEXIBLEAUTO's Rescale is a no-op (it rescales lazily, before the next
        # multiplication): Compress to noise-scale degree 1 forces that rescale now,
        # so the row decrypts what the next operation would see.
        return self.cc.Compress(ct, 1 << 20, 1)

    def _plain(self, v):
        return self.cc.MakeCKKSPackedPlaintext(np.asarray(v))

    def encode_decode(self, v):
        raise P.NotAvailable("no encoder round trip in OpenFHE's Python API (Plaintext.Decode reads the "
                             "decryption buffer and crashes on a freshly encoded plaintext)")

    def encrypt(self, v, secret=False):
        return self.cc.Encrypt(self.sk if secret else self.pk, self._plain(v))

    def decrypt(self, ct):
        pt = self.cc.Decrypt(self.sk, ct)
        pt.SetLength(self.slots)
        return np.asarray(pt.GetCKKSPackedValue(), dtype=complex)

    def level(self, ct):
        return self.levels - ct.GetLevel()  # GetLevel counts the rescales done

    def add(self, u, v):
        return self.cc.EvalAdd(u, v)

    def add_plain(self, ct, v):
        return self.cc.EvalAdd(ct, self._plain(v))

    def add_scalar(self, ct, c):
        return self.cc.EvalAdd(ct, float(c))

    def multiply_integer(self, ct, k):
        # MultByInteger is not in the Python API and EvalMult(ct, 7.0) encodes 7 at the
        # full scale (a level). k-1 additions give the very same ciphertext as k * ct.
        out = ct
        for _ in range(k - 1):
            out = self.cc.EvalAdd(out, ct)
        return out

    def multiply_plain(self, ct, v):
        return self._rescale(self.cc.EvalMult(ct, self._plain(v)))

    def multiply_scalar(self, ct, c):
        return self._rescale(self.cc.EvalMult(ct, float(c)))

    def multiply(self, u, v):
        if self.manual:  # FLEXIBLEAUTO matches levels (and scales) itself
            gap = u.GetLevel() - v.GetLevel()
            if gap > 0:
                v = self.cc.LevelReduce(v, None, gap)
            elif gap < 0:
                u = self.cc.LevelReduce(u, None, -gap)
        return self._rescale(self.cc.EvalMult(u, v))  # EvalMult relinearizes

    def square(self, u):
        return self._rescale(self.cc.EvalSquare(u))

    def rotate(self, ct, k):
        return self.cc.EvalRotate(ct, k)  # positive = left

    def conjugate(self, ct):
        return self.cc.EvalAutomorphism(ct, self.conj_index, self.conj_keys)


def main():
    ap = P.parser(__doc__)
    ap.add_argument("--dnum", type=int, default=None, help="key-switching digits (default: one per Q prime)")
    ap.add_argument("--scaling", choices=["fixedmanual", "flexibleauto"], default="fixedmanual")
    args = ap.parse_args()
    depth = args.depth or P.DEPTH[args.log_n]
    dnum = args.dnum or depth + 1
    notes = []
    lib = OpenFHE(args.log_n, depth, dnum, args.scaling, notes)
    notes.append(f"special primes P chosen by OpenFHE for HYBRID key switching with dnum={dnum}")
    notes.append("CKKSDataType COMPLEX: REAL's Decode adds Gaussian noise; real rows take the real part")
    if lib.manual:
        notes.append("FIXEDMANUAL: OpenFHE takes every scale as exactly 2^40 although the primes only "
                     "approximate it; plaintexts are encoded at 2^40 (no per-plaintext scale), not at q_top")
    else:
        notes.append("FLEXIBLEAUTO: exact scales tracked per level; rescale forced with "
                     "Compress(ct, towers, 1) since Rescale is a no-op; multiply matches levels itself")
    notes.append("multiply_integer: k-1 EvalAdd (MultByInteger is not exposed; same ciphertext)")
    notes.append("conjugate: EvalAutomorphism with index 2N-1")
    P.run("OpenFHE", P.package_version("openfhe"), args.log_n, depth, lib, lib.params, notes)


if __name__ == "__main__":
    main()
