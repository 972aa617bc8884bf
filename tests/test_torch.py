"""PyTorch: modules load through torch.onnx, tensors work as operands.

The first tests need torch (``pip install 'ringfire[torch]'``) and compare an
encrypted run with the module itself and with onnxruntime. CI's Python has no
torch (PyPI's Linux wheels bring the CUDA stack, gigabytes), so the last tests
put a stand-in ``torch`` in ``sys.modules`` whose exporters emit a fixed ONNX
MLP: they check the choice between the two exporters, the fallback, and the
messages a user sees, without torch.
"""

import sys
import types

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ringfire as rf
from ringfire.nn import torch_export


@pytest.fixture(scope="module")
def ctx():
    return rf.ckks.Context(poly_degree=2**13, coeff_bits=[60, 40, 40, 60], scale_bits=40)


def run_encrypted(ctx, model, x):
    sk, keys = ctx.keygen(rotations=model.rotations())
    enc = ctx.encrypt_batch(x, keys)
    return ctx.decrypt_batch(model(enc, client=rf.nn.LocalClient(ctx, sk, keys)), sk)


# --- with PyTorch -------------------------------------------------------------

def small_cnn(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3),
                         nn.Dropout(0.5), nn.ReLU(), nn.Linear(3, 2))


@pytest.mark.parametrize("exporter", ["auto", "torchscript", "dynamo"])
def test_torch_module_runs_encrypted_like_torch_and_onnxruntime(ctx, exporter):
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    module = small_cnn(torch).eval()
    model = rf.nn.load(module, ctx, example_input=torch.zeros(1, 1, 4, 4), exporter=exporter)
    x = np.random.default_rng(1).uniform(-1, 1, (5, 1, 4, 4)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    onnx_bytes = torch_export.export(module, torch.zeros(1, 1, 4, 4), exporter)
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x})[0], want, atol=1e-5)
    np.testing.assert_allclose(run_encrypted(ctx, model, x), want, atol=1e-4)


def test_torch_module_in_training_mode_is_refused_with_the_fix(ctx):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"training mode .*module\.eval\(\)"):
        rf.nn.load(small_cnn(torch), ctx, example_input=torch.zeros(1, 1, 4, 4))


def test_torch_tensors_are_operands(ctx):
    torch = pytest.importorskip("torch")
    sk, keys = ctx.keygen()
    x = torch.tensor([0.5, -1.0, 2.0])
    ct = ctx.encrypt(x, keys)
    got = ctx.decrypt(ct * torch.tensor([2.0, 2.0, 2.0], requires_grad=True) + torch.ones(1), sk)
    np.testing.assert_allclose(got, 2 * x.numpy() + 1, atol=1e-6)


# --- without PyTorch: a stand-in module and exporters --------------------------

def mlp_onnx() -> bytes:
    w1, w2 = np.full((4, 3), 0.5, np.float32), np.full((3, 2), -0.25, np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


class StandInTensor:
    def __init__(self, data):
        self.data = np.asarray(data, np.float32)
        self.ndim, self.shape = self.data.ndim, self.data.shape

    def detach(self):
        return self

    def to(self, *args):
        return self


@pytest.fixture
def stand_in_torch(monkeypatch):
    """A ``torch`` whose legacy exporter can be switched off, recording which ran."""
    calls = []
    fake = types.SimpleNamespace(legacy_works=True, calls=calls, float32="float32")

    class Module:
        training = False

    def export(module, args, f=None, dynamo=True, **kwargs):
        calls.append("dynamo" if dynamo else "torchscript")
        if not dynamo:
            if not fake.legacy_works:
                raise RuntimeError("the TorchScript exporter was removed")
            f.write(mlp_onnx())
            return None
        import onnxscript  # noqa: F401  (absent in CI unless installed)
        return types.SimpleNamespace(model_proto=types.SimpleNamespace(SerializeToString=mlp_onnx))

    class Dim:
        DYNAMIC = "dynamic"

    fake.nn = types.SimpleNamespace(Module=Module)
    fake.Tensor = StandInTensor
    fake.as_tensor = StandInTensor
    fake.onnx = types.SimpleNamespace(export=export)
    fake.export = types.SimpleNamespace(Dim=Dim)
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


def test_legacy_exporter_first_and_the_model_runs(ctx, stand_in_torch):
    module = stand_in_torch.nn.Module()
    model = rf.nn.load(module, ctx, example_input=np.zeros((1, 4)))
    assert stand_in_torch.calls == ["torchscript"]
    x = np.random.default_rng(2).uniform(-1, 1, (4, 4))
    want = np.maximum(x @ np.full((4, 3), 0.5), 0) @ np.full((3, 2), -0.25)
    np.testing.assert_allclose(run_encrypted(ctx, model, x), want, atol=1e-4)


def test_without_the_legacy_exporter_dynamo_is_used_or_onnxscript_named(ctx, stand_in_torch, monkeypatch):
    stand_in_torch.legacy_works = False
    module = stand_in_torch.nn.Module()
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import fails like a missing package
    with pytest.raises(ValueError, match=r"TorchScript exporter was removed.*ringfire\[torch\]"):
        rf.nn.load(module, ctx, example_input=np.zeros((1, 4)))
    assert stand_in_torch.calls == ["torchscript"]  # dynamo refused before torch was asked
    monkeypatch.setitem(sys.modules, "onnxscript", types.ModuleType("onnxscript"))
    rf.nn.load(module, ctx, example_input=np.zeros((1, 4)))
    assert stand_in_torch.calls[-2:] == ["torchscript", "dynamo"]


def test_export_arguments_are_checked(ctx, stand_in_torch):
    module = stand_in_torch.nn.Module()
    with pytest.raises(ValueError, match="needs example_input"):
        rf.nn.load(module, ctx)
    with pytest.raises(ValueError, match="batch-first"):
        rf.nn.load(module, ctx, example_input=np.zeros(4))
    with pytest.raises(ValueError, match="exporter must be one of"):
        rf.nn.load(module, ctx, example_input=np.zeros((1, 4)), exporter="jit")
    module.training = True
    with pytest.raises(ValueError, match=r"module\.eval\(\)"):
        rf.nn.load(module, ctx, example_input=np.zeros((1, 4)))
    with pytest.raises(ValueError, match="example_input= is for torch modules"):
        rf.nn.load(mlp_onnx(), ctx, example_input=np.zeros((1, 4)))
