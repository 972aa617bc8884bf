"""Graphs that compute with their own shape (``x.size(0)``) or move the batch axis (torch's
attention) load, equal onnxruntime one sample at a time, and run encrypted; torch's own
exports of transformer layers among them."""

import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire.nn.static_shapes import make_static, needs_static

ort = pytest.importorskip("onnxruntime")

from nn_models import (L, E, attention_moving_the_batch, class_token_after_the_batch_moved, make_model,  # noqa: E402
                       bert_encoder, node, ort_run, self_attention, tiny_vit)


@pytest.fixture(scope="module")
def ctx3():
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen()
    return ctx, sk, keys


def flatten_by_own_size() -> bytes:
    """x.view(x.size(0), -1) then a dense layer, as the TorchScript exporter writes it."""
    r = np.random.default_rng(1)
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n", axis=0),
             node("Unsqueeze", ["n", "axes0"], "n1"), node("Concat", ["n1", "minus_one"], "target", axis=0),
             node("Reshape", ["x", "target"], "flat"), node("Gemm", ["flat", "W", "B"], "y")]
    return make_model(nodes, (2, 3), {"zero": np.array(0), "axes0": np.array([0]), "minus_one": np.array([-1]),
                                      "W": r.normal(0, 0.5, (6, 4)), "B": r.normal(0, 0.1, 4)})


def static_of(data: bytes):
    import onnx
    return make_static(onnx.load_from_string(data))


@pytest.mark.parametrize("build,lifted", [(flatten_by_own_size, False), (attention_moving_the_batch, True)])
def test_the_static_form_equals_the_original_one_sample_at_a_time(build, lifted):
    import onnx
    data = build()
    assert needs_static(onnx.load_from_string(data))
    static = static_of(data)
    onnx.checker.check_model(static)
    ops = {n.op_type for n in static.graph.node}
    assert "Shape" not in ops
    x = np.random.default_rng(3).standard_normal((5,) + (((2, 3)) if not lifted else (L, E)))
    expected = np.concatenate([ort_run(data, x[i:i + 1]) for i in range(len(x))])
    got = ort_run(static.SerializeToString(), x)
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-5
    # Lifted graphs carry the batch in front of the batch-1 tensors: Transposes keep it first.
    assert all(list(n.attribute[0].ints)[0] == 0 for n in static.graph.node if n.op_type == "Transpose")


@pytest.mark.parametrize("build", [flatten_by_own_size, attention_moving_the_batch])
def test_graphs_that_read_their_shape_run_encrypted(build, ctx3):
    ctx, sk, keys = ctx3
    data = build()
    model = rf.nn.load(data, ctx)
    x = np.random.default_rng(4).uniform(-1, 1, (4,) + tuple(model.graph.input_shape))
    expected = np.concatenate([ort_run(data, x[i:i + 1]) for i in range(len(x))])
    assert np.max(np.abs(model.plaintext(x) - expected)) < 1e-5
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-3


def test_a_class_token_concatenated_after_the_batch_moved_is_lifted(ctx3):
    """The constant part has no batch axis: the data are padded with zeros where it goes and it
    is added as a tensor that broadcasts over the batch; onnxruntime runs the result at batch 5
    equal to the original one sample at a time, and so does the model encrypted."""
    import onnx
    data = class_token_after_the_batch_moved()
    static = static_of(data)
    onnx.checker.check_model(static)
    assert "Concat" not in {n.op_type for n in static.graph.node}
    x = np.random.default_rng(6).standard_normal((5, L, E))
    expected = np.concatenate([ort_run(data, x[i:i + 1]) for i in range(len(x))])
    assert np.max(np.abs(ort_run(static.SerializeToString(), x) - expected)) < 1e-5
    ctx, sk, keys = ctx3
    model = rf.nn.load(data, ctx)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys)), sk)
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-5


def test_a_constant_between_data_parts_is_refused_by_name():
    import onnx
    with pytest.raises(ValueError, match="'.*': Concat with constants between its data inputs"):
        make_static(onnx.load_from_string(class_token_after_the_batch_moved(middle_token=True)))


def test_ordinary_graphs_are_left_as_they_are():
    import onnx
    data = make_model([node("Relu", ["x"], "y")], (4,))
    assert not needs_static(onnx.load_from_string(data))


# ---- torch's own exports ---------------------------------------------------------------------
def torch_or_skip():
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")  # torch's default (dynamo) exporter
    return torch


def test_torch_transformer_encoder_layer_runs_encrypted(ctx3):
    """nn.TransformerEncoderLayer(batch_first=True) as torch exports it (the TorchScript exporter
    fails on it in torch 2.15; the dynamo one writes Shape, Gather and batch-moving transposes)."""
    torch = torch_or_skip()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True,
                                             dropout=0.0).eval()
    x = torch.randn(3, 4, 8)
    ctx, sk, keys = ctx3
    model = rf.nn.load(layer, ctx, example_input=x[:1])
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x.numpy(), keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    with torch.no_grad():
        expected = layer(x).numpy()
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-3


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_torch_multihead_attention_runs_encrypted(exporter, ctx3):
    torch = torch_or_skip()
    torch.manual_seed(1)
    module = self_attention(torch)
    x = torch.randn(2, 4, 8)
    ctx, sk, keys = ctx3
    model = rf.nn.load(module, ctx, example_input=x[:1], exporter=exporter)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x.numpy(), keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    with torch.no_grad():
        expected = module(x).numpy()
    assert np.max(np.abs(got - expected)) < 1e-3


