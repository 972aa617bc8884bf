"""What the key holder gets in a client-aided round: each ciphertext at the lowest level whose
modulus still holds its values (it only decrypts them), so the round carries fewer limbs."""

import numpy as np

import nn_models as M
import ringfire as rf
from ringfire.nn.client import for_decryption
from ringfire.nn.nonlinear import Chain, chains_of


def test_a_ciphertext_drops_to_the_lowest_level_that_holds_its_values():
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    ev = ctx.evaluator(keys)
    small = ctx.encrypt(np.full(8, 3.0), keys, level=2)
    low = for_decryption(ev, small)
    assert low.level == 0 and low.scale == small.scale
    np.testing.assert_allclose(ctx.decrypt(low, sk)[:8], 3.0, atol=1e-6)
    # Level 0 holds |x| <= 512 at this scale; the headroom keeps half of it: 400 stays at level 1.
    big = ctx.encrypt(np.full(8, 400.0), keys, level=2)
    assert round(ctx.max_value(0)) == 512 and for_decryption(ev, big).level == 1
    np.testing.assert_allclose(ctx.decrypt(for_decryption(ev, big), sk)[:8], 400.0, atol=1e-5)
    # Values of unknown size (a loaded ciphertext carries no bound) stay where they are.
    assert for_decryption(ev, ctx.load(small.to_bytes())).level == 2


class Recording(rf.nn.LocalClient):
    def __init__(self, *args):
        super().__init__(*args)
        self.levels = []

    def apply(self, node, x, shape, clip):
        self.levels += [c.level for c in x.flat if isinstance(c, rf.ckks.Ciphertext)]
        return super().apply(node, x, shape, clip)


def test_the_mlp_round_arrives_at_level_0_and_the_result_still_agrees_with_onnxruntime():
    x_train, y_train, x_test, _ = M.digits_split()
    onnx = M.mlp_onnx(M.mlp_train(x_train, y_train))
    x = x_test[:16]
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx, ctx)
    sk, keys = ctx.keygen()
    client = Recording(ctx, sk, keys)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, sk), client=client), sk)
    assert client.levels and set(client.levels) == {0}  # computed at level 1, sent at level 0
    np.testing.assert_allclose(got, M.ort_run(onnx, x), atol=1e-4)


# ---- chains: client-aided layers with nothing in between go in one round ----------------------

def digits_cnn():
    x_train, y_train, x_test, _ = M.digits_split()
    onnx = M.cnn_onnx(M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max"), pool="max")
    return onnx, x_test[:16].reshape(-1, 1, 8, 8)


def test_a_relu_then_a_maxpool_is_one_round_and_agrees_with_onnxruntime():
    onnx, x = digits_cnn()
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx, ctx)
    assert {head: [n.op for n in c.nodes] for head, c in chains_of(model.graph, model.polys).items()} == \
        {"Relu_1": ["Relu", "MaxPool"]}
    sk, keys = ctx.keygen()
    client = rf.nn.LocalClient(ctx, sk, keys)
    got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, sk), client=client), sk)
    np.testing.assert_allclose(got, M.ort_run(onnx, x), atol=1e-4)
    # One round (it was two): the ReLU's 256 inputs decrypted, the MaxPool's 64 outputs encrypted.
    assert client.round_trips == 1 and client.ciphertexts_received == 256
    assert model.last_run["client_round_trips"] == model.plan().counts["client_round_trips"] == 256


def test_no_chain_where_a_layer_output_has_another_reader_or_masks_are_per_layer():
    onnx, x = digits_cnn()
    ctx = rf.ckks.Context.preset("N13_D2")
    masked = rf.nn.load(onnx, ctx, masking=True)
    assert masked._chains(masked.polys) == {}
    sk, keys = ctx.keygen()
    client = rf.nn.LocalClient(ctx, sk, keys)
    got = ctx.decrypt_batch(masked(ctx.encrypt_batch(x, sk), client=client), sk)
    np.testing.assert_allclose(got, M.ort_run(onnx, x), atol=1e-2)
    assert client.round_trips == 2
    # A ReLU whose output a sum reads too stays a round of its own; without the sum it chains.
    shared = rf.nn.load(M.make_model([M.node("Relu", ["x"], ["r"]), M.node("Sigmoid", ["r"], ["s"]),
                                      M.node("Add", ["r", "s"], ["y"])], (4,)), ctx)
    assert chains_of(shared.graph, shared.polys) == {}
    alone = rf.nn.load(M.make_model([M.node("Relu", ["x"], ["r"]), M.node("Sigmoid", ["r"], ["y"])], (4,)), ctx)
    assert [n.op for c in chains_of(alone.graph, alone.polys).values() for n in c.nodes] == ["Relu", "Sigmoid"]
    z = np.random.default_rng(1).uniform(-2, 2, (8, 4))
    got = ctx.decrypt_batch(alone(ctx.encrypt_batch(z, sk), client=client), sk)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-np.maximum(z, 0))), atol=1e-4)


