"""Functional bootstrapping of BGV/BFV coefficients through FHEW.

A BGV or BFV ciphertext with t = 2^k holds ``count`` integers mod t at the
coefficients j N / count. Each goes to FHEW (bgv_to_fhew.py: one ring switch
for all of them), through one programmable bootstrap whose table is any
function of it, and back (fhew_to_bgv.py: the bootstraps' outputs packed into
one ciphertext at the same coefficients). The result is a fresh ciphertext at
the chosen level whatever the input's level and noise: with the identity table
this is a bootstrap of BGV/BFV (coefficient encoding); with a table, a lookup,
a sign, a comparison or a rescaling (floor division) in the same step.

Cost: one FHEW bootstrap per value, and on the BGV side count key switches and
count - 1 + log2(N / count) automorphisms (BENCHMARKS.md, "BGV/BFV functional
bootstrapping through FHEW").
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..tfhe.params import tail_probability
from .bgv_to_fhew import BgvToFhew
from .fhew_to_bgv import FhewToBgv, FhewToBgvKey
from .key_bytes import open_key_bytes
from .ring_switch import RingSwitchKey
from .to_torus import LweToTorus, TorusSwitchKey
from .to_fhew import is_int

_MAGIC = b"RFBGVFB1"
_LENGTHS = struct.Struct("<QQQ")  # the ring switch's, the way back's, the torus switch's (0: none)


@dataclasses.dataclass
class BgvFunctionalBootstrapKeys:
    """Both directions' public keys: the ring switch to FHEW, the way back's, and with a torus
    set for the last bootstrap, the switch there."""

    switch: RingSwitchKey
    back: FhewToBgvKey
    torus: TorusSwitchKey | None = None

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """The keys, each in its own envelopes (authenticated with ``mac_key``), behind their lengths."""
        parts = [self.switch.to_bytes(mac_key=mac_key), self.back.to_bytes(mac_key=mac_key),
                 b"" if self.torus is None else self.torus.to_bytes(mac_key=mac_key)]
        return _MAGIC + _LENGTHS.pack(*map(len, parts)) + b"".join(parts)


class BgvFunctionalBootstrap:
    """Any function of the integers in a BGV/BFV ciphertext's coefficients, and a fresh
    ciphertext out, through one FHEW bootstrap per integer.

    Args:
        bgv: the :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context`; its plaintext
            modulus t = 2^k (coefficient encoding), k - 1 at most log2(N') - 1.
        fhew: the :class:`ringfire.tfhe.Context` the bootstraps run on (STD128, STD128_LP or
            STD128_LUT, with its evaluation keys); its ring degree N' divides N and is smaller.
        count: the integers per ciphertext, a power of two up to N, at the coefficients
            j * N / count (:attr:`positions`; :meth:`encode` puts values there).
        level: the level results land at (default: the top).
        last: a 64-bit torus :class:`ringfire.tfhe.Context` (``STD128_T64_WIDE``) for the last
            bootstrap, with its evaluation keys: the integers go there from ``fhew``
            (:class:`LweToTorus`), and the results keep its far smaller error (a noise budget
            that survives products; docs/switching.md). Default: the last bootstrap on ``fhew``.

    Inputs are read as integers in [0, t / 2) by tables (a FHEW table's input has a padding
    bit: a value v >= t / 2 gives -f(v - t / 2), the bootstrap being negacyclic), and as
    signed integers in (-t / 2, t / 2) by :meth:`sign` and :meth:`compare`. Outputs are any
    integers mod t. Each result is wrong with the probability :meth:`failure_probability`
    gives (the last bootstrap's read of the switched value, and the way back's own error);
    each part warns above 2^-40.
    """

    def __init__(self, bgv, fhew, *, count: int, level: int | None = None, last=None):
        self.to_fhew = BgvToFhew(bgv, fhew)
        self.to_torus = None if last is None else LweToTorus(fhew, last)
        self.back = FhewToBgv(fhew if last is None else last, bgv, count=count, level=level)
        self.bgv, self.fhew, self.t, self.count = bgv, fhew, self.to_fhew.t, self.back.count
        self.bits = self.to_fhew.bits

    def __repr__(self) -> str:
        last = "" if self.to_torus is None else f", last bootstrap on {self.to_torus.torus.params.name}"
        return (f"BgvFunctionalBootstrap({self.bgv.scheme.upper()} N={self.bgv.poly_degree}, t={self.t}, "
                f"count={self.count}, level={self.back.level}, FHEW {self.fhew.params.name}{last})")

    @property
    def positions(self) -> np.ndarray:
        """The coefficients that hold the integers: j * N / count."""
        return self.back.positions

    @property
    def level(self) -> int:
        return self.back.level

    def encode(self, values):
        """A plaintext with ``values`` (ints mod t, ``count`` of them) at :attr:`positions`."""
        values = np.asarray(values)
        if values.shape != (self.count,) or not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"[switching] expected {self.count} integers, got shape {values.shape} of {values.dtype}")
        coefficients = np.zeros(self.bgv.poly_degree, dtype=np.int64)
        coefficients[self.positions] = values % self.t
        return self.bgv.encode_coefficients(coefficients)

    def decode(self, coefficients) -> np.ndarray:
        """The integers at :attr:`positions` of decrypted coefficients (``ctx.decrypt_coefficients``)."""
        return np.asarray(coefficients)[self.positions]

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, fhew_secret_key, last_secret_key=None) -> BgvFunctionalBootstrapKeys:
        """Both directions' public keys, from the secret keys (and the torus set's, with
        ``last``); the client runs this."""
        if self.to_torus is None:
            if last_secret_key is not None:
                raise ValueError("[switching] a third secret key is for a last bootstrap on a torus set (last=...)")
            return BgvFunctionalBootstrapKeys(self.to_fhew.keygen(secret_key, fhew_secret_key),
                                              self.back.keygen(secret_key, fhew_secret_key))
        if last_secret_key is None:
            raise ValueError("[switching] the last bootstrap runs on a torus set: keygen(sk, fhew_sk, torus_sk)")
        return BgvFunctionalBootstrapKeys(self.to_fhew.keygen(secret_key, fhew_secret_key),
                                          self.back.keygen(secret_key, last_secret_key),
                                          self.to_torus.keygen(fhew_secret_key, last_secret_key))

    def load_keys(self, data: bytes, *, mac_key: bytes | None = None) -> BgvFunctionalBootstrapKeys:
        """The keys from ``keys.to_bytes()``: the lengths checked against the bytes first, then
        each part by its own loader."""
        data, lengths, start = open_key_bytes(data, _MAGIC, _LENGTHS, "BgvFunctionalBootstrapKeys",
                                              "ringfire BGV functional-bootstrapping keys")
        if start + sum(lengths) != len(data) or 0 in lengths[:2]:
            raise ValueError(f"[switching] the keys' parts declare {list(lengths)} bytes behind a {start}-byte head; "
                             f"they hold {len(data)} bytes")
        if (lengths[2] == 0) != (self.to_torus is None):
            raise ValueError("[switching] these keys are for a last bootstrap " +
                             ("on a torus set; this one has none (last=...)" if lengths[2] else
                              "on the FHEW set; this one runs it on a torus set"))
        first, second = lengths[:2]
        switch = self.to_fhew.load_key(bytes(data[start:start + first]), mac_key=mac_key)
        back = self.back.load_key(bytes(data[start + first:start + first + second]), mac_key=mac_key)
        torus = None if self.to_torus is None else self.to_torus.load_key(bytes(data[start + first + second:]),
                                                                            mac_key=mac_key)
        return BgvFunctionalBootstrapKeys(switch, back, torus)

    def _check_keys(self, keys) -> None:
        if not isinstance(keys, BgvFunctionalBootstrapKeys):
            raise TypeError(f"[switching] expected the BgvFunctionalBootstrapKeys from keygen, got "
                            f"{type(keys).__name__}")

    # ---- the functions -----------------------------------------------------------

    def lut(self, ct, fn, keys: BgvFunctionalBootstrapKeys) -> BgvCiphertext:
        """fn(x) mod t for each integer x in [0, t / 2) at :attr:`positions`, in a fresh ciphertext
        at :attr:`level`. ``fn``: a function of an int, or its t / 2 values as an array."""
        return self.back._table(self._switched(ct, keys), keys.back, fn)

    def refresh(self, ct, keys: BgvFunctionalBootstrapKeys) -> BgvCiphertext:
        """The same integers (read in [0, t / 2)) in a fresh ciphertext at :attr:`level`: a
        bootstrap of BGV/BFV coefficients."""
        return self.back._table(self._switched(ct, keys), keys.back, None)

    def sign(self, ct, keys: BgvFunctionalBootstrapKeys) -> BgvCiphertext:
        """[x > 0] (1 or 0) for each x read as a signed integer in (-t / 2, t / 2)."""
        return self.back._positive(self._switched(ct, keys), keys.back)

    def compare(self, a, b, keys: BgvFunctionalBootstrapKeys) -> BgvCiphertext:
        """[a > b] (1 or 0) for integers a, b in [0, t / 2) (``b`` a ciphertext, or an int
        every value is compared with): the sign of a - b, exact mod t."""
        if is_int(b):
            if not 0 <= b < self.t // 2:
                raise ValueError(f"[switching] compare reads integers in [0, {self.t // 2}) (t / 2); got {b}")
            b = self.encode(np.full(self.count, int(b)))
        elif not isinstance(b, BgvCiphertext):
            raise TypeError(f"[switching] compare reads a ciphertext or an int second, got {type(b).__name__}")
        return self.sign(a - b, keys)

    def floor_divide(self, ct, divisor: int, keys: BgvFunctionalBootstrapKeys) -> BgvCiphertext:
        """floor(x / divisor) for each x in [0, t / 2): the rescaling of fixed-point values
        (divisor 2^f drops f fractional bits)."""
        if not is_int(divisor) or divisor < 1:
            raise ValueError(f"[switching] the divisor must be a positive int, got {divisor!r}")
        return self.lut(ct, lambda x: x // int(divisor), keys)

    def failure_probability(self, keys: BgvFunctionalBootstrapKeys, ct=None) -> float:
        """The probability that one integer comes out wrong: the error the last bootstrap reads
        past half a unit (q / 2t at its set's q: the switch to FHEW's, with ``last`` the move to
        the torus set's and that set's own first steps too), plus the way back's own
        (:meth:`FhewToBgv.failure_probability`). With ``ct``, for that input's noise; the switch
        to FHEW warns above 2^-40 by its own part."""
        self._check_keys(keys)
        x = None if ct is None else self.to_fhew.scaled(ct)  # as the switch reads it
        variance, q = self.to_fhew.error_variance(keys.switch, x), self.fhew.params.lwe_modulus
        if self.to_torus is not None:
            torus = self.to_torus.torus.params
            variance = (variance * (torus.lwe_modulus / q) ** 2 + self.to_torus.error_variance()
                        + torus.switch_variance())
            q = torus.lwe_modulus
        else:
            variance += self.fhew.params.switch_variance()
        return min(1.0, tail_probability(variance, q / (2 * self.t)) + self.back.failure_probability())

    def _switched(self, ct, keys):
        self._check_keys(keys)
        if not isinstance(ct, BgvCiphertext):
            raise TypeError(f"[switching] expected a ringfire.{self.bgv.scheme}.Ciphertext, got {type(ct).__name__}")
        self.to_fhew._check(ct, keys.switch, self.count)
        lwe = self.to_fhew._switch(ct, keys.switch, self.positions)  # warns for the read (its part)
        if self.to_torus is not None:
            lwe = self.to_torus(lwe, keys.torus)
        self.back._check_input(lwe, keys.back)
        return lwe
