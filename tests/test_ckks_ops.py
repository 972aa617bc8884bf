"""CKKS operations: precision in bits against NumPy for every operation,
rotations for every keyed step, conjugation, complex inputs, public- vs
secret-key encryption, a depth-exhausting chain, and clear errors."""

import numpy as np
import pytest
from conftest import precision_bits

import ringfire as rf

RNG = np.random.default_rng(1)


def vec(ctx, complex_=False):
    x = RNG.uniform(-1, 1, ctx.slots)
    return x + 1j * RNG.uniform(-1, 1, ctx.slots) if complex_ else x


# ---- encoding ----------------------------------------------------------------------

def test_encoder_matches_the_canonical_embedding(ckks_small):
    """Slot j is m(zeta^(5^j)) / scale with zeta = exp(i pi / N): checked by direct evaluation."""
    ctx, _, _ = ckks_small
    z = vec(ctx, True)
    coeffs = np.array(ctx._core.slots_to_coefficients(z.astype(complex)))
    n = ctx.poly_degree
    roots = np.exp(1j * np.pi * (pow(5, np.arange(ctx.slots), 2 * n) if False else
                                 np.array([pow(5, j, 2 * n) for j in range(ctx.slots)])) / n)
    sample = RNG.choice(ctx.slots, 64, replace=False)
    direct = np.array([np.polyval(coeffs[::-1], roots[j]) for j in sample])
    assert precision_bits(direct, z[sample]) > 35
    assert precision_bits(np.asarray(ctx._core.coefficients_to_slots(coeffs)), z) > 40


def test_encode_decode_round_trip_pads_and_handles_complex(ckks_small):
    ctx, _, _ = ckks_small
    z = vec(ctx, True)[:100]
    out = ctx.encode(z).decode()
    assert out.shape == (ctx.slots,)
    assert precision_bits(out[:100], z) > 28
    assert np.max(np.abs(out[100:])) < 2**-28


def test_all_equal_real_values_become_a_scalar_plaintext(ckks_small):
    ctx, _, _ = ckks_small
    assert ctx.encode(np.full(ctx.slots, 0.25)).is_scalar
    assert ctx.encode(0.25).is_scalar
    assert not ctx.encode(np.full(ctx.slots, 0.25 + 1j)).is_scalar
    assert precision_bits(ctx.encode(-3.5).decode(), -3.5) > 30


def test_encode_refuses_overflow_and_bad_input(ckks_small):
    ctx, _, _ = ckks_small
    with pytest.raises(ValueError, match="does not fit"):
        ctx.encode(np.full(10, 2.0**100))
    with pytest.raises(ValueError, match="finite"):
        ctx.encode([1.0, np.nan])
    with pytest.raises(ValueError, match="slots"):
        ctx.encode(np.zeros(ctx.slots + 1))


# ---- encryption -------------------------------------------------------------------

def test_public_and_secret_key_encryption(ckks_small):
    ctx, sk, keys = ckks_small
    x = vec(ctx)
    pub, sym = ctx.encrypt(x, keys), ctx.encrypt(x, sk)
    assert precision_bits(ctx.decrypt(pub, sk), x) > 20
    assert precision_bits(ctx.decrypt(sym, sk), x) > 25  # no u*e term
    assert sym._native.seeded and not pub._native.seeded
    assert len(sym.to_bytes()) < 0.55 * len(pub.to_bytes())


def test_decrypt_with_the_wrong_key_gives_noise(ckks_small):
    ctx, sk, keys = ckks_small
    x = vec(ctx)
    ct = ctx.encrypt(x, keys)
    assert precision_bits(ctx.decrypt(ct, ctx.load(sk.to_bytes())), x) > 20
    stranger, _ = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40,
                                  special_bits=[60]).keygen()
    # Same parameters, other key: the result is noise, and decrypt says so instead of returning it.
    with pytest.raises(ValueError, match="exceeds its scale"):
        ctx.decrypt(ct, stranger)
    with pytest.warns(RuntimeWarning, match="insecure_exact"):
        assert precision_bits(ctx.decrypt(ct, stranger, insecure_exact=True), x) < 0
    other, _ = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40], scale_bits=40,
                               special_bits=[60]).keygen()
    with pytest.raises(ValueError, match="different parameters"):
        ctx.decrypt(ct, other)


# ---- explicit evaluator -----------------------------------------------------------

