"""Optional Zstandard compression of serialized objects (``to_bytes(compress=True)``,
extra ``ringfire[zstd]``): round trips through every envelope, the measured size
gain, and hostile compressed bytes refused fast and small: decompression bombs of
several shapes at ratios up to 32,768:1 (time and peak memory measured in a
subprocess), and frames fuzzed by hypothesis."""

import json
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import ringfire as rf

zstandard = pytest.importorskip("zstandard")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

HEADER = struct.Struct("<4sHHQ")  # ringfire's envelope: magic, version, algorithm, declared length


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
    # Each residue already takes just its prime's bits (format version 5): uniform words
    # leave Zstandard nothing to find, and its frame costs a few dozen bytes.
    assert len(plain) <= len(packed) < len(plain) + 128
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
    # Zeros over the frame's first bytes: corrupt compressed data, or (a stored block: residues
    # in their primes' bits do not compress) an envelope whose header no longer holds.
    with pytest.raises(ValueError, match="corrupt compressed data|the header says|truncated or padded"):
        ctx.load(ct_bytes[:40] + bytes(64) + ct_bytes[104:])
    with pytest.raises(ValueError, match="too short"):
        ctx.load(b"RFZS\x01\x00")
    with pytest.raises(ValueError, match="compress must be"):
        ctx.encrypt(np.ones(2), ckks[2]).to_bytes(compress=30)


# ---- decompression bombs -----------------------------------------------------------------

