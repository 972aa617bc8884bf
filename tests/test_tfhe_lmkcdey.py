"""FHEW with LMKCDEY's blind rotation (automorphisms instead of GINX's pair of keys per
coefficient): every gate and table entry on a toy set against Python's operators, gates at
128-bit security, the noise model (measured variance, counted failures, the expected count of
automorphisms against a simulation of the walk), keys half of GINX's that travel and load, and
GINX keys refused for its parameters."""

import dataclasses
import warnings

import numpy as np
import pytest

import ringfire as rf

GATES = {"and": np.logical_and, "or": np.logical_or, "nand": lambda x, y: ~(x & y), "xor": np.logical_xor}


def lmkcdey(name, window=4):
    """An insecure preset with LMKCDEY's blind rotation, and a key made for it."""
    params = dataclasses.replace(rf.tfhe.PRESETS[name], name=f"{name}_LMKCDEY", automorphism_window=window)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.tfhe.Context(params, insecure=True)
        return ctx, ctx.keygen(insecure_deterministic_seed=3)


@pytest.fixture(scope="module")
def toy():
    return lmkcdey("TOY")


@pytest.fixture(scope="module")
def std128():
    ctx = rf.tfhe.Context.preset("STD128_LMKCDEY")
    return ctx, ctx.keygen()


@pytest.mark.parametrize("gate", sorted(GATES))
def test_every_gate_on_every_input_toy(toy, gate):
    ctx, sk = toy
    x = np.array([0, 0, 1, 1] * 8, bool)
    y = np.array([0, 1, 0, 1] * 8, bool)
    assert (ctx.decrypt(ctx.gate(gate, ctx.encrypt(x, sk), ctx.encrypt(y, sk)), sk) == GATES[gate](x, y)).all()


@pytest.mark.parametrize("bits", [1, 2])
def test_every_table_entry_toy(toy, bits):
    ctx, sk = toy
    p = 1 << bits
    table = np.random.default_rng(bits).integers(0, p, p)
    got = ctx.decrypt(ctx.lut(table, bits=bits)(ctx.encrypt(np.tile(np.arange(p), 2), sk, bits=bits)), sk)
    assert (got == np.tile(table, 2)).all()


@pytest.mark.parametrize("bits,count", [(1, 4), (2, 4), (2, 2)])
def test_many_tables_from_one_exact_rotation_toy(toy, bits, count):
    """Several tables read consecutive coefficients of a phase on a grid of their count: the
    rotation runs exact there (odd exponents would move it off the grid and read the
    neighbouring table, as a first version did for every input)."""
    ctx, sk = toy
    p = 1 << bits
    tables = np.random.default_rng(bits * count).integers(0, p, (count, p))
    x = np.tile(np.arange(p), 4)
    outs = ctx.lut_many([lambda m, t=t: int(t[m]) for t in tables], bits=bits)(ctx.encrypt(x, sk, bits=bits))
    for table, out in zip(tables, outs):
        assert (ctx.decrypt(out, sk) == table[x]).all()
    assert ctx.failure_probability("lut_many", bits=bits, tables=count) < 1e-9


def test_gates_at_128_bits_with_half_the_blind_rotation_key(std128):
    ctx, sk = std128
    assert ctx.params.security == 128 and "ePrint 2022/198" in ctx.params.source
    assert ctx.failure_probability("nand") < 2.0 ** -64 and ctx.failure_probability("xor") < 2.0 ** -64
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 2, 48).astype(bool), rng.integers(0, 2, 48).astype(bool)
    a, b = ctx.encrypt(x, sk), ctx.encrypt(y, sk)
    assert (ctx.decrypt(ctx.nand(a, b), sk) == ~(x & y)).all()
    assert (ctx.decrypt(a ^ b, sk) == x ^ y).all()
    ginx = rf.tfhe.Context.preset("STD128")
    ginx.keygen()
    four = ctx.lut_many([lambda m, k=k: (m + k) % 4 for k in range(4)], bits=2)
    y = rng.integers(0, 4, 32)
    with pytest.warns(RuntimeWarning, match="lut_many"):  # 2^-28 per element, as at STD128: exact
        outs = four(ctx.encrypt(y, sk, bits=2))
    for k, out in enumerate(outs):
        assert (ctx.decrypt(out, sk) == (y + k) % 4).all()
    ours, theirs = ctx.evaluation_key_bytes["bootstrap"], ginx.evaluation_key_bytes["bootstrap"]
    assert 0.5 <= ours / theirs < 0.51  # n keys of 2 d_g rows (and 11 small ones) against 2n
    assert len(ctx.save_evaluation_keys()) < len(ginx.save_evaluation_keys()) * 0.8


