"""Measured per-operation costs of a CKKS context and a runtime model for
``Model.plan()`` (batch-axis packing, seed 001 scale study).

::

    costs = measure_costs(ctx)                    # a few seconds
    plan = model.plan()
    seconds = predict_seconds(plan, costs)        # or predict_breakdown(...) for the parts

Cost model (assumptions, all stated in docs/nn_scale.md):

* Every linear layer output is one ``linear_combination`` of k input
  ciphertexts (cost ``call + k * term``), one ``rescale`` and, when the bias
  is non-zero, one ``add_scalar`` -- exactly what ``EncryptedRuntime.linear``
  does. ``term`` and ``call`` come from a least-squares line through timings
  at several k; Python's per-term and per-output work (building the term
  lists, wrapping results) is measured on the same loop and included.
* Ciphertext-level costs scale linearly with the number of RNS limbs
  (level + 1); they are measured at the top level and divided by its limbs.
  A layer's input is either fresh from the client (top level) or one linear
  layer below it (MobileNetV2's projection -> Add -> expansion, ResNet's
  GAP -> Gemm), so by default the *average* limb count
  ``(top + 1 + top) / 2`` is used for linear work; pass ``limbs=`` to
  override, or use :func:`limb_profile` for the exact split of a model.
* A client-aided activation costs one decrypt (at one level below the top:
  the activation follows a rescaled linear layer) plus one encrypt (at the top)
  per input ciphertext, as ``LocalClient`` does it (in process, no network),
  plus the client's clear-text work (negligible, measured with it).
* ct x ct multiplications cost multiply + relinearize + rescale at the top level.
* Additions of branches (residual Add) cost one ciphertext addition per element.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .nonlinear import NONLINEAR_OPS as _CLIENT_AIDED


def _median_time(fn, repeats: int = 5, inner: int = 1) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times)


def measure_costs(ctx, keys=None, secret_key=None, ks=(1, 8, 32, 96), repeats: int = 5, seed: int = 0) -> dict:
    """Seconds per operation on ``ctx`` (median of ``repeats`` runs each).

    Returns a dict with per-limb costs (``*_per_limb``), the limb count they were
    measured at (``top_limbs``), the context shape, and the thread count."""
    from .. import _core

    if keys is None or secret_key is None:
        secret_key, keys = ctx.keygen()
    rng = np.random.default_rng(seed)
    ev = ctx.evaluator(keys)
    top = ctx.max_level
    limbs = top + 1
    slots = ctx.slots
    kmax = max(ks)
    cts = [ctx.encrypt(rng.uniform(-1, 1, slots), keys) for _ in range(kmax)]
    delta = ctx.landing_scale(top, cts[0].scale)

    # linear combination: the executor's inner loop (python term list + evaluator call + rescale + bias),
    # each call returning a Python Ciphertext as the executor's do
    flat = np.empty(kmax, dtype=object)
    flat[:] = cts
    weights_all = rng.normal(0, 0.1, kmax)

    def one_output(k):
        cols = np.arange(k)
        terms = [(flat[c], w) for c, w in zip(cols, weights_all[:k]) if flat[c] is not None]
        return ev.linear_combination([t[0] for t in terms], [float(t[1]) for t in terms], delta)

    lc_times = []
    for k in ks:
        inner = max(1, 64 // k)
        lc_times.append(_median_time(lambda: one_output(k), repeats, inner))
    slope, intercept = np.polyfit(np.asarray(ks, dtype=float), np.asarray(lc_times), 1)
    slope = max(float(slope), 1e-12)
    intercept = max(float(intercept), 0.0)

    acc = one_output(8)
    rescale = _median_time(lambda: ev.rescale(acc), repeats, 16)
    low = ev.rescale(acc)
    add_scalar = _median_time(lambda: ev.add_scalar(low, complex(0.25)), repeats, 16)
    add_ct = _median_time(lambda: cts[0] + cts[1], repeats, 16)

    if getattr(keys, "relin", None) is not None:
        mult = _median_time(lambda: ev.relinearize_rescale(ev.multiply(cts[0], cts[1])), repeats, 4)
    else:  # fall back to the Python operator (same path)
        mult = _median_time(lambda: cts[0] * cts[1], repeats, 4)

    # One-image-per-ciphertext packing: rotations (key switches) and diagonal products.
    if keys.galois is None or 1 not in keys.galois.rotations():
        rotation_keys = type(keys)(public=keys.public, relin=keys.relin,
                                   galois=ctx.galois_keys(secret_key, [1]))
    else:
        rotation_keys = keys
    rotate = _median_time(lambda: ctx.evaluator(rotation_keys).rotate(cts[0], 1), repeats, 4)
    values = rng.uniform(0, 1, slots)
    encode = _median_time(lambda: ctx.encode(values), repeats, 8)
    diagonal = ctx.encode(values)
    multiply_plain = _median_time(lambda: ev.multiply_plain(cts[0], diagonal), repeats, 16)
    bootstrap = None
    if getattr(keys, "bootstrap", None) is not None:  # one is enough: seconds each, and steady
        start = time.perf_counter()
        ev.bootstrap(cts[0])
        bootstrap = time.perf_counter() - start

    encrypt = _median_time(lambda: ctx.encrypt(values, keys), repeats, 8)
    decrypt = _median_time(lambda: ctx.decrypt(cts[0], secret_key), repeats, 8)
    clear_relu = _median_time(lambda: np.clip(values, 0.0, 6.0), repeats, 64)

    return {
        "poly_degree": ctx.poly_degree, "top_level": top, "top_limbs": limbs, "slots": slots,
        "threads": int(_core.num_threads()),
        "lc_term_per_limb": slope / limbs,             # one linear-combination term, per limb
        "lc_call_per_limb": intercept / limbs,         # fixed part of one linear_combination call
        "rescale_per_limb": rescale / limbs,
        "add_scalar_per_limb": add_scalar / limbs,
        "add_ct_per_limb": add_ct / limbs,
        "mult_relin_rescale_per_limb": mult / limbs,
        "rotate_per_limb": rotate / limbs,
        "multiply_plain_per_limb": multiply_plain / limbs,
        "encode_per_limb": encode / limbs,
        "bootstrap": bootstrap,                        # seconds of one (None: no bootstrapping keys)
        "encrypt_per_limb": encrypt / limbs,
        "decrypt_per_limb": decrypt / limbs,
        "client_clear": clear_relu,
        "raw": {"ks": list(ks), "lc_seconds": [float(t) for t in lc_times], "rescale": rescale, "mult": mult,
                "encrypt": encrypt, "decrypt": decrypt, "add_scalar": add_scalar, "add_ct": add_ct,
                "rotate": rotate, "multiply_plain": multiply_plain},
    }


def limb_profile(model) -> dict:
    """Exact limb-weighted work of a model (the planner's walk, client-aided results at the
    levels the run encrypts them at, recording the limb count of every linear layer's
    input): ``{"term_limbs", "output_limbs", "add_limbs"}``."""
    from .runtimes import PlanRuntime

    class _Profiler(PlanRuntime):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.term_limbs = 0
            self.output_limbs = 0
            self.add_limbs = 0

        def linear(self, x, in_shape, make_map, out_shape, node):
            before = self.counts["linear_terms"]
            out, shape = super().linear(x, in_shape, make_map, out_shape, node)
            self.term_limbs += (self.counts["linear_terms"] - before) * (x.level + 1)
            self.output_limbs += out.size * (x.level + 1)
            return out, shape

        def add(self, x, y, subtract=False):
            out = super().add(x, y, subtract)
            self.add_limbs += out.size * (out.level + 1)
            return out

    rt, _ = model._plan_runtime(model.polys, runtime=_Profiler)
    return {"term_limbs": rt.term_limbs, "output_limbs": rt.output_limbs, "add_limbs": rt.add_limbs}


def predict_breakdown(plan, costs: dict, limbs: float | None = None, profile: dict | None = None,
                      adds: int = 0) -> dict:
    """Seconds per part of an encrypted run; see the module docstring for the model.

    ``limbs``: limb count for linear work (default: mean of the top two levels).
    ``profile``: :func:`limb_profile` output, which replaces the average by exact sums.
    ``adds``: ciphertext additions (residual Adds) when known (not in ``plan.counts``)."""
    c = plan.counts
    top = costs["top_limbs"]
    avg = (top + (top - 1)) / 2.0 if limbs is None else float(limbs)
    if profile is not None:
        term_limbs, out_limbs, add_limbs = profile["term_limbs"], profile["output_limbs"], profile["add_limbs"]
    else:
        term_limbs, out_limbs, add_limbs = c["linear_terms"] * avg, c["rescales"] * avg, adds * avg
    per_out_limb = costs["lc_call_per_limb"] + costs["rescale_per_limb"] + costs["add_scalar_per_limb"]
    parts = {
        "linear_terms": term_limbs * costs["lc_term_per_limb"],
        "linear_outputs": out_limbs * per_out_limb,
        "adds": add_limbs * costs["add_ct_per_limb"],
        "ct_mults": c.get("ct_mults", 0) * costs["mult_relin_rescale_per_limb"] * top,
        "client": c.get("client_round_trips", 0) * (costs["decrypt_per_limb"] * (top - 1) +
                                                    costs["encrypt_per_limb"] * top + costs["client_clear"]),
    }
    parts["total"] = float(sum(parts.values()))
    return parts


def predict_seconds(plan, costs: dict, limbs: float | None = None, profile: dict | None = None,
                    adds: int = 0) -> float:
    """Predicted wall-clock seconds of ``model(enc, client=LocalClient(...))`` for a plan
    (independent of the batch size: the batch lives in the slots)."""
    return predict_breakdown(plan, costs, limbs, profile, adds)["total"]


def _bootstrap_seconds(costs: dict) -> float:
    if costs.get("bootstrap") is None:
        raise ValueError("[nn.costs] this model bootstraps: measure costs with keygen(bootstrap=True) keys "
                         "(measure_costs(ctx, keys, secret_key)) so they include one bootstrap")
    return costs["bootstrap"]


# A hoisted baby-step rotation shares the input's decomposition with the others: about half
# a full rotation (ckks/linear_transform.h). The diagonal products of a giant step run as one
# lazily reduced pass, about one multiply_plain per diagonal (the additions are free).
HOISTED_ROTATION = 0.5


def predict_inter_breakdown(model, costs: dict) -> dict:
    """Seconds per sample of ``model(enc)`` with ``packing='inter'`` once its diagonals are
    encoded (the first sample also encodes them), per part: the rotations and diagonal
    products of its BSGS transforms (:mod:`.inter_plan` counts them), the activations
    (polynomial products, or the key holder's decrypt and encrypt), and the bootstraps.
    Costs scale with the limbs of the level each step runs at. ``"encoding"``, the first
    sample's extra work, is not part of ``"total"``."""
    from .inter_plan import steps

    top = costs["top_limbs"]
    per_diagonal = costs["multiply_plain_per_limb"]
    parts = dict.fromkeys(("rotations", "diagonals", "activations", "bootstraps"), 0.0)
    encoded_limbs = 0
    for step in steps(model._inter_runner(), model.masking):
        limbs = step.level + 1
        if step.refreshed:
            parts["bootstraps"] += _bootstrap_seconds(costs)
        if step.diagonals:
            encoded_limbs += step.diagonals * limbs
            parts["rotations"] += ((HOISTED_ROTATION * step.baby_rotations + step.giant_rotations)
                                   * costs["rotate_per_limb"] * limbs)
            parts["diagonals"] += (step.diagonals * per_diagonal + step.transforms * costs["rescale_per_limb"]) * limbs
            # A product of two tensors: its products of ciphertexts, two levels below where it reads.
            parts["activations"] += step.products * costs["mult_relin_rescale_per_limb"] * max(1, limbs - 2)
        elif step.node.name in model.polys:
            parts["activations"] += (model.polys[step.node.name].multiplications
                                     * costs["mult_relin_rescale_per_limb"] * limbs)
        elif step.node.op in _CLIENT_AIDED:
            parts["activations"] += (costs["decrypt_per_limb"] * limbs + costs["encrypt_per_limb"] * top
                                     + costs["client_clear"])
    parts["total"] = float(sum(parts.values()))
    parts["encoding"] = float(encoded_limbs * costs["encode_per_limb"])
    return parts


def predict_batch_seconds(model, costs: dict) -> float:
    """Seconds of one batch-packed run (any batch up to the slots), bootstraps included."""
    plan = model._plan_batch()
    seconds = predict_seconds(plan, costs, profile=limb_profile(model))
    if model.bootstrap:
        seconds += plan.counts.get("bootstraps", 0) * _bootstrap_seconds(costs)
    return seconds
