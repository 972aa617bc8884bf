"""Traces of real runs (ringfire.tracing): counts against hand-derived formulas, dry runs, files, threads."""

import json
import math
import threading

import numpy as np
import pytest

import ringfire as rf
from ringfire.tracing import Trace


def _keyswitch_formulas(L: int, K: int, alpha: int) -> dict:
    """Ring operations of one hybrid key switch of a ciphertext with L limbs, K special primes, digits of alpha.

    iNTT of the input (L); per digit j of a_j limbs, ModUp converts a_j -> b_j = L + K - a_j limbs
    (exact conversion: a_j + a_j b_j + b_j products, a_j b_j sums) and transforms the b_j new limbs;
    the inner product sums the digits against the key for both outputs over L + K limbs; ModDown, for
    both outputs: iNTT of the K special limbs, conversion K -> L, NTT of L limbs, subtraction and the
    product by P^-1; relinearization then adds the two results into (c0, c1).
    """
    digits = [min(alpha, L - s) for s in range(0, L, alpha)]
    beta, ext = len(digits), L + K
    return {
        "ntt": sum(ext - a for a in digits) + 2 * L,
        "intt": L + 2 * K,
        "mult": 2 * beta * ext + sum(a + a * (ext - a) + (ext - a) for a in digits) + 2 * (K + K * L + L) + 2 * L,
        "add": 2 * (beta - 1) * ext + sum(a * (ext - a) for a in digits) + 2 * K * L + 2 * L + 2 * L,
    }


def _by_primitive(t: Trace, label: str, n: int) -> dict:
    return {p: c for (lab, p, size), c in t.primitives(by="label").items() if lab == label and size == n}


@pytest.mark.parametrize("coeff_bits,special_bits,dnum", [
    ([40, 30, 30, 30], [60], 4),          # one special prime, one limb per digit (SEAL's shape)
    ([40, 30, 30, 30], [40, 40], 2),      # two digits of two limbs
    ([30, 25, 25, 25, 25], [30, 30], 3),  # a short last digit (2 + 2 + 1)
])
def test_relinearize_counts_equal_the_formula(coeff_bits, special_bits, dnum):
    ctx = rf.ckks.Context(8192, coeff_bits, scale_bits=25, special_bits=special_bits, dnum=dnum)
    sk, keys = ctx.keygen()
    x = ctx.encrypt(np.ones(4), keys)
    ev = ctx.evaluator(keys)
    y = ev.multiply(x, x)                      # size 3, unrelinearized
    with rf.trace() as t:
        ev.relinearize(y)
    L, K, alpha = len(coeff_bits), len(special_bits), ctx.params.alpha
    assert _by_primitive(t, "ckks.relinearize", 8192) == _keyswitch_formulas(L, K, alpha)
    inner = [e for e in t.entries if e["kernel"] == "inner_product_pair"]
    beta = math.ceil(L / alpha)
    # One pass over the level's limbs and one over the special limbs: each reads every digit and
    # both key halves, and writes the two sums.
    assert sorted(e["limbs"] for e in inner) == sorted([L, K])
    for e in inner:
        assert e["calls"] == 1 and e["terms"] == beta
        assert e["bytes_read"] == 3 * beta * e["limbs"] * 8192 * 8
        assert e["bytes_written"] == 2 * e["limbs"] * 8192 * 8


def test_rotation_counts_add_one_automorphism_per_output_limb_pair():
    ctx = rf.ckks.Context(8192, [40, 30, 30], scale_bits=30, special_bits=[60], dnum=3)
    sk, keys = ctx.keygen(rotations=[1])
    x = ctx.encrypt(np.arange(4.0), keys)
    with rf.trace() as t:
        x.rotate(1)
    prims = _by_primitive(t, "ckks.rotate", 8192)
    ks = _keyswitch_formulas(3, 1, ctx.params.alpha)
    assert prims["ntt"] == ks["ntt"] and prims["intt"] == ks["intt"]
    assert prims["automorphism"] >= 2 * 3    # both outputs, every limb


def test_dry_run_counts_equal_the_real_run_for_a_bootstrap():
    with pytest.warns(RuntimeWarning):
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
    with pytest.warns(RuntimeWarning):
        sk, keys = ctx.keygen(bootstrap=True)
    x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    with rf.trace(dry_run=True) as dry:
        ct.bootstrap()
    with rf.trace() as real:
        y = ct.bootstrap()
    assert dry.counts() == real.counts()
    assert dry.dry_run and not real.dry_run
    counts = real.primitives()
    assert counts[("ntt", 4096)] > 1000 and counts[("automorphism", 4096)] > 100
    # The traced run really ran: the result decrypts to the input.
    assert np.abs(ctx.decrypt(y, sk).real - x).max() < 1e-4


