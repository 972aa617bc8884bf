"""Hierarchical rotation keys: the client sends master keys, the server derives Galois keys.

Derived keys are checked against NumPy (CKKS: np.roll / np.conj within the precision a
directly generated key gives; BGV/BFV: exact slot rotations mod t) and against what the
C++ tests check directly (each derived key decrypts to a small error:
cpp/tests/test_key_derivation.cpp)."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ringfire as rf
from conftest import precision_bits


@pytest.fixture(scope="module")
def ckks():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1, -3, 100], conjugate=True)
    return ctx, sk, keys


def _keys_with(keys, galois):
    return rf.ckks.KeySet(public=keys.public, relin=keys.relin, galois=galois)


def test_derived_ckks_rotations_are_as_precise_as_direct_ones(ckks):
    ctx, sk, keys = ckks
    master = ctx.master_keys(sk, conjugate=True)
    assert master.level == ctx.master_key_level == 1  # level 2 has no room under the bound
    assert len(master) == 12 + 1 and master.has_conjugation()
    derived = ctx.derive_galois_keys(master, [1, -3, 100], conjugate=True)
    assert derived.level == 1 and sorted(derived.elements) == sorted(keys.galois.elements)
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    ev = ctx.evaluator()
    ct = ev.mod_switch(ctx.encrypt(x, sk), 1)
    for steps in (1, -3, 100):
        want = np.roll(x, -steps)
        direct = precision_bits(ctx.decrypt(ev.rotate(ct, steps, keys), sk).real, want)
        got = precision_bits(ctx.decrypt(ev.rotate(ct, steps, _keys_with(keys, derived)), sk).real, want)
        assert got > 22 and got > direct - 1, (steps, got, direct)
    conj = ctx.decrypt(ctx.evaluator(_keys_with(keys, derived)).conjugate(ct), sk)
    assert precision_bits(conj, np.conj(x)) > 22


def test_keygen_with_master_rotations_and_the_server_side_derivation(ckks):
    ctx, _, _ = ckks
    sk, keys = ctx.keygen(master_rotations=True, conjugate=True)
    assert keys.galois is None and keys.master.has_conjugation()
    x = np.linspace(-1, 1, ctx.slots)
    ct = ctx.evaluator().mod_switch(ctx.encrypt(x, sk), keys.master.level)
    with pytest.raises(ValueError, match="derive them from the master keys"):
        ctx.evaluator(keys).rotate(ct, 5)
    # What crosses the wire: the master keys' bytes; the server loads and derives.
    server_master = ctx.load(keys.master.to_bytes())
    assert isinstance(server_master, rf.ckks.MasterKeys) and server_master.level == keys.master.level
    keys.galois = ctx.derive_galois_keys(server_master, [5, 2047])
    assert precision_bits(ctx.decrypt(ctx.evaluator(keys).rotate(ct, 5), sk).real, np.roll(x, -5)) > 22
    # A pickled key set carries them too.
    again = pickle.loads(pickle.dumps(keys.master))
    assert again.to_bytes() == keys.master.to_bytes()


def test_derived_keys_serve_only_up_to_the_master_level(ckks):
    ctx, sk, keys = ckks
    derived = ctx.derive_galois_keys(ctx.master_keys(sk, level=0), [1])
    ct = ctx.encrypt(np.ones(4), sk)  # at the top, level 2
    with pytest.raises(ValueError, match="made for levels up to 0"):
        ctx.evaluator(_keys_with(keys, derived)).rotate(ct, 1)


def test_refusals_name_what_is_wrong(ckks):
    ctx, sk, _ = ckks
    with pytest.raises(ValueError, match=r"no room for master keys at level 2: .*190 bits.*218-bit bound"):
        ctx.master_keys(sk, level=2)
    with pytest.raises(ValueError, match="level must be an integer"):
        ctx.master_keys(sk, level=7)
    master = ctx.master_keys(sk)
    with pytest.raises(ValueError, match="conjugation master key"):
        ctx.derive_galois_keys(master, [], conjugate=True)
    with pytest.raises(TypeError, match="expected MasterKeys"):
        ctx.derive_galois_keys(ctx.galois_keys(sk, [1]), [1])
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 30], scale_bits=30, special_bits=[60])
    other_master = other.master_keys(other.keygen()[0])
    with pytest.raises(ValueError, match="different parameters"):
        ctx.derive_galois_keys(other_master, [1])
    with pytest.raises(ValueError, match="different parameters"):
        ctx.load(other_master.to_bytes())
    blob = bytearray(master.to_bytes())
    blob[len(blob) // 2] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        ctx.load(bytes(blob))


@pytest.fixture(scope="module", params=["bgv", "bfv"])
def integer_scheme(request):
    ctx = getattr(rf, request.param).Context.preset("N13")
    sk, keys = ctx.keygen()
    master = ctx.master_keys(sk, swap_rows=True)
    return ctx, sk, keys, master


@settings(max_examples=6, deadline=None)
@given(steps=st.lists(st.integers(-4095, 4095), min_size=1, max_size=4, unique=True))
def test_derived_row_rotations_are_exact(integer_scheme, steps):
    ctx, sk, keys, master = integer_scheme
    derived = ctx.derive_galois_keys(master, steps, swap_rows=True)
    t, row = ctx.params.plain_modulus, ctx.slots // 2
    x = np.random.default_rng(len(steps)).integers(0, t, ctx.slots)
    ev = ctx.evaluator(rf.bgv.KeySet(public=keys.public, relin=keys.relin, galois=derived))
    ct = ctx.encrypt(x, sk)
    while ct.level > master.level:
        ct = ev.mod_switch(ct, ct.level - 1)
    for s in steps:
        got = np.mod(ctx.decrypt(ev.rotate(ct, s), sk), t)  # decryptions are centred
        want = np.concatenate([np.roll(x[:row], -s), np.roll(x[row:], -s)])
        assert np.array_equal(got, want), s
    swapped = np.mod(ctx.decrypt(ev.swap_rows(ct), sk), t)
    assert np.array_equal(swapped, np.concatenate([x[row:], x[:row]]))


@pytest.mark.slow
def test_derived_keys_at_n16_boot_user_levels():
    """N = 2^16, the user's top level of the bootstrappable chain (9): a derived key
    rotates as precisely as a direct one."""
    ctx = rf.ckks.Context.preset("N16_BOOT")
    sk, keys = ctx.keygen(rotations=[3, -1000])
    master = ctx.master_keys(sk)
    assert master.level == ctx.max_level == 9
    derived = ctx.derive_galois_keys(master, [3, -1000])
    x = np.random.default_rng(5).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, sk)
    ev = ctx.evaluator()
    for steps in (3, -1000):
        want = np.roll(x, -steps)
        direct = precision_bits(ctx.decrypt(ev.rotate(ct, steps, keys), sk).real, want)
        got = precision_bits(ctx.decrypt(ev.rotate(ct, steps, _keys_with(keys, derived)), sk).real, want)
        assert got > direct - 1, (steps, got, direct)


def test_the_plan_predicts_bytes_and_derivation_work(ckks):
    ctx, sk, _ = ckks
    steps = [1, 3, 5, 6, 7, 100, -1]
    plan = ctx.master_key_plan(steps)
    assert plan.level == 1 and plan.rotations == 7 and plan.master_keys == 12
    direct = len(ctx.galois_keys(sk, steps, level=1).to_bytes())
    master = len(ctx.master_keys(sk).to_bytes())
    assert abs(plan.direct_bytes - direct) < 0.01 * direct
    assert abs(plan.master_bytes - master) < 0.01 * master
    # The tree's nodes (each step with its set bits added from the lowest up): 1, 2, 3, 4, 5,
    # 6, 7, 36, 100, and -1 = 4095 through 15, 31, ..., 2047: 18 keys, each a switch per digit.
    assert plan.derived_key_switches == ctx._core.rlwe.digit_count(1) * 18
    assert "master keys" in str(plan)
