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
    with pytest.raises(ValueError, match="example_input= and batch_axis= are for torch modules"):
        rf.nn.load(mlp_onnx(), ctx, example_input=np.zeros((1, 4)))


# --- exported models beyond the basics (need torch) ----------------------------

def tiny_resnet(torch):
    """The paper ResNet's block: BatchNorm, option-A shortcut (strided slice + zero
    channel padding), and x.mean([2, 3]) before the classifier."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.pad = (cout - cin) // 2
            self.stride = stride

        def forward(self, x):
            y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
            short = x if self.stride == 1 else F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))
            return F.relu(y + short)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.bn = nn.Conv2d(1, 2, 3, 1, 1, bias=False), nn.BatchNorm2d(2)
            self.block1, self.block2 = Block(2, 2, 1), Block(2, 4, 2)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            x = F.relu(self.bn(self.stem(x)))
            return self.fc(self.block2(self.block1(x)).mean([2, 3]))

    torch.manual_seed(3)
    net = Net()
    with torch.no_grad():  # non-trivial running statistics
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return net.eval()


def activations_net(torch):
    nn = torch.nn
    torch.manual_seed(4)
    return nn.Sequential(nn.Conv1d(2, 3, 3, stride=2, padding=1), nn.GELU(), nn.Flatten(), nn.Linear(12, 6),
                         nn.BatchNorm1d(6), nn.SiLU(), nn.LayerNorm(6), nn.Linear(6, 4), nn.Tanh(),
                         nn.Softmax(dim=-1)).eval()


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize("build,shape", [(tiny_resnet, (1, 6, 6)), (activations_net, (2, 8))])
def test_exported_models_match_torch(build, shape, exporter):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 60], scale_bits=40)
    module = build(torch)
    model = rf.nn.load(module, ctx, example_input=torch.zeros((1,) + shape), exporter=exporter)
    x = np.random.default_rng(5).uniform(-1, 1, (4,) + shape).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    assert model.plan().fits
    np.testing.assert_allclose(run_encrypted(ctx, model, x), want, atol=1e-4)
