"""Slot layouts under inter-axis packing: strided layers keep their output on the input's
grid with channels multiplexed into the gaps, so their maps stay translation-invariant
(few nonzero diagonals); the results match onnxruntime in every layout."""

import numpy as np
import pytest

import ringfire as rf
from ringfire.nn.graph import Graph
from ringfire.nn import zoo
from ringfire.nn.layouts import _assign, _plan, compact, layout_plan, spatial

onnx = pytest.importorskip("onnx")
from nn_models import make_model, node, ort_run  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    return rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])


def test_multiplexed_layout_places_channels_in_the_gaps():
    # Gap 2 on a 4 x 4 grid: channels 0..3 share the grid's 2 x 2 cells, channel 4 starts block 1.
    layout = spatial((5, 2, 2), 2, 4, 4)
    grid = np.full(32, -1)
    grid[layout.slots] = np.arange(20) // 4  # the channel of each occupied slot
    assert grid[:16].reshape(4, 4).tolist() == [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]
    assert grid[16:].reshape(4, 4).tolist() == [[4, -1, 4, -1], [-1] * 4, [4, -1, 4, -1], [-1] * 4]
    assert np.array_equal(spatial((3, 4, 5), 1, 4, 5).slots, compact((3, 4, 5)).slots)  # gap 1 is C-order


def test_every_layout_of_resnet20_is_one_to_one_and_fits_the_period():
    g = Graph.from_onnx(zoo.resnet20(resolution=16, classes=10, seed=0)[0].SerializeToString())
    plan = layout_plan(g)
    assert plan.kind == "multiplexed"
    for name, layout in plan.layouts.items():
        assert len(np.unique(layout.slots)) == layout.slots.size, name
        assert layout.slots.min() >= 0 and layout.span <= plan.period, name
    # The strided convolutions stop being dense: 16 channels at 16 x 16 to 32 at 8 x 8 is a
    # 4096 x 8192 map, whose compact layouts give it every diagonal of the 4096-slot period.
    strided = next(n for n in g.nodes if n.op == "Conv" and tuple(n.attrs.get("strides", (1, 1))) == (2, 2))
    compact_plan = _plan("compact", _assign(g, multiplexed=False))
    assert len(compact_plan.offsets(strided, g)) == plan.period == 4096
    assert len(plan.offsets(strided, g)) == 256
    total = sum(len(plan.offsets(n, g)) for n in g.nodes if n.op in ("Conv", "GlobalAveragePool", "Gemm"))
    assert total < 0.6 * sum(len(compact_plan.offsets(n, g)) for n in g.nodes
                             if n.op in ("Conv", "GlobalAveragePool", "Gemm"))


def _matches_onnxruntime(ctx, nodes, in_shape, inits, rng, layout):
    """Runs the model encrypted (two samples, client-aided ReLU) in the layout expected, against
    onnxruntime, with exactly the Galois keys its transforms use."""
    data = make_model(nodes, in_shape, inits)
    x = rng.uniform(-1, 1, (2,) + tuple(in_shape))
    model = rf.nn.load(data, ctx, packing="inter")
    sk, keys = ctx.keygen(rotations=model.rotations())
    plan = model.plan()
    out = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys)),
                            sk)
    assert plan.counts["galois_keys"] == len(keys.galois)  # the keys the run's transforms use, no more
    assert model.last_run["layout"] == layout
    ref = ort_run(data, x)
    assert out.shape == ref.shape
    assert np.max(np.abs(out - ref)) < 1e-4


