"""The CPU's RNS kernels on AVX-512 IFMA (NTTs, products, inner products, base
conversions) give the AVX2 kernels' words: the same seeded work under each --
keys, encryption, products, rotations, a bootstrap; CKKS, BGV and BFV -- ends in
the same bytes. Skipped on a CPU without AVX-512 IFMA."""

import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core

SEED = bytes(range(32))

needs_avx512 = pytest.mark.skipif(not _core.rns_avx512_available(), reason="no AVX-512 IFMA on this CPU")


@pytest.fixture
def isa():
    was = rf.rns_isa()
    yield
    rf.set_rns_isa(was)


def both(work):
    """work()'s bytes under avx512, then under avx2."""
    rf.set_rns_isa("avx512")
    wide = work()
    rf.set_rns_isa("avx2")
    return wide, work()


def ckks_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = rf.ckks.Context(poly_degree=2**12, coeff_bits=[60, 40, 40, 40], special_bits=[60], scale_bits=40,
                              insecure_no_security_check=True, insecure_deterministic_seed=SEED)
    sk, keys = ctx.keygen(rotations=[1, 3])
    ev = ctx.evaluator(keys)
    x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    square = ev.relinearize_rescale(ev.square(ct))
    moved = ev.rotate_many(square, [1, 3])
    return [keys.public.to_bytes(), keys.relin.to_bytes(), keys.galois.to_bytes(), ct.to_bytes(), square.to_bytes(),
            *(c.to_bytes() for c in moved)]


def integer_work(scheme):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = scheme.Context(poly_degree=2**12, plain_modulus=65537, coeff_bits=[50, 45, 45], special_bits=[60],
                             insecure_no_security_check=True, insecure_deterministic_seed=SEED)
    sk, keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys)
    x = np.random.default_rng(1).integers(0, 65537, ctx.slots)
    ct = ctx.encrypt(x, keys)
    product = ev.relinearize(ev.multiply(ct, ct))
    return [ct.to_bytes(), product.to_bytes(), ev.rotate(product, 1).to_bytes()]


@needs_avx512
def test_ckks_gives_the_same_words_on_both(isa):
    wide, narrow = both(ckks_work)
    assert wide == narrow


@needs_avx512
@pytest.mark.parametrize("scheme", ["bgv", "bfv"])
def test_bgv_and_bfv_give_the_same_words_on_both(isa, scheme):
    wide, narrow = both(lambda: integer_work(getattr(rf, scheme)))
    assert wide == narrow


@needs_avx512
def test_a_bootstrap_gives_the_same_words_on_both(isa):
    def bootstrap():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE", insecure_deterministic_seed=SEED)
        sk, keys = ctx.keygen(bootstrap=True)
        x = np.random.default_rng(2).uniform(-1, 1, ctx.slots)
        ct = ctx.evaluator().mod_switch(ctx.encrypt(x, keys), 0)
        return [ct.bootstrap().to_bytes()]
    wide, narrow = both(bootstrap)
    assert wide == narrow


def test_the_choice_is_checked_and_recorded(isa):
    """Unknown names and AVX-512 on a CPU without it are refused; benchmarks record the choice."""
    from ringfire.bench.foundations import machine_info
    assert rf.rns_isa() in ("avx512", "avx2", "scalar")
    assert machine_info()["rns_isa"] == rf.rns_isa()
    with pytest.raises(ValueError, match="unknown instruction set"):
        rf.set_rns_isa("sse2")
    if not _core.rns_avx512_available():
        with pytest.raises(ValueError, match="no AVX-512 IFMA"):
            rf.set_rns_isa("avx512")
