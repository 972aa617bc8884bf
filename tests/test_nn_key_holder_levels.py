"""What the key holder gets in a client-aided round: each ciphertext at the lowest level whose
modulus still holds its values (it only decrypts them), so the round carries fewer limbs."""

import numpy as np

import nn_models as M
import ringfire as rf
from ringfire.nn.client import for_decryption


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
