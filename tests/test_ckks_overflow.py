"""Values that outgrow their level are never decrypted silently: past ctx.max_value(level)
(Q_level / (2 scale)) the coefficients wrap around the modulus, and either decryption
refuses the result or the operation that overflowed warned (magnitude bounds,
ringfire.ckks.magnitude). Within it, results decrypt to the usual precision with no
warning, in the library's own circuits too."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ringfire as rf

SEED = bytes(range(32))
OUTGREW = r".*may (outgrow|have outgrown)"


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def run(make_result, ctx, sk):
    """(decrypted or None when refused, the overflow warnings seen)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out = ctx.decrypt(make_result(), sk)
        except ValueError as e:
            assert "outgrew" in str(e), str(e)  # the wrap check, or the noise check it garbles
            out = None
    return out, [w for w in seen if "outgrow" in str(w.message)]


@pytest.fixture(scope="module", params=[13, 14, 15, 16], ids=lambda n: f"N=2^{n}")
def chain(request):
    # N = 2^13 holds 218 bits at 128-bit security: two levels of 40 bits there, three above.
    levels = 2 if request.param == 13 else 3
    ctx = rf.ckks.Context(poly_degree=2**request.param, coeff_bits=[60] + [40] * levels, special_bits=[60],
                          scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1, 5])
    return ctx, sk, keys


def circuits(ctx, keys, v):
    """Ways of reaching level 0 with slots of magnitude v, from data of magnitude at most v."""
    slots = ctx.slots
    signs = np.random.default_rng(0).choice([-1.0, 1.0], slots)
    ev = ctx.evaluator(keys)

    def squares():  # (x * x) / v per level: magnitude v throughout (issue table)
        ct = ctx.encrypt(v * signs, keys)
        while ct.level > 0:
            ct = ct * ct * (1.0 / v) if ct.level >= 2 else ct * 1.0
        return ct

    def many_terms():  # 64 terms of v / 64 added at level 0
        term = ev.mod_switch(ctx.encrypt(np.full(slots, v / 64), keys), 0)
        total = term
        for _ in range(63):
            total = total + term
        return total

    def rotated():  # a rotation of a level-0 vector of v, plus itself
        x = ev.mod_switch(ctx.encrypt(np.full(slots, v / 2), keys), 0)
        return x + x.rotate(5)

    def large_constant():  # data of magnitude 1 times the constant v, landing at level 0
        return ev.mod_switch(ctx.encrypt(np.ones(slots), keys), 1) * v

    return {"squares": (squares, v), "many_terms": (many_terms, v), "rotated": (rotated, v),
            "large_constant": (large_constant, v)}


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_values_within_the_level_decrypt_without_alarm(chain, fraction):
    ctx, sk, keys = chain
    v = fraction * ctx.max_value(0)
    for name, (make, want) in circuits(ctx, keys, v).items():
        out, warned = run(make, ctx, sk)
        assert out is not None, f"{name} at {fraction} of max_value was refused"
        assert not warned, (name, [str(w.message) for w in warned])
        assert np.max(np.abs(out - want)) <= 2.0**-18 * v, name


@pytest.mark.parametrize("factor", [1.15, 1.9, 3.0, 10.0, 1000.0])
def test_values_beyond_the_level_raise_or_warn(chain, factor):
    ctx, sk, keys = chain
    v = factor * ctx.max_value(0)
    for name, (make, want) in circuits(ctx, keys, v).items():
        out, warned = run(make, ctx, sk)
        silent_and_wrong = out is not None and not warned and np.max(np.abs(out - want)) > 1e-3 * v
        assert not silent_and_wrong, f"{name} at {factor} x max_value decrypted wrong without a word"
        if factor == 1.15:  # just past the wrap point: the coefficients show it
            assert out is None, name


def test_a_loaded_ciphertext_without_a_bound_is_still_checked(chain):
    ctx, sk, keys = chain
    ct = circuits(ctx, keys, 1.2 * ctx.max_value(0))["squares"][0]()
    loaded = ctx.load(ct.to_bytes())
    assert loaded.bound is None
    with pytest.raises(ValueError, match=r"outgrew level 0.*max_value\(0\)"):
        ctx.decrypt(loaded, sk)


