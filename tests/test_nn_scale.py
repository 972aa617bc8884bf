"""Scale study (seed 001): zoo graphs load and plan, counts match shape arithmetic,
a tiny MobileNetV2 runs encrypted, and the runtime model behaves."""

import copy
import gc

import numpy as np
import pytest

pytest.importorskip("onnx")
import ringfire as rf  # noqa: E402
from ringfire.nn import costs as C  # noqa: E402
from ringfire.nn import zoo  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    # seed 001's parameters: N = 4096, q = {30, 22, 22} + special 30, batch up to 2048
    return rf.ckks.Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30])


def _check_counts(ctx, onnx_model, info):
    plan = rf.nn.load(onnx_model, ctx, activation="client").plan()
    exp = zoo.expected_counts(info)
    assert plan.levels_needed == 2 <= plan.levels_available
    assert plan.input_ciphertexts == exp["input_ciphertexts"]
    assert plan.output_ciphertexts == exp["output_ciphertexts"]
    assert plan.counts["rescales"] == exp["rescales"]
    assert plan.counts["client_round_trips"] == exp["client_round_trips"]
    assert plan.largest_tensor == exp["largest_tensor"]
    return plan


def test_make_divisible_matches_reference_channels():
    assert [zoo.make_divisible(32 * w) for w in zoo.MOBILENET_WIDTHS] == [16, 16, 24, 32, 40, 48]
    assert zoo.make_divisible(1280 * 1.4) == 1792


def test_mobilenet_v2_035_96_plans(ctx):
    model, info = zoo.mobilenet_v2(0.35, 96)
    assert 1.6e6 < info["parameters"] < 1.8e6          # TF-slim mobilenet_v2_0.35_96: 1.66 M
    plan = _check_counts(ctx, model, info)
    # independent of the planner: 17 blocks, 52 convs + Gemm; ReLU6 after 35 of them
    ops = [op for _, op, _ in info["activations"]]
    assert ops.count("Conv") == 52 and ops.count("Clip") == 35 and ops.count("Add") == 10
    assert plan.input_ciphertexts == 3 * 96 * 96
    assert plan.largest_tensor == 48 * 48 * 48          # block 2's expansion (8 -> 48 channels at 48x48)


def test_resnet50_plans_without_running(ctx):
    model, info = zoo.resnet50()
    assert 25.4e6 < info["parameters"] < 25.8e6         # torchvision resnet50: 25.56 M (+ BN statistics)
    plan = _check_counts(ctx, model, info)
    assert plan.largest_tensor == 64 * 112 * 112        # stem output
    assert 3.8e9 < plan.counts["linear_terms"] < 4.2e9  # ~4.1 G MACs, less the taps over zero padding


def test_tiny_mobilenet_runs_encrypted_and_matches_onnxruntime(ctx):
    ort = pytest.importorskip("onnxruntime")
    model_proto, info = zoo.tiny_mobilenet_v2()
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (64, 3, 8, 8))
    ref = ort.InferenceSession(model_proto.SerializeToString()).run(None, {"x": x.astype(np.float32)})[0]
    model = rf.nn.load(model_proto, ctx, activation="client")
    assert np.abs(model.plaintext(x) - ref).max() < 1e-4
    plan = _check_counts(ctx, model_proto, info)
    sk, keys = ctx.keygen()
    out = model(ctx.encrypt_batch(x, keys), client=rf.nn.LocalClient(ctx, sk, keys))
    got = ctx.decrypt_batch(out, sk)
    # 2^22 scale, 22/23-bit primes (seed 001's parameters): ~1e-3 absolute on O(1) logits
    assert np.abs(got - ref).max() < 2e-2, np.abs(got - ref).max()
    assert model.last_run["client_round_trips"] == plan.counts["client_round_trips"]
    assert model.last_run["rescales"] == plan.counts["rescales"]


def test_tiny_resnet_plaintext_matches_onnxruntime(ctx):
    ort = pytest.importorskip("onnxruntime")
    model_proto, info = zoo.tiny_resnet()
    x = np.random.default_rng(2).uniform(0, 1, (4, 3, 16, 16))
    ref = ort.InferenceSession(model_proto.SerializeToString()).run(None, {"x": x.astype(np.float32)})[0]
    assert np.abs(rf.nn.load(model_proto, ctx).plaintext(x) - ref).max() < 1e-4
    _check_counts(ctx, model_proto, info)


FAKE_COSTS = {"top_limbs": 3, "lc_term_per_limb": 1e-5, "lc_call_per_limb": 2e-5, "rescale_per_limb": 1e-4,
              "add_scalar_per_limb": 1e-6, "add_ct_per_limb": 1e-6,
              "mult_relin_rescale_per_limb": 1e-3, "encrypt_per_limb": 4e-4, "decrypt_per_limb": 3e-4,
              "client_clear": 1e-6}


