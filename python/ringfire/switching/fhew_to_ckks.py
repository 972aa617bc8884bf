"""FHEW/TFHE ciphertexts back into CKKS slots: homomorphic LWE decryption.

An LWE ciphertext (a, b) of phase b - <a, s> = mu + e mod q becomes a CKKS slot
by decrypting it inside CKKS, where the client has put s (the FHEW LWE secret,
encrypted under the CKKS key):

1. **The inner products** <a_i, s> / q for m ciphertexts at once: the m x n
   matrix of the a's (centred, over q) times the encrypted s, by m rotated
   diagonals of period n' (n rounded up to a power of two) and log2(n'/m)
   rotations that fold the n'/m partial sums of each row; one level.
2. **The phase** x_i = b_i / q - <a_i, s> / q, a real number equal to
   mu_i / q + e_i / q plus an integer w_i (|w_i| stays below ``bound``, 48
   by default: 8.6 standard deviations for n = 556).
3. **The reduction mod 1** of a one-bit integer's phase (FHEW's encoding
   m q / 4, m in {0, 1}) to its bit: f(x) = sin^2(2 pi x) = 1 - cos^2(2 pi x),
   as cos(2 pi x / 2^r) by a Chebyshev interpolant on [-bound, bound] and r
   double angles, a last square giving f (CKKS bootstrapping's EvalMod in
   miniature). f is flat at both bits, so an LWE error e moves the slot by
   only sin^2(2 pi e / q): about 2^-8.7 for a bootstrapped STD128 ciphertext
   (error 16 at q = 2048).

4. **Sharpening** (``sharpen`` times, 2 levels each): h(y) = 3y^2 - 2y^3, flat at
   0 and 1 too, squares the distance to the bit (2^-5 becomes 2^-8.4 at most).

Any FHEW lookup with ``out_bits=1`` makes such ciphertexts, and so does
:meth:`ringfire.switching.CkksToFhew.compare`: comparisons go CKKS -> FHEW -> CKKS.
"""

from __future__ import annotations

import math

import numpy as np

from ..ckks import magnitude
from ..ckks.circuits import LinearTransform, Polynomial
from ..ckks.ciphertext import Ciphertext as CkksCiphertext
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from .ckks_to_fhew import check_contexts
from .to_fhew import check_secret_keys, fhew_secrets, is_int


