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
