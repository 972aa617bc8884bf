"""BGV and BFV: exact equality with NumPy integer arithmetic mod t for every
operation (random inputs), the slot layout against direct polynomial
evaluation, rotations and row swaps against np.roll, depth-exhausting chains
for the presets, the noise budget against its estimate, coefficient
encoding, serialization, and clear errors."""

import numpy as np
import pytest

import ringfire as rf

RNG = np.random.default_rng(7)
SCHEMES = [rf.bgv, rf.bfv]


@pytest.fixture(scope="module", params=SCHEMES, ids=["bgv", "bfv"])
def small(request):
    """N = 2^13 with a 20-bit batching t, keys for rotations 1, -3, 5 and the row swap."""
    ctx = request.param.Context(poly_degree=2**13, plain_bits=20)
    sk, keys = ctx.keygen(rotations=[1, -3, 5], swap_rows=True)
    return ctx, sk, keys


def residues(ctx, n=None):
    return RNG.integers(0, ctx.plain_modulus, ctx.slots if n is None else n, dtype=np.int64)


def mod(ctx, x):
    """x mod t as int64 (x may be a big-integer object array)."""
    return (np.asarray(x, dtype=object) % ctx.plain_modulus).astype(np.int64)


def dec(ctx, sk, ct):
    return ctx.decrypt(ct, sk, signed=False)


# ---- encoding ----------------------------------------------------------------------

