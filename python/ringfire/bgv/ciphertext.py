"""BGV/BFV ciphertexts and plaintexts with Python operators.

The operators implement one policy, so that expressions just work:

* products are relinearized at once; BGV products (noise proportional to the
  operands' noise) divide a noisy operand by its last prime first when the
  noise estimates say that leaves more budget; BFV products are
  scale-invariant and need no modulus switching;
* operands at different levels meet at the lower one (the higher is divided
  down, which never costs budget), and operands with different correction
  factors are aligned with small multipliers (``Evaluator.match_corrections``);
* Python ints and NumPy integer vectors are encoded mod t at the ciphertext's
  level; ints add and multiply as constants (no plaintext is built).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..rlwe.ciphertext import CiphertextBase, PlaintextBase


class Plaintext(PlaintextBase):
    """Integers mod t encoded into a plaintext polynomial, at a level.

    A plaintext remembers its coefficients, so it can be used at any level and
    with any correction factor (it is re-encoded there, exactly)."""

    @classmethod
    def from_coefficients(cls, context, coefficients: np.ndarray, level: int) -> "Plaintext":
        out = cls(context._core.encode(coefficients, int(level), 1), context)
        out._coefficients = coefficients
        return out

    correction = property(lambda self: self._res.any().correction)

    def coefficients(self) -> np.ndarray:
        """The plaintext polynomial's N coefficients in [0, t)."""
        if getattr(self, "_coefficients", None) is None:
            self._coefficients = np.asarray(self._context._core.decode(self._host()))
        return self._coefficients

    def _at(self, level: int, correction: int):
        """The native plaintext at ``level`` with ``correction`` (re-encoded when needed)."""
        native = self._res.any()
        if native.level == level and native.correction == correction:
            return self._native
        cache = self.__dict__.setdefault("_encodings", {})
        key = (level, correction)
        if key not in cache:
            cache[key] = self._context._core.encode(self.coefficients(), level, correction)
        return cache[key]

    def decode(self, signed: bool = True) -> np.ndarray:
        return self._context.decode(self, signed)

    def __repr__(self) -> str:
        return f"Plaintext({self._length_text()}, level={self.level})"


