"""FHEW/TFHE ciphertexts back into CKKS slots: homomorphic LWE decryption.

An LWE ciphertext (a, b) of phase b - <a, s> = mu + e mod q becomes a CKKS slot
by decrypting it inside CKKS, where the client has put s (the FHEW LWE secret,
encrypted under the CKKS key):

1. **Doubling.** A one-bit integer's phase is m q / 4 (FHEW's encoding, m in
   {0, 1}); (2a, 2b) mod q has phase m q / 2 + 2e, so the bit sits half a turn
   from zero and one cosine, without a last double angle, tells it apart.
2. **The inner products** <a_i, s> / q for m ciphertexts at once. The client
   encrypts s with each s_j in L consecutive slots (L = slots / n' lanes, n' the
   LWE dimension rounded up to a power of two), so slot L j + l meets s_j, and lane l
   takes row l mod m: up to L rows at once with no rotation of s. One plaintext
   product per rotation of s by L k (k < D, D = m / L or more, a baby-step/giant-step
   sum), then log2(n' / D) rotations that fold each row's partial sums; one level.
3. **The phase** x_i = b_i / q - <a_i, s> / q, a real number equal to
   m_i / 2 + 2 e_i / q plus an integer w_i (|w_i| stays below ``bound``, 48
   by default: 8.6 standard deviations for n = 556).
4. **The reduction mod 1** to the bit: f(x) = sin^2(pi x) = 1 - cos^2(pi x),
   0 at x = 0 and 1 at x = 1/2, flat at both, as cos(pi x / 2^r) by a Chebyshev
   interpolant on [-bound, bound] (even: a polynomial in T_2 of the phase), r double
   angles and a last square (CKKS
   bootstrapping's EvalMod in miniature). An LWE error e moves the slot by
   sin^2(2 pi e / q): about 2^-8.7 for a bootstrapped STD128 ciphertext (error 16
   at q = 2048).
5. **Sharpening** (``sharpen`` times, 2 levels each): h(y) = 3y^2 - 2y^3, flat at
   0 and 1 too, squares the distance to the bit (2^-5 becomes 2^-8.4 at most).

Any FHEW lookup with ``out_bits=1`` makes such ciphertexts, and so does
:meth:`ringfire.switching.CkksToFhew.compare`: comparisons go CKKS -> FHEW -> CKKS.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import warn_at_caller
from ..ckks import magnitude
from ..ckks.circuits import LinearTransform, Polynomial
from ..ckks.ciphertext import Ciphertext as CkksCiphertext
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.params import WARN_P_FAIL, tail_probability
from .ckks_to_fhew import check_contexts
from .small_ring import SmallRing, SmallRingKey, is_small_ring_key, made_for, smallest_degree
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
        diagonals: D, the rotations of the encrypted secret the inner products take (a power of
            two, at least ``slots`` / lanes, at most n'); log2(n' / D) folds follow. Default: the
            least; at N = 2^16 and 16 slots, 2 and 4 measured no faster beyond the noise
            (BENCHMARKS.md, "Scheme switching").
        ring_degree: run the way back in a CKKS ring of this degree (below the context's, at least
            2 n'), on the context's first primes, and land in the context's ring by embedding and
            one key switch (small_ring.py): its rotations and products cost about half per halving.
            The keys are then the small ring's (:meth:`keygen` needs the CKKS secret key too) and
            the CKKS context needs no Galois keys for the way back. ``"auto"``: the smallest ring
            that holds the context's whole chain (:class:`SchemeSwitch`'s default). Default here:
            the context's own ring.

    The default degree-15 interpolant leaves the reduction within 2^-12.9 of sin^2(pi x) over
    [-bound, bound] (degree 30, a level more, 2^-35); sharpening makes that 2^-21 near the bits.
    With ``sharpen=0`` raise ``degree`` (31) if the bits must carry no more than CKKS's error.
    """

    def __init__(self, fhew, ckks, *, slots: int, bound: int = 48, doublings: int = 5, degree: int = 15,
                 sharpen: int = 1, diagonals: int | None = None, ring_degree: int | str | None = None):
        check_contexts(ckks, fhew)
        n = fhew.params.lwe_dimension
        self.period = 1 << (n - 1).bit_length()
        if not is_int(slots) or slots < 1 or slots & (slots - 1) or slots > self.period:
            raise ValueError(f"[switching] the way back takes a power of two up to {self.period} ciphertexts at once "
                             f"(the LWE dimension rounded up), got {slots!r}")
        self.fhew, self.ckks, self.slots = fhew, ckks, int(slots)
        self.bound, self.doublings = int(bound), int(doublings)
        # cos(pi x / 2^r) for x = bound t, t in [-1, 1]: the phases arrive divided by the bound.
        # It is even, so its Chebyshev series sum_k c_2k T_2k(t) = sum_k c_2k T_k(u) with
        # u = T_2(t) = 2t^2 - 1: one square, then a polynomial of half the degree (two products
        # fewer than the whole degree at the same depth).
        nodes = np.polynomial.chebyshev.chebinterpolate(
            lambda t: np.cos(np.pi * t * self.bound / 2 ** self.doublings), degree)
        self._cosine = Polynomial([float(c) for c in nodes[::2]])
        self._cosine_depth = 1 + self._cosine.depth
        self.sharpen = int(sharpen)
        self._smoothstep = Polynomial([0.0, 0.0, 3.0, -2.0], "monomial")
        self.small = self._small_ring(ring_degree)
        self.work = ckks if self.small is None else self.small.context  # the ring the decryption runs in
        if self.period > self.work.slots:
            raise ValueError(f"[switching] the CKKS {'context' if self.small is None else 'ring'}'s {self.work.slots} "
                             f"slots cannot hold the LWE secret ({n} values, period {self.period})")
        # The encrypted secret holds s_j in the `lanes` slots lanes * j ... lanes * j + lanes - 1: each
        # lane decrypts a row of its own, so up to `lanes` ciphertexts cost no rotation of the secret.
        self.lanes = self.work.slots // self.period
        least = max(1, self.slots // self.lanes)
        diagonals = least if diagonals is None else diagonals
        if not is_int(diagonals) or diagonals < least or diagonals & (diagonals - 1) or diagonals > self.period:
            raise ValueError(f"[switching] diagonals must be a power of two from {least} (slots / lanes) to "
                             f"{self.period}, got {diagonals!r}")
        self.diagonals = int(diagonals)

    def _small_ring(self, ring_degree) -> SmallRing | None:
        """The ring of ``ring_degree`` the way back runs in, or None for the context's own."""
        N = self.ckks.poly_degree
        if isinstance(ring_degree, str) and ring_degree == "auto":
            ring_degree = smallest_degree(self.ckks, self.period, self.depth)
        if ring_degree is None:
            return None
        if not is_int(ring_degree) or ring_degree < 1024 or ring_degree & (ring_degree - 1) or ring_degree > N:
            raise ValueError(f"[switching] ring_degree must be 'auto', None or a power of two from 1024 to {N} (the "
                             f"CKKS context's own ring, as None), got {ring_degree!r}")
        if ring_degree == N:
            return None
        if self.ckks.max_level < self.depth:
            raise ValueError(f"[switching] the CKKS context's chain has {self.ckks.max_level} levels; the way back "
                             f"takes {self.depth} above its result")
        small = SmallRing.shared(self.ckks, int(ring_degree))
        if small.top < self.depth:
            raise ValueError(f"[switching] a ring of degree {small.degree} holds levels 0..{small.top} of this chain "
                             f"within the {self.ckks.params.security}-bit security bound; the way back takes "
                             f"{self.depth} levels above its result: choose a larger ring_degree")
        return small

    def __repr__(self) -> str:
        via = "" if self.small is None else f" via N={self.small.degree}"
        return f"FhewToCkks(n={self.fhew.params.lwe_dimension} -> N={self.ckks.poly_degree}{via}, slots={self.slots})"

    @property
    def depth(self) -> int:
        """The levels a switch consumes from the key ciphertext's level."""
        return 1 + self._cosine_depth + self.doublings + 1 + self.sharpen * self._smoothstep.depth

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, fhew_secret_key, keys, *, level: int | None = None, secret_key=None):
        """The LWE secret encrypted under the CKKS key (a CKKS ciphertext, public), at
        ``level`` (default: the top; results land ``depth`` levels lower). The client runs this.
        With ``ring_degree``: a :class:`SmallRingKey` instead (the small ring's keys and the key
        into the context's ring), which needs the CKKS ``secret_key`` too; ``level`` is then at
        most the small ring's top (``small.top``)."""
        check_secret_keys(self.ckks, secret_key, self.fhew, fhew_secret_key)
        lwe_secret = fhew_secrets(fhew_secret_key)[0]
        secret = np.zeros(self.period)
        secret[:len(lwe_secret)] = lwe_secret
        top = self.work.max_level
        level = top if level is None else int(level)
        if not self.depth <= level <= top:
            raise ValueError(f"[switching] the switch back needs {self.depth} levels from a level at most {top}"
                             f"{'' if self.small is None else ' (the small ring the chain fits)'}; got level {level}")
        if self.small is None:
            return self.ckks.encrypt(np.repeat(secret, self.lanes), keys, level=level)
        if secret_key is None:
            raise ValueError("[switching] the way back in a smaller ring needs the CKKS secret key too "
                             "(keygen(fhew_secret_key, keys, secret_key=sk)): the key into the context's ring is "
                             "made from both secrets")
        return self.small.keygen(secret_key, self._rotations(), np.repeat(secret, self.lanes), level=level,
                                 result_level=level - self.depth)

    def load_key(self, data: bytes):
        """The key :meth:`keygen` made, from its bytes (``key.to_bytes()``), checked against these
        contexts and this way back's depth: what an evaluator in another process loads."""
        if self.small is None and is_small_ring_key(data):
            raise ValueError(f"[switching] this is a small-ring key made for ring_degree={made_for(data)[1]}; this way "
                             f"back runs in the CKKS context's own ring: construct it with that ring_degree")
        key = self.ckks.load(data) if self.small is None else self.small.load_key(data)
        self._check_key(key)
        return key

    def rotations(self) -> list[int]:
        """The rotations the CKKS Galois keys need: the diagonals' and the fold's (none with
        ``ring_degree``: the small ring's keys come with :meth:`keygen`)."""
        return [] if self.small is not None else self._rotations()

    def _rotations(self) -> list[int]:
        """The rotations of the ring the decryption runs in."""
        # Built on level 1 (2 limbs to encode, not the chain's): its rotations do not depend on the level.
        slots = self.work.slots
        lt = self._product({self.lanes * k: np.zeros(slots) for k in range(self.diagonals)},
                           min(1, self.work.max_level))
        return sorted(({r % slots for r in lt.rotations()} | set(self._fold_steps())) - {0})

    def _check_key(self, key) -> None:
        if self.small is None:
            if not isinstance(key, CkksCiphertext) or key.context is not self.ckks or key.level < self.depth:
                raise ValueError(f"[switching] the key must be this CKKS context's encryption of the LWE secret "
                                 f"with {self.depth} levels or more (keygen)")
            return
        if not isinstance(key, SmallRingKey):
            raise TypeError(f"[switching] this way back runs in a ring of degree {self.small.degree}: expected the "
                            f"SmallRingKey from keygen (or load_key), got {type(key).__name__}")
        if key.secret.context is not self.work or key.embedding.context is not self.ckks:
            raise ValueError(f"[switching] this SmallRingKey was made for another way back (its secret in a ring of "
                             f"degree {key.secret.context.poly_degree}, its embedding key for one of "
                             f"{key.embedding.context.poly_degree}); this one runs in {self.small.degree} for this "
                             f"CKKS context")
        if key.level < self.depth:
            raise ValueError(f"[switching] the SmallRingKey's secret is at level {key.level}; the way back takes "
                             f"{self.depth} levels")
        if key.embedding.level < key.level - self.depth:
            raise ValueError(f"[switching] the SmallRingKey's embedding key serves levels up to {key.embedding.level}; "
                             f"results land at level {key.level - self.depth}")

    # ---- the switch ------------------------------------------------------------------

    def __call__(self, ev, lwe, key):
        """The bits of ``lwe`` (a :class:`ringfire.tfhe.Ciphertext` of ``slots``
        1-bit integers) as a CKKS ciphertext: slot i holds bit i (i < slots; the
        slots repeat with period ``slots``)."""
        if not isinstance(lwe, LweCiphertext):
            raise TypeError(f"[switching] expected ringfire.tfhe.Ciphertext of 1-bit integers, got {type(lwe).__name__}")
        if self.small is None and not isinstance(key, CkksCiphertext):
            raise TypeError(f"[switching] expected the encrypted LWE secret (a ringfire.ckks.Ciphertext from keygen), "
                            f"got {type(key).__name__}")
        if lwe.context is not self.fhew:
            raise ValueError("[switching] these FHEW ciphertexts belong to another context")
        if lwe.bits != 1:
            raise ValueError(f"[switching] the switch back reads 1-bit integers (a lookup with out_bits=1); these "
                             f"hold {'booleans' if lwe.bits is None else f'{lwe.bits}-bit integers'}")
        if lwe.size != self.slots:
            raise ValueError(f"[switching] expected {self.slots} FHEW ciphertexts, got {lwe.size}")
        self._check_key(key)
        q, n = self.fhew.params.lwe_modulus, self.fhew.params.lwe_dimension
        # A bit reads wrong (past 1/2) where its error passes q / 8: a quarter turn once doubled.
        risk = tail_probability(lwe.variance, q / 8) if lwe.variance > 0 else 0.0  # trivial: no error
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] each bit comes back wrong with probability {risk:.2g} (its error variance "
                           f"{lwe.variance:.0f} against q / 8 = {q // 8}): bootstrap it first (a lookup with "
                           f"out_bits=1)")
        data = 2 * lwe.data.astype(np.int64) % q                          # the bit half a turn from 0
        a = np.zeros((self.slots, self.period))
        scale = q * self.bound                                             # phases over q, then over the bound
        a[:, :n] = ((data[:, :n] + q // 2) % q - q // 2) / scale           # centred
        b = data[:, n] / scale
        work_ev, secret = (ev, key) if self.small is None else (key.evaluator(), key.secret)
        inner = work_ev.linear_transform(secret, self._product(self._diagonals(a), secret.level))
        for step in self._fold_steps():
            inner = work_ev.add(inner, work_ev.rotate(inner, step))
        phase = work_ev.add_plain(work_ev.negate(inner), self.work.encode(np.tile(b, self.work.slots // self.slots),
                                                                           level=inner.level, scale=inner.scale))
        # The bounds the magnitude check cannot see: |phase / q| <= bound (the premise of the
        # reduction, 8.6 standard deviations) and |cos| <= 1 after every step.
        u = _chebyshev_2(work_ev, phase)                                   # T_2(phase / bound)
        c = work_ev.evaluate_polynomial(magnitude.restore(u, 1.0), self._cosine)
        for _ in range(self.doublings):                                    # cos 2t = T_2(cos t)
            c = _chebyshev_2(work_ev, c)
        square = work_ev.relinearize_rescale(work_ev.square(magnitude.restore(c, 1.0)))
        bits = work_ev.add_scalar(work_ev.negate(square), 1.0)             # 1 - cos^2(pi x)
        for _ in range(self.sharpen):
            bits = work_ev.evaluate_polynomial(magnitude.restore(bits, 1.0), self._smoothstep)
        if self.small is not None:
            bits = self.small.land(ev, bits, key)
        return bits._set_shape((self.slots,))

    def _diagonals(self, a: np.ndarray) -> dict[int, np.ndarray]:
        """The product with the secret rotated by L k (L lanes, k < D), whose slot t = L j + l holds
        s_{(j + k) mod n'}: diag_{Lk}[t] = a[t mod m, (j + k) mod n']. Folded (summed over
        t + L D u, u < n' / D), slot t gets sum_j a[t mod m, j] s_j: m divides L D, so every term
        belongs to row t mod m, and D u + k meets every column once."""
        t = np.arange(self.work.slots)
        row, column = t % self.slots, t // self.lanes
        return {self.lanes * k: a[row, (column + k) % self.period] for k in range(self.diagonals)}

    def _fold_steps(self) -> list[int]:
        """The rotations that sum each row's partial sums: L D, 2 L D, ... up to the slots."""
        return [(self.lanes * self.diagonals) << i for i in range(int(math.log2(self.period // self.diagonals)))]

    def _product(self, diagonals: dict, level: int) -> LinearTransform:
        # Baby steps are rotations by multiples of the lanes: about the square root of D of them.
        baby = self.lanes * (1 << (int(math.log2(self.diagonals)) + 1) // 2)
        return LinearTransform(self.work, diagonals, level=level, picklable=False, baby_steps=baby)


def _chebyshev_2(ev, x):
    """T_2(x) = 2 x^2 - 1 of a ciphertext within [-1, 1] (one level)."""
    return ev.add_scalar(ev.multiply_integer(ev.relinearize_rescale(ev.square(magnitude.restore(x, 1.0))), 2), -1.0)
