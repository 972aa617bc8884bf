"""Explicit BGV/BFV operations (SEAL-like): nothing is relinearized, switched
or aligned unless you ask. Errors name the operation and the values that
disagree ("[bgv.add] correction mismatch: 5 vs 7")."""

from __future__ import annotations

from ..rlwe.evaluator import EvaluatorBase
from ..rlwe.keys import KeySet
from .ciphertext import Ciphertext, Plaintext


class Evaluator(EvaluatorBase):
    # ---- sums -----------------------------------------------------------------------
    def add_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        """The plaintext is re-encoded at a's level and correction when needed."""
        return self._wrap(self._ev.add_plain(a._native, p._at(a.level, a.correction)), a)

    def sub_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        return self._wrap(self._ev.sub_plain(a._native, p._at(a.level, a.correction)), a)

    def add_integer(self, a: Ciphertext, value: int) -> Ciphertext:
        """``value`` (mod t) added to every slot; exact, no noise."""
        return self._wrap(self._ev.add_integer(a._native, self._centred(value)), a)

    # ---- products ----------------------------------------------------------------------
    # multiply / square (from EvaluatorBase): the BGV product (size 2 x 2 -> 3; noise ~
    # the operands' noise times the messages): relinearize next, and mod_reduce before
    # the next product.

    def multiply_scale_invariant(self, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        """The BFV product (size 3): noise grows by about t ||s|| whatever the
        operands' noise; no modulus switching needed."""
        return self._wrap(self._ev.multiply_scale_invariant(a._native, b._native), a)

    def square_scale_invariant(self, a: Ciphertext) -> Ciphertext:
        return self._wrap(self._ev.square_scale_invariant(a._native), a)

    def multiply_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        """Times a plaintext (re-encoded at a's level when needed)."""
        return self._wrap(self._ev.multiply_plain(a._native, p._at(a.level, 1)), a)

    def multiply_integer(self, a: Ciphertext, value: int) -> Ciphertext:
        """Times ``value`` mod t (the noise grows by its centred size)."""
        return self._wrap(self._ev.multiply_integer(a._native, self._centred(value)), a)

    def multiply_plain_sum(self, inputs: list[Ciphertext], plains: list[Plaintext]) -> Ciphertext:
        """sum_k inputs[k] * plains[k] accumulated in one buffer (the inputs at one level and of
        one size; each plaintext re-encoded at that level when needed): a linear map's inner sums."""
        inputs, plains = list(inputs), list(plains)
        if not inputs or len(inputs) != len(plains):
            raise ValueError(f"[{self._op}.multiply_plain_sum] needs as many plaintexts as inputs, at least one: "
                             f"got {len(inputs)} and {len(plains)}")
        natives = [p._at(x.level, 1) for x, p in zip(inputs, plains)]
        return self._wrap(self._ev.multiply_plain_sum([x._native for x in inputs], natives), inputs[0])

    def linear_combination(self, inputs: list[Ciphertext], weights) -> Ciphertext:
        """sum_k weights[k] * inputs[k] (weights mod t) in one pass over the words: the inputs
        at one level and of one size, any corrections (the result carries the first's)."""
        inputs = list(inputs)
        if not inputs:
            raise ValueError(f"[{self._op}.linear_combination] needs at least one input")
        for x in inputs:
            if not isinstance(x, Ciphertext) or x.context is not self._context:
                raise TypeError(f"[{self._op}.linear_combination] the inputs must be ciphertexts of this context, "
                                f"got {type(x).__name__}")
        return self._wrap(self._ev.linear_combination([x._native for x in inputs],
                                                      [self._centred(w) for w in weights]), inputs[0])

    # ---- levels and corrections ----------------------------------------------------------
    def mod_reduce(self, a: Ciphertext, level: int | None = None) -> Ciphertext:
        """Divides by the last prime(s) down to ``level`` (default: one level): BGV's
        modulus switching. The noise shrinks with the modulus."""
        level = a.level - 1 if level is None else int(level)
        return self._wrap(self._ev.mod_reduce_to(a._native, level), a)

    def match_corrections(self, a: Ciphertext, b: Ciphertext) -> tuple[Ciphertext, Ciphertext]:
        """``a`` and ``b`` (same level) with equal correction factors, multiplied by the
        smallest factors that do it (about sqrt(t) each)."""
        x, y = self._ev.match_corrections(a._native, b._native)
        return self._wrap(x, a), self._wrap(y, b)

    def swap_rows(self, a: Ciphertext, keys: KeySet | None = None) -> Ciphertext:
        galois = self._keyset(keys).require_galois(f"{self._op}.swap_rows")
        return self._wrap(self._ev.swap_rows(a._native, galois._on(a.device)), a)

    def _centred(self, value) -> int:
        t = self._context.plain_modulus
        r = int(value) % t
        return r - t if r > t // 2 else r

    # ---- in-place forms ------------------------------------------------------------
    def add_plain_inplace(self, a, p): return self._set(a, self.add_plain(a, p))
    def sub_plain_inplace(self, a, p): return self._set(a, self.sub_plain(a, p))
    def add_integer_inplace(self, a, v): return self._set(a, self.add_integer(a, v))
    def multiply_scale_invariant_inplace(self, a, b): return self._set(a, self.multiply_scale_invariant(a, b))
    def multiply_plain_inplace(self, a, p): return self._set(a, self.multiply_plain(a, p))
    def multiply_integer_inplace(self, a, v): return self._set(a, self.multiply_integer(a, v))
    def mod_reduce_inplace(self, a, level=None): return self._set(a, self.mod_reduce(a, level))
    def swap_rows_inplace(self, a, keys=None): return self._set(a, self.swap_rows(a, keys))
