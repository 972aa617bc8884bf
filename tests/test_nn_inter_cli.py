"""Inter-axis packing (one sample per ciphertext, BSGS diagonal products) and
the ``ringfire infer`` command line."""

import json
import pickle

import numpy as np
import pytest

import ringfire as rf
from ringfire import cli
from ringfire.ckks.circuits import bsgs_steps
from ringfire.nn.inter import InterRunner
from ringfire.nn.operators import OPERATORS

onnx = pytest.importorskip("onnx")
from nn_models import mlp_bytes  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    return rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])


@pytest.fixture(scope="module")
def deep_ctx():
    return rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 60], scale_bits=40)


@pytest.mark.parametrize("activation", ["client", "poly"])
def test_inter_packing_matches_plaintext_and_batch_packing(ctx, deep_ctx, activation):
    ctx = ctx if activation == "client" else deep_ctx  # degree-2 ReLU fit: 1 + 2 + 1 levels
    data = mlp_bytes()
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 16))
    model = rf.nn.load(data, ctx, activation=activation, poly_degree=2, calibration=rng.uniform(-1, 1, (64, 16)))
    sk, keys = ctx.keygen(rotations=model.rotations())
    assert model.rotations() == [1, 2, 3, 4, 8, 12]  # baby steps < 4, giant steps of 4 for period 16
    client = rf.nn.LocalClient(ctx, sk, keys)
    ref = model.plaintext(x, approximate=activation == "poly")
    inter = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys, packing="inter"), client=client), sk)
    batch = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys), client=client), sk)
    assert inter.shape == batch.shape == (3, 4)
    assert np.max(np.abs(inter - ref)) < 1e-4
    assert np.max(np.abs(batch - ref)) < 1e-4


