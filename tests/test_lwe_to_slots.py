"""FHEW ciphertexts into BGV/BFV slots through tables (ringfire.switching.LweToSlots), and the
functional bootstrap of BGV/BFV slots built on it (ringfire.switching.BgvSlotBootstrap),
checked against NumPy: every slot of the decryption in slots against the scaled phases, tables
on every input, signed reads of differences, a bootstrapped result multiplied and bootstrapped
again, the keys as bytes, crafted blobs and every refusal by its message."""

import pathlib

import numpy as np
import pytest

import ringfire as rf

T = 65537
BITS = 3
# N = 2048 holds STD128's LWE secret (556 values, repeated every 1024 slots) in a row; the
# chain is deep enough for the table's 17 levels and two more, far outside the security
# bounds of this ring (hence the flag): the 128-bit run is the benchmark's (N = 2^15).
CHAIN = [30] + [36] * 20 + [60]
pytestmark = pytest.mark.filterwarnings("ignore:.*insecure")
# The slot bootstrap's inputs: 16 signed values of 9 bits, and two rows of bytes to compare.
SIGNED = np.array([-256, -255, -129, -1, 0, 1, 2, 127, 128, 200, 255, -77, 33, -3, 99, -200])
BYTES = (np.array([0, 255, 7, 7, 100, 5, 6, 0, 1, 200, 3, 0, 4, 254, 6, 1]),
         np.array([0, 254, 8, 6, 100, 5, 255, 1, 0, 201, 3, 255, 12, 255, 14, 1]))


@pytest.fixture(scope="module", params=["bgv", "bfv"])
def setup(request, fhew_std128):
    fhew, fsk = fhew_std128
    ctx = getattr(rf, request.param).Context(2048, plain_modulus=T, coeff_bits=CHAIN, insecure_no_security_check=True,
                                             insecure_deterministic_seed=bytes(32))
    sk, keys = ctx.keygen()
    to_slots = rf.switching.LweToSlots(ctx, fhew, bits=BITS)
    return ctx, sk, keys, fhew, fsk, to_slots, to_slots.keygen(sk, fsk)


def test_fhew_integers_land_in_slots_through_a_table(setup):
    ctx, sk, keys, fhew, fsk, to_slots, key = setup
    m = np.random.default_rng(1).integers(0, 1 << BITS, 700)
    lwe = fhew.encrypt(m, fsk, bits=BITS)
    phases = ctx.decrypt(to_slots.decrypt_in_slots(lwe, key), sk, signed=False)
    unit = T / (2 << BITS)
    error = (phases[:700] - m * unit + T / 2) % T - T / 2
    assert np.abs(error).max() < unit / 4                                # the scaled phases, each near its cell's centre
    out = to_slots(lwe, key, lambda v: 3 * v * v + 1)
    want = np.concatenate([3 * m * m + 1, np.ones(ctx.slots - 700, dtype=np.int64)])  # the rest read m = 0
    assert np.array_equal(ctx.decrypt(out, sk), want)
    assert out.level >= ctx.max_level - to_slots.levels and ctx.noise_budget(out, sk) > 10


def test_differences_read_signed_across_the_whole_circle(setup):
    ctx, sk, keys, fhew, fsk, to_slots, key = setup
    a, b = np.arange(16) % 8, np.full(16, 3)
    d = fhew.encrypt(a, fsk, bits=BITS) - fhew.encrypt(b, fsk, bits=BITS)   # in [-3, 4]: negatives wrap
    table = to_slots.table(lambda v: v)                                  # built once, used twice
    assert np.array_equal(ctx.decrypt(to_slots(d, key, table), sk)[:16], a - b)
    assert np.array_equal(ctx.decrypt(to_slots(d, key, lambda v: (v > 0) * 1), sk)[:16], (a > b) * 1)


