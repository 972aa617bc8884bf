"""The way back from FHEW in a smaller CKKS ring (ringfire.switching.small_ring): a subring's
ciphertexts embedded in the large ring and switched to its key decrypt to the same slots
(against NumPy); bits brought back through a ring of half the degree land in every slot of the
large ring (against the bits encrypted); the keys travel as bytes; wrong inputs are refused."""

import gc
import warnings
import weakref

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core
from ringfire.switching import small_ring
from ringfire.switching.small_ring import SmallRing


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # toy rings: the security check is off
        return make()


@pytest.fixture(scope="module")
def toy():
    ctx = quiet(lambda: rf.ckks.Context(2**13, [60] + [40] * 14 + [60], 40, insecure_no_security_check=True,
                                        insecure_deterministic_seed=bytes(32)))
    fhew = rf.tfhe.Context("STD128")
    fsk = quiet(lambda: fhew.keygen(insecure_deterministic_seed=5))
    return ctx, fhew, fsk


def test_a_subring_ciphertext_lands_in_the_large_ring_with_its_slots(toy):
    ctx, _, _ = toy
    small = quiet(lambda: SmallRing(ctx, 2**11))
    assert small.top == ctx.max_level and list(small.context.params.q_primes) == list(ctx.params.q_primes)
    sk, keys = ctx.keygen()
    small_sk, _ = small.context.keygen()
    values = np.random.default_rng(1).uniform(-1, 1, small.context.slots)
    ct = small.context.encrypt(values, small_sk, level=3)
    key = rf.rlwe.keys.EmbeddingKey(_core.generate_embedding_key(sk._native, small_sk._native, 3, ctx._prng), ctx)
    assert key.subring_degree == 2**11 and ctx.load(key.to_bytes()).level == 3
    embedded = _core.embed_in_ring(ct._native, ctx._core.rlwe)
    assert embedded.level == 3 and embedded.scale == ct.scale
    landed = rf.ckks.Ciphertext(ctx.evaluator(keys)._ev.switch_key(embedded, key._native), ctx)
    # Slot j of the large ring reads slot j mod n/2 of the small one.
    assert np.abs(ctx.decrypt(landed._set_shape((ctx.slots,)), sk).real - np.tile(values, 4)).max() < 2 ** -25
    other = quiet(lambda: rf.ckks.Context(2**11, [50, 40, 50], 40, insecure_no_security_check=True))
    with pytest.raises(ValueError, match="prime q_0 differs"):
        _core.embed_in_ring(other.encrypt(np.ones(4), other.keygen()[0])._native, ctx._core.rlwe)
    with pytest.raises(ValueError, match="not a multiple"):
        _core.embed_in_ring(ctx.encrypt(np.ones(4), sk)._native, other._core.rlwe)


