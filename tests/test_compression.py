"""Optional Zstandard compression of serialized objects (``to_bytes(compress=True)``,
extra ``ringfire[zstd]``): round trips through every envelope, the measured size
gain, and hostile compressed bytes refused fast and small."""

import struct
import time

import numpy as np
import pytest

import ringfire as rf

zstandard = pytest.importorskip("zstandard")


@pytest.fixture(scope="module")
def ckks():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1])
    return ctx, sk, keys


def test_round_trips_and_what_it_saves(ckks):
    ctx, sk, keys = ckks
    x = np.random.default_rng(0).uniform(-1, 1, 5)
    ct = ctx.encrypt(x, keys)  # primes of 60, 40 and 40 bits
    plain, packed = ct.to_bytes(), ct.to_bytes(compress=True)
    assert rf.io.is_compressed(packed)
    # A 40-bit residue leaves the top two bytes of its word zero: 2 of 3 limbs save a quarter.
    assert len(packed) < 0.87 * len(plain)
    back = ctx.load(packed)
    assert back.shape == (5,) and np.allclose(ctx.decrypt(back, sk), x, atol=1e-5)
    assert ctx.load(ct.to_bytes(compress=19)).to_bytes() == plain
    mac = rf.io.new_mac_key()
    assert ctx.load(ct.to_bytes(compress=True, mac_key=mac), mac_key=mac).to_bytes() == plain
    for key in (keys.public, keys.relin, keys.galois):
        assert ctx.load(key.to_bytes(compress=True)).to_bytes() == key.to_bytes()
    with pytest.warns(RuntimeWarning, match="without a password"):
        raw = sk.to_bytes()
    sealed = sk.to_bytes(compress=True, password="pw", scrypt_log_n=10)
    with pytest.warns(RuntimeWarning, match="without a password"):
        assert ctx.load(sealed, password="pw").to_bytes() == raw


def test_structured_objects_expand_within_the_parameters(ckks):
    ctx, sk, keys = ckks
    zero = ctx.encrypt(np.ones(4), keys) * 0  # all-zero polynomials: compresses ~1000x
    packed = zero.to_bytes(compress=True)
    assert len(packed) * 100 < len(zero.to_bytes())
    assert np.allclose(ctx.decrypt(ctx.load(packed), sk), 0, atol=1e-6)


def test_bombs_and_corruption_are_refused(ckks):
    ctx = ckks[0]
    header = struct.Struct("<4sHHQ")
    frame = zstandard.ZstdCompressor().compress(b"\0" * 1000)
    bomb = header.pack(b"RFZS", 1, 1, 1 << 40) + frame  # claims 1 TiB
    start = time.perf_counter()
    with pytest.raises(ValueError, match="largest object these parameters allow"):
        ctx.load(bomb)
    assert time.perf_counter() - start < 0.05
    # A real zero-filled frame of 64 MiB, claiming exactly that: beyond 8x and these parameters.
    big = zstandard.ZstdCompressor().compress(b"\0" * (64 << 20))
    with pytest.raises(ValueError, match="refused"):
        ctx.load(header.pack(b"RFZS", 1, 1, 64 << 20) + big)
    ct_bytes = ctx.encrypt(np.ones(3), ckks[2]).to_bytes(compress=True)
    with pytest.raises(ValueError, match="the header says"):  # declared length off by one
        ctx.load(ct_bytes[:8] + struct.pack("<Q", struct.unpack_from("<Q", ct_bytes, 8)[0] + 1) + ct_bytes[16:])
    with pytest.raises(ValueError, match="corrupt compressed data|the header says"):
        ctx.load(ct_bytes[:40] + bytes(64) + ct_bytes[104:])
    with pytest.raises(ValueError, match="too short"):
        ctx.load(b"RFZS\x01\x00")
    with pytest.raises(ValueError, match="compress must be"):
        ctx.encrypt(np.ones(2), ckks[2]).to_bytes(compress=30)
