"""The Li-Micciancio key-recovery attack on CKKS (EUROCRYPT 2021, IND-CPA^D),
written from the definitions with NumPy and Python integers: an attacker who
holds a ciphertext (c0, c1) and its decryption z recovers s from
m + e = c0 + c1 s (mod q0), because decoding is invertible: re-encode z
exactly, subtract c0, divide by c1."""

from __future__ import annotations

import numpy as np

import ringfire as rf


def inverse_embedding(slots: np.ndarray, scale: float, n: int) -> np.ndarray:
    """The integer coefficients m_k of the real polynomial with m(zeta^(5^j)) = scale * slots[j],
    zeta = exp(i pi / N). Over all odd powers, v_t = m(zeta^(2t+1)) = sum_k (m_k zeta^k) w^(tk)
    with w = zeta^2, so m_k = zeta^-k fft(v)_k / N."""
    two_n = 2 * n
    v = np.zeros(n, dtype=np.complex128)
    exponent = 1
    for j in range(n // 2):
        v[(exponent - 1) // 2] = scale * slots[j]
        v[(two_n - exponent - 1) // 2] = scale * np.conj(slots[j])
        exponent = exponent * 5 % two_n
    k = np.arange(n)
    coefficients = np.exp(-1j * np.pi * k / n) * np.fft.fft(v) / n
    return np.array([int(round(c)) for c in coefficients.real], dtype=object)


def recover_secret(ctx, ct, slots: np.ndarray) -> np.ndarray:
    """The attacker's guess of the ternary secret (centred residues mod q0)."""
    n, q0 = ctx.poly_degree, ctx.params.q_primes[0]
    polys = ct._host().polys()  # (size, level + 1, N), evaluation form
    c0_eval, c1_eval = polys[0, 0], polys[1, 0]
    c0 = rf.ring.intt(c0_eval[None, :].copy(), [q0])[0]
    m = inverse_embedding(np.asarray(slots, dtype=np.complex128), ct.scale, n)
    diff = np.array([(int(a) - int(b)) % q0 for a, b in zip(m, c0)], dtype=np.uint64)
    diff_eval = rf.ring.ntt(diff[None, :], [q0])[0]
    s_eval = np.array([int(x) * pow(int(y), -1, q0) % q0 for x, y in zip(diff_eval, c1_eval)], dtype=np.uint64)
    s = rf.ring.intt(s_eval[None, :], [q0])[0]
    return np.array([int(x) if int(x) <= q0 // 2 else int(x) - q0 for x in s])


def recovered_fraction(ctx, ct, slots, secret_key) -> float:
    truth = np.array(secret_key._native.coefficients())
    return float(np.mean(recover_secret(ctx, ct, slots) == truth))
