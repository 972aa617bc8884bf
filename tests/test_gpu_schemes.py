"""Everything built on the CKKS operations, on the GPU, bit for bit against the CPU:
the fused key switch (relinearize + rescale), polynomials and linear transforms,
bootstrapping in both orders (Meta-BTS and pairs too) on the toy ring, BGV and BFV
(every operator, the scale-invariant product, level and correction changes), and
encrypted inference (batch and inter packing, client-aided, polynomial and
bootstrapped) through ``model(enc, device=...)``, a ``device="cuda"`` context and
``ringfire infer --device cuda``.

A CPU result is the oracle: the same deterministic seeds give the same keys and
encryptions on both sides, so every ciphertext must serialize to the same bytes.
GPU cases skip without a GPU; the placement logic and the error paths run everywhere.
"""

import json
import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import cli

needs_gpu = pytest.mark.skipif(not rf.cuda_available(), reason="no CUDA backend or GPU in this build/machine")
SEED = bytes(range(32))
GPU = "cuda:0"  # where the GPU cases' results must live


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deterministic seeds and the toy ring warn by design
        return make()


def toy_boot(device="cpu", **bootstrap):
    """N12_BOOT_INSECURE (the N16_BOOT circuit on a toy ring; NOT SECURE)."""
    return quiet(lambda: rf.ckks.Context.preset("N12_BOOT_INSECURE", device=device, insecure_deterministic_seed=SEED,
                                                **({"bootstrap": bootstrap} if bootstrap else {})))


def _deep_toy():
    """The toy ring's bootstrapping circuit under six 40-bit user levels (NOT SECURE): room for
    a polynomial activation and a layer between bootstraps."""
    options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    coeff_bits = [60] + [40] * 6 + [45] * 3 + [60] * 11 + [56] * 3
    options.update(coeff_bits=coeff_bits, dnum=-(-len(coeff_bits) // 3))
    return quiet(lambda: rf.ckks.Context(**options, insecure_deterministic_seed=SEED))


def same(cpu, gpu) -> bool:
    assert gpu.device == GPU, gpu.device
    return cpu.to_bytes() == gpu.to_bytes()


# ---- CKKS circuits ---------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("preset", ["N13_D2", "N14_D6"])
def test_fused_key_switch_polynomials_and_transforms_are_bit_identical(preset):
    ctx = quiet(lambda: rf.ckks.Context.preset(preset, insecure_deterministic_seed=SEED))
    n = 16
    rng = np.random.default_rng(1)
    lt = rf.ckks.LinearTransform(ctx, rng.uniform(-1, 1, (n, n)))
    sk, keys = ctx.keygen(rotations=lt.rotations())
    x = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys)
    y = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys)
    ev = ctx.evaluator(keys)
    gx, gy = x.to("cuda"), y.to("cuda")
    ops = {
        "relinearize_rescale": lambda a, b: ev.relinearize_rescale(ev.multiply(a, b)),
        "linear_combination": lambda a, b: ev.linear_combination([a, b, a], [0.5, -1.25, 2.0], ctx.scale),
        "linear_combinations": lambda a, b: ev.linear_combinations(
            [a, b, a], [[0.5, -1.25, 2.0], [1.0, 0.0, -0.5], [0.25, 0.5, 0.75], [2.0, 1.0, 0.0], [-1.0, 0.5, 0.5]],
            ctx.scale)[4],
        "linear_transform": lambda a, b: ev.linear_transform(a, lt),
        "multiply_operator": lambda a, b: a * b + b,
    }
    if ctx.max_level >= 3:
        ops["evaluate_polynomial"] = lambda a, b: ev.evaluate_polynomial(a, [0.1, 0.5, -0.25, 0.125, 0.3])
    failing = [name for name, op in ops.items() if not same(op(x, y), op(gx, gy))]
    assert failing == [], f"{preset}: the GPU differs from the CPU in {failing}"


# ---- bootstrapping ----------------------------------------------------------------------

@pytest.fixture(scope="module", params=[False, True], ids=["cts_first", "stc_first"])
def boot(request):
    if not rf.cuda_available():
        pytest.skip("no CUDA backend or GPU in this build/machine")
    ctx = toy_boot(stc_first=request.param)
    sk, keys = ctx.keygen(bootstrap=True)
    return ctx, sk, keys


