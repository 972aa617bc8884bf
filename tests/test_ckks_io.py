"""Serialization: every object round-trips, foreign objects are refused, and
malformed input (truncations, bit flips, forged checksums over corrupt
fields) always raises ValueError, never crashes."""

import struct

import numpy as np
import pytest
from conftest import precision_bits
from envelope_checksum import fnv1a64, reseal, xxh64

import ringfire as rf


def test_native_checksums_match_the_references(objects):
    from ringfire import _core
    blob = objects["ciphertext"]
    for size in (0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 100, 5000):  # every tail path of XXH64
        assert _core.checksum64(blob[:size]) == xxh64(blob[:size]), size
    assert _core.fnv1a64(blob[:5000]) == fnv1a64(blob[:5000])
    # The published XXH64 vectors (seed 0), so the reference itself is anchored.
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"a") == 0xD24EC4F1A98C6E5B
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert _core.checksum64(blob[:-8]) == struct.unpack("<Q", blob[-8:])[0]
    assert struct.unpack("<H", blob[4:6])[0] == 5


@pytest.fixture(scope="module")
def objects(ckks_small):
    ctx, sk, keys = ckks_small
    x = np.linspace(-1, 1, ctx.slots)
    return {
        "parameters": ctx.to_bytes(),
        "plaintext": ctx.encode(x).to_bytes(),
        "scalar plaintext": ctx.encode(0.5).to_bytes(),
        "ciphertext": ctx.encrypt(x, keys).to_bytes(),
        "seeded ciphertext": ctx.encrypt(x, sk).to_bytes(),
        "size-3 ciphertext": ctx.evaluator(keys).multiply(ctx.encrypt(x, keys), ctx.encrypt(x, keys)).to_bytes(),
        "public key": keys.public.to_bytes(),
        "relin key": keys.relin.to_bytes(),
        "galois keys": keys.galois.to_bytes(),
        "secret key": sk.to_bytes(),
    }


def test_round_trips_preserve_behaviour(ckks_small):
    ctx, sk, keys = ckks_small
    x = np.linspace(-1, 1, ctx.slots)
    sk2 = ctx.load(sk.to_bytes())
    keys2 = rf.ckks.KeySet(public=ctx.load(keys.public.to_bytes()), relin=ctx.load(keys.relin.to_bytes()),
                           galois=ctx.load(keys.galois.to_bytes()))
    ct = ctx.load(ctx.encrypt(x, keys2).to_bytes())
    ct._keys = keys2
    out = (ct * ct).rotate(1)
    assert precision_bits(ctx.decrypt(out, sk2), np.roll(x * x, -1)) > 18
    pt = ctx.load(ctx.encode(x[:10]).to_bytes())
    assert precision_bits(pt.decode()[:10], x[:10]) > 28
    sym = ctx.load(ctx.encrypt(x, sk).to_bytes())
    assert precision_bits(ctx.decrypt(sym, sk), x) > 25
    assert ctx.load(ctx.encode(0.5).to_bytes()).is_scalar


def packed_poly_bytes(n, primes):
    """Bytes of a polynomial in format version 5: N residues per limb in its prime's bits."""
    return sum(n * (q - 1).bit_length() // 8 for q in primes)


def test_seeds_halve_key_and_ciphertext_sizes(ckks_small, objects):
    """To the byte: the envelope (48-byte header, 8-byte checksum), the fields, the stored
    polynomials in their primes' bits, a 32-byte seed for each uniform one."""
    ctx, sk, keys = ckks_small
    n, q, p = ctx.poly_degree, ctx.params.q_primes, ctx.params.p_primes
    framing, ct_fields, key_fields = 48 + 8, 39, 17
    assert len(objects["ciphertext"]) == framing + ct_fields + 2 * packed_poly_bytes(n, q)
    assert len(objects["seeded ciphertext"]) == framing + ct_fields + 32 + packed_poly_bytes(n, q)
    assert len(objects["relin key"]) == framing + key_fields + ctx.params.dnum * (packed_poly_bytes(n, q + p) + 32)
    # Primes near 2^50 and 2^40 (one just above: 41 bits): 131 bits a coefficient, not 192.
    assert [x.bit_length() for x in q] == [50, 41, 40]
    assert packed_poly_bytes(n, q) == n * 131 // 8


def test_format_5_stores_each_residue_in_its_primes_bits(ckks_small):
    """An independent reader of version 5's polynomials (Python integers): each limb a
    little-endian bit stream of N residues of bit_length(q - 1) bits, equal to the words the
    ciphertext holds; and a residue at or above its prime is refused."""
    ctx, _, keys = ckks_small
    ct = ctx.encrypt(np.linspace(-1, 1, ctx.slots), keys)  # public-key: both polynomials stored
    blob = ct.to_bytes()
    words = np.asarray(ct._native.view())
    n, offset = ctx.poly_degree, 48 + 39
    for poly in range(2):
        for limb, q in enumerate(ctx.params.q_primes[:ct.level + 1]):
            bits = (q - 1).bit_length()
            size = n * bits // 8
            stream = int.from_bytes(blob[offset:offset + size], "little")
            residues = [(stream >> (i * bits)) & ((1 << bits) - 1) for i in range(n)]
            assert residues == words[poly, limb].tolist(), (poly, limb)
            offset += size
    assert offset == len(blob) - 8
    # The first residue set to q0 (its bits are the stream's lowest): refused by name.
    q0 = ctx.params.q_primes[0]
    bits = (q0 - 1).bit_length()
    head = int.from_bytes(blob[48 + 39:48 + 39 + 8], "little")
    head = (head & ~((1 << bits) - 1)) | q0
    forged = bytearray(blob)
    forged[48 + 39:48 + 39 + 8] = head.to_bytes(8, "little")
    with pytest.raises(ValueError, match=r"outside \[0, q\)"):
        ctx.load(reseal(forged))


def test_objects_from_other_parameters_are_refused(objects):
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=35, special_bits=[60])
    for name, blob in objects.items():
        with pytest.raises(ValueError, match="different parameters|differ from this context"):
            other.load(blob)


