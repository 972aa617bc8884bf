"""Lookup tables by CKKS functional bootstrapping (ringfire.ckks.lookup) on the toy
ring: every residue of each table checked against the plaintext table in NumPy, the
precision in bits, both SlotsToCoeffs orders, how the input's error travels, the levels,
flat tables that clean their input, and the errors a user meets."""

import math
import warnings

import numpy as np
import pytest

import ringfire as rf

SEED = bytes(range(32))


def toy_context(**bootstrap):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring is insecure by design and says so
        if bootstrap.get("stc_first"):
            return rf.ckks.Context.preset("N12_BOOT_INSECURE", bootstrap=bootstrap, insecure_deterministic_seed=SEED)
        options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
        options["bootstrap"] = {**options["bootstrap"], **bootstrap}
        return rf.ckks.Context(**options, insecure_deterministic_seed=SEED)


@pytest.fixture(scope="module")
def toy():
    ctx = toy_context()
    sk, keys = ctx.keygen(bootstrap=True)
    return ctx, sk, keys, ctx.evaluator(keys)


def decrypt(ctx, sk, ct):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctx.decrypt(ct, sk, insecure_exact=True).real


def every_residue(ctx, p, rng, signed=False):
    """All p residues (each several times), then random ones: the full slot count."""
    low = -(p // 2) if signed else 0
    m = np.resize(np.arange(low, low + p), ctx.slots)
    return rng.permutation(m)


@pytest.mark.parametrize("p", [2, 3, 5, 16, 64])
def test_random_tables_match_numpy_on_every_residue(toy, p):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(p)
    table = rng.uniform(-1, 1, p)
    m = every_residue(ctx, p, rng)
    out = ev.lut(ctx.encrypt(m.astype(float), keys), table, modulus=p)
    assert out.level == rf.ckks.lookup.output_level(ctx, p)
    assert math.isclose(out.scale, ctx.scale_at(out.level), rel_tol=1e-9)
    err = np.abs(decrypt(ctx, sk, out) - table[m % p])
    # The toy ring's bootstrap keeps about 26 bits; the table's polynomial costs up to 2.
    assert -math.log2(err.max()) > 22, (p, err.max())


def test_signed_functions_read_the_integers_modulo_p(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(7)
    m = every_residue(ctx, 32, rng, signed=True)
    ct = ctx.encrypt(m.astype(float), keys)
    relu = decrypt(ctx, sk, ev.lut(ct, lambda k: max(k, 0), modulus=32, signed=True))
    sign = decrypt(ctx, sk, ev.lut(ct, lambda k: float(np.sign(k)), modulus=32, signed=True))
    np.testing.assert_allclose(relu, np.maximum(m, 0), atol=2**-20)
    np.testing.assert_allclose(sign, np.sign(m), atol=2**-20)  # sign(0) = 0: equal inputs compare equal
    # m and m + p are the same residue: the same value comes out.
    shifted = decrypt(ctx, sk, ev.lut(ctx.encrypt(m + 32.0, keys), lambda k: max(k, 0), modulus=32, signed=True))
    np.testing.assert_allclose(shifted, relu, atol=2**-20)


def test_compare_two_encrypted_integer_vectors(toy):
    """[a > b] for 4-bit integers: the difference's sign, one table of 32 entries."""
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 16, ctx.slots), rng.integers(0, 16, ctx.slots)
    b[:64] = a[:64]  # equal inputs
    diff = ev.sub(ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys))
    greater = decrypt(ctx, sk, ev.lut(diff, lambda k: 1.0 if k > 0 else 0.0, modulus=32, signed=True))
    np.testing.assert_allclose(greater, (a > b).astype(float), atol=2**-20)