def test_dry_run_does_not_compute(ckks_small):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.full(4, 0.5), keys)
    before = x.to_bytes()
    with rf.trace(dry_run=True):
        y = x + x
    assert y.to_bytes() != (x + x).to_bytes()   # the dry result was never computed
    assert x.to_bytes() == before


def test_bgv_operations_are_labelled():
    ctx = rf.bgv.Context.preset("N13") if hasattr(rf.bgv.Context, "preset") else None
    if ctx is None:
        pytest.skip("no BGV preset")
    sk, keys = ctx.keygen()
    a = ctx.encrypt(np.arange(8), keys)
    with rf.trace() as t:
        b = a * a
    labels = {e["label"] for e in t.entries}
    assert any(label.startswith("bgv.") for label in labels), labels
    assert np.array_equal(ctx.decrypt(b, sk)[:8], np.arange(8) ** 2 % ctx.plain_modulus)


def test_calls_from_threads_are_all_counted(ckks_small):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.ones(4), keys)
    with rf.trace() as one:
        _ = x * x
    with rf.trace() as four:
        threads = [threading.Thread(target=lambda: x * x) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert {k: 4 * v for k, v in one.primitives().items()} == four.primitives()


def test_one_trace_at_a_time_and_closed_on_errors():
    with rf.trace():
        with pytest.raises(ValueError, match="already open"):
            with rf.trace():
                pass
    assert not rf.tracing.is_tracing()
    with pytest.raises(ZeroDivisionError):
        with rf.trace():
            1 / 0
    assert not rf.tracing.is_tracing()


def test_files_round_trip_and_bad_files_are_refused(tmp_path, ckks_small):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.ones(4), keys)
    with rf.trace(workload="square") as t:
        _ = x * x
    path = tmp_path / "t.json"
    t.save(path)
    back = Trace.load(path)
    assert back.entries == t.entries and back.meta["workload"] == "square"
    assert back.primitives() == t.primitives()
    t.save(tmp_path / "t.csv")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0].startswith("kernel,label,device") and len(lines) == len(t.entries) + 1
    for bad, message in [({"format": "x"}, "not a ringfire trace"),
                         ({"format": "ringfire-trace", "version": 99, "entries": []}, "version"),
                         ({"format": "ringfire-trace", "version": 1, "entries": [{"kernel": "ntt_forward"}]}, "lacks"),
                         ({"format": "ringfire-trace", "version": 1,
                           "entries": [dict(t.entries[0], calls=-1)]}, "non-negative")]:
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            Trace.load(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        Trace.load(tmp_path / "bad.json")


def test_traces_add(ckks_small):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.ones(4), keys)
    with rf.trace(workload="a") as a:
        _ = x * x
    with rf.trace(workload="b") as b:
        _ = x + x
    both = a + b
    for key in set(a.primitives()) | set(b.primitives()):
        assert both.primitives().get(key, 0) == a.primitives().get(key, 0) + b.primitives().get(key, 0)
    assert both.meta["parts"] == ["a", "b"]


def test_summaries(ckks_small):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.ones(4), keys)
    with rf.trace() as t:
        _ = x * x
    text = t.table("primitive")
    assert "ckks.relinearize" in text and "ntt" in text
    by_kernel = t.totals("kernel")
    assert sum(r["calls"] for r in by_kernel) == sum(e["calls"] for e in t.entries)
    assert "calls" in t.table("kernel")
    with pytest.raises(ValueError, match="cannot group"):
        t.totals("colour")
    assert "backend calls" in repr(t)


def test_real_runs_are_timed_per_kernel(ckks_small, tmp_path):
    ctx, sk, keys = ckks_small
    x = ctx.encrypt(np.ones(4), keys)
    with rf.trace() as t:
        for _ in range(3):
            _ = x * x
    assert t.timed
    # One calling thread: its calls run one after another inside the block.
    inside = sum(e["nanoseconds"] for e in t.entries)
    assert 0 < inside <= t.seconds * 1e9
    assert all(e["nanoseconds"] > 0 for e in t.entries if e["kernel"] == "ntt_forward")
    rows = t.totals("kernel")
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    assert math.isclose(sum(r["seconds"] for r in rows), inside / 1e9)
    assert "% of kernel time" in t.table("kernel")

    with rf.trace(dry_run=True) as dry:
        _ = x * x
    assert not dry.timed and all(e["nanoseconds"] == 0 for e in dry.entries)
    assert "ms" not in dry.table("kernel").split()

    # A trace saved before entries were timed still loads, untimed.
    d = t.to_dict()
    for e in d["entries"]:
        del e["nanoseconds"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    old = Trace.load(tmp_path / "old.json")
    assert not old.timed and old.primitives() == t.primitives()
