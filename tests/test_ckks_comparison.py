"""Comparisons on packed CKKS ciphertexts (ringfire.ckks.comparison): the plan's
composite polynomial against the exact sign on a grid, then sign, compare, max and min
encrypted on the toy bootstrapping ring against NumPy, with the bootstraps they need, and
the refusals on a context too shallow to run them."""

import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire.ckks.comparison import F3, G3, sign_plan, slot_rotations

SEED = bytes(range(32))


COUNT = 4  # two rounds of the tournament; examples/09 runs eight channels (three) in the tests too


@pytest.fixture(scope="module")
def boot():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring is insecure by design and says so
        ctx = rf.ckks.Context(**rf.ckks.PRESETS["N12_BOOT_INSECURE"], insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True, rotations=slot_rotations(COUNT))
    return ctx, sk, keys, ctx.evaluator(keys)


def test_the_two_polynomials_keep_the_sign_and_stay_in_the_unit_interval():
    x = np.linspace(-1, 1, 100001)
    for coeffs in (F3, G3):
        y = np.polynomial.polynomial.polyval(x, coeffs)
        assert np.max(np.abs(y)) <= 1.0
        assert (np.sign(y) == np.sign(x)).all()
    assert np.polynomial.polynomial.polyval(1.0, F3) == 1.0  # f_3's fixed point


@pytest.mark.parametrize("alpha,beta", [(4, 8), (8, 12), (12, 16), (16, 20)])
def test_a_plan_meets_its_resolution_and_error_and_no_shallower_plan_does(alpha, beta):
    plan = sign_plan(alpha, beta)
    rng = np.random.default_rng(alpha)
    x = np.concatenate([rng.uniform(2.0 ** -alpha, 1, 20000), [2.0 ** -alpha, 1.0]])
    x = np.concatenate([x, -x])
    assert np.max(np.abs(plan(x) - np.sign(x))) <= 2.0 ** -beta
    assert plan.depth == 3 * (plan.g_steps + plan.f_steps)
    for g in range(plan.steps):  # every plan one step shorter misses
        shorter = type(plan)(alpha, beta, g, plan.steps - 1 - g)
        assert np.max(np.abs(shorter(x) - np.sign(x))) > 2.0 ** -beta


def test_sign_of_encrypted_slots_matches_numpy(boot):
    ctx, sk, keys, ev = boot
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, ctx.slots)
    x[:4] = [2.0 ** -8, -2.0 ** -8, 1.0, -1.0]  # the resolution's edge and the ends
    s = ev.sign(ctx.encrypt(x, keys))  # 18 levels on a ring of 3: it bootstraps
    got = ctx.decrypt(s, sk).real
    sure = np.abs(x) >= 2.0 ** -8
    assert np.max(np.abs(got[sure] - np.sign(x[sure]))) <= 2.0 ** -12
    assert np.max(np.abs(got)) <= 1 + 1e-5
    # A bound other than 1 scales first: the same answers for 100 x.
    got100 = ctx.decrypt(ev.sign(ctx.encrypt(100 * x, keys), bound=100), sk).real
    assert np.max(np.abs(got100[sure] - np.sign(x[sure]))) <= 2.0 ** -12


def test_compare_max_and_min_match_numpy(boot):
    ctx, sk, keys, ev = boot
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-3, 3, ctx.slots), rng.uniform(-3, 3, ctx.slots)
    b[:3] = a[:3]  # equal slots compare to one half
    a[3:5], b[3:5] = [3.0, -3.0], [-3.0, 3.0]  # the range's limits
    ca, cb = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    resolution = 2 * 3 * 2.0 ** -8
    c = ctx.decrypt(ev.compare(ca, cb, bound=3), sk).real
    sure = np.abs(a - b) >= resolution
    assert np.max(np.abs(c[sure] - (a > b)[sure])) <= 2.0 ** -12
    assert np.allclose(c[:3], 0.5, atol=1e-4)
    hi = ctx.decrypt(ev.max(ca, cb, bound=3), sk).real
    lo = ctx.decrypt(ev.min(ca, cb, bound=3), sk).real
    # Off by at most |a - b| / 2 below the resolution, by |a - b| 2^-12 above it, plus CKKS's error.
    slack = np.where(sure, np.abs(a - b) * 2.0 ** -12, np.abs(a - b) / 2) + 1e-4
    assert (np.abs(hi - np.maximum(a, b)) <= slack).all()
    assert (np.abs(lo - np.minimum(a, b)) <= slack).all()