def test_a_chain_crosses_the_wire_as_its_layers():
    from ringfire.serve import wire
    onnx, _ = digits_cnn()
    model = rf.nn.load(onnx, rf.ckks.Context.preset("N13_D2"))
    chain = chains_of(model.graph, model.polys)["Relu_1"]
    node, shape, clip = wire.node_from_json(wire.node_to_json(chain, (4, 8, 8), None))
    assert isinstance(node, Chain) and [n.op for n in node.nodes] == ["Relu", "MaxPool"]
    assert node.nodes[1].attrs["kernel_shape"] == tuple(chain.nodes[1].attrs["kernel_shape"])
    assert shape == (4, 8, 8) and clip is None and node.attrs is node.nodes[-1].attrs


# ---- the input at the level its first layers need ------------------------------------------------

def test_the_input_is_encrypted_at_the_level_before_the_first_key_holder():
    onnx, x = digits_cnn()
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx, ctx)
    assert ctx.max_level == 2 and model.input_level == 1  # the Conv spends one level, then the key holder
    sk, keys = ctx.keygen()
    enc = ctx.encrypt_batch(x, sk, level=model.input_level)
    assert {c.level for c in enc.cts.flat} == {1}
    got = ctx.decrypt_batch(model(enc, client=rf.nn.LocalClient(ctx, sk, keys)), sk)
    np.testing.assert_allclose(got, M.ort_run(onnx, x), atol=1e-4)
    # Where the input's depth is the model's own, the top.
    assert rf.nn.load(onnx, ctx, packing="inter").input_level == ctx.max_level


def test_the_plan_counts_the_input_where_the_run_encrypts_it():
    onnx, _ = digits_cnn()
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx, ctx)
    low, top = model.plan(), model._plan(input_level=ctx.max_level)
    limb = 2 * ctx.poly_degree * 8
    # The input's 64 ciphertexts and the Conv's 256 results each hold one limb fewer.
    assert top.activation_bytes - low.activation_bytes >= (64 + 256) * limb
    assert any("input counted at level 1 of 2" in note for note in low.notes)
    # The memory guard plans an input where it is: one encrypted at the top needs more.
    assert model._bytes_to_allocate("batch", 2) - model._bytes_to_allocate("batch", 1) >= 64 * limb


def test_an_input_too_large_for_its_planned_level_starts_higher():
    from ringfire.nn.client import encryption_level
    ctx = rf.ckks.Context.preset("N13_D2")  # level 0 holds |x| <= 512 at its scale
    assert encryption_level(ctx, 0, np.full(4, 3.0)) == 0
    assert encryption_level(ctx, 0, np.full(4, 300.0)) == 1  # beyond half of level 0's room
    assert encryption_level(ctx, 1, np.zeros((0, 4))) == 1
    assert encryption_level(ctx, 0, np.full(4, 1e300)) == ctx.max_level  # never above the top


class Serializing(rf.nn.LocalClient):
    """Measures each round by the ciphertexts' own serializations, both ways."""

    def __init__(self, *args):
        super().__init__(*args)
        self.serialized = {"received": [], "sent": []}

    def _decrypt(self, ct):
        self.serialized["received"].append(len(ct.to_bytes()))
        return super()._decrypt(ct)

    def _encrypt(self, values, level=None):
        ct = super()._encrypt(values, level)
        self.serialized["sent"].append(len(ct.to_bytes()))
        return ct


def test_the_key_holder_counts_the_bytes_of_its_rounds_each_way_as_serialization_measures_them():
    onnx, x = digits_cnn()
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    client = Serializing(ctx, sk, keys)
    rf.nn.load(onnx, ctx)(ctx.encrypt_batch(x, sk), client=client)
    received, sent = client.serialized["received"], client.serialized["sent"]
    assert len(received) == client.ciphertexts_received == 256 and len(sent) == 64
    # The same bytes less each ciphertext's header (ciphertexts sent at level 0: two polynomials
    # of N residues in q_0's bits).
    assert 0 <= sum(received) - client.bytes_received <= 128 * len(received)
    assert 0 <= sum(sent) - client.bytes_sent <= 128 * len(sent)
    q0_bits = (ctx.params.q_primes[0] - 1).bit_length()
    assert q0_bits == 50 and client.bytes_received == 256 * 2 * ctx.poly_degree * q0_bits // 8
    assert client.bytes_sent < sum(received) / 2  # seeded answers: half a ciphertext each
