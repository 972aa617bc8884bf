"""The CUDA backend against the CPU backend (the oracle), bit for bit.

On a machine with a GPU, `_core.cuda_selftest` runs every Backend method on
seeded random inputs on both backends and reports, per method, whether the
downloads are identical. Without a GPU (or without the CUDA backend in the
build) the GPU cases skip and the error path is checked instead.
"""

import pytest

import ringfire as rf
from ringfire import _core

needs_gpu = pytest.mark.skipif(not rf.cuda_available(), reason="no CUDA backend or GPU in this build/machine")


@needs_gpu
@pytest.mark.parametrize("log_n", [11, 12, 13, 14, 15, 16, 17])
def test_every_backend_method_is_bit_identical_to_the_cpu(log_n):
    results = _core.cuda_selftest(n=2**log_n, limbs=4, seed=1000 + log_n)
    assert len(results) >= 30
    failing = sorted(name for name, same in results.items() if not same)
    assert failing == [], f"N = 2^{log_n}: CUDA differs from CPU in {failing}"


@needs_gpu
@pytest.mark.parametrize("limbs", [1, 3, 9])
def test_selftest_covers_odd_limb_counts(limbs):
    results = _core.cuda_selftest(n=2**12, limbs=limbs, seed=7)
    assert all(results.values()), sorted(k for k, v in results.items() if not v)


@needs_gpu
def test_selftest_rejects_bad_sizes():
    with pytest.raises(ValueError, match="power of two"):
        _core.cuda_selftest(n=1000, limbs=2, seed=0)


def test_without_gpu_the_selftest_is_a_clear_error():
    if rf.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(NotImplementedError, match=r"\[cuda\.selftest\].*(GPU|CUDA)"):
        _core.cuda_selftest(n=2**12, limbs=2, seed=0)
