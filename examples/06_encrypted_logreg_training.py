"""Tutorial 6: training a logistic regression on encrypted data, with bootstrapping (HELR).

Tutorial 3 ran a trained model on encrypted inputs. Here the server *trains* on data it cannot
read. The data owner encrypts scikit-learn's breast-cancer records (455 training tumours, 30
features); the server runs Nesterov-accelerated gradient descent on ciphertexts with a degree-3
sigmoid polynomial and refreshes the weights by bootstrapping whenever an iteration would run
out of levels; the data owner decrypts the weights.

The script checks the decrypted weights against plaintext training with the same algorithm
(NumPy, float64) and their test accuracy against that of plaintext training (within 1 point).
It prints the time per iteration and the ring operations one iteration asks of the hardware.

It runs on the toy ring (N = 2^12: NOT SECURE, seconds per iteration) so that it finishes in CI;
``logreg.context("N16_BOOT")`` gives 128-bit parameters (about 15 GB of memory; BENCHMARKS.md has
the measured run). Run: python examples/06_encrypted_logreg_training.py
"""

import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import ringfire as rf
from ringfire.apps import logreg

ITERATIONS = 6

warnings.filterwarnings("ignore", message=r".*security check is disabled.*")   # the toy ring, on purpose
data = load_breast_cancer()
X, y = logreg.prepare(data.data, data.target)                 # centred, in [-1, 1], bias column, 32 columns
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)

ctx = logreg.context("toy")
trainer = logreg.EncryptedTrainer(ctx, features=X.shape[1])
sk, keys = trainer.keygen()                                   # rotation and bootstrap keys
report = logreg.FitReport()
w_encrypted = trainer.fit(X_train, y_train, ITERATIONS, report=report)   # the server's part
w = trainer.decrypt_weights(w_encrypted, sk)                  # the data owner's part

w_plain = logreg.train_plain(X_train, y_train, ITERATIONS)
error = np.abs(w - w_plain).max()
acc, acc_plain = logreg.accuracy(w, X_test, y_test), logreg.accuracy(w_plain, X_test, y_test)
print(f"{ITERATIONS} iterations on {len(X_train)} encrypted samples: {report.bootstraps} bootstraps, "
      f"{report.seconds_per_iteration:.2f} s per iteration (median)")
print(f"weights vs plaintext training: max difference {error:.2e}")
print(f"test accuracy: encrypted {acc:.3f}, plaintext {acc_plain:.3f}")
assert error < 1e-3, error
assert abs(acc - acc_plain) <= 0.01

data_cts = trainer.encrypt_data(X_train, y_train)
zero = ctx.encrypt(np.zeros(ctx.slots), keys)
with rf.trace(dry_run=True) as t:                             # what one iteration asks of the hardware
    trainer.iteration(data_cts, zero, zero, 0, len(X_train))
counts = t.primitives()
print("one iteration:", ", ".join(f"{counts.get((p, ctx.poly_degree), 0):,} {p}"
                                  for p in ("ntt", "intt", "add", "mult", "automorphism")))