def test_every_explicit_operation_keeps_precision(ckks_small):
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    x, y = vec(ctx), vec(ctx)
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    dec = lambda c: ctx.decrypt(c, sk)
    L = ctx.max_level
    checks = {
        "add": (ev.add(a, b), x + y),
        "sub": (ev.sub(a, b), x - y),
        "negate": (ev.negate(a), -x),
        "add_plain": (ev.add_plain(a, ctx.encode(y)), x + y),
        "sub_plain": (ev.sub_plain(a, ctx.encode(y)), x - y),
        "add_scalar": (ev.add_scalar(a, 0.75), x + 0.75),
        "multiply_integer": (ev.multiply_integer(a, -7), -7 * x),
        "mul_relin_rescale": (ev.rescale(ev.relinearize(ev.multiply(a, b))), x * y),
        "square_relin_rescale": (ev.rescale(ev.relinearize(ev.square(a))), x * x),
        "multiply_plain": (ev.rescale(ev.multiply_plain(a, ctx.encode(y, scale=ctx.params.q_primes[L]))), x * y),
        "multiply_scalar": (ev.rescale(ev.multiply_scalar(a, -0.3)), -0.3 * x),
        "multiply_scalar_plain": (ev.rescale(ev.multiply_plain(a, ctx.encode(0.3, scale=2.0**40))), 0.3 * x),
        "mod_switch": (ev.mod_switch(a), x),
        "rotate": (ev.rotate(a, 1), np.roll(x, -1)),
    }
    bits = {name: precision_bits(dec(c), ref) for name, (c, ref) in checks.items()}
    assert min(bits.values()) > 18, bits
    # size-3 ciphertexts decrypt too (s^2 term)
    assert precision_bits(dec(ev.multiply(a, b)), x * y) > 18


def test_a_dense_layers_outputs_side_by_side_are_the_words_of_one_at_a_time(ckks_small):
    """linear_combinations (each input read once for several outputs) gives, word for word,
    the ciphertexts of one linear_combination per output, and W x against NumPy; any count of
    outputs (the AVX-512 kernel takes four at a time), zero weights included."""
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    xs = [vec(ctx) for _ in range(11)]
    cts = [ev.add(c, c) for c in (ctx.encrypt(x, keys) for x in xs)]  # computed, not fresh
    scale = ctx.params.q_primes[ctx.max_level]
    for outputs in (1, 2, 4, 5, 9):
        w = RNG.uniform(-1, 1, (outputs, len(xs)))
        w[:, 3] = 0.0
        sums = ev.linear_combinations(cts, w, scale)
        assert len(sums) == outputs
        for row, got in zip(w, sums):
            one = ev.linear_combination(cts, row, scale)
            assert got.to_bytes() == one.to_bytes()
            assert precision_bits(ctx.decrypt(ev.rescale(got), sk), 2 * (row @ np.array(xs))) > 18
    with pytest.raises(ValueError, match="11 inputs but 10 weights"):
        ev.linear_combinations(cts, np.ones((2, 10)), scale)
    with pytest.raises(ValueError, match="at least one"):
        ev.linear_combinations(cts, [], scale)


def test_in_place_forms_update_the_operand(ckks_small):
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    x = vec(ctx)
    a = ctx.encrypt(x, keys)
    ev.square_inplace(a)
    ev.relinearize_inplace(a)
    ev.rescale_inplace(a)
    ev.add_scalar_inplace(a, 1.0)
    ev.rotate_inplace(a, 2)
    assert a.level == ctx.max_level - 1 and a.size == 2
    assert precision_bits(ctx.decrypt(a, sk), np.roll(x * x + 1, -2)) > 18


@pytest.mark.parametrize("steps", [1, 2, -1, 3, -2, 5, 4095, -4095])
def test_rotations_direct_and_composed(ckks_small, steps):
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    x = vec(ctx, True)
    out = ev.rotate(ctx.encrypt(x, keys), steps)
    assert precision_bits(ctx.decrypt(out, sk), np.roll(x, -steps)) > 18
    plan = ev.rotation_plan(steps)
    assert sum(plan) % ctx.slots == steps % ctx.slots
    if steps in (1, 2, -1):
        assert len(plan) == 1


def test_hoisted_rotations_match_single_rotations(ckks_small):
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    x = vec(ctx, True)
    ct = ctx.encrypt(x, keys)
    outs = ev.rotate_many(ct, [1, 2, -1, 0])
    for step, out in zip([1, 2, -1, 0], outs):
        assert precision_bits(ctx.decrypt(out, sk), np.roll(x, -step)) > 18
    with pytest.raises(ValueError, match="hoisted rotations need a key per step"):
        ev.rotate_many(ct, [3])


def test_conjugation(ckks_small):
    ctx, sk, keys = ckks_small
    z = vec(ctx, True)
    out = ctx.encrypt(z, keys).conjugate()
    assert precision_bits(ctx.decrypt(out, sk), np.conj(z)) > 18


def test_missing_rotation_key_is_a_clear_error():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[4])
    ct = ctx.encrypt(np.ones(4), keys)
    with pytest.raises(ValueError, match="no Galois keys reach a rotation by 1"):
        ct.rotate(1)
    with pytest.raises(ValueError, match="no Galois key for element"):
        ct.conjugate()
    _, bare = ctx.keygen()
    with pytest.raises(ValueError, match="needs Galois keys"):
        ctx.encrypt(np.ones(4), bare).rotate(1)


# ---- operators and alignment ------------------------------------------------------

def test_user_view_contract():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1, -1])
    x = np.random.default_rng(2).random(ctx.slots)
    ct = ctx.encrypt(x, keys)
    y = (ct * ct + 0.5).rotate(1)
    out = ctx.decrypt(y, sk)
    assert out.dtype == np.float64 and out.shape == (ctx.slots,)
    assert precision_bits(out, np.roll(x * x + 0.5, -1)) > 18


