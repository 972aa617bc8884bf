"""The serialized format: files written by format version 2 (tests/data/format_v2,
made by the release before the parameter identity and lengths) and version 4
(tests/data/format_v4, residues in 64-bit words) still load and decrypt; the parameter identity is SHA-256 of the documented encoding (checked
with hashlib, an independent implementation); newer versions are refused by
name."""

import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

import ringfire as rf
from envelope_checksum import reseal

V2 = Path(__file__).parent / "data" / "format_v2"
V4 = Path(__file__).parent / "data" / "format_v4"


def load_context(cls, name):
    with pytest.warns(RuntimeWarning, match="security check is disabled"):  # toy sizes, as saved
        return cls.from_bytes((V2 / f"{name}_params.bin").read_bytes(), insecure_no_security_check=True)


def test_version_2_ckks_files_load_and_decrypt():
    ctx = load_context(rf.ckks.Context, "ckks")
    assert ctx.params.legacy_fingerprint == 0xC49CDF882422780F  # what the v2 files carry
    sk = ctx.load((V2 / "ckks_secret_key.bin").read_bytes())
    ct = ctx.load((V2 / "ckks_ciphertext.bin").read_bytes())
    assert ct.shape == (ctx.slots,)  # version 2 recorded no length: all slots
    values = ctx.decrypt(ct, sk)
    assert np.allclose(values[:4], [0.5, -1.25, 2.0, 3.5], atol=1e-4)
    assert np.allclose(values[4:], 0.0, atol=1e-4)
    # Saved again, it is the current version (5) and keeps loading.
    again = ctx.load(ct.to_bytes())
    assert struct.unpack_from("<H", ct.to_bytes(), 4)[0] == 5
    assert np.allclose(ctx.decrypt(again, sk)[:4], [0.5, -1.25, 2.0, 3.5], atol=1e-4)


def test_version_2_bfv_files_load_and_decrypt():
    ctx = load_context(rf.bfv.Context, "bfv")
    sk = ctx.load((V2 / "bfv_secret_key.bin").read_bytes())
    ct = ctx.load((V2 / "bfv_ciphertext.bin").read_bytes())
    assert list(ctx.decrypt(ct, sk)[:4]) == [1, 2, 3, -1]


def test_version_2_files_of_other_parameters_are_refused():
    ctx = rf.ckks.Context.preset("N13_D2")
    with pytest.raises(ValueError, match="different parameters"):
        ctx.load((V2 / "ckks_ciphertext.bin").read_bytes())


def test_identity_is_sha256_of_the_documented_encoding():
    for ctx in (rf.ckks.Context.preset("N13_D2"), rf.bfv.Context(poly_degree=2**13, plain_bits=20),
                rf.bgv.Context(poly_degree=2**12)):
        p = ctx.params
        scheme = {"ckks": 1, "bgv": 2, "bfv": 3}[ctx.scheme]
        t = 0 if ctx.scheme == "ckks" else ctx.plain_modulus
        fields = [scheme, t, p.poly_degree, p.dnum, p.security, p.scale_bits, p.reserved_levels,
                  len(p.q_primes), len(p.p_primes), *p.q_primes, *p.p_primes]
        digest = hashlib.sha256(b"ringfire parameters v3" + struct.pack(f"<{len(fields)}Q", *fields)).digest()
        assert p.identity == digest
        assert ctx.fingerprint == int.from_bytes(digest[:8], "little")
        blob = ctx.to_bytes()
        assert blob[8:40] == digest  # the envelope carries the identity


def test_version_4_files_load_decrypt_and_save_smaller():
    """Version 4 stored every residue in a 64-bit word. Its files load and decrypt; saved again
    they are version 5 (each residue in its prime's bits: 50 + 40 of 128 bits here) and load to
    the same words."""
    with pytest.warns(RuntimeWarning, match="security check is disabled"):
        ctx = rf.ckks.Context.from_bytes((V4 / "ckks_params.bin").read_bytes(), insecure_no_security_check=True)
    sk = ctx.load((V4 / "ckks_secret_key.bin").read_bytes())
    n, bits = ctx.poly_degree, [(q - 1).bit_length() for q in ctx.params.q_primes]
    for name, polys in (("ckks_ciphertext", 2), ("ckks_seeded_ciphertext", 1)):
        blob = (V4 / f"{name}.bin").read_bytes()
        assert struct.unpack_from("<H", blob, 4)[0] == 4
        ct = ctx.load(blob)
        assert np.allclose(ctx.decrypt(ct, sk)[:4], [0.5, -1.25, 2.0, 3.5], atol=1e-4)
        again = ct.to_bytes()
        assert struct.unpack_from("<H", again, 4)[0] == 5
        assert len(blob) - len(again) == polys * n * sum(64 - b for b in bits) // 8
        assert np.array_equal(np.asarray(ctx.load(again)._native.view()), np.asarray(ct._native.view()))
    relin_blob = (V4 / "ckks_relin_key.bin").read_bytes()
    relin = ctx.load(relin_blob)
    again = relin.to_bytes()
    assert len(again) < len(relin_blob) and ctx.load(again).to_bytes() == again


def test_a_newer_version_is_refused_by_name():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    blob = bytearray(ctx.encrypt([1.0], keys).to_bytes())
    assert blob[4] == 5
    blob[4] = 6
    blob = reseal(blob)
    with pytest.raises(ValueError, match="written by a newer ringfire"):
        ctx.load(blob)
