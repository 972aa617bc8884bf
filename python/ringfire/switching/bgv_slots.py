"""BGV/BFV slots to FHEW/TFHE ciphertexts: comparisons, signs and lookups on batched integers.

Under a batching t (a prime t = 1 mod 2N) a ciphertext's integers sit in slots.
The first ``count`` slots of row 0 become FHEW ciphertexts of ``bits``-bit
integers in three steps:

1. **Slots to coefficients** (slot_maps.py): a linear map with a mask, rotations
   and plaintext products that lands slot j at coefficient ``positions[j]``, N / count
   apart: dense (``count`` products at the lowest level above 0 with the budget for
   them, where they are encoded and multiplied in few limbs) or staged (log2(count)
   stages of three, one level each). Its diagonals carry u Delta (bgv_to_fhew.py), the product that
   makes the level-0 phase hold each integer at FHEW's unit: no multiplication of
   its own, and the error it adds is divided away when the levels drop.
2. **Drop to level 0.**
3. **The switch of those coefficients** (bgv_to_fhew.py, to_fhew.py): one ring
   switch for all of them (their positions are one residue class), extraction,
   and FHEW's key switch.

:meth:`BgvSlotsToFhew.compare`, ``sign``, ``lut``, ``max`` and ``min`` end there too. The
results are FHEW integers like any others: ``fhew.apply`` evaluates tables on
them, ``fhew.decrypt`` reads them, :class:`ringfire.switching.FhewToCkks` brings
bits into CKKS, :class:`ringfire.switching.FhewToBgv` into the coefficients of a
BGV/BFV ciphertext under t = 2^k, and :class:`ringfire.switching.LweToSlots` back into
the slots of a fresh ciphertext under t = 65537 through any table (their pair:
:class:`ringfire.switching.BgvSlotBootstrap`, functional bootstrapping of slots).
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..rlwe.keys import GaloisKeys
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from .bgv_to_fhew import BgvToFhew
from .key_bytes import load_key_part, open_key_bytes
from .ring_switch import RingSwitchKey
from .slot_maps import SlotsToCoefficients
from .to_fhew import check_fhew_context, check_secret_keys, is_int

_MAGIC = b"RFBGVSL1"
_LENGTHS = struct.Struct("<QQ")  # the ring switch key's, the Galois keys'


@dataclasses.dataclass
class BgvSlotsToFhewKey:
    """The switch's public keys: the ring switch to FHEW and the slot map's Galois keys."""

    switch: RingSwitchKey
    galois: GaloisKeys

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Both keys, each in its own envelopes (authenticated with ``mac_key``), behind their lengths."""
        parts = [self.switch.to_bytes(mac_key=mac_key), self.galois.to_bytes(mac_key=mac_key)]
        return _MAGIC + _LENGTHS.pack(*map(len, parts)) + b"".join(parts)