def test_strided_network_in_multiplexed_layout_matches_onnxruntime(ctx):
    """A downsampling block (3x3 stride 2 and a 1x1 stride-2 projection shortcut), a per-channel
    constant, a second stride-2 stage and a head that ends on a (C, H, W) tensor."""
    rng = np.random.default_rng(5)
    inits = {"W1": rng.normal(0, 0.3, (4, 2, 3, 3)), "W2": rng.normal(0, 0.3, (8, 4, 3, 3)),
             "W3": rng.normal(0, 0.3, (8, 8, 3, 3)), "WS": rng.normal(0, 0.3, (8, 4, 1, 1)),
             "C": rng.normal(0, 0.2, (8, 1, 1)), "W4": rng.normal(0, 0.3, (8, 8, 3, 3))}
    nodes = [node("Conv", ["x", "W1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "W2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c2"], ["r2"]),
             node("Conv", ["r2", "W3"], ["c3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Conv", ["r1", "WS"], ["s"], kernel_shape=[1, 1], strides=[2, 2]),
             node("Add", ["c3", "s"], ["a"]), node("Add", ["a", "C"], ["b"]), node("Relu", ["b"], ["r3"]),
             node("Conv", ["r3", "W4"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])]
    _matches_onnxruntime(ctx, nodes, (2, 8, 8), inits, rng, "multiplexed")


def test_a_residual_sum_of_two_layouts_runs_compact(ctx):
    """A stride-2 convolution (gap 2) added to a valid 5x5 one of the same shape (gap 1): the
    multiplexed layouts disagree at the sum, so the graph runs compact, still right."""
    rng = np.random.default_rng(6)
    inits = {"W1": rng.normal(0, 0.3, (4, 2, 3, 3)), "W2": rng.normal(0, 0.3, (4, 2, 5, 5))}
    nodes = [node("Conv", ["x", "W1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Conv", ["x", "W2"], ["c2"], kernel_shape=[5, 5]), node("Add", ["c1", "c2"], ["y"])]
    _matches_onnxruntime(ctx, nodes, (2, 8, 8), inits, rng, "compact")


def test_a_period_wider_than_the_slots_is_refused_before_running(ctx):
    rng = np.random.default_rng(7)
    data = make_model([node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], (2, 8, 8),
                      {"W": rng.normal(0, 0.3, (80, 2, 3, 3))})  # 80 x 8 x 8 = 5120 values, period 8192
    model = rf.nn.load(data, ctx, packing="inter")
    assert model.plan().counts["period"] == 8192
    sk, keys = ctx.keygen()
    enc = ctx.encrypt_batch(rng.uniform(-1, 1, (1, 2, 8, 8)), keys, packing="inter")
    with pytest.raises(ValueError, match=r"period 8192 \(compact layout\), more than the context's 4096 slots: "
                                         r"use poly_degree >= 16384"):
        model(enc)


def test_non_square_images_pooling_biases_and_a_dense_head_in_multiplexed_layout(ctx):
    """An 8x12 image through a biased stride-2 convolution, a stride-2 AveragePool, a constant with a
    batch axis (1, C, 1, 1), GlobalAveragePool, Flatten and Gemm, against onnxruntime."""
    rng = np.random.default_rng(8)
    inits = {"W1": rng.normal(0, 0.3, (4, 2, 3, 3)), "B1": rng.normal(0, 0.2, 4),
             "C": rng.normal(0, 0.2, (1, 4, 1, 1)), "W2": rng.normal(0, 0.4, (3, 4)), "B2": rng.normal(0, 0.1, 3)}
    nodes = [node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c1"], ["r1"]),
             node("AveragePool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Add", ["p", "C"], ["a"]), node("Relu", ["a"], ["r2"]), node("GlobalAveragePool", ["r2"], ["g"]),
             node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "W2", "B2"], ["y"], transB=1)]
    g = Graph.from_onnx(make_model(nodes, (2, 8, 12), inits))
    assert layout_plan(g).layouts["p"].grid == (4, 8, 12)  # two strides: gap 4 on the input's 8 x 12 grid
    _matches_onnxruntime(ctx, nodes, (2, 8, 12), inits, rng, "multiplexed")


def test_inputs_inter_packing_cannot_take_are_refused_plainly(ctx):
    rng = np.random.default_rng(9)
    inits = {"W": rng.normal(0, 0.3, (4, 2, 3, 3)), "one": np.array(1.0)}
    # A constant as the first operand: batch packing runs it; inter packing names the node.
    data = make_model([node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
                       node("Sub", ["one", "c"], ["y"])], (2, 8, 8), inits)
    assert rf.nn.load(data, ctx).rotations() == []  # batch packing needs no Galois keys
    with pytest.raises(rf.nn.UnsupportedOperator, match="needs a tensor as the first operand of 'Sub' at node"):
        rf.nn.load(data, ctx, packing="inter").rotations()
    # A model's output in its own layout is not another model's C-order input.
    conv = make_model([node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])],
                      (2, 8, 8), inits)
    first = rf.nn.load(conv, ctx, packing="inter")
    sk, keys = ctx.keygen(rotations=first.rotations())
    out = first(ctx.encrypt_batch(rng.uniform(-1, 1, (1, 2, 8, 8)), keys, packing="inter"))
    assert not np.array_equal(out.element_slots, np.arange(out.element_slots.size))  # multiplexed: gap 2
    relu = make_model([node("Relu", ["x"], ["y"])], (4, 4, 4))
    with pytest.raises(ValueError, match="elements are not in C-order"):
        rf.nn.load(relu, ctx, packing="inter")(out, client=rf.nn.LocalClient(ctx, sk, keys))


def test_a_broadcast_gate_runs_in_inter_packing(ctx):
    """A squeeze-excitation gate (C, 1, 1) times its feature map (C, H, W), as MobileNetV3 has,
    written gate-first: inter packing swaps the operands and moves the gate onto the map's
    layout, repeated over each channel's slots (it was refused by name; before that it failed
    deep in the layout pass with an IndexError); batch packing runs it too."""
    rng = np.random.default_rng(10)
    inits = {"W": rng.normal(0, 0.3, (4, 2, 3, 3))}
    data = make_model([node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                       node("GlobalAveragePool", ["c"], ["g"]), node("Sigmoid", ["g"], ["s"]),
                       node("Mul", ["s", "c"], ["y"])], (2, 4, 4), inits)
    # The conv, the gate's move and the product, counted one after the other (the move runs on
    # the gate's fresh branch, so 2 would do: the plan errs high).
    assert rf.nn.load(data, ctx, packing="inter").plan().levels_needed == 3
    assert rf.nn.load(data, ctx).plan().fits
    # Both operands broadcast: no layout of either holds the result.
    both = make_model([node("ReduceMean", ["x"], ["rows"], axes=[2], keepdims=1),
                       node("ReduceMean", ["x"], ["cols"], axes=[3], keepdims=1), node("Mul", ["rows", "cols"], ["y"])],
                      (2, 4, 4), {}, opset=13)
    with pytest.raises(rf.nn.UnsupportedOperator, match=r"'Mul' at node .* broadcasts its operand of 8 elements "
                                                        r"to shape \(2, 4, 4\); use packing='batch'"):
        rf.nn.load(both, ctx, packing="inter").rotations()


