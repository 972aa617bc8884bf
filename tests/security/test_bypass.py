"""The only way to insecure parameters is the named opt-out, and it warns
every time: in the constructor, and when parameters are loaded."""

import time
import warnings

import pytest

import ringfire as rf

from blobs import envelope, parameters_payload

TOY = dict(poly_degree=1024, coeff_bits=[40, 30], scale_bits=30, special_bits=[40])  # 110 bits > 27


@pytest.mark.parametrize("security", [0, 1, 64, 100, -128])
def test_no_security_level_turns_the_check_off(security):
    with pytest.raises(ValueError, match="security must be 128, 192 or 256 bits"):
        rf.ckks.Context(**TOY, security=security)
    with pytest.raises(ValueError, match="security must be 128, 192 or 256 bits"):
        rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 60], scale_bits=40, security=security)


def test_the_named_opt_out_warns_every_time():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            rf.ckks.Context(**TOY, insecure_no_security_check=True)
    assert [w.category for w in caught if "security check is disabled" in str(w.message)] == [RuntimeWarning] * 3
    with pytest.warns(RuntimeWarning, match="insecure_no_security_check"):
        ctx = rf.ckks.Context(**TOY, insecure_no_security_check=True)
    assert ctx.params.security == 0


def test_warnings_as_errors_stop_the_opt_out():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="security check is disabled"):
            rf.ckks.Context(**TOY, insecure_no_security_check=True)


def test_loading_insecure_parameters_needs_the_opt_out_and_warns():
    with pytest.warns(RuntimeWarning):
        blob = rf.ckks.Context(**TOY, insecure_no_security_check=True).to_bytes()
    with pytest.raises(ValueError, match="without the security check.*insecure_no_security_check"):
        rf.ckks.Context.from_bytes(blob)
    secure = rf.ckks.Context.preset("N13_D2")
    with pytest.raises(ValueError, match="without the security check"):
        secure.load(blob)
    with pytest.warns(RuntimeWarning, match="security check is disabled"):
        loaded = rf.ckks.Context.from_bytes(blob, insecure_no_security_check=True)
    assert loaded.params.security == 0


def test_a_crafted_huge_parameter_blob_is_refused_at_once():
    # N = 2^17 with 256 + 64 primes (the review's 2.6 KB blob took 42.6 s and 1.75 GiB to load).
    n = 2**17
    q = [(1 << 59) + 1 + 2 * n * i for i in range(256)]
    p = [(1 << 60) - 1 - 2 * n * i for i in range(64)]
    for security in (0, 128):
        blob = envelope("parameters", parameters_payload(n, q, p, 1, security, 40))
        assert len(blob) < 3000
        start = time.perf_counter()
        with pytest.raises(ValueError, match="security"):
            rf.ckks.Context.from_bytes(blob)
        assert time.perf_counter() - start < 0.5


def test_warnings_point_at_the_callers_line():
    with pytest.warns(RuntimeWarning, match="security check is disabled") as caught:
        rf.ckks.Context.preset("N13_D2", insecure_no_security_check=True)  # through preset() and __init__
    assert caught[0].filename == __file__


def test_security_must_be_a_number_of_bits():
    with pytest.raises(TypeError, match="security is 128, 192 or 256"):
        rf.ckks.Context(**TOY, security=None)
