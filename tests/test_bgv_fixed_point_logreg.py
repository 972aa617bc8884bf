"""Seed 003's fixed-point logistic regression on BGV slots (ringfire.apps.bgv_fixed_point_logreg)
on a small ring: the encrypted weights against NumPy's integer training (within the bootstraps'
read error) and float training's accuracy, the integer steps' roundings against exact
fractions, and every refusal by its message. The 128-bit run (N = 2^15, all 569 samples of
the breast-cancer set) is the benchmark's."""

from fractions import Fraction

import numpy as np
import pytest

from ringfire.apps import bgv_fixed_point_logreg as bgvlr
from ringfire.apps import fixed_point_logreg as fxlr
from ringfire.apps import logreg

pytestmark = pytest.mark.filterwarnings("ignore:.*insecure")


def separable(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, d))
    labels = (F @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0).astype(int)
    X, y = logreg.prepare(F, labels)
    return X, y, *fxlr.quantize(X, y)


@pytest.fixture(scope="module")
def trained(fhew_std128):
    X, y, Xq, Y = separable(96, 7)                     # 8 slots a sample with the bias: one ciphertext
    ctx = bgvlr.context(11, insecure_no_security_check=True, insecure_deterministic_seed=bytes(32))
    trainer = bgvlr.BgvFixedPointTrainer(ctx, len(Xq), Xq.shape[1], fhew=fhew_std128[0])
    sk, _ = trainer.keygen(fhew_secret_key=fhew_std128[1])              # the shared context keeps its keys
    report = bgvlr.FitReport()
    W = trainer.fit(Xq, Y, 3, report=report)
    return trainer, sk, W, report, X, y, Xq, Y


def test_encrypted_weights_follow_numpy_integers_and_train_as_float_does(trained):
    trainer, sk, W, report, X, y, Xq, Y = trained
    got = trainer.decrypt_weights(W, sk)
    want = bgvlr.train_plain(Xq, Y, 3, **trainer.arithmetic)
    assert np.abs(want).max() > 20                                        # it did learn
    assert np.abs(got - want).max() <= 2      # a fixed seed's reads: within 2 (other draws: up to 3, docs/logreg.md)
    k, s = trainer.arithmetic["gradient_shift"], trainer.arithmetic["step_shift"]
    w = np.zeros(X.shape[1])
    for _ in range(3):                                                    # float training at the same rate
        w += len(X) * 2.0 ** (bgvlr.FRAC_BITS - k - s) / len(X) * X.T @ ((y > 0) - 1 / (1 + np.exp(-X @ w)))
    # Weights of a few units: one unit moves several of 96 samples across the boundary (the
    # benchmark compares accuracy on the whole breast-cancer set); far from a guess, near float.
    assert logreg.accuracy(got / 2**bgvlr.FRAC_BITS, X, y) >= max(0.65, logreg.accuracy(w, X, y) - 0.1)
    assert report.bootstraps == 4 and len(report.seconds) == 3
    assert trainer.rows == 128 and trainer.arithmetic == {"gradient_shift": 7, "step_shift": 7, "sigmoid": "logistic"}


def test_integer_steps_round_as_exact_fractions():
    rng = np.random.default_rng(1)
    v = rng.integers(-32768, 32769, 2000)
    for shift in (1, 7, 9):
        exact = [int(Fraction(int(a), 2**shift).__abs__() + Fraction(1, 2)) * (1 if a >= 0 else -1) for a in v]
        assert bgvlr.rounded(v, shift).tolist() == exact
    z = np.arange(-2000, 2001)
    assert np.array_equal(bgvlr.sigmoid_table(z), np.rint(128 / (1 + np.exp(-z / 128))).astype(int))
    assert bgvlr.sigmoid_table([0, 10**4, -10**4]).tolist() == [64, 128, 0]
    # Seed 003's clip(1/2 + t/4, 0, 1), against exact fractions.
    want = [min(128, max(0, 64 + int(Fraction(abs(int(v)), 4) + Fraction(1, 2)) * (1 if v >= 0 else -1))) for v in z]
    assert bgvlr.sigmoid_table(z, "clipped").tolist() == want
    with pytest.raises(ValueError, match="sigmoid must be 'logistic' or 'clipped', got 'tanh'"):
        bgvlr.sigmoid_table(z, "tanh")
    assert bgvlr.shifts_for(569) == {"gradient_shift": 9, "step_shift": 7}


def test_seed_003s_clipped_sigmoid_trains_as_its_integers_do(trained, fhew_std128):
    trainer, sk, W, report, X, y, Xq, Y = trained
    clipped = bgvlr.BgvFixedPointTrainer(trainer.ctx, len(Xq), Xq.shape[1], fhew=fhew_std128[0], sigmoid="clipped")
    clipped.keys, clipped.boot_keys = trainer.keys, trainer.boot_keys               # the same client's keys
    got = clipped.decrypt_weights(clipped.fit(Xq, Y, 2), sk)
    want = bgvlr.train_plain(Xq, Y, 2, **clipped.arithmetic)
    assert np.abs(got - want).max() <= 2


def test_runs_that_would_leave_t_are_refused_with_the_step(fhew_std128):
    X, y, Xq, Y = separable(96, 7)
    with pytest.raises(ValueError, match="a weight reaches .* at step .*: raise step_shift"):
        bgvlr.train_plain(Xq, Y, 40, gradient_shift=7, step_shift=1)
    with pytest.raises(ValueError, match="the gradient's sum reaches .* at step 1; a bootstrap reads at most 32704"):
        bgvlr.train_plain(np.full((600, 8), 128), np.zeros(600, dtype=np.int64), 1, gradient_shift=1, step_shift=7)
    ctx = bgvlr.context(11, insecure_no_security_check=True)
    with pytest.raises(ValueError, match="features must be a power of two in \\[2, 1024\\], got 6"):
        bgvlr.BgvFixedPointTrainer(ctx, 96, 6, fhew=fhew_std128[0])
    with pytest.raises(ValueError, match="gradient_shift must be an int in \\[1, 15\\]"):
        bgvlr.BgvFixedPointTrainer(ctx, 96, 8, fhew=fhew_std128[0], gradient_shift=0)
    trainer = bgvlr.BgvFixedPointTrainer(ctx, 96, 8, fhew=fhew_std128[0])
    with pytest.raises(ValueError, match="call trainer.keygen\\(\\) first"):
        trainer.encrypt_data(Xq, Y)
    with pytest.raises(ValueError, match="expected X of shape \\(96, 8\\)"):
        trainer.encrypt_data(Xq[:10], Y[:10])
    with pytest.raises(TypeError, match="must be integers"):
        trainer.encrypt_data(Xq / 128, Y)
    with pytest.raises(ValueError, match="labels be 0 or 2\\^7"):
        trainer.encrypt_data(Xq, Y // 2)
    with pytest.raises(ValueError, match="iterations must be an int >= 1"):
        trainer.fit(Xq, Y, 0)


def test_the_docs_example_runs_as_written(capsys):
    from pathlib import Path
    text = Path(__file__).resolve().parents[1].joinpath("docs", "logreg.md").read_text()
    section = text[text.index("## Seed 003's training on BGV slots"):]
    code = section[section.index("```python") + len("```python"):section.index("```", section.index("```python") + 3)]
    exec(compile(code, "docs/logreg.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "True True"
