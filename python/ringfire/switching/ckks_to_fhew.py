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
   secret z: the coefficients of interest sit at multiples of N / N'.
4. **Extract** coefficient t N' / 2n of it for each slot t and finish as the
   FHEW bootstrap does (Q -> Q_ks, the key switch to the LWE secret, Q_ks -> q).

The result is a :class:`ringfire.tfhe.Ciphertext` of n ``bits``-bit integers
that FHEW lookups (``fhew.apply``), gates and comparisons act on. Every
step but the linear transform is a per-coefficient map or a handful of
small-ring products, so the cost is the transform's (about 2 sqrt(n)
rotations at level 1) plus a few milliseconds for the ring switch.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _core
from ..ckks import magnitude
from ..ckks.circuits import LinearTransform
from ..ckks.ciphertext import Ciphertext as CkksCiphertext
from ..ckks.context import Context as CkksContext
from ..rlwe.keys import SecretKey as CkksSecretKey
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.context import Context as FhewContext
from ..tfhe.context import SecretKey as FhewSecretKey
from .ring_switch import RingSwitchKey, extract, ring_switch, ring_switch_keygen


class CkksToFhew:
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
        N, Np = ckks.poly_degree, fhew.params.ring_dimension
        if not is_int(slots) or slots < 1 or slots & (slots - 1):
            raise ValueError(f"[switching] slots must be a power of two, got {slots!r}")
        if 2 * slots > Np:
            raise ValueError(f"[switching] {slots} slots need a FHEW ring of degree >= {2 * slots}; "
                             f"this one has N' = {Np}")
        if N % Np:
            raise ValueError(f"[switching] the FHEW ring degree N' = {Np} must divide the CKKS ring degree {N}")
        if ckks.slots != N // 2:
            raise ValueError(f"[switching] the CKKS context must pack N/2 = {N // 2} slots, not {ckks.slots}")
        self.ckks, self.fhew, self.slots = ckks, fhew, int(slots)
        self._stride = N // (2 * self.slots)                     # where slot t lands in R_N
        self._indices = np.arange(self.slots) * (Np // (2 * self.slots))  # ... and in R_N'
        self._transforms: dict[tuple, LinearTransform] = {}
        self._tables: dict[int, object] = {}
        self._ntt = _core.Ntt32(Np, fhew.params.ring_modulus)

    def __repr__(self) -> str:
        return (f"CkksToFhew(N={self.ckks.poly_degree} -> N'={self.fhew.params.ring_dimension}, "
                f"slots={self.slots})")

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, ckks_secret_key, fhew_secret_key) -> RingSwitchKey:
        """The switching key (public) from the two secret keys; the client runs this."""
        check_secret_keys(self.ckks, ckks_secret_key, self.fhew, fhew_secret_key)
        s = np.asarray(ckks_secret_key._native.coefficients(), dtype=np.int64)
        z = fhew_secrets(fhew_secret_key)[1]
        key = ring_switch_keygen(s, z, self.fhew.params.ring_modulus, self.ckks._prng, sigma=self.fhew.params.sigma)
        key.fhew_key_id = fhew_secret_key.key_id
        return key

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> RingSwitchKey:
        """A switching key from ``key.to_bytes()``, checked against these contexts (the evaluator's
        side), and against the FHEW evaluation keys loaded here when there are any."""
        key = RingSwitchKey.from_bytes(data, ring_degree=self.ckks.poly_degree,
                                       subring_degree=self.fhew.params.ring_dimension,
                                       modulus=self.fhew.params.ring_modulus, mac_key=mac_key)
        self._check_key_id(key)
        return key

    def _check_key_id(self, key: RingSwitchKey) -> None:
        if key.fhew_key_id and self.fhew.key_id is not None and key.fhew_key_id != self.fhew.key_id:
            raise ValueError("[switching] this switching key was made for other FHEW keys than this context's "
                             "(its secret key differs from the one the evaluation keys came from)")

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
        host = y if y.device == "cpu" else y.to("cpu")            # the ring switch runs on the host
        c0, c1 = host._native.coefficients()[:, 0, :]           # limb q_0, coefficient form
        q0, Q = self.ckks.params.q_primes[0], self.fhew.params.ring_modulus
        c0, c1 = _switch_modulus(c0, q0, Q), _switch_modulus(c1, q0, Q)
        b, a = ring_switch(key, c0, c1, self._ntt)
        words = np.stack([extract(b, a, int(t), Q) for t in self._indices]).astype(np.uint32)
        return self.fhew.from_ring_lwe(words, bits=bits, variance=self.error_variance(key, x, bits))

    def compare(self, ev, a, b, key: RingSwitchKey, *, bits: int, periodic: bool = False) -> LweCiphertext:
        """[a > b] per slot, as FHEW ciphertexts of 1-bit integers (1 or 0), for
        integers a, b in [0, 2^bits): one switch of a - b and one bootstrap per
        slot. The difference's sign is the half of the circle its phase lies in
        (so it needs no padding bit); the bootstrap, on it minus half a unit,
        gives +-q/8, and adding q/8 makes it FHEW's 1-bit encoding (0 or q/4),
        which :class:`ringfire.switching.FhewToCkks` brings back to CKKS."""
        difference = self(ev, a - b, key, bits=bits, periodic=periodic)  # the operator keeps the zero tail
        positive = self.fhew.apply(self._sign_table(bits), difference - 1)  # apply adds half a unit back
        shifted = positive + 1  # one unit of its 2-bit encoding: q/8
        return LweCiphertext(self.fhew, shifted.data, shifted.shape, 1, shifted.variance)

    def _sign_table(self, bits: int):
        """+q/8 for every phase in [0, q/2) and -q/8 for the other half (the test vector is negacyclic)."""
        if bits not in self._tables:
            self._tables[bits] = self.fhew.lut(lambda m: 1, bits=bits, out_bits=2)
        return self._tables[bits]

    def error_variance(self, key: RingSwitchKey, x=None, bits: int = 1) -> float:
        """Variance at q = 2N' of a switched ciphertext's error: the ring switch,
        the modulus switches, the FHEW key switch and, given the CKKS input x
        (at its scale) and ``bits``, its own error in units of q / 2^(bits+1)."""
        p = self.fhew.params
        q, Q = p.lwe_modulus, p.ring_modulus
        terms = p.noise_terms()
        rounding = (1 + self.ckks.poly_degree * 2 / 3) / 12                  # q_0 -> Q of c0 + c1 s
        total = (key.error_variance() + rounding) * (q / Q) ** 2
        total += terms["mod_switch_ring"] + terms["key_switch"] + terms["mod_switch_lwe"]
        if x is not None:
            total += (2.0 ** x.noise_bits / x.scale * q / 2 ** (bits + 1)) ** 2
        return total

    # ---- steps -----------------------------------------------------------------------

    def _check(self, ct, key, bits, periodic) -> None:
        if not isinstance(ct, CkksCiphertext):
            raise TypeError(f"[switching] expected a ringfire.ckks.Ciphertext, got {type(ct).__name__}")
        if ct.context is not self.ckks:
            raise ValueError("[switching] the ciphertext belongs to another CKKS context")
        if not isinstance(key, RingSwitchKey):
            raise TypeError(f"[switching] expected the RingSwitchKey from keygen, got {type(key).__name__}")
        if (key.ring_degree, key.subring_degree, key.modulus) != (self.ckks.poly_degree,
                                                                  self.fhew.params.ring_dimension,
                                                                  self.fhew.params.ring_modulus):
            raise ValueError("[switching] this switching key was made for other contexts")
        rows = key.parts * key.digits
        if key.b.shape != (rows, key.subring_degree) or key.a.shape != key.b.shape:
            raise ValueError(f"[switching] a switching key holds two ({rows}, {key.subring_degree}) arrays; this one "
                             f"holds {key.b.shape} and {key.a.shape}")
        self.check_bits(bits)
        self._check_key_id(key)
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

    def check_bits(self, bits) -> None:
        """Refuses a bit width the FHEW ring cannot hold as a table input (and bools), by name."""
        limit = int(math.log2(self.fhew.params.ring_dimension)) - 1
        if not is_int(bits) or not 1 <= bits <= limit:
            raise ValueError(f"[switching] bits must be an int in [1, {limit}], got {bits!r}")

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


