"""Property tests: random expression trees over encrypted vectors, plaintext
vectors and integers, evaluated with the BGV and BFV operators and with
NumPy integer arithmetic mod t; every slot must agree exactly."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ringfire as rf

ROTATIONS = (1, -2, 3)


def _context(scheme):
    # N = 2^13 with a 17-bit t and a chain deep enough for two products.
    ctx = scheme.Context(poly_degree=2**13, plain_bits=17, coeff_bits=[60, 45, 45], special_bits=[60])
    sk, keys = ctx.keygen(rotations=ROTATIONS, swap_rows=True)
    rng = np.random.default_rng(3)
    leaves = [rng.integers(0, ctx.plain_modulus, ctx.slots) for _ in range(3)]
    cts = [ctx.encrypt(v, keys) for v in leaves]
    return ctx, sk, leaves, cts


CONTEXTS = {}


def context(scheme):
    if scheme not in CONTEXTS:
        CONTEXTS[scheme] = _context(scheme)
    return CONTEXTS[scheme]


def trees(depth):
    """Expressions as nested tuples; at most ``depth`` ciphertext products on any path."""
    leaf = st.one_of(st.tuples(st.just("ct"), st.integers(0, 2)),
                     st.tuples(st.just("int"), st.integers(-(2**40), 2**40)),
                     st.tuples(st.just("vec"), st.integers(0, 2)))
    if depth == 0:
        return st.one_of(leaf,
                         st.tuples(st.sampled_from(["add", "sub"]), leaf, leaf),
                         st.tuples(st.just("mulc"), leaf, st.tuples(st.just("int"), st.integers(-99, 99))))
    sub = trees(depth - 1)
    return st.one_of(sub,
                     st.tuples(st.sampled_from(["add", "sub", "mul"]), sub, sub),
                     st.tuples(st.just("neg"), sub),
                     st.tuples(st.just("rot"), sub, st.sampled_from(ROTATIONS)),
                     st.tuples(st.just("swap"), sub))


def evaluate(node, ctx, leaves, cts, encrypted):
    """(value, is_encrypted): ciphertexts when ``encrypted``, else object arrays mod t."""
    t = ctx.plain_modulus
    kind = node[0]
    if kind == "ct":
        return (cts[node[1]] if encrypted else leaves[node[1]].astype(object)), True
    if kind == "int":
        return node[1], False
    if kind == "vec":
        return leaves[node[1]][::-1].copy(), False  # a plaintext NumPy vector
    if kind in ("neg", "rot", "swap"):
        v, enc = evaluate(node[1], ctx, leaves, cts, encrypted)
        if kind == "neg":
            return -v, enc
        if not enc:  # rotating a plain value: a vector of residues, rotated in the clear
            v = (np.full(ctx.slots, v, dtype=object) if np.ndim(v) == 0 else np.asarray(v, dtype=object)) % t
        if encrypted and enc:
            return (v.rotate_rows(node[2]) if kind == "rot" else v.swap_rows()), True
        rows = np.asarray(v, dtype=object).reshape(2, -1)
        out = np.roll(rows, -node[2], axis=1) if kind == "rot" else rows[::-1]
        return out.ravel(), enc
    a, ea = evaluate(node[1], ctx, leaves, cts, encrypted)
    b, eb = evaluate(node[2], ctx, leaves, cts, encrypted)
    if kind == "mulc":
        kind = "mul"
    if encrypted and not (ea or eb):  # both plain: compute in the clear, as the user's NumPy code would
        a, b = (np.asarray(x, dtype=object) % t if np.ndim(x) else x % t for x in (a, b))
    if kind == "add":
        out = a + b
    elif kind == "sub":
        out = a - b
    else:
        out = a * b
    if not (encrypted and (ea or eb)):
        out = np.asarray(out, dtype=object) % t if np.ndim(out) else out % t
    return out, ea or eb


@pytest.mark.parametrize("scheme", [rf.bgv, rf.bfv], ids=["bgv", "bfv"])
@given(tree=trees(2))
def test_random_expressions_are_exact(scheme, tree):
    ctx, sk, leaves, cts = context(scheme)
    tree = ("add", tree, ("ct", 2))  # something encrypted at the root, whatever the tree
    got, _ = evaluate(tree, ctx, leaves, cts, True)
    want, _ = evaluate(tree, ctx, leaves, cts, False)
    t = ctx.plain_modulus
    want = np.broadcast_to(np.asarray(want, dtype=object) % t, (ctx.slots,))
    assert np.array_equal(ctx.decrypt(got, sk, signed=False), want.astype(np.int64)), tree
