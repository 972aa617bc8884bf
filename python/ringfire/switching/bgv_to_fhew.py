"""BGV/BFV coefficients to FHEW/TFHE ciphertexts: lookups, signs and comparisons on exact integers.

For a plaintext modulus t = 2^k (coefficient encoding), coefficient i of a BGV
or BFV ciphertext becomes a FHEW ciphertext of a (k-1)-bit integer: the
integers mod t are FHEW's encoding at Q / t per unit, whose top bit is FHEW's
padding bit (tables read values below t / 2; comparisons and signs read the
whole circle).

1. **Drop to level 0**: only q_0 is read.
2. **Put the value on top.** ringfire's BGV and BFV ciphertexts have phase
   x = t^-1 c m + e mod q_0 (c: the correction factor; decryption reads
   [t x]_q). For an integer M, t^-1 M = (q_0 / t) [j M]_t + M / t mod q_0 with
   j = -q_0^-1 mod t (since t t^-1 = 1 + j q_0): the phase already holds
   [j c m]_t at q_0 / t per unit. Multiplying by u = -q_0 c^-1 mod t (centred,
   |u| <= t / 2) makes that m itself; the error grows by |u|.
3. The steps every scheme shares (to_fhew.py): q_0 -> Q, the ring switch (one
   per residue of i mod N / N' among the coefficients read) and extraction,
   then FHEW's Q -> Q_ks, key switch and Q_ks -> q.

Slots (a prime t that batches) are not read: they would need a slots-to-
coefficients transform over Z_t first, and a prime t is not a FHEW encoding.
"""

from __future__ import annotations

import numpy as np

from .._checks import warn_at_caller
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.params import WARN_P_FAIL, tail_probability
from .ring_switch import RingSwitchKey
from .to_fhew import RingToFhew, check_fhew_context, is_int, power_of_two_plain_modulus


class BgvToFhew(RingToFhew):
    """Switches coefficients of BGV or BFV ciphertexts to FHEW/TFHE ciphertexts.

    Args:
        bgv: the :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context`;
            its plaintext modulus must be a power of two t = 2^k (coefficient
            encoding), k - 1 at most log2(N') - 1.
        fhew: the :class:`ringfire.tfhe.Context` whose lookups read the result;
            its ring degree N' must divide the BGV ring degree.

    The results are FHEW ciphertexts of ``bits = k - 1``-bit integers
    (:attr:`bits`). The client makes the switching key with :meth:`keygen`
    (both secret keys; the key is public); no Galois keys are needed.
    """

    def __init__(self, bgv, fhew):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        check_fhew_context(fhew)
        super().__init__(bgv, fhew)
        t = power_of_two_plain_modulus(bgv, "FHEW reads")
        self.bgv, self.t, self.bits = bgv, t, t.bit_length() - 2
        if self.bits > self.bits_limit:
            raise ValueError(f"[switching] t = {t} makes {self.bits}-bit FHEW integers; a FHEW ring of degree "
                             f"{fhew.params.ring_dimension} holds at most {self.bits_limit} bits "
                             f"(t <= {2 << self.bits_limit})")

    def __repr__(self) -> str:
        return (f"BgvToFhew({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.t} -> "
                f"N'={self.fhew.params.ring_dimension}, bits={self.bits})")

    def __call__(self, ct, key: RingSwitchKey, *, count: int) -> LweCiphertext:
        """The first ``count`` coefficients of ``ct`` as FHEW ciphertexts of :attr:`bits`-bit
        integers (the coefficients mod t, read as integers in [0, t))."""
        count = self._check(ct, key, count)
        return self._switch(ct, key, np.arange(count))

    def _switch(self, ct, key: RingSwitchKey, positions: np.ndarray) -> LweCiphertext:
        """The coefficients of ``ct`` at ``positions`` (checked by the caller) as FHEW integers."""
        x = ct.mod_reduce(0) if ct.level > 0 else ct
        q0 = self.bgv.params.q_primes[0]
        u = -q0 * pow(int(x.correction), -1, self.t) % self.t
        u = u - self.t if u > self.t // 2 else u
        y = x * u if u != 1 else x
        words = self._lwe_words(y, key, positions)
        variance = self.error_variance(key, x, u)
        self._warn_if_unreadable(variance)
        return self.fhew.from_ring_lwe(words, bits=self.bits, variance=variance)

    def _warn_if_unreadable(self, variance: float) -> None:
        """Warns where the switched error leaves a coefficient's cell (q / t wide) too often."""
        q = self.fhew.params.lwe_modulus
        risk = tail_probability(variance, q / (2 * self.t))
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] each switched coefficient is read wrong with probability {risk:.2g} "
                           f"(its error variance {variance:.0f} at q={q}, a half-width of {q // (2 * self.t)}): "
                           f"a smaller t, or a FHEW set with a larger ring (STD128_LUT)")

    def compare(self, a, b, key: RingSwitchKey, *, count: int) -> LweCiphertext:
        """[a > b] per coefficient, as FHEW ciphertexts of 1-bit integers (1 or 0), for
        coefficients a, b in [0, t / 2) (``b`` a ciphertext, or an int every coefficient is
        compared with): one switch of a - b (exact, mod t) and one bootstrap per
        coefficient. Read as signed integers in (-t/4, t/4] they compare too."""
        if not isinstance(a, BgvCiphertext):
            raise TypeError(f"[switching] compare reads a ringfire.{self.bgv.scheme}.Ciphertext first, got "
                            f"{type(a).__name__}")
        if is_int(b):  # every coefficient against b (an int alone would be the constant polynomial b)
            b = self.bgv.encode_coefficients(np.full(self._count(count), int(b) % self.t))
        elif not isinstance(b, BgvCiphertext):
            raise TypeError(f"[switching] compare reads a ciphertext or an int second, got {type(b).__name__}")
        return self._greater_than_zero(self(a - b, key, count=count), self.bits)

    def sign(self, x, key: RingSwitchKey, *, count: int) -> LweCiphertext:
        """[x > 0] per coefficient for x read as a signed integer in (-t/2, t/2), as FHEW
        1-bit integers: one switch and one bootstrap per coefficient."""
        return self._greater_than_zero(self(x, key, count=count), self.bits)

    def error_variance(self, key: RingSwitchKey, x=None, u: int = 1) -> float:
        """Variance at q = 2N' of a switched ciphertext's error: the common steps and,
        given the input x at level 0 and the multiplier u, its own error (from its noise
        budget estimate: the largest error coefficient, taken as a standard deviation)."""
        total = self._switch_variance(key)
        if x is not None:
            budget = max(x.noise_budget_estimate, 0.0)
            total += (abs(u) * self.fhew.params.lwe_modulus * 2.0 ** -budget / (2 * self.t)) ** 2
        return total

    def _check(self, ct, key, count) -> int:
        if not isinstance(ct, BgvCiphertext):
            raise TypeError(f"[switching] expected a ringfire.{self.bgv.scheme}.Ciphertext, got {type(ct).__name__}")
        if ct.context is not self.bgv:
            raise ValueError(f"[switching] the ciphertext belongs to another {self.bgv.scheme.upper()} context")
        if ct.size != 2:
            raise ValueError(f"[switching] the ciphertext has {ct.size} polynomials: relinearize it first "
                             f"(ev.relinearize)")
        self._check_key(key)
        return self._count(count)

    def _count(self, count) -> int:
        if not is_int(count) or not 1 <= count <= self.bgv.poly_degree:
            raise ValueError(f"[switching] count must be an int in [1, {self.bgv.poly_degree}] (coefficients), "
                             f"got {count!r}")
        return int(count)
