"""Functional bootstrapping of BGV/BFV slots: any function of the integers in a batched
ciphertext, and a fresh ciphertext out, in slots again.

Two switches (docs/switching.md, "Functional bootstrapping of slots"):

1. **Slots to FHEW** (:class:`ringfire.switching.BgvSlotsToFhew`): the first ``count``
   slots of row 0 into coefficients, a drop to level 0, the ring switch and FHEW's key
   switch: FHEW ciphertexts of ``bits``-bit integers (the slots read signed, in
   [-2^bits, 2^bits)).
2. **FHEW to slots through the table** (:class:`ringfire.switching.LweToSlots`, Liu and
   Wang's amortized functional bootstrap): the FHEW ciphertexts decrypted
   homomorphically into the slots of a fresh ciphertext, the table applied there as a
   polynomial over Z_t (16 levels for t = 65537).

No FHEW bootstrap runs: FHEW's LWE ciphertexts carry the values between the two, and all
the tables' work is the polynomial's, shared by every slot. The result's error is the
table's own, whatever the input's: slots 0 .. count - 1 hold fn(x_j) mod t, the others
fn(0). It sits 17 levels below the top; ``depth=19`` or more leaves room for products
before the next bootstrap (whose slot map needs a level above 0).
"""

from __future__ import annotations

import dataclasses
import struct

from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from .bgv_slots import BgvSlotsToFhew, BgvSlotsToFhewKey
from .key_bytes import open_key_bytes
from .lwe_to_slots import LweToSlots, LweToSlotsKey
from .to_fhew import check_fhew_context, check_secret_keys, is_int

_MAGIC = b"RFBGVSB1"
_LENGTHS = struct.Struct("<QQ")  # the way to FHEW's keys, the way back's
KEPT_TABLES = 8  # tables kept per bootstrap, by function (each is 2 t words)


@dataclasses.dataclass
class BgvSlotBootstrapKeys:
    """Both switches' public keys."""

    to_fhew: BgvSlotsToFhewKey
    to_slots: LweToSlotsKey

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Both keys (each in its own envelopes, authenticated with ``mac_key``) behind their lengths."""
        parts = [self.to_fhew.to_bytes(mac_key=mac_key), self.to_slots.to_bytes(mac_key=mac_key)]
        return _MAGIC + _LENGTHS.pack(*map(len, parts)) + b"".join(parts)


class BgvSlotBootstrap:
    """Any function of the first ``count`` slots of BGV/BFV ciphertexts, and a fresh
    ciphertext out (module docstring).

    Args:
        bgv: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` with t = 65537
            and the depth (``depth=19``: the table's 17 levels and two for what follows).
        fhew: a 32-bit :class:`ringfire.tfhe.Context` (STD128, STD128_LP, STD128_LUT) with its
            evaluation keys; its ring degree divides N.
        count: the slots read and written, a power of two from 1 to N / 2 (row 0).
        bits: the integers' width: tables read x in [-2^bits, 2^bits); at most 4 under
            t = 65537 (the switch's unit, round(t / 2^(bits + 1)), must stay exact enough).
        method: the slot map's (``"auto"``, ``"dense"``, ``"staged"``).
    """

    def __init__(self, bgv, fhew, *, count: int, bits: int, method: str = "auto"):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        check_fhew_context(fhew)
        self.to_slots = LweToSlots(bgv, fhew, bits=bits)       # t first: the table's prime
        self.to_fhew = BgvSlotsToFhew(bgv, fhew, count=count, bits=bits, method=method)
        self.bgv, self.fhew, self.count, self.bits = bgv, fhew, self.to_fhew.count, self.to_fhew.bits
        self._tables: dict = {}

    def __repr__(self) -> str:
        return (f"BgvSlotBootstrap({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.bgv.plain_modulus}, "
                f"count={self.count}, bits={self.bits}, through {self.fhew.params.name})")

    @property
    def levels(self) -> int:
        """The levels below the top a result sits at (the decryption and the table)."""
        return self.to_slots.levels

    def keygen(self, secret_key, fhew_secret_key) -> BgvSlotBootstrapKeys:
        """Both switches' public keys from the two secret keys (the client runs this). The slot
        map's Galois keys serve every level a bootstrapped result can be read from again."""
        check_secret_keys(self.bgv, secret_key, self.fhew, fhew_secret_key)
        level = max(1, self.bgv.max_level - self.levels)
        level = max(level, self.to_fhew.working_level(self.bgv.encrypt([0], secret_key)))
        return BgvSlotBootstrapKeys(self.to_fhew.keygen(secret_key, fhew_secret_key, level=level),
                                    self.to_slots.keygen(secret_key, fhew_secret_key))

    def load_keys(self, data: bytes, *, mac_key: bytes | None = None) -> BgvSlotBootstrapKeys:
        """The keys from ``keys.to_bytes()``: the lengths checked against the bytes first, then
        each part by its own loader."""
        data, (first, second), start = open_key_bytes(data, _MAGIC, _LENGTHS, "BgvSlotBootstrapKeys",
                                                      "ringfire BGV slot bootstrapping keys")
        if start + first + second != len(data) or not first or not second:
            raise ValueError(f"[switching] the keys' two parts declare {[first, second]} bytes behind a {start}-byte "
                             f"head; they hold {len(data)} bytes")
        return BgvSlotBootstrapKeys(self.to_fhew.load_key(bytes(data[start:start + first]), mac_key=mac_key),
                                    self.to_slots.load_key(bytes(data[start + first:]), mac_key=mac_key))

    def lut(self, ct, fn, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """fn(x) mod t in each of the first ``count`` slots, x read signed in [-2^bits, 2^bits)
        (``fn``: vectorized over a NumPy array, or a function of one int), fn(0) in the others;
        a fresh ciphertext :attr:`levels` below the top. Tables are kept per function object,
        so passing the same ``fn`` again skips its interpolation."""
        if not isinstance(keys, BgvSlotBootstrapKeys):
            raise TypeError(f"[switching] expected the BgvSlotBootstrapKeys from keygen, got {type(keys).__name__}")
        table = self._tables.get(fn)
        if table is None:
            if len(self._tables) >= KEPT_TABLES:  # the oldest goes: new lambdas each call must not pile up
                self._tables.pop(next(iter(self._tables)))
            table = self._tables[fn] = self.to_slots.table(fn)
        return self.to_slots(self.to_fhew(ct, keys.to_fhew), keys.to_slots, table)

    def refresh(self, ct, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """The first ``count`` slots as they are (integers in [-2^bits, 2^bits)), in a fresh ciphertext."""
        return self.lut(ct, _identity, keys)

    def sign(self, ct, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """[x > 0] (1 or 0) per slot, x in [-2^bits, 2^bits)."""
        return self.lut(ct, _positive, keys)

    def compare(self, a, b, keys: BgvSlotBootstrapKeys) -> BgvCiphertext:
        """[a > b] (1 or 0) per slot for integers a, b in [0, 2^bits) (``b`` a ciphertext or an int)."""
        self.to_fhew._check_operands(a, b, "compare reads")
        return self.sign(a - (int(b) if is_int(b) else b), keys)


def _identity(m):
    return m


def _positive(m):
    return (m > 0) * 1
