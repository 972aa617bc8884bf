"""LWE ciphertexts decrypted into the slots of a BGV/BFV ciphertext, and the table that reads
them there: the half that every functional bootstrap into slots shares
(:class:`ringfire.switching.LweToSlots`, :class:`ringfire.switching.BgvSlotBootstrap`).

LWE ciphertexts (a_j, b_j) mod Q of dimension n under a secret s have phases
b_j - <a_j, s> mod Q. Under the plaintext modulus t (65537):

1. **Scale to t**: a'_j = round(a_j t / Q), b'_j = round(b_j t / Q). Then
   b'_j - <a'_j, s> = (t / Q)(b_j - <a_j, s>) + r_j mod t: the multiples of Q that the
   inner product wraps by become multiples of t, and r_j, the roundings (variance
   (1 + n E[s^2]) / 12), adds a few units of t.
2. **Decryption in the slots.** With s repeated along each row of slots with period P
   (the power of two at least n, zeros past n), rotating it left by k brings
   s_((p + k) mod P) to place p of a row, so slot j (place p) gets
   b'_j + sum_(k < P) D_k[j] rot(s, k)[j] with D_k[j] = -a'_(j, (p + k) mod P): P
   plaintext products in baby and giant steps (Halevi and Shoup), k = g B + b. The baby
   steps rot(s, b), b < B, are the key itself: the client encrypts each (seeded: half a
   ciphertext each on the wire) instead of sending their Galois keys; each giant step's
   B products are summed in one buffer (``multiply_plain_sum``). The giant steps run as
   Horner's rule, sum_g rot(x_g, g B) = x_0 + rot(x_1 + rot(x_2 + ..., B), B), with one
   Galois key. Slot j now holds the scaled phase exactly.
3. **The table** (ringfire.bgv.tables): the polynomial over Z_t that reads each scaled
   phase y as the integer m whose cell, m u wide (u: the unit), holds it, over the whole
   circle (m signed in [-2^bits, 2^bits): no padding bit needed, the polynomial is any
   function of Z_t), and returns f(m). Its value at one point half a cell from 0, where
   only an error that the failure probability already counts lands, is chosen so that the
   values sum to 0: the polynomial then has degree t - 2 = 65535 and takes 16 levels
   instead of 17.

The result's slot j holds f(m_j) mod t exactly (slots past the inputs read m = 0); its
error is the table's products' own, whatever the inputs'. Security: the key encrypts the
LWE secret under the BGV/BFV secret, the circular-security assumption every bootstrap makes.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np

from .. import _core
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..bgv.tables import SlotTable, check_fermat_prime, integer_results, table_values
from ..rlwe.keys import GaloisKeys, KeySet, RelinKey
from .key_bytes import load_key_part, open_key_bytes
from .to_fhew import is_int

_MAGIC = b"RFLWESL2"
_HEAD = struct.Struct("<32sII")  # the FHEW keys' id, the encrypted secrets, the parts after them
_LENGTH = struct.Struct("<Q")    # each part's length, after the head


@dataclasses.dataclass
class LweToSlotsKey:
    """The keys of a decryption into slots (public): the LWE secret repeated along the slots,
    rotated by 0 .. B - 1 and encrypted (the baby steps), the giant step's Galois key (none
    when one step covers the period), and the relinearization key of the table's products."""

    secrets: list
    galois: GaloisKeys | None
    relin: RelinKey
    fhew_key_id: bytes = bytes(32)

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """Each part in its own checksummed envelope (authenticated with ``mac_key``), behind
        their count and lengths."""
        parts = [ct.to_bytes(mac_key=mac_key) for ct in self.secrets]
        after = [self.relin] + ([self.galois] if self.galois is not None else [])
        parts += [key.to_bytes(mac_key=mac_key) for key in after]
        head = _HEAD.pack(self.fhew_key_id, len(self.secrets), len(after))
        return _MAGIC + head + b"".join(_LENGTH.pack(len(p)) for p in parts) + b"".join(parts)

    @property
    def keys(self) -> KeySet:
        return KeySet(relin=self.relin, galois=self.galois)


