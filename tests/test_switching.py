"""Scheme switching (ringfire.switching): CKKS slots to FHEW ciphertexts.

The ring switch is checked against exact big-integer products, the whole
switch against the values encrypted (decrypted with the FHEW key, and the
measured errors against the noise model), lookups and comparisons after it
against NumPy, and every refusal by its message."""

import dataclasses
import hashlib
import pathlib
import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core
from ringfire.switching import ring_switch as R

SLOTS = 16


def negacyclic(x, y, modulus):
    """x y in Z_Q[X] / (X^n + 1) with Python integers: the exact reference."""
    n = len(x)
    full = np.convolve(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
    full = np.concatenate([full, np.zeros(2 * n - len(full), dtype=object)])
    return np.array([(full[j] - full[j + n]) % modulus for j in range(n)], dtype=object)


@pytest.fixture(scope="module")
def setup():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.ckks.Context(2**12, [60] + [40] * 15 + [60], 40, insecure_no_security_check=True,
                              insecure_deterministic_seed=bytes(32))
        fhew = rf.tfhe.Context("STD128")
        fsk = fhew.keygen(insecure_deterministic_seed=7)
    switch = rf.switching.CkksToFhew(ctx, fhew, slots=SLOTS)
    back = rf.switching.FhewToCkks(fhew, ctx, slots=SLOTS)
    sk, keys = ctx.keygen(rotations=sorted(set(switch.rotations()) | set(back.rotations())))
    key = switch.keygen(sk, fsk)
    switch.back, switch.back_key = back, back.keygen(fsk, keys)
    return ctx, fhew, fsk, switch, sk, keys, ctx.evaluator(keys), key


def phase_errors(fhew, fsk, lwe, values, bits):
    q = fhew.params.lwe_modulus
    phases = fsk._native.phases(lwe.data)[0].astype(np.int64)
    return (phases - np.asarray(values) * (q // (2 << bits)) + q // 2) % q - q // 2


def test_ring_switch_pieces_match_exact_products():
    Q = rf.tfhe.Context("STD128").params.ring_modulus
    rng = np.random.default_rng(1)
    ntt = _core.Ntt32(1024, Q)
    a, b = rng.integers(0, Q, 1024), rng.integers(-3, 4, 1024) % Q
    assert np.array_equal(R.inverse(ntt, R.forward(ntt, a) * R.forward(ntt, b) % Q, Q).astype(object),
                          negacyclic(a, b, Q))
    N, k = 4096, 4
    s, c0, c1 = rng.integers(-1, 2, N), rng.integers(0, Q, N), rng.integers(0, Q, N)
    phase = (c0.astype(object) + negacyclic(c1, s % Q, Q)) % Q
    b0, parts = R.module_ciphertext(c0, c1, k, Q)
    secret = R.module_secret(s, k) % Q
    mine = b0.astype(object)
    for r in range(k):
        mine = (mine + negacyclic(parts[r], secret[r], Q)) % Q
    assert np.array_equal(mine, phase[::k])
    digits = R.balanced_digits(c1, Q, R.BASE_LOG, 4).astype(object)
    centred = np.where(digits > Q // 2, digits - Q, digits)
    assert np.abs(centred).max() <= 65
    assert np.array_equal(sum(centred[i] * 128 ** i for i in range(4)) % Q, c1.astype(object))
    wide = rf.tfhe.Context("STD128_LUT").params.ring_modulus  # 28 bits: the last digit takes the carry
    edges = np.array([0, 1, wide // 2 - 1, wide // 2, wide // 2 + 1, wide - 1])
    digits = R.balanced_digits(edges, wide, R.BASE_LOG, 4).astype(object)
    centred = np.where(digits > wide // 2, digits - wide, digits)
    assert np.abs(centred).max() <= 65
    assert np.array_equal(sum(centred[i] * 128 ** i for i in range(4)) % wide, edges.astype(object))


def test_ring_switch_keeps_the_phase_under_the_fhew_ring_secret():
    fhew = rf.tfhe.Context("STD128")
    Q, Np = fhew.params.ring_modulus, fhew.params.ring_dimension
    rng = np.random.default_rng(2)
    N, prng = 8192, _core.Prng.from_seed(bytes(32))
    s, z = rng.integers(-1, 2, N), rng.integers(-1, 2, Np)
    key = R.ring_switch_keygen(s, z, Q, prng)
    assert key.nbytes == 2 * (N // Np) * 4 * Np * 4
    c0, c1 = rng.integers(0, Q, N), rng.integers(0, Q, N)
    b, a = R.ring_switch(key, c0, c1)
    got = (b.astype(object) - negacyclic(a, z % Q, Q)) % Q
    want = ((c0.astype(object) + negacyclic(c1, s % Q, Q)) % Q)[:: N // Np]
    err = (got - want + Q // 2) % Q - Q // 2
    assert np.std(err.astype(float)) < 3 * np.sqrt(key.error_variance())
    assert 0 < np.std(err.astype(float))
    lwe = R.extract(b, a, 5, Q)  # coefficient 5 as an LWE ciphertext under z
    assert (int(lwe[-1]) - int(np.dot(lwe[:-1].astype(object), z % Q))) % Q == got[5]


@pytest.mark.parametrize("bits", [2, 3])
def test_switched_slots_decrypt_to_the_encrypted_integers(setup, bits):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    rng = np.random.default_rng(bits)
    values = rng.integers(0, 1 << bits, SLOTS)
    lwe = switch(ev, ctx.encrypt(values.astype(float), keys), key, bits=bits)
    assert lwe.shape == (SLOTS,) and lwe.bits == bits
    assert np.array_equal(fhew.decrypt(lwe, fsk), values)
    # The errors are what the model says: FHEW's key switch and modulus switches dominate.
    err = phase_errors(fhew, fsk, lwe, values, bits)
    assert np.abs(err).max() < fhew.params.lwe_modulus / (4 << bits)
    assert 0.2 < np.var(err) / lwe.variance < 4  # 16 samples: a chi-square of 16 degrees stays inside


def test_a_periodic_ciphertext_and_a_lookup_after_the_switch(setup):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    values = np.arange(SLOTS) % 8
    tiled = np.tile(values, ctx.slots // SLOTS).astype(float)
    lwe = switch(ev, ctx.encrypt(tiled, keys), key, bits=3, periodic=True)
    periodic_b = ctx.encrypt(np.tile(7 - values, ctx.slots // SLOTS).astype(float), keys)
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        greater = switch.compare(ev, ctx.encrypt(tiled, keys), periodic_b, key, bits=3, periodic=True)
    assert np.array_equal(fhew.decrypt(greater, fsk), (values > 7 - values).astype(int))
    table = fhew.lut(lambda m: (5 * m + 3) % 8, bits=3)
    with pytest.warns(RuntimeWarning, match="fails with probability 9.7e-06"):  # STD128's own 3-bit figure
        result = fhew.apply(table, lwe)
    assert np.array_equal(fhew.decrypt(result, fsk), (5 * values + 3) % 8)


def test_compare_goes_ckks_to_fhew_and_back(setup):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 8, SLOTS), rng.integers(0, 8, SLOTS)
    b[:3] = a[:3]            # equal inputs
    a[3], b[3] = 7, 0        # the range's limits, both ways
    a[4], b[4] = 0, 7
    with pytest.warns(RuntimeWarning, match="fails with probability"):
        greater = switch.compare(ev, ctx.encrypt(a.astype(float), keys), ctx.encrypt(b.astype(float), keys), key,
                                 bits=3)
    want = (a > b).astype(int)
    assert greater.bits == 1 and np.array_equal(fhew.decrypt(greater, fsk), want)
    back = switch.back(ev, greater, switch.back_key)
    assert back.shape == (SLOTS,) and back.level == ctx.max_level - switch.back.depth
    got = ctx.decrypt(back, sk).real
    # The LWE error e moves a slot by sin^2(2 pi e / q), sharpened to 3 eps^2: within 2^-6 for |e| < 5.5 sigma.
    assert 0 < np.abs(got - want).max() < 2 ** -6


def test_the_switch_back_reads_any_one_bit_lookup(setup):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    values = np.arange(SLOTS) % 4
    odd = fhew.apply(fhew.lut(lambda m: m % 2, bits=2, out_bits=1), fhew.encrypt(values, fsk, bits=2))
    got = ctx.decrypt(switch.back(ev, odd, switch.back_key), sk).real
    assert np.abs(got - values % 2).max() < 2 ** -6
    with pytest.raises(ValueError, match="1-bit integers"):
        switch.back(ev, fhew.encrypt(values, fsk, bits=2), switch.back_key)
    with pytest.raises(ValueError, match="expected 16 FHEW ciphertexts"):
        switch.back(ev, odd[:8], switch.back_key)
    with pytest.raises(ValueError, match="levels or more"):
        switch.back(ev, odd, ev.adjust_to(switch.back_key, 3))


@pytest.mark.parametrize("degree, count, diagonals", [
    (2**11, 16, None),  # one lane: sixteen rotations of the secret
    (2**13, 2, None),   # four lanes, two rows: no rotation of the secret, ten folds
    (2**13, 16, 8),     # four lanes and more rotations of the secret than the least (4)
    (2**12, 64, None),  # two lanes, 32 rotations of the secret
])
def test_the_way_back_fills_every_slot_for_any_lanes_and_diagonals(degree, count, diagonals):
    """Slot t holds bit t mod m in every slot of the ring, against the bits encrypted, whatever
    the lanes (slots / n') and the rotations of the secret: the layout's index arithmetic."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.ckks.Context(degree, [60] + [40] * 13 + [60], 40, insecure_no_security_check=True,
                              insecure_deterministic_seed=bytes(32))
        fhew = rf.tfhe.Context("STD128")
        fsk = fhew.keygen(insecure_deterministic_seed=11)
    back = rf.switching.FhewToCkks(fhew, ctx, slots=count, diagonals=diagonals)
    assert back.lanes == degree // 2 // 1024 and back.diagonals == (diagonals or max(1, count // back.lanes))
    assert back.depth == 13
    sk, keys = ctx.keygen(rotations=back.rotations())
    bits = np.random.default_rng(count).integers(0, 2, count)
    bits[:2] = [0, 1]
    lwe = fhew.encrypt(bits, fsk, bits=1)
    out = back(ctx.evaluator(keys), lwe, back.keygen(fsk, keys))
    assert out.shape == (count,) and out.level == ctx.max_level - 13
    every = ctx.decrypt(out._set_shape((ctx.slots,)), sk).real
    assert np.abs(every - np.tile(bits, ctx.slots // count)).max() < 2 ** -10
    with pytest.raises(ValueError, match="diagonals must be a power of two"):
        rf.switching.FhewToCkks(fhew, ctx, slots=count, diagonals=3)


def test_a_comparison_round_trips_through_lmkcdey_bootstraps(setup):
    """The switch does not care which blind rotation the FHEW set runs: LMKCDEY's small keys."""
    ctx, _, _, _, _, _, _, _ = setup
    fhew = rf.tfhe.Context("STD128_LMKCDEY")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsk = fhew.keygen(insecure_deterministic_seed=4)
    switch = rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS, out_bits=1)
    sk, keys = ctx.keygen(rotations=switch.rotations())
    ev, key = ctx.evaluator(keys), switch.keygen(sk, fsk, keys)
    x = np.arange(SLOTS) % 4
    greater = switch.compare(ev, ctx.encrypt(x.astype(float), keys), ctx.encrypt(3.0 - x, keys), key, bits=2)
    assert np.abs(ctx.decrypt(greater, sk).real - (x > 3 - x)).max() < 2 ** -6


@pytest.mark.parametrize("name", ["STD128", "STD128_LUT"])
def test_a_lookup_table_round_trip_ends_in_ckks_slots(setup, name):
    ctx, _, _, _, sk, _, _, _ = setup
    fhew = rf.tfhe.Context(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsk = fhew.keygen(insecure_deterministic_seed=3)
    switch = rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS, out_bits=3)
    sk2, keys = ctx.keygen(rotations=switch.rotations())
    ev, key = ctx.evaluator(keys), switch.keygen(sk2, fsk, keys)
    x = np.arange(SLOTS) % 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # STD128's 3-bit tables warn (9.7e-6 per element)
        y = switch.lut(ev, ctx.encrypt(x.astype(float), keys), lambda m: (3 * m + 1) % 8, key, bits=3)
        greater = switch.compare(ev, ctx.encrypt(x.astype(float), keys), ctx.encrypt(7.0 - x, keys), key, bits=3)
    assert y.shape == (SLOTS,) and y.level == ctx.max_level - switch.depth
    # Three bits, each within 3 eps^2 of its value after sharpening: the sum stays far inside 1/2.
    # (STD128_LUT measured 2^-15.0 .. 2^-11.2 over nine key draws: a bound of 2^-12 failed one.)
    error = np.abs(ctx.decrypt(y, sk2).real - (3 * x + 1) % 8).max()
    assert 0 < error < (2 ** -6 if name == "STD128" else 2 ** -10)
    assert np.abs(ctx.decrypt(greater, sk2).real - (x > 7 - x)).max() < 2 ** -6
    with pytest.raises(ValueError, match="out_bits must lie"):
        switch.lut(ev, ctx.encrypt(x.astype(float), keys), lambda m: m, key, bits=3, out_bits=4)
    with pytest.raises(ValueError, match="integers in"):
        switch.lut(ev, ctx.encrypt(x.astype(float), keys), lambda m: m / 2, key, bits=3)


def test_any_fhew_integer_comes_back_into_ckks_slots(setup):
    """SchemeSwitch.back: integers made by FHEW work (here a 3-bit table of encrypted values, and
    1-bit integers as they are) come back as CKKS slots equal to them; what it cannot read is
    refused by name, and a bit whose error may pass q / 8 warns."""
    ctx, fhew, fsk, _, _, _, _, _ = setup
    switch = rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS, out_bits=3)
    sk, keys = ctx.keygen(rotations=switch.rotations())
    ev = ctx.evaluator(keys)
    key = switch.keygen(sk, fsk, keys)
    values = np.arange(SLOTS) % 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # STD128's 3-bit tables warn (9.7e-6 per element)
        made = fhew.apply(fhew.lut(lambda m: (5 * m + 3) % 8, bits=3), fhew.encrypt(values, fsk, bits=3))
        back = switch.back(ev, made, key)
    assert back.shape == (SLOTS,) and back.level == ctx.max_level - switch.depth
    want = (5 * values + 3) % 8
    assert np.abs(ctx.decrypt(back, sk).real - want).max() < 2 ** -4  # three bits of weight 1, 2, 4
    bits = fhew.encrypt(values % 2, fsk, bits=1)
    assert np.abs(ctx.decrypt(switch.back(ev, bits, key), sk).real - values % 2).max() < 2 ** -10
    with pytest.raises(ValueError, match="booleans"):
        switch.back(ev, fhew.encrypt(values % 2 == 1, fsk), key)
    with pytest.raises(ValueError, match="up to out_bits=3 bits"):
        switch.back(ev, fhew.encrypt(values, fsk, bits=4), key)
    with pytest.raises(ValueError, match="expected 16 FHEW ciphertexts"):
        switch.back(ev, bits[:8], key)
    with pytest.raises(TypeError, match="ringfire.tfhe.Ciphertext"):
        switch.back(ev, values, key)
    noisy = bits * 1
    noisy.variance = (fhew.params.lwe_modulus / 8 / 5) ** 2  # five standard deviations to the edge
    with pytest.warns(RuntimeWarning, match="comes back wrong with probability"):
        switch.back(ev, noisy, key)
    # Trivial ciphertexts have no error at all (variance 0): they come back, without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trivial = switch.back(ev, fhew.trivial(values % 2, bits=1), key)
    assert np.abs(ctx.decrypt(trivial, sk).real - values % 2).max() < 2 ** -10


def test_switching_keys_travel_as_bytes_and_refuse_tampering(setup):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    data = key.to_bytes()
    assert len(data) == 94 + key.nbytes + 32  # header (with the FHEW key id), two halves of 32-bit words, SHA-256
    loaded = switch.load_key(data)
    assert np.array_equal(loaded.b, key.b) and np.array_equal(loaded.a, key.a) and loaded.sigma == key.sigma
    values = np.arange(SLOTS) % 4
    assert np.array_equal(fhew.decrypt(switch(ev, ctx.encrypt(values.astype(float), keys), loaded, bits=2), fsk),
                          values)
    flipped = bytearray(data)
    flipped[100] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        switch.load_key(bytes(flipped))
    with pytest.raises(ValueError, match="bytes, got"):
        switch.load_key(data[:-5])
    with pytest.raises(ValueError, match="not a ringfire switching key"):
        switch.load_key(b"x" * 200)
    with pytest.raises(ValueError, match="contexts have"):
        R.RingSwitchKey.from_bytes(data, ring_degree=8192, subring_degree=1024, modulus=key.modulus)
    body = bytearray(data[:-32])
    body[94:98] = (0xFFFFFFFF).to_bytes(4, "little")  # a word past Q under a valid checksum
    with pytest.raises(ValueError, match="not below Q"):
        switch.load_key(bytes(body) + hashlib.sha256(bytes(body)).digest())
    signed = key.to_bytes(mac_key=b"k" * 32)
    assert np.array_equal(switch.load_key(signed, mac_key=b"k" * 32).a, key.a)
    with pytest.raises(ValueError, match="MAC does not verify"):
        switch.load_key(signed, mac_key=b"j" * 32)
    with pytest.raises(ValueError, match="authenticated: pass mac_key"):
        switch.load_key(signed)
    # Made for other FHEW keys than the evaluator's: refused on load and on use.
    other = rf.tfhe.Context("STD128")
    other.keygen()
    with pytest.raises(ValueError, match="other FHEW keys"):
        rf.switching.CkksToFhew(ctx, other, slots=SLOTS).load_key(data)
    # The two keys of SchemeSwitch.keygen load as a pair and only as a pair (here with the way back
    # in the context's own ring, whose encrypted secret is a CKKS ciphertext).
    both = rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS, ring_degree=ctx.poly_degree)
    pair = both.keygen(sk, fsk, keys)
    restored = both.load_keys(pair.ring.to_bytes(), pair.secret.to_bytes())
    assert restored.secret.level == pair.secret.level
    with pytest.raises(ValueError, match="not the one made with this switching key"):
        both.load_keys(pair.ring.to_bytes(), switch.back_key.to_bytes())
    # A pair from before the lane layout (version 1 with a bound secret) would decrypt wrong: refused.
    # Version 1 without a bound secret (the way there only) still loads.
    def as_version_1(data):
        body = bytearray(data[:-32])
        body[6] = 1
        return bytes(body) + hashlib.sha256(bytes(body)).digest()
    with pytest.raises(ValueError, match="older ringfire's way back"):
        both.load_keys(as_version_1(pair.ring.to_bytes()), pair.secret.to_bytes())
    assert np.array_equal(switch.load_key(as_version_1(data)).a, key.a)
    # The old key still switches to FHEW alone, and stays version 1 when written again (its
    # binding to the old layout cannot be laundered into a version-2 pair).
    old = switch.load_key(as_version_1(pair.ring.to_bytes()))
    assert old.version == 1 and old.to_bytes()[6] == 1
    with pytest.raises(ValueError, match="older ringfire's way back"):
        both.load_keys(old.to_bytes(), pair.secret.to_bytes())
    # A corrupted version byte is a checksum failure, not a version story.
    corrupted = bytearray(pair.ring.to_bytes())
    corrupted[6] = 1
    with pytest.raises(ValueError, match="checksum"):
        both.load_keys(bytes(corrupted), pair.secret.to_bytes())
    # A ring key bound to no secret (CkksToFhew.keygen's) cannot vouch for any: refused as a pair.
    with pytest.raises(ValueError, match="bound to no encrypted LWE secret"):
        both.load_keys(data, pair.secret.to_bytes())
    low = ev.adjust_to(switch.back_key, 3).to_bytes()
    with pytest.raises(ValueError, match="levels or more"):
        both.load_keys(dataclasses.replace(pair.ring, secret_digest=hashlib.sha256(low).digest()).to_bytes(), low)
    with pytest.raises(ValueError, match="not the secret key's"):
        both.keygen(sk, fsk, ctx.keygen()[1])
    # The default switch runs its way back in a smaller ring: a pair for the context's own ring is
    # refused with the way to load it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring's small ring is insecure too
        default = rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS)
    assert default.to_ckks.small is not None
    with pytest.raises(ValueError, match=f"loads with ring_degree={ctx.poly_degree}"):
        default.load_keys(pair.ring.to_bytes(), pair.secret.to_bytes())
    # A ciphertext loaded from bytes has lost the knowledge that its tail is zero: masked, one level.
    values = np.arange(SLOTS) % 8
    loaded = ctx.load(ctx.encrypt(values.astype(float), keys).to_bytes())
    assert np.array_equal(fhew.decrypt(switch(ev, loaded, key, bits=3), fsk), values)
    with pytest.raises(ValueError, match="zeroing the slots after its values"):
        switch(ev, ev.mod_switch(loaded, 1), key, bits=3)


def test_the_switch_refuses_what_it_cannot_switch(setup):
    ctx, fhew, fsk, switch, sk, keys, ev, key = setup
    ct = ctx.encrypt(np.ones(SLOTS), keys)
    with pytest.raises(ValueError, match="shape"):
        switch(ev, ctx.encrypt(np.ones(32), keys), key, bits=3)
    with pytest.raises(ValueError, match="level 0"):
        switch(ev, ev.adjust_to(ct, 0), key, bits=3)
    with pytest.raises(ValueError, match="bits must be"):
        switch(ev, ct, key, bits=10)
    with pytest.raises(TypeError, match="RingSwitchKey"):
        switch(ev, ct, keys, bits=3)
    with pytest.raises(ValueError, match="holds two"):
        switch(ev, ct, dataclasses.replace(key, b=key.b[:3]), bits=3)
    with pytest.raises(ValueError, match="power of two"):
        rf.switching.CkksToFhew(ctx, fhew, slots=12)
    with pytest.raises(ValueError, match="FHEW ring of degree"):
        rf.switching.CkksToFhew(ctx, fhew, slots=1024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = rf.ckks.Context(2**10, [40, 30, 40], 30, insecure_no_security_check=True)
    with pytest.raises(ValueError, match="must divide"):
        rf.switching.CkksToFhew(small, rf.tfhe.Context("STD128_LUT"), slots=4)
    with pytest.raises(ValueError, match="another CKKS context"):
        switch(small.evaluator(small.keygen()[1]), small.encrypt(np.ones(4), small.keygen()[1]), key, bits=3)
    with pytest.raises(ValueError, match="CKKS context's secret key, got KeySet"):
        switch.keygen(keys, fsk)
    with pytest.raises(ValueError, match="FHEW context's secret key, got SecretKey of another context"):
        switch.keygen(sk, rf.tfhe.Context("STD128").keygen())
    with pytest.raises(ValueError, match="CKKS context's secret key, got SecretKey of another context"):
        switch.keygen(small.keygen()[0], fsk)
    with pytest.raises(ValueError, match="bits must be an int"):
        switch(ev, ct, key, bits=True)
    with pytest.raises(TypeError, match="ringfire.ckks.Context first"):
        rf.switching.SchemeSwitch(fhew, ctx, slots=SLOTS)
    with pytest.raises(ValueError, match="16 slots x 100 output bits"):
        rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS, out_bits=100)
    with pytest.raises(TypeError, match="expected the SwitchKeys"):
        rf.switching.SchemeSwitch(ctx, fhew, slots=SLOTS).compare(ev, ct, ct, key, bits=3)
    with pytest.raises(TypeError, match="ringfire.tfhe.Ciphertext"):
        switch.back(ev, np.zeros((SLOTS, 557), np.uint32), switch.back_key)
    with pytest.raises(TypeError, match="encrypted LWE secret"):
        switch.back(ev, fhew.encrypt(np.zeros(SLOTS, int), fsk, bits=1), key)
    with pytest.raises(ValueError, match="not below Q"):
        fhew.from_ring_lwe(np.full((1, 1025), 0xFFFFFFFF, dtype=np.uint32), bits=3, variance=0.0)


def test_the_docs_snippet_runs_and_prints_what_it_says(capsys):
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "switching.md").read_text()
    snippet = text.split("```python\n")[1].split("```")[0]
    exec(compile(snippet, "docs/switching.md", "exec"), {})
    printed = capsys.readouterr().out.split("\n")
    assert printed[:3] == ["[0. 4. 4. 1.]", "[1. 0. 0. 0.]", "[3 1 0 2]"]