def test_slot_bootstrap_reads_8_bits_compares_and_bootstraps_its_own_results(setup):
    ctx, sk, keys, fhew, fsk = setup[:5]
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=16, bits=8)
    bkeys = boot.keygen(sk, fsk)
    assert boot.failure_probability(bkeys) < 1e-15
    x = SIGNED
    ct = ctx.encrypt(x, keys)
    fresh = boot.refresh(ct, bkeys)
    assert np.array_equal(ctx.decrypt(fresh, sk), x)                    # the input's 16 values
    longer = boot.refresh(ctx.encrypt(np.resize(x, ctx.slots), keys), bkeys)          # only the first 16 are read
    assert np.array_equal(ctx.decrypt(longer, sk), x)
    assert fresh.level >= ctx.max_level - boot.levels
    assert np.array_equal(ctx.decrypt(boot.sign(ct, bkeys), sk)[:16], (x > 0) * 1)
    squares = boot.lut(ct, lambda v: v * v, bkeys)                       # up to 65536: mod t
    assert np.array_equal(ctx.decrypt(squares, sk, signed=False)[:16], x * x % T)
    a, b = BYTES
    assert np.array_equal(ctx.decrypt(boot.compare(ctx.encrypt(a, keys), ctx.encrypt(b, keys), bkeys), sk)[:16],
                          (a > b) * 1)
    # A bootstrapped result computes on and is bootstrapped again: real bootstrapping.
    halved = boot.lut(fresh * 2 + 1, lambda v: v // 2, bkeys)             # 2x + 1 in [-511, 511] reads mod 512
    wrapped = (2 * x + 1 + 256) % 512 - 256
    assert np.array_equal(ctx.decrypt(halved, sk)[:16], wrapped // 2)


# What follows is built on refresh, lut and compare, whatever the scheme: every run checks it on
# BGV, and BFV's run is in the slow set (a minute and a half of this file's five).
@pytest.mark.parametrize("setup", ["bgv", pytest.param("bfv", marks=pytest.mark.slow)], indirect=True)
def test_slot_bootstrap_maxima_orders_tournaments_and_keys_as_bytes(setup):
    ctx, sk, keys, fhew, fsk = setup[:5]
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=16, bits=8)
    bkeys = boot.keygen(sk, fsk)
    x = SIGNED
    ct = ctx.encrypt(x, keys)
    a, b = BYTES
    assert np.array_equal(ctx.decrypt(boot.compare(ctx.encrypt(a, keys), 100, bkeys), sk)[:16], (a > 100) * 1)
    ca, cb = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    assert np.array_equal(ctx.decrypt(boot.max(ca, cb, bkeys), sk)[:16], np.maximum(a, b))
    assert np.array_equal(ctx.decrypt(boot.min(ca, cb, bkeys), sk)[:16], np.minimum(a, b))
    assert np.array_equal(ctx.decrypt(boot.max(ca, 100, bkeys), sk)[:16], np.maximum(a, 100))
    with pytest.raises(ValueError, match=r"max reads integers in \[0, 256\)"):
        boot.max(ca, 256, bkeys)
    # The staged map's order (bit-reversed coefficients) comes back in slot order.
    staged = rf.switching.BgvSlotBootstrap(ctx, fhew, count=64, bits=8, method="staged")
    y = np.arange(-32, 32) * 7
    out = staged.lut(ctx.encrypt(y, keys), lambda v: v + 1, staged.keygen(sk, fsk))
    assert np.array_equal(ctx.decrypt(out, sk)[:64], y + 1)
    # The largest of 8 slots and where it is (ties all marked), against NumPy.
    eight = rf.switching.BgvSlotBootstrap(ctx, fhew, count=8, bits=8)
    ekeys, galois = eight.keygen(sk, fsk), ctx.galois_keys(sk, eight.tournament_rotations)
    assert eight.tournament_rotations == [4, 2, 1, -1, -2, -4]
    for v in ([17, 200, 3, 0, 199, 255, 254, 1], [9, 250, 3, 250, 0, 0, 7, 1]):
        cv = ctx.encrypt(v, keys)
        assert ctx.decrypt(eight.max_of_slots(cv, ekeys, galois), sk).tolist() == [max(v)]
        assert ctx.decrypt(eight.argmax_of_slots(cv, ekeys, galois), sk).tolist() == [int(u == max(v)) for u in v]
    with pytest.raises(TypeError, match="tournament_rotations"):
        eight.max_of_slots(ctx.encrypt(a[:8], keys), ekeys, keys)
    # The keys as bytes, and crafted blobs.
    blob = bkeys.to_bytes()
    again = boot.load_keys(blob)
    assert np.array_equal(ctx.decrypt(boot.refresh(ct, again), sk)[:16], x)
    with pytest.raises(ValueError, match="declare"):
        boot.load_keys(blob[:-1])
    with pytest.raises(ValueError, match="not ringfire BGV slot bootstrapping keys"):
        boot.load_keys(b"RFBGVSB1" + blob[8:])


def test_16_bit_integers_read_rescaled_and_refreshed_over_the_whole_of_t(setup):
    ctx, sk, keys, fhew, fsk = setup[:5]
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=1024, bits=8, method="dense")
    bkeys = boot.keygen(sk, fsk)
    half, sigma = (T - 1) // 2, boot.read_error(bkeys)
    x = np.random.default_rng(7).integers(-half, half + 1, 1024)
    x[:10] = [-half, half, 0, 1, -1, 64, -64, 192, half - 1, -half + 1]
    ct = ctx.encrypt(x, keys)

    def centred(v):
        return (v + half) % T - half

    # The read's error against its model (about 7.6 units here).
    error = centred(ctx.decrypt(boot.lut_wide(ct, lambda v: v, bkeys), sk) - x)
    assert 0.8 * sigma < error.std() < 1.2 * sigma and np.abs(error).max() < 8 * sigma
    # A rescale by 2^7: within one of x / 128, and rounded exactly where x is farther than
    # 6 sigma from a half; within the read's error of +-half a read may wrap.
    inner = np.abs(x) < half - 8 * sigma
    got = ctx.decrypt(boot.rescale(ct, 7, bkeys), sk)
    assert np.abs(got - x / 128)[inner].max() < 1
    far = inner & (np.abs(np.abs(x) % 128 - 64) > 6 * sigma)
    assert np.array_equal(got[far], (np.sign(x) * ((np.abs(x) + 64) >> 7))[far])
    # A sign (not odd: its value at half is given up), right away from 0.
    sign = ctx.decrypt(boot.lut_wide(ct, lambda v: (v > 0) * 1, bkeys), sk)
    clear = inner & (np.abs(x) > 6 * sigma)
    assert np.array_equal(sign[clear], (x[clear] > 0) * 1)
    # The exact refresh, every x in Z_t including +-half, and again after a product.
    fresh = boot.refresh_wide(ct, bkeys)
    assert np.array_equal(ctx.decrypt(fresh, sk), x) and fresh.level >= ctx.max_level - boot.levels
    again = boot.refresh_wide(fresh * 3 + 5, bkeys)
    assert np.array_equal(ctx.decrypt(again, sk), centred(3 * x + 5))
    with pytest.raises(ValueError, match=r"shift must be an int in \[1, 15\], got 0"):
        boot.rescale(ct, 0, bkeys)
    with pytest.raises(ValueError, match="shift must be an int"):
        boot.rescale(ct, 2.5, bkeys)
    with pytest.warns(RuntimeWarning, match="off by more than one"):
        boot.rescale(ct, 3, bkeys)
    with pytest.raises(TypeError, match="a table takes a function .* got str"):
        boot.lut_wide(ct, "x", bkeys)
    with pytest.raises(TypeError, match="BgvSlotBootstrapKeys from keygen, got KeySet"):
        boot.read_error(keys)
    staged = rf.switching.BgvSlotBootstrap(ctx, fhew, count=1024, bits=8, method="staged")
    with pytest.raises(ValueError, match="refresh_wide reads its low digit .* method='dense'"):
        staged.refresh_wide(ct, staged.keygen(sk, fsk))