def _input(ctx, keys, seed=2):
    x = np.random.default_rng(seed).uniform(-1, 1, ctx.slots)
    return x, ctx.evaluator().mod_switch(ctx.encrypt(x, keys), ctx.bootstrap_min_level)


def test_bootstrapping_through_a_contexts_stream_wrapper():
    """A device context wraps its native evaluator to issue calls on its stream; the
    bootstrapper takes the native evaluator itself (found on a GPU: a TypeError)."""
    from ringfire.rlwe.context import _OnQueue
    ctx = toy_boot()
    sk, keys = ctx.keygen(bootstrap=True)
    x, ct = _input(ctx, keys)
    ev = ctx.evaluator(keys)
    want = [ev.bootstrap(ct), *ev.bootstrap_pair(ct, ct)]
    ev._ev = _OnQueue(ctx._core_evaluator, 0)  # queue 0: the calling thread's, as on the CPU
    got = [ev.bootstrap(ct), *ev.bootstrap_pair(ct, ct)]
    assert [g.to_bytes() for g in got] == [w.to_bytes() for w in want]


def test_one_bootstrap_is_bit_identical(boot):
    ctx, sk, keys = boot
    x, ct = _input(ctx, keys)
    ev = ctx.evaluator(keys)
    cpu, gpu = ev.bootstrap(ct), ev.bootstrap(ct.to("cuda"))
    assert gpu.level == cpu.level == ctx.max_level
    assert same(cpu, gpu)
    err = np.max(np.abs(quiet(lambda: ctx.decrypt(gpu, sk, insecure_exact=True)) - x))
    assert err < 2**-18, err


def _two_inputs_in_one_order(boot, seeds):
    """(ctx, sk, ev, (x, a), (y, b)) on the CoeffsToSlots-first context only: the circuits
    built on bootstrapping run the same kernels in either order, so once is enough."""
    ctx, sk, keys = boot
    if ctx.bootstrap_options.get("stc_first"):
        pytest.skip("the same kernels in either bootstrap order; once is enough")
    return ctx, sk, ctx.evaluator(keys), _input(ctx, keys, seeds[0]), _input(ctx, keys, seeds[1])


def test_meta_bts_and_pairs_are_bit_identical(boot):
    ctx, sk, ev, (_, a), (_, b) = _two_inputs_in_one_order(boot, (3, 4))
    assert same(ev.bootstrap(a, iterations=2), ev.bootstrap(a.to("cuda"), iterations=2))
    cpu = ev.bootstrap_pair(a, b)
    gpu = ev.bootstrap_pair(a.to("cuda"), b.to("cuda"))
    assert same(cpu[0], gpu[0]) and same(cpu[1], gpu[1])


def test_comparisons_are_bit_identical(boot):
    """ev.max (a sign of composite polynomials, its bootstraps, a product) on the device
    gives the CPU's bytes; the inputs start low, so it bootstraps on the way."""
    ctx, sk, ev, (x, a), (y, b) = _two_inputs_in_one_order(boot, (5, 6))
    cpu = ev.max(a, b, precision_bits=4, error_bits=8)
    gpu = ev.max(a.to("cuda"), b.to("cuda"), precision_bits=4, error_bits=8)
    assert same(cpu, gpu)
    got = quiet(lambda: ctx.decrypt(gpu, sk)).real
    assert np.max(np.abs(got - np.maximum(x, y))) <= 2 * 2.0 ** -4


def test_bootstrap_on_a_cuda_context_reports_its_phases(boot):
    stc_first = bool(boot[0].bootstrap_options.get("stc_first"))
    outputs = {}
    for device in ("cpu", "cuda"):  # fresh contexts, same seed: same keys and input
        ctx = toy_boot(device, stc_first=stc_first)
        sk, keys = ctx.keygen(bootstrap=True)
        _, ct = _input(ctx, keys)
        times = {}
        outputs[device] = ctx.evaluator(keys).bootstrap(ct, timings=times)
        assert set(times) >= {"mod_raise", "coeffs_to_slots", "eval_mod", "slots_to_coeffs"}
    assert same(outputs["cpu"], outputs["cuda"])


