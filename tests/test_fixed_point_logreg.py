"""Seed 003's fixed-point logistic regression (ringfire.apps.fixed_point_logreg): the encrypted
weights equal NumPy's integer training bit for bit, the integer training's accuracy is float
training's within a point on the breast-cancer data, and every input a user can get wrong is
refused with its numbers."""

import warnings

import numpy as np
import pytest

from ringfire.apps import fixed_point_logreg as fxlr
from ringfire.apps import logreg

SEED = bytes(range(32))
pytestmark = pytest.mark.filterwarnings("ignore:.*the security check is disabled")


@pytest.fixture(scope="module")
def toy9():
    """The toy ring with N16_BOOT's nine user levels (NOT SECURE)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fxlr.toy_context(insecure_deterministic_seed=SEED)


def synthetic(n: int, d: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    labels = (features @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    return logreg.prepare(features, labels)


def test_encrypted_weights_equal_numpys_integer_training(toy9):
    X, y = synthetic(48, 5)                          # 8 features with the bias and padding: one ciphertext
    Xq, Y = fxlr.quantize(X, y)
    trainer = fxlr.FixedPointTrainer(toy9, Xq.shape[1], step_shift=6, weight_bits=11)
    sk, keys = trainer.keygen()
    report = fxlr.FitReport()
    W = trainer.fit(Xq, Y, 2, keys, report=report)
    history = []
    want = fxlr.train_plain(Xq, Y, 2, step_shift=6, history=history)
    got = trainer.decrypt_weights(W, sk)
    assert np.array_equal(got, want), (got, want)
    assert np.abs(history[0]).max() > 0 and not np.array_equal(history[0], want)   # both steps moved
    # The weights stay integers within the CKKS error, every row a copy of the first.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = toy9.decrypt(W, sk, insecure_exact=True).real
    assert np.abs(values - np.rint(values)).max() < 2.0**-16
    assert np.array_equal(np.rint(values).reshape(-1, 8)[:6], np.tile(want, (6, 1)))
    counts = report.counts
    assert (counts.compares, counts.rescales, counts.functional_bootstraps, counts.bootstraps) == (2, 3, 5, 1)
    assert counts.lookups == trainer.counts(trainer.encrypt_data(Xq, Y)).lookups > counts.functional_bootstraps
    assert len(report.seconds) == 2 and report.widths.inner <= fxlr.MAX_BITS


def test_integer_training_matches_float_training_on_the_breast_cancer_data():
    from sklearn.datasets import load_breast_cancer
    d = load_breast_cancer()
    X, y = logreg.prepare(d.data, d.target)
    Xq, Y = fxlr.quantize(X, y)
    y01 = (y > 0).astype(float)
    for iterations in (5, 20, 30):
        W = fxlr.train_plain(Xq, Y, iterations, step_shift=7, residual_shift=3)
        w = np.zeros(X.shape[1])
        for _ in range(iterations):        # float training, the same clipped sigmoid and step
            w = w + len(X) / 2**7 / len(X) * X.T @ (y01 - np.clip(0.5 + X @ w / 4, 0, 1))
        fixed, real = logreg.accuracy(W / 2**fxlr.FRAC_BITS, X, y), logreg.accuracy(w, X, y)
        assert abs(fixed - real) <= 0.01 and fixed > 0.93, (iterations, fixed, real)
        if iterations == 30:
            assert fixed > 0.975                      # 97.7 % (BENCHMARKS.md), as float training
        assert np.abs(W / 2**fxlr.FRAC_BITS - w).max() < 0.1


def test_the_arithmetic_is_seed_003s():
    z = np.array([-1000, -257, -256, -255, 0, 255, 256, 257, 1000])
    # 4 sigmoid(z / 2^7) with sigmoid(t) = clip(1/2 + t/4, 0, 1): 0 below -2, 4 above 2.
    assert np.array_equal(fxlr.sigmoid4(z), np.clip(256 + z, 0, 512))
    assert np.array_equal(fxlr.round_shift(np.array([-3, -2, -1, 0, 1, 2, 3]), 1), [-1, -1, 0, 0, 1, 1, 2])
    Xq, Y = fxlr.quantize(np.array([[0.5, -1.0], [1.0, 0.004]]), np.array([1, -1]))
    assert Xq.tolist() == [[64, -128], [128, 1]] and Y.tolist() == [128, 0]


def test_wrong_inputs_are_refused_with_their_numbers(toy9):
    with pytest.raises(ValueError, match=r"features must be finite and lie in \[-1, 1\]"):
        fxlr.quantize(np.array([[2.0, 0.0]]), np.array([1]))
    with pytest.raises(ValueError, match="features must be a power of two"):
        fxlr.FixedPointTrainer(toy9, 6)
    with pytest.raises(ValueError, match="weight_bits must be an integer in"):
        fxlr.FixedPointTrainer(toy9, 8, weight_bits=30)
    trainer = fxlr.FixedPointTrainer(toy9, 8, weight_bits=24)
    X, y = synthetic(16, 5)
    Xq, Y = fxlr.quantize(X, y)
    with pytest.raises(ValueError, match=r"the inner step reads \d+-bit integers; lookups read at most 24"):
        trainer.widths(Xq).check()
    trainer = fxlr.FixedPointTrainer(toy9, 8)
    with pytest.raises(ValueError, match="call trainer.keygen"):
        trainer.encrypt_data(Xq, Y)
    with pytest.raises(TypeError, match="X and Y must be integers"):
        trainer.encrypt_data(X, Y, keys=object())
    with pytest.raises(ValueError, match="labels be 0 or 2\\^7"):
        trainer.encrypt_data(Xq, Y + 1, keys=object())
    with pytest.raises(ValueError, match=r"expected X of shape \(n, 8\)"):
        trainer.encrypt_data(Xq[:, :4], Y, keys=object())
    with pytest.raises(ValueError, match="labels must be"):
        fxlr.quantize(X, np.where(y > 0, 2, 1))
    with pytest.raises(ValueError, match=r"residual_shift must be an integer in \[1, 9\]"):
        fxlr.FixedPointTrainer(toy9, 8, residual_shift=10)
    with pytest.raises(ValueError, match=r"step_shift must be an integer in \[1, 40\]"):
        fxlr.FixedPointTrainer(toy9, 8, residual_shift=9, step_shift=0)
    for bad in (-1, True, 2.0):
        with pytest.raises(ValueError, match="iterations must be an integer"):
            fxlr.train_plain(Xq, Y, bad)
    # A run whose weights would leave the range at any step is refused before anything is encrypted
    # (the data owner runs the same integer steps first).
    narrow = fxlr.FixedPointTrainer(toy9, 8, step_shift=1, weight_bits=6)
    with pytest.raises(ValueError, match=r"the weights reach \d+ at step \d+, outside the range \(-32, 32\)"):
        narrow.fit(Xq, Y, 40)
    # Weights outside the range the lookups were sized for are reported, not returned.
    sk, keys = toy9.keygen()
    with pytest.raises(ValueError, match=r"a weight reached 3000, outside the range \(-2048, 2048\)"):
        trainer.decrypt_weights(toy9.encrypt(np.full(toy9.slots, 3000.0), keys), sk)


def test_the_docs_example_runs_as_written(capsys):
    from pathlib import Path
    text = Path(__file__).resolve().parents[1].joinpath("docs", "logreg.md").read_text()
    section = text[text.index("## Seed 003's fixed-point training"):]
    code = section[section.index("```python") + len("```python"):section.index("```", section.index("```python") + 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "docs/logreg.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "True"