def test_inter_packing_runs_convolutional_models_against_onnxruntime(deep_ctx):
    """One image per ciphertext through Conv (padded, strided, 1x1), a residual Add, AveragePool,
    GlobalAveragePool and Gemm: each linear layer is a BSGS product with the nonzero diagonals of
    its sparse matrix. Against onnxruntime, with client-aided ReLU."""
    from nn_models import make_model, node, ort_run

    rng = np.random.default_rng(11)
    inits = {"W1": rng.normal(0, 0.4, (4, 2, 3, 3)), "B1": rng.normal(0, 0.1, 4),
             "W2": rng.normal(0, 0.3, (4, 4, 3, 3)), "W3": rng.normal(0, 0.4, (4, 4, 1, 1)),
             "W4": rng.normal(0, 0.5, (3, 4)), "B4": rng.normal(0, 0.1, 3)}
    nodes = [node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "W2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Add", ["c2", "r1"], ["s"]), node("Relu", ["s"], ["r2"]),
             node("AveragePool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p", "W3"], ["c3"], kernel_shape=[1, 1], strides=[2, 2]),
             node("GlobalAveragePool", ["c3"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "W4", "B4"], ["y"], transB=1)]
    data = make_model(nodes, (2, 6, 6), inits)
    model = rf.nn.load(data, deep_ctx, packing="inter")
    sk, keys = deep_ctx.keygen(rotations=model.rotations())
    keys.expand()  # keys expand on first use: not inside the measured run
    x = rng.uniform(-1, 1, (3, 2, 6, 6))
    enc = deep_ctx.encrypt_batch(x, keys, packing="inter")
    plan, before = model.plan(), rf.memory.stats()["bytes_in_use"]
    got = deep_ctx.decrypt_batch(model(enc, client=rf.nn.LocalClient(deep_ctx, sk, keys)), sk)
    cached = rf.memory.stats()["bytes_in_use"] - before
    assert model.last_run["period"] == plan.counts["period"] == 256  # 4 x 6 x 6 = 144 values, padded
    assert np.max(np.abs(got - ort_run(data, x))) < 1e-4
    # The plan counts what the run built: its transforms, their diagonals and rotations, and the
    # pool bytes of the encoded diagonals every sample reuses.
    transforms = [lt for lt in model._inter_cache.values() if isinstance(lt, rf.ckks.LinearTransform)]
    assert plan.counts["transforms"] == len(transforms) == 6  # 3 Conv, 2 pooling layers, Gemm
    assert plan.counts["diagonals"] == sum(lt.diagonal_count for lt in transforms)
    assert plan.counts["rotations_per_sample"] == sum(len(lt.rotations()) for lt in transforms)
    assert plan.counts["galois_keys"] == len(model.rotations()) == len(keys.galois)
    # Each transform picks its own baby steps: never dearer (a hoisted baby rotation counting
    # half) than the period's square root, which they all used to share.
    runner = InterRunner(model.graph, deep_ctx, model.polys)
    linear = [n for n in model.graph.nodes if OPERATORS[n.op].kind == "linear"]
    assert sorted(runner.baby_steps(n) for n in linear) == sorted(lt.baby_steps for lt in transforms)
    for n in linear:
        offsets = runner.offsets(n).tolist()
        shared, own = bsgs_steps(offsets, 16), bsgs_steps(offsets, runner.baby_steps(n))
        assert 0.5 * len(own[0]) + len(own[1]) <= 0.5 * len(shared[0]) + len(shared[1])
    with pytest.raises(TypeError, match="picklable=False"):  # the cache is rebuilt, not pickled
        pickle.dumps(transforms[0])
    assert not hasattr(pickle.loads(pickle.dumps(model)), "_inter_cache")
    assert abs(cached - plan.counts["diagonal_bytes"]) <= 0.1 * plan.counts["diagonal_bytes"]
    assert plan.key_bytes >= keys.galois.nbytes + keys.relin.nbytes
    with pytest.raises(ValueError, match=r"dry_run=True\) rehearses batch packing"):
        model.plan(dry_run=True)
    # A bound on the cached diagonals: nothing kept between layers at 0, the same results (each
    # transform encoded again where it runs; the key holder's fresh encryptions make the noise
    # differ), the pool back where it started, and a plan whose workspace holds one layer's
    # diagonals instead of all of them.
    model.diagonal_cache_bytes = 0
    assert not [lt for lt in model._inter_cache.values() if isinstance(lt, rf.ckks.LinearTransform)]
    most = max(lt.diagonal_count for lt in transforms)  # the largest layer's diagonals
    del transforms
    bounded = model.plan()
    assert "at most 0.00 GiB of them kept between samples" in " ".join(bounded.notes)
    assert plan.workspace_bytes - bounded.workspace_bytes >= 0.5 * plan.counts["diagonal_bytes"]
    start = rf.memory.stats()["bytes_in_use"]
    again = deep_ctx.decrypt_batch(model(enc, client=rf.nn.LocalClient(deep_ctx, sk, keys)), sk)
    assert np.max(np.abs(again - got)) < 1e-6  # the key holder's fresh encryptions differ, nothing else
    assert rf.memory.stats()["bytes_in_use"] - start < 0.1 * plan.counts["diagonal_bytes"]
    assert model._inter_cache.evictions >= 6 * len(x)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="diagonal_cache_bytes"):
            model.diagonal_cache_bytes = bad
    # Beside the pool: the largest layer's diagonals before they are encoded (in NumPy, their
    # C++ copy, the map they come from). The pool's cache of freed blocks: counted at its limit,
    # never above what the run allocates in all, and not without a limit (a note says so).
    assert bounded.staging_bytes >= 3 * most * plan.counts["period"] * 8
    assert bounded.pool_cache_bytes == 0 and "is not counted: it has no limit" in " ".join(bounded.notes)
    needed = model._bytes_to_allocate("inter")
    try:
        rf.memory.set_cache_limit(1 << 20)
        limited = model.plan()
        assert limited.pool_cache_bytes == 1 << 20 < limited.allocated_bytes
        assert limited.peak_bytes == bounded.peak_bytes + (1 << 20)
        assert model._bytes_to_allocate("inter") == needed + (1 << 20)  # the limit in force, not the plan's
        rf.memory.set_cache_limit(1 << 40)
        assert model.plan().pool_cache_bytes == limited.allocated_bytes  # what the run allocates, at most
    finally:
        rf.memory.set_cache_limit(None)

    concat = make_model([node("Conv", ["x", "W1"], ["c"], kernel_shape=[3, 3]),
                         node("Concat", ["c", "c"], ["y"], axis=1)], (2, 6, 6), {"W1": inits["W1"]},
                        out_shape=(8, 4, 4))
    with pytest.raises(rf.nn.UnsupportedOperator, match="Concat' at node .* needs packing='batch'"):
        rf.nn.load(concat, deep_ctx, packing="inter").rotations()


