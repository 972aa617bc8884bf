"""Attention one sequence per ciphertext (packing='inter'): products of two encrypted tensors
as sums of products of transformed ciphertexts (ringfire/nn/inter_products.py), Transpose,
Slice and Gather as moves of a layout, and layouts the key holder rebuilds from what the
server sends. References: NumPy's matmul for the transforms' index algebra, onnxruntime and
torch for whole blocks."""

import numpy as np
import pytest

import ringfire as rf
from ringfire.nn.inter_products import product_plan
from ringfire.nn.layouts import Layout, compact, describe, rebuilt

pytest.importorskip("onnxruntime")

from nn_models import (ATTENTION_DH, ATTENTION_HEADS, ATTENTION_SEQ, bert_encoder, make_model,  # noqa: E402
                       multi_head_block, node, ort_run, self_attention, tiny_vit)


def apply_maps(plan, a_vec, b_vec, period):
    """What the encrypted run computes, on plain slot vectors: each transform reads its
    sources into its targets (weight 1, zero elsewhere), then the factors' products are summed."""
    def move(smap, vec):
        out = np.zeros(period)
        out[smap.targets] = vec[smap.sources]
        return out

    if plan.moves:
        a_vec, b_vec = move(plan.moves[0], a_vec), move(plan.moves[1], b_vec)
    return sum(move(fa, a_vec) * move(fb, b_vec) for fa, fb in plan.factors)


@pytest.mark.parametrize("lead,m,k,n", [(2, 4, 4, 4), (1, 3, 5, 2), (3, 4, 2, 4), (1, 8, 8, 8)])
def test_product_transforms_compute_the_matrix_product(lead, m, k, n):
    rng = np.random.default_rng(lead * 100 + m * 10 + k + n)
    period = 1 << int(np.ceil(np.log2(3 * lead * max(m, k) * max(k, n) + 1)))
    # Operands scattered over random distinct slots, garbage in every other slot.
    slots = rng.permutation(period)
    a_slots, b_slots = slots[:lead * m * k], slots[lead * m * k:lead * m * k + lead * k * n]
    c_slots = a_slots if k == n else rng.permutation(period)[:lead * m * n]
    a, b = rng.normal(size=(lead, m, k)), rng.normal(size=(lead, k, n))
    a_vec, b_vec = rng.normal(size=period), rng.normal(size=period)
    a_vec[a_slots], b_vec[b_slots] = a.reshape(-1), b.reshape(-1)
    plan = product_plan("p", a_slots, a.shape[1:] if lead == 1 else a.shape, b_slots,
                        b.shape[1:] if lead == 1 else b.shape, c_slots)
    assert bool(plan.moves) == (m == k == n)
    got = apply_maps(plan, a_vec, b_vec, period)
    assert np.allclose(got[c_slots], np.matmul(a, b).reshape(-1))
    outside = np.setdiff1d(np.arange(period), c_slots)
    assert np.all(got[outside] == 0)  # nothing from the garbage slots reaches the result


def test_square_shifts_are_two_diagonals_on_strided_layouts():
    # Four heads of 32 x 32 split off a (32, 128) row-major tensor, as attention lays out Q.
    q = compact((32, 128)).slots.reshape(32, 4, 32).transpose(1, 0, 2).reshape(-1)
    k_t = (4096 + compact((32, 128)).slots).reshape(32, 4, 32).transpose(1, 2, 0).reshape(-1)
    plan = product_plan("qk", q, (4, 32, 32), k_t, (4, 32, 32), q)
    assert len(plan.factors) == 32
    assert max(len(m.offsets(8192)) for pair in plan.factors for m in pair) == 2
    assert len(plan.moves[0].offsets(8192)) == 63


