#!/usr/bin/env python3
"""Microsoft SEAL (PyPI ``seal-python``) BFV and BGV for the integer-scheme comparison.

Run with the Python 3.11 venv made by setup_peers.sh:
    ~/.ringfire-peers/py311/bin/python benchmarks/peers/peer_seal_int.py --scheme bfv --n 16384 \
        --coeff-bits 60,40,40,40,40,40 --special-bits 60 --t 786433 --json

SEAL's key switching is one digit per Q prime with the given special primes (the
last entries of its coefficient modulus); it has no other key-switching or
multiplication option, so its "best" config is its default. BFV multiplies with
BEHZ; BGV products are timed without the modulus switch that usually follows.
SEAL is single-threaded.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int_common as C  # noqa: E402

C.pin_threads()


def main():
    import numpy as np

    args = C.parse_args(__doc__)
    seal, ver = C.import_library("SEAL", "seal-python", "seal", args)
    rep = C.Report("SEAL", ver, args)
    if args.threads != 1:
        rep.note("SEAL is single-threaded: --threads %d has no effect" % args.threads)
    if args.config == "best":
        rep.note("SEAL has no key-switching or multiplication options: best = default")
    N = args.n
    parms = seal.EncryptionParameters(seal.scheme_type.bfv if args.scheme == "bfv" else seal.scheme_type.bgv)
    parms.set_poly_modulus_degree(N)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(N, list(args.coeff_bits) + list(args.special_bits)))
    parms.set_plain_modulus(args.t)
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
    if not ctx.parameters_set() and N > 32768:
        ctx = seal.SEALContext(parms, True, seal.sec_level_type.none)
        rep.note("SEAL's 128-bit table stops at N=32768: ran N=%d with sec_level none (log QP=%d within the "
                 "HE-standard bound)" % (N, sum(args.coeff_bits) + sum(args.special_bits)))
    if not ctx.parameters_set():
        C.emit_error_and_exit("SEAL", ver, args, "SEAL rejected parameters: %s" % ctx.parameter_error_message())
    rep.doc["params"]["special_bits"] = list(args.special_bits)
    encoder = seal.BatchEncoder(ctx)
    ev = seal.Evaluator(ctx)

    def keygen():
        kg = seal.KeyGenerator(ctx)
        return kg, kg.secret_key(), kg.create_public_key(), kg.create_relin_keys()

    kg, sk, pk, rk = keygen()
    gk = seal.GaloisKeys()
    kg.create_galois_keys([1], gk)
    encryptor, decryptor = seal.Encryptor(ctx, pk), seal.Decryptor(ctx, sk)
    x, y = C.random_residues(args)

    def encrypt(v):
        return encryptor.encrypt(encoder.encode(np.asarray(v, dtype=np.uint64)))

    def decrypt(ct):
        return np.asarray(encoder.decode_uint64(decryptor.decrypt(ct)), dtype=np.int64)

    def mul_relin(u, v):
        out = ev.multiply(u, v)
        ev.relinearize_inplace(out, rk)
        return out

    def rotate(u):
        return ev.rotate_rows(u, 1, gk)

    a, b = encrypt(x), encrypt(y)
    rep.time_all(keygen, encrypt, decrypt, mul_relin, rotate, x, y, a, b)
    rep.doc["noise_budget_after_mul"] = decryptor.invariant_noise_budget(mul_relin(a, b))
    rep.dump()


if __name__ == "__main__":
    main()