class SlotDecryption:
    """LWE ciphertexts mod ``modulus`` of ``dimension`` values into the slots of a BGV/BFV
    ciphertext under t = 65537 (module docstring, steps 1 and 2), and the tables that read
    them (step 3). ``fhew``: the FHEW context whose keys the secret comes from (checked
    against the key's id)."""

    def __init__(self, bgv, dimension: int, modulus: int, fhew):
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context first, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        t = int(bgv.plain_modulus)
        check_fermat_prime(t)
        if not bgv.can_batch:
            raise ValueError(f"[switching] t={t} cannot batch N={bgv.poly_degree} slots (t = 1 mod 2N is needed)")
        self.period = 1 << (int(dimension) - 1).bit_length()
        if self.period > bgv.poly_degree // 2:
            raise ValueError(f"[switching] the LWE secret ({dimension} values, repeated every {self.period} slots) "
                             f"does not fit a row of N/2 = {bgv.poly_degree // 2} slots")
        self.bgv, self.fhew, self.t, self.n, self.modulus = bgv, fhew, t, int(dimension), int(modulus)
        self.baby = 1 << math.ceil(math.log2(self.period) / 2)
        self.giant = self.period // self.baby

    @property
    def rotations(self) -> list[int]:
        """The row rotations the decryption takes Galois keys for: the giant step B, repeated
        (the baby steps are encrypted rotated)."""
        return [self.baby] if self.giant > 1 else []

    @property
    def levels(self) -> int:
        """The levels a decryption and a table take at most: one, then the table's 16."""
        return 1 + (self.t - 1).bit_length() - 1

    def check_bits(self, bits) -> int:
        limit = int(math.log2(self.t)) - 2
        if not is_int(bits) or not 1 <= bits <= limit:
            raise ValueError(f"[switching] bits must be an int in [1, {limit}], got {bits!r}")
        return int(bits)

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, secret: np.ndarray, key_id: bytes) -> LweToSlotsKey:
        """The keys for the LWE secret ``secret`` (n small integers) under ``secret_key``."""
        row = np.zeros(self.period, dtype=np.int64)
        row[:self.n] = secret
        repeated = np.tile(row, self.bgv.poly_degree // self.period) % self.t     # (2 N/2): both rows
        secrets = [self.bgv.encrypt(np.roll(repeated, -b), secret_key) for b in range(self.baby)]  # rot(s, b)
        galois = self.bgv.galois_keys(secret_key, self.rotations) if self.rotations else None
        relin = RelinKey(_core.generate_relin_key(secret_key._native, self.bgv._prng), self.bgv)
        return LweToSlotsKey(secrets, galois, relin, key_id)

    def load_key(self, data, *, mac_key: bytes | None = None) -> LweToSlotsKey:
        """The keys from ``key.to_bytes()``: the count and lengths checked against the bytes and
        against this decryption first, then each part by its own loader (envelope, checksum,
        parameters, kind)."""
        data, (key_id, secrets, after), start = open_key_bytes(data, _MAGIC, _HEAD, "LweToSlotsKey",
                                                               "a ringfire LWE-to-slots key")
        expected = (self.baby, 2 if self.rotations else 1)
        if (secrets, after) != expected:
            raise ValueError(f"[switching] the key holds {secrets} encrypted secrets and {after} keys; this switch "
                             f"takes {expected[0]} and {expected[1]}")
        count = secrets + after
        if len(data) < start + count * _LENGTH.size:
            raise ValueError(f"[switching] the key's {count} part lengths do not fit its {len(data)} bytes")
        lengths = [_LENGTH.unpack_from(data, start + i * _LENGTH.size)[0] for i in range(count)]
        offset = start + count * _LENGTH.size
        if offset + sum(lengths) != len(data) or not all(lengths):
            raise ValueError(f"[switching] the key's parts declare {sum(lengths)} bytes after a {offset}-byte head; it "
                             f"holds {len(data)} bytes")
        kinds = [("secret", BgvCiphertext)] * secrets + [("relinearization", RelinKey), ("Galois", GaloisKeys)][:after]
        parts = []
        for (name, kind), length in zip(kinds, lengths):
            parts.append(load_key_part(self.bgv, bytes(data[offset:offset + length]), kind,
                                       f"the LWE-to-slots key's {name} part", mac_key=mac_key))
            offset += length
        key = LweToSlotsKey(parts[:secrets], parts[secrets + 1] if after == 2 else None, parts[secrets],
                            fhew_key_id=bytes(key_id))
        self.check_key(key)
        return key

    def check_key(self, key) -> None:
        if not isinstance(key, LweToSlotsKey):
            raise TypeError(f"[switching] expected the LweToSlotsKey from keygen, got {type(key).__name__}")
        if len(key.secrets) != self.baby or (key.galois is None) != (not self.rotations):
            raise ValueError(f"[switching] these keys hold {len(key.secrets)} encrypted secrets; this switch takes "
                             f"{self.baby} and {'a' if self.rotations else 'no'} Galois key")
        if any(ct.context is not self.bgv for ct in key.secrets) or key.relin.context is not self.bgv or \
                (key.galois is not None and key.galois.context is not self.bgv):
            raise ValueError(f"[switching] these keys belong to another {self.bgv.scheme.upper()} context")
        if self.fhew.key_id is not None and any(key.fhew_key_id) and key.fhew_key_id != self.fhew.key_id:
            raise ValueError("[switching] these keys were made for other FHEW keys than this context's")
        if any(ct.size != 2 or ct.level != key.secrets[0].level for ct in key.secrets) or key.secrets[0].level < 1:
            raise ValueError("[switching] the encrypted secrets must be two-polynomial ciphertexts of one level above "
                             "level 0")

    # ---- the decryption and the tables -----------------------------------------------

    def rounding_variance(self, secret_square_mean: float = 2 / 3) -> float:
        """Step 1's roundings' variance, in units of t."""
        return (1 + self.n * secret_square_mean) / 12

    def decrypt(self, words: np.ndarray, key: LweToSlotsKey) -> BgvCiphertext:
        """Slot j: row j of ``words`` (count, n + 1: a, then b; mod the modulus) decrypted and
        scaled to t (steps 1-2)."""
        self.check_key(key)
        N, half, t = self.bgv.poly_degree, self.bgv.poly_degree // 2, self.t
        if words.ndim != 2 or words.shape[1] != self.n + 1 or len(words) > N:
            raise ValueError(f"[switching] expected at most {N} LWE ciphertexts of {self.n + 1} words, got the shape "
                             f"{words.shape}")
        # round(w t / Q) in float64: w t < 2^53 is exact, and the rounding of its quotient is
        # one of the two nearest integers either way (what step 1 assumes).
        scaled = np.floor(words * (t / self.modulus) + 0.5).astype(np.int64) % t
        count = len(scaled)
        a = np.zeros((N, self.period), dtype=np.int32)                    # rows past the inputs: 0
        a[:count, :self.n] = (-scaled[:, :self.n]) % t
        # Skewed: row j shifted left by j mod P, so that column k is the diagonal D_k
        # (P divides N/2: a slot's place in its row is j mod P too), one residue class of rows
        # at a time.
        for r in range(1, self.period):
            a[r::self.period] = np.roll(a[r::self.period], -r, axis=1)
        diagonals = np.ascontiguousarray(a.T)
        del a
        ev = self.bgv.evaluator(key.keys)
        babies = key.secrets                                              # rot(s, b), b < B
        level = babies[0].level
        out = None
        for g in reversed(range(self.giant)):                             # Horner: x_g + rot(..., B)
            plains = []
            for b in range(self.baby):
                diagonal = diagonals[g * self.baby + b].reshape(2, half)
                diagonal = np.roll(diagonal, g * self.baby, axis=1).reshape(-1)  # rot(D, -g B)
                plains.append(self.bgv.encode(diagonal, level=level))
            inner = ev.multiply_plain_sum(babies, plains)
            out = inner if out is None else ev.add(ev.rotate(out, self.baby), inner)
        b_values = np.zeros(N, dtype=np.int64)
        b_values[:count] = scaled[:, self.n]
        return ev.add_plain(out, self.bgv.encode(b_values, level=level))

    def table(self, fn, bits: int, unit: float) -> SlotTable:
        """The table that reads a scaled phase y as the m whose cell (``unit`` wide, m signed in
        [-2^bits, 2^bits)) holds it and returns fn(m) (vectorized over a NumPy array of m, or
        of one int); step 3."""
        y = np.arange(self.t, dtype=np.int64)
        cells = 2 << bits
        m = np.floor(y / unit + 0.5).astype(np.int64) % cells
        m = np.where(m >= cells // 2, m - cells, m)
        per_cell = integer_results(fn, np.arange(-cells // 2, cells // 2, dtype=np.int64))
        values = np.mod(per_cell[m + cells // 2], self.t).astype(np.int64)
        edge = int(round(unit / 2))                                       # half a cell from 0
        values[edge] = (values[edge] - int(values.sum())) % self.t        # the values sum to 0: degree t - 2
        return SlotTable(self.bgv, values, signed=False)

    def wide_table(self, fn) -> SlotTable:
        """The table that reads a scaled phase y itself, signed in [-(t - 1)/2, (t - 1)/2] (one
        unit per integer: the whole of Z_t, no cells), and returns fn(y). Where the values do
        not sum to 0 (an odd fn does), the one at y = (t - 1)/2, where a signed read wraps, is
        set so that they do: the table then keeps to 16 levels, as :meth:`table`'s does."""
        half = (self.t - 1) // 2
        values = table_values(fn, self.t, signed=True)
        values[half] = (values[half] - int(values.sum())) % self.t
        return SlotTable(self.bgv, values, signed=False)