def test_a_sequence_first_layer_is_refused_not_run_wrong(ctx3):
    """torch's default for its transformer layers is batch_first=False: the first axis is the
    sequence. Run sample by sample along it, the layer would be silently wrong (it was: 0.87
    from torch); the loader sees torch's outputs change when inputs share a batch and refuses."""
    torch = torch_or_skip()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0).eval()
    ctx, _, _ = ctx3
    with pytest.raises(ValueError, match="mixes values across the first axis .*batch_first=True.*batch_axis=1"):
        rf.nn.load(layer, ctx, example_input=torch.randn(4, 1, 8))


def test_a_sequence_first_layer_loads_with_its_batch_axis(ctx3):
    """batch_axis=1: the module is exported with its batch moved to the front and back, so the
    loaded model takes and gives (batch, sequence, features), equal to torch's output moved."""
    torch = torch_or_skip()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0).eval()
    x = torch.randn(4, 3, 8)  # (sequence, batch, features), as this layer takes it
    ctx, sk, keys = ctx3
    model = rf.nn.load(layer, ctx, example_input=x[:, :1], batch_axis=1)
    batch_first = x.numpy().transpose(1, 0, 2)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(batch_first, keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    with torch.no_grad():
        expected = layer(x).numpy().transpose(1, 0, 2)
    assert np.max(np.abs(got - expected)) < 1e-3  # measured 2e-7
    for bad in (-1, 3, True):
        with pytest.raises(ValueError, match="batch_axis"):
            rf.nn.load(layer, ctx, example_input=x[:, :1], batch_axis=bad)


def test_an_upsampling_adaptive_pool_runs_encrypted():
    """AdaptiveAvgPool2d((7, 7)) on a 1x1 map (torchvision's VGGs at 32x32) exports as a GatherND
    by constant indices across the batch-1 axis: it becomes one Gather along the flattened sample,
    and the model runs encrypted within 1e-6 of torch."""
    torch = torch_or_skip()
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.AdaptiveAvgPool2d((7, 7)),
                                 torch.nn.Flatten(), torch.nn.Linear(196, 3)).eval()
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 3 + [60], scale_bits=40)
    model = rf.nn.load(module, ctx, example_input=torch.randn(1, 3, 1, 1))
    x = np.random.default_rng(0).normal(size=(5, 3, 1, 1))
    with torch.no_grad():
        expected = module(torch.tensor(x, dtype=torch.float32)).numpy()
    sk, keys = ctx.keygen()
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys)), sk)
    assert np.max(np.abs(got - expected)) < 1e-6


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_pad_after_the_batch_moved_is_lifted(exporter):
    """Swin's windowed attention pads a tensor whose batch axis has moved: the new batch axis is
    not padded (a zero pair joins the constant pads), in the clear equal to torch."""
    torch = torch_or_skip()
    torch.manual_seed(0)

    class PadAfterTranspose(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(6, 3)

        def forward(self, x):  # (batch, L, d)
            y = torch.nn.functional.pad(x.transpose(0, 1), (1, 1))  # (L, batch, d + 2)
            return self.linear(y.transpose(0, 1))

    module = PadAfterTranspose().eval()
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60] + [40] * 3 + [60], scale_bits=40)
    model = rf.nn.load(module, ctx, example_input=torch.randn(1, 5, 4), exporter=exporter)
    x = np.random.default_rng(1).normal(size=(3, 5, 4))
    with torch.no_grad():
        expected = module(torch.tensor(x, dtype=torch.float32)).numpy()
    assert np.max(np.abs(model.plaintext(x) - expected)) < 1e-6


def encrypted_and_torch(module, x, ctx3):
    """``module`` loaded from torch's export, run encrypted on ``x`` (client-aided), and run by
    torch: (decrypted output, torch's output)."""
    import torch
    ctx, sk, keys = ctx3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rf.nn.load(module, ctx, example_input=x[:1])
    with torch.no_grad():
        expected = module(x).numpy()
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x.numpy(), keys), client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    return got, expected


def test_a_torchvision_vit_runs_encrypted(ctx3):
    """torchvision's VisionTransformer (class token, learned positions, pre-norm encoder blocks,
    GELU) at 16x16 with 8x8 patches: loaded from the module, run encrypted with client-aided
    LayerNorm/Softmax/GELU, the logits within 1e-4 of torch and the same top-1 class. The
    classification head starts at zero in torchvision, so it gets random weights here."""
    torch = torch_or_skip()
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    got, expected = encrypted_and_torch(tiny_vit(torch, torchvision), torch.randn(3, 3, 16, 16), ctx3)
    assert np.max(np.abs(got - expected)) < 1e-4
    assert (got.argmax(1) == expected.argmax(1)).all()


def test_a_bert_encoder_runs_encrypted(ctx3):
    """An encoder of the BERT family (Hugging Face's BertModel at a small size) from its input
    embeddings -- the key holder embeds the tokens, the server runs the encoder: position and
    token-type embeddings, attention with the mask BertModel derives from the input's shape,
    LayerNorm and GELU, client-aided; the hidden states within 1e-5 of torch."""
    torch = torch_or_skip()
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    got, expected = encrypted_and_torch(bert_encoder(torch, transformers), torch.randn(3, 8, 16), ctx3)
    assert got.shape == expected.shape and np.max(np.abs(got - expected)) < 1e-5