def is_int(value) -> bool:
    """An int or NumPy integer, not a bool (True would pass for 1)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_contexts(ckks, fhew) -> None:
    """Refuses, by name, what is not a CKKS and a FHEW context (in that order)."""
    if not isinstance(ckks, CkksContext):
        raise TypeError(f"[switching] expected a ringfire.ckks.Context first, got {type(ckks).__module__}."
                        f"{type(ckks).__name__}")
    if not isinstance(fhew, FhewContext):
        raise TypeError(f"[switching] expected a ringfire.tfhe.Context second, got {type(fhew).__module__}."
                        f"{type(fhew).__name__}")


def check_secret_keys(ckks, ckks_secret_key, fhew, fhew_secret_key) -> None:
    """Refuses, by name, what is not the two contexts' secret keys, before any key is made
    (``ckks_secret_key=None``: only the FHEW one is needed)."""
    if ckks_secret_key is not None and not (isinstance(ckks_secret_key, CkksSecretKey)
                                            and ckks_secret_key.context is ckks):
        raise ValueError(f"[switching] expected the CKKS context's secret key, got {_described(ckks_secret_key)}")
    if not (isinstance(fhew_secret_key, FhewSecretKey) and fhew_secret_key.context is fhew):
        raise ValueError(f"[switching] expected the FHEW context's secret key, got {_described(fhew_secret_key)}")


def fhew_secrets(fhew_secret_key) -> tuple[np.ndarray, np.ndarray]:
    """The FHEW secret key's LWE secret s (n values) and ring secret z (N'), as int64."""
    raw = np.frombuffer(fhew_secret_key._native.secret_bytes(), dtype=np.int8).astype(np.int64)
    n = fhew_secret_key.context.params.lwe_dimension
    return raw[:n], raw[n:]


def _described(key) -> str:
    return type(key).__name__ + (" of another context" if hasattr(key, "context") else "")


def _switch_modulus(words: np.ndarray, old: int, new: int) -> np.ndarray:
    """round(w new / old) mod new, for words below old (< 2^61): float64 is exact
    to 2^-24 of a unit of the new modulus here, far below its rounding."""
    centred = np.where(words >= old // 2, words.astype(np.float64) - old, words.astype(np.float64))
    return (np.rint(centred * (new / old)).astype(np.int64) % new).astype(np.uint64)
