"""BGV/BFV coefficients to FHEW/TFHE ciphertexts: lookups, signs and comparisons on exact integers.

Coefficient i of a BGV or BFV ciphertext becomes a FHEW ciphertext of a
``bits``-bit integer. For a plaintext modulus t = 2^k (coefficient encoding) the
integers mod t are FHEW's encoding at Q / t per unit, whose top bit is FHEW's
padding bit (tables read values below t / 2; comparisons and signs read the
whole circle): bits = k - 1. Any other t (odd: a batching prime among them) is
read with a unit of Delta = round(t / 2^(bits + 1)): the integer x is written as
Delta x mod t, FHEW's encoding of a ``bits``-bit integer but for Delta's rounding
(at most 2^(bits-1) / t of the circle, kept far below half a unit).

1. **Put the value on top, then drop to level 0** (only q_0 is read).
   ringfire's BGV and BFV ciphertexts have phase x = t^-1 c m + e mod q_0 at
   level 0 (c: the correction factor; decryption reads [t x]_q). For an integer
   M, t^-1 M = (q_0 / t) [j M]_t + M / t mod q_0 with j = -q_0^-1 mod t (since
   t t^-1 = 1 + j q_0): the phase already holds [j c m]_t at q_0 / t per unit.
   A product by u = -q_0 c^-1 mod t (c at level 0: the input's, times
   q_i^-1 mod t for each prime dropped) makes that m itself, and by Delta the
   unit FHEW reads. The product (|u Delta| <= t / 2) runs before the levels
   drop, which divide its error growth away with the primes.
2. The steps every scheme shares (to_fhew.py): q_0 -> Q, the ring switch (one
   per residue of i mod N / N' among the coefficients read) and extraction,
   then FHEW's Q -> Q_ks, key switch and Q_ks -> q.

Slots (a batching t) are read through :class:`ringfire.switching.BgvSlotsToFhew`,
which moves them to coefficients first (slot_maps.py).
"""

from __future__ import annotations

import numpy as np

from .._checks import warn_at_caller
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.params import WARN_P_FAIL, tail_probability
from .ring_switch import RingSwitchKey
from .to_fhew import RingToFhew, check_fhew_context, is_int


