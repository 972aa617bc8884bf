"""Scheme switching from BGV and BFV (ringfire.switching.BgvToFhew): coefficients mod t = 2^k
to FHEW integers, checked against NumPy's integers mod t (the values, their sums and
polynomial products, comparisons and a lookup), the errors against the noise model, and
every refusal by its message."""

import pathlib
import warnings

import numpy as np
import pytest

import ringfire as rf

COUNT = 40  # crosses every residue mod N / N' = 4, the ring switches' classes
# t = 16 on STD128 reads all four bits wrong with probability 1e-5 (its 3-bit tables' own
# figure), which the switch says; the values here are checked instead.
pytestmark = pytest.mark.filterwarnings("ignore:.*switched coefficient is read wrong")


@pytest.fixture(scope="module")
def fhew(fhew_std128):
    return fhew_std128


@pytest.fixture(scope="module", params=["bgv", "bfv"])
def setup(request, fhew):
    fhew, fsk = fhew
    ctx = getattr(rf, request.param).Context(2**12, plain_modulus=16, insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    switch = rf.switching.BgvToFhew(ctx, fhew)
    return ctx, sk, keys, fhew, fsk, switch, switch.keygen(sk, fsk)


def encrypt(ctx, keys, values):
    return ctx.encrypt(ctx.encode_coefficients(np.asarray(values)), keys)


def phase_errors(fhew, fsk, lwe, values):
    q = fhew.params.lwe_modulus
    phases = fsk._native.phases(lwe.data)[0].astype(np.int64)
    return (phases - np.asarray(values) * (q // 16) + q // 2) % q - q // 2


def test_coefficients_and_what_is_computed_on_them_switch_to_their_integers(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 16, COUNT), rng.integers(0, 16, COUNT)
    ca, cb = encrypt(ctx, keys, a), encrypt(ctx, keys, b)
    lwe = switch(ca, key, count=COUNT)
    assert lwe.shape == (COUNT,) and lwe.bits == 3 == switch.bits
    err = phase_errors(fhew, fsk, lwe, a)  # the whole circle mod 16: the padding bit is the 4th
    assert np.abs(err).max() < fhew.params.lwe_modulus / 32
    assert 0.25 < np.var(err) / lwe.variance < 3  # 40 samples of a chi-square
    # Exact arithmetic mod 16 first: a constant product and a sum, and a polynomial product
    # (another correction factor, a level lower), each against NumPy.
    full = np.convolve(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # values of 8 and more set the padding bit: shown mod 8
        for ct, expected in ((ca * 3 + cb, 3 * a + b), (ca * cb, full[:COUNT])):
            lwe = switch(ct, key, count=COUNT)
            assert np.array_equal(fhew.decrypt(lwe, fsk), np.asarray(expected) % 16 % 8)
            err = phase_errors(fhew, fsk, lwe, np.asarray(expected) % 16)   # all 4 bits, through the error
            assert np.abs(err).max() < fhew.params.lwe_modulus / 32


def test_comparisons_signs_and_a_lookup_after_the_switch(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    edges = np.array([0, 7, 0, 7, 3, 3, 7, 0])                       # the range's limits, and equal values
    a = np.concatenate([edges, np.arange(8).repeat(4)])[:COUNT]
    b = np.concatenate([edges[::-1], np.tile(np.arange(8), 4)])[:COUNT]
    ca, cb = encrypt(ctx, keys, a), encrypt(ctx, keys, b)
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        greater = switch.compare(ca, cb, key, count=COUNT)
    assert greater.bits == 1 and np.array_equal(fhew.decrypt(greater, fsk), (a > b).astype(int))
    signed = np.array([-7, -1, 0, 1, 7, -3, 3, 0])
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        positive = switch.sign(encrypt(ctx, keys, signed % 16), key, count=len(signed))
    assert np.array_equal(fhew.decrypt(positive, fsk), (signed > 0).astype(int))
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        above = switch.compare(ca, 3, key, count=COUNT)             # every coefficient against 3
    assert np.array_equal(fhew.decrypt(above, fsk), (a > 3).astype(int))
    table = fhew.lut(lambda m: (5 * m + 3) % 8, bits=3)
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        looked_up = fhew.apply(table, switch(ca, key, count=COUNT))
    assert np.array_equal(fhew.decrypt(looked_up, fsk), (5 * a + 3) % 8)


def test_the_switching_key_travels_as_bytes(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    loaded = switch.load_key(key.to_bytes(mac_key=b"k" * 32), mac_key=b"k" * 32)
    values = np.arange(COUNT) % 8
    assert np.array_equal(fhew.decrypt(switch(encrypt(ctx, keys, values), loaded, count=COUNT), fsk), values)
    with pytest.raises(ValueError, match="MAC does not verify"):
        switch.load_key(key.to_bytes(mac_key=b"k" * 32), mac_key=b"x" * 32)


def test_what_cannot_be_switched_is_refused_by_name(setup):
    ctx, sk, keys, fhew, fsk, switch, key = setup
    scheme = type(ctx)
    with pytest.raises(ValueError, match="t = 65537 is not a power of two: say how wide the integers FHEW reads are "
                                         "\\(bits=, at most 9\\)"):
        rf.switching.BgvToFhew(scheme(2**12, plain_modulus=65537), fhew)
    with pytest.raises(ValueError, match="t = 65537 is too small to hold 5-bit FHEW integers.*t >= 2\\^18"):
        rf.switching.BgvToFhew(scheme(2**12, plain_modulus=65537), fhew, bits=5)
    with pytest.raises(ValueError, match="t = 16 holds 3-bit FHEW integers .* not 2: leave bits out"):
        rf.switching.BgvToFhew(ctx, fhew, bits=2)
    with pytest.raises(ValueError, match="t = 4096 makes 11-bit FHEW integers.*at most 9 bits \\(t <= 1024\\)"):
        rf.switching.BgvToFhew(scheme(2**12, plain_modulus=2**12), fhew)
    with pytest.raises(TypeError, match="ringfire.bgv.Context or ringfire.bfv.Context first"):
        rf.switching.BgvToFhew(rf.ckks.Context(2**12, [40, 40], 40), fhew)
    with pytest.raises(TypeError, match="ringfire.tfhe.Context second"):
        rf.switching.BgvToFhew(ctx, ctx)
    other = scheme(2**12, plain_modulus=16)
    other_sk, other_keys = other.keygen()
    for wrong in (other_sk, None):
        with pytest.raises(ValueError, match=f"expected the {ctx.scheme.upper()} context's secret key"):
            switch.keygen(wrong, fsk)
    with pytest.raises(ValueError, match="belongs to another"):
        switch(encrypt(other, other_keys, [1]), key, count=1)
    ct = encrypt(ctx, keys, [1, 2])
    for count in (0, ctx.poly_degree + 1, True, 2.0):
        with pytest.raises(ValueError, match="count must be an int"):
            switch(ct, key, count=count)
    with pytest.raises(ValueError, match="3 polynomials: relinearize it first"):
        switch(ctx.evaluator(keys).multiply(ct, ct), key, count=2)
    with pytest.raises(TypeError, match="a ciphertext or an int second, got ndarray"):
        switch.compare(ct, np.ones(2), key, count=2)
    with pytest.raises(TypeError, match="RingSwitchKey"):
        switch(ct, b"key", count=2)
    with pytest.raises(TypeError, match="expected a ringfire"):
        switch(np.ones(4), key, count=2)


def test_the_docs_snippet_runs_and_prints_what_it_says(capsys):
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "switching.md").read_text()
    snippet = text.split("## From BGV and BFV")[1].split("```python\n")[1].split("```")[0]
    exec(compile(snippet, "docs/switching.md", "exec"), {})
    assert capsys.readouterr().out.split("\n")[:3] == ["[7 3 2 7]", "[1 0 0 0]", "[1 1 4 1]"]


def test_a_wide_t_is_switched_with_a_warning_of_how_often_it_reads_wrong(fhew):
    fhew, fsk = fhew
    ctx = rf.bgv.Context(2**12, plain_modulus=64)
    sk, keys = ctx.keygen()
    switch = rf.switching.BgvToFhew(ctx, fhew)
    with pytest.warns(RuntimeWarning, match="read wrong with probability 0.2.*half-width of 16.*STD128_LUT"):
        switch(encrypt(ctx, keys, np.arange(8)), switch.keygen(sk, fsk), count=8)