def test_infer_cli_json(tmp_path, capsys):
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    np.save(xs, np.random.default_rng(5).uniform(-1, 1, (6, 16)))
    assert cli.main(["infer", str(path), "--input", str(xs), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["output_shape"] == [6, 4]
    assert report["reference"] == "onnxruntime"  # an independent implementation, not ringfire's own
    assert report["top1_agreement"] == 1.0
    assert report["max_abs_error"] < 1e-4
    assert report["predicted_peak_bytes"] > 0 and report["levels_needed"] == 1


@pytest.mark.parametrize("packing", ["inter", "auto"])
def test_infer_cli_packing(tmp_path, capsys, packing):
    """--packing inter runs one ciphertext per sample; auto runs the packing the planner predicts
    to finish first, from costs it measures, and reports both predictions."""
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    np.save(xs, np.random.default_rng(5).uniform(-1, 1, (3, 16)))
    assert cli.main(["infer", str(path), "--input", str(xs), "--packing", packing, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["top1_agreement"] == 1.0 and report["max_abs_error"] < 1e-4  # against onnxruntime
    if packing == "inter":
        assert report["packing"] == "inter" and report["packing_choice"] is None
        assert report["counts"]["period"] == 16
    else:
        choice = report["packing_choice"]  # how the choice follows the predictions: the next test
        assert choice["batch_seconds"] > 0 and choice["inter_seconds"] > 0
        assert report["packing"] == choice["packing"] and "sample(s)" in choice["reason"]
        assert report["counts"].get("packing", "batch") == choice["packing"]


def test_choose_packing_follows_the_sample_count(deep_ctx):
    """Batch packing costs the same for 1 sample as for a full batch, one ciphertext per sample
    costs per sample: the planner picks inter for few samples and batch for many, and batch
    where inter cannot run."""
    from ringfire.nn import costs as C

    model = rf.nn.load(mlp_bytes(), deep_ctx, packing="any")
    costs = {"top_limbs": deep_ctx.max_level + 1, "lc_term_per_limb": 1e-4, "lc_call_per_limb": 1e-4,
             "rescale_per_limb": 1e-3, "add_scalar_per_limb": 1e-5, "add_ct_per_limb": 1e-5,
             "mult_relin_rescale_per_limb": 1e-2, "encrypt_per_limb": 1e-2, "decrypt_per_limb": 1e-2,
             "client_clear": 1e-6, "rotate_per_limb": 1e-3, "multiply_plain_per_limb": 1e-4,
             "encode_per_limb": 1e-4, "bootstrap": None}
    per_sample = C.predict_inter_breakdown(model, costs)
    batch = C.predict_batch_seconds(model, costs)
    crossover = int((batch - per_sample["encoding"]) // per_sample["total"])
    assert crossover >= 1
    assert model.choose_packing(1, costs)["packing"] == "inter"
    many = model.choose_packing(crossover + 1, costs)
    assert many["packing"] == "batch" and many["inter_seconds"] > many["batch_seconds"]
    assert model.choose_packing(deep_ctx.slots + 1, costs)["batch_seconds"] == pytest.approx(2 * batch)
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        model.choose_packing(0, costs)
    from nn_models import make_model, node
    concat = make_model([node("Concat", ["x", "x"], ["y"], axis=1)], (1, 4, 4), {}, out_shape=(2, 4, 4))
    choice = rf.nn.load(concat, deep_ctx, packing="any").choose_packing(1, costs)
    assert choice["packing"] == "batch" and "cannot run this model" in choice["reason"]


def test_infer_cli_masking(tmp_path, capsys):
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    np.save(xs, np.random.default_rng(7).uniform(-1, 1, (6, 16)))
    assert cli.main(["infer", str(path), "--input", str(xs), "--masking", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["top1_agreement"] == 1.0 and report["max_abs_error"] < 1e-3
    assert report["levels_needed"] == 2 and report["counts"]["masked_values"] > 0  # a level each side of the mask
    assert cli.main(["infer", str(path), "--input", str(xs), "--masking", "--activation", "poly"]) == 2
    assert "needs --activation client" in capsys.readouterr().err


def test_infer_cli_dry_run(tmp_path, capsys):
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    np.save(xs, np.zeros((3, 16)))
    assert cli.main(["infer", str(path), "--input", str(xs), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run_activation_bytes"] == report["planned_activation_bytes"] > 0
    assert "outputs" not in report  # nothing was computed


def test_infer_cli_poly_reports_agreement_with_the_true_model(tmp_path, capsys):
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    x = np.random.default_rng(6).uniform(-1, 1, (32, 16))
    np.save(xs, x)
    assert cli.main(["infer", str(path), "--input", str(xs), "--activation", "poly", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Against the polynomial model the encryption is exact to 1e-4; against onnxruntime's ReLU model
    # the difference is the polynomials' own, and the report keeps both.
    assert report["max_abs_error_vs_polynomial_model"] < 1e-4
    assert report["max_abs_error"] > 10 * report["max_abs_error_vs_polynomial_model"]
    from nn_models import ort_run
    want = ort_run(path.read_bytes(), x)
    got = np.array(report["outputs"])
    assert report["max_abs_error"] == pytest.approx(float(np.max(np.abs(got - want))), rel=1e-6)


def test_infer_cli_refuses_runs_over_max_memory(tmp_path, capsys):
    path, xs = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    path.write_bytes(mlp_bytes())
    np.save(xs, np.zeros((2, 16)))
    assert cli.main(["infer", str(path), "--input", str(xs), "--max-memory", "0.0001"]) == 2
    assert "exceeds --max-memory" in capsys.readouterr().err


def test_the_diagonal_cache_keeps_the_most_recent_transforms_within_its_bound():
    from ringfire.nn.diagonal_cache import DiagonalCache

    cache = DiagonalCache(10)
    cache.put("a", 1, 4)
    cache.put("b", 2, 4)
    cache["bias"] = None  # small values do not count
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3, 4)  # 12 bytes > 10: the least recently used counted value leaves
    assert "b" not in cache and {"a", "c", "bias"} <= set(cache) and cache.bytes == 8 and cache.evictions == 1
    cache.set_limit(0)
    assert list(cache) == ["bias"] and cache.bytes == 0
    cache.set_limit(None)
    cache.put("d", 4, 10**12)
    assert cache["d"] == 4 and cache.bytes == 10**12