def test_keys_round_trip_as_bytes_and_crafted_blobs_are_refused(setup):
    ctx, sk, keys, fhew, fsk, to_slots, key = setup
    blob = key.to_bytes()
    again = to_slots.load_key(blob)
    m = np.arange(16) % 8
    assert np.array_equal(ctx.decrypt(to_slots(fhew.encrypt(m, fsk, bits=BITS), again), sk)[:16], m)
    with pytest.raises(ValueError, match="not a ringfire LWE-to-slots key"):
        to_slots.load_key(b"RFBGVSL1" + blob[8:])
    with pytest.raises(ValueError, match="declare"):
        to_slots.load_key(blob[:-1])
    with pytest.raises(TypeError, match="bytes of LweToSlotsKey"):
        to_slots.load_key("text")
    head = 8 + 32
    fewer = bytearray(blob)
    fewer[head:head + 4] = (to_slots.baby - 1).to_bytes(4, "little")
    with pytest.raises(ValueError, match=f"holds {to_slots.baby - 1} encrypted secrets"):
        to_slots.load_key(bytes(fewer))
    # The relinearization key where the first encrypted secret belongs: refused by its kind.
    count = to_slots.baby + 2
    lengths = [int.from_bytes(blob[head + 8 + 8 * i:head + 16 + 8 * i], "little") for i in range(count)]
    body = head + 8 + 8 * count
    starts = np.concatenate([[0], np.cumsum(lengths)]) + body
    parts = [blob[starts[i]:starts[i + 1]] for i in range(count)]
    parts[0] = parts[to_slots.baby]
    crafted = blob[:head + 8] + b"".join(len(p).to_bytes(8, "little") for p in parts) + b"".join(parts)
    with pytest.raises(ValueError, match="secret part holds a RelinKey"):
        to_slots.load_key(crafted)
    assert len(key.galois.to_bytes()) < len(blob) / 4                     # one Galois key: the baby steps are encrypted