def test_several_tables_share_one_functional_bootstrap(toy):
    """min, max and [a > b] of two 4-bit vectors from one functional bootstrap of a - b."""
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 16, ctx.slots), rng.integers(0, 16, ctx.slots)
    diff = ev.sub(ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys))
    relu, greater, odd = ev.luts(diff, [lambda k: max(k, 0), lambda k: float(k > 0), lambda k: math.sin(k)],
                                 modulus=32, signed=True)
    for out, want in ((relu, np.maximum(a - b, 0)), (greater, (a > b).astype(float)), (odd, np.sin(a - b))):
        assert out.level == rf.ckks.lookup.output_level(ctx, 32)
        np.testing.assert_allclose(decrypt(ctx, sk, out), want, atol=2**-20)
    # max(a, b) = b + relu(a - b), from the shared bootstrap's output
    maximum = ev.add(ev.adjust_to(ctx.encrypt(b.astype(float), keys), relu.level), relu)
    np.testing.assert_allclose(decrypt(ctx, sk, maximum), np.maximum(a, b), atol=2**-20)
    # One table through luts is the lookup itself.
    alone = ev.lut(diff, lambda k: max(k, 0), modulus=32, signed=True)
    np.testing.assert_allclose(decrypt(ctx, sk, alone), decrypt(ctx, sk, relu), atol=2**-22)
    with pytest.raises(TypeError, match="non-empty list"):
        ev.luts(diff, lambda k: k, modulus=32)
    with pytest.raises(TypeError, match="non-empty list"):
        ev.luts(diff, [], modulus=32)


def test_slots_to_coeffs_first_contexts_give_the_same_tables():
    ctx = toy_context(stc_first=True)
    sk, keys = ctx.keygen(bootstrap=True)
    ev = ctx.evaluator(keys)
    m = every_residue(ctx, 16, np.random.default_rng(5))
    table = np.cos(np.arange(16))
    out = ev.lut(ctx.encrypt(m.astype(float), keys), table, modulus=16)
    assert np.abs(decrypt(ctx, sk, out) - table[m]).max() < 2**-20


def test_the_input_error_is_carried_not_rounded(toy):
    """An input off its integer by e comes out off by at most error_gain(table) * e:
    functional bootstrapping interpolates, it does not round. A smooth table gains
    about its slope; the identity's wrap from 7 to -8 gains far more."""
    ctx, sk, keys, ev = toy
    m = np.resize(np.arange(-8, 8), ctx.slots)
    ct = ctx.encrypt(m + 0.01, keys)
    for f in (lambda k: math.cos(2 * math.pi * k / 16), lambda k: float(k)):
        table = rf.ckks.lookup.table_of(f, 16, signed=True)
        out = decrypt(ctx, sk, ev.lut(ct, f, modulus=16, signed=True))
        moved = np.abs(out - np.array(table)[m % 16])
        gain = rf.ckks.lookup.error_gain(table)
        assert moved.max() <= gain * 0.01 * 1.01 + 2**-20
        assert moved.max() > 0.2 * 0.01 * (2 * math.pi / 16)  # carried, not rounded to the integer
    assert rf.ckks.lookup.error_gain(rf.ckks.lookup.table_of(lambda k: math.cos(2 * math.pi * k / 16), 16)) \
        == pytest.approx(2 * math.pi / 16)
    assert rf.ckks.lookup.error_gain(list(range(16))) > 5


def test_timings_and_the_levels_each_table_size_costs(toy):
    ctx, sk, keys, ev = toy
    levels = [rf.ckks.lookup.output_level(ctx, p) for p in (2, 16, 32, 64, 128)]
    assert levels[0] == ctx.max_level and levels == sorted(levels, reverse=True)
    with pytest.raises(ValueError, match="entries needs 9 levels"):
        rf.ckks.lookup.output_level(ctx, 256)
    times = {}
    ev.lut(ctx.encrypt(np.zeros(ctx.slots), keys), [1.0, 2.0], modulus=2, timings=times)
    assert set(times) == {"slots_to_coeffs", "mod_raise", "coeffs_to_slots", "eval_lut"}
    assert all(t > 0 for t in times.values())


