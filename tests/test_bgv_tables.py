"""Tables over Z_t on BGV/BFV slots (ringfire.bgv.SlotTable) and the linear combinations they
rest on, checked against NumPy: the interpolating polynomial at every residue (Horner mod t),
the evaluation on every slot of encrypted random integers, both schemes, the host's block
products against one linear combination per block, and every refusal by its message."""

import gc

import numpy as np
import pytest

import ringfire as rf
from ringfire.bgv.tables import block_sums, fewer_primes, table_coefficients

T = 65537
# A toy chain deep enough for a full table (17 levels) on a ring small enough to run it in a
# second; far outside the security bounds, hence the flag.
CHAIN = [30] + [36] * 18 + [60]
pytestmark = pytest.mark.filterwarnings("ignore:.*insecure")


def horner(coefficients, y, t):
    acc = np.zeros(len(y), dtype=np.int64)
    for c in coefficients[::-1]:
        acc = (acc * y + int(c)) % t
    return acc


@pytest.fixture(scope="module", params=["bgv", "bfv"])
def setup(request):
    ctx = getattr(rf, request.param).Context(1024, plain_modulus=T, coeff_bits=CHAIN, insecure_no_security_check=True,
                                             insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    return ctx, sk, keys


@pytest.mark.parametrize("t", [17, 257])
def test_the_polynomial_takes_every_value_of_the_table(t):
    values = np.random.default_rng(t).integers(0, t, t)
    coefficients = table_coefficients(values, t)
    assert coefficients.shape == (t,)
    assert np.array_equal(horner(coefficients, np.arange(t), t), values)


def test_the_polynomial_mod_65537_at_random_points_and_its_top_coefficient():
    values = np.random.default_rng(3).integers(0, T, T)
    coefficients = table_coefficients(values, T)
    y = np.concatenate([[0, 1, T - 1], np.random.default_rng(4).integers(0, T, 97)])
    assert np.array_equal(horner(coefficients, y, T), values[y])
    assert coefficients[T - 1] == -values.sum() % T       # c_{t-1} = -sum F(y): 0 when the values sum to 0


def test_a_random_table_on_every_slot(setup):
    ctx, sk, keys = setup
    rng = np.random.default_rng(5)
    x = rng.integers(0, T, ctx.slots)
    values = rng.integers(0, T, T)
    table = rf.bgv.SlotTable(ctx, values, signed=False)
    assert (table.degree, table.levels) == (T - 1, 17)
    ct = ctx.encrypt(x, keys)
    out = table(ct)
    assert np.array_equal(ctx.decrypt(out, sk, signed=False), values[x])
    assert ctx.noise_budget(out, sk) > 10
    assert out.level <= ct.level // 2     # BFV's products, too, ran on the primes their noise left
    if ctx.scheme == "bfv":               # BFV keeps the budget asked for, not much more
        assert 100 <= ctx.noise_budget(out, sk) < 100 + 36 + 30
        lean = table(ct, keep_bits=20)
        assert np.array_equal(ctx.decrypt(lean, sk, signed=False), values[x])
        assert lean.level < out.level and ctx.noise_budget(lean, sk) >= 20


def test_bfv_operands_drop_only_the_primes_their_noise_outgrew():
    ctx = rf.bfv.Context(1024, plain_modulus=T, coeff_bits=CHAIN, insecure_no_security_check=True,
                         insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    fresh = ctx.encrypt(np.arange(ctx.slots), keys)
    assert fewer_primes(fresh) is fresh                  # its noise is the rounding's: nothing to drop
    x = fresh
    for _ in range(3):
        x = x * x
    fewer = fewer_primes(x)
    assert fewer.level < x.level
    assert np.array_equal(ctx.decrypt(fewer, sk), ctx.decrypt(x, sk))
    assert ctx.noise_budget(fewer, sk) >= ctx.noise_budget(x, sk) - 2


def test_functions_read_slots_signed_vectorized_or_one_at_a_time(setup):
    ctx, sk, keys = setup
    x = np.arange(-8, 8).repeat(ctx.slots // 16)
    ct = ctx.encrypt(x, keys)
    square = rf.bgv.SlotTable(ctx, lambda v: v * v - 3)                   # vectorized, signed
    assert np.array_equal(ctx.decrypt(square(ct), sk), x * x - 3)
    assert square.degree == 2 and square.levels == 2                     # a low degree takes few levels
    sign = rf.bgv.SlotTable(ctx, lambda v: 1 if v > 0 else 0)            # one int at a time
    assert np.array_equal(ctx.decrypt(sign(ct), sk), (x > 0).astype(np.int64))
    constant = rf.bgv.SlotTable(ctx, lambda v: np.full_like(v, 9))
    assert constant.degree == 0 and np.array_equal(ctx.decrypt(constant(ct), sk), np.full(ctx.slots, 9))


def test_block_products_on_the_host_equal_one_linear_combination_per_block(setup):
    ctx, sk, keys = setup
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(6)
    xs = [rng.integers(0, T, ctx.slots) for _ in range(5)]
    cts = [ctx.encrypt(x, keys) for x in xs]
    cts[1] = cts[1] * cts[2]                                             # another correction (BGV), another level
    low = min(c.level for c in cts)
    cts = [c.mod_reduce(low) if c.level > low else c for c in cts]
    weights = rng.integers(0, T, (4, 5))
    weights[2] = 0                                                       # an empty block
    sums = block_sums(ev, cts, weights, T)
    assert sums[2] is None
    plain = [xs[0], xs[1] * xs[2] % T, xs[2], xs[3], xs[4]]
    for j in (0, 1, 3):
        want = sum(int(w) * p.astype(object) for w, p in zip(weights[j], plain)) % T
        assert np.array_equal(ctx.decrypt(sums[j], sk, signed=False).astype(object), want)
        one = ev.linear_combination(cts, weights[j])
        assert np.array_equal(ctx.decrypt(one, sk, signed=False), ctx.decrypt(sums[j], sk, signed=False))
        assert sums[j].correction == cts[0].correction
    # Under a trace the backend's linear combinations run (BLAS is outside it): the same sums, counted.
    with rf.trace() as trace:
        traced = block_sums(ev, cts, weights, T)
    for j in (0, 1, 3):
        assert np.array_equal(ctx.decrypt(traced[j], sk, signed=False), ctx.decrypt(sums[j], sk, signed=False))
    rows = [e for e in trace.entries if e["kernel"] == "linear_combination"]
    assert sum(e["calls"] for e in rows) == 3 and {e["terms"] for e in rows} == {5}


def test_a_table_frees_its_ciphertexts_without_the_garbage_collector(setup):
    # A recursive closure once held every block sum in a reference cycle until the collector
    # next ran: 2 GB a table at N = 2^15, and a 128-bit training run that peaked at 20 GiB.
    ctx, sk, keys = setup
    table = rf.bgv.SlotTable(ctx, lambda v: v * v)
    ct = ctx.encrypt(np.arange(ctx.slots) % 300, keys)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        table(ct)
        gc.collect()
        cyclic = [o for o in gc.garbage if isinstance(o, rf.bgv.Ciphertext)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert cyclic == []


def test_block_products_of_a_wide_prime_recombine_their_pieces_exactly():
    # q_0 of 60 bits: its words cut into pieces reduced one by one (Horner's rule), the
    # 36-bit primes into two halves.
    ctx = rf.bgv.Context(1024, plain_modulus=T, coeff_bits=[60, 36, 36, 60], insecure_no_security_check=True,
                         insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(8)
    xs = [rng.integers(0, T, ctx.slots) for _ in range(255)]
    cts = [ctx.encrypt(x, keys) for x in xs]
    weights = rng.integers(0, T, (3, 255))
    for level in (ctx.max_level, 0):
        at = [c.mod_reduce(level) if c.level > level else c for c in cts]
        sums = block_sums(ev, at, weights, T)
        for j in range(3):
            want = sum(int(w) * x.astype(object) for w, x in zip(weights[j], xs)) % T
            assert np.array_equal(ctx.decrypt(sums[j], sk, signed=False).astype(object), want), (level, j)
            assert np.array_equal(sums[j]._native.polys(), ev.linear_combination(at, weights[j])._native.polys())


def test_refusals_name_the_problem(setup):
    ctx, sk, keys = setup
    ev = ctx.evaluator(keys)
    ct = ctx.encrypt([1, 2, 3], keys)
    with pytest.raises(ValueError, match="257 or 65537"):
        rf.bgv.SlotTable(rf.bgv.Context(2**13, plain_bits=20), lambda v: v)
    with pytest.raises(TypeError, match=r"integers to integers .*returned 0\.0 \(float64\): use //"):
        rf.bgv.SlotTable(ctx, lambda v: v / 2)
    with pytest.raises(TypeError, match=r"returned 0.5 \(float\)"):
        rf.bgv.SlotTable(ctx, lambda v: 0.5 if v else 0)
    with pytest.raises(ValueError, match=r"shape \(65537,\)"):
        rf.bgv.SlotTable(ctx, np.zeros(10, dtype=np.int64))
    with pytest.raises(TypeError, match="ciphertext of this table's context"):
        rf.bgv.SlotTable(ctx, lambda v: v)(np.zeros(4))
    for bad in ("100", -1, float("nan"), True):
        with pytest.raises(ValueError, match=r"keep_bits is the noise budget .* got"):
            rf.bgv.SlotTable(ctx, lambda v: v * v)(ct, keep_bits=bad)
    with pytest.raises(ValueError, match="level mismatch"):
        ev.linear_combination([ct, ct.mod_reduce(ct.level - 1)], [1, 1])
    with pytest.raises(ValueError, match="at least one input"):
        ev.linear_combination([], [])
    shallow = ct.mod_reduce(3)                                           # 3 levels left for a 17-level table
    with pytest.raises(ValueError, match=r"no noise budget on this ciphertext \(level 3"):
        rf.bgv.SlotTable(ctx, np.random.default_rng(7).integers(0, T, T))(shallow)