class BgvSlotsToFhew:
    """Switches the first ``count`` slots of BGV or BFV ciphertexts to FHEW/TFHE integers.

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` that batches.
        fhew: the :class:`ringfire.tfhe.Context` whose lookups read the results (STD128,
            STD128_LP or STD128_LUT, with its evaluation keys); its ring degree divides N.
        count: the slots read, a power of two from 1 to N / 2: slots 0 .. count - 1 of row 0
            (the first ``count`` values ``ctx.encrypt`` takes).
        bits: the integers' width: tables read values in [0, 2^bits), :meth:`sign` signed
            integers in (-2^bits, 2^bits), :meth:`compare` integers in [0, 2^bits).
        method: the slot map's (:class:`SlotsToCoefficients`): ``"auto"`` (default),
            ``"dense"`` or ``"staged"``.

    The input needs budget for the slot map (about 2 (log2 t + log2 N / 2) bits) at a level
    above 0; each read value is wrong with the probability the switch warns of (above 2^-40).
    The client makes the key with :meth:`keygen` (both secret keys; the key is public).
    """

    def __init__(self, bgv, fhew, *, count: int, bits: int, method: str = "auto"):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        check_fhew_context(fhew)
        self.reader = SlotReader(bgv, count, method)
        self.slot_map = self.reader.slot_map
        self.to_fhew = BgvToFhew(bgv, fhew, bits=bits)
        self.bgv, self.fhew, self.count, self.bits = bgv, fhew, self.slot_map.count, self.to_fhew.bits
        self._wider = self._excess = None  # max and min: the switch one bit wider, and relu's table

    def __repr__(self) -> str:
        return (f"BgvSlotsToFhew({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.bgv.plain_modulus}, "
                f"count={self.count} -> {self.fhew.params.name}, bits={self.bits})")

    @property
    def rotations(self) -> list[int]:
        """The row rotations the slot map takes (:meth:`keygen` makes their keys and the row swap's)."""
        return self.slot_map.rotations

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, fhew_secret_key, *, level: int | None = None) -> BgvSlotsToFhewKey:
        """The public keys from the two secret keys (the client runs this). The Galois keys
        serve levels up to ``level``; by default the one the map runs at for a fresh
        ciphertext (the lowest with its budget, :meth:`working_level`), where they are far
        smaller than at the top."""
        check_secret_keys(self.bgv, secret_key, self.fhew, fhew_secret_key)
        if level is None:
            level = self.working_level(self.bgv.encrypt(np.zeros(1, dtype=np.int64), secret_key))
        elif not is_int(level) or not 1 <= level <= self.bgv.max_level:
            raise ValueError(f"[switching] level must be an int in [1, {self.bgv.max_level}], got {level!r}")
        return BgvSlotsToFhewKey(self.to_fhew.keygen(secret_key, fhew_secret_key),
                                 self.slot_map.galois_keys(secret_key, level=int(level)))

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> BgvSlotsToFhewKey:
        """The key from ``key.to_bytes()``: the lengths checked against the bytes first, then each
        part by its own loader (envelope, checksum, parameters, kind) and against this switch."""
        data, (first, second), start = open_key_bytes(data, _MAGIC, _LENGTHS, "BgvSlotsToFhewKey",
                                                      "a ringfire BGV-slots-to-FHEW key")
        if start + first + second != len(data) or not first or not second:
            raise ValueError(f"[switching] the key's two parts declare {[first, second]} bytes behind a {start}-byte "
                             f"head; it holds {len(data)} bytes")
        switch = self.to_fhew.load_key(bytes(data[start:start + first]), mac_key=mac_key)
        galois = load_key_part(self.bgv, bytes(data[start + first:]), GaloisKeys, "the key's Galois part",
                               mac_key=mac_key)
        return BgvSlotsToFhewKey(switch, galois)

    def _check_key(self, key) -> None:
        if not isinstance(key, BgvSlotsToFhewKey):
            raise TypeError(f"[switching] expected the BgvSlotsToFhewKey from keygen, got {type(key).__name__}")
        if key.galois.context is not self.bgv:
            raise ValueError(f"[switching] these Galois keys belong to another {self.bgv.scheme.upper()} context")
        self.to_fhew._check_key(key.switch)

    # ---- the switch ------------------------------------------------------------------

    def __call__(self, ct, key: BgvSlotsToFhewKey) -> LweCiphertext:
        """Slots 0 .. count - 1 of ``ct`` as FHEW ciphertexts of :attr:`bits`-bit integers (the
        slots mod t; tables read values in [0, 2^bits))."""
        return self._read(ct, key, self.to_fhew)

    def _read(self, ct, key: BgvSlotsToFhewKey, reader: BgvToFhew) -> LweCiphertext:
        """The slots as ``reader`` reads coefficients (its width, its unit)."""
        self._check(ct, key)
        mapped = self.reader.at_level_zero(ct, key.galois, reader.factor)
        return reader._switch_scaled(mapped, key.switch, self.slot_map.positions)  # slot j's coefficient

    def working_level(self, ct) -> int:
        """The level the map runs ``ct`` at (:meth:`SlotReader.working_level`)."""
        return self.reader.working_level(ct)

    @property
    def map_bits(self) -> float:
        """About the budget the slot map takes (:attr:`SlotReader.map_bits`)."""
        return self.reader.map_bits

    def lut(self, ct, fn, key: BgvSlotsToFhewKey, *, out_bits: int | None = None) -> LweCiphertext:
        """fn(x) per slot for x in [0, 2^bits), as FHEW ``out_bits``-bit integers (default
        :attr:`bits`): one switch and one programmable bootstrap per slot. ``fn``: a function of
        an int, or its 2^bits values."""
        return self.fhew.apply(self.fhew.lut(fn, bits=self.bits, out_bits=out_bits), self(ct, key))

    def compare(self, a, b, key: BgvSlotsToFhewKey) -> LweCiphertext:
        """[a > b] per slot, as FHEW 1-bit integers (1 or 0), for integers a, b in [0, 2^bits)
        (``b`` a ciphertext, or an int every slot is compared with): one switch of a - b
        (exact, mod t) and one bootstrap per slot."""
        check_operands(self.bgv, self.bits, a, b, "compare reads")
        return self.to_fhew._greater_than_zero(self(a - (int(b) if is_int(b) else b), key), self.bits)

    def max(self, a, b, key: BgvSlotsToFhewKey) -> LweCiphertext:
        """max(a, b) per slot for integers a, b in [0, 2^bits) (``b`` a ciphertext or an int), as
        FHEW integers of bits + 1 bits: b + relu(d - 2^bits) with d = a - b + 2^bits, both
        switched one bit wider (where FHEW reads less precisely: STD128_LUT keeps 4 bits below
        2^-23) and one programmable bootstrap per slot."""
        return self._max_or_min(a, b, key, larger=True)

    def min(self, a, b, key: BgvSlotsToFhewKey) -> LweCiphertext:
        """min(a, b) per slot, as :meth:`max` does it: a - relu(d - 2^bits)."""
        return self._max_or_min(a, b, key, larger=False)

    def _max_or_min(self, a, b, key, *, larger: bool) -> LweCiphertext:
        check_operands(self.bgv, self.bits, a, b, "max and min read")
        if self._wider is None:
            self._wider = BgvToFhew(self.bgv, self.fhew, bits=self.bits + 1)
        half = 1 << self.bits
        d = self._read(a - b + half, key, self._wider)                    # in [1, 2^(bits+1))
        excess = self.fhew.apply(self._excess_table(), d)                  # relu(d - 2^bits) = max(a - b, 0)
        if larger:
            kept = self.fhew.trivial(np.full(self.count, int(b)), bits=self.bits + 1) if is_int(b) else \
                self._read(b, key, self._wider)
            return kept + excess
        return self._read(a, key, self._wider) - excess

    def _excess_table(self):
        if self._excess is None:
            half = 1 << self.bits
            self._excess = self.fhew.lut(lambda v: max(v - half, 0), bits=self.bits + 1)
        return self._excess

    def sign(self, x, key: BgvSlotsToFhewKey) -> LweCiphertext:
        """[x > 0] per slot for x read as a signed integer in (-2^bits, 2^bits), as FHEW 1-bit
        integers: one switch and one bootstrap per slot."""
        return self.to_fhew._greater_than_zero(self(x, key), self.bits)

    def _check(self, ct, key) -> None:
        self.to_fhew.check_ciphertext(ct)
        self.reader.check_level(ct)
        self._check_key(key)


