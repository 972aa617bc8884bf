#!/usr/bin/env python3
"""TenSEAL side of the ringfire peer comparison (CKKSVector API, SEAL underneath).

Run with the Python 3.11 venv made by setup_peers.sh:
    ~/.ringfire-peers/py311/bin/python benchmarks/peers/peer_tenseal.py --n 16384 \
        --coeff-bits 60,40,40,40,40,40,40 --special-bits 60 --threads 2 --json

TenSEAL's CKKSVector has no rotation and no explicit rescale/mod-switch: the routines
use its auto_relin / auto_rescale / auto_mod_switch switches (see notes in the output);
Rotate goes through TenSEAL's bundled SEAL binding (tenseal.sealapi) on the vector's
ciphertext. TenSEAL refuses N > 2^15; a larger --n is replaced by 2^15 with as many
40-bit primes as fit the 128-bit bound (881 bits).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

C.pin_threads()

MAX_BITS = {1024: 27, 2048: 54, 4096: 109, 8192: 218, 16384: 438, 32768: 881}


def main():
    args = C.parse_args(__doc__)
    try:
        import numpy as np
        import tenseal as ts
    except Exception as e:  # noqa: BLE001
        C.emit_error_and_exit("TenSEAL", None, args, "tenseal not importable: %s" % e)
    rep = C.Report("TenSEAL", ts.__version__, args)

    N = args.n
    q_bits = list(args.coeff_bits)
    p_bits = list(args.special_bits)
    if N > 32768:
        N = 32768
        while sum(q_bits) + sum(p_bits) > MAX_BITS[N] and len(q_bits) > 2:
            q_bits.pop(1)
        rep.note("TenSEAL refuses N=%d: measured at N=%d with coeff_bits %s (%d levels instead of %d)"
                 % (args.n, N, q_bits, len(q_bits) - 1, len(args.coeff_bits) - 1))
        rep.params["effective"] = {"n": N, "coeff_bits": q_bits, "special_bits": p_bits}
    rep.note("key switching: SEAL's, one digit per Q prime, special primes %s (--dnum=%s not expressible)"
             % (p_bits, args.dnum))
    slots = N // 2
    scale = float(2 ** args.scale_bits)
    nthreads = args.threads

    def make_ctx():
        ctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=N,
                         coeff_mod_bit_sizes=q_bits + p_bits, n_threads=nthreads)
        ctx.global_scale = scale
        return ctx

    # TenSEAL creates secret, public and relin keys inside ts.context(); the SEAL
    # context construction (prime generation, NTT tables) is included, which SEAL's
    # and OpenFHE's keygen numbers do not include.
    rep.run("keygen", lambda: C.median_ms(make_ctx, args.keygen_repeat))
    rep.note("keygen = ts.context(): includes building the SEAL context (primes, NTT tables) "
             "as well as secret+public+relin keys")
    ctx = make_ctx()
    ctx.generate_galois_keys()  # all power-of-two steps (TenSEAL has no per-step choice)

    x, y, z = C.random_inputs(slots, args.seed)

    def encrypt(v):
        return ts.ckks_vector(ctx, v)

    def decrypt(ct):
        return np.asarray(ct.decrypt())

    a, b, c = encrypt(x), encrypt(y), encrypt(z)

    def with_modes(relin, rescale, fn):
        ctx.auto_relin, ctx.auto_rescale = relin, rescale
        try:
            return fn()
        finally:
            ctx.auto_relin, ctx.auto_rescale = True, True

    if not args.only_matmul:
        R = args.repeat
        rep.run("encrypt", lambda: C.median_ms(lambda: encrypt(x), R))
        rep.run("decrypt", lambda: C.median_ms(lambda: decrypt(a), R))
        rep.run("MulLin", lambda: with_modes(True, False, lambda: C.median_ms(lambda: a * b, R)))
        rep.note("MulLin = a*b with auto_rescale off; MulLinRS = a*b with auto_rescale on; "
                 "SqrLinRS = a.square(); MulLinRSModSwAdd = (a*b) + c with auto_mod_switch")
        rep.run("MulLinRS", lambda: C.median_ms(lambda: a * b, R))
        rep.run("SqrLinRS", lambda: C.median_ms(lambda: a.square(), R))
        rep.run("MulLinRSModSwAdd", lambda: C.median_ms(lambda: a * b + c, R))
        rep.run("Rotate", lambda: _rotate_ms(ts, ctx, a, R))
        rep.precision["encrypt_decrypt"] = C.precision_bits(decrypt(a), x)
        rep.precision["MulLinRS"] = C.precision_bits(decrypt(a * b), x * y)
        rep.precision["MulLinRSModSwAdd"] = C.precision_bits(decrypt(a * b + c), x * y + z)
    if not args.skip_matmul:
        rep.note("matmul: each term a*b with auto_rescale (TenSEAL cannot defer the rescale "
                 "to one per C element); sums with +")

        def mul_lin(u, v):
            return u * v

        def add(u, v):
            return u + v

        for key, dims in C.MATMULS.items():
            rep.run(key, lambda dims=dims, key=key: C.matmul_driver(
                rep, key, dims, encrypt, mul_lin, add, lambda u: u, decrypt, slots, args.seed))
    rep.dump()


def _rotate_ms(ts, ctx, vec, repeat):
    import tenseal.sealapi as sealapi

    ev = sealapi.Evaluator(ctx.seal_context().data)
    gk = ctx.galois_keys().data
    ct = vec.ciphertext()[0]

    def rot():
        out = sealapi.Ciphertext()
        ev.rotate_vector(ct, 1, gk, out)
        return out

    return C.median_ms(rot, repeat)


if __name__ == "__main__":
    main()