def test_max_value_and_describe(chain):
    ctx = chain[0]
    q0 = ctx.params.q_primes[0]
    assert ctx.max_value(0) == pytest.approx(q0 / 2 / ctx.scale_at(0))
    assert ctx.max_value(1) > 2.0**50
    assert f"max |x| at level 0: {ctx.max_value(0):.4g}" in ctx.describe()
    with pytest.raises(ValueError, match="level must be"):
        ctx.max_value(ctx.max_level + 1)


def test_the_operation_that_overflowed_is_named_once():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40], special_bits=[60], scale_bits=40)
    keys = ctx.keygen()[1]
    x = ctx.evaluator().mod_switch(ctx.encrypt(np.ones(ctx.slots), keys), 1)
    with pytest.warns(RuntimeWarning, match=r"\[ckks.multiply_scalar\] the result may outgrow level 0") as seen:
        for _ in range(3):
            x * (2 * ctx.max_value(0))
    assert sum("multiply_scalar" in str(w.message) for w in seen) == 1


@pytest.fixture(scope="module")
def small():
    ctx = quiet(lambda: rf.ckks.Context(poly_degree=2**12, coeff_bits=[60, 40, 40], special_bits=[60],
                                        scale_bits=40, insecure_no_security_check=True,
                                        insecure_deterministic_seed=SEED))
    sk, keys = ctx.keygen(rotations=[1])
    return ctx, sk, keys


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.data())
def test_random_circuits_are_never_silently_wrong(small, data):
    """Random data magnitudes, random operations down to level 0: each result is within
    precision, refused, or announced by a warning."""
    ctx, sk, keys = small
    ev = ctx.evaluator(keys)
    magnitude = 10.0 ** data.draw(st.floats(-2, 7))
    x = np.random.default_rng(data.draw(st.integers(0, 2**16))).uniform(-1, 1, ctx.slots) * magnitude
    if data.draw(st.booleans()):
        x = np.abs(x) + magnitude  # a large mean: the silent kind of wrap
    ct, want = ctx.encrypt(x, keys), x.copy()
    while ct.level > 0:
        step = data.draw(st.sampled_from(["square", "constant", "add", "rotate", "drop"]))
        if step == "square":
            ct, want = ct * ct, want * want
        elif step == "constant":
            c = 10.0 ** data.draw(st.floats(-3, 4))
            ct, want = ct * c, want * c
        elif step == "add":
            ct, want = ct + ct, 2 * want
        elif step == "rotate":
            ct, want = ct.rotate(1), np.roll(want, -1)
        else:
            ct = ev.mod_switch(ct, ct.level - 1)
    out, warned = run(lambda: ct, ctx, sk)
    if out is None or warned:
        return
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.max(np.abs(out - want)) <= 2.0**-10 * scale, (magnitude, float(np.max(np.abs(want))))


def test_the_library_s_own_circuits_do_not_warn():
    """Bootstrapping, a bootstrapped network and logistic-regression training, inputs in range."""
    from ringfire.apps import logreg
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", message=OUTGREW)
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE", insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True)
        x = np.random.default_rng(1).uniform(-1, 1, ctx.slots)
        ct = ctx.evaluator().mod_switch(ctx.encrypt(x, keys), 0)
        assert np.max(np.abs(ctx.decrypt(ct.bootstrap(), sk) - x)) < 1e-4
        assert np.max(np.abs(ctx.decrypt(ct.bootstrap(iterations=2), sk) - x)) < 1e-4

        from nn_models import mlp_bytes
        deep = quiet(lambda: logreg.context("toy"))  # six user levels on the toy bootstrapping ring
        rng = np.random.default_rng(3)
        model = rf.nn.load(mlp_bytes(), deep, activation="poly", calibration=rng.uniform(-1, 1, (64, 16)))
        dsk, dkeys = deep.keygen(bootstrap=True)
        assert model.bootstrap
        model(deep.encrypt_batch(rng.uniform(-1, 1, (4, 16)), dkeys))
        assert model.last_run["bootstraps"] > 0

        trainer = logreg.EncryptedTrainer(logreg.context("toy"), 8)
        trainer.keygen()
        rng = np.random.default_rng(2)
        features, labels = rng.uniform(-1, 1, (64, 8)), rng.choice([-1.0, 1.0], 64)
        trainer.fit(features, labels, 3)
