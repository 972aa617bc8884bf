#!/usr/bin/env python3
"""OpenFHE (PyPI ``openfhe``) BFVrns and BGVrns for the integer-scheme comparison.

Run with the Python 3.10 venv made by setup_peers.sh:
    ~/.ringfire-peers/py310/bin/python benchmarks/peers/peer_openfhe_int.py --scheme bgv --n 16384 \
        --depth 5 --t 786433 --config best --threads 2 --json

OpenFHE sizes Q itself from the multiplicative depth (--depth) and t, as its users do.
Configs:
* default: everything at OpenFHE's defaults besides ring dimension, t, depth and 128-bit
  security (BFV: BV key switching, HPSPOVERQLEVELED products; BGV: HYBRID key switching,
  FLEXIBLEAUTOEXT scaling).
* best: HYBRID key switching with --dnum digits (BFV and BGV), HPSPOVERQLEVELED (BFV),
  FIXEDMANUAL scaling (BGV: no automatic work inside the timed product).
Threads: OpenMP, pinned with OMP_NUM_THREADS before import.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int_common as C  # noqa: E402

C.pin_threads()


def main():
    import numpy as np

    args = C.parse_args(__doc__)
    o, ver = C.import_library("OpenFHE", "openfhe", "openfhe", args, " (needs Python 3.10)")
    rep = C.Report("OpenFHE", ver, args)
    N = args.n

    def make_cc(depth, dnum):
        p = o.CCParamsBFVRNS() if args.scheme == "bfv" else o.CCParamsBGVRNS()
        p.SetPlaintextModulus(args.t)
        p.SetMultiplicativeDepth(depth)
        p.SetRingDim(N)
        p.SetSecurityLevel(o.SecurityLevel.HEStd_128_classic)
        if args.config == "best":
            p.SetKeySwitchTechnique(o.KeySwitchTechnique.HYBRID)
            p.SetNumLargeDigits(dnum)
            if args.scheme == "bfv":
                p.SetMultiplicationTechnique(o.MultiplicationTechnique.HPSPOVERQLEVELED)
            else:
                p.SetScalingTechnique(o.ScalingTechnique.FIXEDMANUAL)
        cc = o.GenCryptoContext(p)
        for f in (o.PKESchemeFeature.PKE, o.PKESchemeFeature.KEYSWITCH, o.PKESchemeFeature.LEVELEDSHE):
            cc.Enable(f)
        return cc

    # The depth is kept: a refused best config (P too large for the 128-bit bound at this N)
    # tries more, smaller digits first; only then a lower depth (noted).
    depth, cc = args.depth, None
    while cc is None:
        for dnum in ([args.dnum] + list(range(args.dnum + 1, depth + 2)) if args.config == "best" else [0]):
            try:
                cc = make_cc(depth, dnum)
                break
            except Exception:  # noqa: BLE001 - OpenFHE refuses a Q beyond the 128-bit bound for N
                continue
        if cc is None:
            if depth <= 1:
                C.emit_error_and_exit("OpenFHE", ver, args, "OpenFHE rejected every depth at N=%d" % N)
            rep.note("depth %d refused at N=%d, 128-bit, with every dnum: ran depth %d" % (depth, N, depth - 1))
            depth -= 1
    if args.config == "best":
        rep.doc["params"]["dnum"] = dnum
    rep.doc["params"]["depth"] = depth
    rep.doc["params"]["effective_log2_Q"] = round(float(np.log2(float(cc.GetModulus()))), 1)
    rep.doc["params"]["ring_dim"] = cc.GetRingDimension()

    def keygen():
        kp = cc.KeyGen()
        cc.EvalMultKeyGen(kp.secretKey)
        return kp

    kp = keygen()
    sk, pk = kp.secretKey, kp.publicKey
    cc.EvalRotateKeyGen(sk, [1])
    x, y = C.random_residues(args)

    def encrypt(v):
        return cc.Encrypt(pk, cc.MakePackedPlaintext([int(u) for u in v]))

    def decrypt(ct):
        pt = cc.Decrypt(sk, ct)
        pt.SetLength(N)
        return np.asarray(pt.GetPackedValue(), dtype=np.int64)

    def mul_relin(u, v):
        return cc.EvalMult(u, v)  # tensor product + relinearization

    def rotate(u):
        # OpenFHE's packed slots for BFV/BGV: EvalRotate by 1 rotates the N/2-slot rows left,
        # like SEAL's rotate_rows (checked below against np.roll on each row).
        return cc.EvalRotate(u, 1)

    a, b = encrypt(x), encrypt(y)
    rep.time_all(keygen, encrypt, decrypt, mul_relin, rotate, x, y, a, b)
    rep.dump()


if __name__ == "__main__":
    main()
