"""Loads are bounded by their input: a few dozen bytes that declare huge keys
or ciphertexts fail before anything of the declared size is allocated (the
review measured ~375 MiB and 2.3 s for a 36-byte relinearization key blob
under N16_D30), and random bytes never crash."""

import gc
import struct
import time

import numpy as np
import pytest

import ringfire as rf

from blobs import envelope


@pytest.fixture(scope="module")
def n16():
    return rf.ckks.Context.preset("N16_D30")


def held_bytes() -> int:
    stats = rf.cuda.pool_stats("cpu")
    return stats["bytes_in_use"] + stats["bytes_cached"]


def crafted(ctx):
    """The review's blobs (format version 1, as it was then) and their version-2 and -3 twins."""
    legacy, identity = ctx.params.legacy_fingerprint, ctx.params.identity
    level = ctx.max_level
    dnum = ctx.params.dnum
    return {
        "relin key v1, 36 bytes": envelope("relin key", struct.pack("<I", dnum), legacy, version=1),
        "Galois keys v1, 44 bytes": envelope("galois keys", struct.pack("<IQ", 1, 5), legacy, version=1),
        "ciphertext v1, 49 bytes": envelope("ciphertext", struct.pack("<IIdB", 2, level, 2.0**40, 0), legacy,
                                            version=1),
        "public key v1, 49 bytes": envelope("public key", struct.pack("<IIdB", 2, level, 1.0, 0), legacy, version=1),
        "relin key v3": envelope("relin key", struct.pack("<IQB", dnum, 0, 1), identity),
        "Galois keys v3": envelope("galois keys", struct.pack("<IQIQB", 1, 5, dnum, 5, 1), identity),
        # size, level | scale, complex, form, correction | noise, seeded
        "ciphertext v2": envelope("ciphertext", struct.pack("<IIdBBQdB", 16, level, 2.0**40, 0, 1, 1, 30.0, 0),
                                  legacy, version=2),
        # size, level | scale, complex, form, correction, length | noise, seeded
        "ciphertext v3": envelope("ciphertext", struct.pack("<IIdBBQIdB", 16, level, 2.0**40, 0, 1, 1, 5, 30.0, 0),
                                  identity),
        # level | scale, complex, form, correction, length | scalar
        "plaintext v3": envelope("plaintext", struct.pack("<IdBBQIB", level, 2.0**40, 0, 1, 1, 0, 0), identity),
        "secret key": envelope("secret key", b"\x00" * 16, identity),
    }


def refused_in_seconds(ctx, blob) -> float:
    start = time.perf_counter()
    with pytest.raises(ValueError, match="truncated"):
        ctx.load(blob)
    return time.perf_counter() - start


def test_tiny_blobs_declaring_huge_objects_allocate_nothing(n16):
    # The earlier tests' big keys are freed first, so that a collection does not land inside a timed load;
    # the best of three tries tells a load that allocates (seconds, every time) from a busy machine's hiccup.
    gc.collect()
    for name, blob in crafted(n16).items():
        before = held_bytes()
        elapsed = min(refused_in_seconds(n16, blob) for _ in range(3))
        assert elapsed < 0.2, f"{name}: {elapsed:.2f} s"
        assert held_bytes() - before < 1 << 20, f"{name}: {(held_bytes() - before) >> 20} MiB"


def test_random_bytes_behind_a_valid_envelope_never_crash(n16):
    rng = np.random.default_rng(4)
    for kind in ("ciphertext", "public key", "relin key", "galois keys", "plaintext", "secret key"):
        for size in (0, 1, 7, 13, 26, 64, 300):
            for _ in range(5):
                blob = envelope(kind, rng.integers(0, 256, size, dtype=np.uint8).tobytes(), n16.params.identity)
                with pytest.raises(ValueError):
                    n16.load(blob)
