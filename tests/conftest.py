import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Runs a test per device; CUDA cases skip cleanly without a usable GPU backend."""
    import ringfire

    if request.param == "cuda" and not ringfire.cuda_available():
        pytest.skip("no CUDA backend or GPU in this build/machine")
    return request.param


def precision_bits(got, want) -> float:
    """-log2 of the largest absolute error: the bits of precision kept."""
    import numpy as np

    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return float("inf") if err == 0 else -float(np.log2(err))


@pytest.fixture(scope="session")
def ckks_small():
    """A small, fast context (N=2^13, depth 2) with keys for rotations 1, 2, -1 and conjugation."""
    import ringfire as rf

    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1, 2, -1], conjugate=True)
    return ctx, sk, keys


@pytest.fixture(scope="session")
def fhew_std128():
    """FHEW's STD128 context with its keys (from a fixed seed), shared by the switching tests."""
    import warnings

    import ringfire as rf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deterministic seed's warning: for tests only
        fhew = rf.tfhe.Context("STD128")
        return fhew, fhew.keygen(insecure_deterministic_seed=11)
