#!/usr/bin/env python3
"""Microsoft SEAL (PyPI ``seal-python``) side of the ringfire peer comparison.

Run with the Python 3.11 venv made by setup_peers.sh:
    ~/.ringfire-peers/py311/bin/python benchmarks/peers/peer_seal.py --n 16384 \
        --coeff-bits 60,40,40,40,40,40,40 --special-bits 60 --scale-bits 40 --json
SEAL is single-threaded; --threads is recorded but has no effect.
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
        import seal
    except Exception as e:  # noqa: BLE001
        C.emit_error_and_exit("SEAL", None, args, "seal-python not importable: %s" % e)
    try:
        from importlib.metadata import version as _v
        ver = _v("seal-python")
    except Exception:  # noqa: BLE001
        ver = getattr(seal, "__version__", "unknown")
    rep = C.Report("SEAL", ver, args)
    if args.threads != 1:
        rep.note("SEAL is single-threaded: --threads %d has no effect" % args.threads)
    if len(args.special_bits) != 1:
        rep.note("SEAL supports exactly the given special primes as the last coeff primes; "
                 "key switching uses one digit per Q prime")
    rep.note("key switching: one digit per Q prime, special primes %s (SEAL's scheme; "
             "--dnum=%s not expressible)" % (args.special_bits, args.dnum))

    N = args.n
    parms = seal.EncryptionParameters(seal.scheme_type.ckks)
    parms.set_poly_modulus_degree(N)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(N, list(args.coeff_bits) + list(args.special_bits)))
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
    if not ctx.parameters_set() and N > 32768:
        # SEAL's built-in 128-bit table stops at N=2^15; the HE standard allows 1761 bits
        # at N=2^16 (the sets used here stay far below), so drop SEAL's own check.
        ctx = seal.SEALContext(parms, True, seal.sec_level_type.none)
        rep.note("SEAL's 128-bit table stops at N=32768: ran N=%d with sec_level none "
                 "(log QP=%d <= 1761, the HE-standard 128-bit bound)"
                 % (N, sum(args.coeff_bits) + sum(args.special_bits)))
    if not ctx.parameters_set():
        C.emit_error_and_exit("SEAL", ver, args, "SEAL rejected parameters: %s" % ctx.parameter_error_message())
    scale = float(2 ** args.scale_bits)
    slots = N // 2
    enc = seal.CKKSEncoder(ctx)

    def keygen():
        kg = seal.KeyGenerator(ctx)
        sk = kg.secret_key()
        pk = kg.create_public_key()
        rk = kg.create_relin_keys()
        return kg, sk, pk, rk

    rep.run("keygen", lambda: C.median_ms(keygen, args.keygen_repeat))
    kg, sk, pk, rk = keygen()
    gk = seal.GaloisKeys()
    kg.create_galois_keys([1], gk)
    encryptor = seal.Encryptor(ctx, pk)
    decryptor = seal.Decryptor(ctx, sk)
    ev = seal.Evaluator(ctx)

    x, y, z = C.random_inputs(slots, args.seed)

    def encrypt(v):
        return encryptor.encrypt(enc.encode(v, scale))

    def decrypt(ct):
        return enc.decode(decryptor.decrypt(ct))

    a, b, c = encrypt(x), encrypt(y), encrypt(z)

    def mul_lin(u, v):
        return ev.relinearize(ev.multiply(u, v), rk)

    def mul_lin_rs(u, v):
        return ev.rescale_to_next(ev.relinearize(ev.multiply(u, v), rk))

    def sqr_lin_rs(u):
        return ev.rescale_to_next(ev.relinearize(ev.square(u), rk))

    # SEAL's add needs bit-equal scales: the fresh ciphertext is encrypted (untimed)
    # at the scale a MulLinRS result has, Delta^2 / q_last.
    c_rs = encryptor.encrypt(enc.encode(z, mul_lin_rs(a, b).scale()))

    def mul_lin_rs_modsw_add(u, v, w):
        r = mul_lin_rs(u, v)
        w2 = ev.mod_switch_to(w, r.parms_id())
        return ev.add(r, w2)

    def rotate(u):
        return ev.rotate_vector(u, 1, gk)

    if not args.only_matmul:
        ops = dict(encrypt=encrypt, decrypt=decrypt, mul_lin=mul_lin, mul_lin_rs=mul_lin_rs, sqr_lin_rs=sqr_lin_rs,
                mul_lin_rs_modsw_add=mul_lin_rs_modsw_add, rotate=rotate)
        C.time_routines(rep, args, ops, a, b, c_rs, x, y, z)
    if not args.skip_matmul:
        for key, dims in C.MATMULS.items():
            rep.run(key, lambda dims=dims, key=key: C.matmul_driver(
                rep, key, dims, encrypt, mul_lin, ev.add, ev.rescale_to_next, decrypt, slots, args.seed))
    rep.dump()


if __name__ == "__main__":
    main()
