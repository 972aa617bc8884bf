"""The key switch from a large ring to a small one: CKKS's R_N to the FHEW ring R_N'.

A polynomial of R_N splits into k = N / N' interleaved parts,
f = sum_r X^r f_r(X^k), each in the subring R_N' (Y = X^k). A ciphertext's
phase c0 + c1 s read only at the coefficients that are multiples of k is

    c0_0 + c1_0 s_0 + Y sum_{r >= 1} c1_r s_{k - r},

a module-LWE ciphertext of rank k over R_N' under the parts of s. This key
switches it to an RLWE ciphertext under the FHEW ring secret z: for each part
u_r and gadget digit i, an RLWE encryption of B^i u_r under z, at the FHEW
ring's own prime Q (Chen, Dai, Kim and Song's ring-to-subring key switch).
Its samples are RLWE samples of the FHEW ring at its own modulus, like the
bootstrapping key's: switching adds no new hardness assumption, and the key
is small (2 k d N' words: 2 MiB for N = 2^16, N' = 1024, d = 4).

Everything is NumPy except the transforms (the FHEW ring's 32-bit NTT), so
the arithmetic is the same on every machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import struct

import numpy as np

from .. import _core

# Gadget for the digits of the module-LWE ciphertext's a parts: 2^7, balanced.
BASE_LOG = 7


def subring_parts(poly: np.ndarray, k: int) -> np.ndarray:
    """f_r[j] = f[j k + r]: the k parts (rows) of a polynomial of R_N."""
    return np.ascontiguousarray(np.asarray(poly).reshape(-1, k).T)


def times_y(poly: np.ndarray, modulus: int) -> np.ndarray:
    """Y f in R_N' = Z_Q[Y] / (Y^N' + 1): shift up by one, the top coefficient wraps negated."""
    out = np.empty_like(poly)
    out[..., 1:] = poly[..., :-1]
    out[..., 0] = (modulus - poly[..., -1]) % modulus
    return out


def module_secret(s: np.ndarray, k: int) -> np.ndarray:
    """The rank-k secret (s_0, s_{k-1}, ..., s_1) that module_ciphertext's a parts pair with."""
    parts = subring_parts(s, k)
    return np.concatenate([parts[:1], parts[1:][::-1]]) if k > 1 else parts


def module_ciphertext(c0: np.ndarray, c1: np.ndarray, k: int, modulus: int) -> tuple[np.ndarray, np.ndarray]:
    """(b, a): phase b + sum_r a_r u_r over R_N' equals the phase of (c0, c1)
    over R_N at the coefficients that are multiples of k (module docstring)."""
    parts = subring_parts(c1, k)
    a = np.concatenate([parts[:1], times_y(parts[1:], modulus)]) if k > 1 else parts
    return subring_parts(c0, k)[0].copy(), a