def test_refusals_name_the_problem(setup, fhew_std128):
    ctx, sk, keys, fhew, fsk, to_slots, key = setup
    with pytest.raises(ValueError, match="257 or 65537"):
        rf.switching.LweToSlots(rf.bgv.Context(2**13, plain_bits=20), fhew, bits=BITS)
    with pytest.raises(ValueError, match="a larger first prime"):
        rf.switching.BgvSlotBootstrap(rf.bgv.Context(2**15, plain_modulus=T, depth=19), fhew, count=16, bits=BITS)
    boot = rf.switching.BgvSlotBootstrap(ctx, fhew, count=16, bits=BITS)
    with pytest.raises(TypeError, match="BgvSlotBootstrapKeys from keygen"):
        boot.refresh(ctx.encrypt([1], keys), key)
    bkeys = boot.keygen(sk, fsk)
    with pytest.raises(ValueError, match="at level 0"):
        boot.refresh(ctx.encrypt([1], keys).mod_reduce(0), bkeys)
    with pytest.warns(RuntimeWarning, match="read wrong with probability"):             # 12 bits: cells of 8
        rf.switching.BgvSlotBootstrap(ctx, fhew, count=16, bits=12).refresh(ctx.encrypt([1], keys), bkeys)
    with pytest.raises(ValueError, match=r"bits must be an int in \[1, 14\]"):
        rf.switching.LweToSlots(ctx, fhew, bits=15)
    small = rf.bgv.Context(1024, plain_modulus=T, coeff_bits=CHAIN, insecure_no_security_check=True)
    with pytest.raises(ValueError, match="does not fit a row"):
        rf.switching.LweToSlots(small, fhew, bits=BITS)
    with pytest.raises(ValueError, match="2-bit FHEW integers"):
        to_slots(fhew.encrypt([1], fsk, bits=2), key)
    with pytest.raises(TypeError, match="FHEW ciphertexts of this switch's context"):
        to_slots(ctx.encrypt([1], keys), key)
    with pytest.raises(TypeError, match="LweToSlotsKey from keygen"):
        to_slots(fhew.encrypt([1], fsk, bits=BITS), keys)
    with pytest.raises(ValueError, match="do not fit N = 2048 slots"):
        to_slots(fhew.encrypt(np.zeros(2049, dtype=np.int64), fsk, bits=BITS), key)
    noisy = fhew.encrypt([1], fsk, bits=BITS)
    noisy.variance = 1e4
    with pytest.warns(RuntimeWarning, match="read wrong with probability"):
        to_slots.decrypt_in_slots(noisy, key)
    with pytest.raises(ValueError, match="another context"):
        to_slots(fhew.encrypt([1], fsk, bits=BITS), key, rf.switching.LweToSlots(
            getattr(rf, ctx.scheme).Context(2048, plain_modulus=T, coeff_bits=CHAIN, insecure_no_security_check=True),
            fhew, bits=BITS).table(lambda v: v))


@pytest.mark.slow
def test_the_docs_snippet_runs_and_prints_what_it_says(capsys):
    # 128-bit, N = 2^15: about three minutes and 4 GB (hence slow).
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "switching.md").read_text()
    snippet = text.split("## Functional bootstrapping of BGV and BFV slots")[1].split("```python\n")[1].split("```")[0]
    wide = text.split("### 16-bit integers")[1].split("```python\n")[1].split("```")[0]
    names: dict = {}
    exec(compile(snippet, "docs/switching.md", "exec"), names)
    exec(compile(wide, "docs/switching.md", "exec"), names)             # continues from the first
    assert capsys.readouterr().out.split("\n")[:5] == ["[ 9  1  0 91 25 25  4 94]", "[1 0 0 1 0 1 1 0]",
                                                        "[ -91  -99 -100   -9  -75  -75  -96   -6] 3",
                                                        "[234 -96   1  -1   0   0]",
                                                        "[ 29960 -12300    129   -110      0      5]"]