# ---- BGV and BFV ------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("scheme", [rf.bgv, rf.bfv], ids=["bgv", "bfv"])
@pytest.mark.parametrize("log_n", [13, 14])
def test_every_bgv_and_bfv_operator_is_bit_identical(scheme, log_n):
    ctx = quiet(lambda: scheme.Context(poly_degree=2**log_n, plain_bits=20, insecure_deterministic_seed=SEED))
    sk, keys = ctx.keygen(rotations=[1, -3], swap_rows=True)
    rng = np.random.default_rng(log_n)
    a, b = (rng.integers(0, ctx.plain_modulus, ctx.slots, dtype=np.int64) for _ in range(2))
    x, y = ctx.encrypt(a, keys), ctx.encrypt(b, keys)
    pb = ctx.encode(b)
    ev = ctx.evaluator(keys)
    ops = {
        "add": lambda u, v: u + v, "sub": lambda u, v: u - v, "negate": lambda u, v: -u,
        "multiply": lambda u, v: u * v, "square": lambda u, v: u.square(), "cube": lambda u, v: u ** 3,
        "add_integer": lambda u, v: u + 12345, "multiply_integer": lambda u, v: u * -77,
        "add_plain": lambda u, v: u + pb, "multiply_plain": lambda u, v: u * pb,
        "rotate_keyed": lambda u, v: u.rotate_rows(1), "rotate_composed": lambda u, v: u.rotate_rows(7),
        "swap_rows": lambda u, v: u.swap_rows(), "mod_switch": lambda u, v: ev.mod_switch(u, u.level - 1),
        "pipeline": lambda u, v: ((u * v + u).rotate_rows(1) * 3).swap_rows() * v,
    }
    if scheme is rf.bgv:
        ops["multiply_scale_invariant"] = lambda u, v: ev.relinearize(ev.multiply_scale_invariant(u, v))
        ops["mod_reduce"] = lambda u, v: ev.mod_reduce(ev.relinearize(ev.multiply(u, v)))
    failing = [name for name, op in ops.items()
               if op(x, y).to("cpu")._host().polys().tobytes()
               != op(x.to("cuda"), y.to("cuda")).to("cpu")._host().polys().tobytes()]
    assert failing == [], f"{scheme.__name__} N=2^{log_n}: the GPU differs from the CPU in {failing}"
    got = ctx.decrypt(x.to("cuda") * y.to("cuda"), sk, signed=False)
    assert np.array_equal(got, (a.astype(object) * b % ctx.plain_modulus).astype(np.int64))


# ---- encrypted inference ----------------------------------------------------------------

def _mlp_onnx():
    from nn_models import mlp_bytes
    return mlp_bytes()


def _run(model_bytes, x, device, move, packing="batch", preset="N14_D6", **options):
    """One encrypted run from a fresh deterministic context: ``device`` is the context's,
    ``move`` the model call's. Returns (decrypted output, every output ciphertext's bytes, model)."""
    ctx = quiet(lambda: rf.ckks.Context.preset(preset, device=device, insecure_deterministic_seed=SEED))
    model = rf.nn.load(model_bytes, ctx, packing=packing, **options)
    sk, keys = ctx.keygen(rotations=model.rotations() if packing == "inter" else ())
    enc = ctx.encrypt_batch(x, keys, packing=packing)
    out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys), device=move)
    cts = [c for c in out.cts.flat if c is not None and not isinstance(c, float)]
    return ctx.decrypt_batch(out, sk), [c.to_bytes() for c in cts], [c.device for c in cts]


def test_placement_on_the_cpu_changes_nothing():
    pytest.importorskip("onnx")
    x = np.random.default_rng(0).uniform(-1, 1, (4, 16))
    plain, plain_bytes, _ = _run(_mlp_onnx(), x, "cpu", None)
    placed, placed_bytes, devices = _run(_mlp_onnx(), x, "cpu", "cpu")
    assert placed_bytes == plain_bytes and set(devices) == {"cpu"}