class SlotReader:
    """The first ``count`` slots of row 0 of BGV/BFV ciphertexts into coefficients at level 0,
    each times a factor that depends on the level the map runs at: what every switch from
    slots starts with (:class:`BgvSlotsToFhew`, :class:`ringfire.switching.BgvSlotBootstrap`).
    Refuses, by name, a chain whose q_0 leaves no noise budget at level 0."""

    def __init__(self, bgv, count: int, method: str = "auto"):
        self.slot_map = SlotsToCoefficients(bgv, count, method)
        self.bgv, self.count = bgv, self.slot_map.count
        core = bgv._core
        floor = core.budget_bits(core.rounding_noise_bits(), 0)  # what a modulus switch to level 0 leaves at best
        if floor < 2:
            raise ValueError(f"[switching] the switch reads level 0, where q_0 ({int(bgv.params.q_primes[0]).bit_length()} "
                             f"bits) leaves {floor:.1f} bits of noise budget after a modulus switch's rounding: a chain "
                             f"with a larger first prime (coeff_bits=[60] + [36] * depth + [60] for t = 65537)")

    @staticmethod
    def check_level(ct) -> None:
        if ct.level == 0:
            raise ValueError("[switching] the ciphertext is at level 0: the slot map needs a level above it, whose "
                             "prime divides its error growth away")

    def at_level_zero(self, ct, galois, factor_of) -> BgvCiphertext:
        """``ct``'s slots at :attr:`slot_map`'s positions, each times ``factor_of(level,
        correction)`` of the level the map runs at, at level 0; refused when the map leaves no
        budget there."""
        low = self.working_copy(ct, galois.level)
        mapped = self.slot_map(low, galois, factor_of(low.level, low.correction))
        mapped = mapped.mod_reduce(0) if mapped.level > 0 else mapped
        budget = mapped.noise_budget_estimate
        if budget <= 1:
            raise ValueError(f"[switching] the slot map leaves {budget:.1f} bits of noise budget (the input had "
                             f"{ct.noise_budget_estimate:.1f} at level {ct.level}): the map needs about "
                             f"{self.map_bits:.0f} bits above level 0; switch a fresher ciphertext")
        return mapped

    def working_level(self, ct) -> int:
        """The level the map runs ``ct`` at. Dense: the lowest above 0 whose budget, once ``ct``
        is brought there, holds the map's (:attr:`map_bits`) and 8 bits more; ``ct``'s own if
        none. Staged: one above the map's stages."""
        return self.working_copy(ct, ct.level).level

    def working_copy(self, ct, highest: int):
        """``ct`` at :meth:`working_level`, at most ``highest``: the map's diagonals are encoded
        and multiplied in that many limbs, not the input's."""
        if self.slot_map.method == "staged":
            level = self.slot_map.levels + 1
            if min(ct.level, highest) < level:
                raise ValueError(f"[switching] the staged slot map of {self.count} slots runs at level {level} (one "
                                 f"per stage, and one above 0); the ciphertext is at level {ct.level} and the Galois "
                                 f"keys serve up to {highest}: a fresher ciphertext, or method='dense'")
            return ct.mod_reduce(level) if ct.level > level else ct
        for level in range(1, min(ct.level, highest) + 1):
            low = ct.mod_reduce(level) if level < ct.level else ct
            if low.noise_budget_estimate >= self.map_bits + 8:
                return low
        return ct.mod_reduce(highest) if ct.level > highest else ct

    @property
    def map_bits(self) -> float:
        """About the budget the slot map takes: the mask's and the diagonals' norms (t sqrt(N)
        each, the diagonals' sum over ``count`` of them)."""
        t, N = self.bgv.plain_modulus, self.bgv.poly_degree
        return 2 * (np.log2(t) + 0.5 * np.log2(N)) + 0.5 * np.log2(self.count)


def check_operands(bgv, bits: int, a, b, reads: str) -> None:
    """Refuses, by name, a first operand that is not a ciphertext and a second that is neither
    a ciphertext nor an int in [0, 2^bits) (``reads``: who says so)."""
    if not isinstance(a, BgvCiphertext):
        raise TypeError(f"[switching] {reads} a ringfire.{bgv.scheme}.Ciphertext first, got {type(a).__name__}")
    if is_int(b):
        if not 0 <= b < 1 << bits:
            raise ValueError(f"[switching] {reads} integers in [0, {1 << bits}) (2^bits); got {b}")
    elif not isinstance(b, BgvCiphertext):
        raise TypeError(f"[switching] {reads} a ciphertext or an int second, got {type(b).__name__}")
