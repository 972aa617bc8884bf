"""Generated NTT/iNTT kernels, run on the functional simulator, equal the library's NTT."""

import numpy as np
import pytest

from ringfire import ring
from ringfire.rpu import RpuConfig, generate_ntt, run_ntt
from ringfire.rpu import reference
from ringfire.rpu.cycle import simulate
from ringfire.rpu.functional import Machine
from ringfire.rpu.schedule import _ListScheduler

SIZES = [1024, 2048, 4096, 8192, 16384, 32768, 65536]


def prime(bits, n):
    return ring.find_primes(bits, 1, n)[0]


@pytest.mark.parametrize("n", [16, 64, 1024])
def test_reference_matches_ring_ntt(n):
    q = prime(61, n)
    rng = np.random.default_rng(n)
    a = rng.integers(0, q, n, dtype=np.uint64)
    assert reference.ntt(a, q) == [int(x) for x in ring.ntt(a, q)]
    assert reference.intt(a, q) == [int(x) for x in ring.intt(a, q)]
    q128 = prime(128, n)
    b = [int(x) for x in rng.integers(0, 2**63, n)]
    assert reference.intt(reference.ntt(b, q128), q128) == b


@pytest.mark.parametrize("n", SIZES[:5])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("optimized", [True, False])
def test_generated_ntt_equals_ring_ntt_61bit(n, inverse, optimized):
    result = run_ntt(generate_ntt(n, inverse=inverse, optimized=optimized), prime(61, n), seed=n)
    assert result["oracle"] == "ringfire.ring." + ("intt" if inverse else "ntt")
    assert result["verified"] is True


@pytest.mark.parametrize("n", [1024, 4096])
@pytest.mark.parametrize("inverse", [False, True])
def test_generated_ntt_128bit_prime(n, inverse):
    result = run_ntt(generate_ntt(n, inverse=inverse), prime(128, n), seed=7)
    assert result["oracle"].startswith("ringfire.rpu.reference") and result["verified"] is True


def test_round_trip_through_both_kernels_with_edge_values():
    n, q = 2048, prime(125, 2048)
    coeffs = [0, 1, q - 1] + [(i * 7919) % q for i in range(n - 3)]
    fwd, inv = generate_ntt(n), generate_ntt(n, inverse=True)
    m = Machine()
    fwd.load_inputs(m, coeffs, q)
    m.run(fwd.program)
    evals = fwd.read_output(m)
    assert evals == reference.ntt(coeffs, q)
    m2 = Machine()
    inv.load_inputs(m2, evals, q)
    m2.run(inv.program)
    assert inv.read_output(m2) == coeffs


def test_large_sizes_forward_and_64k():
    """32K (61-bit, vs ring.ntt) and the 64K 128-bit kernel -- the largest sizes, one run each."""
    assert run_ntt(generate_ntt(32768, inverse=True), prime(61, 32768))["verified"] is True
    result = run_ntt(generate_ntt(65536), prime(128, 65536))
    assert result["verified"] is True
    # seed 004 §VI-F: "the 64K NTT has 1024 CIs and 1920 SIs"
    assert result["counts"]["compute"] == 1024 and result["counts"]["shuffle"] == 1920


@pytest.mark.parametrize("config", [RpuConfig(hples=16, banks=32, regs_per_sram=1),
                                    RpuConfig(hples=256, banks=64, busy_reads=True, mul_ii=2)])
def test_schedules_for_other_machines_are_still_correct(config):
    n = 8192
    result = run_ntt(generate_ntt(n, config=config), prime(61, n))
    assert result["verified"] is True


def test_scheduler_cycles_equal_the_cycle_model():
    from ringfire.rpu.ntt_graph import build_ntt_graph
    config = RpuConfig()
    sched = _ListScheduler(build_ntt_graph(4096), config, window=3, lookahead=32)
    program = sched.run()
    assert simulate(program, config).cycles == sched.model.report(len(program)).cycles


def test_instruction_counts_per_size():
    for n in (1024, 16384):
        counts = generate_ntt(n).counts()
        k, m = n.bit_length() - 1, n // 512
        assert counts["bfly"] == k * m // 2
        assert counts["unpklo"] == counts["unpkhi"] == (k - 1) * m // 2   # last stage: strided stores


def test_bad_sizes():
    with pytest.raises(ValueError, match=r"\[1024, 65536\]"):
        generate_ntt(512)
    with pytest.raises(ValueError, match="NTT-friendly"):
        run_ntt(generate_ntt(1024), 97)
