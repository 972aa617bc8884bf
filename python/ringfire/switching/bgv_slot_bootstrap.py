"""Functional bootstrapping of BGV/BFV slots: any function of the integers in a batched
ciphertext, and a fresh ciphertext out, in slots again.

1. **Slots to coefficients** (bgv_slots.SlotReader): the first ``count`` slots of row 0
   into coefficients N / count apart, each times u Delta (Delta = round(t / 2^(bits + 1)),
   bgv_to_fhew.unit_factor), then level 0: coefficient j's phase at q_0 holds
   [Delta x_j]_t at q_0 / t per unit.
2. **To LWE in FHEW's ring** (to_fhew.RingToFhew): q_0 to the FHEW ring prime Q, one ring
   switch to the ring of degree N' under FHEW's ring secret z, and the extraction of
   each coefficient as an LWE ciphertext of dimension N' mod Q. FHEW's own last steps
   (Q to Q_ks, its key switch, Q_ks to q = 2N') are skipped: they add most of the error
   that limits a switch to FHEW to 3 or 4 bits.
3. **Into slots through the table** (slot_decryption.py): the LWE ciphertexts scaled to
   t, decrypted homomorphically with z into the slots of a fresh ciphertext, and read by a
   table evaluated as a polynomial over Z_t, each value in its cell of Delta (16 levels
   for t = 65537).

Liu and Wang's amortized functional bootstrap (Asiacrypt 2023) in this order. The read's
error is the ring switch's, scaled to t, and the roundings from Q to t in dimension N'
(a standard deviation of about 8 units of t's 65537 for N' = 1024): at N = 2^15, 8-bit
integers are read wrong with probability 6.5e-16, 7-bit ones 1e-59
(:meth:`BgvSlotBootstrap.failure_probability`).
No FHEW bootstrap runs and no FHEW evaluation key is needed. The result's error is the
table's own, whatever the input's: slots 0 .. count - 1 hold fn(x_j) mod t, the others
fn(0). Under BGV it sits at most 17 levels below the top; under BFV lower, keeping the
noise budget the table keeps (``bgv.tables.KEEP_BITS``) on as few primes as that takes.

**16-bit integers.** Read at one unit per integer (no cells), a slot may hold any x in Z_t and
the table sees x + e, e the read's error (:meth:`BgvSlotBootstrap.read_error`):
:meth:`~BgvSlotBootstrap.lut_wide` for functions a few units barely move (a fixed-point
sigmoid), :meth:`~BgvSlotBootstrap.rescale` (x / 2^shift rounded, within one), and
:meth:`~BgvSlotBootstrap.refresh_wide`, exact in two bootstraps (a high digit read with the
error, then the low one, which absorbs it, read in 8-bit cells).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import struct

import numpy as np

from .._checks import warn_at_caller
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..rlwe.keys import GaloisKeys, KeySet
from ..tfhe.params import WARN_P_FAIL, tail_probability
from .bgv_slots import SlotReader, check_operands
from .bgv_to_fhew import unit_factor
from .key_bytes import load_key_part, open_key_bytes
from .ring_switch import RingSwitchKey
from .slot_decryption import LweToSlotsKey, SlotDecryption
from .to_fhew import RingToFhew, check_fhew_context, check_secret_keys, fhew_secrets, is_int

_MAGIC = b"RFBGVSB2"
_LENGTHS = struct.Struct("<QQQ")  # the ring switch key's, the slot map's Galois keys', the decryption's
KEPT_TABLES = 8  # tables kept per bootstrap, by function (each is 2 t words)
# The ring switch key's digits: 3 bits (9 digits of FHEW's 27-bit prime) instead of FHEW
# switching's 7 (4 digits). Its error, scaled to t, is then a fifteenth of the roundings' at
# N = 2^15 instead of 7.6 times it: 8-bit integers read wrong with probability 6.5e-16
# instead of 0.4 % (failure_probability).
RING_BASE_LOG = 3


@dataclasses.dataclass
class BgvSlotBootstrapKeys:
    """The bootstrap's public keys: the ring switch to FHEW's ring, the slot map's Galois
    keys, and the decryption into slots (FHEW's ring secret, encrypted)."""

    switch: RingSwitchKey
    galois: GaloisKeys
    decryption: LweToSlotsKey

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """The three keys (each in its own envelopes, authenticated with ``mac_key``) behind their lengths."""
        parts = [self.switch.to_bytes(mac_key=mac_key), self.galois.to_bytes(mac_key=mac_key),
                 self.decryption.to_bytes(mac_key=mac_key)]
        return _MAGIC + _LENGTHS.pack(*map(len, parts)) + b"".join(parts)


class BgvSlotBootstrap:
    """Any function of the first ``count`` slots of BGV/BFV ciphertexts, and a fresh
    ciphertext out (module docstring).

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` with t = 65537,
            a 60-bit q_0 and the depth (``coeff_bits=[60] + [36] * 19 + [60]``: the table's 17
            levels and two for what follows).
        fhew: a 32-bit :class:`ringfire.tfhe.Context` (STD128, STD128_LP, STD128_LUT) whose ring
            degree divides N: its ring (degree and prime) and its ring secret are used, not
            its evaluation keys.
        count: the slots read and written, a power of two from 1 to N / 2 (row 0).
        bits: the integers' width: tables read x in [-2^bits, 2^bits), at round(t / 2^(bits + 1))
            per unit; 8 bits are read wrong with probability 6.5e-16 at N = 2^15
            (:meth:`failure_probability`; more bits warn).
        method: the slot map's (``"auto"``, ``"dense"``, ``"staged"``).
    """

    def __init__(self, bgv, fhew, *, count: int, bits: int, method: str = "auto"):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        check_fhew_context(fhew)
        self.ring = RingToFhew(bgv, fhew)
        self.decryption = SlotDecryption(bgv, fhew.params.ring_dimension, fhew.params.ring_modulus, fhew)
        self.bits = self.decryption.check_bits(bits)
        self.reader = SlotReader(bgv, count, method)
        self.bgv, self.fhew, self.count, self.t = bgv, fhew, self.reader.count, self.decryption.t
        self.unit = round(self.t / (2 << self.bits))
        self._tables: dict = {}

    def __repr__(self) -> str:
        return (f"BgvSlotBootstrap({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.t}, count={self.count}, "
                f"bits={self.bits}, through {self.fhew.params.name}'s ring)")

    @property
    def levels(self) -> int:
        """The levels below the top a BGV result sits at, at most (the decryption and the table);
        a BFV result sits lower (module docstring)."""
        return self.decryption.levels

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, fhew_secret_key) -> BgvSlotBootstrapKeys:
        """The public keys from the two secret keys (the client runs this). The slot map's Galois
        keys serve every level a bootstrapped result can be read from again."""
        check_secret_keys(self.bgv, secret_key, self.fhew, fhew_secret_key)
        level = max(1, self.bgv.max_level - self.levels,
                    self.reader.working_level(self.bgv.encrypt(np.zeros(1, dtype=np.int64), secret_key)))
        z = fhew_secrets(fhew_secret_key)[1]
        return BgvSlotBootstrapKeys(self.ring.keygen(secret_key, fhew_secret_key, base_log=RING_BASE_LOG),
                                    self.reader.slot_map.galois_keys(secret_key, level=level),
                                    self.decryption.keygen(secret_key, z, fhew_secret_key.key_id))

    def load_keys(self, data: bytes, *, mac_key: bytes | None = None) -> BgvSlotBootstrapKeys:
        """The keys from ``keys.to_bytes()``: the lengths checked against the bytes first, then
        each part by its own loader."""
        data, lengths, start = open_key_bytes(data, _MAGIC, _LENGTHS, "BgvSlotBootstrapKeys",
                                              "ringfire BGV slot bootstrapping keys")
        if start + sum(lengths) != len(data) or not all(lengths):
            raise ValueError(f"[switching] the keys' three parts declare {list(lengths)} bytes behind a {start}-byte "
                             f"head; they hold {len(data)} bytes")
        cuts = np.cumsum([start, *lengths])
        switch, galois, decryption = (bytes(data[cuts[i]:cuts[i + 1]]) for i in range(3))
        return BgvSlotBootstrapKeys(self.ring.load_key(switch, mac_key=mac_key),
                                    load_key_part(self.bgv, galois, GaloisKeys, "the bootstrap key's Galois part",
                                                  mac_key=mac_key),
                                    self.decryption.load_key(decryption, mac_key=mac_key))

    def _check_keys(self, keys) -> None:
        if not isinstance(keys, BgvSlotBootstrapKeys):
            raise TypeError(f"[switching] expected the BgvSlotBootstrapKeys from keygen, got {type(keys).__name__}")
        if keys.galois.context is not self.bgv:
            raise ValueError(f"[switching] these Galois keys belong to another {self.bgv.scheme.upper()} context")
        self.ring._check_key(keys.switch)
        self.decryption.check_key(keys.decryption)

    # ---- the bootstrap -----------------------------------------------------------------

    def lut(self, ct, fn, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """fn(x) mod t in each of the first ``count`` slots, x read signed in [-2^bits, 2^bits)
        (``fn``: vectorized over a NumPy array, or a function of one int), fn(0) in the slots
        after them; a fresh ciphertext at most :attr:`levels` below the top, of the input's
        length (``count`` for a longer or scalar input: only those are read). Tables are kept
        per function object, so passing the same ``fn`` again skips its interpolation."""
        read = self._read(ct, keys, self.unit, self.unit / 2 - 1,
                          lambda risk: f"each slot is read wrong with probability {risk:.2g} (a half-cell of "
                                       f"{self.unit // 2} units of t): fewer bits")
        return self._shaped(self._table(fn)(read), ct)

    def _read(self, ct, keys: BgvSlotBootstrapKeys, unit: int, tolerance: float, warning) -> BgvCiphertext:
        """Steps 1-3 up to the table: slot j's integer times ``unit`` (mod t), plus the read's
        error, in slot j of a fresh ciphertext; a warning (``warning(risk)``) when that error
        reaches ``tolerance`` with a probability above WARN_P_FAIL."""
        self._check_keys(keys)
        self._check_ciphertext(ct)
        mapped = self.reader.at_level_zero(ct, keys.galois,
                                           lambda level, correction: unit_factor(self.bgv, level, correction, unit))
        risk = tail_probability(self._read_variance(keys, mapped), tolerance)
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] {warning(risk)}")
        words = self.ring._lwe_words(mapped, keys.switch, self.reader.slot_map.positions)   # slot j's, mod Q
        return self.decryption.decrypt(words.astype(np.int64), keys.decryption)

    def _shaped(self, out: BgvCiphertext, ct) -> BgvCiphertext:
        # The values it holds: the input's, or the first count of a longer (or scalar) input.
        return out._set_shape(ct.shape if ct.shape and ct.shape[0] <= self.count else (self.count,))

    def _table(self, fn, bits: int | None = None, unit: int | None = None, *, wide: bool = False):
        """The table of ``fn`` read in cells of ``unit`` (``bits`` wide; this bootstrap's by
        default), or, ``wide``, over the whole of Z_t (:meth:`SlotDecryption.wide_table`); kept
        per function object and reading."""
        if not callable(fn):
            raise TypeError(f"[switching] a table takes a function (of a NumPy array of integers, or of one int), got "
                            f"{type(fn).__name__}")
        bits, unit = self.bits if bits is None else bits, self.unit if unit is None else unit
        key = (fn, "wide") if wide else (fn, bits, unit)
        table = self._tables.get(key)
        if table is None:
            if len(self._tables) >= KEPT_TABLES:  # the oldest goes: new lambdas each call must not pile up
                self._tables.pop(next(iter(self._tables)))
            table = self._tables[key] = (self.decryption.wide_table(fn) if wide
                                         else self.decryption.table(fn, bits, unit))
        return table

    def refresh(self, ct, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """The first ``count`` slots as they are (integers in [-2^bits, 2^bits)), in a fresh ciphertext."""
        return self.lut(ct, _identity, keys)

    def sign(self, ct, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """[x > 0] (1 or 0) per slot, x in [-2^bits, 2^bits)."""
        return self.lut(ct, _positive, keys)

    def compare(self, a, b, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """[a > b] (1 or 0) per slot for integers a, b in [0, 2^bits) (``b`` a ciphertext or an int)."""
        check_operands(self.bgv, self.bits, a, b, "compare reads")
        return self.sign(a - _operand(b), keys)

    def max(self, a, b, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """max(a, b) per slot for integers a, b in [0, 2^bits) (``b`` a ciphertext or an int):
        b + relu(a - b), one bootstrap of the difference. The result carries b's error beside
        the bootstrap's (refresh it when b is noisy)."""
        check_operands(self.bgv, self.bits, a, b, "max reads")
        return self.lut(a - _operand(b), _relu, keys) + _operand(b)

    def min(self, a, b, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """min(a, b) per slot, as :meth:`max`: a - relu(a - b), carrying a's error."""
        check_operands(self.bgv, self.bits, a, b, "min reads")
        return a - self.lut(a - _operand(b), _relu, keys)

    # ---- 16-bit integers: the whole of Z_t, read with the bootstrap's error ----------------

    def lut_wide(self, ct, fn, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """fn(x + e) mod t in each of the first ``count`` slots, x read signed in
        [-(t - 1)/2, (t - 1)/2] (all of Z_t: 16 bits under t = 65537), e the read's error, a
        few units (standard deviation :meth:`read_error`: about 8 at N = 2^15). For functions
        that a few units of their input barely move: a fixed-point number's sigmoid, a
        rescale (:meth:`rescale`), a sign away from 0. One bootstrap, as :meth:`lut`. Where
        fn's values do not sum to 0 mod t (an odd fn's do), the value at x = (t - 1)/2, where
        a signed read wraps, is given up to keep the table to 16 levels."""
        read = self._read(ct, keys, 1, math.inf, None)
        return self._shaped(self._table(fn, wide=True)(read), ct)

    def rescale(self, ct, shift: int, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """x / 2^shift rounded (halves away from 0) per slot, x read signed over all of Z_t:
        the fixed-point rescale after a product, in one bootstrap (:meth:`lut_wide`). The
        read's error e makes it (x + e) / 2^shift rounded: within one of x / 2^shift unless
        abs(e) reaches 2^(shift - 1), which warns above WARN_P_FAIL (shifts of 7 or more at
        N = 2^15: 1e-15)."""
        if not is_int(shift) or not 1 <= shift <= (self.t - 1).bit_length() - 2:
            raise ValueError(f"[switching] shift must be an int in [1, {(self.t - 1).bit_length() - 2}], got {shift!r}")
        half = 1 << (int(shift) - 1)
        read = self._read(ct, keys, 1, half,
                          lambda risk: f"the read's error reaches 2^{int(shift) - 1} = {half} units with probability "
                                       f"{risk:.2g}: a rescaled slot may be off by more than one (a larger shift)")
        return self._shaped(self._table(rounded_shift(int(shift)), wide=True)(read), ct)

    def refresh_wide(self, ct, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """The first ``count`` slots exactly as they are, any x in Z_t (16 bits), in a fresh
        ciphertext: two bootstraps. The first reads the high digit h = round((x + e) / 256)
        over all of Z_t; then x - 256 h, within 128 + abs(e) of 0 mod t whatever e was, is
        refreshed as :meth:`refresh` does 8-bit integers; out = 256 h + that, mod t. Wrong only
        where abs(e) reaches 127 in the first read or 63 in the second (about the 8-bit
        :meth:`failure_probability`: 6.5e-16 at N = 2^15)."""
        stages = self.reader.slot_map.levels + 1 if self.reader.slot_map.method == "staged" else 1
        if min(ct.level, self.bgv.max_level - self.levels) < stages:
            raise ValueError(f"[switching] refresh_wide reads its low digit at most {self.levels} levels below the top "
                             f"(level {self.bgv.max_level - self.levels}); the staged slot map of {self.count} slots "
                             f"runs at level {stages}: method='dense'")
        high = self._table(rounded_shift(8), wide=True)(self._read(
            ct, keys, 1, 127, lambda risk: f"the high digit's read errs by 127 or more with probability {risk:.2g}"))
        low = ct - high._set_shape(ct.shape) * 256
        unit = round(self.t / 512)
        low = self._table(_identity, 8, unit)(self._read(
            low, keys, unit, unit / 2 - 1, lambda risk: f"the low digit is read wrong with probability {risk:.2g}"))
        return self._shaped(high._set_shape(low.shape) * 256 + low, ct)

    def read_error(self, keys: BgvSlotBootstrapKeys) -> float:
        """The standard deviation of the read's error, in units of t, for a fresh input
        (:meth:`read_variance`): what :meth:`lut_wide` adds to x."""
        return math.sqrt(self.read_variance(keys))

    @property
    def tournament_rotations(self) -> list[int]:
        """The row rotations :meth:`max_of_slots` and :meth:`argmax_of_slots` take (the client
        makes their keys: ``ctx.galois_keys(sk, boot.tournament_rotations)``): count/2 .. 1,
        then -1 .. -count/2 to spread the largest over the window."""
        steps = [1 << i for i in range(self.count.bit_length() - 1)]
        return steps[::-1] + [-s for s in steps]

    def max_of_slots(self, ct, keys: BgvSlotBootstrapKeys, galois: GaloisKeys) -> BgvCiphertext:
        """The largest of slots 0 .. count - 1 (integers in [0, 2^bits)), in slot 0 (shape (1,)):
        a tournament of log2(count) :meth:`max` steps against the ciphertext rotated by count/2,
        ..., 1, one bootstrap each. ``galois``: the keys of :attr:`tournament_rotations`."""
        ev = self._rotator(galois)
        x = ct
        step = self.count // 2
        while step >= 1:
            x = self.max(x, ev.rotate(x, step), keys)
            step //= 2
        return x._set_shape((1,))

    def argmax_of_slots(self, ct, keys: BgvSlotBootstrapKeys, galois: GaloisKeys) -> BgvCiphertext:
        """1 in each of slots 0 .. count - 1 that holds the largest, 0 in the others (ties all
        read 1): :meth:`max_of_slots`, the largest spread over the window (a product with the
        first unit vector and log2(count) rotations), then one bootstrap of [x - largest + 1 > 0]."""
        ev = self._rotator(galois)
        largest = self.max_of_slots(ct, keys, galois)._set_shape(())
        first = np.zeros(self.bgv.slots, dtype=np.int64)
        first[0] = 1
        spread = ev.multiply_plain(largest, self.bgv.encode(first, level=largest.level))
        step = 1
        while step < self.count:
            spread = ev.add(spread, ev.rotate(spread, -step))
            step *= 2
        return self.lut(ct - spread._set_shape(ct.shape) + 1, _positive, keys)

    def _rotator(self, galois):
        if not isinstance(galois, GaloisKeys) or galois.context is not self.bgv:
            raise TypeError(f"[switching] expected this context's GaloisKeys for the tournament's rotations "
                            f"(ctx.galois_keys(sk, boot.tournament_rotations)), got {type(galois).__name__}")
        return self.bgv.evaluator(KeySet(galois=galois))

    def read_variance(self, keys: BgvSlotBootstrapKeys, ct=None) -> float:
        """The variance, in units of t, of the error with which a slot's integer is read: the
        ring switch's error and the rounding from q_0 to Q (scaled to t), the roundings from Q
        to t in dimension N', and, given the input at level 0 (after the slot map), its own
        error from its budget estimate."""
        self._check_keys(keys)
        return self._read_variance(keys, ct)

    def _read_variance(self, keys: BgvSlotBootstrapKeys, ct=None) -> float:
        N, Q = self.bgv.poly_degree, self.fhew.params.ring_modulus
        ring = (keys.switch.error_variance() + (1 + N * 2 / 3) / 12) * (self.t / Q) ** 2
        variance = ring + self.decryption.rounding_variance()
        if ct is not None:
            variance += 2.0 ** (-2 * (max(ct.noise_budget_estimate, 0.0) + 1))
        return variance

    def failure_probability(self, keys: BgvSlotBootstrapKeys, ct=None) -> float:
        """The probability that :meth:`lut` reads a slot in the wrong cell: the read's error
        (:meth:`read_variance`) against half a cell less a unit of t."""
        return tail_probability(self.read_variance(keys, ct), self.unit / 2 - 1)

    def _check_ciphertext(self, ct) -> None:
        if not isinstance(ct, BgvCiphertext) or ct.context is not self.bgv:
            raise TypeError(f"[switching] expected a ringfire.{self.bgv.scheme}.Ciphertext of this context, got "
                            f"{type(ct).__name__}")
        if ct.size != 2:
            raise ValueError(f"[switching] the ciphertext has {ct.size} polynomials: relinearize it first")
        self.reader.check_level(ct)


def _identity(m):
    return m


@functools.lru_cache(maxsize=None)
def rounded_shift(shift: int):
    """y -> y / 2^shift rounded, halves away from 0 (odd: its table keeps every point), as one
    function object per shift, so its table is interpolated once."""
    half = 1 << (shift - 1)

    def shifted(y):
        return np.sign(y) * ((np.abs(y) + half) >> shift)
    return shifted


def _positive(m):
    return (m > 0) * 1


def _relu(m):
    return np.maximum(m, 0)


def _operand(b):
    return int(b) if is_int(b) else b
