"""FHEW integers from a 32-bit set to a 64-bit torus set: an LWE key switch.

The switches from CKKS, BGV and BFV land on the 32-bit FHEW sets (their ring
switch works mod the 27- or 28-bit ring prime). A torus set's bootstrap keeps
far more of its modulus (2^-25.3 for ``STD128_T64_WIDE`` against 2^-8.3 for
``STD128``, by the noise models), which is what the way back into BGV/BFV
lands with. This key switch joins the two:

1. **Raise** each word of a 32-bit ciphertext (a, b) mod q (q = 2^11 or 2^12) to
   2^64 by multiplying it by 2^64 / q: exact, the phase and its error scale with it.
2. **Switch** from the 32-bit LWE secret s (n ternary values) to the torus set's
   big key z (its ring secret, N binary values): each a_i is cut into signed
   digits d_ij of base 2^B (log2 q bits: exact, no rounding; ring_switch.balanced_digits), and
   b - sum_ij d_ij K_ij with K_ij an encryption under z of s_i 2^64 / 2^(B (j + 1))
   is a torus ciphertext of the same phase, plus the keys' errors times the digits
   (tiny: the keys carry the ring's 2^-47).

The result is what a torus set's bootstraps read (KS-PBS: big-key ciphertexts).
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct

import numpy as np

from .. import io as rf_io
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.context import SecretKey as FhewSecretKey
from ..tfhe.params import ParameterSet
from ..tfhe.torus_params import TorusParameterSet
from .ring_switch import balanced_digits
from .to_fhew import check_fhew_context, fhew_secrets

_MAGIC = b"RFLWETT1"
_HEAD = struct.Struct("<IIII32s32s")  # n, digits, base bits, N + 1, the two sets' key ids
_BASE_BITS = 4


@dataclasses.dataclass
class TorusSwitchKey:
    """Encryptions under the torus set's big key of each 32-bit secret value times each digit's
    weight: a (n * digits, N + 1) uint64 array (public)."""

    rows: np.ndarray
    source_dimension: int  # n, the 32-bit set's LWE dimension
    digits: int
    base_bits: int
    source_key_id: bytes  # the FHEW keys' identity (tfhe SecretKey.key_id) it switches from
    torus_key_id: bytes   # and the torus set's it switches to

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """The shape, the rows' SHA-256, then the rows (with ``mac_key``, authenticated)."""
        head = _HEAD.pack(self.source_dimension, self.digits, self.base_bits, self.rows.shape[1], self.source_key_id,
                          self.torus_key_id)
        rows = np.ascontiguousarray(self.rows, dtype="<u8").tobytes()
        return rf_io.wrap(_MAGIC + head + hashlib.sha256(rows).digest() + rows, mac_key)