class FhewToCkks:
    """Puts ``slots`` FHEW ciphertexts of 1-bit integers into CKKS slots.

    Args:
        fhew: the :class:`ringfire.tfhe.Context` of the ciphertexts.
        ckks: the :class:`ringfire.ckks.Context` of the result; its slots must
            hold n' (the LWE dimension rounded up to a power of two).
        slots: how many ciphertexts per call (a power of two, at most n').
        bound: the largest integer part (in absolute value) of a phase / q that the reduction covers.
        doublings: r, the double angles after the interpolant (of ``degree``).
        sharpen: how many times 3y^2 - 2y^3 is applied to the bits (2 levels each).
    """

    def __init__(self, fhew, ckks, *, slots: int, bound: int = 48, doublings: int = 5, degree: int = 30,
                 sharpen: int = 1):
        check_contexts(ckks, fhew)
        n = fhew.params.lwe_dimension
        self.period = 1 << (n - 1).bit_length()
        if not is_int(slots) or slots < 1 or slots & (slots - 1) or slots > self.period:
            raise ValueError(f"[switching] the way back takes a power of two up to {self.period} ciphertexts at once "
                             f"(the LWE dimension rounded up), got {slots!r}")
        if self.period > ckks.slots:
            raise ValueError(f"[switching] the CKKS context's {ckks.slots} slots cannot hold the LWE secret "
                             f"({n} values, period {self.period})")
        self.fhew, self.ckks, self.slots = fhew, ckks, int(slots)
        self.bound, self.doublings = int(bound), int(doublings)
        # cos(2 pi x / 2^r) for x = bound t, t in [-1, 1]: the phases arrive divided by the bound.
        nodes = np.polynomial.chebyshev.chebinterpolate(
            lambda t: np.cos(2 * np.pi * t * self.bound / 2 ** self.doublings), degree)
        self._cosine = Polynomial([float(c) for c in nodes])
        self._cosine_depth = self._cosine.depth
        self.sharpen = int(sharpen)
        self._smoothstep = Polynomial([0.0, 0.0, 3.0, -2.0], "monomial")

    def __repr__(self) -> str:
        return f"FhewToCkks(n={self.fhew.params.lwe_dimension} -> N={self.ckks.poly_degree}, slots={self.slots})"

    @property
    def depth(self) -> int:
        """The levels a switch consumes from the key ciphertext's level."""
        return 1 + self._cosine_depth + self.doublings + 1 + self.sharpen * self._smoothstep.depth

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, fhew_secret_key, keys, *, level: int | None = None):
        """The LWE secret encrypted under the CKKS key (a CKKS ciphertext, public), at
        ``level`` (default: the top). The client runs this."""
        check_secret_keys(self.ckks, None, self.fhew, fhew_secret_key)
        lwe_secret = fhew_secrets(fhew_secret_key)[0]
        secret = np.zeros(self.period)
        secret[:len(lwe_secret)] = lwe_secret
        level = self.ckks.max_level if level is None else int(level)
        if level < self.depth:
            raise ValueError(f"[switching] the switch back needs {self.depth} levels; level {level} has too few")
        return self.ckks.encrypt(np.tile(secret, self.ckks.slots // self.period), keys, level=level)

    def rotations(self) -> list[int]:
        """The rotations the CKKS Galois keys need: the diagonals' and the fold's."""
        # Built on level 1 (2 limbs to encode, not the chain's): its rotations do not depend on the level.
        lt = self._product({k: np.zeros(self.period) for k in range(self.slots)}, min(1, self.ckks.max_level))
        fold = [self.slots << i for i in range(int(math.log2(self.period // self.slots)))]
        return sorted(({r % self.ckks.slots for r in lt.rotations()} | set(fold)) - {0})

    # ---- the switch ------------------------------------------------------------------

    def __call__(self, ev, lwe, key):
        """The bits of ``lwe`` (a :class:`ringfire.tfhe.Ciphertext` of ``slots``
        1-bit integers) as a CKKS ciphertext: slot i holds bit i (i < slots; the
        slots repeat with period ``slots``)."""
        if not isinstance(lwe, LweCiphertext):
            raise TypeError(f"[switching] expected ringfire.tfhe.Ciphertext of 1-bit integers, got {type(lwe).__name__}")
        if not isinstance(key, CkksCiphertext):
            raise TypeError(f"[switching] expected the encrypted LWE secret (a ringfire.ckks.Ciphertext from keygen), "
                            f"got {type(key).__name__}")
        if lwe.context is not self.fhew:
            raise ValueError("[switching] these FHEW ciphertexts belong to another context")
        if lwe.bits != 1:
            raise ValueError(f"[switching] the switch back reads 1-bit integers (a lookup with out_bits=1); these "
                             f"hold {'booleans' if lwe.bits is None else f'{lwe.bits}-bit integers'}")
        if lwe.size != self.slots:
            raise ValueError(f"[switching] expected {self.slots} FHEW ciphertexts, got {lwe.size}")
        if key.context is not self.ckks or key.level < self.depth:
            raise ValueError(f"[switching] the key must be this CKKS context's encryption of the LWE secret "
                             f"with {self.depth} levels or more (keygen)")
        q, n = self.fhew.params.lwe_modulus, self.fhew.params.lwe_dimension
        data = lwe.data.astype(np.int64)
        a = np.zeros((self.slots, self.period))
        scale = q * self.bound                                             # phases over q, then over the bound
        a[:, :n] = ((data[:, :n] + q // 2) % q - q // 2) / scale           # centred
        b = data[:, n] / scale
        inner = ev.linear_transform(key, self._product(self._diagonals(a), key.level))
        step = self.slots
        while step < self.period:
            inner = ev.add(inner, ev.rotate(inner, step))
            step *= 2
        phase = ev.add_plain(ev.negate(inner), self.ckks.encode(np.tile(b, self.ckks.slots // self.slots),
                                                                 level=inner.level, scale=inner.scale))
        # The bounds the magnitude check cannot see: |phase / q| <= bound (the premise of the
        # reduction, 8.6 standard deviations) and |cos| <= 1 after every step.
        c = ev.evaluate_polynomial(magnitude.restore(phase, 1.0), self._cosine)
        for _ in range(self.doublings):                                    # cos 2t = 2 cos^2 t - 1
            c = ev.add_scalar(ev.multiply_integer(ev.relinearize_rescale(ev.square(magnitude.restore(c, 1.0))), 2),
                              -1.0)
        square = ev.relinearize_rescale(ev.square(magnitude.restore(c, 1.0)))
        bits = ev.add_scalar(ev.negate(square), 1.0)                       # 1 - cos^2(2 pi x)
        for _ in range(self.sharpen):
            bits = ev.evaluate_polynomial(magnitude.restore(bits, 1.0), self._smoothstep)
        return bits._set_shape((self.slots,))

    def _diagonals(self, a: np.ndarray) -> dict[int, np.ndarray]:
        """diag_k[t] = a[t mod m, (t + k) mod n'] for k < m: the rows of a repeat down the period."""
        t = np.arange(self.period)
        return {k: a[t % self.slots, (t + k) % self.period] for k in range(self.slots)}

    def _product(self, diagonals: dict, level: int) -> LinearTransform:
        return LinearTransform(self.ckks, diagonals, level=level, picklable=False)
