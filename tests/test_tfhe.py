"""FHEW/TFHE (ringfire.tfhe): exhaustive gates and lookup tables on the toy
set, every gate at 128-bit security, the noise model against measured errors
and counted failures, the 32-bit NTT against schoolbook products, and the
errors wrong inputs get."""

import pickle
import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core

BOOL_GATES = {
    "and": lambda x, y: x & y, "or": lambda x, y: x | y, "nand": lambda x, y: ~(x & y),
    "nor": lambda x, y: ~(x | y), "xor": lambda x, y: x ^ y, "xnor": lambda x, y: ~(x ^ y),
}


def instruction_sets():
    """Every kernel path this build and CPU can run (scalar is always there)."""
    best = _core.tfhe_best_isa()
    return {"scalar": ["scalar"], "avx2": ["scalar", "avx2"], "avx512": ["scalar", "avx2", "avx512"]}[best]


def insecure(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.tfhe.Context.preset(name, insecure=True)
        sk = ctx.keygen(insecure_deterministic_seed=7)
    return ctx, sk


@pytest.fixture(scope="module")
def toy():
    return insecure("TOY")


@pytest.fixture(scope="module")
def std128():
    ctx = rf.tfhe.Context.preset("STD128")
    return ctx, ctx.keygen()


# ---- the 32-bit NTT ------------------------------------------------------------------

@pytest.mark.parametrize("n", [64, 128, 1024, 2048])
def test_ntt32_vector_path_matches_scalar_and_multiplies_negacyclically(n):
    q = _core.find_ntt_primes(27, 1, n)[0]
    ntt = _core.Ntt32(n, q)
    rng = np.random.default_rng(n)
    a, b = rng.integers(0, q, n, dtype=np.uint32), rng.integers(0, q, n, dtype=np.uint32)
    fa, fa_ref, fb = a.copy(), a.copy(), b.copy()
    ntt.forward(fa), ntt.forward(fa_ref, scalar=True), ntt.forward(fb)
    assert (fa == fa_ref).all() and fa.max() < q
    for isa in instruction_sets():  # every path: the same evaluation layout, the same inverse
        other = _core.Ntt32(n, q, isa)
        fo = a.copy()
        other.forward(fo)
        assert (fo == fa_ref).all(), isa
        other.inverse(fo)
        assert (fo == a).all(), isa
    prod = (fa.astype(object) * fb.astype(object) % q).astype(np.uint32)
    prod_ref = prod.copy()
    ntt.inverse(prod), ntt.inverse(prod_ref, scalar=True)
    assert (prod == prod_ref).all()
    full = np.convolve(a.astype(object), b.astype(object))
    want = [(full[i] - (full[i + n] if i + n < len(full) else 0)) % q for i in range(n)]
    assert [int(v) for v in prod] == want
    back = fa.copy()
    ntt.inverse(back)
    assert (back == a).all()


def test_bootstraps_are_bit_identical_on_every_instruction_set():
    params = rf.tfhe.PRESETS["TOY"].native()
    outputs = {}
    for isa in instruction_sets():
        prng = _core.Prng.from_seed(bytes(32))
        key = _core.TfheSecretKey(params, prng)
        boot = _core.TfheBootstrapper(key, prng, isa)
        assert boot.isa == isa
        cts = key.encrypt(np.arange(0, params.lwe_modulus, 37, dtype=np.uint32), _core.Prng.from_seed(bytes([1] * 32)))
        tv = np.arange(params.ring_dimension, dtype=np.uint32) * 977 % params.ring_modulus
        outputs[isa] = boot.bootstrap(cts, tv)
    first = next(iter(outputs.values()))
    assert all((out == first).all() for out in outputs.values())


def test_ntt32_refuses_what_it_cannot_transform():
    with pytest.raises(ValueError, match="power of two"):
        _core.Ntt32(96, 97)
    with pytest.raises(ValueError, match="prime below 2\\^29"):
        _core.Ntt32(1024, (1 << 30) + 1)
    with pytest.raises(ValueError, match="unknown instruction set"):
        _core.Ntt32(1024, _core.find_ntt_primes(27, 1, 1024)[0], "avx1024")


# ---- gates -------------------------------------------------------------------------

@pytest.mark.parametrize("gate", sorted(BOOL_GATES))
def test_every_gate_on_every_input_toy(toy, gate):
    ctx, sk = toy
    x = np.array([0, 0, 1, 1] * 16, bool)
    y = np.array([0, 1, 0, 1] * 16, bool)
    got = ctx.decrypt(ctx.gate(gate, ctx.encrypt(x, sk), ctx.encrypt(y, sk)), sk)
    assert (got == BOOL_GATES[gate](x, y)).all()


def test_gates_compose_and_operators_match_numpy_toy(toy):
    ctx, sk = toy
    rng = np.random.default_rng(1)
    x, y, s = (rng.integers(0, 2, (4, 8)).astype(bool) for _ in range(3))
    a, b, c = ctx.encrypt(x, sk), ctx.encrypt(y, sk), ctx.encrypt(s, sk)
    out = ~(a & b) ^ (a | 1)  # constants become noiseless ciphertexts
    assert out.shape == (4, 8)
    assert (ctx.decrypt(out, sk) == (~(x & y) ^ (x | True))).all()
    assert (ctx.decrypt(ctx.mux(c, a, b), sk) == np.where(s, x, y)).all()
    assert (ctx.decrypt(~a, sk) == ~x).all()
    assert (ctx.decrypt(a[1:3, ::2], sk) == x[1:3, ::2]).all()


@pytest.mark.parametrize("gate", sorted(BOOL_GATES))
def test_every_gate_on_every_input_std128(std128, gate):
    ctx, sk = std128
    x = np.array([0, 0, 1, 1], bool)
    y = np.array([0, 1, 0, 1], bool)
    got = ctx.decrypt(ctx.gate(gate, ctx.encrypt(x, sk), ctx.encrypt(y, sk)), sk)
    assert (got == BOOL_GATES[gate](x, y)).all()


def test_std128_claims_its_source_and_a_gate_failure_probability_below_2_to_minus_64(std128):
    ctx, _ = std128
    assert ctx.params.security == 128 and "OpenFHE" in ctx.params.source
    for gate in BOOL_GATES:
        assert ctx.failure_probability(gate) < 2.0 ** -64
    assert sum(ctx.evaluation_key_bytes.values()) < 150e6


# ---- lookup tables -----------------------------------------------------------------

@pytest.mark.parametrize("bits", [1, 2, 3, 4])
def test_every_table_entry_toy(toy, bits):
    ctx, sk = toy
    assert ctx.failure_probability("lut", bits=bits) < 1e-6
    p = 1 << bits
    rng = np.random.default_rng(bits)
    table = rng.integers(0, p, p)
    x = ctx.encrypt(np.tile(np.arange(p), 3), sk, bits=bits)
    got = ctx.decrypt(ctx.lut(table, bits=bits)(x), sk)
    assert (got == np.tile(table, 3)).all()


def test_tables_change_width_and_integers_add_before_a_table(toy):
    ctx, sk = toy
    x = ctx.encrypt(np.arange(4), sk, bits=2)
    y = ctx.encrypt(np.array([3, 2, 1, 0]), sk, bits=2)
    widen = ctx.lut(lambda m: 5 * m, bits=2, out_bits=4)
    assert (ctx.decrypt(widen(x), sk) == 5 * np.arange(4)).all()
    s = ctx.encrypt(np.array([0, 1, 2, 0]), sk, bits=3) + ctx.encrypt(np.array([1, 1, 2, 7]), sk, bits=3)
    assert (ctx.decrypt(s, sk) == [1, 2, 4, 7]).all()
    assert (ctx.decrypt(x + y, sk) == 3).all()
    assert (ctx.decrypt(2 * x[:2] + 1, sk) == [1, 3]).all()
    assert (ctx.decrypt(3 - x, sk) == [3, 2, 1, 0]).all()
    with pytest.warns(RuntimeWarning, match="padding bit"):
        ctx.decrypt(x - 1, sk)  # 0 - 1 goes below zero


def test_bootstrap_many_refreshes_and_applies_tables_across_shapes(toy):
    ctx, sk = toy
    a, b = ctx.encrypt([[1, 0], [0, 1]], sk), ctx.encrypt([1, 1, 0], sk)
    ra, rb = ctx.bootstrap_many([a, b])
    assert ra.shape == (2, 2) and (ctx.decrypt(ra, sk) == [[1, 0], [0, 1]]).all()
    assert (ctx.decrypt(rb, sk) == [1, 1, 0]).all()
    table = ctx.lut(lambda m: 3 - m, bits=2)
    x, y = ctx.encrypt([0, 1], sk, bits=2), ctx.encrypt([[2], [3]], sk, bits=2)
    tx, ty = ctx.bootstrap_many([x, y], table)
    assert (ctx.decrypt(tx, sk) == [3, 2]).all() and (ctx.decrypt(ty, sk) == [[1], [0]]).all()
    with pytest.raises(ValueError, match="reads 2-bit"):
        ctx.bootstrap_many([ctx.encrypt([1], sk, bits=3)], table)


@pytest.mark.filterwarnings("ignore:.*tfhe.lut_many")  # (3, 2) fails with probability 3e-12: above the warning threshold
@pytest.mark.parametrize("bits,count", [(1, 2), (2, 2), (2, 3), (3, 2)])
def test_many_tables_from_one_bootstrap_match_plaintext_tables_toy(toy, bits, count):
    ctx, sk = toy
    assert ctx.failure_probability("lut_many", bits=bits, tables=count) < 1e-6
    p = 1 << bits
    rng = np.random.default_rng(10 * bits + count)
    tables = [rng.integers(0, p, p) for _ in range(count)]
    messages = np.tile(np.arange(p), 3).reshape(3, p)
    many = ctx.lut_many(tables, bits=bits)
    assert len(many) == count and many.group == 1 << (count - 1).bit_length()
    outs = many(ctx.encrypt(messages, sk, bits=bits))
    assert len(outs) == count
    for table, out in zip(tables, outs):
        assert out.shape == messages.shape and out.bits == bits
        assert (ctx.decrypt(out, sk) == table[messages]).all()
    # The outputs are fresh bootstraps: a table on them is as safe as on any other.
    assert (ctx.decrypt(ctx.lut(lambda m: p - 1 - m, bits=bits)(outs[0]), sk) == p - 1 - tables[0][messages]).all()


def test_many_tables_fail_as_often_as_predicted(toy):
    """Rounding the input to a multiple of the table count adds the error the model
    says: eight 3-bit tables on the TOY set fail countably often (a single table
    there fails with probability 2^-85), within 2x of the prediction."""
    ctx, sk = toy
    bits, count, trials = 3, 8, 2000
    p_fail = ctx.failure_probability("lut_many", bits=bits, tables=count)
    assert 0.01 < p_fail < 0.1 and ctx.failure_probability("lut", bits=bits) < 1e-20
    rng = np.random.default_rng(8)
    x = ctx.lut(lambda m: m, bits=bits)(ctx.encrypt(rng.integers(0, 8, trials), sk, bits=bits))  # bootstrapped
    m = ctx.decrypt(x, sk)
    tables = [rng.integers(0, 8, 8) for _ in range(count)]
    with pytest.warns(RuntimeWarning, match="lut_many"):
        outs = ctx.lut_many(tables, bits=bits)(x)
    # A failure moves the input to a neighbouring slot: every table reads it there.
    wrong = np.zeros(trials, bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an input pushed past the top slot sets the padding bit
        for table, out in zip(tables, outs):
            wrong |= ctx.decrypt(out, sk) != table[m]
    expected = p_fail * trials
    assert expected / 2 <= wrong.sum() <= expected * 2, (int(wrong.sum()), expected)


def test_many_table_inputs_are_checked(toy):
    ctx, sk = toy
    with pytest.raises(ValueError, match="at least one"):
        ctx.lut_many([], bits=2)
    with pytest.raises(ValueError, match="need N >= 1024"):
        ctx.lut_many([lambda m: m] * 33, bits=4)  # 64 outputs per slot of 512/16 = 32 coefficients
    with pytest.raises(ValueError, match="values must lie in"):
        ctx.lut_many([lambda m: m, lambda m: m + 4], bits=2)
    many = ctx.lut_many([lambda m: m, lambda m: 3 - m], bits=2)
    with pytest.raises(ValueError, match="reads 2-bit"):
        many(ctx.encrypt([1], sk, bits=3))
    other, _ = insecure("TOY")
    with pytest.raises(ValueError, match="another context"):
        other.apply_many(many, other.encrypt([1], other.keygen(), bits=2))
    with pytest.raises(ValueError, match="needs tables="):
        ctx.failure_probability("lut_many", bits=2)
    with pytest.raises(ValueError, match="outputs per ciphertext"):
        ctx._require_keys().bootstrap(ctx.encrypt([1], sk, bits=2).data, many.test_vector, 1, 0)


def test_table_and_encryption_inputs_are_checked(toy):
    ctx, sk = toy
    with pytest.raises(ValueError, match="must lie in"):
        ctx.encrypt([4], sk, bits=2)
    with pytest.raises(ValueError, match="values must lie in"):
        ctx.lut(lambda m: m + 4, bits=2)
    with pytest.raises(ValueError, match="has 4 values"):
        ctx.lut([1, 2, 3], bits=2)
    with pytest.raises(ValueError, match="bits must be"):
        ctx.lut(lambda m: m, bits=0)
    with pytest.raises(ValueError, match="reads 2-bit"):
        ctx.lut(lambda m: m, bits=2)(ctx.encrypt([1], sk, bits=3))
    with pytest.raises(ValueError, match="gates take booleans"):
        ctx.and_(ctx.encrypt([1], sk, bits=2), ctx.encrypt([1], sk, bits=2))
    with pytest.raises(ValueError, match="booleans must be"):
        ctx.encrypt([2], sk)
    with pytest.raises(ValueError, match="shapes"):
        ctx.and_(ctx.encrypt([1, 0], sk), ctx.encrypt([1], sk))


# ---- the noise model -----------------------------------------------------------------

def _bootstrapped_errors(ctx, sk, count):
    q = ctx.params.lwe_modulus
    ones = ctx.encrypt(np.ones(count, bool), sk)
    out = ctx.and_(ones, ones)
    phases = sk._native.phases(out.data)[0].astype(np.int64)
    return (phases - q // 8 + q // 2) % q - q // 2


@pytest.mark.parametrize("preset", ["TOY", "STD128", "STD128_LP"])
def test_measured_error_variance_matches_the_model(preset, toy, std128):
    if preset == "STD128_LP":
        ctx = rf.tfhe.Context.preset("STD128_LP")
        sk = ctx.keygen()
    else:
        ctx, sk = toy if preset == "TOY" else std128
    errors = _bootstrapped_errors(ctx, sk, 600)
    ratio = errors.var() / ctx.params.bootstrap_variance()
    assert 0.7 < ratio < 1.3, (errors.var(), ctx.params.noise_terms())


@pytest.fixture(scope="module")
def noisy():
    return insecure("NOISY")


@pytest.mark.parametrize("gate", ["nand", "xor", "maj"])
def test_counted_gate_failures_match_the_predicted_rate(noisy, gate):
    ctx, sk = noisy
    trials = 3000
    p_fail = ctx.failure_probability(gate)
    assert 0.01 < p_fail < 0.1  # the set is meant to fail countably often
    rng = np.random.default_rng(5)
    # Gate inputs are bootstrapped ciphertexts (what the model assumes);
    # their own values are read back so only the gate's failures count.
    one = ctx.trivial(np.ones(trials, bool))
    ins = [ctx.and_(ctx.encrypt(rng.integers(0, 2, trials).astype(bool), sk), one) for _ in range(3)]
    x, y, z = (ctx.decrypt(c, sk) for c in ins)
    if gate == "maj":
        got, want = ctx.maj(*ins), (x.astype(int) + y + z) >= 2
    else:
        got, want = ctx.gate(gate, ins[0], ins[1]), BOOL_GATES[gate](x, y)
    failures = int((ctx.decrypt(got, sk) != want).sum())
    expected = p_fail * trials
    assert expected / 2 <= failures <= expected * 2, (failures, expected)


# ---- refusals ----------------------------------------------------------------------

def test_sets_without_a_security_claim_need_insecure_and_warn():
    with pytest.raises(ValueError, match="insecure=True"):
        rf.tfhe.Context.preset("TOY")
    with pytest.warns(RuntimeWarning, match="insecure"):
        rf.tfhe.Context.preset("TOY", insecure=True)
    with pytest.raises(ValueError, match="unknown tfhe parameter set"):
        rf.tfhe.Context.preset("STD999")


def test_unrunnable_parameters_are_named():
    import dataclasses

    bad = dataclasses.replace(rf.tfhe.PRESETS["TOY"], gadget_digits=1)
    with pytest.raises(ValueError, match="gadget"):
        rf.tfhe.Context(bad, insecure=True)
    bad = dataclasses.replace(rf.tfhe.PRESETS["TOY"], ks_base_log=6)  # 4 digits of 6 bits for 16: one to spare
    with pytest.raises(ValueError, match="ks_base_log \\* ks_digits"):
        rf.tfhe.Context(bad, insecure=True)


def test_secret_keys_do_not_pickle_and_keys_belong_to_their_context(toy):
    ctx, sk = toy
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(sk)
    other, other_sk = insecure("TOY")
    with pytest.raises(ValueError, match="this context"):
        other.encrypt([1], sk)
    with pytest.raises(ValueError, match="another tfhe context"):
        other.decrypt(ctx.encrypt([1], sk), other_sk)
    fresh = rf.tfhe.Context.preset("STD128")
    with pytest.raises(RuntimeError, match="keygen"):
        fresh.evaluation_key_bytes


def test_native_bootstrap_refuses_malformed_arrays(toy):
    ctx, _ = toy
    b = ctx._bootstrapper
    n, N, q = ctx.params.lwe_dimension, ctx.params.ring_dimension, ctx.params.lwe_modulus
    tv = np.zeros(N, np.uint32)
    with pytest.raises(ValueError, match="expected shape"):
        b.bootstrap(np.zeros((2, n), np.uint32), tv)
    with pytest.raises(ValueError, match="not below"):
        b.bootstrap(np.full((1, n + 1), q, np.uint32), tv)
    with pytest.raises(ValueError, match="test vector"):
        b.bootstrap(np.zeros((1, n + 1), np.uint32), np.zeros(N - 1, np.uint32))
    with pytest.raises(ValueError, match="not below"):
        b.bootstrap(np.zeros((1, n + 1), np.uint32), np.full(N, ctx.params.ring_modulus, np.uint32))

    with pytest.raises(ValueError, match="rotation batch"):
        b.bootstrap(np.zeros((1, n + 1), np.uint32), tv, 1, 1, 0)


def test_rotation_batches_give_the_same_bits_as_one_at_a_time(toy):
    """Ciphertexts that step through the key together (bootstrap's ``batch``, GoogleTest
    TfheRotationBatch for every instruction set) are bootstrapped to the same words."""
    ctx, sk = toy
    x = ctx.encrypt(np.arange(13) % 2, sk)
    tv = ctx.lut(lambda m: 1 - m, bits=1).test_vector
    one = ctx._bootstrapper.bootstrap(x.data, tv, 1, 1, 1)
    for batch, threads in [(2, 1), (4, 2), (8, 1)]:
        assert np.array_equal(ctx._bootstrapper.bootstrap(x.data, tv, threads, 1, batch), one), batch


# ---- integers ------------------------------------------------------------------------

def test_uint8_arithmetic_matches_python_integers_toy(toy):
    ctx, sk = toy
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 256, 24), rng.integers(0, 256, 24)
    a[:5], b[:5] = [0, 255, 255, 17, 128], [0, 255, 0, 17, 127]  # edges: zero, wrap, equal, neighbours
    x, y = ctx.encrypt_uint(a, sk, bits=8), ctx.encrypt_uint(b, sk, bits=8)
    m = 256
    cases = {
        "+": (x + y, (a + b) % m), "-": (x - y, (a - b) % m), "*3": (x * 3, a * 3 % m), "*0": (x * 0, 0 * a),
        "neg": (-x, -a % m), "+c": (x + 200, (a + 200) % m), "c-": (7 - x, (7 - a) % m),
        "min": (x.min(y), np.minimum(a, b)), "max": (x.max(y), np.maximum(a, b)),
        "&": (x & y, a & b), "|": (x | y, a | b), "^": (x ^ y, a ^ b), "~": (~x, 255 - a),
        "<<": (x << 3, (a << 3) % m), ">>": (x >> 2, a >> 2),
    }
    for name, (got, want) in cases.items():
        assert (ctx.decrypt(got, sk) == want).all(), name
    assert len(x) == 24 and (ctx.decrypt(x[3:6] + y[3:6], sk) == (a[3:6] + b[3:6]) % m).all()
    comparisons = {"<": (x < y, a < b), "<=": (x <= y, a <= b), ">": (x > y, a > b), ">=": (x >= y, a >= b),
                   "==": (x == y, a == b), "!=": (x != y, a != b)}
    for name, (got, want) in comparisons.items():
        assert (ctx.decrypt(got, sk) == want).all(), name


def test_uint16_at_128_bits_with_every_gate_below_2_to_minus_128():
    ctx = rf.tfhe.Context.preset("STD128_LP")
    for gate in ["and", "or", "nand", "xor", "maj", "xor3"]:
        assert ctx.failure_probability(gate) < 2.0 ** -128
    sk = ctx.keygen()
    a, b = np.array([1234, 65535, 0, 40000]), np.array([4321, 1, 0, 39999])
    x, y = ctx.encrypt_uint(a, sk, bits=16), ctx.encrypt_uint(b, sk, bits=16)
    assert (ctx.decrypt(x + y, sk) == (a + b) % 65536).all()
    assert (ctx.decrypt(x < y, sk) == (a < b)).all()
    assert (ctx.decrypt(x * 1000, sk) == a * 1000 % 65536).all()


def test_integer_inputs_are_checked(toy):
    ctx, sk = toy
    with pytest.raises(ValueError, match="must lie in"):
        ctx.encrypt_uint([256], sk, bits=8)
    with pytest.raises(ValueError, match="must lie in"):
        ctx.encrypt_uint([-1], sk, bits=8)
    with pytest.raises(ValueError, match="bits must be"):
        ctx.encrypt_uint([1], sk, bits=65)
    x = ctx.encrypt_uint([1, 2], sk, bits=8)
    with pytest.raises(ValueError, match="operands differ"):
        x + ctx.encrypt_uint([1, 2], sk, bits=4)
    with pytest.raises(TypeError, match="public constant"):
        x * x
    with pytest.raises(TypeError, match="boolean ciphertext"):
        x + ctx.encrypt([1, 0], sk)


# ---- serialization -------------------------------------------------------------------

def test_evaluation_keys_travel_seeded_and_a_server_computes_with_them(toy):
    ctx, sk = toy
    blob = ctx.save_evaluation_keys()
    p = ctx.params
    key_words = p.lwe_dimension * 2 * 2 * p.gadget_digits * p.ring_dimension
    assert len(blob) < 4 * key_words + 2 * p.ring_dimension * p.ks_digits * (1 << p.ks_base_log) + 4096
    assert len(blob) * 2 <= sum(ctx.evaluation_key_bytes.values()) + 64 * 1024  # half the keys in memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = rf.tfhe.Context.preset("TOY", insecure=True)
    server.load_evaluation_keys(blob)
    x = np.array([0, 1, 1, 0], bool)
    y = np.array([0, 0, 1, 1], bool)
    a, b = server.load(ctx.encrypt(x, sk).to_bytes()), server.load(ctx.encrypt(y, sk).to_bytes())
    out = ctx.load((a ^ b).to_bytes())  # back to the client
    assert (ctx.decrypt(out, sk) == x ^ y).all()
    u = ctx.encrypt_uint(np.array([[3, 200], [17, 255]]), sk, bits=8)
    back = ctx.load(u.to_bytes(compress=3))
    assert isinstance(back, rf.tfhe.UInt) and back.shape == (2, 2)
    assert (ctx.decrypt(back, sk) == [[3, 200], [17, 255]]).all()
    ints = ctx.load(ctx.encrypt([1, 2, 3], sk, bits=2).to_bytes())
    assert ints.bits == 2 and (ctx.decrypt(ints, sk) == [1, 2, 3]).all()


def test_malformed_or_foreign_tfhe_bytes_are_refused(toy):
    ctx, sk = toy
    ct = ctx.encrypt([1, 0], sk).to_bytes()
    keys = ctx.save_evaluation_keys()
    std = rf.tfhe.Context.preset("STD128")
    with pytest.raises(ValueError, match="different tfhe parameters"):
        std.load(ct)
    with pytest.raises(ValueError, match="different tfhe parameters"):
        std.load_evaluation_keys(keys)
    with pytest.raises(ValueError, match="expected a tfhe ciphertext"):
        ctx.load(keys)
    with pytest.raises(ValueError, match="checksum|truncated"):
        ctx.load(ct[:-3])
    flipped = bytearray(ct)
    flipped[len(ct) // 2] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        ctx.load(bytes(flipped))
    with pytest.raises(ValueError, match="checksum|truncated"):
        ctx.load_evaluation_keys(keys[: len(keys) // 2])
    mac = rf.io.new_mac_key()
    signed = ctx.encrypt([1], sk).to_bytes(mac_key=mac)
    assert (ctx.decrypt(ctx.load(signed, mac_key=mac), sk) == [True]).all()
    with pytest.raises(ValueError):
        ctx.load(signed, mac_key=rf.io.new_mac_key())


def test_crafted_tfhe_payloads_are_refused_before_allocating(toy):
    """Envelopes with valid checksums but lying fields (a valid object edited,
    its checksum recomputed): a huge shape, a count that disagrees, bits that
    do not fit, a word above q. The saver refuses to write any of them."""
    import struct

    from envelope_checksum import reseal

    ctx, sk = toy
    p = ctx._native_params
    good = _core.tfhe_save_ciphertexts(p, 0, 0, [2], ctx.encrypt([1, 0], sk).data)
    head = 48  # magic, version, kind, identity, length
    dims = head + 3

    def edited(offset, fmt, value):
        blob = bytearray(good)
        struct.pack_into(fmt, blob, offset, value)
        return reseal(bytes(blob))

    with pytest.raises(ValueError, match="shape is larger"):
        _core.tfhe_load_ciphertexts(p, edited(dims, "<Q", 1 << 40))
    with pytest.raises(ValueError, match="ciphertexts for a shape"):
        _core.tfhe_load_ciphertexts(p, edited(dims + 8, "<Q", 3))
    with pytest.raises(ValueError, match="do not fit encoding"):
        _core.tfhe_load_ciphertexts(p, reseal(good[:head] + bytes([1, 40]) + good[head + 2:]))
    with pytest.raises(ValueError, match="not below q"):
        _core.tfhe_load_ciphertexts(p, edited(dims + 16, "<H", ctx.params.lwe_modulus))
    width = ctx.params.lwe_dimension + 1
    with pytest.raises(ValueError, match="does not match"):
        _core.tfhe_save_ciphertexts(p, 0, 0, [3], np.zeros((2, width), np.uint32))
    with pytest.raises(ValueError, match="not below q"):
        _core.tfhe_save_ciphertexts(p, 0, 0, [1], np.full((1, width), ctx.params.lwe_modulus, np.uint32))


# ---- what a careless or hostile caller gets --------------------------------------------

def test_a_changed_preset_loses_its_security_claim():
    import dataclasses

    weakened = dataclasses.replace(rf.tfhe.PRESETS["STD128"], lwe_dimension=64, sigma=0.5)
    assert weakened.security == 128  # the field survives the copy ...
    with pytest.raises(ValueError, match="no security claim"):
        rf.tfhe.Context(weakened)  # ... the claim does not
    with pytest.warns(RuntimeWarning, match="insecure"):
        rf.tfhe.Context(weakened, insecure=True)


def test_deterministic_keys_still_encrypt_with_fresh_randomness():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = (rf.tfhe.Context.preset("TOY", insecure=True) for _ in range(2))
        k1, k2 = one.keygen(insecure_deterministic_seed=9), two.keygen(insecure_deterministic_seed=9)
    assert k1.key_id == k2.key_id  # the same keys ...
    c1, c2 = one.encrypt([1, 0, 1], k1), two.encrypt([1, 0, 1], k2)
    assert not (c1.data == c2.data).all()  # ... but no shared encryption randomness


def test_a_replaced_key_set_refuses_the_old_secret_key():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.tfhe.Context.preset("TOY", insecure=True)
    old = ctx.keygen()
    ct = ctx.encrypt([1, 0], old)
    ctx.keygen()
    with pytest.raises(ValueError, match="does not belong"):
        ctx.decrypt(ct, old)
    with pytest.raises(ValueError, match="does not belong"):
        ctx.encrypt([1], old)


def test_secret_keys_seal_with_a_password_and_come_back(toy):
    ctx, sk = toy
    blob = sk.to_bytes(password="correct horse", scrypt_log_n=10)
    assert sk._native.secret_bytes() not in blob
    back = ctx.load_secret_key(blob, password="correct horse")
    assert back.key_id == sk.key_id
    assert (ctx.decrypt(ctx.encrypt([1, 0, 1], back), sk) == [1, 0, 1]).all()
    with pytest.raises(ValueError):
        ctx.load_secret_key(blob, password="wrong")
    with pytest.raises(ValueError, match="password"):
        ctx.load_secret_key(blob)
    with pytest.warns(RuntimeWarning, match="without a password"):
        plain = sk.to_bytes()
    with pytest.raises(ValueError, match="different tfhe parameters"):
        rf.tfhe.Context.preset("STD128").load_secret_key(plain)


def test_no_truth_values_no_negative_shifts_no_fractional_constants(toy):
    ctx, sk = toy
    b = ctx.encrypt([1], sk)
    u = ctx.encrypt_uint([5], sk, bits=8)
    with pytest.raises(TypeError, match="truth value"):
        bool(b)
    with pytest.raises(TypeError, match="truth value"):
        if u < 3:
            pass
    with pytest.raises(ValueError, match="non-negative"):
        u >> -2
    with pytest.raises(TypeError, match="add integers"):
        ctx.encrypt([1], sk, bits=2) + 1.7


def test_a_table_on_an_amplified_error_warns(toy):
    ctx, sk = toy
    x = ctx.encrypt([1], sk, bits=2)
    table = ctx.lut(lambda m: m, bits=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table(x)  # a fresh input: no warning
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        table(x * 3 * 3 - x * 8)  # the same message, its error variance 146 times larger


def test_three_bit_tables_at_128_bits_on_the_table_set():
    ctx = rf.tfhe.Context.preset("STD128_LUT")
    assert ctx.failure_probability("lut", bits=3) < 2.0 ** -50
    assert ctx.failure_probability("nand") < 2.0 ** -128
    sk = ctx.keygen()
    table = np.random.default_rng(8).integers(0, 8, 8)
    x = ctx.encrypt(np.arange(8), sk, bits=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fresh 3-bit input is well inside its slot
        got = ctx.decrypt(ctx.lut(table, bits=3)(x), sk)
    assert (got == table).all()
    # Its key switch has 32-bit words: the keys still travel seeded and come back whole.
    server = rf.tfhe.Context.preset("STD128_LUT")
    server.load_evaluation_keys(ctx.save_evaluation_keys())
    assert (ctx.decrypt(ctx.load(server.apply(server.lut(table, bits=3), server.load(x.to_bytes())).to_bytes()), sk)
            == table).all()
