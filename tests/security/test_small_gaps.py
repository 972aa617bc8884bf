"""The review's smaller findings: overflowing values give a readable error
(no undefined float-to-int conversion), loading does not hold the GIL."""

import threading
import time

import numpy as np
import pytest

import ringfire as rf


def test_values_that_overflow_when_scaled_say_so():
    ctx = rf.ckks.Context.preset("N13_D2")
    for values in (np.full(4, 1e300), np.array([1.0, -1e300, 2.0])):
        with pytest.raises(ValueError) as err:
            ctx.encode(values)
        assert "overflows a double" in str(err.value) and "2147483648" not in str(err.value)
    with pytest.raises(ValueError, match="overflows a double"):
        ctx.encode(1e300)  # the scalar path
    with pytest.raises(ValueError, match=r"reach 2\^13\d\.\d in the coefficients, which does not fit"):
        ctx.encode(np.array([2.0**110, 1.0]))  # finite but too large: the exponent is printed right


def test_loading_lets_other_threads_run():
    ctx = rf.ckks.Context.preset("N16_D30")
    sk, keys = ctx.keygen()
    blob = keys.relin.to_bytes()  # about 190 MiB: a load of a fraction of a second
    gaps, done = [], threading.Event()

    def load():
        for _ in range(3):
            ctx.load(blob)
        done.set()

    worker = threading.Thread(target=load)
    last = time.perf_counter()
    worker.start()
    while not done.is_set():
        time.sleep(0.002)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    # With the GIL held for a whole load this thread would stall for the load's duration.
    assert len(gaps) > 20 and max(gaps) < 0.15, (len(gaps), max(gaps))