def balanced_digits(values: np.ndarray, modulus: int, base_log: int, digits: int) -> np.ndarray:
    """Digits with sum_i d_i B^i = values mod Q, as words mod Q, shape (digits,) + values.shape:
    each in [-B/2, B/2) but the last, which takes what remains (|d| <= Q / 2B^(d-1) + 1)."""
    base = 1 << base_log
    rest = values.astype(np.int64)
    rest = np.where(rest >= (modulus + 1) // 2, rest - modulus, rest)  # centred
    out = np.empty((digits,) + values.shape, dtype=np.int64)
    for i in range(digits - 1):
        low = ((rest + base // 2) & (base - 1)) - base // 2
        out[i] = low
        rest = (rest - low) >> base_log
    out[digits - 1] = rest
    return (out % modulus).astype(np.uint64)


# Version 2: the same fields; a bound secret (SchemeSwitch) is in the lane layout of the way back
# (each s_j in consecutive slots). A version-1 key bound to a secret was paired with the tiled layout
# before it, which this build would decrypt wrong: SchemeSwitch.load_keys refuses that pair (the
# key alone still switches to FHEW).
_MAGIC, _VERSION, _READABLE = b"RFRSWK", 2, (1, 2)
# magic, version, N, N', Q, base_log, digits, sigma, authenticated (HMAC), FHEW key id, bound secret's digest
_HEADER = struct.Struct("<6sBIIIBBdB32s32s")


@dataclasses.dataclass
class RingSwitchKey:
    """The public key of the switch from R_N (the CKKS secret) to R_N' (the FHEW ring secret).

    ``b`` and ``a`` hold, in the FHEW ring's NTT layout, the k x d RLWE
    pairs (b - a z = e + B^i u_r mod Q). Made by :func:`ring_switch_keygen`
    from both secret keys; the evaluator needs only this (``to_bytes`` /
    ``from_bytes`` carry it there).
    """

    ring_degree: int        # N, the CKKS ring
    subring_degree: int     # N', the FHEW ring
    modulus: int            # Q, the FHEW ring's prime
    base_log: int
    digits: int
    b: np.ndarray           # (k * d, N') uint64, NTT layout
    a: np.ndarray
    sigma: float = 3.19     # the error width it was made with
    fhew_key_id: bytes = b""    # the FHEW keys' identity (tfhe SecretKey.key_id) it switches to
    secret_digest: bytes = b""  # SHA-256 of the encrypted LWE secret's bytes made with it (SchemeSwitch)
    version: int = _VERSION     # the format it was read from (1: a bound secret in the old tiled layout)

    @property
    def parts(self) -> int:
        return self.ring_degree // self.subring_degree

    @property
    def nbytes(self) -> int:
        """Bytes of key material as 32-bit words (what it takes on the wire)."""
        return 2 * self.b.size * 4

    def error_variance(self) -> float:
        """Variance of the error the switch adds at Q: k d N' sigma^2 E[digit^2] (balanced digits: B^2 / 12)."""
        base = 1 << self.base_log
        return self.parts * self.digits * self.subring_degree * self.sigma ** 2 * (base * base / 12)

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """A header (the rings, the gadget, the FHEW key id, the bound secret's digest), both
        halves in coefficient form (32-bit little-endian words, independent of the NTT's layout),
        and a SHA-256 of all that, or an HMAC-SHA256 under ``mac_key`` (against tampering too)."""
        ntt = _core.Ntt32(self.subring_degree, self.modulus)
        body = b"".join(np.stack([inverse(ntt, row, self.modulus) for row in half]).astype("<u4").tobytes()
                        for half in (self.b, self.a))
        data = _HEADER.pack(_MAGIC, self.version, self.ring_degree, self.subring_degree, self.modulus, self.base_log,
                            self.digits, self.sigma, mac_key is not None, self.fhew_key_id or bytes(32),
                            self.secret_digest or bytes(32)) + body
        return data + _trailer(data, mac_key)

    @classmethod
    def from_bytes(cls, data: bytes, *, ring_degree: int, subring_degree: int, modulus: int,
                   mac_key: bytes | None = None) -> "RingSwitchKey":
        """The key ``to_bytes`` wrote, for the rings and prime given (the contexts'): its size is
        checked against what they imply before anything is allocated, then its checksum (or
        MAC) and words."""
        data = memoryview(bytes(data))
        if len(data) < _HEADER.size + 32:
            raise ValueError(f"[switching] a switching key is at least {_HEADER.size + 32} bytes, got {len(data)}")
        magic, version, N, Np, Q, base_log, digits, sigma, mac, key_id, digest = _HEADER.unpack_from(data)
        if magic != _MAGIC or version not in _READABLE:
            raise ValueError("[switching] not a ringfire switching key (or a version this build cannot read)")
        if (N, Np, Q) != (ring_degree, subring_degree, modulus):
            raise ValueError(f"[switching] this switching key is for N={N}, N'={Np}, Q={Q}; the contexts have "
                             f"N={ring_degree}, N'={subring_degree}, Q={modulus}")
        if digits != _digit_count(Q, base_log) or not 1 <= base_log <= 16 or not 0 < sigma < 1024:
            raise ValueError(f"[switching] bad gadget in the switching key: base 2^{base_log}, {digits} digits")
        if bool(mac) != (mac_key is not None):
            raise ValueError("[switching] this switching key is authenticated: pass mac_key=" if mac else
                             "[switching] this switching key is not authenticated (made without mac_key=)")
        rows = N // Np * digits
        expected = _HEADER.size + 2 * rows * Np * 4 + 32
        if len(data) != expected:
            raise ValueError(f"[switching] a switching key for these contexts is {expected} bytes, got {len(data)}")
        if not hmac.compare_digest(_trailer(data[:-32], mac_key), bytes(data[-32:])):
            raise ValueError("[switching] the switching key's " + ("MAC does not verify: tampered, corrupted or "
                             "another mac_key" if mac else "checksum does not match: corrupted or truncated"))
        words = np.frombuffer(data[_HEADER.size:-32], dtype="<u4").astype(np.uint64).reshape(2, rows, Np)
        if words.max(initial=0) >= Q:
            raise ValueError(f"[switching] the switching key holds words not below Q={Q}")
        ntt = _core.Ntt32(Np, Q)
        return cls(N, Np, Q, base_log, digits, forward_rows(ntt, words[0]), forward_rows(ntt, words[1]), sigma,
                   _or_empty(key_id), _or_empty(digest), version)


def _or_empty(field: bytes) -> bytes:
    """A 32-byte identity from the header, b"" where none was recorded (all zeros)."""
    return b"" if bytes(field) == bytes(32) else bytes(field)


def _trailer(data, mac_key: bytes | None) -> bytes:
    if mac_key is None:
        return hashlib.sha256(data).digest()
    return hmac.new(bytes(mac_key), data, hashlib.sha256).digest()


def _digit_count(modulus: int, base_log: int) -> int:
    """One digit per base_log bits of Q, rounded up (the last digit stays below B/2 + 1)."""
    return -(-modulus.bit_length() // base_log)


def ring_switch_keygen(ckks_secret: np.ndarray, ring_secret: np.ndarray, modulus: int, prng, *,
                       sigma: float = 3.19, base_log: int = BASE_LOG) -> RingSwitchKey:
    """The switching key from the CKKS secret (N ternary coefficients) to the FHEW ring secret z (N')."""
    N, Np = len(ckks_secret), len(ring_secret)
    if N % Np:
        raise ValueError(f"[switching] the CKKS ring degree {N} must be a multiple of the FHEW ring degree {Np}")
    k, d = N // Np, _digit_count(modulus, base_log)
    ntt = _core.Ntt32(Np, modulus)
    u = module_secret(np.asarray(ckks_secret, dtype=np.int64), k) % modulus  # (k, N')
    z = forward(ntt, np.asarray(ring_secret, dtype=np.int64) % modulus)
    rows = k * d
    a = prng.uniform_below_many(modulus, rows * Np).reshape(rows, Np)
    e = prng.gaussian_many(rows * Np, sigma).view(np.int64).reshape(rows, Np)
    gadget = np.array([pow(1 << base_log, i, modulus) for i in range(d)], dtype=np.uint64)
    message = (u[:, None, :].astype(np.uint64) * gadget[None, :, None] % modulus).reshape(rows, Np)
    body = (e % modulus).astype(np.uint64) + message % modulus
    a_hat = forward_rows(ntt, a)
    b_hat = (forward_rows(ntt, body % modulus) + a_hat * z % modulus) % modulus  # b = a z + e + m
    return RingSwitchKey(N, Np, modulus, base_log, d, b_hat, a_hat, sigma)


def forward(ntt, poly: np.ndarray) -> np.ndarray:
    words = np.ascontiguousarray(poly, dtype=np.uint32)
    ntt.forward(words)
    return words.astype(np.uint64)


def forward_rows(ntt, rows: np.ndarray) -> np.ndarray:
    return np.stack([forward(ntt, row) for row in rows])


def inverse(ntt, hat: np.ndarray, modulus: int) -> np.ndarray:
    words = np.ascontiguousarray(hat % modulus, dtype=np.uint32)
    ntt.inverse(words)
    return words.astype(np.uint64) % modulus


def ring_switch(key: RingSwitchKey, c0: np.ndarray, c1: np.ndarray, ntt=None) -> tuple[np.ndarray, np.ndarray]:
    """(b, a) over R_N' mod Q with b - a z = the phase of (c0, c1) mod Q read at
    multiples of k, plus the switch's error. c0, c1: N words mod Q."""
    return ring_switch_residues(key, c0, c1, [0], ntt)[0]


def ring_switch_residues(key: RingSwitchKey, c0: np.ndarray, c1: np.ndarray, residues, ntt=None) -> dict:
    """{r: ring_switch of X^-r (c0, c1)} for residues 0 <= r < k: the phase read at the
    coefficients r mod k. X^-r only permutes the module ciphertext's parts, times Y^-1 for
    those that wrap past the top, so the gadget digits and their transforms (most of a
    ring switch) are made once for all residues; each costs its two sums of products."""
    Q, k, d = key.modulus, key.parts, key.digits
    ntt = ntt or _core.Ntt32(key.subring_degree, Q)
    c0, c1 = np.asarray(c0, dtype=np.uint64), np.asarray(c1, dtype=np.uint64)
    _, a = module_ciphertext(c0, c1, k, Q)                                # a_0 = c1_0, a_j = Y c1_j
    digits = balanced_digits(a, Q, key.base_log, d)                       # (d, k, N')
    hat = forward_rows(ntt, np.transpose(digits, (1, 0, 2)).reshape(k * d, -1))  # row j * d + i, as the key
    y_inverse = np.zeros(key.subring_degree, dtype=np.int64)
    y_inverse[-1] = Q - 1                                                 # Y^-1 = -Y^(N'-1)
    y_inverse = forward(ntt, y_inverse)
    b_parts, out = subring_parts(c0, k), {}
    for r in residues:
        # Part j of X^-r c is part (j + r) mod k of c, times Y^-1 past the top; against a's
        # Y for j >= 1, row j pairs with a_(j + r) mod k, times Y^-1 where j = 0 < r or j + r > k.
        source = (np.arange(k) + r) % k
        rows = hat[(source[:, None] * d + np.arange(d)).reshape(-1)]
        wrap = np.flatnonzero(np.repeat((np.arange(k) + r > k) | ((np.arange(k) == 0) & (r > 0)), d))
        rows[wrap] = rows[wrap] * y_inverse % Q
        out[r] = ((b_parts[r] + inverse(ntt, _lazy_dot(rows, key.b, Q), Q)) % Q,
                  inverse(ntt, _lazy_dot(rows, key.a, Q), Q))
    return out


def _lazy_dot(hat: np.ndarray, key: np.ndarray, modulus: int) -> np.ndarray:
    out = np.zeros(hat.shape[1], dtype=np.uint64)
    for start in range(0, hat.shape[0], 512):
        out = (out + (hat[start:start + 512] * key[start:start + 512]).sum(axis=0, dtype=np.uint64)) % modulus
    return out


def extract(b: np.ndarray, a: np.ndarray, index: int, modulus: int) -> np.ndarray:
    """The LWE ciphertext (N' words of a, then b) of coefficient ``index`` of
    an RLWE pair (b, a) whose phase is b - a z: phase = b_t - sum_j e_j z_j
    with e_j = a_{t-j} for j <= t and -a_{N'+t-j} above (negacyclic)."""
    n = len(a)
    j = np.arange(n)
    e = np.where(j <= index, a[(index - j) % n], (modulus - a[(index - j) % n]) % modulus)
    return np.concatenate([e, [b[index]]]).astype(np.uint64)
