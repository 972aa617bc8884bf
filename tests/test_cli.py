"""The command line: demo and bench run and print valid JSON."""

import json
import subprocess
import sys

import pytest


def run(*args):
    out = subprocess.run([sys.executable, "-m", "ringfire", *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_demo_json_reports_success():
    report = json.loads(run("demo", "--json"))
    assert report["ok"] is True
    # The encrypted CNN agrees with the same network in NumPy on every image, and most are right.
    assert report["digits_agree"] == report["digits_images"] == 64
    assert report["digits_correct"] >= 58 and report["digits_max_logit_error"] < 1e-3
    assert report["bootstrap_bits"] > 15 and report["ckks_bits"] > 15
    assert report["bgv_dot_exact"] and report["tfhe_nand_exact"]
    assert report["seconds"] < 60  # the bound on two cores


def test_demo_prints_one_line_per_step():
    text = run("demo")
    steps = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(steps) == 5 and all(" s] " in line for line in steps)
    assert "All checks passed" in text


def test_demo_tour_keeps_the_foundations():
    report = json.loads(run("demo", "--tour", "--json"))
    assert report["ok"] is True
    assert report["poly_mul_exact"] and report["ntt_round_trip_exact"] and report["crt_exact"]


def test_bench_ntt_json():
    data = json.loads(run("bench", "ntt", "--n", "12", "--limbs", "1,2", "--budget", "0.01", "--json"))
    rows = data["results"]
    assert {(r["limbs"], r["direction"]) for r in rows} == {(1, "forward"), (1, "inverse"), (2, "forward"),
                                                              (2, "inverse")}
    assert all(r["ns_per_butterfly"] > 0 and r["n"] == 4096 for r in rows)


def test_bench_modmul_and_polymul_tables():
    text = run("bench", "modmul", "--bits-list", "30,61", "--quiet")
    assert "alg4" in text and "headroom" in text
    data = json.loads(run("bench", "polymul", "--n", "10", "--limbs", "1", "--budget", "0.01", "--json"))
    assert data["results"][0]["karatsuba_us"] > 0


def test_bad_arguments_exit_with_message():
    out = subprocess.run([sys.executable, "-m", "ringfire", "bench", "ntt", "--n", "30"], capture_output=True,
                         text=True)
    assert out.returncode != 0 and "log2(N)" in out.stderr


def test_gpu_flags_fail_clearly_where_they_cannot_run():
    def fails(*args):
        out = subprocess.run([sys.executable, "-m", "ringfire", *args], capture_output=True, text=True, timeout=300)
        assert out.returncode == 2, out.stderr
        return out.stderr

    assert "--device cuda" in fails("bench", "ckks", "--profile", "--sets", "matmul", "--repeat", "1")
    assert "supported for ckks and ntt" in fails("bench", "modmul", "--device", "cuda")
    import ringfire as rf
    if not rf.cuda_available():
        assert "cuda" in fails("bench", "ntt", "--device", "cuda", "--n", "12", "--limbs", "1")


def test_keyswitch_kernel_timings_run_and_refuse_bad_kernels():
    from ringfire import _core
    for kernel, terms in [("convert", 3), ("inner_product", 2), ("linear_combination", 4), ("sub", 1),
                          ("multiply_scalar", 1)]:
        assert _core.time_keyswitch_kernel(1 << 10, 4, terms, kernel, 2, 40) > 0
    with pytest.raises(ValueError, match="kernel must be"):
        _core.time_keyswitch_kernel(1 << 10, 4, 1, "ntt", 2, 40)
    with pytest.raises(ValueError, match="terms and limbs"):
        _core.time_keyswitch_kernel(1 << 10, 0, 1, "sub", 2, 40)


def test_bench_fbs_sparse_lookup_sign_and_floor_on_the_toy_ring():
    """`ringfire bench fbs` with sparse packing, signs and floor division: every slot right."""
    report = json.loads(run("bench", "fbs", "--preset", "N12_BOOT_INSECURE", "--tables", "16", "--slots", "16",
                            "--sign-bits", "8", "--floor", "10,4", "--json"))
    rows = {(r["table"], r["measure"]): r["value"] for r in report["results"]}
    assert rows[("floor 10-bit / 2^4", "wrong slots (|error| >= 1/2)")] == 0
    assert rows[("sign 8-bit", "wrong slots (|error| >= 1/2)")] == 0
    assert rows[(16, "precision min")] > 20 and rows[(16, "precision min, default decryption")] > 18
    assert rows[(16, "per slot")] == pytest.approx(rows[(16, "lookup")] / 16 * 1e3)
