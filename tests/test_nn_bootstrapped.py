"""Non-interactive inference deeper than the chain: polynomial activations with
bootstraps placed by the planner (ringfire.nn.refresh), on the toy ring, against
onnxruntime on the original ReLU model. The N16_BOOT run is benchmarks/nn_bootstrapped.py."""

import warnings

import numpy as np
import pytest

import ringfire as rf

pytest.importorskip("onnxruntime")
pytest.importorskip("sklearn")
import nn_models as M  # noqa: E402

SEED = bytes(range(32))


def toy_context(user_levels=6, bootstrap_slots=None):
    """N12_BOOT_INSECURE's circuit with `user_levels` levels of 40 bits for the model (NOT SECURE);
    `bootstrap_slots`: sparse bootstrapping of that many slots."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring is insecure by design and says so
        options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
        coeff_bits = [60] + [40] * user_levels + [45] * 3 + [60] * 11 + [56] * 3
        options.update(coeff_bits=coeff_bits, dnum=-(-len(coeff_bits) // 3))  # three primes per digit
        if bootstrap_slots is not None:
            options["bootstrap"] = {**options["bootstrap"], "slots": bootstrap_slots}
        return rf.ckks.Context(**options, insecure_deterministic_seed=SEED)


@pytest.fixture(scope="module")
def digits():
    x_train, y_train, x_test, y_test = M.digits_split()
    onnx_bytes, _ = M.deep_mlp_onnx(x_train, y_train, hidden=(16, 16))
    return onnx_bytes, x_train, x_test, y_test


@pytest.fixture(scope="module")
def boot():
    ctx = toy_context()
    sk, keys = ctx.keygen(bootstrap=True)
    return ctx, sk, keys


def test_a_model_deeper_than_the_chain_runs_without_a_client(digits, boot):
    onnx_bytes, x_train, x_test, y_test = digits
    ctx, sk, keys = boot
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train)
    assert model.bootstrap  # on by default where the context can bootstrap
    # One chain is too shallow for two degree-15 ReLUs and three layers: without bootstraps it does not fit.
    shallow = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train, bootstrap=False, poly_degree=15)
    assert not shallow.plan().fits
    plan = model.plan()
    assert plan.fits and plan.counts["bootstraps"] == 16  # 2 hidden layers x 16 ciphertexts, two per bootstrap
    assert plan.workspace_bytes > ctx.bootstrap_plan().temporary_bytes > 0  # a bootstrap's temporaries are planned for
    assert all(p.degree == 15 and p.depth == ctx.max_level - 1 for p in model.polys.values())

    out = model(ctx.encrypt_batch(x_test, keys))
    got = ctx.decrypt_batch(out, sk)
    assert model.last_run["bootstraps"] == plan.counts["bootstraps"]
    assert model.last_run["bootstrapped_ciphertexts"] == plan.counts["bootstrapped_ciphertexts"] == 32
    # The encrypted run computes the polynomial model: bootstrapping adds next to nothing.
    assert np.max(np.abs(got - model.plaintext(x_test, approximate=True))) < 1e-3  # measured 1.5e-6
    # Against onnxruntime on the original ReLU model (an independent reference).
    ref = M.ort_run(onnx_bytes, x_test)
    agreement = np.mean(got.argmax(1) == ref.argmax(1))
    assert agreement >= 0.97, agreement  # measured 0.994 (358 of 360)
    assert np.mean(got.argmax(1) == y_test) >= np.mean(ref.argmax(1) == y_test) - 0.02


def test_the_dry_run_bootstraps_as_the_plan_says(digits, boot):
    onnx_bytes, x_train, _, _ = digits
    ctx, _, _ = boot
    plan = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train).plan(dry_run=True)
    assert plan.dry_run_bytes == pytest.approx(plan.activation_bytes, rel=0.05)


def test_bootstrapping_errors_name_the_fix(digits, boot):
    onnx_bytes, x_train, x_test, _ = digits
    ctx, _, _ = boot
    with pytest.raises(ValueError, match="needs calibration=inputs"):
        rf.nn.load(onnx_bytes, ctx, activation="poly", activation_range=20.0)
    with pytest.raises(ValueError, match="activation='poly'"):
        rf.nn.load(onnx_bytes, ctx, bootstrap=True)
    plain_ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 60], scale_bits=40)
    with pytest.raises(ValueError, match="N16_BOOT"):
        rf.nn.load(onnx_bytes, plain_ctx, activation="poly", calibration=x_train, bootstrap=True)
    assert not rf.nn.load(onnx_bytes, plain_ctx, activation="poly", calibration=x_train).bootstrap
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
        options["bootstrap"] = {**options["bootstrap"], "slots": 256}
        sparse = rf.ckks.Context(**options)
    for explicit in (True, None):
        with pytest.raises(ValueError, match="sparse packing.*packing='inter' runs under it"):
            rf.nn.load(onnx_bytes, sparse, activation="poly", calibration=x_train, bootstrap=explicit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = rf.ckks.Context.preset("N12_BOOT_INSECURE", bootstrap={"stc_first": True})
    with pytest.raises(ValueError, match="runs SlotsToCoeffs first.*from level 3 up"):
        rf.nn.load(onnx_bytes, first, activation="poly", calibration=x_train)
    cnn = M.residual_cnn(np.random.default_rng(12))  # period 64: a 32-slot bootstrap would average its tiles
    with pytest.raises(ValueError, match=r"fewer than this model's period 64.*bootstrap=\{'slots': 64\}"):
        rf.nn.load(cnn, toy_context(bootstrap_slots=32), activation="poly",
                   calibration=np.zeros((4, 1, 4, 4)), packing="inter")
    _, keys = ctx.keygen()  # no bootstrapping keys
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train)
    with pytest.raises(ValueError, match=r"keygen\(bootstrap=True\)"):
        model(ctx.encrypt_batch(x_test[:4], keys))


def test_the_planner_picks_degrees_that_save_bootstraps(digits):
    """On 9 levels: the CNN (Conv, ReLU, AveragePool, Gemm) fits one chain at degree 31 where degree
    127 bootstraps all 256 ReLU outputs; the MLP needs one round instead of two, and its
    wider-range activation gets the deeper polynomial."""
    onnx_bytes, x_train, _, _ = digits
    ctx = toy_context(user_levels=9)
    cnn = M.cnn_onnx(M.cnn_init(), pool="avg")
    chosen = rf.nn.load(cnn, ctx, activation="poly", calibration=x_train)
    pinned = rf.nn.load(cnn, ctx, activation="poly", calibration=x_train, poly_degree=127)
    assert [p.degree for p in chosen.polys.values()] == [31] and chosen.plan().counts["bootstraps"] == 0
    assert pinned.plan().counts["bootstrapped_ciphertexts"] == 256
    mlp = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train)
    assert mlp.plan().counts["bootstrapped_ciphertexts"] == 16
    assert rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_train,
                      poly_degree=127).plan().counts["bootstrapped_ciphertexts"] == 32
    wide, narrow = sorted(mlp.polys.values(), key=lambda p: -p.interval[1])
    assert (wide.degree, narrow.degree) == (127, 63)


def test_infer_cli_bootstraps(tmp_path, capsys, monkeypatch, digits):
    import json

    from ringfire import cli

    onnx_bytes, x_train, x_test, _ = digits
    options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    options.update(coeff_bits=[60] + [40] * 6 + [45] * 3 + [60] * 11 + [56] * 3, dnum=8)
    monkeypatch.setitem(rf.ckks.PRESETS, "TOY6_BOOT_INSECURE", options)
    path, xs, cal = tmp_path / "mlp.onnx", tmp_path / "x.npy", tmp_path / "cal.npy"
    path.write_bytes(onnx_bytes)
    np.save(xs, x_test[:48])
    np.save(cal, x_train)
    args = ["infer", str(path), "--input", str(xs), "--activation", "poly", "--calibration", str(cal)]
    assert cli.main(args + ["--bootstrap", "--preset", "TOY6_BOOT_INSECURE", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "onnxruntime" and report["top1_agreement"] >= 0.95
    assert report["counts"]["bootstraps"] == 16 and report["max_abs_error_vs_polynomial_model"] < 1e-3
    assert report["bootstrap_slots"] == 2048  # batch packing: every slot
    cnn, images = tmp_path / "cnn.onnx", tmp_path / "images.npy"
    cnn.write_bytes(M.residual_cnn(np.random.default_rng(12)))
    np.save(images, np.random.default_rng(5).uniform(-1, 1, (2, 1, 4, 4)))
    assert cli.main(["infer", str(cnn), "--input", str(images), "--activation", "poly", "--packing", "inter",
                     "--bootstrap", "--preset", "TOY6_BOOT_INSECURE", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bootstrap_slots"] == 64 and report["counts"]["bootstraps"] > 0  # the period only
    assert report["reference"] == "onnxruntime" and report["max_abs_error_vs_polynomial_model"] < 1e-3
    assert cli.main(["infer", str(path), "--input", str(xs), "--bootstrap"]) == 2
    assert "needs --activation poly" in capsys.readouterr().err
    assert cli.main(args + ["--bootstrap", "--preset", "N13_D2"]) == 2
    assert "reserves no levels for bootstrapping" in capsys.readouterr().err


def test_products_and_residuals_bootstrap_once_and_stay_exact(boot):
    """SiLU as Gemm -> Sigmoid -> Mul(h, sigmoid(h)) (a product of two encrypted tensors),
    a residual Add that reads the input a second time, then Gemm -> Relu -> Gemm: every
    operator path that can trigger a bootstrap, against onnxruntime."""
    ctx, sk, keys = boot
    rng = np.random.default_rng(3)
    inits = {"W1": rng.normal(0, 0.5, (8, 8)), "W2": rng.normal(0, 0.5, (8, 8)), "W3": rng.normal(0, 0.5, (4, 8)),
             "b1": rng.normal(0, 0.1, 8), "b2": rng.normal(0, 0.1, 8), "b3": np.zeros(4)}
    nodes = [M.node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), M.node("Sigmoid", ["h"], ["s"]),
             M.node("Mul", ["h", "s"], ["silu"]), M.node("Add", ["silu", "x"], ["r"]),
             M.node("Gemm", ["r", "W2", "b2"], ["h2"], transB=1), M.node("Relu", ["h2"], ["a"]),
             M.node("Gemm", ["a", "W3", "b3"], ["y"], transB=1)]
    onnx_bytes = M.make_model(nodes, (8,), inits)
    x_cal, x = rng.uniform(-1, 1, (2000, 8)), rng.uniform(-1, 1, (64, 8))
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=x_cal)
    plan = model.plan()
    assert plan.counts["bootstraps"] > 0
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys)), sk)
    assert model.last_run["bootstraps"] == plan.counts["bootstraps"]
    approx = model.plaintext(x, approximate=True)
    assert np.max(np.abs(got - approx)) < 1e-3
    ref = M.ort_run(onnx_bytes, x)
    assert np.max(np.abs(got - ref)) <= np.max(np.abs(approx - ref)) + 1e-3 < 0.5


@pytest.mark.parametrize("bootstrap_slots", [None, 64], ids=["full-slot", "sparse"])
def test_one_image_per_ciphertext_bootstraps_too(boot, bootstrap_slots):
    """Inter-axis packing (one image per ciphertext) of a small residual CNN without a client: the
    runner bootstraps the image's one ciphertext where a layer needs levels, as many times per
    image as it planned, and matches the polynomial network and onnxruntime; with all N/2 slots
    bootstrapped, and with only the 64 of the model's period (sparse packing)."""
    rng = np.random.default_rng(12)
    onnx_bytes = M.residual_cnn(rng)
    assert rf.nn.inter_period(onnx_bytes) == 64
    ctx = boot[0] if bootstrap_slots is None else toy_context(bootstrap_slots=bootstrap_slots)
    model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=rng.uniform(-1, 1, (500, 1, 4, 4)),
                       packing="inter")
    assert ctx.bootstrap_plan().slots == (bootstrap_slots or ctx.slots)
    assert any("bootstrap={'slots': 64}" in note for note in model.plan().notes) == (bootstrap_slots is None)
    sk, keys = ctx.keygen(rotations=model.rotations(), bootstrap=True)
    x = rng.uniform(-1, 1, (2, 1, 4, 4))
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys, packing="inter")), sk)
    run = model.last_run
    assert run["bootstraps"] == 2 * run["bootstraps_planned_per_sample"] > 0
    assert np.max(np.abs(got - model.plaintext(x, approximate=True))) < 1e-3
    ref = M.ort_run(onnx_bytes, x)
    assert np.max(np.abs(got - ref)) <= np.max(np.abs(model.plaintext(x, approximate=True) - ref)) + 1e-3
