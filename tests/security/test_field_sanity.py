"""Fields that validate only in form (the checksum is recomputed by anyone)
are checked for sense where they can be, and authenticated where they
cannot: scales within the level's modulus, kinds not interchangeable, key
sources consistent, keys of this context only; a keyed MAC for bytes that
cross a trust boundary; secret keys under a password."""

import struct
import warnings

import numpy as np
import pytest

import ringfire as rf

from blobs import HEADER, reseal


@pytest.fixture(scope="module")
def env():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen(rotations=[1, 2])
    x = np.linspace(-1, 1, ctx.slots)
    return ctx, sk, keys, x


def edit(blob: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, HEADER + offset, value)
    return reseal(bytes(out))


@pytest.mark.parametrize("scale", [1.0, 1e-300, 5e-324, 2.0**200, 1e300])
def test_scales_the_level_cannot_hold_are_refused(env, scale):
    ctx, sk, keys, x = env
    blob = ctx.encrypt(x, keys).to_bytes()  # payload: size u32 | level u32 | scale f64 | ...
    with pytest.raises(ValueError, match="scale"):
        ctx.load(edit(blob, 8, "<d", scale))


def test_a_public_key_does_not_load_as_a_ciphertext(env):
    ctx, sk, keys, x = env
    blob = bytearray(keys.public.to_bytes())
    blob[6] = 3  # kind: ciphertext (the payloads share a layout)
    with pytest.raises(ValueError, match="scale"):
        ctx.load(reseal(bytes(blob)))


def test_a_relabelled_galois_key_is_refused(env):
    ctx, sk, keys, x = env
    blob = keys.galois.to_bytes()  # payload: count u32 | element u64 | key
    first = struct.unpack_from("<Q", blob, HEADER + 4)[0]
    other = next(g for g in range(3, 2 * ctx.poly_degree, 2) if g not in keys.galois.elements)
    assert first != other
    with pytest.raises(ValueError, match="relabelled"):
        ctx.load(edit(blob, 4, "<Q", other))


def test_keys_of_other_contexts_are_refused(env):
    ctx, sk, keys, x = env
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40], scale_bits=40, special_bits=[60])
    foreign_sk, _ = other.keygen()
    with pytest.raises(ValueError, match="different parameters"):
        ctx.galois_keys(foreign_sk, rotations=[1])
    with pytest.raises(ValueError, match="different parameters"):
        ctx.encrypt(x, foreign_sk)
    with pytest.raises(TypeError, match="SecretKey"):
        ctx.decrypt(ctx.encrypt(x, keys), None)


def test_authenticated_bytes_round_trip_and_any_change_is_caught(env):
    ctx, sk, keys, x = env
    mac_key = rf.io.new_mac_key()
    for obj in (ctx.encrypt(x, keys), keys.public, keys.relin, keys.galois, ctx.encode(x)):
        blob = obj.to_bytes(mac_key=mac_key)
        assert type(ctx.load(blob, mac_key=mac_key)) is type(obj)
        rng = np.random.default_rng(len(blob))
        for position in [0, 5, HEADER, len(blob) // 2, len(blob) - 1, *rng.integers(0, len(blob), 4)]:
            changed = bytearray(blob)
            changed[position] ^= 0x10
            with pytest.raises(ValueError):
                ctx.load(bytes(changed), mac_key=mac_key)
        with pytest.raises(ValueError, match="authentication failed"):
            ctx.load(blob, mac_key=rf.io.new_mac_key())
        with pytest.raises(ValueError, match="pass mac_key"):
            ctx.load(blob)
    # A stripped tag is not a way around it.
    with pytest.raises(ValueError, match="not authenticated"):
        ctx.load(keys.galois.to_bytes(), mac_key=mac_key)
    assert rf.ckks.Context.from_bytes(ctx.to_bytes(mac_key=mac_key), mac_key=mac_key).fingerprint == ctx.fingerprint
    with pytest.raises(ValueError, match="MAC key has 16 to 64 bytes"):
        keys.public.to_bytes(mac_key=b"short")


def test_a_relabelled_galois_key_with_a_recomputed_tag_fails_authentication(env):
    ctx, sk, keys, x = env
    mac_key = rf.io.new_mac_key()
    blob = bytearray(keys.galois.to_bytes(mac_key=mac_key))
    inner = 16  # the authentication envelope's header
    struct.pack_into("<Q", blob, inner + HEADER + 4, 7)
    with pytest.raises(ValueError, match="authentication failed"):
        ctx.load(bytes(blob), mac_key=mac_key)


def test_secret_keys_under_a_password(env):
    ctx, sk, keys, x = env
    with pytest.warns(RuntimeWarning, match="without a password"):
        clear = sk.to_bytes()
    sealed = sk.to_bytes(password="correct horse", scrypt_log_n=12)
    assert clear[HEADER:-8] not in sealed  # the coefficients are not in the clear
    loaded = ctx.load(sealed, password="correct horse")
    ct = ctx.encrypt(x, keys)
    assert np.max(np.abs(ctx.decrypt(ct, loaded) - x)) < 1e-6
    with pytest.raises(ValueError, match="wrong password"):
        ctx.load(sealed, password="wrong horse")
    with pytest.raises(ValueError, match="password-protected: pass password"):
        ctx.load(sealed)
    changed = bytearray(sealed)
    changed[-3] ^= 1
    with pytest.raises(ValueError, match="wrong password, or the protected bytes were changed"):
        ctx.load(bytes(changed), password="correct horse")
    # Costs outside the bounds are refused before any work (a hostile file cannot ask for 64 GiB).
    costly = bytearray(sealed)
    costly[8] = 30  # log2(N)
    with pytest.raises(ValueError, match="scrypt costs out of range"):
        ctx.load(bytes(costly), password="correct horse")
    both = sk.to_bytes(password=b"pw", mac_key=b"k" * 32, scrypt_log_n=10)
    assert np.max(np.abs(ctx.decrypt(ct, ctx.load(both, mac_key=b"k" * 32, password=b"pw")) - x)) < 1e-6


def test_keys_and_passwords_must_be_bytes_or_text(env):
    ctx, sk, keys, x = env
    # bytes(32) would be 32 zero bytes: a MAC key anyone can guess; bytes(12) a password of zeros.
    with pytest.raises(TypeError, match="a MAC key is bytes"):
        keys.public.to_bytes(mac_key=32)
    with pytest.raises(TypeError, match="a MAC key is bytes"):
        keys.public.to_bytes(mac_key="a string key of 32 chars........")
    with pytest.raises(TypeError, match="a MAC key is bytes"):
        ctx.load(keys.public.to_bytes(mac_key=b"k" * 32), mac_key=32)
    with pytest.raises(TypeError, match="a password is str or bytes"):
        sk.to_bytes(password=12)
    assert ctx.load(keys.public.to_bytes(mac_key=bytearray(b"k" * 32)), mac_key=memoryview(b"k" * 32))
