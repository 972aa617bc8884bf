"""CKKS slots to FHEW/TFHE ciphertexts: scheme switching for lookups, signs and comparisons.

The path, for n slots (a power of two, 2n <= N'):

1. **Drop to level 1**: only q_0 is read at the end, and the rotations cost least there.
2. **SlotsToCoefficients** (one level): a slot-wise linear transform W of
   period n, the encoder's own map read backwards, so that coefficient t N / 2n
   of the result holds Re(slot t) (its imaginary part lands at (t + n) N / 2n),
   scaled to q_0 / 2^(bits + 1): the FHEW encoding of a ``bits``-bit integer.
   Only the coefficients at multiples of N / 2n are read: they are the
   polynomial's part in the subring of degree 2n, whose slots are the average
   of the slots over the cosets i + n Z. So an input of n values with zeros
   after them needs no replication to period n first: the transform applied
   to it as it is has the right subring part, n / slots times too small, which
   the transform's scale makes up (the other coefficients are never read).
3. **Modulus switch** the q_0 limb to the FHEW ring prime Q, and **ring
   switch** (ring_switch.py) to an RLWE ciphertext of the FHEW ring under its
   secret z: the coefficients of interest sit at multiples of N / N', so one
   ring switch serves them all.
4. **Extract** coefficient t N' / 2n of it for each slot t and finish as the
   FHEW bootstrap does (Q -> Q_ks, the key switch to the LWE secret, Q_ks -> q).
   Steps 3 and 4 are every scheme's (to_fhew.py).

The result is a :class:`ringfire.tfhe.Ciphertext` of n ``bits``-bit integers
that FHEW lookups (``fhew.apply``), gates and comparisons act on. Every
step but the linear transform is a per-coefficient map or a handful of
small-ring products, so the cost is the transform's (about 2 sqrt(n)
rotations at level 1) plus a few milliseconds for the ring switch.
"""

from __future__ import annotations


import numpy as np

from ..ckks import magnitude
from ..ckks.circuits import LinearTransform
from ..ckks.ciphertext import Ciphertext as CkksCiphertext
from ..ckks.context import Context as CkksContext
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from .ring_switch import RingSwitchKey
from .to_fhew import RingToFhew, check_fhew_context, is_int


