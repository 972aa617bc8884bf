"""Tutorial 3: encrypted logistic-regression inference with CKKS.

A client holds medical records (scikit-learn's bundled breast-cancer data set:
569 tumours, 30 features); a server holds a logistic-regression model. The
client sends only ciphertexts, the server computes the predicted probabilities
with nothing but the public evaluation keys, and only the client can read them.

1. Plaintext: standardize the features, train ``LogisticRegression`` on an
   80 % split, and fit a degree-3 least-squares polynomial to the sigmoid on
   the logit range seen in training, [-R, R]. sigmoid(z) - 1/2 is odd, so on a
   symmetric interval the fit is p(z) = 1/2 + c1 z + c3 z^3 (the even
   coefficient is exactly zero).
2. Client: "batch-axis" packing -- ciphertext j holds feature j of every test
   sample, one sample per slot (30 ciphertexts, up to N/2 samples each).
3. Server (it owns w, b and the polynomial, and receives the ciphertexts and
   the relinearization key as bytes): z = sum_j w_j * ct_j + b is 30
   ciphertext-by-scalar products (one level), then
   p(z) = 1/2 + c1 z + (c3 z)(z^2) takes two more levels (Horner's form
   1/2 + z (c1 + c3 z^2) would take three). Depth 3 in all.
4. Client: decrypt and compare with the same computation in plaintext.

Why batch-axis rather than one sample per block of 32 slots with
rotate-and-sum? It is the clearer one: the dot product becomes scalar
multiplications and additions -- no rotations, hence no Galois keys to
generate and ship (the server needs only the relinearization key), no masks --
and the answers come back densely packed, sample i in slot i. And it is the
faster one per sample once the batch fills up: its cost is that of 30
ciphertexts whether they carry 1 or N/2 = 4096 samples, while 4096 samples in
32-slot blocks take 32 ciphertexts, 32 vector products and 160 rotations.
(For a small batch such as the 114 test samples here, slot-block packing fits
in one ciphertext and is about 3x faster end to end; pick it when batches are
small and latency matters.)

Parameters: N = 2^13, ciphertext primes of 54 + 3 x 36 bits, one 54-bit
special prime, scale 2^36: log2(QP) = 216 <= 218, within the 128-bit
HomomorphicEncryption.org bound (``Context`` raises ``ValueError`` otherwise).

The script checks that encrypted and plaintext predictions agree, that the
decrypted probabilities match the plaintext polynomial to < 1e-3, and prints
the time per sample.
Run: python examples/03_encrypted_logistic_regression.py
"""

import time

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ringfire as rf

# ---- 1. plaintext training (the model owner) -------------------------------------------
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
model = LogisticRegression(max_iter=1000).fit(X_train, y_train)
w, b = model.coef_[0], float(model.intercept_[0])
n_test, n_features = X_test.shape

# Degree-3 least-squares fit of the sigmoid on [-R, R], R = the largest |logit| in training.
R = float(np.abs(model.decision_function(X_train)).max())
grid = np.linspace(-R, R, 4001)
c1, c3 = np.linalg.lstsq(np.stack([grid, grid**3], axis=1), 1 / (1 + np.exp(-grid)) - 0.5, rcond=None)[0]


def sigmoid_poly(z):
    return 0.5 + c1 * z + c3 * z**3


print(f"breast-cancer data: {len(X_train)} training / {n_test} test samples, {n_features} features")
print(f"sigmoid(z) ~ 0.5 + {c1:.6f} z {c3:+.4e} z^3   (least squares on [-{R:.1f}, {R:.1f}])")

# ---- 2. client: keys and encryption --------------------------------------------------
ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[54, 36, 36, 36], special_bits=[54], scale_bits=36)
print(f"CKKS: {ctx.describe()}")
sk, keys = ctx.keygen()  # no rotations needed: batch-axis packing never rotates
assert n_test <= ctx.slots

t0 = time.perf_counter()
columns = [ctx.encrypt(X_test[:, j], keys) for j in range(n_features)]  # ciphertext j = feature j
t_encrypt = time.perf_counter() - t0
upload = [ct.to_bytes() for ct in columns]
eval_keys = keys.relin.to_bytes()  # the only key the server receives


# ---- 3. server: public keys only -------------------------------------------------------
def server(params: bytes, relin: bytes, ciphertexts: list[bytes]) -> bytes:
    """Evaluates sigmoid_poly(w . x + b) slot-wise; never sees the secret key."""
    sctx = rf.ckks.Context.from_bytes(params)
    sctx.set_keys(rf.ckks.KeySet(relin=sctx.load(relin)))
    cts = [sctx.load(blob) for blob in ciphertexts]
    z = cts[0] * float(w[0])
    for wj, ct in zip(w[1:], cts[1:]):
        z = z + ct * float(wj)  # each product is rescaled; all land on the same level
    z = z + b
    p = 0.5 + c1 * z + (c3 * z) * (z * z)  # levels: z at L-1, (c3 z) and z^2 at L-2, product at L-3
    return p.to_bytes()


t0 = time.perf_counter()
answer = server(ctx.to_bytes(), eval_keys, upload)
t_server = time.perf_counter() - t0

# ---- 4. client: decryption and checks ------------------------------------------------------
t0 = time.perf_counter()
result = ctx.load(answer)
prob_he = ctx.decrypt(result, sk)[:n_test]
t_decrypt = time.perf_counter() - t0

z_plain = X_test @ w + b
prob_poly = sigmoid_poly(z_plain)  # the same polynomial in plaintext
prob_exact = model.predict_proba(X_test)[:, 1]  # the true sigmoid
pred_he, pred_plain = (prob_he >= 0.5).astype(int), model.predict(X_test)

agreement = np.mean(pred_he == pred_plain)
max_err = np.abs(prob_he - prob_poly).max()
total = t_encrypt + t_server + t_decrypt
mb = (sum(map(len, upload)) + len(eval_keys)) / 2**20
print(f"upload: {len(upload)} ciphertexts + relinearization key = {mb:.1f} MiB; "
      f"result at level {result.level}")
print(f"accuracy on test labels:  plaintext {np.mean(pred_plain == y_test):.2%}, "
      f"encrypted {np.mean(pred_he == y_test):.2%}")
print(f"encrypted vs plaintext predictions agree on {agreement:.2%} of {n_test} samples")
print(f"max |probability error| vs the plaintext polynomial: {max_err:.2e}")
print(f"max |polynomial - true sigmoid| on the test set: {np.abs(prob_poly - prob_exact).max():.3f} "
      "(a cubic over a wide range is coarse; the 0.5 threshold is kept)")
print(f"time: encrypt {t_encrypt * 1e3:.0f} ms, server {t_server * 1e3:.0f} ms, decrypt {t_decrypt * 1e3:.1f} ms "
      f"-> {total / n_test * 1e3:.2f} ms per sample "
      f"(the same ciphertexts hold {ctx.slots} samples: {total / ctx.slots * 1e6:.0f} us per sample when full)")

assert agreement >= 0.99, agreement
assert max_err < 1e-3, max_err
