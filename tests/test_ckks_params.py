"""CKKS parameters: prime generation, the HE-standard security bound, presets,
fingerprints, and the loud opt-outs."""

import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core


def test_security_bound_is_enforced_with_the_limit_in_the_message():
    with pytest.raises(ValueError, match=r"N=4096 allows log2\(QP\) <= 109 at 128-bit"):
        rf.ckks.Context(poly_degree=4096, coeff_bits=[40, 40, 40], scale_bits=30, special_bits=[40])


@pytest.mark.parametrize("n, bits", [(1024, 27), (2048, 54), (4096, 109), (8192, 218), (16384, 438),
                                     (32768, 881)])
def test_standard_table_128(n, bits):
    assert _core.max_log_qp(n, 128) == bits


def test_stricter_levels_shrink_the_bound():
    for n in (4096, 8192, 16384, 32768, 65536):
        assert _core.max_log_qp(n, 128) > _core.max_log_qp(n, 192) > _core.max_log_qp(n, 256)


def test_192_bit_refuses_what_128_accepts():
    kwargs = dict(poly_degree=8192, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    rf.ckks.Context(**kwargs)  # 190 bits <= 218
    with pytest.raises(ValueError, match="192-bit"):
        rf.ckks.Context(**kwargs, security=192)


def test_opt_out_is_loud():
    with pytest.warns(RuntimeWarning, match="security check is disabled"):
        ctx = rf.ckks.Context(poly_degree=1024, coeff_bits=[40, 30], scale_bits=30, special_bits=[40],
                              insecure_no_security_check=True)
    assert "insecure" in ctx.describe().lower()


def test_last_coeff_entry_sizes_the_special_primes_chosen_for_speed():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 60], scale_bits=40)
    assert ctx.max_level == 2
    assert all(p.bit_length() == 60 for p in ctx.params.p_primes)
    assert "chosen for speed" in ctx.describe()
    # With room under the bound, a long chain gets several special primes and few digits.
    deep = rf.ckks.Context(poly_degree=2**16, coeff_bits=[60] + [40] * 20 + [60], scale_bits=40)
    assert len(deep.params.p_primes) > 1 and deep.params.dnum <= 4
    assert deep.params.log_qp <= rf._core.max_log_qp(2**16, 128)
    # At the bound there is no room: one special prime, and the note says why.
    full = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 7 + [60], scale_bits=40)
    assert len(full.params.p_primes) == 1 and "exceed the security bound" in full.describe()


def test_explicit_special_bits_keep_seals_convention():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40], special_bits=[60], scale_bits=40)
    assert len(ctx.params.p_primes) == 1 and ctx.params.dnum == 3
    assert "chosen for speed" not in ctx.describe()


def test_primes_are_distinct_ntt_friendly_and_sized():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40], scale_bits=40, special_bits=[60, 60])
    q, p = ctx.params.q_primes, ctx.params.p_primes
    assert len(set(q + p)) == len(q) + len(p)
    assert q[0].bit_length() == 60
    # rescaling primes straddle 2^40 so the canonical scale does not drift
    assert all(abs(np.log2(x) - 40) < 1e-3 for x in q[1:])
    for x in q + p:
        assert rf.ring.is_prime(x) and x % (2 * 2**14) == 1


def test_61_bit_primes_are_below_2_61_and_compute_exactly_like_smaller_ones():
    # The arithmetic's limit (q < 2^61), for ciphertext and special primes alike:
    # N16_BOOT's EvalMod and special primes have 61 bits.
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[61, 40, 40], scale_bits=40, special_bits=[61])
    q, p = ctx.params.q_primes, ctx.params.p_primes
    assert q[0].bit_length() == 61 and p[0].bit_length() == 61 and max(q + p) < 2**61
    sk, keys = ctx.keygen(rotations=[3])
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    ev = ctx.evaluator(keys)
    # Relinearization and rotation both switch keys through the 61-bit special prime.
    product = ev.relinearize_rescale(ev.multiply(ctx.encrypt(x, keys), ctx.encrypt(y, keys)))
    got = ctx.decrypt(ev.rotate(product, 3), sk)
    assert np.max(np.abs(got - np.roll(x * y, -3))) < 2**-15


def test_default_dnum_follows_special_primes():
    one = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 6, scale_bits=40, special_bits=[60])
    three = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 6, scale_bits=40, special_bits=[60, 60])
    assert one.params.dnum == 7 and one.params.alpha == 1
    assert three.params.alpha == 2 and three.params.dnum == 4


@pytest.mark.parametrize("kwargs, message", [
    (dict(poly_degree=3000), "power of two"),
    (dict(coeff_bits=[60, 70]), r"\[20, 61\]"),
    (dict(coeff_bits=[60, 62, 60]), r"coeff_bits entries must be in \[20, 61\], got 62"),
    (dict(special_bits=[62]), r"special_bits entries must be in \[20, 61\], got 62"),
    (dict(dnum=9), "dnum must be in"),
    (dict(coeff_bits=[60]), "at least two entries"),
])
def test_bad_parameters_raise(kwargs, message):
    base = dict(poly_degree=2**14, coeff_bits=[60, 40, 60], scale_bits=40)
    with pytest.raises(ValueError, match=message):
        rf.ckks.Context(**{**base, **kwargs})


def test_special_primes_must_cover_the_widest_digit():
    with pytest.raises(ValueError, match=r"special primes \(38 bits\) must cover the widest key-switching digit"):
        rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 40], special_bits=[38], scale_bits=40)
    with pytest.raises(ValueError, match="widest key-switching digit"):
        rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 6, special_bits=[60], scale_bits=40, dnum=2)


def test_presets_are_secure_and_deep():
    for name, spec in rf.ckks.PRESETS.items():
        if spec.get("insecure_no_security_check"):
            assert "INSECURE" in name  # a toy preset says so in its name (and warns)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params = rf.ckks.Context.preset(name).params
        assert params.log_qp <= _core.max_log_qp(spec["poly_degree"], 128), name
        assert params.max_level >= 2


def test_fingerprints_differ_and_round_trip():
    a = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    b = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=30, special_bits=[60])
    assert a.fingerprint != b.fingerprint
    c = rf.ckks.Context.from_bytes(a.to_bytes())
    assert c.fingerprint == a.fingerprint and c.params.q_primes == a.params.q_primes


def test_canonical_scales_stay_near_the_default_over_deep_chains():
    ctx = rf.ckks.Context(poly_degree=2**16, coeff_bits=[60] + [40] * 30, scale_bits=40, special_bits=[60] * 3)
    drift = [abs(np.log2(ctx.scale_at(level)) - 40) for level in range(ctx.max_level + 1)]
    assert max(drift) < 1e-3, drift


def test_canonical_scales_follow_the_rescale_chain():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    q = ctx.params.q_primes
    assert ctx.scale_at(2) == 2.0**40
    assert np.isclose(ctx.scale_at(1), ctx.scale_at(2) ** 2 / q[2], rtol=1e-15)
    assert np.isclose(ctx.scale_at(0), ctx.scale_at(1) ** 2 / q[1], rtol=1e-15)