def test_slots_are_evaluations_at_the_rotation_groups_roots(small):
    """Slot i of row 0 is m(psi^(5^i)) and of row 1 m(psi^(-5^i)), psi the smallest primitive
    2N-th root mod t: checked by evaluating the plaintext polynomial directly (Horner, Python ints)."""
    ctx, _, _ = small
    n, t = ctx.poly_degree, ctx.plain_modulus
    x = residues(ctx)
    coeffs = [int(c) for c in ctx.encode(x).coefficients()]
    psi = rf.ring.primitive_root(t, n)
    assert pow(psi, n, t) == t - 1

    def at(root):
        acc = 0
        for c in reversed(coeffs):
            acc = (acc * root + c) % t
        return acc

    for i in RNG.choice(n // 2, 12, replace=False):
        e = pow(5, int(i), 2 * n)
        assert at(pow(psi, e, t)) == x[i]
        assert at(pow(psi, 2 * n - e, t)) == x[n // 2 + i]


def test_encode_decode_round_trips_pads_and_signs(small):
    ctx, _, _ = small
    t = ctx.plain_modulus
    x = np.array([0, 1, -1, t // 2, -(t // 2), t - 1, 5])
    out = ctx.encode(x).decode()
    assert out.shape == (ctx.slots,)
    assert out[:7].tolist() == [0, 1, -1, t // 2, -(t // 2), -1, 5]
    assert (out[7:] == 0).all()
    assert ctx.encode(x).decode(signed=False)[:3].tolist() == [0, 1, t - 1]
    assert (ctx.encode(9).decode() == 9).all()  # a scalar fills every slot


def test_encoding_refuses_what_it_cannot_represent(small):
    ctx, _, _ = small
    t = ctx.plain_modulus
    with pytest.raises(ValueError, match=r"outside \(-t, t\)"):
        ctx.encode([t])
    with pytest.raises(ValueError, match=r"outside \(-t, t\)"):
        ctx.encode(np.array([-t], dtype=np.int64))
    with pytest.raises(TypeError, match="integers"):
        ctx.encode([0.5])
    with pytest.raises(ValueError, match="only"):
        ctx.encode(np.zeros(ctx.slots + 1, dtype=np.int64))
    with pytest.raises(ValueError, match="1-D"):
        ctx.encode(np.zeros((2, 4), dtype=np.int64))
    assert ctx.encode([2**70 % t + 0]).decode(signed=False)[0] == 2**70 % t  # Python ints of any size, in range


# ---- arithmetic against NumPy ------------------------------------------------------------

def test_every_operator_is_exact(small):
    ctx, sk, keys = small
    a, b = residues(ctx), residues(ctx)
    A, B = a.astype(object), b.astype(object)
    x, y = ctx.encrypt(a, keys), ctx.encrypt(b, sk)
    k = int(RNG.integers(-10**6, 10**6))
    assert (dec(ctx, sk, x) == a).all()
    assert (dec(ctx, sk, x + y) == mod(ctx, A + B)).all()
    assert (dec(ctx, sk, x - y) == mod(ctx, A - B)).all()
    assert (dec(ctx, sk, -x) == mod(ctx, -A)).all()
    assert (dec(ctx, sk, x * y) == mod(ctx, A * B)).all()
    assert (dec(ctx, sk, x.square()) == mod(ctx, A * A)).all()
    assert (dec(ctx, sk, x * x) == mod(ctx, A * A)).all()
    assert (dec(ctx, sk, x ** 3) == mod(ctx, A * A * A)).all()
    assert (dec(ctx, sk, x + k) == mod(ctx, A + k)).all()
    assert (dec(ctx, sk, k - x) == mod(ctx, k - A)).all()
    assert (dec(ctx, sk, x * k) == mod(ctx, A * k)).all()
    assert (dec(ctx, sk, x + b) == mod(ctx, A + B)).all()          # NumPy vector
    assert (dec(ctx, sk, b * x) == mod(ctx, A * B)).all()
    pb = ctx.encode(b)
    assert (dec(ctx, sk, x + pb) == mod(ctx, A + B)).all()         # Plaintext
    assert (dec(ctx, sk, x * pb) == mod(ctx, A * B)).all()
    assert (dec(ctx, sk, x - pb) == mod(ctx, A - B)).all()


def test_rotations_and_row_swaps_match_numpy(small):
    ctx, sk, keys = small
    a = residues(ctx)
    rows = a.reshape(2, -1)
    x = ctx.encrypt(a, keys)
    for steps in (1, -3, 5, 7, -2):  # 7 and -2 are composed from keyed steps
        want = np.roll(rows, -steps, axis=1).ravel()
        assert (dec(ctx, sk, x.rotate_rows(steps)) == want).all(), steps
    assert (dec(ctx, sk, x.swap_rows()) == rows[::-1].ravel()).all()
    with pytest.raises(TypeError, match="integer"):
        x.rotate_rows(1.5)


def test_operands_at_different_levels_and_corrections_meet(small):
    ctx, sk, keys = small
    a, b, c = residues(ctx), residues(ctx), residues(ctx)
    A, B, C = (v.astype(object) for v in (a, b, c))
    x, y, z = (ctx.encrypt(v, keys) for v in (a, b, c))
    xy = x * y                       # BGV: level and correction change at the next product
    deep = xy * z                    # one level down (BGV)
    low = x.mod_reduce()             # switched away: another correction
    assert low.level == ctx.max_level - 1
    s = deep + x + low + 5           # three levels/corrections at once
    assert (dec(ctx, sk, s) == mod(ctx, A * B * C + A + A + 5)).all()
    assert (dec(ctx, sk, deep * low) == mod(ctx, A * B * C * A)).all()


def test_explicit_evaluator_operations(small):
    ctx, sk, keys = small
    ev = ctx.evaluator(keys)
    a, b = residues(ctx), residues(ctx)
    A, B = a.astype(object), b.astype(object)
    x, y = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    prod = ev.multiply(x, y)
    assert prod.size == 3
    assert (dec(ctx, sk, prod) == mod(ctx, A * B)).all()  # size 3 decrypts too
    rel = ev.relinearize(prod)
    red = ev.mod_reduce(rel)
    assert red.level == x.level - 1 and red.correction != 1
    assert (dec(ctx, sk, red) == mod(ctx, A * B)).all()
    si = ev.relinearize(ev.multiply_scale_invariant(x, y))
    assert (dec(ctx, sk, si) == mod(ctx, A * B)).all()
    assert (dec(ctx, sk, ev.multiply_plain(x, ctx.encode(b))) == mod(ctx, A * B)).all()
    assert (dec(ctx, sk, ev.add_integer(x, -7)) == mod(ctx, A - 7)).all()
    assert (dec(ctx, sk, ev.multiply_integer(x, 3)) == mod(ctx, A * 3)).all()
    with pytest.raises(ValueError, match="correction mismatch"):
        ev.add(red, ev.mod_switch(x, red.level))
    u, v = ev.match_corrections(red, ev.mod_switch(x, red.level))
    assert u.correction == v.correction
    assert (dec(ctx, sk, ev.add(u, v)) == mod(ctx, A * B + A)).all()
    with pytest.raises(ValueError, match="level mismatch"):
        ev.add(red, x)
    r = x.copy()
    ev.rotate_inplace(r, 1)
    assert (dec(ctx, sk, r) == np.roll(a.reshape(2, -1), -1, axis=1).ravel()).all()
    assert [c.level for c in ev.rotate_many(x, [1, 5])] == [x.level] * 2


# ---- depth and noise ------------------------------------------------------------------

def squaring_depth(ctx, sk, keys):
    """Squarings a fresh ciphertext survives, each checked against NumPy; the
    exact and estimated budgets at every step."""
    a = residues(ctx)
    want = a.astype(object)
    c = ctx.encrypt(a, keys)
    depth, budgets = 0, []
    while True:
        c = c.square()
        want = want * want % ctx.plain_modulus
        try:
            got = dec(ctx, sk, c)
        except ValueError as e:
            assert "overflowed" in str(e)
            return depth, budgets
        assert (got == want.astype(np.int64)).all(), f"wrong result at depth {depth + 1}"
        depth += 1
        budgets.append((ctx.noise_budget(c, sk), c.noise_budget_estimate))


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
@pytest.mark.parametrize("preset,bgv_depth,bfv_depth", [("N12", 1, 1), ("N13", 2, 3), ("N14", 8, 10)])
def test_presets_reach_their_documented_depth(scheme, preset, bgv_depth, bfv_depth):
    """docs/bgv.md lists these depths (squarings of a fresh ciphertext, t of 20 bits)."""
    ctx = scheme.Context.preset(preset)
    sk, keys = ctx.keygen()
    depth, budgets = squaring_depth(ctx, sk, keys)
    assert depth == (bgv_depth if scheme is rf.bgv else bfv_depth)
    for step, (exact, estimate) in enumerate(budgets, 1):
        # The keyless estimate stays within a few bits of the exact budget.
        assert abs(exact - estimate) <= 3.0 + 0.2 * step, (step, exact, estimate)


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
@pytest.mark.parametrize("log_n,depth", [(13, 2), (14, 5)])
def test_depth_sizes_a_chain_that_reaches_it(scheme, log_n, depth):
    """Context(depth=d): d squarings decrypt exactly, d + 1 do not (the chain is the smallest)."""
    ctx = scheme.Context(poly_degree=2**log_n, plain_bits=20, depth=depth)
    if scheme is rf.bfv:
        assert all(p.bit_length() > 45 for p in ctx.params.q_primes)  # budget in as few primes as possible
    sk, keys = ctx.keygen()
    reached, budgets = squaring_depth(ctx, sk, keys)
    assert reached == depth, ctx.describe()
    assert budgets[-1][0] >= 2.0
    with pytest.raises(ValueError, match="not both"):
        scheme.Context(poly_degree=2**log_n, depth=depth, coeff_bits=[60, 40, 60])
    with pytest.raises(ValueError, match="depth must be"):
        scheme.Context(poly_degree=2**log_n, depth=0)


def test_fresh_noise_budget_and_overflow_message(small):
    ctx, sk, keys = small
    x = ctx.encrypt(residues(ctx), keys)
    exact = ctx.noise_budget(x, sk)
    assert exact > 50 and abs(exact - x.noise_budget_estimate) < 3
    assert exact == pytest.approx(x.noise_budget(sk))
    c = x
    with pytest.raises(ValueError, match=r"noise has overflowed: .* bits of noise budget left"):
        for _ in range(10):
            c = c * c
            ctx.decrypt(c, sk)


# ---- coefficient encoding ----------------------------------------------------------------

@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
def test_coefficient_encoding_with_a_power_of_two_modulus(scheme):
    """t = 2^16 cannot batch: polynomials mod (X^N + 1, t), checked against a NumPy negacyclic product."""
    ctx = scheme.Context(poly_degree=2**12, plain_modulus=2**16)
    assert not ctx.can_batch
    sk, keys = ctx.keygen()
    n = ctx.poly_degree
    a, b = RNG.integers(0, 2**16, n), RNG.integers(0, 2**16, 8)
    x = ctx.encrypt(ctx.encode_coefficients(a), keys)
    assert (ctx.decrypt_coefficients(x, sk, signed=False) == a).all()
    prod = x * ctx.encode_coefficients(b)
    full = np.convolve(a.astype(object), b.astype(object))
    want = full[:n].copy()
    want[:len(full) - n] -= full[n:]
    assert (ctx.decrypt_coefficients(prod, sk, signed=False) == mod(ctx, want)).all()
    with pytest.raises(ValueError, match="cannot batch"):
        ctx.encode([1, 2, 3])


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
def test_a_vector_means_slots_or_is_refused(scheme):
    """The same user code under a batching t and under one that cannot batch: slot-wise
    squares, or a clear refusal that names encode_coefficients (it used to square the
    coefficient vector as a polynomial: [0 0 1 4 10 20 35 ...] for arange(10))."""
    x = np.arange(10)
    for t in (None, 65536):
        ctx = scheme.Context(poly_degree=2**13, plain_modulus=t) if t else scheme.Context(poly_degree=2**13)
        sk, keys = ctx.keygen()
        if ctx.can_batch:
            ct = ctx.encrypt(x, keys)
            assert list(ctx.decrypt(ct * ct, sk)) == list(x * x)
            continue
        with pytest.raises(ValueError, match=r"cannot batch.*encode_coefficients.*decrypt_coefficients"):
            ctx.encrypt(x, keys)
        ct = ctx.encrypt(ctx.encode_coefficients(x), keys)
        with pytest.raises(ValueError, match=r"cannot batch.*decrypt_coefficients"):
            ctx.decrypt(ct, sk)
        with pytest.raises(ValueError, match=r"cannot batch"):
            ct + x  # a vector operand means slots too
        assert list(ctx.decrypt_coefficients(ct * 3, sk)[:10]) == list(3 * x)


def test_plain_modulus_choice_and_refusals():
    ctx = rf.bgv.Context(poly_degree=2**13, plain_bits=30)
    t = ctx.plain_modulus
    assert t.bit_length() == 30 and t % (2 * 2**13) == 1 and ctx.can_batch
    assert f"t={t}" in ctx.describe()
    with pytest.raises(ValueError, match="plain_bits must be in"):
        rf.bgv.Context(poly_degree=2**13, plain_bits=10)
    with pytest.raises(ValueError, match="not both"):
        rf.bfv.Context(poly_degree=2**13, plain_modulus=65537, plain_bits=20)
    with pytest.raises(ValueError, match="shares the factor"):
        q0 = rf.bgv.Context(poly_degree=2**13).params.q_primes[0]
        rf.bgv.Context(poly_degree=2**13, plain_modulus=q0 * 3)
    with pytest.raises(ValueError, match="allows log2"):
        rf.bfv.Context(poly_degree=2**13, coeff_bits=[60] * 4, special_bits=[60])
    with pytest.raises(TypeError, match="security"):
        rf.bfv.Context(poly_degree=2**13, security=True)
    with pytest.raises(ValueError, match="no default modulus chain"):
        rf.bgv.Context(poly_degree=2**11)


# ---- keys, serialization, contexts ----------------------------------------------------------

def test_objects_serialize_and_refuse_other_parameters(small):
    ctx, sk, keys = small
    a = residues(ctx)
    x = (ctx.encrypt(a, keys) * 3).mod_reduce()
    back = ctx.load(x.to_bytes())
    assert back.correction == x.correction and back.level == x.level
    assert (dec(ctx, sk, back) == mod(ctx, a.astype(object) * 3)).all()
    assert (ctx.load(ctx.encode(a).to_bytes()).decode(signed=False) == a).all()
    ctx2 = type(ctx).from_bytes(ctx.to_bytes())
    assert ctx2.fingerprint == ctx.fingerprint and ctx2.plain_modulus == ctx.plain_modulus
    other = type(ctx)(poly_degree=2**13, plain_bits=21)
    with pytest.raises(ValueError, match="different parameters"):
        other.load(x.to_bytes())
    with pytest.raises(ValueError, match="different contexts"):
        x + other.encrypt([1], other.keygen()[1])
    sk2 = ctx.load(sk.to_bytes(password="pw"), password="pw")
    assert (dec(ctx, sk2, x) == mod(ctx, a.astype(object) * 3)).all()


def test_bgv_and_bfv_parameters_are_not_interchangeable():
    bgv = rf.bgv.Context(poly_degree=2**13)
    bfv = rf.bfv.Context(poly_degree=2**13)
    assert bgv.fingerprint != bfv.fingerprint
    with pytest.raises(ValueError, match="BGV parameters"):
        rf.bfv.Context.from_bytes(bgv.to_bytes())
    with pytest.raises(ValueError, match="CKKS parameters"):
        rf.bgv.Context.from_bytes(rf.ckks.Context.preset("N13_D2").to_bytes())


def test_decrypt_refuses_wrong_inputs(small):
    ctx, sk, keys = small
    x = ctx.encrypt([1, 2, 3], keys)
    with pytest.raises(TypeError, match="SecretKey"):
        ctx.decrypt(x, keys.public)
    with pytest.raises(TypeError, match="Ciphertext"):
        ctx.decrypt(ctx.encode([1]), sk)
    other_sk, _ = type(ctx)(poly_degree=2**13, plain_bits=21).keygen()
    with pytest.raises(ValueError, match="different parameters"):
        ctx.decrypt(x, other_sk)


def test_gpu_results_are_bit_identical_to_the_cpu(small, device):
    ctx, sk, keys = small
    a, b = residues(ctx), residues(ctx)
    x, y = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    cpu = ((x * y + x).rotate_rows(1) * 3).swap_rows()
    on = ((x.to(device) * y.to(device) + x.to(device)).rotate_rows(1) * 3).swap_rows()
    assert on.to("cpu")._host().polys().tobytes() == cpu._host().polys().tobytes()


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
@pytest.mark.parametrize("preset,bgv_depth,bfv_depth", [("N15", 17, 20), ("N16", 36, 41)])
def test_large_presets_are_exact_and_reach_their_depth(scheme, preset, bgv_depth, bfv_depth):
    """pytest -m slow: N = 2^15 and 2^16, every operator against NumPy and the documented depths."""
    ctx = scheme.Context.preset(preset)
    sk, keys = ctx.keygen(rotations=[1], swap_rows=True)
    a, b = residues(ctx), residues(ctx)
    A, B = a.astype(object), b.astype(object)
    x, y = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    assert (dec(ctx, sk, x * y + x - 3) == mod(ctx, A * B + A - 3)).all()
    assert (dec(ctx, sk, (x * b).rotate_rows(1)) == np.roll(mod(ctx, A * B).reshape(2, -1), -1, axis=1).ravel()).all()
    assert (dec(ctx, sk, x.swap_rows()) == a.reshape(2, -1)[::-1].ravel()).all()
    depth, _ = squaring_depth(ctx, sk, keys)
    assert depth == (bgv_depth if scheme is rf.bgv else bfv_depth)


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
def test_a_deep_chain_drops_to_any_level_in_one_rounding(scheme):
    """mod_reduce(level) divides by all the dropped primes at once: the product's values
    against Python's integers at every target, with the budget of the one-by-one way or more."""
    ctx = scheme.Context(2**14, plain_modulus=65537, coeff_bits=[50] + [40] * 6, special_bits=[50])
    sk, keys = ctx.keygen()
    a, b = residues(ctx), residues(ctx)
    x = ctx.encrypt(a, keys) * ctx.encrypt(b, keys)
    expected = mod(ctx, a.astype(object) * b.astype(object))
    for level in (x.level - 1, 2, 0):
        at_once = x.mod_reduce(level)
        assert at_once.level == level and (dec(ctx, sk, at_once) == expected).all()
        one_by_one = x
        while one_by_one.level > level:
            one_by_one = one_by_one.mod_reduce()
        assert at_once.correction == one_by_one.correction
        assert at_once.noise_budget(sk) >= one_by_one.noise_budget(sk) - 0.5
        assert abs(at_once.noise_budget_estimate - one_by_one.noise_budget_estimate) < 0.5


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bgv", "bfv"])
def test_the_budget_estimate_of_an_unrelinearized_product_divided_down_is_not_optimistic(scheme):
    """A size-3 ciphertext's division rounds r2 s^2 too (N^2/27 more variance than r0 + r1 s):
    its estimate stays at or below the measured budget (it was about 7 bits above)."""
    ctx = scheme.Context(2**13, plain_bits=20)
    sk, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    x = ctx.encrypt(residues(ctx), keys)
    reduced = ev.mod_reduce(ev.multiply(x, x))
    assert reduced.size == 3
    assert reduced.noise_budget_estimate <= reduced.noise_budget(sk) + 1.0
