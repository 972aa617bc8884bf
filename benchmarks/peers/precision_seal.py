#!/usr/bin/env python3
"""Microsoft SEAL (PyPI ``seal-python``): bits of precision of the rows of
benchmarks/ckks_precision.py.

    ~/.ringfire-peers/py311/bin/python benchmarks/peers/precision_seal.py --log-n 14

Q = 60 + depth x 40 bits plus one 60-bit special prime, scale 2^40. Prints one
JSON document {library, version, log_n, params, bits, unavailable, notes}.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _precision_common as P  # noqa: E402

import seal  # noqa: E402


class Seal:
    def __init__(self, log_n, depth, notes):
        n = 2 ** log_n
        # SEAL has exactly one special prime (the last coefficient prime); ringfire's
        # second 60-bit special prime at N >= 2^15 has no counterpart.
        bit_sizes = [60] + [40] * depth + [60]
        parms = seal.EncryptionParameters(seal.scheme_type.ckks)
        parms.set_poly_modulus_degree(n)
        parms.set_coeff_modulus(seal.CoeffModulus.Create(n, bit_sizes))
        ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
        if not ctx.parameters_set():
            # N=2^13: 240 bits > 218 (ringfire runs it insecure too); N=2^16: SEAL's
            # table stops at 2^15 although 920 bits is far below the 1761-bit bound.
            notes.append(f"SEAL rejects 128-bit security ({ctx.parameter_error_message()}): "
                         f"ran with sec_level none, log QP = {sum(bit_sizes)}")
            ctx = seal.SEALContext(parms, True, seal.sec_level_type.none)
        self.ctx, self.slots, self.levels = ctx, n // 2, depth
        self.params = {"n": n, "coeff_bits": bit_sizes[:-1], "special_bits": bit_sizes[-1:],
                       "primes_qp": [m.value() for m in ctx.key_context_data().parms().coeff_modulus()],
                       "scale_bits": 40, "dnum": depth + 1}
        self.scale = 2.0 ** 40
        self.enc = seal.CKKSEncoder(ctx)
        kg = seal.KeyGenerator(ctx)
        sk, pk = kg.secret_key(), kg.create_public_key()
        self.rk = kg.create_relin_keys()
        self.gk = seal.GaloisKeys()
        kg.create_galois_keys([1, -1, 7, 0], self.gk)  # step 0 is SEAL's conjugation key (element 2N-1)
        self.encryptor = seal.Encryptor(ctx, pk, sk)  # both keys: encrypt and encrypt_symmetric
        self.decryptor = seal.Decryptor(ctx, sk)
        self.ev = seal.Evaluator(ctx)

    def _encode(self, v, scale):
        v = np.asarray(v)
        return self.enc.encode_complex(v, scale) if np.iscomplexobj(v) else self.enc.encode(v, scale)

    def _last_prime(self, ct):
        return float(self.ctx.get_context_data(ct.parms_id()).parms().coeff_modulus()[-1].value())

    def _rescale(self, ct):
        return self.ev.rescale_to_next(ct)

    def encode_decode(self, v):
        return self.enc.decode_complex(self._encode(v, self.scale))

    def encrypt(self, v, secret=False):
        pt = self._encode(v, self.scale)
        return self.encryptor.encrypt_symmetric(pt) if secret else self.encryptor.encrypt(pt)

    def decrypt(self, ct):
        return self.enc.decode_complex(self.decryptor.decrypt(ct))

    def level(self, ct):
        return ct.coeff_modulus_size() - 1

    def add(self, u, v):
        return self.ev.add(u, v)

    def add_plain(self, ct, v):
        # SEAL adds only at bit-equal scales: encode at the ciphertext's scale.
        return self.ev.add_plain(ct, self._encode(v, ct.scale()))

    def add_scalar(self, ct, c):
        return self.ev.add_plain(ct, self.enc.encode(float(c), ct.scale()))

    def multiply_integer(self, ct, k):
        return self.ev.multiply_plain(ct, self.enc.encode(int(k)))  # SEAL's exact integer encoding, scale 1

    def multiply_plain(self, ct, v):
        # Plaintext at scale = the prime the rescale divides by, as ringfire's row does.
        return self._rescale(self.ev.multiply_plain(ct, self._encode(v, self._last_prime(ct))))

    def multiply_scalar(self, ct, c):
        return self._rescale(self.ev.multiply_plain(ct, self.enc.encode(float(c), self._last_prime(ct))))

    def multiply(self, u, v):
        if u.coeff_modulus_size() > v.coeff_modulus_size():
            u = self.ev.mod_switch_to(u, v.parms_id())
        elif v.coeff_modulus_size() > u.coeff_modulus_size():
            v = self.ev.mod_switch_to(v, u.parms_id())
        return self._rescale(self.ev.relinearize(self.ev.multiply(u, v), self.rk))

    def square(self, u):
        return self._rescale(self.ev.relinearize(self.ev.square(u), self.rk))

    def rotate(self, ct, k):
        return self.ev.rotate_vector(ct, k, self.gk)

    def conjugate(self, ct):
        return self.ev.complex_conjugate(ct, self.gk)


def main():
    args = P.parser(__doc__).parse_args()
    depth = args.depth or P.DEPTH[args.log_n]
    notes = []
    lib = Seal(args.log_n, depth, notes)
    notes.append("one 60-bit special prime at every N (SEAL has one special prime; key switching "
                 "uses one digit per Q prime)")
    notes.append("scale 2^40 for fresh ciphertexts; after a rescale SEAL keeps the exact scale "
                 "Delta^2/q (it drifts from 2^40)")
    notes.append("multiply_integer: multiply_plain by SEAL's exact integer encoding (scale 1)")
    P.run("SEAL", P.package_version("seal-python"), args.log_n, depth, lib, lib.params, notes)


if __name__ == "__main__":
    main()
