"""BGV and BFV slots to FHEW (ringfire.switching.BgvSlotsToFhew), under the batching prime
t = 65537, checked against NumPy's integers: the slot map's coefficients (every one, the
others 0), the switched integers, signs and comparisons at the range's limits and on equal
values, a lookup table, inputs at a lower level and after a product, every count from 1 to
256, the keys as bytes, crafted blobs and every refusal by its message."""

import pathlib

import numpy as np
import pytest

import ringfire as rf

T = 65537   # a batching prime for N = 2^13 (65537 = 1 mod 2^14)
BITS = 3
COUNT = 16
# At 3 bits on STD128 the switch reads a value wrong with probability ~1e-5 and says so
# (tests/test_switching_bgv.py checks that warning); the values are checked here instead.
pytestmark = [pytest.mark.filterwarnings("ignore:.*switched coefficient is read wrong"),
              pytest.mark.filterwarnings("ignore:.*fails with probability"),
              pytest.mark.filterwarnings("ignore:.*insecure_deterministic_seed")]


@pytest.fixture(scope="module", params=["bgv", "bfv"])
def setup(request, fhew_std128):
    fhew, fsk = fhew_std128
    ctx = getattr(rf, request.param).Context(2**13, plain_modulus=T, insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    switch = rf.switching.BgvSlotsToFhew(ctx, fhew, count=COUNT, bits=BITS)
    return ctx, sk, keys, fhew, fsk, switch, switch.keygen(sk, fsk)


def test_the_slot_map_lands_every_slot_at_its_coefficient_and_clears_the_rest(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    rng = np.random.default_rng(1)
    x = rng.integers(0, T, ctx.slots)                                   # every slot full: the mask clears the rest
    ct = ctx.encrypt(x, keys)
    for count in (1, 2, 4, 16, 256):
        slot_map = rf.switching.SlotsToCoefficients(ctx, count)
        galois = slot_map.galois_keys(sk)
        for factor in (1, -3):
            out = slot_map(ct, galois, factor)
            want = np.zeros(ctx.poly_degree, dtype=np.int64)
            want[np.arange(count) * (ctx.poly_degree // count)] = factor * x[:count] % T
            assert np.array_equal(ctx.decrypt_coefficients(out, sk, signed=False), want), (count, factor)
            assert out.level == ct.level and ctx.noise_budget(out, sk) > 40
    assert slot_map.rotations == [-256, -512, -1024, -2048, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                  32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240]


def test_slots_switch_to_their_integers_from_any_level(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    x = np.concatenate([[0, 7, 7, 0], np.arange(8), [3, 5, 1, 6]])
    ct = ctx.encrypt(x, keys)
    assert np.array_equal(fhew.decrypt(switch(ct, key), fsk), x)
    # One level down (the factor takes the dropped prime's), and a product: slot-wise, mod t.
    assert np.array_equal(fhew.decrypt(switch(ct.mod_reduce(ctx.max_level - 1), key), fsk), x)
    y = np.arange(COUNT) % 2                                              # products below 8
    product = ct * ctx.encrypt(y, keys)                                  # relinearized by the operator
    assert np.array_equal(fhew.decrypt(switch(product, key), fsk), x * y % 8)
    lwe = switch(ct, key)
    assert lwe.bits == BITS and lwe.shape == (COUNT,) and lwe.context is fhew


def test_signs_comparisons_and_a_table_at_the_limits_and_on_equal_values(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    a = np.array([0, 7, 0, 7, 3, 3, 7, 0, 1, 2, 4, 6, 5, 5, 0, 7])
    b = np.array([0, 7, 7, 0, 3, 4, 6, 1, 2, 1, 4, 5, 6, 5, 1, 6])
    ca, cb = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    greater = switch.compare(ca, cb, key)
    assert greater.bits == 1 and np.array_equal(fhew.decrypt(greater, fsk), (a > b).astype(int))
    assert np.array_equal(fhew.decrypt(switch.compare(ca, 3, key), fsk), (a > 3).astype(int))
    assert np.array_equal(fhew.decrypt(switch.compare(ca, 0, key), fsk), (a > 0).astype(int))
    signed = np.array([-7, -1, 0, 1, 7, -3, 3, 0, -4, 4, -6, 6, -2, 2, -5, 5])
    assert np.array_equal(fhew.decrypt(switch.sign(ctx.encrypt(signed, keys), key), fsk), (signed > 0).astype(int))
    table = [5, 0, 7, 1, 1, 6, 2, 3]
    assert np.array_equal(fhew.decrypt(switch.lut(ca, table, key), fsk), np.array(table)[a])
    assert np.array_equal(fhew.decrypt(switch.lut(ca, lambda m: m > 4, key, out_bits=1), fsk), (a > 4).astype(int))


def test_coefficients_of_an_odd_t_switch_with_the_width_given(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    with pytest.raises(ValueError, match="t = 2 holds no FHEW integer"):
        rf.switching.BgvToFhew(type(ctx)(2**12, plain_modulus=2), fhew)
    coefficients = rf.switching.BgvToFhew(ctx, fhew, bits=BITS)
    values = np.array([0, 7, 3, -7, -1, 5])
    ct = ctx.encrypt(ctx.encode_coefficients(values % T), keys)
    ring_key = coefficients.keygen(sk, fsk)
    assert np.array_equal(fhew.decrypt(coefficients(ct, ring_key, count=3), fsk), values[:3])
    assert np.array_equal(fhew.decrypt(coefficients.sign(ct, ring_key, count=6), fsk), (values > 0).astype(int))


def test_the_key_travels_as_bytes_and_crafted_blobs_are_refused(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    data = key.to_bytes(mac_key=b"k" * 32)
    loaded = switch.load_key(data, mac_key=b"k" * 32)
    x = np.arange(COUNT) % 8
    assert np.array_equal(fhew.decrypt(switch(ctx.encrypt(x, keys), loaded), fsk), x)
    with pytest.raises(ValueError, match="MAC does not verify"):
        switch.load_key(data, mac_key=b"x" * 32)
    with pytest.raises(ValueError, match="not a ringfire BGV-slots-to-FHEW key"):
        switch.load_key(b"RFBGVSL0" + data[8:])
    with pytest.raises(ValueError, match="declare .* bytes behind a 24-byte head; it holds"):
        switch.load_key(data[:-1])
    swapped = data[:8] + data[16:24] + data[8:16] + data[24:]          # the lengths traded: parts misread
    with pytest.raises(ValueError):
        switch.load_key(swapped)
    with pytest.raises(TypeError, match="bytes of BgvSlotsToFhewKey.to_bytes"):
        switch.load_key("key")


def test_what_cannot_be_switched_is_refused_by_name(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    scheme = type(ctx)
    with pytest.raises(ValueError, match="t=16 cannot batch N=4096 slots.*BgvToFhew reads them"):
        rf.switching.BgvSlotsToFhew(scheme(2**12, plain_modulus=16), fhew, count=4, bits=3)
    for count in (0, 3, ctx.slots, True, 2.0):
        with pytest.raises(ValueError, match="count must be a power of two from 1 to N / 2 = 4096"):
            rf.switching.BgvSlotsToFhew(ctx, fhew, count=count, bits=3)
    with pytest.raises(ValueError, match="too small to hold 5-bit FHEW integers"):
        rf.switching.BgvSlotsToFhew(ctx, fhew, count=4, bits=5)
    with pytest.raises(TypeError, match="ringfire.bgv.Context or ringfire.bfv.Context first"):
        rf.switching.BgvSlotsToFhew(rf.ckks.Context(2**12, [40, 40], 40), fhew, count=4, bits=3)
    ct = ctx.encrypt(np.arange(COUNT) % 8, keys)
    with pytest.raises(ValueError, match="at level 0: the slot map needs a level above it"):
        switch(ct.mod_reduce(0), key)
    with pytest.raises(ValueError, match="3 polynomials: relinearize it first"):
        switch(ctx.evaluator(keys).multiply(ct, ct), key)
    with pytest.raises(TypeError, match="BgvSlotsToFhewKey from keygen"):
        switch(ct, key.switch)
    with pytest.raises(ValueError, match="compare reads integers in \\[0, 8\\)"):
        switch.compare(ct, 8, key)
    with pytest.raises(TypeError, match="a ciphertext or an int second, got ndarray"):
        switch.compare(ct, np.ones(2), key)
    other = scheme(2**13, plain_modulus=T)
    other_sk, other_keys = other.keygen()
    with pytest.raises(ValueError, match="belongs to another"):
        switch(other.encrypt([1], other_keys), key)
    with pytest.raises(ValueError, match="context's secret key"):
        switch.keygen(other_sk, fsk)
    # Too little budget for the map: the estimate after it, with the figures, not a wrong read.
    tired = ct
    for _ in range(5):
        tired = tired * 30000                                           # 15 bits of error each, no level dropped
    with pytest.raises(ValueError, match="the slot map leaves .* bits of noise budget .* needs about 47 bits"):
        switch(tired, key)


def test_the_docs_snippet_runs_and_prints_what_it_says(capsys):
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "switching.md").read_text()
    snippet = text.split("## From BGV and BFV slots")[1].split("```python\n")[1].split("```")[0]
    exec(compile(snippet, "docs/switching.md", "exec"), {})
    assert capsys.readouterr().out.split("\n")[:3] == ["[6 1 0 6 7 5 6 0]", "[1 0 0 0 1 1 1 1]", "[4 6 7 5 0 2 1 3]"]


def test_the_staged_map_lands_slots_at_bit_reversed_coefficients_one_level_a_stage(fhew_std128):
    fhew, fsk = fhew_std128
    ctx = rf.bgv.Context(2**14, plain_modulus=T, insecure_deterministic_seed=bytes(32))   # 8 levels
    sk, keys = ctx.keygen()
    rng = np.random.default_rng(3)
    x = rng.integers(0, T, ctx.slots)
    ct = ctx.encrypt(x, keys)
    for count in (2, 16, 128):
        staged = rf.switching.SlotsToCoefficients(ctx, count, "staged")
        stages = count.bit_length() - 1
        assert staged.levels == stages and len(staged.rotations) == 2 * stages + 13 - stages
        reversed_bits = [int(format(j, f"0{stages}b")[::-1], 2) for j in range(count)]
        assert np.array_equal(staged.positions, np.array(reversed_bits) * (ctx.poly_degree // count))
        out = staged(ct.mod_reduce(stages + 1), staged.galois_keys(sk), 5)
        want = np.zeros(ctx.poly_degree, dtype=np.int64)
        want[staged.positions] = 5 * x[:count] % T
        assert np.array_equal(ctx.decrypt_coefficients(out, sk, signed=False), want), count
        assert out.level == 1 and ctx.noise_budget(out, sk) > 40
    with pytest.raises(ValueError, match="takes 7 levels and ends above level 0; the ciphertext is at level 3"):
        staged(ct.mod_reduce(3), staged.galois_keys(sk), 1)
    # Through to FHEW: the slots' order comes back whatever coefficient each landed at.
    switch = rf.switching.BgvSlotsToFhew(ctx, fhew, count=COUNT, bits=BITS, method="staged")
    key = switch.keygen(sk, fsk)
    a = np.array([0, 7, 0, 7, 3, 3, 7, 0, 1, 2, 4, 6, 5, 5, 0, 7])
    b = np.array([0, 7, 7, 0, 3, 4, 6, 1, 2, 1, 4, 5, 6, 5, 1, 6])
    ca = ctx.encrypt(a, keys)
    assert switch.working_level(ca) == 5 and key.galois.level == 5
    assert np.array_equal(fhew.decrypt(switch(ca, key), fsk), a)
    assert np.array_equal(fhew.decrypt(switch.compare(ca, ctx.encrypt(b, keys), key), fsk), (a > b).astype(int))
    with pytest.raises(ValueError, match="staged slot map of 16 slots runs at level 5 .* the ciphertext is at level 4"):
        switch(ca.mod_reduce(4), key)
    with pytest.raises(ValueError, match="a staged map of 16 slots takes 5 levels; this context has 2: "
                                         "method='dense'"):
        rf.switching.SlotsToCoefficients(rf.bgv.Context(2**13, plain_modulus=T), 16, "staged")
    with pytest.raises(ValueError, match="method must be one of"):
        rf.switching.SlotsToCoefficients(ctx, 16, "fast")
    assert rf.switching.SlotsToCoefficients(ctx, 128).method == "dense"               # auto: staged from 1024


def test_max_and_min_per_slot_read_one_bit_wider_and_warn_where_that_is_too_wide(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    a = np.array([0, 7, 0, 7, 3, 3, 7, 0, 1, 2, 4, 6, 5, 5, 0, 7])
    b = np.array([0, 7, 7, 0, 3, 4, 6, 1, 2, 1, 4, 5, 6, 5, 1, 6])
    ca, cb = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    # STD128 reads 4-bit integers wrong about 2 % of the time: it says so.
    with pytest.warns(RuntimeWarning, match="read wrong with probability"):
        rf.switching.BgvSlotsToFhew(ctx, fhew, count=COUNT, bits=BITS).max(ca, cb, key)
    lut = rf.tfhe.Context("STD128_LUT")
    lut_sk = lut.keygen(insecure_deterministic_seed=5)
    wide = rf.switching.BgvSlotsToFhew(ctx, lut, count=COUNT, bits=BITS)
    wide_key = wide.keygen(sk, lut_sk)
    larger, smaller = wide.max(ca, cb, wide_key), wide.min(ca, cb, wide_key)
    assert larger.bits == BITS + 1 and smaller.bits == BITS + 1
    assert np.array_equal(lut.decrypt(larger, lut_sk), np.maximum(a, b))
    assert np.array_equal(lut.decrypt(smaller, lut_sk), np.minimum(a, b))
    assert np.array_equal(lut.decrypt(wide.max(ca, 4, wide_key), lut_sk), np.maximum(a, 4))
    assert np.array_equal(lut.decrypt(wide.min(ca, 0, wide_key), lut_sk), np.zeros(COUNT))
    with pytest.raises(ValueError, match="max and min read integers in \\[0, 8\\)"):
        wide.max(ca, 8, wide_key)
    with pytest.raises(TypeError, match="a ciphertext or an int second, got list"):
        wide.min(ca, [1], wide_key)