def test_inputs_at_level_zero_off_the_canonical_scale_are_refreshed_first(boot):
    """Ciphertexts mod-switched down keep their old scale; at level 0 nothing can correct it
    without a level, so the comparison bootstraps them first."""
    ctx, sk, keys, ev = boot
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = (ctx.evaluator().mod_switch(ctx.encrypt(v, keys), 0) for v in (x, y))
    b = ctx.evaluator().mod_switch(ctx.encrypt(y, keys), 1)  # one at level 1, one at level 0
    assert a.level == 0 and a.scale != ctx.scale_at(0)
    got = ctx.decrypt(ev.max(a, b, precision_bits=4, error_bits=8), sk).real
    assert np.max(np.abs(got - np.maximum(x, y))) <= 2.0 ** -4
    c = ctx.decrypt(ev.compare(a, b, precision_bits=4, error_bits=8), sk).real
    sure = np.abs(x - y) >= 2 * 2.0 ** -4
    assert np.max(np.abs(c[sure] - (x > y)[sure])) <= 2.0 ** -8


def test_the_largest_slot_and_its_position(boot):
    ctx, sk, keys, ev = boot
    assert slot_rotations(COUNT) == [1, 2, -1, -2] and slot_rotations(8) == [1, 2, 4, -1, -2, -4]
    rng = np.random.default_rng(3)
    for trial in range(1):
        x = rng.uniform(-2, 2, COUNT)
        x[rng.integers(COUNT)] = 1.9  # a clear winner: the others stay below it by > the ambiguity
        x = np.where(x == 1.9, x, np.minimum(x, 1.9 - 0.5))
        ct = ctx.encrypt(x, keys)
        hot, top = ev.argmax_of_slots(ct, COUNT, bound=2, return_max=True)  # one tournament for both
        top = ctx.decrypt(top, sk).real[0]
        assert abs(top - x.max()) <= 1e-3
        hot = ctx.decrypt(hot, sk).real
        want = np.zeros(COUNT)
        want[np.argmax(x)] = 1.0
        assert hot.shape == (COUNT,)
        assert np.max(np.abs(hot - want)) <= 2.0 ** -12 + 1e-4, (trial, hot[:COUNT].round(4), x)
    # max_of_slots on its own gives the same largest value as the tournament above, within CKKS's error.
    assert abs(ctx.decrypt(ev.max_of_slots(ct, COUNT, bound=2), sk).real[0] - top) <= 1e-6
    with pytest.raises(ValueError, match="power of two"):
        ev.max_of_slots(ct, 6)
    with pytest.raises(ValueError, match="exceeds the context"):
        ev.max_of_slots(ct, 2 * ctx.slots)


def test_a_context_that_cannot_bootstrap_refuses_a_comparison_deeper_than_its_levels():
    ctx = rf.ckks.Context.preset("N14_D6")
    sk, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    x = ctx.encrypt([0.5, -0.25], keys)
    with pytest.raises(ValueError, match="needs 18 levels .* has 6 and the context cannot bootstrap"):
        ev.sign(x)
    # A coarse sign fits: 4 bits of resolution to 2^-2 takes two steps (6 levels).
    plan = sign_plan(2, 2)
    assert plan.depth <= 6
    got = ctx.decrypt(ev.sign(x, precision_bits=2, error_bits=2), sk).real[:2]
    assert np.allclose(got, plan(np.array([0.5, -0.25])), atol=1e-4)


def test_a_bootstrapping_context_too_shallow_for_one_step_is_refused():
    options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    options["coeff_bits"] = [options["coeff_bits"][0]] + list(options["coeff_bits"][2:])  # two user levels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.ckks.Context(**options, insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True)
    assert ctx.max_level == 2 and ctx.can_bootstrap
    with pytest.raises(ValueError, match="each step needs 3 levels; this context bootstraps to level 2 only"):
        ctx.evaluator(keys).sign(ctx.encrypt([0.5], keys))


@pytest.mark.parametrize("kwargs,match", [
    (dict(bound=0), "bound must be a positive number"),
    (dict(bound=True), "bound must be a positive number"),
    (dict(precision_bits=0), "precision_bits must lie in"),
    (dict(error_bits=99), r"error_bits in \[1, 40\]"),
])
def test_bad_arguments_are_named(kwargs, match):
    ctx = rf.ckks.Context.preset("N14_D6")
    _, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    with pytest.raises(ValueError, match=match):
        ev.sign(ctx.encrypt([0.5], keys), **kwargs)
    with pytest.raises(TypeError, match="expected a ckks.Ciphertext, got ndarray"):
        ev.compare(np.array([0.5]), ctx.encrypt([0.5], keys), **kwargs)
