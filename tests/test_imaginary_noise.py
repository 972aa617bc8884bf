"""Decrypting results whose real part was taken exactly (docs/security.md, "Where the
measurement misses"): a lookup's output and a pair's halves come out of x + conj(x), which
cancels the imaginary parts' noise but not the real parts'. The default decryption sizes
the noise it adds from the imaginary parts, so those results get noise of their estimated
error put back there. Checked on the toy ring against the error measured in NumPy: the
imaginary parts measure about the real parts' error again, and the noise a default
decryption adds is at least the result's own; ``ev.restore_imaginary_noise`` does the same
for a real part taken by hand."""

import warnings

import numpy as np
import pytest

import ringfire as rf

SEED = bytes(range(32))


@pytest.fixture(scope="module")
def toy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring is insecure by design and says so
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE", insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True, conjugate=True)
    return ctx, sk, keys, ctx.evaluator(keys)


def exact(ctx, sk, ct) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctx.decrypt(ct, sk, insecure_exact=True, complex=True)


def rms(values) -> float:
    return float(np.sqrt(np.mean(np.abs(values) ** 2)))


def check_masked(ctx, sk, ct, want):
    """The imaginary parts measure at least about the real parts' error (within half a
    bit), and the default decryption adds at least that error."""
    raw = exact(ctx, sk, ct)
    own, imaginary = rms(raw.real - want), rms(raw.imag)
    added = rms(ctx.decrypt(ct, sk) - raw.real)
    assert not ct.is_complex
    assert imaginary >= own / np.sqrt(2), (imaginary, own)
    assert added >= own, (added, own)  # without the noise put back: 2^-30.1 added, 2^-28.8 own (the pair)


def test_lookup_outputs_are_masked(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(1)
    table = rng.uniform(-1, 1, 64)  # a larger table: more error in the real parts
    m = rng.integers(0, 64, ctx.slots)
    check_masked(ctx, sk, ev.lut(ctx.encrypt(m.astype(float), keys), table, modulus=64), table[m])
    m2 = rng.integers(0, 64, ctx.slots)
    fa, fb = ev.lut_pair(ctx.encrypt(m.astype(float), keys), ctx.encrypt(m2.astype(float), keys), table, modulus=64)
    check_masked(ctx, sk, fa, table[m])
    check_masked(ctx, sk, fb, table[m2])


def test_pair_halves_are_masked(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = ev.bootstrap_pair(ctx.encrypt(x, keys), ctx.encrypt(y, keys))
    check_masked(ctx, sk, a, x)
    check_masked(ctx, sk, b, y)


def test_the_noise_put_back_differs_between_results_and_leaves_the_values(toy):
    """Two lookups of different inputs get independent imaginary noise (their difference
    does not cancel it), and the same lookup twice the same (it is seeded by the result)."""
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(3)
    m = rng.integers(0, 16, ctx.slots)
    ct = ctx.encrypt(m.astype(float), keys)
    first, again = ev.lut(ct, lambda k: k / 16, modulus=16), ev.lut(ct, lambda k: k / 16, modulus=16)
    np.testing.assert_array_equal(exact(ctx, sk, first), exact(ctx, sk, again))
    other = ev.lut(ctx.encrypt(m.astype(float), keys), lambda k: k / 16, modulus=16)
    difference = exact(ctx, sk, ev.sub(first, other))
    assert rms(difference.imag) > rms(exact(ctx, sk, first).imag)  # sqrt(2) times one's, not 0
    assert np.abs(exact(ctx, sk, first).real - m / 16).max() < 2**-22


def test_a_real_part_taken_by_hand_gets_its_noise_back(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    folded = ev.add(ct, ev.conjugate(ct))  # 2 Re x: the imaginary parts' noise cancels
    raw = exact(ctx, sk, folded)
    assert rms(raw.imag) < rms(raw.real - 2 * x) / 2  # the gap
    check_masked(ctx, sk, ev.restore_imaginary_noise(folded), 2 * x)
    with pytest.raises(ValueError, match="applies to real ciphertexts"):
        ev.restore_imaginary_noise(ctx.encrypt(np.full(ctx.slots, 1j), keys))
    for wrong in (None, sk, ctx.encode(x)):
        with pytest.raises(TypeError, match="expected a Ciphertext"):
            ev.restore_imaginary_noise(wrong)