def _pooled_cnn(stride: int, rng):
    """Conv (stride 1 or 2) -> ReLU -> MaxPool 2x2 -> Conv -> ReLU -> dense head."""
    inits = {"W1": rng.normal(0, 0.4, (4, 2, 3, 3)), "B1": rng.normal(0, 0.1, 4),
             "W2": rng.normal(0, 0.3, (3, 4, 3, 3)), "B2": rng.normal(0, 0.1, 3)}
    side = 8 // stride // 2
    inits.update(W3=rng.normal(0, 0.3, (3 * side * side, 5)), B3=rng.normal(0, 0.1, 5))
    nodes = [node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[stride] * 2),
             node("Relu", ["c1"], ["a1"]), node("MaxPool", ["a1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p1", "W2", "B2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Relu", ["c2"], ["a2"]), node("Flatten", ["a2"], ["f"]), node("Gemm", ["f", "W3", "B3"], ["y"])]
    return make_model(nodes, (2, 8, 8), inits, out_shape=(5,))


@pytest.mark.parametrize("stride", [1, 2])
def test_a_client_aided_maxpool_runs_under_inter_packing(stride):
    """The key holder reads the pooled tensor from its input's layout (compact, or multiplexed
    after a strided convolution), pools and writes the result compact and tiled; within 1e-5 of
    onnxruntime, the layouts travelling as the round's JSON would."""
    from ringfire.nn.client import relaid
    from ringfire.serve import wire

    rng = np.random.default_rng(11 + stride)
    data = _pooled_cnn(stride, rng)
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40], scale_bits=40, special_bits=[60])
    model = rf.nn.load(data, ctx, packing="inter")
    assert model.plan().levels_needed == 1  # the key holder answers fresh: each convolution costs one level
    x = rng.uniform(-1, 1, (2, 2, 8, 8))
    sk, keys = ctx.keygen(rotations=model.rotations())
    out = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys, packing="inter"), client=rf.nn.LocalClient(ctx, sk, keys)),
                            sk)
    assert np.max(np.abs(out - ort_run(data, x))) < 1e-5
    pool = next(n for n in model.graph.nodes if n.op == "MaxPool")
    layouts = pool.attrs["_layouts"]
    # A (C, H, W) tensor travels as its shape and grid; after a strided convolution the
    # multiplexed layout puts channels in the gaps (gap 2).
    assert layouts["in"]["grid"][0] == (2 if model.last_run["layout"] == "multiplexed" else 1)
    assert model.last_run["layout"] == ("multiplexed" if stride == 2 else "compact")
    sent, _, _ = wire.node_from_json(wire.node_to_json(pool, (1,), None))
    values = rng.uniform(-1, 1, ctx.slots)
    assert np.array_equal(relaid(sent, values, sent.attrs["_layouts"]), relaid(pool, values, layouts))


def test_layouts_a_server_sends_are_checked_before_anything_is_allocated():
    from ringfire.nn.client import relaid
    from ringfire.nn.graph import Node

    pool = Node("MaxPool", "p", [], [], {"kernel_shape": (2, 2), "strides": (2, 2)})
    ok = {"in": {"shape": [1, 4, 4], "grid": None}, "out": {"shape": [1, 2, 2], "grid": None}, "period": 16}
    assert relaid(pool, np.arange(32.0), ok).tolist() == [5, 7, 13, 15] + [0] * 12 + [5, 7, 13, 15] + [0] * 12
    huge = dict(ok, **{"in": {"shape": [10**9, 10**9], "grid": None}})
    with pytest.raises(ValueError, match="input layout .* does not fit a period of 16"):
        relaid(pool, np.zeros(32), huge)
    with pytest.raises(ValueError, match="period 5 .* does not divide 32 slots"):
        relaid(pool, np.zeros(32), dict(ok, period=5))
    with pytest.raises(ValueError, match="reach beyond a period"):
        relaid(pool, np.zeros(32), dict(ok, **{"in": {"shape": [1, 2, 2], "grid": [4, 4, 4]}}))


def test_a_maxpool_with_masking_is_refused_under_inter_packing():
    rng = np.random.default_rng(13)
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40], scale_bits=40, special_bits=[60])
    model = rf.nn.load(_pooled_cnn(1, rng), ctx, packing="inter", masking=True)
    with pytest.raises(rf.nn.UnsupportedOperator, match="'MaxPool' at .* moves elements.*masking=False"):
        model.plan()  # before any key or ciphertext is made