def test_layouts_travel_as_strides_or_runs():
    heads = Layout(compact((32, 128)).slots.reshape(32, 4, 32).transpose(1, 0, 2).reshape(-1))
    desc = describe(heads, (4, 32, 32))
    assert desc["strides"] == [32, 128, 1] and "runs" not in desc
    assert np.array_equal(rebuilt(desc).slots, heads.slots)
    shuffled = Layout(np.random.default_rng(0).permutation(64))
    assert np.array_equal(rebuilt(describe(shuffled, (8, 8))).slots, shuffled.slots)
    assert describe(compact((3, 4, 4)), (3, 4, 4))["grid"] == [1, 4, 4]
    for bad in ({"shape": [2], "strides": [0]}, {"shape": [2], "runs": [[0, 3]]}, {"shape": [2], "runs": [[-1, 2]]},
                {"shape": [2], "strides": [2**62]}, {"shape": [2, 2], "strides": [1]}, {"shape": [2], "runs": [7]},
                {"shape": [2], "runs": [[0, "x"]]}, {"shape": [2], "strides": None, "runs": [[2**80, 2]]}, {}):
        with pytest.raises(ValueError, match="layout"):
            rebuilt(bad)


SEQ, HEADS, DH, D = ATTENTION_SEQ, ATTENTION_HEADS, ATTENTION_DH, ATTENTION_HEADS * ATTENTION_DH


@pytest.fixture(scope="module")
def ctx5():
    return rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 40], scale_bits=40, special_bits=[60])


def test_multi_head_attention_one_sequence_per_ciphertext(ctx5):
    ctx = ctx5
    data = multi_head_block()
    x = np.random.default_rng(1).uniform(-1, 1, (2, SEQ, D))
    ref = ort_run(data, x)
    model = rf.nn.load(data, ctx, packing="inter")
    assert np.max(np.abs(model.plaintext(x) - ref)) < 1e-6
    plan = model.plan()
    # projection 1, Q K^T 3 (moves, shifts, products), scale 1; then P V 3 on V (1) and Wo 1.
    assert plan.fits and plan.levels_needed == 5, plan
    assert plan.counts["ct_mults"] == 2 * DH  # square heads: one product per inner index, both products
    sk, keys = ctx.keygen(rotations=model.rotations())
    out = model(ctx.encrypt_batch(x, keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys))
    got = ctx.decrypt_batch(out, sk)
    assert np.max(np.abs(got - ref)) < 1e-4, np.max(np.abs(got - ref))


def test_layouts_of_moved_tensors_are_sent_to_the_key_holder(ctx5):
    model = rf.nn.load(multi_head_block(), ctx5, packing="inter")
    runner = model._inter_runner()
    softmax = next(n for n in model.graph.nodes if n.op == "Softmax")
    sent = runner.layouts_of(softmax)
    assert sent["in"]["strides"] is not None and sent["in"]["shape"] == [HEADS, SEQ, SEQ]


def test_concat_still_needs_batch_packing(ctx5):
    data = make_model([node("Concat", ["x", "x"], "y", axis=1)], (SEQ, D), {}, opset=17)
    with pytest.raises(ValueError, match="Concat.*packing='batch'"):
        rf.nn.load(data, ctx5, packing="inter").plan()


# ---- torch's own exports, one sequence per ciphertext -----------------------------------------
def torch_or_skip():
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")  # torch's default (dynamo) exporter
    return torch


def called(torch, layer, call):
    """A module that runs ``call(layer, x)``: a layer called with more than its input."""

    class Called(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return call(self.layer, x)

    return Called().eval()


def inter_and_torch(module, x, ctx, exporter="auto"):
    """``module`` exported by torch, loaded with packing='inter', run one sample per ciphertext
    with client-aided Softmax/LayerNorm/activations: (decrypted output, torch's output, plan)."""
    import warnings

    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporters' own warnings
        model = rf.nn.load(module, ctx, example_input=x[:1], packing="inter", exporter=exporter)
    plan = model.plan()
    sk, keys = ctx.keygen(rotations=model.rotations())
    out = model(ctx.encrypt_batch(x.numpy(), keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys))
    with torch.no_grad():
        expected = module(x).numpy()
    return ctx.decrypt_batch(out, sk), expected, plan


def test_torch_transformer_encoder_layer_one_sequence_per_ciphertext(ctx5):
    """Heads of 4 x 4 (sequence 4, width 8, 2 heads): the square products."""
    torch = torch_or_skip()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True,
                                             dropout=0.0).eval()
    got, expected, plan = inter_and_torch(layer, torch.randn(2, 4, 8), ctx5)
    assert plan.counts["ct_mults"] == 2 * 4
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-4  # measured 4e-7


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_torch_multihead_attention_one_sequence_per_ciphertext(exporter, ctx5):
    """The TorchScript exporter adds the projection's bias constant-first (bias + x)."""
    torch = torch_or_skip()
    torch.manual_seed(1)
    got, expected, _ = inter_and_torch(self_attention(torch), torch.randn(2, 4, 8), ctx5, exporter)
    assert np.max(np.abs(got - expected)) < 1e-4  # measured 1e-7