def test_operators_align_levels_and_scales(ckks_small):
    ctx, sk, keys = ckks_small
    x, y = vec(ctx), vec(ctx)
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    prod = a * b                      # level L-1
    mixed = prod + a                  # a is brought down to L-1
    assert mixed.level == ctx.max_level - 1
    assert precision_bits(ctx.decrypt(mixed, sk), x * y + x) > 18
    deeper = prod * a                 # a brought down, then multiplied
    assert deeper.level == ctx.max_level - 2
    assert precision_bits(ctx.decrypt(deeper, sk), x * y * x) > 17
    expr = 2 * a - 0.5 * b + y - 1.25
    assert precision_bits(ctx.decrypt(expr, sk), 2 * x - 0.5 * y + y - 1.25) > 18
    rsub = 1.0 - a
    assert precision_bits(ctx.decrypt(rsub, sk), 1.0 - x) > 18
    plain = a * ctx.encode(y, scale=ctx.params.q_primes[ctx.max_level])
    assert precision_bits(ctx.decrypt(plain, sk), x * y) > 18


def test_complex_numbers_flow_through_operators(ckks_small):
    ctx, sk, keys = ckks_small
    z, w = vec(ctx, True), vec(ctx, True)
    a, b = ctx.encrypt(z, keys), ctx.encrypt(w, keys)
    out = a * b + (0.5 - 0.25j)
    got = ctx.decrypt(out, sk)
    assert np.iscomplexobj(got)
    assert precision_bits(got, z * w + (0.5 - 0.25j)) > 18
    assert precision_bits(ctx.decrypt(a * 1j, sk), z * 1j) > 18


def test_out_of_levels_is_refused(ckks_small):
    ctx, sk, keys = ckks_small
    ct = ctx.encrypt(np.ones(8), keys)
    for _ in range(ctx.max_level):
        ct = ct * ct
    assert ct.level == 0
    with pytest.raises(ValueError, match="out of levels"):
        ct * ct
    with pytest.raises(ValueError, match="out of levels"):
        ct * 0.5
    ev = ctx.evaluator(keys)
    with pytest.raises(ValueError, match="level 0"):
        ev.rescale(ct)
    with pytest.raises(ValueError, match="does not fit"):
        ev.multiply(ct, ct)


def test_explicit_mismatches_raise_clear_errors(ckks_small):
    ctx, sk, keys = ckks_small
    ev = ctx.evaluator(keys)
    a = ctx.encrypt(np.ones(4), keys)
    low = ev.mod_switch(a)
    with pytest.raises(ValueError, match=r"\[ckks.add\] level mismatch: 2 vs 1"):
        ev.add(a, low)
    scaled = ev.multiply_scalar(a, 1.0, 2.0**20)
    with pytest.raises(ValueError, match=r"\[ckks.add\] scale mismatch"):
        ev.add(a, scaled)
    size3 = ev.multiply(a, a)
    with pytest.raises(ValueError, match="size-2"):
        ev.multiply(size3, a)
    with pytest.raises(ValueError, match="size-3"):
        ev.relinearize(a)
    with pytest.raises(ValueError, match="size-2"):
        ev.rotate(size3, 1)
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=35, special_bits=[60])
    _, okeys = other.keygen()
    foreign = other.encrypt(np.ones(4), okeys)
    with pytest.raises(ValueError, match="different context"):
        a + foreign
    with pytest.raises(ValueError, match="different context"):
        ev.add(a, foreign)
    with pytest.raises(ValueError, match="cannot raise"):
        ev.mod_switch(low, 2)


# ---- depth and sizes ---------------------------------------------------------------

@pytest.mark.parametrize("log_n, depth", [(13, 3), (14, 5), (15, 6), (16, 6)])
def test_depth_exhausting_chain_precision(log_n, depth):
    """x^(2^depth) by repeated squaring down to level 0, plus one rotation (squaring doubles the
    relative error per level, so the bound is loose; benchmarks/ckks_precision.py reports the chain
    of fresh products)."""
    ctx = rf.ckks.Context(poly_degree=2**log_n, coeff_bits=[60] + [40] * depth, scale_bits=40,
                          special_bits=[60], insecure_no_security_check=60 + 40 * depth + 60 > _bound(log_n))
    sk, keys = ctx.keygen(rotations=[1])
    x = np.random.default_rng(log_n).uniform(0.9, 1.0, ctx.slots)  # stays O(1) under powers
    ct = ctx.encrypt(x, keys)
    ref = x.copy()
    for _ in range(depth):
        ct, ref = ct * ct, ref * ref
    assert ct.level == 0
    out = ctx.decrypt(ct.rotate(1), sk)
    bits = precision_bits(out, np.roll(ref, -1))
    assert bits > 14, bits


def _bound(log_n):
    from ringfire import _core
    return _core.max_log_qp(2**log_n, 128)
