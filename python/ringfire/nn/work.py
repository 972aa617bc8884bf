"""The per-ciphertext work of the encrypted runtimes, as module-level functions an executor
(:mod:`ringfire.parallel`) can run here or ship to other processes by name.

Each takes ``(ev, shared, item, const)``: the evaluator, the tensor(s) the items index (flat),
one item, and what every item of the call shares. Results are ciphertexts (or tuples of them).
"""

from __future__ import annotations

from ..parallel import key_set_cache


def linear_outputs(ev, inputs, group, delta):
    """Outputs of a linear layer that read the same inputs: for each, sum_k w_k x_{c_k} at
    the landing scale ``delta``, rescaled, plus the bias and the constants folded into it.
    ``group``: (the input columns, [(weights, constant) per output]); several outputs are
    summed in one pass over the inputs (``ev.linear_combinations``)."""
    cols, rows = group
    sums = ev.linear_combinations([inputs[c] for c in cols], [weights for weights, _ in rows], delta)
    out = []
    for acc, (_, constant) in zip(sums, rows):
        acc = ev.rescale(acc)
        out.append(ev.add_scalar(acc, constant) if constant != 0.0 else acc)
    return out


def polynomial(ev, inputs, index, poly):
    """A polynomial activation on one element."""
    return poly.evaluate_encrypted(inputs[index])


def product(ev, operands, index, _):
    """The element-wise product of two tensors at one element (either may be a constant)."""
    return operands[0][index] * operands[1][index]


def bootstrap(ev, inputs, item, _):
    """One bootstrap: a pair of elements as the real and imaginary parts of one circuit
    (``second`` not None), or a single element; ``bound`` is the circuit's input range."""
    first, second, bound = item
    if second is None:
        return (ev.bootstrap(inputs[first], bound=bound),)
    return ev.bootstrap_pair(inputs[first], inputs[second], bound=bound)


# Runners of inter-packed models, per process, by the token of the call that shipped them:
# their encoded diagonals are built once and reused by every sample a process runs.
_INTER_RUNNERS: dict = key_set_cache()


def inter_sample(ev, samples, index, spec):
    """One sample of an inter-packed batch (one ciphertext), through the whole model.
    ``spec``: (token, model, period, bounds)."""
    from .diagonal_cache import DiagonalCache
    from .inter import InterRunner
    token, model, period, bounds = spec
    runner = _INTER_RUNNERS.get(token)
    if runner is None:
        _INTER_RUNNERS.clear()  # one model at a time: the last call's caches go
        runner = _INTER_RUNNERS[token] = InterRunner(model.graph, model.ctx, model.polys, period,
                                                     DiagonalCache(model.diagonal_cache_bytes), bounds)
    return runner.run(samples[index])


# The first sample in a process builds its runner (and encodes the model's diagonals): the cost
# model (ringfire.distributed.costmodel) counts that once per worker.
inter_sample.per_worker_setup = True
