"""The trained ResNet-20 that the 32x32 benchmarks run (``tests/data/resnet20_digits32.onnx``,
made by ``benchmarks/train_resnet20.py``: the zoo's graph trained on the bundled digits,
upsampled to 3x32x32, as no CIFAR-10 ships here)."""

import pathlib

import numpy as np
import pytest

from ringfire.nn.graph import Graph
from ringfire.nn.layouts import layout_plan
from ringfire.nn.operators import OPERATORS

pytest.importorskip("onnx")
from nn_models import cifar_shaped, digits_split  # noqa: E402

ASSET = pathlib.Path(__file__).parent / "data" / "resnet20_digits32.onnx"


def test_trained_resnet20_classifies_the_held_out_digits():
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("sklearn")
    _, _, xte, yte = digits_split()
    session = ort.InferenceSession(ASSET.read_bytes(), providers=["CPUExecutionProvider"])
    logits = session.run(None, {"x": cifar_shaped(xte)})[0]
    assert np.mean(logits.argmax(1) == yte) >= 0.95


def test_trained_resnet20_plans_the_multiplexed_layout():
    g = Graph.from_onnx(str(ASSET))
    plan = layout_plan(g)
    diagonals = sum(len(plan.offsets(n, g)) for n in g.nodes if OPERATORS[n.op].kind == "linear")
    assert (plan.kind, plan.period, diagonals) == ("multiplexed", 16384, 14316)