class LweToTorus:
    """Switches FHEW integers from a 32-bit set (STD128, STD128_LP, STD128_LUT) to a 64-bit
    torus set, whose bootstraps then read them.

    Args:
        source: the 32-bit :class:`ringfire.tfhe.Context` the integers are in.
        torus: the torus :class:`ringfire.tfhe.Context` (``STD128_T64_WIDE`` keeps the most
            of its modulus through a bootstrap).
    """

    def __init__(self, source, torus):
        check_fhew_context(source)
        check_fhew_context(torus)
        if not isinstance(source.params, ParameterSet):
            raise ValueError(f"[switching] the source must be a 32-bit FHEW set (STD128, STD128_LP, STD128_LUT), not "
                             f"{source.params.name}")
        if not isinstance(torus.params, TorusParameterSet):
            raise ValueError(f"[switching] the target must be a 64-bit torus set (STD128_T64_WIDE, ...), not "
                             f"{torus.params.name}")
        self.source, self.torus = source, torus
        q = source.params.lwe_modulus
        if q & (q - 1):
            raise ValueError(f"[switching] the source set's LWE modulus must be a power of two, got {q}")
        self._q_bits = q.bit_length() - 1
        self.digits = -(-self._q_bits // _BASE_BITS)  # log2 q bits in digits of _BASE_BITS

    def __repr__(self) -> str:
        return f"LweToTorus({self.source.params.name} -> {self.torus.params.name}, {self.digits} digits)"

    def keygen(self, source_secret_key, torus_secret_key) -> TorusSwitchKey:
        """The switching key (public) from the two FHEW secret keys; the client runs this."""
        for key, ctx in ((source_secret_key, self.source), (torus_secret_key, self.torus)):
            if not (isinstance(key, FhewSecretKey) and key.context is ctx):
                raise ValueError(f"[switching] expected the secret key of {ctx.params.name}, got "
                                 f"{type(key).__name__}")
        s, z = fhew_secrets(source_secret_key)
        weights = np.array([1 << (64 - _BASE_BITS * (j + 1)) for j in range(self.digits)], dtype=np.uint64)
        messages = (s.astype(np.uint64)[:, None] * weights[None, :]).reshape(-1)  # s_i 2^64 / 16^(j+1), wrapped
        try:
            rows = torus_secret_key._native.encrypt(messages, self.torus._prng)
        finally:  # the copies of the secrets go
            s[:], z[:], messages[:] = 0, 0, 0
        return TorusSwitchKey(rows, self.source.params.lwe_dimension, self.digits, _BASE_BITS,
                              source_secret_key.key_id, torus_secret_key.key_id)

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> TorusSwitchKey:
        """The key from ``key.to_bytes()``: its shape checked against these sets and the bytes
        before the rows are read."""
        raw = rf_io.unwrap(data, mac_key)
        start = len(_MAGIC) + _HEAD.size + 32
        if len(raw) < start or raw[:len(_MAGIC)] != _MAGIC:
            raise ValueError("[switching] not a ringfire torus switching key (TorusSwitchKey.to_bytes)")
        n, digits, base_bits, width, source_id, torus_id = _HEAD.unpack_from(raw, len(_MAGIC))
        want = (self.source.params.lwe_dimension, self.digits, _BASE_BITS, self.torus.params.ring_dimension + 1)
        if (n, digits, base_bits, width) != want:
            raise ValueError(f"[switching] this torus switching key has shape (n, digits, base bits, width) "
                             f"{(n, digits, base_bits, width)}; these sets need {want}")
        if len(raw) != start + 8 * n * digits * width:
            raise ValueError(f"[switching] a torus switching key of that shape holds {8 * n * digits * width} bytes "
                             f"of rows; these bytes hold {len(raw) - start}")
        if hashlib.sha256(memoryview(raw)[start:]).digest() != bytes(raw[start - 32:start]):
            raise ValueError("[switching] the torus switching key's checksum does not match its rows: the bytes "
                             "were damaged")
        rows = np.frombuffer(raw, dtype="<u8", offset=start).reshape(n * digits, width).astype(np.uint64)
        key = TorusSwitchKey(rows, n, digits, base_bits, source_id, torus_id)
        self._check_key(key)
        return key

    def _check_key(self, key) -> None:
        if not isinstance(key, TorusSwitchKey):
            raise TypeError(f"[switching] expected the TorusSwitchKey from keygen, got {type(key).__name__}")
        if key.rows.shape != (self.source.params.lwe_dimension * self.digits, self.torus.params.ring_dimension + 1):
            raise ValueError("[switching] this torus switching key was made for other FHEW sets")
        # Keys of the same sets made from other secret keys would give wrong integers silently.
        for ctx, key_id, which in ((self.source, key.source_key_id, "from"), (self.torus, key.torus_key_id, "to")):
            if ctx.key_id is not None and key_id != ctx.key_id:
                raise ValueError(f"[switching] this torus switching key was made for other {ctx.params.name} keys "
                                 f"than the evaluation keys loaded here (the set it switches {which})")

    def __call__(self, lwe, key: TorusSwitchKey) -> LweCiphertext:
        """The same integers (``bits`` kept) as ciphertexts of the torus set."""
        if not isinstance(lwe, LweCiphertext) or lwe.context is not self.source:
            raise ValueError(f"[switching] expected ciphertexts of the {self.source.params.name} context")
        self._check_key(key)
        n, q_bits = self.source.params.lwe_dimension, self._q_bits
        words = lwe.data.reshape(-1, n + 1).astype(np.uint64)
        # a_i 2^64 / q = sum_j d_ij 2^(64 - B (j + 1)) mod 2^64: the balanced base-2^B digits of
        # a_i 2^(B digits) / q modulo 2^(B digits), in [-2^B / 2, 2^B / 2] (no rounding: a_i has
        # log2 q bits), the most significant first as the key's rows are.
        width = _BASE_BITS * self.digits
        low_first = balanced_digits(words[:, :n] << np.uint64(width - q_bits), 1 << width, _BASE_BITS, self.digits)
        digits = np.moveaxis(low_first[::-1].astype(np.int64), 0, -1)
        digits = np.where(digits >= 1 << (width - 1), digits - (1 << width), digits)  # centred again
        out = np.zeros((len(words), self.torus.params.ring_dimension + 1), dtype=np.uint64)
        out[:, -1] = words[:, n] << np.uint64(64 - q_bits)                # exact: times 2^64 / q
        out -= _wrapping_product(digits.reshape(len(words), -1), key.rows)
        q_torus = self.torus.params.lwe_modulus
        variance = lwe.variance * (q_torus / self.source.params.lwe_modulus) ** 2 + self.error_variance()
        return LweCiphertext(self.torus, out, lwe.shape, lwe.bits, variance)

    def error_variance(self) -> float:
        """What the switch adds (variance at the torus set's q): the keys' errors times the
        digits (at most 2^B / 2 each, n * digits of them)."""
        p = self.torus.params
        return self.source.params.lwe_dimension * self.digits * (2 ** _BASE_BITS / 2) ** 2 * p.fresh_variance()


def _wrapping_product(digits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """digits @ rows mod 2^64 for small signed digits (|d| <= 8) and 64-bit rows, by four
    float64 products of the rows' 16-bit limbs: each entry is below 8 * 1668 * 2^16 < 2^53
    in size, so the floating-point sums are exact, and BLAS does them (NumPy's own integer
    product is an order of magnitude slower)."""
    if digits.shape[1] * 8 * 2 ** 16 >= 2 ** 53:
        raise ValueError("[switching] too many digits for an exact floating-point product")
    d = digits.astype(np.float64)
    out = np.zeros((digits.shape[0], rows.shape[1]), dtype=np.uint64)
    for k in range(4):
        limb = ((rows >> np.uint64(16 * k)) & np.uint64(0xFFFF)).astype(np.float64)
        out += (d @ limb).astype(np.int64).astype(np.uint64) << np.uint64(16 * k)  # wraps mod 2^64
    return out