class BgvToFhew(RingToFhew):
    """Switches coefficients of BGV or BFV ciphertexts to FHEW/TFHE ciphertexts.

    Args:
        bgv: the :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context`.
            Under a plaintext modulus t = 2^k the integers are k - 1 bits, at most
            log2(N') - 1. Under any other t, ``bits`` says how wide they are.
        fhew: the :class:`ringfire.tfhe.Context` whose lookups read the result;
            its ring degree N' must divide the BGV ring degree.
        bits: the integers' width under a t that is not a power of two (at most
            log2(N') - 1, and t at least 2^(2 bits + 8) so that Delta's rounding
            stays below 2^-8 of half a unit); under t = 2^k it is k - 1 (give it or not).

    The results are FHEW ciphertexts of :attr:`bits`-bit integers. The client makes the
    switching key with :meth:`keygen` (both secret keys; the key is public); no Galois
    keys are needed.
    """

    def __init__(self, bgv, fhew, *, bits: int | None = None):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        check_fhew_context(fhew)
        super().__init__(bgv, fhew)
        t = int(bgv.plain_modulus)
        self.bgv, self.t = bgv, t
        if not t & (t - 1):
            if t < 4:
                raise ValueError(f"[switching] t = {t} holds no FHEW integer (FHEW's padding bit takes its only bit): "
                                 f"t = 2^k with k >= 2")
            if bits is not None and bits != t.bit_length() - 2:
                raise ValueError(f"[switching] t = {t} holds {t.bit_length() - 2}-bit FHEW integers (its top bit is "
                                 f"the padding bit), not {bits!r}: leave bits out")
            self.bits, self.unit = t.bit_length() - 2, 1
            if self.bits > self.bits_limit:
                raise ValueError(f"[switching] t = {t} makes {self.bits}-bit FHEW integers; a FHEW ring of degree "
                                 f"{fhew.params.ring_dimension} holds at most {self.bits_limit} bits "
                                 f"(t <= {2 << self.bits_limit})")
        else:
            if bits is None:
                raise ValueError(f"[switching] t = {t} is not a power of two: say how wide the integers FHEW reads "
                                 f"are (bits=, at most {self.bits_limit})")
            self.check_bits(bits)
            if t < 1 << (2 * bits + 8):
                raise ValueError(f"[switching] t = {t} is too small to hold {bits}-bit FHEW integers at "
                                 f"round(t / 2^{bits + 1}) per unit (t >= 2^{2 * bits + 8} keeps the rounding below "
                                 f"2^-8 of half a unit): fewer bits")
            self.bits, self.unit = int(bits), round(t / 2 ** (bits + 1))

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
        return self._switch_scaled(self.scaled(ct), key, positions)

    def scaled(self, ct):
        """``ct`` times its :meth:`factor` at level 0: what the switch reads (its error is
        the one the switch's variance counts)."""
        factor = self.factor(ct.level, ct.correction)
        y = ct * factor if factor != 1 else ct
        return y.mod_reduce(0) if y.level > 0 else y

    def _switch_scaled(self, y, key: RingSwitchKey, positions: np.ndarray) -> LweCiphertext:
        """As :meth:`_switch` for a ``y`` already multiplied by its :meth:`factor`."""
        x = y.mod_reduce(0) if y.level > 0 else y
        words = self._lwe_words(x, key, positions)
        variance = self.error_variance(key, x)
        self._warn_if_unreadable(variance)
        return self.fhew.from_ring_lwe(words, bits=self.bits, variance=variance)

    def factor(self, level: int, correction: int) -> int:
        """u Delta mod t, centred (module docstring, step 1), for a ciphertext at ``level`` with
        ``correction``: what its phase at level 0 is multiplied by so that it holds each
        integer at FHEW's unit."""
        return unit_factor(self.bgv, level, correction, self.unit)

    def _warn_if_unreadable(self, variance: float) -> None:
        """Warns where the switched error leaves a coefficient's cell (q / t wide) too often."""
        q = self.fhew.params.lwe_modulus
        half = q / 2 ** (self.bits + 2)
        risk = tail_probability(variance, half)
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] each switched coefficient is read wrong with probability {risk:.2g} "
                           f"(its error variance {variance:.0f} at q={q}, a half-width of {half:g}): "
                           f"fewer bits (a smaller t), or a FHEW set with a larger ring (STD128_LUT)")

    def compare(self, a, b, key: RingSwitchKey, *, count: int) -> LweCiphertext:
        """[a > b] per coefficient, as FHEW ciphertexts of 1-bit integers (1 or 0), for
        coefficients a, b in [0, 2^bits) (``b`` a ciphertext, or an int every coefficient is
        compared with): one switch of a - b (exact, mod t) and one bootstrap per
        coefficient. Read as signed integers in (-2^(bits-1), 2^(bits-1)] they compare too."""
        if not isinstance(a, BgvCiphertext):
            raise TypeError(f"[switching] compare reads a ringfire.{self.bgv.scheme}.Ciphertext first, got "
                            f"{type(a).__name__}")
        if is_int(b):  # every coefficient against b (an int alone would be the constant polynomial b)
            b = self.bgv.encode_coefficients(np.full(self._count(count), int(b) % self.t))
        elif not isinstance(b, BgvCiphertext):
            raise TypeError(f"[switching] compare reads a ciphertext or an int second, got {type(b).__name__}")
        return self._greater_than_zero(self(a - b, key, count=count), self.bits)

    def sign(self, x, key: RingSwitchKey, *, count: int) -> LweCiphertext:
        """[x > 0] per coefficient for x read as a signed integer in (-2^bits, 2^bits), as FHEW
        1-bit integers: one switch and one bootstrap per coefficient."""
        return self._greater_than_zero(self(x, key, count=count), self.bits)

    def error_variance(self, key: RingSwitchKey, x=None, u: int = 1) -> float:
        """Variance at q = 2N' of a switched ciphertext's error: the common steps and,
        given the input x at level 0 and a multiplier u still to come, its own error (from
        its noise budget estimate: the largest error coefficient, taken as a standard
        deviation)."""
        total = self._switch_variance(key)
        if x is not None:
            budget = max(x.noise_budget_estimate, 0.0)
            total += (abs(u) * self.fhew.params.lwe_modulus * 2.0 ** -budget / (2 * self.t)) ** 2
        return total

    def _check(self, ct, key, count) -> int:
        self.check_ciphertext(ct)
        self._check_key(key)
        return self._count(count)

    def check_ciphertext(self, ct) -> None:
        """Refuses, by name, what is not a two-polynomial ciphertext of this BGV/BFV context."""
        if not isinstance(ct, BgvCiphertext):
            raise TypeError(f"[switching] expected a ringfire.{self.bgv.scheme}.Ciphertext, got {type(ct).__name__}")
        if ct.context is not self.bgv:
            raise ValueError(f"[switching] the ciphertext belongs to another {self.bgv.scheme.upper()} context")
        if ct.size != 2:
            raise ValueError(f"[switching] the ciphertext has {ct.size} polynomials: relinearize it first "
                             f"(ev.relinearize)")

    def _count(self, count) -> int:
        if not is_int(count) or not 1 <= count <= self.bgv.poly_degree:
            raise ValueError(f"[switching] count must be an int in [1, {self.bgv.poly_degree}] (coefficients), "
                             f"got {count!r}")
        return int(count)


def unit_factor(bgv, level: int, correction: int, unit: int) -> int:
    """u ``unit`` mod t, centred (module docstring, step 1): what the phase of a ciphertext at
    ``level`` with ``correction`` is multiplied by so that, at level 0, it holds each integer
    m of its message as [unit m]_t at q_0 / t per unit."""
    t, primes = int(bgv.plain_modulus), bgv.params.q_primes
    c = int(correction)
    for i in range(1, int(level) + 1):  # each dropped prime's factor, q_i^-1 mod t
        c = c * pow(int(primes[i]) % t, -1, t) % t
    f = -int(primes[0]) * pow(c, -1, t) * unit % t
    return f - t if f > t // 2 else f
