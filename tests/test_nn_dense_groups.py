"""A linear layer's outputs that read the same inputs are summed side by side
(``Evaluator.linear_combinations``): a dense layer's outputs, a convolution's channels at one
position. The groups an executor receives, and results equal, byte for byte, to one output
at a time."""

import numpy as np
import pytest
from nn_models import make_model, mlp_bytes, node, ort_run

import ringfire as rf
from ringfire.nn import runtimes
from ringfire.parallel import InProcess


class Recording(InProcess):
    """In-process maps that keep each linear layer's groups, spread as ``workers`` say."""

    def __init__(self, workers=1, chunks_per_worker=1):
        self.workers, self.chunks_per_worker, self.groups = workers, chunks_per_worker, []

    def map(self, fn, items, **kwargs):
        items = list(items)
        if fn.__name__ == "linear_outputs":
            self.groups.append([len(rows) for _, rows in items])
        return super().map(fn, items, **kwargs)


def conv_bytes(seed=0, channels=4):
    rng = np.random.default_rng(seed)
    w = rng.uniform(-0.5, 0.5, (channels, 2, 3, 3)).astype(np.float32)
    return make_model([node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], (2, 4, 4), {"w": w},
                      out_shape=(channels, 4, 4))


@pytest.fixture(scope="module")
def ckks():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    return ctx, sk, keys


def run(ckks, onnx, x, executor, enc=None):
    ctx, sk, keys = ckks
    model = rf.nn.load(onnx, ctx)
    enc = ctx.encrypt_batch(x, keys, level=model.input_level) if enc is None else enc
    out = model(enc, executor=executor)
    return out, ctx.decrypt_batch(out, sk), enc


def test_a_dense_layers_outputs_go_eight_together_and_keep_their_words(ckks, monkeypatch):
    onnx = mlp_bytes((16, 20))
    x = np.random.default_rng(1).uniform(-1, 1, (3, 16))
    rec = Recording()
    grouped, y, enc = run(ckks, onnx, x, rec)
    assert rec.groups == [[8, 8, 4]]
    monkeypatch.setattr(runtimes, "DENSE_GROUP", 1)
    single, _, _ = run(ckks, onnx, x, Recording(), enc)
    assert [c.to_bytes() for c in grouped.cts.flat] == [c.to_bytes() for c in single.cts.flat]
    assert np.max(np.abs(y - ort_run(onnx, x))) < 1e-3


def test_a_convolutions_channels_at_one_position_go_together(ckks):
    onnx = conv_bytes()
    x = np.random.default_rng(2).uniform(-1, 1, (2, 2, 4, 4))
    rec = Recording()
    _, y, _ = run(ckks, onnx, x, rec)
    assert rec.groups == [[4] * 16]  # 16 positions, the 4 channels of each together
    assert np.max(np.abs(y - ort_run(onnx, x))) < 1e-3


def test_an_executor_that_spreads_a_map_keeps_as_many_groups_as_it_has_places(ckks):
    x = np.random.default_rng(3).uniform(-1, 1, (2, 16))
    rec = Recording(workers=2, chunks_per_worker=2)
    run(ckks, mlp_bytes((16, 20)), x, rec)
    run(ckks, mlp_bytes((16, 4)), x, rec)
    assert rec.groups == [[5, 5, 5, 5], [1, 1, 1, 1]]  # 20 // 4 outputs per group; 4 outputs: one each