def test_without_gpu_a_device_run_is_a_clear_error():
    pytest.importorskip("onnx")
    if rf.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(NotImplementedError, match=r"cuda.*(GPU|CUDA)"):
        _run(_mlp_onnx(), np.zeros((2, 16)), "cpu", "cuda")
    with pytest.raises(ValueError, match="unknown device"):
        _run(_mlp_onnx(), np.zeros((2, 16)), "cpu", "tpu")


@needs_gpu
@pytest.mark.parametrize("packing", ["batch", "inter"])
def test_a_client_aided_model_is_bit_identical_on_the_gpu(packing):
    pytest.importorskip("onnx")
    x = np.random.default_rng(1).uniform(-1, 1, (3, 16))
    cpu, cpu_bytes, _ = _run(_mlp_onnx(), x, "cpu", None, packing)
    moved, moved_bytes, moved_devices = _run(_mlp_onnx(), x, "cpu", "cuda", packing)
    context, context_bytes, context_devices = _run(_mlp_onnx(), x, "cuda", None, packing)
    assert set(moved_devices) == set(context_devices) == {GPU}
    assert moved_bytes == cpu_bytes and context_bytes == cpu_bytes
    assert np.array_equal(moved, cpu) and np.array_equal(context, cpu)


@needs_gpu
def test_a_residual_cnn_is_bit_identical_on_the_gpu():
    from ringfire.nn import zoo
    model_bytes = zoo.tiny_resnet(resolution=8, classes=4, seed=0)[0].SerializeToString()
    x = np.random.default_rng(2).uniform(-1, 1, (2, 3, 8, 8))
    options = dict(activation="client")
    cpu, cpu_bytes, _ = _run(model_bytes, x, "cpu", None, "batch", "N14_D6", **options)
    gpu, gpu_bytes, devices = _run(model_bytes, x, "cpu", "cuda", "batch", "N14_D6", **options)
    assert set(devices) == {GPU} and gpu_bytes == cpu_bytes


@needs_gpu
@pytest.mark.parametrize("graph", ["attention_moving_the_batch", "class_token_after_the_batch_moved"])
def test_attention_as_torch_exports_it_is_bit_identical_on_the_gpu(graph):
    """The lifted graphs of torch's attention: ciphertext-by-ciphertext MatMuls, the Softmax
    client-aided, a class token padded in and added as known constants."""
    pytest.importorskip("onnx")
    import nn_models
    model_bytes = getattr(nn_models, graph)()
    x = np.random.default_rng(4).uniform(-1, 1, (3, nn_models.L, nn_models.E))
    cpu, cpu_bytes, _ = _run(model_bytes, x, "cpu", None)
    gpu, gpu_bytes, devices = _run(model_bytes, x, "cpu", "cuda")
    assert set(devices) == {GPU} and gpu_bytes == cpu_bytes and np.array_equal(gpu, cpu)


@needs_gpu
def test_a_bootstrapped_model_is_bit_identical_on_the_gpu():
    pytest.importorskip("onnx")
    rng = np.random.default_rng(3)
    x, calibration = rng.uniform(-1, 1, (4, 16)), rng.uniform(-1, 1, (64, 16))
    runs = {}
    for move in (None, "cuda"):
        ctx = _deep_toy()
        model = rf.nn.load(_mlp_onnx(), ctx, activation="poly", calibration=calibration)
        assert model.bootstrap
        sk, keys = ctx.keygen(bootstrap=True)
        out = model(ctx.encrypt_batch(x, keys), device=move)
        runs[move] = [c.to_bytes() for c in out.cts.flat if c is not None and not isinstance(c, float)]
        assert model.last_run["bootstraps"] > 0
    assert runs["cuda"] == runs[None]


@needs_gpu
def test_ringfire_infer_runs_on_the_gpu(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    (tmp_path / "m.onnx").write_bytes(_mlp_onnx())
    np.save(tmp_path / "x.npy", np.random.default_rng(4).uniform(-1, 1, (8, 16)))
    assert cli.main(["infer", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"), "--device", "cuda",
                     "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["device"] == GPU
    assert report["top1_agreement"] == 1.0 and report["max_abs_error"] < 1e-3
