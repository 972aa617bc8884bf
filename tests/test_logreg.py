"""Encrypted logistic-regression training (ringfire.apps.logreg) against NumPy and scikit-learn."""

import math
import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire.apps import logreg


@pytest.fixture(scope="module")
def toy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ctx = logreg.context("toy")
        trainer = logreg.EncryptedTrainer(ctx, 32)
        sk, keys = trainer.keygen()
    return ctx, trainer, sk, keys


@pytest.fixture(scope="module")
def cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    d = load_breast_cancer()
    X, y = logreg.prepare(d.data, d.target)
    return train_test_split(X, y, test_size=0.2, random_state=0)


def test_prepare():
    X, y = logreg.prepare([[1.0, -4.0], [3.0, 0.0], [2.0, 4.0]], ["a", "b", "a"])
    assert X.shape == (3, 4)
    assert np.allclose(X[:, 0], [-1, 1, 0]) and np.allclose(X[:, 1], [-1, 0, 1])
    assert np.all(X[:, 2] == 1) and np.all(X[:, 3] == 0)
    assert list(y) == [-1, 1, -1]
    with pytest.raises(ValueError, match="two classes"):
        logreg.prepare([[1.0], [2.0]], [0, 0])
    with pytest.raises(ValueError, match="shape"):
        logreg.prepare([1.0, 2.0], [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        logreg.prepare([[np.nan], [1.0]], [0, 1])
    with pytest.raises(ValueError, match="power of two"):
        logreg.prepare([[1.0], [2.0]], [0, 1], features_padded=3)


def test_sigmoid_polynomial_and_momentum():
    c = logreg.sigmoid_polynomial(3, 8.0)
    t = np.linspace(-8, 8, 1001)
    err = np.abs(np.polynomial.polynomial.polyval(t, c) - 1 / (1 + np.exp(-t)))
    assert err.max() < 0.12 and abs(c[0] - 0.5) < 1e-9 and abs(c[2]) < 1e-9   # odd part around 1/2
    # a_0 = 1, a_1 = (1 + sqrt 5) / 2, a_2 = (1 + sqrt(1 + 4 a_1^2)) / 2; eta_k = (1 - a_k) / a_{k+1}
    a1 = (1 + math.sqrt(5)) / 2
    a2 = (1 + math.sqrt(1 + 4 * a1 * a1)) / 2
    assert logreg.nesterov_eta(0) == 0.0
    assert logreg.nesterov_eta(1) == pytest.approx((1 - a1) / a2)


def test_plain_training_learns(cancer):
    Xtr, Xte, ytr, yte = cancer
    w = logreg.train_plain(Xtr, ytr, 32)
    assert logreg.accuracy(w, Xte, yte) >= 0.93
    assert logreg.accuracy(logreg.train_plain(Xtr, ytr, 32, sigmoid="exact"), Xte, yte) >= 0.93
    with pytest.raises(ValueError, match="sigmoid"):
        logreg.train_plain(Xtr, ytr, 1, sigmoid="tanh")


def test_encrypted_training_matches_plaintext(toy, cancer):
    ctx, trainer, sk, keys = toy
    Xtr, Xte, ytr, yte = cancer
    report = logreg.FitReport()
    w = trainer.decrypt_weights(trainer.fit(Xtr, ytr, 4, report=report), sk)
    w_plain = logreg.train_plain(Xtr, ytr, 4)
    assert np.abs(w - w_plain).max() < 1e-4
    assert abs(logreg.accuracy(w, Xte, yte) - logreg.accuracy(w_plain, Xte, yte)) <= 0.01
    # 6 levels per iteration, 6 user levels: one (w, v) bootstrap before every iteration but the first.
    assert [s.bootstraps for s in report.iterations] == [0, 1, 1, 1]
    assert report.seconds_per_iteration > 0


def test_encrypted_training_with_slots_to_coeffs_first(cancer):
    """Bootstrapping with SlotsToCoeffs first needs 3 levels left: the trainer bootstraps
    (w, v) while they still have them."""
    Xtr, _, ytr, _ = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE", coeff_bits=[60] + [40] * 9 + [60] * 11 + [56] * 3, dnum=8,
                                     bootstrap={"stc_first": True})
        trainer = logreg.EncryptedTrainer(ctx, 32)
        sk, _ = trainer.keygen()
    report = logreg.FitReport()
    w = trainer.decrypt_weights(trainer.fit(Xtr, ytr, 2, report=report), sk)
    assert np.abs(w - logreg.train_plain(Xtr, ytr, 2)).max() < 1e-4
    # 9 user levels: an iteration uses 6 and a bootstrap needs 3 of what is left.
    assert [s.bootstraps for s in report.iterations] == [0, 1]
    assert all(s.level_after >= 3 for s in report.iterations)


def test_one_iteration_traced_dry_equals_real(toy, cancer):
    ctx, trainer, sk, keys = toy
    Xtr, _, ytr, _ = cancer
    data = trainer.encrypt_data(Xtr[:64], ytr[:64])
    zero = ctx.encrypt(np.zeros(ctx.slots), keys)
    with rf.trace(dry_run=True) as dry:
        trainer.iteration(data, zero, zero, 0, 64)
    with rf.trace() as real:
        trainer.iteration(data, zero, zero, 0, 64)
    assert dry.counts() == real.counts()
    # Rotations: log2(f) up, log2(f) back, log2(rows) down, per data ciphertext (one here).
    rotations = sum(e["calls"] for e in real.entries if e["label"] == "ckks.rotate" and e["kernel"] == "automorphism")
    assert rotations >= 5 + 5 + int(math.log2(ctx.slots // 32))


def test_row_mask_is_encoded_once_per_level_and_gives_the_same_bytes(toy):
    ctx, trainer, sk, keys = toy
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    ctx.__dict__.pop("_logreg_row_masks", None)
    mask = np.zeros(ctx.slots)
    mask[::trainer.f] = 1.0
    row_mask = lambda c: logreg._row_mask(ctx, trainer.f, c)  # noqa: E731
    # The cached plaintext is the encoding the product with the NumPy mask makes itself.
    assert (ct * row_mask(ct)).to_bytes() == (ct * mask).to_bytes()
    assert row_mask(ct) is row_mask(ctx.encrypt(-x, keys))
    lower = ctx.evaluator(keys).mod_switch(ct, ct.level - 1)
    assert row_mask(lower) is not row_mask(ct) and len(ctx._logreg_row_masks) == 2
    assert (lower * row_mask(lower)).to_bytes() == (lower * mask).to_bytes()


def test_user_errors(toy):
    ctx, trainer, sk, keys = toy
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        trainer.encrypt_data(np.full((4, 32), 2.0), np.ones(4))
    with pytest.raises(ValueError, match="shape"):
        trainer.encrypt_data(np.zeros((4, 16)), np.ones(4))
    with pytest.raises(ValueError, match="power of two"):
        logreg.EncryptedTrainer(ctx, 24)
    with pytest.raises(ValueError, match="levels"):
        logreg.EncryptedTrainer(rf.ckks.Context.preset("N13_D2"), 32)
    with pytest.raises(ValueError, match="keygen"):
        logreg.EncryptedTrainer(ctx, 32).fit(np.zeros((4, 32)), np.ones(4), 1)
    with pytest.raises(ValueError, match="size"):
        logreg.context("huge")


def test_the_docs_snippet_runs():
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "logreg.md").read_text()
    snippet = re.search(r"```python\n(.+?)\n```", text, re.S).group(1)
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        exec(compile(snippet, "docs/logreg.md", "exec"), namespace)
    assert np.abs(namespace["w"] - logreg.train_plain(namespace["X"], namespace["y"], 3)).max() < 1e-4