def test_keys_travel_and_ginx_keys_are_refused(toy):
    ctx, sk = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = rf.tfhe.Context(ctx.params, insecure=True)
        ginx = rf.tfhe.Context.preset("TOY", insecure=True)
        ginx.keygen()
    server.load_evaluation_keys(ctx.save_evaluation_keys())
    assert server.key_id == ctx.key_id
    x, y = np.array([0, 1, 1, 0], bool), np.array([0, 0, 1, 1], bool)
    out = server.load(ctx.encrypt(x, sk).to_bytes()) & server.load(ctx.encrypt(y, sk).to_bytes())
    assert (ctx.decrypt(ctx.load(out.to_bytes()), sk) == (x & y)).all()
    with pytest.raises(ValueError, match="different tfhe parameters"):
        server.load_evaluation_keys(ginx.save_evaluation_keys())
    with pytest.raises(ValueError, match="automorphism_window"):
        dataclasses.replace(rf.tfhe.PRESETS["TOY"], automorphism_window=256).native()


def _simulated_automorphisms(params, trials, rng):
    """The blind rotation's walk over the classes of +-5^j (automorphism_key.h), counted."""
    N, n, w = params.ring_dimension, params.lwe_dimension, params.automorphism_window
    class_of, x = {}, 1
    for j in range(N // 2):
        class_of[x], class_of[2 * N - x] = j, N // 2 + j
        x = x * 5 % (2 * N)
    counts = []
    for _ in range(trials):
        occupied = {class_of[int(a)] for a in rng.integers(0, 2 * N, n) | 1}
        count = pending = 0
        for base in (N // 2, 0):
            for j in range(N // 2 - 1, 0, -1):
                if base + j in occupied:
                    count, pending = count + (pending > 0), 0
                pending += 1
                if pending == w or j == 1:
                    count, pending = count + 1, 0
            count += base > 0
        counts.append(count)
    return np.mean(counts)


@pytest.mark.parametrize("window", [1, 3, 10])
def test_the_expected_automorphism_count_matches_the_walk(window):
    params = dataclasses.replace(rf.tfhe.PRESETS["STD128"], automorphism_window=window)
    simulated = _simulated_automorphisms(params, 60, np.random.default_rng(window))
    assert abs(params.automorphism_count() - simulated) < 0.01 * simulated + 2


@pytest.fixture(scope="module")
def noisy():
    return lmkcdey("NOISY")


def test_measured_error_variance_matches_the_model(noisy):
    """A bootstrap's output error (the automorphisms' key switches a quarter of it here)."""
    ctx, sk = noisy
    q = ctx.params.lwe_modulus
    ones = ctx.encrypt(np.ones(800, bool), sk)
    phases = sk._native.phases(ctx.and_(ones, ones).data)[0].astype(np.int64)
    errors = (phases - q // 8 + q // 2) % q - q // 2
    assert 0.8 < errors.var() / ctx.params.bootstrap_variance() < 1.25, ctx.params.noise_terms()


@pytest.fixture(scope="module")
def noisy_inputs(noisy):
    """Gate inputs as the model assumes them, bootstrapped; their values read back so that
    only the gate's own failures count."""
    ctx, sk = noisy
    rng = np.random.default_rng(9)
    one = ctx.trivial(np.ones(4000, bool))
    ins = [ctx.and_(ctx.encrypt(rng.integers(0, 2, 4000).astype(bool), sk), one) for _ in range(3)]
    return ins, [ctx.decrypt(c, sk) for c in ins]


def test_many_table_outputs_carry_the_exact_rotations_variance(noisy):
    """Many-LUT's inputs are all even, so its exact rotation runs 2n RGSW products: its outputs'
    measured error variance matches bootstrap_variance(exact=True), not the plain one."""
    ctx, sk = noisy
    q = ctx.params.lwe_modulus
    two = ctx.lut_many([lambda m: 1, lambda m: 1], bits=1)  # both tables: the value 1, at q/4
    outs = two(ctx.encrypt(np.random.default_rng(4).integers(0, 2, 800), sk, bits=1))
    model = ctx.params.bootstrap_variance(exact=True)
    assert model > 1.15 * ctx.params.bootstrap_variance() and outs[0].variance == model
    for out in outs:
        phases = sk._native.phases(out.data)[0].astype(np.int64)
        errors = (phases - q // 4 + q // 2) % q - q // 2
        assert 0.8 < errors.var() / model < 1.25, (errors.var(), model)


@pytest.mark.parametrize("gate", ["nand", "xor", "maj"])
def test_counted_gate_failures_match_the_predicted_rate(noisy, noisy_inputs, gate):
    """The model's input error includes the odd rounding (switch_variance): failures counted
    on a deliberately noisy set land within a factor of two of the prediction."""
    ctx, sk = noisy
    (ins, (x, y, z)), trials = noisy_inputs, 4000
    p_fail = ctx.failure_probability(gate)
    assert 0.005 < p_fail < 0.1
    if gate == "maj":
        got, want = ctx.maj(*ins), (x.astype(int) + y + z) >= 2
    else:
        got, want = ctx.gate(gate, ins[0], ins[1]), GATES[gate](x, y)
    failures = int((ctx.decrypt(got, sk) != want).sum())
    assert p_fail * trials / 2 <= failures <= p_fail * trials * 2, (failures, p_fail * trials)