def test_a_torchvision_vit_one_image_per_ciphertext(ctx5):
    """The class token is a zero Pad of the patches (a transform) plus a constant; the residual
    around attention meets a layout its Transposes moved (a relayout); 5 tokens of width 4 per
    head: products that are not square."""
    torch = torch_or_skip()
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    got, expected, plan = inter_and_torch(tiny_vit(torch, torchvision), torch.randn(2, 3, 16, 16), ctx5)
    assert plan.counts["ct_mults"] == 4 + 5
    assert np.max(np.abs(got - expected)) < 1e-4  # measured 4e-7
    assert (got.argmax(1) == expected.argmax(1)).all()


@pytest.mark.parametrize("packing", ["batch", "inter"])
def test_a_causal_mask_runs_encrypted(packing, ctx5):
    """torch's causal mask holds -inf, which no CKKS value can: added to scores that only a
    Softmax reads, it becomes -1e4, which the Softmax turns into the same zero weight."""
    torch = torch_or_skip()

    def causal(layer, x):
        return layer(x, src_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1]), is_causal=True)

    torch.manual_seed(2)
    module = called(torch, torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), causal)
    x = torch.randn(2, 4, 8)
    if packing == "inter":
        got, expected, _ = inter_and_torch(module, x, ctx5)
    else:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = rf.nn.load(module, ctx5, example_input=x[:1])
        sk, keys = ctx5.keygen()
        got = ctx5.decrypt_batch(model(ctx5.encrypt_batch(x.numpy(), keys), client=rf.nn.LocalClient(ctx5, sk, keys)),
                                 sk)
        with torch.no_grad():
            expected = module(x).numpy()
    assert np.max(np.abs(got - expected)) < 1e-4  # measured 3e-7


def test_a_torch_decoder_layer_one_sequence_per_ciphertext(ctx5):
    """Self-attention, then cross-attention to a memory (here the input itself), then the
    feed-forward layer: three residuals and LayerNorms."""
    torch = torch_or_skip()

    torch.manual_seed(3)
    decoder = called(torch, torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                     lambda layer, x: layer(x, x))
    got, expected, _ = inter_and_torch(decoder, torch.randn(2, 4, 8), ctx5)
    assert np.max(np.abs(got - expected)) < 1e-4  # measured 2e-7


def test_a_bert_encoder_one_sequence_per_ciphertext(ctx5):
    """Hugging Face's BertModel (position and token-type embeddings added as constants, the
    attention mask it derives from the input's shape, GELU), sequence 8, heads of width 8:
    square products."""
    torch = torch_or_skip()
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    got, expected, plan = inter_and_torch(bert_encoder(torch, transformers), torch.randn(2, 8, 16), ctx5)
    assert plan.counts["ct_mults"] == 2 * 8
    assert np.max(np.abs(got - expected)) < 1e-4  # measured 3.8e-7


def test_infinite_constants_elsewhere_are_refused_by_name(ctx5):
    inf_bias = make_model([node("Add", ["x", "c"], "y")], (SEQ, D), {"c": np.full(D, -np.inf)}, opset=17)
    with pytest.raises(ValueError, match=r"node 'Add_0' \(Add\) reads the constant 'c', which holds inf"):
        rf.nn.load(inf_bias, ctx5)


def test_a_period_beyond_the_slots_does_not_fit_the_plan():
    """d = 128 over 32 tokens with the packed projection spans 16384 slots: the plan says it does
    not fit N = 2^13's 4096 before anything runs."""
    model = rf.nn.load(multi_head_block(seq=32, heads=4, head_width=32), rf.ckks.Context.preset("N13_D2"),
                       packing="inter")
    plan = model.plan()
    assert not plan.fits and plan.levels_needed == 5
    assert "period 16384 exceeds the context's 4096 slots" in plan.notes[0]
