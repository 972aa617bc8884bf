"""Client-aided layers return their results at the level the layers after them spend, not
at the top: fewer limbs to store and to compute with. Checked on a context deeper than the
model needs: the levels the key holder encrypts at, the planner's memory, the results
against onnxruntime, residual sums of results at different levels, masking's extra level,
and a level request the key holder refuses."""

import numpy as np
import pytest

import ringfire as rf

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from nn_models import make_model, node, ort_run  # noqa: E402
from ringfire.nn.costs import limb_profile  # noqa: E402

BATCH = 5


@pytest.fixture(scope="module")
def deep():
    """Five levels for models that spend one or two between key holders."""
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[50, 30, 30, 30, 30, 30], scale_bits=30,
                          special_bits=[50])
    sk, keys = ctx.keygen()
    return ctx, sk, keys


class RecordingClient(rf.nn.LocalClient):
    """The key holder, noting the level of what it sends back per layer."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.levels = {}

    def apply(self, node, x, shape, clip):
        out, out_shape = super().apply(node, x, shape, clip)
        self.levels[node.name] = {c.level for c in out.flat if c is not None and not isinstance(c, float)}
        return out, out_shape


def gemm(r, name, src, dst, width, out):
    return node("Gemm", [src, f"{name}W", f"{name}B"], dst), {f"{name}W": r.normal(0, 0.5, (width, out)),
                                                               f"{name}B": r.normal(0, 0.1, out)}


def mlp_with_residual():
    """x -> Gemm -> Relu (r) -> Gemm -> Gemm -> Relu (s) -> Gemm (h); h + r -> Gemm -> y.
    r needs two levels (the two Gemms before s), one of which is left when it meets h in the
    sum; s needs two (its Gemm, then the last one after the sum)."""
    r = np.random.default_rng(5)
    nodes, inits = [], {}
    for args in (("a", "x", "p", 6, 4), ("b", "r", "q0", 4, 4), ("b2", "q0", "q", 4, 4), ("c", "s", "h", 4, 4),
                 ("d", "t", "y", 4, 3)):
        n, i = gemm(r, *args)
        nodes.append(n)
        inits.update(i)
    nodes.insert(1, node("Relu", ["p"], "r"))
    nodes.insert(4, node("Relu", ["q"], "s"))
    nodes.insert(6, node("Add", ["h", "r"], "t"))
    return make_model(nodes, (6,), inits)


def run(ctx, sk, keys, data, **options):
    model = rf.nn.load(data, ctx, **options)
    x = np.random.default_rng(1).uniform(-1, 1, (BATCH, 6))
    client = RecordingClient(ctx, sk, keys)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, keys), client=client), sk)
    assert np.max(np.abs(got - ort_run(data, x))) < 1e-3
    return model, client


def test_results_come_back_at_the_levels_the_next_layers_spend(deep):
    ctx, sk, keys = deep
    model, client = run(*deep, mlp_with_residual())
    relus = [n.name for n in model.graph.nodes if n.op == "Relu"]
    assert {name: client.levels[name] for name in relus} == {relus[0]: {2}, relus[1]: {2}}
    assert model.plan().levels_needed == 2 and ctx.max_level == 5
    assert model.last_run["client_round_trips"] == 8  # 4 + 4 activations, one ciphertext each


def test_the_plan_counts_memory_at_the_lowered_levels(deep):
    ctx = deep[0]
    data = make_model([node("Relu", ["x"], "r"), node("Gemm", ["r", "W", "B"], "y")], (6,),
                      {"W": np.ones((6, 2)), "B": np.zeros(2)})
    model = rf.nn.load(data, ctx)
    plan = model.plan()
    per_limb = 2 * ctx.poly_degree * 8
    # the input at the top (6 x 6 limbs), the ReLU's result at level 1 (6 x 2), the output at 0 (2 x 1)
    assert plan.activation_bytes == (6 * 6 + 6 * 2 + 2 * 1) * per_limb
    assert model.graph.nodes[0].attrs["_fresh_level"] == 1
    # the cost model's limb-weighted work reads the same levels: 12 terms on 2 limbs, not 6
    assert limb_profile(model)["term_limbs"] == 12 * 2


def test_a_scale_mask_adds_the_level_its_removal_spends(deep):
    data = make_model([node("Relu", ["x"], "r"), node("Gemm", ["r", "W", "B"], "y")], (6,),
                      {"W": np.random.default_rng(2).normal(0, 0.5, (6, 3)), "B": np.zeros(3)})
    model, client = run(*deep, data, masking=True)
    assert client.levels[model.graph.nodes[0].name] == {2}  # unmask, then the Gemm


def test_a_layer_feeding_only_the_output_returns_at_level_zero(deep):
    data = make_model([node("Gemm", ["x", "W", "B"], "h"), node("Sigmoid", ["h"], "y")], (6,),
                      {"W": np.random.default_rng(3).normal(0, 0.5, (6, 3)), "B": np.zeros(3)})
    model, client = run(*deep, data)
    assert client.levels[model.graph.nodes[1].name] == {0}


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_the_key_holder_refuses_a_level_that_is_not_a_small_integer(deep, bad):
    ctx, sk, keys = deep
    relu = rf.nn.graph.Node("Relu", "r", ["x"], ["y"], {"_fresh_level": bad})
    x = np.array([ctx.encrypt(np.ones(2), sk)], dtype=object)
    with pytest.raises(ValueError, match="asks for its result at level"):
        rf.nn.LocalClient(ctx, sk, keys).apply(relu, x, (1,), None)
