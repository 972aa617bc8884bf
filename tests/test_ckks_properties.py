"""Property tests: random expressions over encrypted vectors track the same
expressions over NumPy arrays (homomorphism up to CKKS noise)."""

import numpy as np
from conftest import precision_bits
from hypothesis import given, settings
from hypothesis import strategies as st

OPS = st.sampled_from(["add", "sub", "mul", "scalar", "int", "rotate", "neg", "add_const"])


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(OPS, min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1),
       scalar=st.floats(-2, 2, allow_nan=False), integer=st.integers(-5, 5), step=st.sampled_from([1, 2, -1, 3]))
def test_random_expressions_match_numpy(ckks_small, ops, seed, scalar, integer, step):
    ctx, sk, keys = ckks_small
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    ct, other = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    ref, other_ref = x.copy(), y.copy()
    for op in ops:
        if op in ("mul", "scalar") and ct.level == 0:
            continue  # out of levels: covered by test_ckks_ops
        if op == "add":
            ct, ref = ct + other, ref + other_ref
        elif op == "sub":
            ct, ref = ct - other, ref - other_ref
        elif op == "mul":
            ct, ref = ct * other, ref * other_ref
        elif op == "scalar":
            ct, ref = ct * scalar, ref * scalar
        elif op == "int":
            ct, ref = ct * integer, ref * integer
        elif op == "rotate":
            ct, ref = ct.rotate(step), np.roll(ref, -step)
        elif op == "neg":
            ct, ref = -ct, -ref
        else:
            ct, ref = ct + scalar, ref + scalar
        if np.max(np.abs(ref)) > 1e4:
            break
    magnitude = max(1.0, float(np.max(np.abs(ref))))
    assert precision_bits(ctx.decrypt(ct, sk) / magnitude, ref / magnitude) > 12
