"""CKKS -> FHEW -> CKKS: lookup tables and comparisons that end in CKKS slots.

:class:`SchemeSwitch` pairs the two directions (ckks_to_fhew.py and
fhew_to_ckks.py) for one slot count: the slots go to FHEW, each output bit
of a table is one FHEW bootstrap per slot, and all the bits of all the slots
come back in one homomorphic LWE decryption (m * out_bits ciphertexts at once;
its cost hardly grows with their number). The bits are then summed with their
weights: out_bits - 1 rotations.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from .ckks_to_fhew import CkksToFhew, check_contexts
from .to_fhew import is_int
from .fhew_to_ckks import FhewToCkks
from .ring_switch import RingSwitchKey


@dataclasses.dataclass
class SwitchKeys:
    """The public keys of both directions: the ring switch, and the LWE secret encrypted under CKKS."""

    ring: RingSwitchKey
    secret: object  # a ringfire.ckks.Ciphertext, or a SmallRingKey (SchemeSwitch(ring_degree=...))


class SchemeSwitch:
    """Lookup tables and comparisons on CKKS slots through FHEW, results back in CKKS.

    Args:
        ckks: the :class:`ringfire.ckks.Context` (full packing, enough levels for
            the way back: ``depth``).
        fhew: the :class:`ringfire.tfhe.Context` the tables run on.
        slots: how many slots (a power of two, at most N' / 2).
        out_bits: the widest table output that comes back (slots * out_bits, rounded
            up to a power of two, must fit the LWE dimension rounded up: 1024 for STD128).
        ring_degree: the CKKS ring the way back runs in (:class:`FhewToCkks`), landing in the
            context's. Default: the smallest that holds the context's whole chain at its
            security (2^15 for a 2^16 context whose Q and P fit 881 bits, as fifteen 40-bit
            levels on a 60-bit q_0 with three 60-bit special primes do; 2^11, the least that
            holds the LWE secret, for a context without a security level), so results land
            where they would in the context's own ring, at about half the cost. The context's
            own ring where none does, where its chain is shorter than the way back's ``depth``,
            on a GPU, or with ``ring_degree=ckks.poly_degree``. :meth:`keygen` makes the small
            ring's keys (docs/switching.md).
    """

    def __init__(self, ckks, fhew, *, slots: int, out_bits: int = 1, ring_degree: int | None = None):
        check_contexts(ckks, fhew)
        if not is_int(out_bits) or out_bits < 1:
            raise ValueError(f"[switching] out_bits must be a positive int, got {out_bits!r}")
        self.to_fhew = CkksToFhew(ckks, fhew, slots=slots)
        period = 1 << (fhew.params.lwe_dimension - 1).bit_length()
        if slots * out_bits > period:
            raise ValueError(f"[switching] {slots} slots x {out_bits} output bits = {slots * out_bits} ciphertexts come "
                             f"back at once, more than the {period} the way back takes (the LWE dimension rounded up)")
        self.ckks, self.fhew, self.slots, self.out_bits = ckks, fhew, int(slots), int(out_bits)
        self.to_ckks = FhewToCkks(fhew, ckks, slots=1 << (self.slots * self.out_bits - 1).bit_length(),
                                  ring_degree="auto" if ring_degree is None else ring_degree)

    def __repr__(self) -> str:
        return f"SchemeSwitch(slots={self.slots}, out_bits={self.out_bits}, {self.to_fhew!r}, {self.to_ckks!r})"

    @property
    def depth(self) -> int:
        """Levels the way back takes from the encrypted secret's level (where results land)."""
        return self.to_ckks.depth

    def rotations(self) -> list[int]:
        """The CKKS rotations both directions and the weighted sum of the bits need."""
        combine = {i * self.slots for i in range(1, self.out_bits)}
        return sorted(set(self.to_fhew.rotations()) | set(self.to_ckks.rotations()) | combine)

    def keygen(self, ckks_secret_key, fhew_secret_key, keys, *, level: int | None = None) -> SwitchKeys:
        """Both public switching keys; the client runs this (``keys``: its CKKS KeySet, which must
        be ``ckks_secret_key``'s: a test value encrypted with it has to decrypt). The ring key
        records the encrypted secret's digest, so the two travel and load as a pair."""
        ring = self.to_fhew.keygen(ckks_secret_key, fhew_secret_key)
        try:
            probe = self.ckks.decrypt(self.ckks.encrypt(np.ones(1), keys), ckks_secret_key).real[0]
        except ValueError:
            probe = None
        if probe is None or abs(probe - 1.0) > 1e-3:
            raise ValueError("[switching] these CKKS keys are not the secret key's (a value encrypted with them does "
                             "not decrypt): pass the KeySet that came with it from ctx.keygen")
        secret = self.to_ckks.keygen(fhew_secret_key, keys, level=level, secret_key=ckks_secret_key)
        ring.secret_digest = hashlib.sha256(secret.to_bytes()).digest()
        return SwitchKeys(ring, secret)

    def load_keys(self, ring: bytes, secret: bytes, *, mac_key: bytes | None = None) -> SwitchKeys:
        """Both keys from their bytes (``key.ring.to_bytes()``, ``key.secret.to_bytes()``), checked
        against these contexts, the FHEW evaluation keys loaded here, and each other: what an
        evaluator in another process loads."""
        ring_key = self.to_fhew.load_key(ring, mac_key=mac_key)
        if not ring_key.secret_digest:
            # Nothing ties such a key to a secret, or the secret to the layout this way back reads
            # (an older ringfire's tiled one would decrypt wrong): only keygen's pairs load.
            raise ValueError("[switching] this switching key is bound to no encrypted LWE secret (made by "
                             "CkksToFhew.keygen, or by an older ringfire): load the pair SchemeSwitch.keygen makes")
        if ring_key.version == 1:
            raise ValueError("[switching] this switching key is bound to an encrypted LWE secret in the layout of an "
                             "older ringfire's way back, which this one would decrypt wrong: make both keys again "
                             "(SchemeSwitch.keygen)")
        if hashlib.sha256(bytes(secret)).digest() != ring_key.secret_digest:
            raise ValueError("[switching] this encrypted secret is not the one made with this switching key "
                             "(send key.secret.to_bytes() of the same keygen, unchanged)")
        return SwitchKeys(ring_key, self.to_ckks.load_key(secret))

    def compare(self, ev, a, b, key: SwitchKeys, *, bits: int, periodic: bool = False):
        """[a > b] per slot (1 or 0) in CKKS slots, for integers a, b in [0, 2^bits).
        ``periodic``: as :class:`CkksToFhew`."""
        _check_keys(key)
        return self._back(ev, [self.to_fhew.compare(ev, a, b, key.ring, bits=bits, periodic=periodic)], key)

    def lut(self, ev, ct, function, key: SwitchKeys, *, bits: int, out_bits: int | None = None,
            periodic: bool = False):
        """function(x) per slot in CKKS slots, for integers x in [0, 2^bits) and a
        function to [0, 2^out_bits) (default: this switch's out_bits): one FHEW
        bootstrap per slot and output bit. ``periodic``: as :class:`CkksToFhew`."""
        _check_keys(key)
        self.to_fhew.check_bits(bits)
        out_bits = self.out_bits if out_bits is None else int(out_bits)
        if not 1 <= out_bits <= self.out_bits:
            raise ValueError(f"[switching] out_bits must lie in [1, {self.out_bits}] (this switch's out_bits)")
        values = np.asarray([function(m) for m in range(1 << bits)] if callable(function) else function)
        if values.shape != (1 << bits,) or not np.issubdtype(values.dtype, np.integer) or values.min() < 0 \
                or values.max() >= 1 << out_bits:
            raise ValueError(f"[switching] the table must map the {1 << bits} inputs to integers in "
                             f"[0, 2^{out_bits}); got {values.dtype} values of shape {values.shape}")
        lwe = self.to_fhew(ev, ct, key.ring, bits=bits, periodic=periodic)
        return self._back(ev, self._bit_planes(lwe, values, bits, out_bits), key)

    def back(self, ev, lwe: LweCiphertext, key: SwitchKeys):
        """FHEW integers of up to ``out_bits`` bits (``slots`` of them, from any FHEW work: a
        table, arithmetic, a switch) as CKKS slots holding those integers. Their values must lie
        in [0, 2^bits): a sum past that sets FHEW's padding bit and comes back mod 2^bits, which
        this cannot see (``fhew.decrypt`` warns there). A 1-bit integer goes
        back as it is; a k-bit one is split into its bits first, one FHEW bootstrap per bit and
        slot (the tables (m >> i) & 1), and all the bits come back in one homomorphic LWE
        decryption. Lands ``depth`` levels below the encrypted secret, as :meth:`lut`."""
        _check_keys(key)
        if not isinstance(lwe, LweCiphertext):
            raise TypeError(f"[switching] expected ringfire.tfhe.Ciphertext, got {type(lwe).__name__}")
        if lwe.context is not self.fhew:
            raise ValueError("[switching] these FHEW ciphertexts belong to another context")
        if lwe.bits is None or lwe.bits > self.out_bits:
            held = "booleans (gate ciphertexts)" if lwe.bits is None else f"{lwe.bits}-bit integers"
            raise ValueError(f"[switching] this switch brings back integers of up to out_bits={self.out_bits} bits; "
                             f"these hold {held}" + (" (a lookup with out_bits=1 makes a bit an integer)"
                                                     if lwe.bits is None else ""))
        if lwe.size != self.slots:
            raise ValueError(f"[switching] expected {self.slots} FHEW ciphertexts (the switch's slots), got {lwe.size}")
        flat = LweCiphertext(self.fhew, lwe.data, (self.slots,), lwe.bits, lwe.variance)
        if lwe.bits == 1:
            return self._back(ev, [flat], key)
        return self._back(ev, self._bit_planes(flat, np.arange(1 << lwe.bits), lwe.bits, lwe.bits), key)

    def _bit_planes(self, lwe: LweCiphertext, values: np.ndarray, bits: int, out_bits: int) -> list[LweCiphertext]:
        """Bit i of values[x] for every element x of ``lwe`` (bits-bit integers), i < out_bits:
        one FHEW table, one bootstrap per element, per bit."""
        return [self.fhew.apply(self.fhew.lut((values >> i) & 1, bits=bits, out_bits=1), lwe)
                for i in range(out_bits)]

    def _back(self, ev, planes: list[LweCiphertext], key: SwitchKeys):
        """sum_i 2^i planes[i], each plane one bit per slot, as one CKKS ciphertext."""
        width = self.fhew.params.lwe_dimension + 1
        data = np.zeros((self.to_ckks.slots, width), dtype=np.uint32)  # unused rows: trivial zeros
        for i, plane in enumerate(planes):
            data[i * self.slots:(i + 1) * self.slots] = plane.data
        variance = max(plane.variance for plane in planes)
        stacked = LweCiphertext(self.fhew, data, (self.to_ckks.slots,), 1, variance)
        bits = self.to_ckks(ev, stacked, key.secret)
        total = bits
        for i in range(1, len(planes)):
            total = ev.add(total, ev.multiply_integer(ev.rotate(bits, i * self.slots), 1 << i))
        return total._set_shape((self.slots,))


def _check_keys(key) -> None:
    if not isinstance(key, SwitchKeys):
        raise TypeError(f"[switching] expected the SwitchKeys from SchemeSwitch.keygen (or load_keys), got "
                        f"{type(key).__name__}")
