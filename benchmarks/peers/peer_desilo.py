#!/usr/bin/env python3
"""DESILO FHE (PyPI ``desilofhe``, CPU build) side of the ringfire peer comparison.

Run with the Python 3.11 venv made by setup_peers.sh:
    ~/.ringfire-peers/py311/bin/python benchmarks/peers/peer_desilo.py --n 16384 \
        --coeff-bits 60,40,40,40,40,40,40 --special-bits 60 --threads 2 --json

DESILO chooses N and all primes itself from ``max_level``.  We ask for
max_level = len(coeff_bits) - 1 and raise it until the engine's ring degree equals
--n (the engine picks the smallest N that is secure for that many levels, so a
larger N needs a larger max_level); the levels actually used are in the notes.
DESILO's ``multiply`` rescales as part of the product (the result is already one
level down), so its MulLin includes the rescale and MulLinRS = MulLin.
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
        import desilofhe
    except Exception as e:  # noqa: BLE001
        C.emit_error_and_exit("DESILO", None, args, "desilofhe not importable: %s" % e)
    try:
        from importlib.metadata import version as _v
        ver = _v("desilofhe")
    except Exception:  # noqa: BLE001
        ver = "unknown"
    rep = C.Report("DESILO", ver, args)

    want_levels = len(args.coeff_bits) - 1
    eng = None
    for ml in range(max(1, want_levels), want_levels + 40):
        e = desilofhe.Engine(max_level=ml, mode="cpu", thread_count=args.threads)
        if 2 * e.slot_count == args.n:
            eng = e
            break
        if 2 * e.slot_count > args.n:
            break
    if eng is None:
        eng = desilofhe.Engine(max_level=max(1, want_levels), mode="cpu", thread_count=args.threads)
        rep.note("no max_level gives N=%d: used max_level=%d, N=%d" % (args.n, want_levels, 2 * eng.slot_count))
    N = 2 * eng.slot_count
    ml = eng.max_level
    rep.params["effective"] = {"n": N, "max_level": ml}
    rep.note("DESILO picks its own primes: max_level=%d (asked %d levels) at N=%d; "
             "coeff/special/scale bits and dnum are not settable" % (ml, want_levels, N))
    if ml != want_levels:
        rep.note("ciphertexts carry %d levels instead of %d: every routine works on %d+1 limbs"
                 % (ml, want_levels, ml))
    rep.note("multiply rescales inside the product: MulLin includes the rescale; "
             "MulLinRS/SqrLinRS add a (no-op) engine.rescale call")
    slots = eng.slot_count

    def keygen():
        sk = eng.create_secret_key()
        pk = eng.create_public_key(sk)
        rk = eng.create_relinearization_key(sk)
        return sk, pk, rk

    rep.run("keygen", lambda: C.median_ms(keygen, args.keygen_repeat))
    sk, pk, rk = keygen()
    # DESILO's delta=+1 is a left rotation (out[i] = in[i+1]), like SEAL's rotate_vector(1).
    rot = eng.create_fixed_rotation_key(sk, 1)
    rot_note = "Rotate = left by 1 (fixed rotation key, delta=1)"

    x, y, z = C.random_inputs(slots, args.seed)

    def encrypt(v):
        return eng.encrypt(v, pk)  # encode + encrypt in one call

    def decrypt(ct):
        return eng.decrypt(ct, sk)  # decrypt + decode in one call

    a, b, c = encrypt(x), encrypt(y), encrypt(z)

    def mul_lin(u, v):
        return eng.relinearize(eng.multiply(u, v), rk)

    def mul_lin_rs(u, v):
        return eng.rescale(eng.relinearize(eng.multiply(u, v), rk))

    def sqr_lin_rs(u):
        return eng.rescale(eng.relinearize(eng.square(u), rk))

    def mul_lin_rs_modsw_add(u, v, w):
        r = mul_lin_rs(u, v)
        return eng.add(r, eng.level_down(w, r.level))

    def rotate(u):
        return eng.rotate(u, rot)

    if not args.only_matmul:
        ops = dict(encrypt=encrypt, decrypt=decrypt, mul_lin=mul_lin, mul_lin_rs=mul_lin_rs, sqr_lin_rs=sqr_lin_rs,
                mul_lin_rs_modsw_add=mul_lin_rs_modsw_add, rotate=rotate)
        got = C.time_routines(rep, args, ops, a, b, c, x, y, z)
        if C.precision_bits(got, np.roll(x, -1)) < C.precision_bits(got, np.roll(x, 1)):
            rot_note = "Rotate = right by 1 (fixed rotation key)"
            rep.precision["Rotate"] = C.precision_bits(got, np.roll(x, 1))
        rep.note(rot_note)
    if not args.skip_matmul:
        rep.note("matmul: MulLin per term (multiply already rescales), engine.rescale per C element is a no-op")
        for key, dims in C.MATMULS.items():
            rep.run(key, lambda dims=dims, key=key: C.matmul_driver(
                rep, key, dims, encrypt, mul_lin, eng.add, eng.rescale, decrypt, slots, args.seed))
    rep.dump()


if __name__ == "__main__":
    main()
