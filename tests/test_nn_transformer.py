"""A small Transformer encoder block (single-head self-attention, residuals, LayerNorm,
a ReLU feed-forward layer, as torch.nn.TransformerEncoderLayer computes it) against
onnxruntime: in the clear, and encrypted with batch packing and client-aided Softmax,
LayerNorm and ReLU. Attention multiplies two encrypted tensors (Q K^T and P V), which
runs as products of ciphertexts."""

import numpy as np
import pytest

import ringfire as rf

pytest.importorskip("onnxruntime")

from nn_models import make_model, node, ort_run  # noqa: E402

SEQ, D, FF, BATCH = 4, 8, 16, 3


def encoder_block(seed=0):
    r = np.random.default_rng(seed)
    w = {name: r.normal(0, 0.35, shape) for name, shape in
         [("Wq", (D, D)), ("Wk", (D, D)), ("Wv", (D, D)), ("Wo", (D, D)), ("W1", (D, FF)), ("W2", (FF, D))]}
    inits = {**w, "b1": r.normal(0, 0.1, FF), "b2": r.normal(0, 0.1, D), "inv_sqrt_d": np.array(1 / np.sqrt(D)),
             "g1": 1 + r.normal(0, 0.1, D), "be1": r.normal(0, 0.1, D), "g2": 1 + r.normal(0, 0.1, D),
             "be2": r.normal(0, 0.1, D)}
    nodes = [
        node("MatMul", ["x", "Wq"], "q"), node("MatMul", ["x", "Wk"], "k"), node("MatMul", ["x", "Wv"], "v"),
        node("Transpose", ["k"], "kt", perm=[0, 2, 1]),
        node("MatMul", ["q", "kt"], "scores"),                     # two tensors
        node("Mul", ["scores", "inv_sqrt_d"], "scaled"),
        node("Softmax", ["scaled"], "attn", axis=-1),
        node("MatMul", ["attn", "v"], "mixed"),                    # two tensors
        node("MatMul", ["mixed", "Wo"], "proj"),
        node("Add", ["x", "proj"], "res1"),
        node("LayerNormalization", ["res1", "g1", "be1"], "ln1", axis=-1, epsilon=1e-5),
        node("MatMul", ["ln1", "W1"], "h"), node("Add", ["h", "b1"], "hb"), node("Relu", ["hb"], "a"),
        node("MatMul", ["a", "W2"], "f"), node("Add", ["f", "b2"], "fb"),
        node("Add", ["ln1", "fb"], "res2"),
        node("LayerNormalization", ["res2", "g2", "be2"], "y", axis=-1, epsilon=1e-5),
    ]
    return make_model(nodes, (SEQ, D), inits, opset=17)


@pytest.fixture(scope="module")
def ctx3():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen()
    return ctx, sk, keys


def test_attention_products_run_as_tensor_products():
    model = rf.nn.load(encoder_block(), rf.ckks.Context.preset("N13_D2"))
    ops = [n.op for n in model.graph.nodes]
    assert ops.count("TensorMatMul") == 2 and ops.count("MatMul") == 6


def test_encoder_block_against_onnxruntime(ctx3):
    ctx, sk, keys = ctx3
    data = encoder_block()
    x = np.random.default_rng(1).uniform(-1, 1, (BATCH, SEQ, D))
    ref = ort_run(data, x)
    model = rf.nn.load(data, ctx)
    assert np.max(np.abs(model.plaintext(x) - ref)) < 1e-5
    plan = model.plan()
    # x -> Q -> Q K^T -> times 1/sqrt(d) before the Softmax; x -> V -> P V -> Wo before the LayerNorm.
    assert plan.fits and plan.levels_needed == 3, plan
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref)) < 1e-5, np.max(np.abs(got - ref))  # measured 4.4e-7 (outputs up to 2.1)
    # Each attention product is SEQ * D * SEQ products of ciphertexts.
    assert plan.counts["ct_mults"] == 2 * SEQ * D * SEQ


def test_encoder_block_one_sequence_per_ciphertext(ctx3):
    """packing='inter': Q K^T is (4, 8) by (8, 4) and P V (4, 4) by (4, 8), neither square, so each
    product's factors come straight from its operands (ringfire/nn/inter_products.py)."""
    ctx = ctx3[0]
    data = encoder_block()
    x = np.random.default_rng(2).uniform(-1, 1, (2, SEQ, D))
    ref = ort_run(data, x)
    model = rf.nn.load(data, ctx, packing="inter")
    plan = model.plan()
    # x -> Q (1) -> Q K^T (2: factors, products) -> scale (1); V (1) -> P V (2) -> Wo (1).
    assert plan.levels_needed == 4 and plan.counts["ct_mults"] == D + SEQ, plan
    sk, keys = ctx.keygen(rotations=model.rotations())
    out = model(ctx.encrypt_batch(x, keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys))
    got = ctx.decrypt_batch(out, sk)
    assert np.max(np.abs(got - ref)) < 1e-5, np.max(np.abs(got - ref))  # measured 3.3e-7


def test_tensor_products_are_refused_where_they_cannot_run(ctx3):
    ctx, _, _ = ctx3
    # (8, 4) by (8, 4): the inner sizes differ.
    bad = make_model([node("Transpose", ["x"], "xt", perm=[0, 2, 1]), node("MatMul", ["xt", "xt"], "y")], (SEQ, D),
                     out_shape=(D, D), opset=17)
    with pytest.raises(ValueError, match=r"needs per-sample shapes \(\.\.\., m, k\) and \(\.\.\., k, n\), got "
                                         r"\(8, 4\) and \(8, 4\)"):
        rf.nn.load(bad, ctx).plaintext(np.zeros((2, SEQ, D)))


