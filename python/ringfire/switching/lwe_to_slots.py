"""FHEW/TFHE ciphertexts into BGV/BFV slots through any table: the amortized functional
bootstrap of Liu and Wang (Asiacrypt 2023), on ringfire's BGV and BFV.

FHEW ciphertexts (a_j, b_j) mod q of dimension n under the LWE secret s have phases
Delta m_j + e_j mod q, Delta = q / 2^(bits + 1). Under the plaintext modulus t = 65537
(a batching prime up to N = 2^15) they are scaled to t, decrypted homomorphically into
the slots of one ciphertext, and read there by a table evaluated as a polynomial over
Z_t (slot_decryption.py: the steps, the key, the table): slot j of the result holds
f(m_j) mod t exactly, whatever the inputs' error was, as long as it stayed within half
a cell (:meth:`LweToSlots.failure_probability`).
"""

from __future__ import annotations

import numpy as np

from .._checks import warn_at_caller
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.tables import SlotTable
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.params import WARN_P_FAIL, ParameterSet, tail_probability
from .slot_decryption import LweToSlotsKey, SlotDecryption
from .to_fhew import check_fhew_context, check_secret_keys, fhew_secrets

__all__ = ["LweToSlots", "LweToSlotsKey"]


class LweToSlots:
    """FHEW integers of ``bits`` bits into the slots of a BGV/BFV ciphertext, each through a
    table (module docstring).

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` with
            t = 65537 and the depth for the table (:attr:`levels`: 17 with the
            decryption; ``depth=19`` leaves two levels for what follows).
        fhew: the :class:`ringfire.tfhe.Context` of the inputs (a 32-bit set: STD128,
            STD128_LP, STD128_LUT, or the toy sets).
        bits: the inputs' width as FHEW reads them (Delta = q / 2^(bits + 1)); a table's
            argument is m in [-2^bits, 2^bits): an integer in [0, 2^bits) as itself,
            the other half of the circle (differences below 0) as negative.

    Up to N inputs, input j to slot j (row 0 first, then row 1). The client makes the
    keys with :meth:`keygen`.
    """

    def __init__(self, bgv, fhew, *, bits: int):
        check_fhew_context(fhew)
        if not isinstance(fhew.params, ParameterSet):
            raise ValueError(f"[switching] LweToSlots reads the 32-bit FHEW sets (STD128, STD128_LP, STD128_LUT), not "
                             f"the 64-bit torus set {fhew.params.name}")
        self.decryption = SlotDecryption(bgv, fhew.params.lwe_dimension, fhew.params.lwe_modulus, fhew)
        self.bits = self.decryption.check_bits(bits)
        self.bgv, self.fhew, self.t = bgv, fhew, self.decryption.t
        self.q, self.n = fhew.params.lwe_modulus, fhew.params.lwe_dimension
        self.baby, self.period = self.decryption.baby, self.decryption.period

    def __repr__(self) -> str:
        return (f"LweToSlots({self.fhew.params.name}, bits={self.bits} -> {self.bgv.scheme.upper()} "
                f"N={self.bgv.poly_degree}, t={self.t})")

    @property
    def rotations(self) -> list[int]:
        """The row rotations the decryption takes Galois keys for (one giant step)."""
        return self.decryption.rotations

    @property
    def levels(self) -> int:
        """The levels a call takes at most: one for the decryption, the table's (16) after it."""
        return self.decryption.levels

    def keygen(self, secret_key, fhew_secret_key) -> LweToSlotsKey:
        """The bootstrapping keys from both secret keys (the client runs this; they are public)."""
        check_secret_keys(self.bgv, secret_key, self.fhew, fhew_secret_key)
        return self.decryption.keygen(secret_key, fhew_secrets(fhew_secret_key)[0], fhew_secret_key.key_id)

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> LweToSlotsKey:
        """The keys from ``key.to_bytes()``, checked by length, count and kind before use."""
        return self.decryption.load_key(data, mac_key=mac_key)

    def table(self, fn) -> SlotTable:
        """The table that reads a scaled phase y as m = round(y 2^(bits+1) / t) and returns fn(m)
        (vectorized over a NumPy array of m, or of one int); build it once for many calls."""
        return self.decryption.table(fn, self.bits, self.t / (2 << self.bits))

    def __call__(self, lwe: LweCiphertext, key: LweToSlotsKey, fn=None) -> BgvCiphertext:
        """A BGV/BFV ciphertext whose slot j holds fn(m_j) mod t for input j (fn: a function
        or a :meth:`table`; None: m itself, mod t)."""
        table = fn if isinstance(fn, SlotTable) else self.table((lambda m: m) if fn is None else fn)
        if table.context is not self.bgv:
            raise ValueError("[switching] this table was made for another context")
        return table(self.decrypt_in_slots(lwe, key))

    def decrypt_in_slots(self, lwe: LweCiphertext, key: LweToSlotsKey) -> BgvCiphertext:
        """Slot j: input j's phase scaled to t, (t / q)(Delta m_j + e_j) + r_j mod t."""
        self._check_input(lwe)
        return self.decryption.decrypt(np.asarray(lwe.data, dtype=np.int64), key)

    def _check_input(self, lwe) -> None:
        if not isinstance(lwe, LweCiphertext) or lwe.context is not self.fhew:
            raise TypeError(f"[switching] expected FHEW ciphertexts of this switch's context, got "
                            f"{type(lwe).__name__}")
        if lwe.bits is not None and lwe.bits != self.bits:
            raise ValueError(f"[switching] these are {lwe.bits}-bit FHEW integers; this switch reads {self.bits} bits")
        if lwe.size > self.bgv.poly_degree:
            raise ValueError(f"[switching] {lwe.size} inputs do not fit N = {self.bgv.poly_degree} slots")
        risk = self.failure_probability(lwe)
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] each value is read wrong with probability {risk:.2g} (its error variance "
                           f"{lwe.variance:.3g} at q={self.q}, a half-cell of {self.q / (4 << self.bits):g}): "
                           f"bootstrap it first, or fewer bits")

    def failure_probability(self, lwe: LweCiphertext) -> float:
        """The probability that a value is read in the wrong cell: the input's error (its
        variance) and the scaling's roundings (step 1), against half a cell less a unit of t."""
        rounding = self.decryption.rounding_variance(self.fhew.params.secret_square_mean) * (self.q / self.t) ** 2
        half_cell = self.q / (4 << self.bits) - self.q / self.t
        return tail_probability(lwe.variance + rounding, half_cell)
