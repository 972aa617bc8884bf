#!/usr/bin/env python3
"""OpenFHE (PyPI ``openfhe``) side of the ringfire peer comparison.

The openfhe wheel only holds a CPython 3.10 extension: run this with the Python 3.10
venv made by setup_peers.sh:
    ~/.ringfire-peers/py310/bin/python benchmarks/peers/peer_openfhe.py --n 16384 \
        --coeff-bits 60,40,40,40,40,40,40 --special-bits 60 --dnum 4 --threads 2 --json

CKKS-RNS with FIXEDMANUAL rescaling and HYBRID key switching.  Q is set through
FirstModSize (= coeff_bits[0]), ScalingModSize (= coeff_bits[1]) and
MultiplicativeDepth (= len(coeff_bits) - 1), so the rescaling primes must all have the
same size; OpenFHE picks the special primes P itself from --dnum (NumLargeDigits;
default: one digit per Q prime, the closest to "one 60-bit special prime").
Threads: OpenMP, pinned with OMP_NUM_THREADS before import.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

C.pin_threads()


def main():
    args = C.parse_args(__doc__)
    try:
        import numpy as np
        import openfhe as o
    except Exception as e:  # noqa: BLE001
        C.emit_error_and_exit("OpenFHE", None, args, "openfhe not importable (needs Python 3.10): %s" % e)
    try:
        from importlib.metadata import version as _v
        ver = _v("openfhe")
    except Exception:  # noqa: BLE001
        ver = getattr(o, "__version__", "unknown")
    rep = C.Report("OpenFHE", ver, args)

    N = args.n
    q = list(args.coeff_bits)
    depth = len(q) - 1
    if depth < 1:
        C.emit_error_and_exit("OpenFHE", ver, args, "need at least one rescaling prime")
    if len(set(q[1:])) > 1:
        rep.note("OpenFHE uses one ScalingModSize for all rescaling primes: used %d for %s" % (q[1], q[1:]))
    if q[1] != args.scale_bits:
        rep.note("FIXEDMANUAL: scale = rescaling prime size %d (asked --scale-bits %d)" % (q[1], args.scale_bits))
    dnum = args.dnum if args.dnum else len(q)
    if not args.dnum:
        rep.note("--dnum not given: used dnum = number of Q primes (%d)" % dnum)

    def make_cc(sec):
        p = o.CCParamsCKKSRNS()
        p.SetRingDim(N)
        p.SetMultiplicativeDepth(depth)
        p.SetScalingModSize(q[1])
        p.SetFirstModSize(q[0])
        p.SetScalingTechnique(o.ScalingTechnique.FIXEDMANUAL)
        p.SetKeySwitchTechnique(o.KeySwitchTechnique.HYBRID)
        p.SetNumLargeDigits(dnum)
        p.SetBatchSize(N // 2)
        p.SetSecurityLevel(sec)
        cc = o.GenCryptoContext(p)
        for f in (o.PKESchemeFeature.PKE, o.PKESchemeFeature.KEYSWITCH, o.PKESchemeFeature.LEVELEDSHE):
            cc.Enable(f)
        return cc

    try:
        cc = make_cc(o.SecurityLevel.HEStd_128_classic)
    except Exception as e:  # noqa: BLE001
        cc = make_cc(o.SecurityLevel.HEStd_NotSet)
        rep.note("OpenFHE rejects this set at 128-bit security (%s): ran with HEStd_NotSet, same Q, "
                 "OpenFHE-chosen P (its log QP exceeds the 128-bit bound for N=%d)"
                 % (str(e).strip().split(":")[-1].strip()[:120], N))
    logq = float(np.log2(float(cc.GetModulus())))
    rep.params["effective"] = {"n": cc.GetRingDimension(), "log2_Q": round(logq, 1), "dnum": dnum}
    rep.note("special primes P chosen by OpenFHE (HYBRID, dnum=%d); --special-bits %s not settable"
             % (dnum, args.special_bits))
    slots = N // 2

    def keygen():
        kp = cc.KeyGen()
        cc.EvalMultKeyGen(kp.secretKey)
        return kp

    rep.run("keygen", lambda: C.median_ms(keygen, args.keygen_repeat))
    kp = keygen()
    sk, pk = kp.secretKey, kp.publicKey
    cc.EvalRotateKeyGen(sk, [1])

    x, y, z = C.random_inputs(slots, args.seed)

    def encrypt(v):
        return cc.Encrypt(pk, cc.MakeCKKSPackedPlaintext(v))  # NumPy fast path of the binding

    def decrypt(ct):
        pt = cc.Decrypt(sk, ct)  # decrypt + decode (decode happens inside Decrypt)
        pt.SetLength(slots)
        return np.asarray(pt.GetRealPackedValue())

    a, b, c = encrypt(x), encrypt(y), encrypt(z)

    def mul_lin(u, v):
        return cc.EvalMult(u, v)  # tensor product + relinearization

    def mul_lin_rs(u, v):
        return cc.Rescale(cc.EvalMult(u, v))

    def sqr_lin_rs(u):
        return cc.Rescale(cc.EvalSquare(u))

    def mul_lin_rs_modsw_add(u, v, w):
        r = mul_lin_rs(u, v)
        return cc.EvalAdd(r, cc.LevelReduce(w, None, 1))

    def rotate(u):
        return cc.EvalRotate(u, 1)  # positive index = left shift

    if not args.only_matmul:
        ops = dict(encrypt=encrypt, decrypt=decrypt, mul_lin=mul_lin, mul_lin_rs=mul_lin_rs, sqr_lin_rs=sqr_lin_rs,
                mul_lin_rs_modsw_add=mul_lin_rs_modsw_add, rotate=rotate)
        C.time_routines(rep, args, ops, a, b, c, x, y, z)
    if not args.skip_matmul:
        for key, dims in C.MATMULS.items():
            rep.run(key, lambda dims=dims, key=key: C.matmul_driver(
                rep, key, dims, encrypt, mul_lin, cc.EvalAdd, cc.Rescale, decrypt, slots, args.seed))
    rep.dump()


if __name__ == "__main__":
    main()