def test_wrong_inputs_are_refused_with_the_reason(toy):
    ctx, sk, keys, ev = toy
    ct = ctx.encrypt(np.zeros(ctx.slots), keys)
    with pytest.raises(ValueError, match="modulus must be an integer in"):
        ev.lut(ct, [0.0], modulus=1)
    with pytest.raises(ValueError, match="modulus must be an integer in"):
        ev.lut(ct, lambda k: k, modulus=8192)
    with pytest.raises(ValueError, match="the table has 3 entries, modulus says 4"):
        ev.lut(ct, [0.0, 1.0, 2.0], modulus=4)
    with pytest.raises(ValueError, match="must be finite"):
        ev.lut(ct, [0.0, float("nan")], modulus=2)
    with pytest.raises(TypeError, match="must return real numbers"):
        ev.lut(ct, lambda k: "x", modulus=2)
    with pytest.raises(ValueError, match="complex values"):
        ev.lut(ctx.encrypt(np.full(ctx.slots, 1j), keys), [0.0, 1.0], modulus=2)
    low = ev.rescale(ev.multiply_scalar(ct, 2.0))
    with pytest.raises(ValueError, match="needs level 3 or above"):
        ev.lut(low, [0.0, 1.0], modulus=2)
    with pytest.raises(ValueError, match="relinearize it first"):
        ev.lut(ev.multiply(ct, ct), [0.0, 1.0], modulus=2)
    plain = rf.ckks.Context.preset("N13_D2")
    with pytest.raises(ValueError, match="reserve no levels for bootstrapping"):
        ev_plain = plain.evaluator(plain.keygen()[1])
        ev_plain.lut(plain.encrypt(np.zeros(plain.slots), plain.keygen()[1]), [0.0, 1.0], modulus=2)
    # A ciphertext of another context is refused by name, not by its level.
    with pytest.raises(ValueError, match="comes from a different context"):
        ev.lut(plain.encrypt(np.zeros(plain.slots), plain.keygen()[1]), [0.0, 1.0], modulus=2)
    # The secret key is not an evaluation key set.
    with pytest.raises(TypeError, match="the secret key stays with its holder"):
        ev.lut(ct, [0.0, 1.0], modulus=2, keys=sk)
    with pytest.raises(TypeError, match=r"ctx.evaluator\(keys\) takes the KeySet"):
        ctx.evaluator(sk)