@pytest.mark.parametrize("count", [16, 64])
def test_bits_come_back_through_a_ring_of_half_the_degree(toy, count):
    """Every slot of the large ring holds bit t mod m, the result at the level the large ring's
    own way back gives, and the large ring's Galois keys need nothing for it."""
    ctx, fhew, fsk = toy
    back = quiet(lambda: rf.switching.FhewToCkks(fhew, ctx, slots=count, ring_degree=2**12))
    assert back.rotations() == [] and back.lanes == 2 and "via N=4096" in repr(back)
    sk, keys = ctx.keygen()
    key = quiet(lambda: back.keygen(fsk, keys, secret_key=sk))
    bits = np.random.default_rng(count).integers(0, 2, count)
    bits[:2] = [0, 1]
    out = back(ctx.evaluator(keys), fhew.encrypt(bits, fsk, bits=1), key)
    assert out.context is ctx and out.shape == (count,) and out.level == ctx.max_level - back.depth
    assert out._bound is not None  # the magnitude checks carry on after the landing
    every = ctx.decrypt(out._set_shape((ctx.slots,)), sk).real
    assert np.abs(every - np.tile(bits, ctx.slots // count)).max() < 2 ** -10
    # Another way back of the same context and degree shares the small ring, and so the keys
    # (held weakly: the shared map does not keep a context alive, tested below).
    other = quiet(lambda: rf.switching.FhewToCkks(fhew, ctx, slots=count, ring_degree=2**12))
    assert other.work is back.work
    again = other(ctx.evaluator(keys), fhew.encrypt(bits, fsk, bits=1), key)
    assert np.abs(ctx.decrypt(again, sk).real - bits).max() < 2 ** -10


def test_a_round_trip_through_the_small_ring_and_its_keys_as_bytes(toy):
    ctx, fhew, fsk = toy
    switch = quiet(lambda: rf.switching.SchemeSwitch(ctx, fhew, slots=16, out_bits=2, ring_degree=2**12))
    sk, keys = ctx.keygen(rotations=switch.rotations())
    pair = quiet(lambda: switch.keygen(sk, fsk, keys))
    loaded = quiet(lambda: switch.load_keys(pair.ring.to_bytes(), pair.secret.to_bytes()))
    ev = ctx.evaluator(keys)
    x = np.arange(16) % 4
    y = switch.lut(ev, ctx.encrypt(x.astype(float), keys), lambda m: (m + 3) % 4, loaded, bits=2)
    assert np.abs(ctx.decrypt(y, sk).real - (x + 3) % 4).max() < 2 ** -8
    data = pair.secret.to_bytes()
    with pytest.raises(ValueError, match="not the one made with this switching key"):
        switch.load_keys(pair.ring.to_bytes(), data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(ValueError, match="declare"):
        switch.to_ckks.load_key(data[:-7])
    with pytest.raises(ValueError, match="not a ringfire small-ring key"):
        switch.to_ckks.load_key(b"x" * 64)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 1  # inside one part: its own checksum refuses it
    with pytest.raises(ValueError, match="part: "):
        switch.to_ckks.load_key(bytes(flipped))
    head = data[:16]  # magic and the two degrees
    for lengths in ([0, 0, 0, 0], [2 ** 63, 2 ** 63, 1, 1], [1, 2, 3, 2 ** 64 - 7]):  # empty or huge parts
        with pytest.raises(ValueError, match="declare"):
            switch.to_ckks.load_key(head + np.array(lengths, dtype="<u8").tobytes() + bytes(6))
    # Made for another ring, or given to a way back in the context's own ring: said with the degree.
    small_2048 = quiet(lambda: rf.switching.SchemeSwitch(ctx, fhew, slots=16, out_bits=2, ring_degree=2**11))
    with pytest.raises(ValueError, match="made for ring_degree=4096"):
        small_2048.to_ckks.load_key(data)
    own = rf.switching.FhewToCkks(fhew, ctx, slots=32)
    with pytest.raises(ValueError, match="small-ring key made for ring_degree=4096"):
        own.load_key(data)
    # An embedding key below the result's level is refused by name.
    small_sk, _ = switch.to_ckks.work.keygen()
    low = rf.rlwe.keys.EmbeddingKey(_core.generate_embedding_key(sk._native, small_sk._native, 0, ctx._prng), ctx)
    with pytest.raises(ValueError, match="embedding key serves levels up to 0"):
        switch.to_ckks._check_key(rf.switching.SmallRingKey(pair.secret.secret, pair.secret.galois,
                                                            pair.secret.relin, low))


def test_a_key_of_another_kind_in_the_embedding_part_is_refused(toy):
    """A blob whose embedding part is the large ring's relinearization key (same layout,
    another kind: a mix-up, or a naive substitution) is refused by name, as is a key of the
    first format. (A relabelled key is stopped by the ring key's digest or MAC, tested in
    test_a_round_trip_through_the_small_ring_and_its_keys_as_bytes, not by the kind.)"""
    ctx, fhew, fsk = toy
    switch = quiet(lambda: rf.switching.SchemeSwitch(ctx, fhew, slots=16, out_bits=1, ring_degree=2**12))
    sk, keys = ctx.keygen(rotations=switch.rotations())
    pair = quiet(lambda: switch.keygen(sk, fsk, keys))
    key = pair.secret
    assert isinstance(key.embedding, rf.rlwe.keys.EmbeddingKey) and "from N=4096" in repr(key.embedding)
    parts = [key.secret.to_bytes(), key.galois.to_bytes(), key.relin.to_bytes(), keys.relin.to_bytes()]
    crafted = (b"RFSMALL2" + np.array([2**13, 2**12], dtype="<u4").tobytes()
               + np.array([len(p) for p in parts], dtype="<u8").tobytes() + b"".join(parts))
    with pytest.raises(ValueError, match="embedding part holds a RelinKey, not the EmbeddingKey"):
        switch.to_ckks.load_key(crafted)
    with pytest.raises(ValueError, match="first format"):
        switch.to_ckks.load_key(b"RFSMALL1" + key.to_bytes()[8:])
    with pytest.raises(ValueError, match="expected a relinearization key, got an embedding key"):
        _core.load_relin_key(ctx._core.rlwe, key.embedding.to_bytes())
    with pytest.raises(ValueError, match="stays on the host"):
        key.embedding.to("cuda")


def test_a_deterministic_context_makes_its_small_ring_deterministic():
    """A context seeded for tests passes the seed on (the same small-ring keys twice); one
    seeded by the operating system gives a small ring that is too (different keys)."""
    def small_secret(seed):
        ctx = quiet(lambda: rf.ckks.Context(2**13, [60] + [40] * 14 + [60], 40, insecure_no_security_check=True,
                                            insecure_deterministic_seed=seed))
        ring = quiet(lambda: SmallRing(ctx, 2**12))
        assert ring.context._prng.deterministic == (seed is not None)
        return quiet(lambda: ring.context.keygen()[0].to_bytes())
    assert small_secret(bytes(32)) == small_secret(bytes(32))
    assert small_secret(None) != small_secret(None)


def test_the_small_ring_refuses_what_it_cannot_do(toy):
    ctx, fhew, fsk = toy
    for degree in (3000, 2**14, 512, 2.0**12, 8192.0, "large"):
        with pytest.raises(ValueError, match="ring_degree must be 'auto', None or a power of two"):
            rf.switching.FhewToCkks(fhew, ctx, slots=16, ring_degree=degree)
    assert rf.switching.FhewToCkks(fhew, ctx, slots=16, ring_degree=2**13).small is None  # the context's own ring
    with pytest.raises(ValueError, match="cannot hold the LWE secret"):
        quiet(lambda: rf.switching.FhewToCkks(fhew, ctx, slots=16, ring_degree=2**10))
    back = quiet(lambda: rf.switching.FhewToCkks(fhew, ctx, slots=16, ring_degree=2**12))
    sk, keys = ctx.keygen()
    with pytest.raises(ValueError, match="needs the CKKS secret key too"):
        back.keygen(fsk, keys)
    with pytest.raises(ValueError, match="levels from a level at most"):
        back.keygen(fsk, keys, secret_key=sk, level=back.depth - 1)
    lwe = fhew.encrypt(np.zeros(16, dtype=int), fsk, bits=1)
    with pytest.raises(TypeError, match="expected the SmallRingKey"):
        back(ctx.evaluator(keys), lwe, ctx.encrypt(np.ones(4), keys))
    # A chain shorter than the way back: SchemeSwitch stays in the context's ring (the way there
    # still runs), an explicit small ring is refused with the levels.
    short = quiet(lambda: rf.ckks.Context(2**13, [60, 40, 40, 60], 40, insecure_no_security_check=True))
    assert rf.switching.SchemeSwitch(short, fhew, slots=16).to_ckks.small is None
    with pytest.raises(ValueError, match="chain has 2 levels; the way back takes 13"):
        rf.switching.FhewToCkks(fhew, short, slots=16, ring_degree=2**12)
    # A FHEW set of a small LWE dimension: the least small ring is still 2^10.
    toy_fhew = quiet(lambda: rf.tfhe.Context("TOY", insecure=True))
    assert quiet(lambda: rf.switching.SchemeSwitch(ctx, toy_fhew, slots=16)).to_ckks.work.poly_degree == 1024
    # At 128-bit security a ring of 2^14 holds too short a part of a 2^16 chain for the way back.
    secure = rf.ckks.Context(2**16, [60] + [40] * 15 + [60], 40)
    with pytest.raises(ValueError, match="choose a larger ring_degree"):
        rf.switching.FhewToCkks(fhew, secure, slots=16, ring_degree=2**14)
    assert SmallRing(secure, 2**15).top == secure.max_level


def test_the_shared_small_ring_does_not_keep_its_context_alive(toy):
    _, fhew, _ = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # toy rings
        ctx = rf.ckks.Context(2**13, [60] + [40] * 14 + [60], 40, insecure_no_security_check=True)
        switch = rf.switching.SchemeSwitch(ctx, fhew, slots=16)
    assert ctx in small_ring._SHARED and switch.to_ckks.small.large is ctx
    alive = weakref.ref(ctx)
    del switch, ctx
    gc.collect()
    assert alive() is None  # and so gone from the map of shared rings too
