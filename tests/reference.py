"""Exact references in plain Python integers (no ringfire code)."""

from __future__ import annotations


def bit_reverse(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0


def negacyclic_schoolbook(a, b, q):
    n = len(a)
    c = [0] * n
    for i, x in enumerate(a):
        x = int(x)
        for j, y in enumerate(b):
            k = i + j
            if k < n:
                c[k] += x * int(y)
            else:
                c[k - n] -= x * int(y)
    return [v % q for v in c]


def ntt_by_evaluation(a, q, psi):
    """Slot s holds a(psi^(2 br(s) + 1)) -- the definition of the merged CT NTT's output."""
    n = len(a)
    log_n = n.bit_length() - 1
    out = []
    for s in range(n):
        x = pow(psi, 2 * bit_reverse(s, log_n) + 1, q)
        out.append(sum(int(c) * pow(x, i, q) for i, c in enumerate(a)) % q)
    return out


def automorphism_coeff(a, k, q):
    n = len(a)
    out = [0] * n
    for i, c in enumerate(a):
        j = (i * k) % (2 * n)
        if j < n:
            out[j] = int(c) % q
        else:
            out[j - n] = (-int(c)) % q
    return out


def crt_compose(residues, moduli):
    big_q = 1
    for q in moduli:
        big_q *= q
    x = 0
    for r, q in zip(residues, moduli):
        qhat = big_q // q
        x += int(r) * qhat * pow(qhat, -1, q)
    return x % big_q


def is_prime_slow(n: int) -> bool:
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