@pytest.mark.parametrize("n", [256, 16])
def test_sparse_packing_looks_up_periodic_vectors(n):
    """n slots (vectors that repeat with period n, as a sparse bootstrap reads them): every
    residue of a table, alone and as a pair, against NumPy; the result repeats likewise."""
    ctx = toy_context(slots=n)
    sk, keys = ctx.keygen(bootstrap=True)
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(n)
    table = rng.uniform(-1, 1, 16)
    m, m2 = rng.permutation(np.resize(np.arange(16), n)), rng.integers(0, 16, n)
    tile = lambda v: np.tile(v, ctx.slots // n).astype(float)  # noqa: E731
    ct, ct2 = ctx.encrypt(tile(m), keys), ctx.encrypt(tile(m2), keys)
    assert rf.ckks.lookup.output_level(ctx, 16) == ctx.max_level
    out = ev.lut(ct, table, modulus=16)
    assert -math.log2(np.abs(decrypt(ctx, sk, out) - tile(table[m])).max()) > 22
    fa, fb = ev.lut_pair(ct, ct2, table, modulus=16)
    assert -math.log2(np.abs(decrypt(ctx, sk, fa) - tile(table[m])).max()) > 22
    assert -math.log2(np.abs(decrypt(ctx, sk, fb) - tile(table[m2])).max()) > 22


@pytest.mark.skipif(not rf.cuda_available(), reason="no CUDA backend or GPU in this build/machine")
def test_gpu_lookup_is_bit_identical(toy):
    ctx, sk, keys, ev = toy
    m = every_residue(ctx, 16, np.random.default_rng(13))
    ct = ctx.encrypt(m.astype(float), keys)
    table = np.sin(np.arange(16.0))
    cpu = ev.lut(ct, table, modulus=16)
    gpu = ctx.evaluator(keys.to("cuda")).lut(ct.to("cuda"), table, modulus=16)
    assert gpu.device.startswith("cuda")
    assert gpu.to("cpu").to_bytes() == cpu.to_bytes()


@pytest.mark.slow
def test_n16_boot_eight_bit_table():
    """An 8-bit table on the 128-bit preset over all 32768 slots (minutes and ~15 GB on 2 cores)."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    sk, keys = ctx.keygen(bootstrap=True)
    m = every_residue(ctx, 256, np.random.default_rng(17), signed=True)
    out = ctx.evaluator(keys).lut(ctx.encrypt(m.astype(float), keys), lambda k: float(np.sign(k)), modulus=256,
                                  signed=True)
    assert out.level == rf.ckks.lookup.output_level(ctx, 256)
    assert np.abs(decrypt(ctx, sk, out) - np.sign(m)).max() < 2**-12


def test_the_docs_example_runs_as_written():
    import contextlib
    import io
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "lookup.md").read_text()
    snippet = re.findall(r"```python\n(.+?)\n```", text, re.S)[0]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet, "docs/lookup.md", "exec"), {})
    assert printed.getvalue().split("\n")[:2] == ["[0. 0. 1. 1.]", "[9. 1. 0. 9.]"]


def test_two_vectors_share_one_functional_bootstrap_as_a_plus_ib(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(19)
    a, b = rng.integers(-8, 8, ctx.slots), rng.integers(-8, 8, ctx.slots)
    f = lambda k: float(k * k) / 64  # noqa: E731
    ca, cb = ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys)
    fa, fb = ev.lut_pair(ca, cb, f, modulus=16, signed=True)
    for out, x in ((fa, a), (fb, b)):
        assert not out.is_complex and out.level == rf.ckks.lookup.output_level(ctx, 16)
        np.testing.assert_allclose(decrypt(ctx, sk, out), x * x / 64, atol=2**-20)
    with pytest.raises(ValueError, match="needs level 3 or above"):  # aligned first: both at level 2
        ev.lut_pair(ev.rescale(ev.multiply_scalar(ca, 1.0)), cb, f, modulus=16, signed=True)
    with pytest.raises(ValueError, match="both ciphertexts must hold real integers"):
        ev.lut_pair(ctx.encrypt(np.full(ctx.slots, 1j), keys), cb, f, modulus=16)
    with pytest.raises(ValueError, match="complex values"):
        ev.lut(ev.add(ca, ctx.encrypt(np.full(ctx.slots, 1j), keys)), f, modulus=16)


@pytest.mark.parametrize("bits,digit_bits", [(12, 4), (10, 4), (3, 4), (20, 4)])
def test_the_sign_of_wide_integers_by_digits(toy, bits, digit_bits):
    """12-bit integers (the extremes, 0 and +-1 included) through tables of 16 entries."""
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(bits)
    half = 2 ** (bits - 1)
    x = rng.integers(-half, half, ctx.slots)
    x[:6] = [-half, half - 1, 0, 1, -1, 0]
    out = ev.sign_integer(ctx.encrypt(x.astype(float), keys), bits=bits, digit_bits=digit_bits)
    np.testing.assert_allclose(decrypt(ctx, sk, out), np.sign(x), atol=2**-16)


@pytest.mark.parametrize("bits,shift,digit_bits", [(12, 4, 4), (16, 7, 4), (10, 9, 4), (14, 6, 3)])
def test_floor_division_of_wide_integers_by_digits(toy, bits, shift, digit_bits):
    """floor(x / 2^shift) against NumPy's, exactly, extremes and the boundaries of every
    quotient included (the rescaling of fixed-point integers)."""
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(100 * bits + shift)
    half = 2 ** (bits - 1)
    x = rng.integers(-half, half, ctx.slots)
    x[:8] = [-half, half - 1, 0, -1, 1, 2**shift, 2**shift - 1, -(2**shift)]
    ct = ctx.encrypt(x.astype(float), keys)
    out = ev.floor_divide(ct, shift, bits=bits, digit_bits=digit_bits)
    assert out.level == ct.level
    got = decrypt(ctx, sk, out)
    np.testing.assert_array_equal(np.round(got), np.floor_divide(x, 2**shift))
    assert np.abs(got - np.floor_divide(x, 2**shift)).max() < 2**-12


def test_a_fixed_point_product_rescaled():
    """Two values with 4 fractional bits multiply into 8; floor_divide by 2^4 brings the
    product back to 4, as plaintext fixed-point arithmetic does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring, two user levels longer: a product stays above 3
        options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
        options["coeff_bits"] = [60] + [40] * 5 + options["coeff_bits"][4:]
        options["dnum"] = -(-len(options["coeff_bits"]) // 3)
        ctx = rf.ckks.Context(**options, insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True)
    ev = ctx.evaluator(keys)
    rng = np.random.default_rng(29)
    a, b = rng.integers(-64, 64, ctx.slots), rng.integers(-64, 64, ctx.slots)
    product = ctx.encrypt(a.astype(float), keys) * ctx.encrypt(b.astype(float), keys)
    out = ev.floor_divide(product, 4, bits=13)
    np.testing.assert_array_equal(np.round(decrypt(ctx, sk, out)), np.floor_divide(a * b, 16))
    with pytest.raises(ValueError, match=r"shift must be an integer in \[1, bits - 1\]"):
        ev.floor_divide(product, 13, bits=13)
    assert product.level == 4
    with pytest.raises(ValueError, match="needs level 3 or above"):
        ev.floor_divide(ev.adjust_to(product, 2), 4, bits=13)


def test_integer_comparison_and_exact_division(toy):
    ctx, sk, keys, ev = toy
    rng = np.random.default_rng(23)
    a, b = rng.integers(0, 256, ctx.slots), rng.integers(0, 256, ctx.slots)
    b[:32] = a[:32]
    diff = ev.sub(ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys))
    np.testing.assert_allclose(decrypt(ctx, sk, ev.sign_integer(diff, bits=9)), np.sign(a - b), atol=2**-16)
    # divide_by_integer: the same words at a larger scale, no level
    half = ev.divide_by_integer(diff, 8)
    assert half.level == diff.level and half.scale == diff.scale * 8
    np.testing.assert_allclose(decrypt(ctx, sk, half), (a - b) / 8, atol=2**-20)
    with pytest.raises(ValueError, match="positive integer"):
        ev.divide_by_integer(diff, 0)
    with pytest.raises(ValueError, match="bits must be an integer in"):
        ev.sign_integer(diff, bits=40)
    with pytest.raises(ValueError, match="use smaller digits"):  # 32 entries land at level 2 on the toy ring
        ev.sign_integer(diff, bits=12, digit_bits=5)


def test_inputs_whose_scale_is_far_too_large_are_refused(toy):
    """An unrescaled product or a division through the scale leaves too few bits for the
    first transform: refused with the largest scale that works, never a wrong table."""
    ctx, sk, keys, ev = toy
    v = np.resize(np.arange(8.0), ctx.slots)
    unrescaled = ev.multiply_scalar(ctx.encrypt(v, keys), 2.0)  # scale 2^80
    with pytest.raises(ValueError, match="too large for a table of 16 entries.*rescale it first"):
        ev.lut(unrescaled, lambda k: float(k), modulus=16)
    divided = ev.divide_by_integer(ctx.encrypt(v * 2.0**50, keys), 2**50)
    with pytest.raises(ValueError, match="too large for a table"):
        ev.lut(divided, lambda k: float(k), modulus=16)
    # A moderately larger scale still reads right.
    slightly = ev.divide_by_integer(ctx.encrypt(v * 64, keys), 64)
    np.testing.assert_allclose(decrypt(ctx, sk, ev.lut(slightly, lambda k: float(k), modulus=16)), v, atol=2**-18)
    with pytest.raises(ValueError, match="below 2\\^63"):
        ev.divide_by_integer(slightly, 2**63)


def test_many_input_scales_keep_working_with_a_bounded_cache(toy):
    """Each new input scale needs its own first transform; beyond the few kept, they are
    built for the call and dropped (the scale is the sender's metadata)."""
    ctx, sk, keys, ev = toy
    v = np.resize(np.arange(4.0), ctx.slots)
    for d in range(3, 25, 2):  # 11 odd divisors: 11 first transforms
        out = ev.lut(ev.divide_by_integer(ctx.encrypt(v * d, keys), d), [0.0, 1.0, 4.0, 9.0], modulus=4)
        np.testing.assert_allclose(decrypt(ctx, sk, out), v * v, atol=2**-18)


def test_complex_or_shaped_tables_are_refused(toy):
    ctx, sk, keys, ev = toy
    ct = ctx.encrypt(np.zeros(ctx.slots), keys)
    with pytest.raises(TypeError, match="complex values"):
        ev.lut(ct, np.exp(2j * np.pi * np.arange(16) / 16), modulus=16)
    with pytest.raises(TypeError, match="shape \\(4, 4\\)"):
        ev.lut(ct, np.zeros((4, 4)), modulus=16)
    with pytest.raises(TypeError, match="expected a function or a sequence"):
        ev.lut(ct, None, modulus=16)


def test_digits_of_an_input_below_the_tables_level_cost_no_level():
    """Digits land above a low input (SlotsToCoeffs first keeps more user levels): they
    drop limbs to meet it instead of spending a level on alignment."""
    ctx = toy_context(stc_first=True)
    sk, keys = ctx.keygen(bootstrap=True)
    ev = ctx.evaluator(keys)
    w = np.random.default_rng(29).integers(-2048, 2048, ctx.slots)
    x = ctx.encrypt(w.astype(float), keys, level=4)
    assert rf.ckks.lookup.output_level(ctx, 4) > 4
    out = ev.sign_integer(x, bits=12, digit_bits=2)
    np.testing.assert_allclose(decrypt(ctx, sk, out), np.sign(w), atol=2**-16)

# ---- flat tables --------------------------------------------------------------------
# ``ev.lut(..., flat=True)``: the table's curve flat at every integer, so an input's error
# reaches the result squared instead of times the curve's slope; the digit extractions built
# on them (floors, signs) that stop carrying errors; and ``ev.adjust_to`` from the scales
# those floors leave (2^16 to 2^24 times the canonical one), which rescaled to a tiny scale
# first and lost up to 26 bits. Every result is checked against NumPy.



@pytest.fixture(scope="module")
def toy9():
    """The toy ring with N16_BOOT's nine user levels (the preset's three leave no room for a
    flat digit table to land where the next digit's lookup reads). NOT SECURE."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.apps.fixed_point_logreg.toy_context(insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True)
    return ctx, sk, keys, ctx.evaluator(keys)


def worst_bits(got, want) -> float:
    return -math.log2(max(float(np.abs(got - want).max()), 2.0**-60))


def test_a_flat_table_cleans_its_input_where_a_plain_one_carries_the_error(toy9):
    ctx, sk, keys, ev = toy9
    rng = np.random.default_rng(1)
    m = np.resize(np.arange(16), ctx.slots).astype(float)
    table = (np.arange(16) * 7 + 3) % 16 - 4.0                       # jumps: a large slope between integers
    for error, plain_bits, flat_bits in ((0.0, 22, 24), (2.0**-12, 6, 18), (2.0**-8, 2, 10)):
        x = ctx.encrypt(m + rng.choice([-error, error], ctx.slots), keys)
        want = table[m.astype(int)]
        plain = ev.lut(x, table, modulus=16)
        flat = ev.lut(x, table, modulus=16, flat=True)
        assert flat.level == rf.ckks.lookup.output_level(ctx, 16, flat=True) == rf.ckks.lookup.output_level(ctx, 16) - 1
        assert math.isclose(flat.scale, ctx.scale_at(flat.level), rel_tol=1e-9)
        got_plain, got_flat = worst_bits(decrypt(ctx, sk, plain), want), worst_bits(decrypt(ctx, sk, flat), want)
        # Plain: the error times the slope (up to ~16 here); flat: about 8 e^2 (measured 20.9 and 12.9 bits
        # for 2^-12 and 2^-8 with the sawtooth m mod 16; this table jumps as much).
        assert got_plain > plain_bits and got_flat > flat_bits, (error, got_plain, got_flat)
        if error:
            assert got_flat > got_plain + 6


def test_flat_tables_of_several_functions_and_of_a_pair(toy9):
    ctx, sk, keys, ev = toy9
    rng = np.random.default_rng(2)
    a = rng.integers(-8, 8, ctx.slots).astype(float)
    b = rng.integers(-8, 8, ctx.slots).astype(float)
    relu, square = ev.luts(ctx.encrypt(a, keys), [lambda k: max(k, 0), lambda k: k * k], modulus=16, signed=True,
                           flat=True)
    assert worst_bits(decrypt(ctx, sk, relu), np.maximum(a, 0)) > 20
    assert worst_bits(decrypt(ctx, sk, square), a * a) > 18
    fa, fb = ev.lut_pair(ctx.encrypt(a, keys), ctx.encrypt(b, keys), lambda k: float(k >= 0), modulus=16,
                         signed=True, flat=True)
    assert worst_bits(decrypt(ctx, sk, fa), (a >= 0).astype(float)) > 20
    assert worst_bits(decrypt(ctx, sk, fb), (b >= 0).astype(float)) > 20


def test_floors_and_signs_divide_the_inputs_error_instead_of_carrying_it(toy9):
    ctx, sk, keys, ev = toy9
    rng = np.random.default_rng(3)
    x = rng.integers(-2**15, 2**15, ctx.slots).astype(float)
    noisy = ctx.encrypt(x + rng.choice([-2.0**-8, 2.0**-8], ctx.slots), keys)
    want = np.floor(x / 2**14)
    flat = decrypt(ctx, sk, ev.adjust_to(ev.floor_divide(noisy, 14, bits=17), 5))
    plain = decrypt(ctx, sk, ev.adjust_to(ev.floor_divide(noisy, 14, bits=17, flat=False), 5))
    assert np.array_equal(np.rint(flat), want) and np.array_equal(np.rint(plain), want)
    # Measured: 2^-21.9 with flat digits, 2^-10.2 with plain ones (each digit's slope carries e on).
    assert worst_bits(flat, want) > 19 and worst_bits(plain, want) < 14
    signs = decrypt(ctx, sk, ev.sign_integer(noisy, bits=17))
    assert worst_bits(signs, np.sign(x)) > 18


def test_a_lookups_error_estimate_follows_the_measured_error_plain_and_flat(toy9):
    """The error estimate a lookup's output carries (``noise_bits``, a Euclidean norm:
    2^noise_bits / scale estimates a slot's typical error) against the error measured with
    exact decryption, for inputs whose own error the estimate knows: m shrunk by 2^k and
    scaled back, so the rescale's rounding grows 2^k times (2^-22 .. 2^-6 of a unit). Plain
    tables carry the input's error times their slopes, flat ones its square (the estimate's
    quadratic term takes a 4-sigma tail). Measured here: the estimate 3.6-3.9 times the rms
    for plain tables and 2.6-3.2 times for flat ones, the worst of 2048 slots 1.6-6.2 times
    the estimate."""
    ctx, sk, keys, ev = toy9
    m = np.resize(np.arange(16), ctx.slots).astype(float)
    table = (np.arange(16) * 7 + 3) % 16 - 4.0
    for k in (8, 16, 20, 24):
        x = ctx.encrypt(m, keys)
        shrunk = ev.rescale(ev.multiply_plain(x, ctx.encode(np.full(ctx.slots, 2.0**-k), level=x.level)))
        noisy = shrunk * 2**k
        for flat in (False, True):
            y = ev.lut(noisy, table, modulus=16, flat=flat)
            error = np.abs(decrypt(ctx, sk, y) - table[m.astype(int)])
            rms, worst = float(np.sqrt(np.mean(error**2))), float(error.max())
            estimate = 2.0**y.noise_bits / y.scale
            assert rms < estimate < 6 * rms and worst < 10 * estimate, (k, flat, estimate, rms, worst)


def test_flat_digits_are_chosen_where_they_fit_and_refused_where_asked_and_they_do_not(toy9):
    ctx = toy9[0]
    assert rf.ckks.lookup.uses_flat_tables(ctx, 16, None) and not rf.ckks.lookup.uses_flat_tables(ctx, 16, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = rf.ckks.Context.preset("N12_BOOT_INSECURE", insecure_deterministic_seed=SEED)  # three user levels
        sk, keys = small.keygen(bootstrap=True)
    assert not rf.ckks.lookup.uses_flat_tables(small, 16, None)       # plain digits there, as before
    with pytest.raises(ValueError, match="a flat table of 16 entries lands at level 2, below the level 3"):
        small.evaluator(keys).floor_divide(small.encrypt(np.ones(4), keys), 8, bits=12, flat=True)
    with pytest.raises(ValueError, match="a flat table needs a power-of-two size"):
        toy9[3].lut(ctx.encrypt(np.ones(4), toy9[2]), lambda k: k, modulus=12, flat=True)


def test_flat_must_be_a_bool(toy):
    ctx, sk, keys, ev = toy
    x = ctx.encrypt(np.ones(4), keys)
    with pytest.raises(TypeError, match=r"flat must be True or False, got 'no'"):
        ev.lut(x, lambda k: k, modulus=16, flat="no")
    with pytest.raises(TypeError, match="flat must be True, False or None, got 0"):
        ev.floor_divide(x, 4, bits=8, flat=0)


@pytest.mark.parametrize("ratio_bits", [12, 16, 20, 24])
def test_adjust_to_from_a_scale_far_above_the_canonical_keeps_its_precision(toy9, ratio_bits):
    """A floor division leaves its result read at 2^shift times the canonical scale. adjust_to
    rescaled such a scale first, down to 2^(40 - 40 + ratio) words per unit, where the
    rescale's rounding (up to |s|_1 words) read as errors of 2^-4 to 2^-12; it now multiplies
    the correction constant in first, where it is 2^30 or more, and rescales after."""
    ctx, sk, keys, ev = toy9
    x = np.random.default_rng(4).integers(-10, 10, ctx.slots).astype(float)
    k = 2**ratio_bits
    far = ev.divide_by_integer(ev.multiply_integer(ev.adjust_to(ctx.encrypt(x, keys), 4), k), k)
    landed = ev.adjust_to(far, 2)
    assert landed.level == 2 and math.isclose(landed.scale, ctx.scale_at(2), rel_tol=1e-9)
    assert worst_bits(decrypt(ctx, sk, landed), x) > 24           # measured 27; 4.1 bits at 2^16 before
    with pytest.raises(ValueError, match="too far from level 3's"):
        ev.adjust_to(far, 3)                                        # one level cannot land it precisely