def test_a_squeeze_excitation_gate_one_image_per_ciphertext(ctx3):
    """packing='inter': the (C, 1, 1) gate is moved onto the feature map's layout, repeated over
    each channel's slots (one transform), then multiplied by it (one product of ciphertexts);
    written gate-first, the product is read feature-map-first."""
    import onnx

    ctx = ctx3[0]
    gate_first = onnx.load_from_string(squeeze_excitation())
    gate_first.graph.node[-1].input[:] = ["gate", "x"]
    for data in (squeeze_excitation(), gate_first.SerializeToString()):
        x = np.random.default_rng(3).uniform(-1, 1, (2, 4, 4, 4))
        model = rf.nn.load(data, ctx, packing="inter")
        assert model.plan().levels_needed == 2  # the gate (fresh from the key holder): its move, the product
        sk, keys = ctx.keygen(rotations=model.rotations())
        out = model(ctx.encrypt_batch(x, keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys))
        got = ctx.decrypt_batch(out, sk)
        assert np.max(np.abs(got - ort_run(data, x))) < 1e-5  # measured 4.7e-8


def test_tensor_products_are_refused_under_bootstrapping():
    import warnings

    gram = make_model([node("Transpose", ["x"], "xt", perm=[0, 2, 1]), node("MatMul", ["x", "xt"], "g"),
                       node("Relu", ["g"], "y")], (SEQ, D), opset=17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the toy ring is insecure and says so
        toy = rf.ckks.Context.preset("N12_BOOT_INSECURE")
    with pytest.raises(ValueError, match="MatMul of two encrypted tensors .* runs without bootstrapping"):
        rf.nn.load(gram, toy, activation="poly", calibration=np.ones((2, SEQ, D)))
    with pytest.raises(ValueError, match="broadcasts one encrypted tensor against another.*bootstrap=False"):
        rf.nn.load(squeeze_excitation(), toy, activation="poly", calibration=np.ones((2, 4, 4, 4)))
    assert not rf.nn.load(gram, toy, activation="poly", calibration=np.ones((2, SEQ, D)), bootstrap=False).bootstrap


def squeeze_excitation(seed=2, c=4, hw=4):
    """MobileNetV3's and EfficientNet's channel attention: x * HardSigmoid(Conv(ReLU(Conv(mean(x))))),
    the product broadcasting (C, 1, 1) against (C, H, W)."""
    r = np.random.default_rng(seed)
    inits = {"W1": r.normal(0, 0.5, (2, c, 1, 1)), "B1": r.normal(0, 0.1, 2), "W2": r.normal(0, 0.5, (c, 2, 1, 1)),
             "B2": r.normal(0, 0.1, c)}
    nodes = [node("GlobalAveragePool", ["x"], "m"), node("Conv", ["m", "W1", "B1"], "s1"), node("Relu", ["s1"], "r"),
             node("Conv", ["r", "W2", "B2"], "s2"), node("HardSigmoid", ["s2"], "gate", alpha=1 / 6, beta=0.5),
             node("Mul", ["x", "gate"], "y")]
    return make_model(nodes, (c, hw, hw), inits, opset=14)


def test_a_squeeze_excitation_block_broadcasts_one_tensor_against_another(ctx3):
    ctx, sk, keys = ctx3
    data = squeeze_excitation()
    x = np.random.default_rng(3).uniform(-1, 1, (BATCH, 4, 4, 4))
    ref = ort_run(data, x)
    model = rf.nn.load(data, ctx)
    assert np.max(np.abs(model.plaintext(x) - ref)) < 1e-5
    assert model.plan().fits
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    assert np.max(np.abs(got - ref)) < 1e-5, np.max(np.abs(got - ref))  # measured 9.8e-8, 2 levels
    with pytest.raises(ValueError, match=r"per-sample shapes \(4, 4, 4\) and \(4, 4\) do not broadcast"):
        bad = make_model([node("ReduceMean", ["x"], "m", axes=[1], keepdims=0), node("Mul", ["x", "m"], "y")],
                         (4, 4, 4), out_shape=(4, 4, 4), opset=13)
        rf.nn.load(bad, ctx).plaintext(x)


@pytest.mark.parametrize("inner", [2, 16])
def test_a_tensor_product_plans_one_running_sum_not_every_partial_product(inner):
    """x x^T for x of shape (m, inner): the planned peak is the input and one running sum, one
    product and their sum (m x m each), whatever the inner size: the column and row operands
    are the input's ciphertexts by reference, and each partial sum is freed once added (it
    planned 4 x inner x m x m ciphertexts that were never freed)."""
    m = 4
    gram = make_model([node("Transpose", ["x"], "xt", perm=[0, 2, 1]), node("MatMul", ["x", "xt"], "y")],
                      (m, inner), out_shape=(m, m), opset=17)
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40], scale_bits=40, special_bits=[60])
    plan = rf.nn.load(gram, ctx).plan()
    top = 2 * 8 * ctx.poly_degree * (ctx.max_level + 1)  # one ciphertext at the top level
    assert plan.peak_bytes <= (m * inner + 3 * m * m) * top, (plan.peak_bytes / top, m * inner + 3 * m * m)
    x = np.random.default_rng(5).uniform(-1, 1, (2, m, inner))
    sk, keys = ctx.keygen()
    model = rf.nn.load(gram, ctx)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys)), sk)
    assert np.max(np.abs(got - x @ x.transpose(0, 2, 1))) < 1e-5
