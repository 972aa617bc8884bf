"""Released decryptions must not give the key away (issue: Li-Micciancio's
attack recovered 100 % of the secret from one `decrypt(ct, sk, complex=True)`
of the 128-bit preset N13_D2). The attack itself is checked against the exact
decryption, which it must break: the test can fail."""

import numpy as np
import pytest

import ringfire as rf

from cpad_attack import recovered_fraction


@pytest.fixture(scope="module")
def n13():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    rng = np.random.default_rng(2021)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    computed = ctx.encrypt(x, keys) * ctx.encrypt(y, keys) * ctx.encrypt(x, keys)  # down to level 0
    assert computed.level == 0
    return ctx, sk, keys, computed, x * y * x


def test_exact_decryption_gives_the_whole_key_away(n13):
    ctx, sk, _, ct, _ = n13
    with pytest.warns(RuntimeWarning, match="insecure_exact"):
        released = ctx.decrypt(ct, sk, complex=True, insecure_exact=True)
    assert recovered_fraction(ctx, ct, released, sk) == 1.0


def test_default_decryption_resists_the_attack(n13):
    ctx, sk, _, ct, want = n13
    released = ctx.decrypt(ct, sk, complex=True)
    assert recovered_fraction(ctx, ct, released, sk) < 0.01
    assert np.max(np.abs(released.real - want)) < 2.0**-18  # about half a bit below the exact result
    # Real-valued output (the default) gives even less to work with.
    assert recovered_fraction(ctx, ct, ctx.decrypt(ct, sk), sk) < 0.01


def test_fresh_ciphertexts_resist_too(n13):
    ctx, sk, keys, _, _ = n13
    x = np.linspace(-1, 1, ctx.slots)
    for key in (keys, sk):
        ct = ctx.encrypt(x, key)
        assert recovered_fraction(ctx, ct, ctx.decrypt(ct, sk, complex=True), sk) < 0.01


def test_flooding_resists_and_reports_what_it_costs():
    # Flooding needs scale for its noise: a 50-bit scale at N = 2^13 (170 bits of QP, 128-bit secure).
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 50], scale_bits=50, special_bits=[60])
    sk, keys = ctx.keygen()
    x = np.random.default_rng(7).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys) * ctx.encrypt(x, keys)
    exact_error = np.max(np.abs(_exact(ctx, ct, sk) - x * x))
    released = ctx.decrypt(ct, sk, complex=True, noise_flooding=40)
    assert recovered_fraction(ctx, ct, released, sk) < 0.01
    error = np.max(np.abs(released.real - x * x))
    assert exact_error < 2.0**-30 and 2.0**-12 < error < 2.0**-4, (exact_error, error)


def test_flooding_that_leaves_no_precision_is_refused(n13):
    ctx, sk, _, ct, _ = n13
    with pytest.raises(ValueError, match="leaves no precision.*need a scale above"):
        ctx.decrypt(ct, sk, noise_flooding=True)


def _exact(ctx, ct, sk):
    with pytest.warns(RuntimeWarning):
        return ctx.decrypt(ct, sk, insecure_exact=True)


def test_decrypt_options_are_checked(n13):
    ctx, sk, _, ct, _ = n13
    ctx.decrypt(ct, sk, noise_flooding=np.int64(20))  # any real number of bits
    with pytest.raises(ValueError, match="8 to 128 bits of statistical security, got 0"):
        ctx.decrypt(ct, sk, noise_flooding=0)
    with pytest.raises(ValueError, match="not both"):
        ctx.decrypt(ct, sk, noise_flooding=0, insecure_exact=True)
    with pytest.raises(ValueError, match="decryptions must be at least 1, got 0"):
        ctx.decrypt(ct, sk, noise_flooding=20, decryptions=0)
    with pytest.raises(TypeError, match="a number of bits"):
        ctx.decrypt(ct, sk, noise_flooding="high")