def test_wrong_kind_and_garbage(ckks_small, objects):
    ctx, _, _ = ckks_small
    from ringfire import _core
    with pytest.raises(ValueError, match="expected a ciphertext, got a plaintext"):
        _core.load_ciphertext(ctx._core.rlwe, objects["plaintext"])
    for junk in (b"", b"RFHE", b"hello world" * 10, bytes(64)):
        with pytest.raises(ValueError):
            ctx.load(junk)
    bumped = bytearray(objects["ciphertext"])
    bumped[4] = 9  # version
    with pytest.raises(ValueError, match="version"):
        ctx.load(reseal(bytes(bumped)))


def test_fuzz_truncations_and_bit_flips(ckks_small, objects):
    ctx, _, _ = ckks_small
    rng = np.random.default_rng(1234)
    for name, blob in objects.items():
        for cut in sorted(set(rng.integers(0, len(blob), 12).tolist()) | {0, 1, 23, 24, len(blob) - 1}):
            with pytest.raises(ValueError):
                ctx.load(blob[:cut])
        for _ in range(12):
            flipped = bytearray(blob)
            bit = int(rng.integers(0, 8 * len(blob)))
            flipped[bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(ValueError):
                ctx.load(bytes(flipped))


def test_fuzz_corrupt_fields_behind_a_valid_checksum(ckks_small, objects):
    """With the checksum recomputed, only field validation stands between
    corrupt data and the kernels: loads either fail cleanly or yield a
    well-formed object."""
    ctx, sk, _ = ckks_small
    rng = np.random.default_rng(99)
    header = 24
    for name, blob in objects.items():
        for _ in range(15):
            mutated = bytearray(blob)
            # target the payload's first bytes (sizes, levels, flags) most of the time
            span = min(len(blob) - 8 - header, 64 if rng.random() < 0.7 else len(blob) - 8 - header)
            pos = header + int(rng.integers(0, span))
            mutated[pos] = int(rng.integers(0, 256))
            try:
                obj = ctx.load(reseal(bytes(mutated)))
            except ValueError:
                continue
            if isinstance(obj, rf.ckks.Ciphertext):
                try:  # must not crash: a result or a clean refusal of a noise-only or wrapped one
                    ctx.decrypt(obj, sk)
                except ValueError as err:
                    assert "exceeds its scale" in str(err) or "outgrew level" in str(err), str(err)


def test_a_ciphertext_whose_noise_estimate_passed_its_modulus_saves_and_loads():
    """A product that overflowed by its estimate (BFV's BGV-style product of noisy results,
    say) wrote an estimate the loader refused: the writer keeps it within the modulus."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.bfv.Context(2**13, plain_modulus=16, insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    ct = ctx.encrypt(ctx.encode_coefficients(np.arange(4)), keys)
    ct._host().noise_bits = 500.0
    loaded = ctx.load(ct.to_bytes())
    q_bits = sum(np.log2(float(q)) for q in ctx.params.q_primes[:ct.level + 1])
    assert abs(loaded.noise_bits - q_bits) < 1e-6
    assert np.array_equal(ctx.decrypt_coefficients(loaded, sk)[:4], np.arange(4))