def _streamed(total: int, chunk: bytes, *, level=3, window_log=None, content_size=False, flush_every=0) -> bytes:
    """A Zstandard frame of `total` bytes of `chunk` repeated, compressed as a stream (the
    payload is never held whole); `flush_every`: end a block every that many bytes."""
    params = dict(window_log=window_log) if window_log else {}
    compressor = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters.from_level(
        level, write_content_size=content_size, **params))
    stream = compressor.compressobj(size=total if content_size else -1)
    piece = chunk * max(1, (flush_every or (1 << 20)) // len(chunk))
    out, left = [], total
    while left > 0:
        take = piece[:min(left, len(piece))]
        out.append(stream.compress(take))
        if flush_every:
            out.append(stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
        left -= len(take)
    out.append(stream.flush())
    return b"".join(out)


# (name, frame maker): zeros as in the report, a repeated pattern, many small blocks, the
# content size written, and a 1 KiB window (which passes the window check and must be cut
# off by the output bound itself).
BOMBS = {
    "zeros_1GiB": lambda: _streamed(1 << 30, b"\0"),
    "pattern_256MiB": lambda: _streamed(256 << 20, b"ringfire"),
    "small_blocks_64MiB": lambda: _streamed(64 << 20, b"\0", flush_every=4096),
    "content_size_256MiB": lambda: _streamed(256 << 20, b"\0", content_size=True),
    "window_1KiB_256MiB": lambda: _streamed(256 << 20, b"\0", window_log=10),
}

_MEASURE = """
import json, resource, sys, time, warnings
import ringfire as rf
blob = open(sys.argv[1], "rb").read()
ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 60], scale_bits=40)
out = {}
for name, call in (("decompress", lambda: rf.io.decompress(blob)), ("load", lambda: ctx.load(blob))):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        call()
        error = None
    except ValueError as e:
        error = str(e)
    out[name] = dict(seconds=time.perf_counter() - start, error=error,
                     extra_mib=(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
print(json.dumps(out))
"""


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bombs_are_refused_fast_and_small(name, tmp_path):
    frame = BOMBS[name]()
    ratio = (1 << 30 if name.startswith("zeros") else int(name.rsplit("_", 1)[1][:-3]) << 20) / len(frame)
    # The largest claim the size check lets through (8x the frame), as the report's blob.
    path = tmp_path / "bomb.bin"
    path.write_bytes(HEADER.pack(b"RFZS", 1, 1, 8 * len(frame)) + frame)
    result = json.loads(subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True,
                                       check=True, timeout=120).stdout)
    for call, r in result.items():
        assert r["error"] is not None, f"{name} ({ratio:.0f}:1) was accepted by {call}"
        assert r["seconds"] < 0.2, f"{name} ({ratio:.0f}:1): {call} took {r['seconds']:.2f} s to refuse"
        assert r["extra_mib"] < 64, f"{name} ({ratio:.0f}:1): {call} took {r['extra_mib']:.0f} MiB more"
    if name == "zeros_1GiB":
        assert ratio > 30000


def test_frames_that_disagree_with_their_envelope_are_refused_before_decoding(ckks):
    ctx = ckks[0]
    data = bytes(range(256)) * 64
    frame = zstandard.ZstdCompressor().compress(data)
    with pytest.raises(ValueError, match="frame says it holds"):
        ctx.load(HEADER.pack(b"RFZS", 1, 1, len(data) - 1) + frame)
    big_window = _streamed(1 << 20, b"\0", window_log=27)  # declares a 128 MiB window for 1 MiB
    with pytest.raises(ValueError, match="window"):
        rf.io.decompress(HEADER.pack(b"RFZS", 1, 1, 8 * len(big_window)) + big_window)
    samples = [bytes([i % 7]) * 100 + bytes(range(i % 50)) for i in range(200)]
    with_dict = zstandard.ZstdCompressor(dict_data=zstandard.train_dictionary(1024, samples)).compress(samples[3])
    with pytest.raises(ValueError, match="dictionary"):
        rf.io.decompress(HEADER.pack(b"RFZS", 1, 1, len(samples[3])) + with_dict)
    small = zstandard.ZstdCompressor().compress(b"x" * 10)
    with pytest.raises(ValueError, match="unused data"):  # a second frame after the first
        rf.io.decompress(HEADER.pack(b"RFZS", 1, 1, 10) + small + small)
    skippable = struct.pack("<II", 0x184D2A50, 4) + b"abcd"
    with pytest.raises(ValueError, match="holds 4 bytes"):
        rf.io.decompress(HEADER.pack(b"RFZS", 1, 1, 10) + skippable + small)


@pytest.fixture(scope="module")
def packed_ciphertext(ckks):
    ctx, _, keys = ckks
    return ctx.encrypt(np.linspace(-1, 1, 64), keys).to_bytes(compress=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_compressed_objects_raise_value_errors_only(ckks, packed_ciphertext, data):
    """Random edits of a real compressed ciphertext (its envelope and its frame): each load
    either returns a ciphertext or raises ValueError, quickly."""
    ctx = ckks[0]
    blob = bytearray(packed_ciphertext)
    edit = data.draw(st.sampled_from(["flip", "truncate", "insert", "length", "append_frame", "rle"]))
    if edit == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            blob[data.draw(st.integers(0, len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif edit == "truncate":
        blob = blob[:data.draw(st.integers(0, len(blob) - 1))]
    elif edit == "insert":
        at = data.draw(st.integers(HEADER.size, len(blob)))
        blob[at:at] = data.draw(st.binary(min_size=1, max_size=64))
    elif edit == "length":
        blob[8:16] = struct.pack("<Q", data.draw(st.integers(0, 1 << 40)))
    elif edit == "append_frame":
        blob += zstandard.ZstdCompressor().compress(data.draw(st.binary(max_size=256)))
    else:  # an RLE-only frame of a drawn length in place of the real one
        n = data.draw(st.integers(0, 1 << 22))
        blob = bytearray(HEADER.pack(b"RFZS", 1, 1, data.draw(st.integers(0, 1 << 23)))
                         + zstandard.ZstdCompressor().compress(b"\7" * n))
    start = time.perf_counter()
    try:
        ctx.load(bytes(blob))
    except ValueError:
        pass
    assert time.perf_counter() - start < 0.5