class Ciphertext(CiphertextBase):
    """An encrypted vector of N integers mod t (a 2 x N/2 matrix when batched).

    ``level`` counts the primes left to switch away; ``correction`` is the
    factor (mod t) the message carries after modulus switching and products
    (decryption divides it out); ``noise_budget_estimate`` predicts the bits of
    noise budget left without the key (``noise_budget(sk)`` measures them).
    """

    correction = property(lambda self: self._res.any().correction,
                          doc="The factor (mod t) the message is multiplied by inside this ciphertext.")

    def __repr__(self) -> str:
        return (f"Ciphertext({self._length_text()}, level={self.level}, size={self.size}, "
                f"budget~{self.noise_budget_estimate:.0f} bits{self._where()})")

    @property
    def noise_budget_estimate(self) -> float:
        """Bits of noise budget left, predicted from the carried noise estimate (no key needed)."""
        return float(self._context._core.budget_bits(self.noise_bits, self.level))

    def noise_budget(self, secret_key) -> float:
        """Bits of noise budget left, measured with the secret key (exact)."""
        return self._context.noise_budget(self, secret_key)

    def _operand(self, other, op: str):
        # A vector operand means slots: under a t that cannot batch there are none (the
        # context's error names encode_coefficients); a Plaintext or a scalar is fine.
        if not self._context.can_batch and not isinstance(other, (CiphertextBase, PlaintextBase)) \
                and np.ndim(other) > 0:
            self._context._coefficients_of_slots(other, f"{self._context.scheme}.{op}")
        return super()._operand(other, op)

    # ---- alignment ------------------------------------------------------------------
    def _natives(self, other: "Ciphertext"):
        """Both operands' natives at the lower of their levels (the higher divided down)."""
        self._check_other(other)
        ev = self._context._core_evaluator
        a, b = self._native, other._native
        if a.level > b.level:
            a = ev.mod_reduce_to(a, b.level)
        elif b.level > a.level:
            b = ev.mod_reduce_to(b, a.level)
        return a, b

    def _for_sum(self, other: "Ciphertext"):
        a, b = self._natives(other)
        if a.correction != b.correction:
            a, b = self._context._core_evaluator.match_corrections(a, b)
        return a, b

    def _switched_for_product(self, a, b):
        """BGV: divide both operands by their last prime while that leaves the product
        more noise budget (by the evaluator's noise estimates)."""
        core, ev = self._context._core, self._context._core_evaluator
        same = a is b
        while a.level > 0:
            keep = core.budget_bits(core.product_noise_bits(a.noise_bits, b.noise_bits, False), a.level)
            ra = core.mod_reduce_noise_bits(a.noise_bits, a.level)
            rb = core.mod_reduce_noise_bits(b.noise_bits, b.level)
            if core.budget_bits(core.product_noise_bits(ra, rb, False), a.level - 1) <= keep:
                break
            a = ev.mod_reduce(a)
            b = a if same else ev.mod_reduce(b)
        return a, b

    # ---- products ------------------------------------------------------------------
    def _product(self, a, b) -> "Ciphertext":
        ctx = self._context
        ev = ctx._core_evaluator
        relin = self._eval_keys().require_relin(f"{ctx.scheme}.multiply")._on(self._device)
        if ctx._scale_invariant:
            prod = ev.square_scale_invariant(a) if a is b else ev.multiply_scale_invariant(a, b)
        else:
            a, b = self._switched_for_product(a, b)
            prod = ev.square(a) if a is b else ev.multiply(a, b)
        return self._wrap(ev.relinearize(prod, relin))

    def _mul_ct(self, other: "Ciphertext") -> "Ciphertext":
        if other is self:
            return self.square()
        return self._product(*self._natives(other))

    def _square(self) -> "Ciphertext":
        a = self._native
        return self._product(a, a)

    def _mul_constant(self, value) -> "Ciphertext":
        ev = self._context._core_evaluator
        if isinstance(value, (numbers.Integral, np.integer)):
            t = self._context.plain_modulus
            return self._wrap(ev.multiply_integer(self._native, _centred(int(value), t)))
        return self._mul_plain(self._encode_like(value))

    def _mul_plain(self, pt: Plaintext) -> "Ciphertext":
        a = self._native
        return self._wrap(self._context._core_evaluator.multiply_plain(a, pt._at(a.level, 1)))

    def _encode_like(self, value) -> Plaintext:
        ctx = self._context
        return ctx.encode(value, self.level) if ctx.can_batch else ctx.encode_coefficients(value, self.level)

    # ---- sums -------------------------------------------------------------------------
    def _add_any(self, other, sign: int) -> "Ciphertext":
        ev = self._context._core_evaluator
        if isinstance(other, Ciphertext):
            a, b = self._for_sum(other)
            return self._wrap(ev.add(a, b) if sign > 0 else ev.sub(a, b))
        a = self._native
        if isinstance(other, (numbers.Integral, np.integer)):
            t = self._context.plain_modulus
            return self._wrap(ev.add_integer(a, _centred(sign * int(other), t)))
        pt = other if isinstance(other, Plaintext) else self._encode_like(other)
        p = pt._at(a.level, a.correction)
        return self._wrap(ev.add_plain(a, p) if sign > 0 else ev.sub_plain(a, p))

    def _rotate_and_add(self, n: int, broadcast: bool):
        """Within the rows (rotations act per row of N/2), then across them with
        the row swap when the values span both rows or every slot must hold the sum."""
        row = self._context.row_size
        span = row if broadcast or n > row else 1 << max(0, (n - 1).bit_length())
        out, step = self, 1
        while step < span:
            out = out + out.rotate(step)
            step <<= 1
        if broadcast or n > row:
            galois = self._eval_keys().require_galois(f"{self._context.scheme}.sum")
            if not galois.has_conjugation():
                raise ValueError(f"[{self._context.scheme}.sum] summing across the two rows needs the row-swap key: "
                                 "ctx.keygen(rotations='power_of_two', swap_rows=True)")
            out = out + out.swap_rows()
        return out

    # ---- rows and levels ---------------------------------------------------------------
    def rotate_rows(self, steps: int) -> "Ciphertext":
        """Both rows move left by ``steps`` (negative: right), like ``np.roll(row, -steps)``."""
        return self.rotate(steps)

    def swap_rows(self) -> "Ciphertext":
        """Row 0 and row 1 trade places (needs ``keygen(swap_rows=True)``)."""
        galois = self._eval_keys().require_galois(f"{self._context.scheme}.swap_rows")
        return self._wrap(self._context._core_evaluator.swap_rows(self._native, galois._on(self._device)))


    def mod_reduce(self, level: int | None = None) -> "Ciphertext":
        """Divides by the last primes down to ``level`` (default: one level): the noise
        shrinks with the modulus, and later operations are cheaper."""
        level = self.level - 1 if level is None else int(level)
        if not 0 <= level <= self.level:
            raise ValueError(f"[{self._context.scheme}.mod_reduce] level must be in [0, {self.level}], got {level}")
        out = self._wrap(self._context._core_evaluator.mod_reduce_to(self._native, level))
        return out._set_shape(self.shape, self._zero_tail)


def _centred(value: int, t: int) -> int:
    """``value`` mod t as the representative in (-t/2, t/2] (fits the evaluator's int64)."""
    r = value % t
    return r - t if r > t // 2 else r
