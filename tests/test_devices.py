"""Device plumbing: the CUDA toggle, device names, and the shared RF_HD math on a GPU."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ringfire as rf
from ringfire import _core, arith, ring


def test_device_names():
    assert _core.parse_device("cpu") == "cpu"
    assert _core.parse_device("cuda") == "cuda:0"
    assert _core.parse_device("cuda:3") == "cuda:3"
    with pytest.raises(ValueError, match="unknown device"):
        _core.parse_device("tpu")


def test_cuda_target_follows_the_toggle():
    # Built with RINGFIRE_CUDA=AUTO (the default), nvcc on the PATH means the CUDA target is compiled in.
    if os.environ.get("RINGFIRE_CUDA", "AUTO").upper() == "AUTO" and shutil.which("nvcc"):
        assert _core.cuda_compiled()
    info = json.loads(subprocess.run([sys.executable, "-m", "ringfire", "info", "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert info["cuda_compiled"] == _core.cuda_compiled()


def test_shared_mul_mod_is_bit_identical_on_cpu_and_gpu(device):
    q = ring.find_primes(61, 1, 16)[0]
    rng = np.random.default_rng(0)
    a = rng.integers(0, q, 4096, dtype=np.uint64)
    b = rng.integers(0, q, 4096, dtype=np.uint64)
    expected = arith.mul_mod(a, b, q)
    if device == "cpu":
        assert [int(v) for v in expected[:64]] == [(int(x) * int(y)) % q for x, y in zip(a[:64], b[:64])]
        return
    out = np.zeros_like(a)
    assert _core.cuda_mul_mod(a, b, out, q)
    assert np.array_equal(out, expected)


def test_without_gpu_the_smoke_test_reports_false():
    if rf.cuda_available():
        pytest.skip("a GPU is present")
    out = np.zeros(4, np.uint64)
    assert _core.cuda_mul_mod(np.ones(4, np.uint64), np.ones(4, np.uint64), out, 97) is False
