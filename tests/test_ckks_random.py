"""Randomness: ChaCha20 against RFC 8439, the CSPRNG's determinism rules, and
that deterministic mode is reproducible while normal mode is not."""

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core


def test_chacha20_block_rfc8439_2_3_2():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert _core.chacha20_block(key, nonce, 1) == expected


def test_chacha20_block_rfc8439_appendix_a1_first_vector():
    expected = bytes.fromhex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")
    assert _core.chacha20_block(bytes(32), bytes(12), 0) == expected


def test_prng_seeded_is_deterministic_and_os_is_not():
    a = _core.Prng.from_seed(b"\x01" * 32).bytes(64)
    assert a == _core.Prng.from_seed(b"\x01" * 32).bytes(64)
    assert a != _core.Prng.from_seed(b"\x02" * 32).bytes(64)
    assert _core.Prng.from_os().bytes(32) != _core.Prng.from_os().bytes(32)
    with pytest.raises(ValueError, match="32 bytes"):
        _core.Prng.from_seed(b"short")


def _ctx(seed=None):
    kwargs = {} if seed is None else {"insecure_deterministic_seed": seed}
    return rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60], **kwargs)


def test_uniform_sampling_follows_the_documented_stream_layout():
    """The batch sampler (AVX-512 where the CPU has it) against an independent reading of the
    stream: RFC 8439 blocks for counters 0, 1, ... with key = seed and a zero nonce, read as
    little-endian words, masked to the bound's bit length and kept when below the bound."""
    seed = bytes(range(7, 39))
    stream = b"".join(_core.chacha20_block(seed, bytes(12), i) for i in range(40))
    words = np.frombuffer(stream, dtype="<u8")
    for bound in (3, (1 << 40) - 87, (1 << 59) + 12345, (1 << 61) - 1):
        mask = (1 << (bound - 1).bit_length()) - 1
        kept = [int(w) & mask for w in words if int(w) & mask < bound][:200]
        got = _core.Prng.from_seed(seed).uniform_below_many(bound, len(kept))
        assert got.tolist() == kept, bound
        one = _core.Prng.from_seed(seed)
        assert [one.uniform_below(bound) for _ in range(len(kept))] == kept


def test_deterministic_mode_reproduces_keys_and_ciphertexts():
    with pytest.warns(RuntimeWarning, match="tests only"):
        c1, c2 = _ctx(b"\x07" * 32), _ctx(b"\x07" * 32)
    out = []
    for ctx in (c1, c2):
        sk, keys = ctx.keygen()
        out.append((sk.to_bytes(), ctx.encrypt(np.arange(4.0), keys).to_bytes()))
    assert out[0] == out[1]


def test_os_mode_gives_fresh_keys_every_time():
    ctx = _ctx()
    sk1, _ = ctx.keygen()
    sk2, _ = ctx.keygen()
    assert sk1.to_bytes() != sk2.to_bytes()


def test_secret_is_ternary_and_balanced():
    ctx = _ctx()
    sk, _ = ctx.keygen()
    s = np.array(sk._native.coefficients())
    assert set(np.unique(s)) <= {-1, 0, 1}
    counts = np.array([(s == v).sum() for v in (-1, 0, 1)])
    n = s.size
    assert np.all(np.abs(counts - n / 3) < 6 * np.sqrt(n * 2 / 9))