class CkksToFhew(RingToFhew):
    """Switches the first ``slots`` slots of CKKS ciphertexts to FHEW/TFHE ciphertexts.

    Args:
        ckks: the :class:`ringfire.ckks.Context` (full packing: N / 2 slots).
        fhew: the :class:`ringfire.tfhe.Context` whose lookups read the result;
            its ring degree N' must divide N.
        slots: how many slots to switch (a power of two, at most N' / 2).

    The client makes the switching key with :meth:`keygen` (both secret keys;
    the key is public, ``key.nbytes`` bytes) and the CKKS Galois keys for
    :meth:`rotations`; the evaluator calls the object.
    """

    def __init__(self, ckks, fhew, *, slots: int):
        check_contexts(ckks, fhew)
        super().__init__(ckks, fhew)
        N, Np = ckks.poly_degree, fhew.params.ring_dimension
        if not is_int(slots) or slots < 1 or slots & (slots - 1):
            raise ValueError(f"[switching] slots must be a power of two, got {slots!r}")
        if 2 * slots > Np:
            raise ValueError(f"[switching] {slots} slots need a FHEW ring of degree >= {2 * slots}; "
                             f"this one has N' = {Np}")
        if ckks.slots != N // 2:
            raise ValueError(f"[switching] the CKKS context must pack N/2 = {N // 2} slots, not {ckks.slots}")
        self.ckks, self.slots = ckks, int(slots)
        self._stride = N // (2 * self.slots)                     # where slot t lands in R_N
        self._transforms: dict[tuple, LinearTransform] = {}

    def __repr__(self) -> str:
        return (f"CkksToFhew(N={self.ckks.poly_degree} -> N'={self.fhew.params.ring_dimension}, "
                f"slots={self.slots})")

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, ckks_secret_key, fhew_secret_key) -> RingSwitchKey:
        """The switching key (public) from the two secret keys; the client runs this."""
        return super().keygen(ckks_secret_key, fhew_secret_key)

    def rotations(self) -> list[int]:
        """The rotations the CKKS Galois keys need: the transform's."""
        level = min(1, self.ckks.max_level)  # where the switch runs; the rotations do not depend on the level
        return sorted({r % self.ckks.slots for r in self._transform(level, 1).rotations()} - {0})

    # ---- the switch ------------------------------------------------------------------

    def __call__(self, ev, ct, key: RingSwitchKey, *, bits: int, periodic: bool = False) -> LweCiphertext:
        """The ``slots`` integers of ``ct`` (real, in [0, 2^bits)) as FHEW ciphertexts of ``bits``-bit integers.

        ``ct`` holds ``slots`` values with zeros after them (its shape is
        ``(slots,)``, as ``ctx.encrypt`` of that many values gives), or is
        n-periodic (``periodic=True``: slot i holds value i mod n). It must sit at
        level 1 or above: the transform takes one level.
        """
        self._check(ct, key, bits, periodic)
        if not periodic and not ct._zero_tail:
            ct = ct * np.ones(self.slots)  # zeros after the values, unknown (loaded from bytes): made so, one level
        # Only q_0 is read at the end: the rotations run cheapest on level 1 (dropping limbs keeps the scale).
        x = ev.mod_switch(ct, 1) if ct.level > 1 else ct
        # Only the result's subring coefficients are read, mod q_0: its slots' magnitudes do not matter.
        y = ev.linear_transform(magnitude.restore(x, None), self._transform(x.level, bits, x.scale, periodic))
        words = self._lwe_words(y, key, np.arange(self.slots) * self._stride)
        return self.fhew.from_ring_lwe(words, bits=bits, variance=self.error_variance(key, x, bits))

    def compare(self, ev, a, b, key: RingSwitchKey, *, bits: int, periodic: bool = False) -> LweCiphertext:
        """[a > b] per slot, as FHEW ciphertexts of 1-bit integers (1 or 0), for
        integers a, b in [0, 2^bits): one switch of a - b and one bootstrap per
        slot. The difference's sign is the half of the circle its phase lies in
        (so it needs no padding bit); the bootstrap, on it minus half a unit,
        gives +-q/8, and adding q/8 makes it FHEW's 1-bit encoding (0 or q/4),
        which :class:`ringfire.switching.FhewToCkks` brings back to CKKS."""
        difference = self(ev, a - b, key, bits=bits, periodic=periodic)  # the operator keeps the zero tail
        return self._greater_than_zero(difference, bits)

    def error_variance(self, key: RingSwitchKey, x=None, bits: int = 1) -> float:
        """Variance at q = 2N' of a switched ciphertext's error: the ring switch,
        the modulus switches, the FHEW key switch and, given the CKKS input x
        (at its scale) and ``bits``, its own error in units of q / 2^(bits+1)."""
        total = self._switch_variance(key)
        if x is not None:
            total += (2.0 ** x.noise_bits / x.scale * self.fhew.params.lwe_modulus / 2 ** (bits + 1)) ** 2
        return total

    # ---- steps -----------------------------------------------------------------------

    def _check(self, ct, key, bits, periodic) -> None:
        if not isinstance(ct, CkksCiphertext):
            raise TypeError(f"[switching] expected a ringfire.ckks.Ciphertext, got {type(ct).__name__}")
        if ct.context is not self.ckks:
            raise ValueError("[switching] the ciphertext belongs to another CKKS context")
        self._check_key(key)
        self.check_bits(bits)
        if periodic:
            if ct.level < 1:
                raise ValueError("[switching] the ciphertext is at level 0; the transform needs one level")
            return
        if ct.shape != (self.slots,):
            raise ValueError(f"[switching] expected a ciphertext of {self.slots} values (shape ({self.slots},), zeros "
                             f"after them), got shape {ct.shape}; pass periodic=True for an n-periodic one")
        needed = 1 if ct._zero_tail else 2
        if ct.level < needed:
            raise ValueError(f"[switching] the ciphertext is at level {ct.level}; the transform needs one level" +
                             ("" if ct._zero_tail else ", and zeroing the slots after its values (not known to be "
                              "zero: it was loaded or rotated) one more"))

    def _transform(self, level: int, bits: int, scale: float | None = None, periodic: bool = False) -> LinearTransform:
        """W scaled so that the result's subring coefficients are q_0 / 2^(bits+1) per unit: by slots / n
        more for an input of n values and zeros, whose subring part is its slots' average over n-cosets."""
        scale = self.ckks.scale if scale is None else scale
        key = (level, bits, scale, periodic)
        if key not in self._transforms:
            gain = self.ckks.params.q_primes[0] / (2 ** (bits + 1) * scale)
            if not periodic:
                gain *= self.ckks.slots // self.slots
            self._transforms[key] = LinearTransform(self.ckks, gain * self._embedding(), level=level)
        return self._transforms[key]

    def _embedding(self) -> np.ndarray:
        """W[i, t] = slot i of the polynomial X^(t N / 2n): slots -> coefficients read backwards."""
        N, n = self.ckks.poly_degree, self.slots
        columns = []
        for t in range(n):
            unit = np.zeros(N)
            unit[t * self._stride] = 1.0
            columns.append(np.asarray(self.ckks._core.coefficients_to_slots(unit.tolist()))[:n])
        return np.stack(columns, axis=1)


def check_contexts(ckks, fhew) -> None:
    """Refuses, by name, what is not a CKKS and a FHEW context (in that order)."""
    if not isinstance(ckks, CkksContext):
        raise TypeError(f"[switching] expected a ringfire.ckks.Context first, got {type(ckks).__module__}."
                        f"{type(ckks).__name__}")
    check_fhew_context(fhew)