def test_predict_seconds_positive_and_monotone(ctx):
    plan = rf.nn.load(zoo.tiny_mobilenet_v2()[0], ctx).plan()
    base = C.predict_seconds(plan, FAKE_COSTS)
    assert base > 0
    for key in ("linear_terms", "rescales", "client_round_trips", "ct_mults"):
        more = copy.copy(plan)
        more.counts = dict(plan.counts, **{key: plan.counts[key] * 2 + 10})
        assert C.predict_seconds(more, FAKE_COSTS) > base, key
    # more limbs cost more
    assert C.predict_seconds(plan, FAKE_COSTS, limbs=3) > C.predict_seconds(plan, FAKE_COSTS, limbs=2)


def test_measure_costs_small_context():
    small = rf.ckks.Context(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30])
    costs = C.measure_costs(small, ks=(1, 8), repeats=2)
    for key in ("lc_term_per_limb", "rescale_per_limb", "encrypt_per_limb", "decrypt_per_limb",
                "mult_relin_rescale_per_limb"):
        assert costs[key] > 0, key
    assert costs["top_limbs"] == 3


@pytest.mark.parametrize("masking", [False, True])
def test_the_plan_holds_what_the_run_holds_after_every_node(masking):
    """The planner's live ciphertext bytes equal ringfire's pool in use after each node of a
    small ResNet-20 (residual adds, projection shortcuts), plain and masked: nothing is kept
    alive past the point where the plan frees it."""
    from ringfire.nn.executor import Executor
    from ringfire.nn.runtimes import EncryptedRuntime, PlanRuntime
    from ringfire.nn.masking import Masker

    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 30, 30, 30], scale_bits=30, special_bits=[60])
    model = rf.nn.load(zoo.resnet20(4, blocks=1, widths=(4, 8, 8))[0], ctx, masking=masking)
    planned, held = [], []

    class Planned(PlanRuntime):
        def after_node(self, node, out, shape):
            planned.append(self.live)

    plan_rt = Planned(ctx.max_level, 2 * ctx.poly_degree * 8, model.polys, masking=masking, graph=model.graph)
    Executor(model.graph, plan_rt).run(plan_rt.input(model.graph.input_shape))
    sk, keys = ctx.keygen()
    enc = ctx.encrypt_batch(np.random.default_rng(3).uniform(0, 1, (2, 3, 4, 4)), keys)
    in_use = lambda: int(rf._core.host_pool_stats()["bytes_in_use"])  # noqa: E731

    class Held(EncryptedRuntime):
        def after_node(self, node, out, shape):
            held.append(in_use() - base)

    masker = Masker(ctx, keys) if masking else None
    runtime = Held(ctx, keys, rf.nn.LocalClient(ctx, sk, keys), model.polys, masker)
    gc.collect()  # earlier tests' garbage must not be freed during the run
    gc.disable()
    try:
        base = in_use() - plan_rt.input(model.graph.input_shape).size * (ctx.max_level + 1) * 2 * ctx.poly_degree * 8
        Executor(model.graph, runtime).run(enc.cts)
    finally:
        gc.enable()
    assert held == planned


def test_a_dry_run_runs_the_real_code_path_and_measures_its_memory(monkeypatch):
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 30, 30, 30], scale_bits=30, special_bits=[60])
    onnx_model = zoo.resnet20(4, blocks=1, widths=(4, 8, 8))[0]
    plain = rf.nn.load(onnx_model, ctx).plan(dry_run=True)
    assert plain.dry_run_bytes == plain.activation_bytes  # measured on the pool after every node
    assert "ran to the end" in plain.describe()
    masked = rf.nn.load(onnx_model, ctx, masking=True).plan(dry_run=True)
    # The masked copies live only inside a node: the plan counts them, the after-node samples do not.
    assert 0 < masked.dry_run_bytes <= masked.activation_bytes
    # A planner that forgot levels would say "fits"; the dry run meets the real run's refusal.
    gemms = zoo.resnet20(4, blocks=1, widths=(4, 8, 8))[0]
    from ringfire.nn.runtimes import PlanRuntime
    monkeypatch.setattr(PlanRuntime, "_consume", lambda self, level, amount: level)
    lying = rf.nn.load(gemms, rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 30, 60], scale_bits=30))
    assert lying.plan().fits
    with pytest.raises(ValueError, match="dry run of the encrypted code path failed.*out of levels"):
        lying.plan(dry_run=True)
