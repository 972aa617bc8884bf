"""The FHEW/TFHE context: keys, encryption, gates and lookup tables."""

from __future__ import annotations

import hashlib
import math
from typing import Callable

import numpy as np

from .. import _core
from .. import io as rf_io
from .._checks import warn_at_caller
from .ciphertext import Ciphertext
from .integer_parts import IntegerParts
from .integers import UInt
from .radix import RadixUInt, split_blocks
from . import radix as _radix
from .params import PRESETS, WARN_P_FAIL as _WARN_P_FAIL, ParameterSet, tail_probability, tail_probability_log2
from .sign import floor_failure_log2, shift_right, sign, sign_failure_log2
from .wide_radix import from_radix, from_radix_failure_log2, to_radix, to_radix_failure_log2
from . import torus_bytes
from .torus_params import TorusParameterSet

# The widest integers the torus sets encrypt in one ciphertext (signs, floors and sums;
# tables read at most log2(N) - 1 bits): a fresh one keeps its error below 2^17 of 2^64, and
# ctx.sign / ctx.shift_right warn where a width fails too often for the set.
_WIDE_BITS = 32

def _check_even(bits: int) -> None:
    """Radix blocks hold two bits each."""
    if bits % 2:
        raise ValueError(f"radix blocks hold two bits: an even width, got {bits} bits (add one bit of room: "
                         f"encrypt with bits={bits + 1})")


def _refuse_or_warn(log2_p: float, message: Callable[[str, bool], str]) -> None:
    """What a wide operation does with its predicted failure probability: nothing up to
    2^-40, a warning above, and a refusal where most elements would fail (1/2 or more).
    ``message(probability, refused)`` words it."""
    if log2_p <= math.log2(_WARN_P_FAIL):
        return
    p = f"{2.0 ** log2_p:.2g}" if log2_p > -10 else f"2^{log2_p:.1f}"
    if log2_p >= -1:
        raise ValueError(message(p, True))
    warn_at_caller(message(p, False))


def _check_shift(bits: int, shift) -> None:
    """A floor's shift: an int that leaves at least one of the integer's bits."""
    if bits < 2:
        raise ValueError(f"a {bits}-bit integer has no low bits to shift away")
    if not isinstance(shift, (int, np.integer)) or isinstance(shift, (bool, np.bool_)):
        raise TypeError(f"shift must be an int in [1, {bits - 1}] for {bits}-bit integers, got {shift!r}")
    if not 0 < shift < bits:
        raise ValueError(f"shift must be an int in [1, {bits - 1}] for {bits}-bit integers, got {shift!r}")


# Boolean encoding: 1 -> +q/8, 0 -> -q/8; a bootstrap with the constant test
# vector Q/8 returns +q/8 for a phase in [0, q/2) and -q/8 above (negacyclic).
# Each gate is a linear combination of its inputs, then that bootstrap:
# the combination lands at +-q/8 (or further from the two boundaries 0 and
# q/2), so errors below q/8 decide correctly (XOR and XNOR double their
# inputs and land at +-q/4).
_GATES = {
    # name: (coefficient of each input, constant in units of q/8)
    "and": (1, -1), "or": (1, 1), "nand": (-1, 1), "nor": (-1, -1),
    "xor": (2, 2), "xnor": (-2, -2),
}
# Three inputs, one bootstrap: the sum of three +-q/8 is +-q/8 or +-3q/8, so
# its sign is the majority; twice the sum, negated, lands at +q/4 for an odd
# number of ones and at -q/4 (mod q) for an even one: parity (the full
# adder's sum). Each lands q/8 (majority) or q/4 (parity, with doubled
# errors) from the nearest decision boundary.
_GATES3 = {"maj": (1, 0), "xor3": (-2, 0)}


_SECRET_MAGIC = b"RFTFHESK1"


class SecretKey:
    """The client's secrets (LWE and ring), tied to the evaluation keys made
    with them (``key_id``: a hash of their public seeds). The evaluation keys a
    server needs are generated from it by :meth:`Context.keygen`."""

    def __init__(self, context: "Context", native: _core.TfheSecretKey, key_id: bytes):
        self.context = context
        self._native = native
        self.key_id = key_id

    def __reduce__(self):
        raise TypeError("a ringfire.tfhe.SecretKey is not picklable: it holds the client's secrets "
                        "(sk.to_bytes(password=...) seals it)")

    def to_bytes(self, *, password=None, mac_key: bytes | None = None, scrypt_log_n: int = 17) -> bytes:
        """The key for a later session (``Context.load_secret_key``). With
        ``password`` it is encrypted (scrypt + ChaCha20-Poly1305,
        :func:`ringfire.io.seal_secret`); without one the bytes decrypt
        everything, and this warns."""
        raw = _SECRET_MAGIC + self.context._native_params.identity + self.key_id + self._native.secret_bytes()
        if password is None:
            warn_at_caller("[tfhe.SecretKey] serialized without a password: anyone who reads these bytes decrypts "
                           "everything; pass password=... to encrypt them")
            return rf_io.wrap(raw, mac_key)
        return rf_io.wrap(rf_io.seal_secret(raw, password, scrypt_log_n=scrypt_log_n), mac_key)

    def __repr__(self) -> str:
        return f"tfhe.SecretKey({self.context.params.name})"


class LookupTable:
    """A function of a ``bits``-bit message evaluated by one programmable
    bootstrap (:meth:`Context.lut`). Call it on a :class:`Ciphertext`."""

    def __init__(self, context: "Context", values: np.ndarray, bits: int, out_bits: int):
        self.context, self.values, self.bits, self.out_bits = context, values, bits, out_bits
        self.test_vector = context._test_vector(values, bits, out_bits)

    def __call__(self, x: Ciphertext) -> Ciphertext:
        return self.context.apply(self, x)

    def __repr__(self) -> str:
        return f"tfhe.LookupTable({self.bits} -> {self.out_bits} bits: {self.values.tolist()})"


def _outputs_per_rotation(tables: int) -> int:
    """Outputs a many-LUT rotation reads for ``tables`` tables: the count rounded up to a
    power of two (the input's phase is rounded to a multiple of it)."""
    return 1 << (tables - 1).bit_length()


class ManyLookupTable:
    """Several functions of one ``bits``-bit message from one blind rotation
    (:meth:`Context.lut_many`): calling it returns one ciphertext per function."""

    def __init__(self, context: "Context", values: np.ndarray, bits: int, out_bits: int):
        self.context, self.values, self.bits, self.out_bits = context, values, bits, out_bits
        self.group = _outputs_per_rotation(len(values))
        self.test_vector = context._many_test_vector(values, self.group, bits, out_bits)

    def __call__(self, x: Ciphertext) -> tuple[Ciphertext, ...]:
        return self.context.apply_many(self, x)

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"tfhe.ManyLookupTable({len(self.values)} tables, {self.bits} -> {self.out_bits} bits)"


class Context:
    """FHEW/TFHE over a parameter set (:data:`PRESETS` or a :class:`ParameterSet`).

    ::

        ctx = rf.tfhe.Context.preset("STD128")
        sk = ctx.keygen()                        # also builds the evaluation keys
        a, b = ctx.encrypt([1, 0, 1], sk), ctx.encrypt([1, 1, 0], sk)
        print(ctx.decrypt(~(a & b), sk))         # NAND: [0 1 1]

    Gates take ciphertexts of any shape and bootstrap every element (on all
    the library's threads). Integers of ``bits`` bits (``ctx.encrypt(v, sk,
    bits=3)``) go through lookup tables: ``ctx.lut(lambda m: m * m % 8,
    bits=3)(x)``.
    """

    def __init__(self, params: ParameterSet | str = "STD128", *, insecure: bool = False):
        if isinstance(params, str):
            if params not in PRESETS:
                raise ValueError(f"unknown tfhe parameter set {params!r}; the presets are {sorted(PRESETS)}")
            params = PRESETS[params]
        if not isinstance(params, (ParameterSet, TorusParameterSet)):
            raise TypeError(f"params must be a preset name, a ringfire.tfhe.ParameterSet or a TorusParameterSet, "
                            f"got {type(params).__name__}")
        # A claim holds only for the presets as published: a set made or
        # altered by hand (dataclasses.replace of a preset included) has none.
        claimed = params.security is not None and PRESETS.get(params.name) == params
        if not claimed:
            if not insecure:
                raise ValueError(f"tfhe parameter set {params.name!r} has no security claim (a test set, or one "
                                 f"you made or changed: only the presets as published carry one): pass "
                                 f"insecure=True to use it anyway")
            warn_at_caller(f"[tfhe.Context] parameter set {params.name!r} is insecure (insecure=True): for tests only")
        self.params = params
        self._native_params = params.native()
        # The engine: 32-bit words mod q = 2N (FHEW order, NTT), or 64-bit words
        # mod 2^64 under the big key (KS-PBS order, FFT). Linear operations run
        # in wrapping uint64 arithmetic and are masked to the word modulus, a
        # power of two either way.
        self._torus = isinstance(params, TorusParameterSet)
        self._word_modulus = 1 << 64 if self._torus else params.lwe_modulus
        self._mask = np.uint64(self._word_modulus - 1)
        self._dtype = np.uint64 if self._torus else np.uint32
        self._native_key_class = _core.TfheTorusSecretKey if self._torus else _core.TfheSecretKey
        self._bootstrapper = None
        self._key_id: bytes | None = None  # the evaluation keys' (None: none yet)
        self._prng = _core.Prng.from_os()  # encryption randomness: always the OS's
        self.threads = 0  # 0: the library's thread count (ringfire.parallel)

    def __reduce__(self):
        raise TypeError("a ringfire.tfhe.Context is not picklable: make one with Context.preset(name) on the other "
                        "side and move the keys with save_evaluation_keys() / load_evaluation_keys()")

    key_id = property(lambda self: self._key_id,
                      doc="The evaluation keys' identity (a hash of their public seeds; None: no keys yet): "
                          "what keys made from the same secret key carry, as SecretKey.key_id does.")

    @classmethod
    def preset(cls, name: str, *, insecure: bool = False) -> "Context":
        return cls(name, insecure=insecure)

    def __repr__(self) -> str:
        p = self.params
        ring = "torus 2^64" if self._torus else f"log2 Q={p.ring_modulus_bits}"
        return (f"tfhe.Context({p.name}: n={p.lwe_dimension}, N={p.ring_dimension}, {ring}, "
                f"security={'none' if p.security is None else p.security})")

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, *, insecure_deterministic_seed: bytes | int | None = None) -> SecretKey:
        """A fresh secret key; the evaluation keys (bootstrapping and key
        switching) are generated from it and kept by this context."""
        if insecure_deterministic_seed is None:
            prng = _core.Prng.from_os()
        else:
            # The keys only: encryptions stay OS-seeded (equal randomness in
            # two encryptions would reveal their messages' difference).
            warn_at_caller("[tfhe.Context] deterministic keys (insecure_deterministic_seed) are for tests only")
            seed = insecure_deterministic_seed
            if isinstance(seed, int):
                seed = hashlib.sha256(seed.to_bytes(16, "little", signed=True)).digest()
            prng = _core.Prng.from_seed(bytes(seed))
        native = self._native_key_class(self._native_params, prng)
        engine = _core.TfheTorusBootstrapper if self._torus else _core.TfheBootstrapper
        self._bootstrapper = engine(native, prng)
        self._key_id = self._bootstrapper.key_id
        return SecretKey(self, native, self._key_id)

    def load_secret_key(self, data: bytes, *, password=None, mac_key: bytes | None = None) -> SecretKey:
        """A key saved by ``SecretKey.to_bytes`` under these parameters."""
        raw = rf_io.unwrap(bytes(data), mac_key, password=password)
        identity = self._native_params.identity
        head = len(_SECRET_MAGIC)
        if not raw.startswith(_SECRET_MAGIC):
            raise ValueError("not a ringfire.tfhe secret key")
        if raw[head:head + 32] != identity:
            raise ValueError("this secret key was made under different tfhe parameters")
        key_id = raw[head + 32:head + 64]
        native = self._native_key_class.from_secret_bytes(self._native_params, raw[head + 64:])
        return SecretKey(self, native, key_id)

    def save_evaluation_keys(self, *, mac_key: bytes | None = None, compress: int | None = None) -> bytes:
        """The evaluation keys a server needs (bootstrapping and key switching),
        seeded: half their size in memory (27 MB for STD128), or a third (30 MB
        for STD128_T64: the bootstrapping key's B polynomials, the key switch's
        bodies and two seeds). Authenticated
        with ``mac_key`` (:func:`ringfire.io.new_mac_key`), zstd-compressed at
        level ``compress``."""
        keys = self._require_keys()
        if self._torus:
            raw = torus_bytes.pack_keys(self._native_params.identity, *keys.seeded_parts())
            return rf_io.wrap(raw, mac_key, compress)
        return rf_io.wrap(keys.save(), mac_key, compress)

    def _torus_key_words(self) -> tuple[int, int]:
        """Body words of a torus set's bootstrapping and key-switching keys."""
        p = self.params
        return p.bootstrap_key_count * 2 * p.pbs_levels * p.ring_dimension, p.ring_dimension * p.ks_levels

    def _load_torus_keys(self, data: bytes, mac_key) -> None:
        bsk_words, ksk_words = self._torus_key_words()
        raw = rf_io.unwrap(bytes(data), mac_key, max_size=torus_bytes.keys_size(bsk_words, ksk_words) + 4096)
        bsk_seed, ksk_seed, bsk, ksk = torus_bytes.unpack_keys(raw, self._native_params.identity, bsk_words, ksk_words,
                                                               self.params.name)
        self._bootstrapper = _core.TfheTorusBootstrapper.from_keys(self._native_params, bsk_seed, bsk, ksk_seed, ksk)

    def load_evaluation_keys(self, data: bytes, *, mac_key: bytes | None = None) -> None:
        """Installs evaluation keys saved by :meth:`save_evaluation_keys` under
        these parameters (a server's context: it never sees the secret key).
        Malformed, foreign or tampered bytes raise ValueError."""
        if self._torus:
            self._load_torus_keys(data, mac_key)
            self._key_id = self._bootstrapper.key_id
            return
        bound = 2 * 4 * self.params.lwe_dimension * 2 * 2 * self.params.gadget_digits * self.params.ring_dimension
        raw = rf_io.unwrap(bytes(data), mac_key, max_size=bound + (64 << 20))
        self._refuse_torus_bytes(raw, "evaluation keys")
        self._bootstrapper = _core.tfhe_load_evaluation_keys(self._native_params, raw)
        self._key_id = self._bootstrapper.key_id

    def load(self, data: bytes, *, mac_key: bytes | None = None):
        """A :class:`~ringfire.tfhe.Ciphertext`, :class:`~ringfire.tfhe.UInt` or :class:`~ringfire.tfhe.RadixUInt`
        saved by its ``to_bytes``."""
        raw = rf_io.unwrap(bytes(data), mac_key)
        key_id = self._key_id
        if self._torus:
            made_under, encoding, bits, shape, words = torus_bytes.unpack_ciphertexts(
                raw, self._native_params.identity, self.params.ciphertext_dimension + 1)
            if made_under is not None and self._key_id is not None and made_under != self._key_id:
                raise ValueError("these ciphertexts were made under other evaluation keys than this context holds "
                                 "(their key id differs): results would decrypt to garbage")
            key_id = made_under or key_id
        else:
            self._refuse_torus_bytes(raw, "ciphertexts")
            encoding, bits, shape, words = _core.tfhe_load_ciphertexts(self._native_params, raw)
        if encoding in (UInt._ENCODING, RadixUInt._ENCODING):
            kind = UInt if encoding == UInt._ENCODING else RadixUInt
            return kind.from_words(self, words, shape, bits, key_id)
        if encoding != 0:
            self._check_int_bits(bits)  # a 32-bit set's tables, or a torus set's widest integers
        ct = Ciphertext(self, words, shape, None if encoding == 0 else bits)
        ct.key_id = key_id
        return ct

    def _save(self, words: np.ndarray, shape: tuple, encoding: int, bits: int, mac_key, compress,
              key_id: bytes | None = None) -> bytes:
        if self._torus:
            made_under = key_id if key_id is not None else self._key_id
            raw = torus_bytes.pack_ciphertexts(self._native_params.identity, made_under, encoding, bits, shape, words)
            return rf_io.wrap(raw, mac_key, compress)
        blob = _core.tfhe_save_ciphertexts(self._native_params, encoding, bits, list(shape),
                                           np.ascontiguousarray(words, dtype=np.uint32))
        return rf_io.wrap(blob, mac_key, compress)

    def _refuse_torus_bytes(self, raw: bytes, what: str) -> None:
        if torus_bytes.is_torus(raw):
            raise ValueError(f"these are 64-bit torus {what} (STD128_T64 and its kind): load them with a torus "
                             f"set's context, not {self.params.name}'s")

    @property
    def isa(self) -> str:
        """The vector instructions the bootstraps run on: ``"avx512"``, ``"avx2"`` or ``"scalar"``
        (the CPU's best, or ``RINGFIRE_TFHE_ISA`` when the keys were made or loaded; the torus
        sets' transforms take AVX-512 where their ring fits it, N = 2048). Every path computes
        the same bits; this says which one the timings are of."""
        return self._require_keys().isa

    @property
    def evaluation_key_bytes(self) -> dict[str, int]:
        """Bytes of the evaluation keys in memory, by kind."""
        b = self._require_keys()
        return {"bootstrap": b.bootstrap_key_bytes, "key_switch": b.key_switch_key_bytes}

    # ---- encryption ----------------------------------------------------------------

    def encrypt(self, values, secret_key: SecretKey, *, bits: int | None = None) -> Ciphertext:
        """Booleans (``bits=None``) or integers in [0, 2^bits), any shape."""
        self._check_key(secret_key)
        arr = np.asarray(values)
        phases = self._encode(arr, bits)
        data = secret_key._native.encrypt(phases.reshape(-1), self._prng)
        return Ciphertext(self, data, arr.shape, bits, self.params.fresh_variance())

    def trivial(self, values, *, bits: int | None = None) -> Ciphertext:
        """Public constants as noiseless ciphertexts (a = 0)."""
        arr = np.asarray(values)
        phases = self._encode(arr, bits).reshape(-1)
        data = np.zeros((phases.size, self.params.ciphertext_dimension + 1), dtype=self._dtype)
        data[:, -1] = phases
        return Ciphertext(self, data, arr.shape, bits, 0.0)

    def encrypt_uint(self, values, secret_key: SecretKey, *, bits: int) -> UInt:
        """Unsigned integers of ``bits`` bits (up to 64), any shape: one gate
        ciphertext per bit (:class:`~ringfire.tfhe.UInt`)."""
        arr = self._check_uint(values, bits)
        planes = self.encrypt(np.stack([(arr >> i) & 1 for i in range(bits)]).astype(bool), secret_key)
        return UInt(self, [planes[i] for i in range(bits)])

    def trivial_uint(self, values, *, bits: int) -> UInt:
        """Public integers as noiseless :class:`~ringfire.tfhe.UInt` (operands of mixed expressions)."""
        arr = self._check_uint(values, bits)
        planes = self.trivial(np.stack([(arr >> i) & 1 for i in range(bits)]).astype(bool))
        return UInt(self, [planes[i] for i in range(bits)])

    def encrypt_radix(self, values, secret_key: SecretKey, *, bits: int) -> RadixUInt:
        """Unsigned integers of ``bits`` bits (even, up to 64), any shape, as radix-4 blocks
        (:class:`~ringfire.tfhe.RadixUInt`; torus sets): half the bootstraps of
        :meth:`encrypt_uint`'s bit planes for additions and comparisons."""
        arr = self._check_radix(values, bits)
        blocks = self.encrypt(np.stack(split_blocks(arr, bits)), secret_key, bits=_radix.SPACE_BITS)
        return RadixUInt(self, [blocks[i] for i in range(bits // _radix.BLOCK_BITS)])

    def trivial_radix(self, values, *, bits: int) -> RadixUInt:
        """Public integers as noiseless :class:`~ringfire.tfhe.RadixUInt` (operands of mixed expressions)."""
        arr = self._check_radix(values, bits)
        blocks = self.trivial(np.stack(split_blocks(arr, bits)), bits=_radix.SPACE_BITS)
        return RadixUInt(self, [blocks[i] for i in range(bits // _radix.BLOCK_BITS)])

    def _check_radix(self, values, bits: int) -> np.ndarray:
        if not self._torus:
            raise ValueError(f"radix integers need a 64-bit torus set (STD128_T64, STD128_T64_MB): "
                             f"{self.params.name}'s 4-bit tables fail too often (use encrypt_uint)")
        if not isinstance(bits, (int, np.integer)) or bits % 2 or not 2 <= bits <= 64:
            raise ValueError(f"radix integers have an even number of bits in [2, 64], got {bits!r}")
        return self._check_uint(values, bits)

    def _check_uint(self, values, bits: int) -> np.ndarray:
        if not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 64:
            raise ValueError(f"bits must be an int in [1, 64], got {bits!r}")
        arr = np.asarray(values)
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.integer):
            if not all(isinstance(v, (int, np.integer)) for v in arr.reshape(-1)):
                raise ValueError(f"integers expected, got dtype {arr.dtype}")
        if arr.size and (min(int(v) for v in arr.reshape(-1)) < 0 or max(int(v) for v in arr.reshape(-1)) >= 1 << bits):
            raise ValueError(f"{bits}-bit unsigned integers must lie in [0, 2^{bits} - 1]")
        return arr.astype(np.uint64)

    def decrypt(self, ct: Ciphertext | UInt | RadixUInt, secret_key: SecretKey) -> np.ndarray:
        """The messages: a bool array, or integers in [0, 2^bits). Warns when
        an integer's padding bit is set (it overflowed past 2^bits or went
        below zero, so a lookup table on it would have been wrong)."""
        self._check_key(secret_key)
        if isinstance(ct, IntegerParts):
            if ct.context is not self:
                raise ValueError("these integers belong to another tfhe context")
            out = np.zeros(ct.shape, dtype=np.uint64)
            for i, part in enumerate(ct.parts):
                out |= self.decrypt(part, secret_key).astype(np.uint64) << np.uint64(ct.PART_BITS * i)
            return out
        self._check_ct(ct)
        if ct.key_id is not None and ct.key_id != secret_key.key_id:
            raise ValueError("this ciphertext was made under evaluation keys of another secret key: it would decrypt "
                             "to garbage")
        phases = secret_key._native.phases(ct.data)[0].astype(np.uint64)
        if ct.bits is None:
            return (phases < np.uint64(self._word_modulus // 2)).reshape(ct.shape)
        p = 1 << ct.bits
        step = np.uint64(self._word_modulus // (2 * p))  # one message unit; rounded to the nearest
        m = (((phases + step // np.uint64(2)) & self._mask) // step).astype(np.int64) % (2 * p)
        over = m >= p
        if over.any():
            warn_at_caller(f"[tfhe.decrypt] {int(over.sum())} of {m.size} integers have their padding bit set "
                           f"(past 2^{ct.bits} - 1 or below 0): the values shown are mod 2^{ct.bits}")
        return (m % p).reshape(ct.shape)

    def bootstrap_to_ring(self, x: Ciphertext, outputs) -> np.ndarray:
        """Bootstraps that end under the ring secret: for each integer of ``x`` (``bits`` wide,
        read as a table reads it), the word ``outputs[m]`` of its value m, as an LWE ciphertext
        of dimension N under the ring secret z: a (count, N + 1) array (a, then b) whose only
        error is the blind rotation's. On the 32-bit sets the words are mod Q, the ring prime
        (uint32), and the bootstrap stops before its key switch (variance
        ``params.noise_terms()["blind_rotation"]`` at q); on the 64-bit torus sets they are mod
        2^64 (uint64), which is where their bootstraps end anyway (KS-PBS; variance
        ``params.bootstrap_variance()`` at q). The way back into BGV/BFV starts there
        (:class:`ringfire.switching.FhewToBgv`)."""
        self._check_ct(x)
        if x.bits is None:
            raise ValueError("bootstrap_to_ring reads integers (bits=...), not booleans")
        p = 1 << x.bits
        modulus = 1 << 64 if self._torus else self.params.ring_modulus
        outputs = np.asarray(outputs, dtype=object if self._torus else None)
        if outputs.shape != (p,) or not all(isinstance(v, (int, np.integer)) and 0 <= v < modulus for v in outputs):
            raise ValueError(f"outputs must be {p} integer words in [0, {'2^64' if self._torus else f'Q={modulus}'}) "
                             f"(one per {x.bits}-bit input), got shape {outputs.shape}")
        test_vector = self._spread(np.array([int(v) for v in outputs], dtype=self._dtype), x.bits)
        data = self._half_slot_up(x.data.reshape(-1, x.data.shape[-1]), p)
        if self._torus:
            return self._bootstrap(data, test_vector)
        return self._require_keys().bootstrap_to_ring(np.ascontiguousarray(data, dtype=np.uint32), test_vector,
                                                      self.threads)

    def from_ring_lwe(self, words, *, bits: int | None, variance: float) -> Ciphertext:
        """Gate ciphertexts from LWE ciphertexts of dimension N under the ring
        secret z, mod Q (a (count, N + 1) uint32 array: a, then b), as another
        scheme's ring leaves them after switching to this ring's secret
        (:mod:`ringfire.switching`): the bootstrap's own last steps (Q -> Q_ks,
        the key switch to the LWE secret, Q_ks -> q). ``variance``: their error's
        at q, after these steps."""
        if self._torus:
            raise ValueError(f"scheme switching lands on the 32-bit sets (STD128, STD128_LP, STD128_LUT), not on "
                             f"the 64-bit torus set {self.params.name}")
        if bits is not None:
            self._check_bits(bits)
        data = self._require_keys().switch_ring_lwe(np.ascontiguousarray(words, dtype=np.uint32))
        return Ciphertext(self, data, (len(data),), bits, float(variance))

    # ---- gates ---------------------------------------------------------------------

    def gate(self, name: str, x: Ciphertext, y: Ciphertext) -> Ciphertext:
        """One of and, or, nand, nor, xor, xnor on boolean ciphertexts of
        the same shape (or one a broadcastable constant), one bootstrap per
        element."""
        if name not in _GATES:
            raise ValueError(f"unknown gate {name!r}; the gates are {sorted(_GATES)} (and not_, mux)")
        x, y = self._bool_operand(x), self._bool_operand(y)
        if x.shape != y.shape:
            raise ValueError(f"tfhe.{name}: shapes {x.shape} and {y.shape} differ")
        return self._gates([(name, (x, y))])[0]

    def and_(self, x, y): return self.gate("and", x, y)
    def or_(self, x, y): return self.gate("or", x, y)
    def nand(self, x, y): return self.gate("nand", x, y)
    def nor(self, x, y): return self.gate("nor", x, y)
    def xor(self, x, y): return self.gate("xor", x, y)
    def xnor(self, x, y): return self.gate("xnor", x, y)

    def maj(self, x: Ciphertext, y: Ciphertext, z: Ciphertext) -> Ciphertext:
        """Majority of three booleans, one bootstrap per element (a full
        adder's carry)."""
        return self._gate3("maj", x, y, z)

    def xor3(self, x: Ciphertext, y: Ciphertext, z: Ciphertext) -> Ciphertext:
        """Parity of three booleans, one bootstrap per element (a full adder's sum)."""
        return self._gate3("xor3", x, y, z)

    def _gate3(self, name, x, y, z) -> Ciphertext:
        x, y, z = self._bool_operand(x), self._bool_operand(y), self._bool_operand(z)
        if not x.shape == y.shape == z.shape:
            raise ValueError(f"tfhe.{name}: shapes {x.shape}, {y.shape} and {z.shape} differ")
        return self._gates([(name, (x, y, z))])[0]

    def _combination(self, name: str, inputs) -> np.ndarray:
        """A gate's linear combination of its inputs' data (before the bootstrap)."""
        coef, const = _GATES[name] if name in _GATES else _GATES3[name]
        combo = sum(x.data.astype(np.uint64) for x in inputs) * np.uint64(coef % (1 << 64))
        combo[:, -1] += np.uint64(const * (self._word_modulus // 8) % (1 << 64))
        return self._words(combo)

    def _gates(self, jobs: list[tuple[str, tuple]]) -> list[Ciphertext]:
        """Several gates, each (name, inputs of one shape), bootstrapped in one
        batch (one call, all threads); their outputs in order."""
        combos = [self._combination(name, inputs) for name, inputs in jobs]
        out = self._bootstrap(np.concatenate(combos), self._sign_vector())
        pieces = np.split(out, np.cumsum([c.shape[0] for c in combos])[:-1])
        return [Ciphertext(self, d, inputs[0].shape, None) for d, (_, inputs) in zip(pieces, jobs)]

    def not_(self, x: Ciphertext) -> Ciphertext:
        """Negation: free (no bootstrap)."""
        x = self._bool_operand(x)
        return Ciphertext(self, self._words(np.uint64(0) - x.data.astype(np.uint64)), x.shape, None, x.variance)

    def mux(self, select: Ciphertext, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        """a where select else b (three bootstraps)."""
        return self.or_(self.and_(select, a), self.and_(self.not_(select), b))

    # ---- lookup tables -------------------------------------------------------------

    def lut(self, fn: Callable[[int], int] | np.ndarray | list, *, bits: int, out_bits: int | None = None) -> LookupTable:
        """A lookup table from ``bits``-bit to ``out_bits``-bit integers (default
        ``bits``): a function of one int, or its 2^bits values."""
        out_bits = bits if out_bits is None else out_bits
        self._check_bits(bits), self._check_bits(out_bits)
        return LookupTable(self, self._table_values(fn, bits, out_bits), bits, out_bits)

    def _table_values(self, fn, bits: int, out_bits: int) -> np.ndarray:
        """The 2^bits values of a table (a function of one int, or the values), checked."""
        p = 1 << bits
        values = np.asarray([fn(m) for m in range(p)] if callable(fn) else fn)
        if values.dtype == bool:
            values = values.astype(np.int64)
        if values.dtype == object and all(isinstance(v, (int, np.integer)) for v in values.reshape(-1)):
            values = values.astype(np.int64)
        if not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"lookup-table values must be integers, got {values.dtype} values (e.g. "
                             f"{values.reshape(-1)[:3].tolist()}): round them yourself, the table will not")
        values = values.astype(np.int64)
        if values.shape != (p,):
            raise ValueError(f"a {bits}-bit lookup table has {p} values, got shape {values.shape}")
        if values.min() < 0 or values.max() >= 1 << out_bits:
            raise ValueError(f"lookup-table values must lie in [0, 2^{out_bits}); got {values.min()}..{values.max()}")
        return values

    def lut_many(self, fns: list, *, bits: int, out_bits: int | None = None) -> ManyLookupTable:
        """Several lookup tables of the same ``bits``-bit input evaluated by ONE
        programmable bootstrap (many-LUT, Carpov-Izabachène-Mollimard): ``f, g =
        ctx.lut_many([f, g], bits=2)(x)`` costs one blind rotation instead of two.

        The input's phase is rounded to a multiple of the number of tables (rounded
        up to a power of two, ``v``), so that the test vector holds every table's value
        at ``v`` consecutive positions; that rounding adds error to the input (variance
        (2n/3 + 1)(v^2 - 1)/12), which :meth:`failure_probability` with
        ``operation="lut_many"`` and the warning on use account for. Each output is a
        fresh bootstrapped ciphertext, as from :meth:`lut`."""
        fns = list(fns)
        out_bits = bits if out_bits is None else out_bits
        self._check_bits(bits), self._check_bits(out_bits)
        if not fns:
            raise ValueError("lut_many needs at least one function")
        p, group = 1 << bits, _outputs_per_rotation(len(fns))
        if group > self.params.ring_dimension // p:
            raise ValueError(f"{len(fns)} tables of {bits}-bit inputs need N >= {group * p}; this set has "
                             f"N={self.params.ring_dimension}")
        values = np.stack([self._table_values(fn, bits, out_bits) for fn in fns])
        return ManyLookupTable(self, values, bits, out_bits)

    def apply_many(self, tables: ManyLookupTable, x: Ciphertext) -> tuple[Ciphertext, ...]:
        """Every table of ``tables`` on every element of ``x``: one blind rotation per
        element, one key switch per table."""
        self._check_table_input(tables, x)
        q, p, v = self.params.lwe_modulus, 1 << tables.bits, tables.group
        rounding = self.params.rounding_variance(v)
        # Several outputs run LMKCDEY's rotation exact (no odd exponents); one is a plain table.
        switch = self.params.switch_variance(even_share=0.0 if v > 1 else self._even_share(x.data))
        risk = tail_probability(x.variance + switch + rounding, q / (4 * p))
        if risk > _WARN_P_FAIL:
            warn_at_caller(f"[tfhe.lut_many] each element of these {len(tables)} {tables.bits}-bit lookups fails with "
                           f"probability {risk:.2g} (its input's error variance {x.variance:.0f} plus "
                           f"{rounding:.0f} from rounding to multiples of {v}, at q={q}, a slot "
                           f"half-width of {q / (4 * p):.0f}): fewer tables or bits, or a lower-noise set")
        data = self._half_slot_up(x.data, p)
        if not self._torus:  # the torus engine rounds after its modulus switch, where the phase is at q
            data = ((data.astype(np.int64) + v // 2) // v * v % q).astype(np.uint32)  # phase: a multiple of v
        out = self._require_keys().bootstrap(data, tables.test_vector, self.threads, v)
        out = out.reshape(x.size, v, self.params.ciphertext_dimension + 1)
        # LMKCDEY's exact rotation of all-even inputs: one more product per coefficient.
        variance = None if self._torus or v == 1 else self.params.bootstrap_variance(exact=True)
        return tuple(Ciphertext(self, np.ascontiguousarray(out[:, k]), x.shape, tables.out_bits, variance)
                     for k in range(len(tables)))

    def _check_table_input(self, table, x) -> None:
        self._check_ct(x)
        if table.context is not self:
            raise ValueError("this lookup table belongs to another context")
        if x.bits != table.bits:
            raise ValueError(f"the table reads {table.bits}-bit integers; the ciphertext holds "
                             f"{'booleans' if x.bits is None else f'{x.bits}-bit integers'}")

    def _even_share(self, data: np.ndarray) -> float:
        """The largest share of even a_i among these ciphertexts: what LMKCDEY's odd exponents
        add to a bootstrap's input error depends on it (ParameterSet.switch_variance)."""
        if self._torus or not self.params.automorphism_window or data.size == 0:
            return 0.0
        return float(((data[:, :-1] & 1) == 0).mean(axis=1).max())

    def _half_slot_up(self, data: np.ndarray, p: int) -> np.ndarray:
        """A copy of ``data`` with every phase half a message slot up: slot m then spans
        [m, m + 1) in units of q / 2p, the test vector's layout."""
        out = data.copy()
        out[:, -1] = self._words(out[:, -1].astype(np.uint64) + np.uint64(self._word_modulus // (4 * p)))
        return out

    def apply(self, table: LookupTable, x: Ciphertext) -> Ciphertext:
        """table(x) for every element: one programmable bootstrap each."""
        self._check_table_input(table, x)
        q, p = self.params.lwe_modulus, 1 << table.bits
        variance = x.variance + self.params.switch_variance(self._even_share(x.data))
        risk = tail_probability(variance, q / (4 * p)) if variance > 0 else 0.0
        if risk > _WARN_P_FAIL:
            warn_at_caller(f"[tfhe.lut] each element of this {table.bits}-bit lookup fails with probability "
                           f"{risk:.2g} (its input's error variance {variance:.0f} at q={q}, a slot half-width of "
                           f"{q / (4 * p):.0f}): bootstrap before scaling, use fewer bits, or a lower-noise set")
        return Ciphertext(self, self._bootstrap(self._half_slot_up(x.data, p), table.test_vector), x.shape,
                          table.out_bits)

    def sign(self, x: Ciphertext) -> Ciphertext:
        """Encrypted booleans: True where the integer ``x`` (``bits=`` k at encryption) is at
        least 2^(k-1) -- its top bit, the sign of a k-bit two's-complement value, what
        OpenFHE's ``EvalSign`` gives. For x, y below 2^(k-1), ``ctx.sign(x - y)`` is x < y.

        Torus sets only (the 32-bit sets' bootstraps are not precise enough), for any k
        the set encrypts (up to 32 bits on the torus sets, wider than their tables): the low
        bits are cleared four at a time with two bootstraps, then one bootstrap reads the top
        bit -- three for 9 bits (:mod:`ringfire.tfhe.sign`). The input must be fresh or
        bootstrapped (its error is multiplied by up to 2^(k-4)); a predicted failure
        probability above 2^-40 warns with the numbers. A bootstrapped 9-bit input fails with
        2^-68 at STD128_T64 and 2^-41 at STD128_T64_MB (multi-bit rotation's noisier
        outputs); STD128_T64_WIDE's precise bootstraps take 18 bits at 2^-118.9 (22 fresh).
        The figures are the worst case over inputs (:mod:`ringfire.tfhe.sign`)."""
        self._check_wide(x, "sign", "compare UInt integers with <, or use a table", "booleans are their own sign")
        self._warn_wide("sign", sign_failure_log2(self.params, x.bits, x.variance), x, max(0, x.bits - 4))
        return sign(self, x)

    def shift_right(self, x: Ciphertext, shift: int) -> Ciphertext:
        """floor(x / 2^shift) of the integer ``x`` (``bits=`` k at encryption) as a
        (k - shift)-bit integer: Micciancio-Polyakov's homomorphic floor (OpenFHE's
        ``EvalFloor``), the rescaling of a fixed-point value; also ``x >> shift``.

        Torus sets only, 0 < shift < k. The low bits are cleared as :meth:`sign` clears
        them, four per round of two bootstraps (a narrower last round): 8 bits cost four
        bootstraps. The result's error is the input's plus one bootstrap's per round, so it
        can take more additions, a table (if it is narrow enough), or :meth:`sign`, and its
        width is bounded as a bootstrapped input's is (9 bits at STD128_T64, 18 at
        STD128_T64_WIDE); the input must be fresh or bootstrapped (its error is multiplied by
        up to 2^(k-min(s, 4))). A predicted failure probability above 2^-40 warns
        (``failure_probability("shift_right", bits=k, shift=s)``, the worst case over inputs
        and reading the result)."""
        self._check_wide(x, "shift_right", "UInt integers shift for free", "booleans have no low bits")
        _check_shift(x.bits, shift)
        self._warn_wide("shift_right", floor_failure_log2(self.params, x.bits, int(shift), x.variance), x,
                        x.bits - min(int(shift), 4))
        return shift_right(self, x, int(shift))

    def to_radix(self, x: Ciphertext) -> RadixUInt:
        """The integer ``x`` (``bits=`` k, even, at encryption) as radix-4 blocks
        (:class:`~ringfire.tfhe.RadixUInt`: products, comparisons, tables on blocks), what
        OpenFHE's ``EvalDecomp`` does for its wide ciphertexts. Torus sets only. The sign's
        clearing rounds, each window read into two blocks by two more tables: 16 bits take
        14 bootstraps in four rounds (:mod:`ringfire.tfhe.wide_radix`). The input must be fresh
        or bootstrapped; a predicted failure probability above 2^-40 warns
        (``failure_probability("to_radix", bits=k)``). :meth:`from_radix` goes back."""
        self._check_wide(x, "to_radix", "encrypt_radix makes radix integers", "booleans have no blocks")
        _check_even(x.bits)
        self._warn_wide("to_radix", to_radix_failure_log2(self.params, x.bits, x.variance), x, max(0, x.bits - 4))
        return to_radix(self, x)

    def from_radix(self, r: RadixUInt) -> Ciphertext:
        """A :class:`~ringfire.tfhe.RadixUInt` as one integer ciphertext of its width (for
        :meth:`sign`, :meth:`shift_right` and additions): one table per block and a sum. Torus
        sets only. The sum carries every block's bootstrap error, which bounds the width it
        can be read at: 8 bits at STD128_T64, 18 at STD128_T64_WIDE below 2^-128
        (``failure_probability("from_radix", bits=k)``); wider ones warn, or are refused where
        most would read wrong."""
        if not isinstance(r, RadixUInt):
            raise TypeError(f"from_radix() takes a RadixUInt (encrypt_radix, to_radix), got {type(r).__name__}")
        if r.context is not self:
            raise ValueError("this RadixUInt belongs to another tfhe context")
        self._check_int_bits(r.bits)
        _refuse_or_warn(from_radix_failure_log2(self.params, r.bits), lambda p, _refused: (
            f"[tfhe.from_radix] a {r.bits}-bit result sums {len(r.blocks)} bootstraps' errors and reads wrong with "
            f"probability {p} at {self.params.name}: keep it to fewer bits or use a set with more precise bootstraps"))
        return from_radix(self, r, lambda values, out_bits: LookupTable(self, values, RadixUInt.PART_CIPHERTEXT_BITS,
                                                                        out_bits))

    def _check_wide(self, x, op: str, instead: str, booleans: str) -> None:
        """What sign() and shift_right() read: an integer ciphertext of a torus set."""
        if isinstance(x, IntegerParts):
            raise TypeError(f"{op}() reads one integer ciphertext, not a {type(x).__name__} (its own operators "
                            f"compare and shift it{'' if op == 'to_radix' else '; ctx.from_radix makes one ciphertext of a RadixUInt'})")
        self._check_ct(x)
        if not self._torus:
            raise ValueError(f"{op}() needs a 64-bit torus set (STD128_T64, STD128_T64_WIDE); {self.params.name}'s "
                             f"bootstraps are too coarse for it ({instead})")
        if x.bits is None:
            raise ValueError(f"{op}() reads integers (encrypt with bits=); {booleans}")

    def _warn_wide(self, op: str, log2_p: float, x, grow_bits: int) -> None:
        """Refuses sign(), shift_right() or to_radix() where they would fail on most elements of x
        (its error multiplied by up to 2^grow_bits), warns where they fail too often."""
        why = (f"its input's error variance {x.variance:.3g} at q={self.params.lwe_modulus}, multiplied by up to "
               f"{4.0 ** grow_bits:.3g}; a ciphertext loaded from bytes counts as bootstrapped")
        fixes = [f"fewer bits (a {x.bits}-bit integer here)"]
        if x.variance > self.params.fresh_variance():
            fixes.append("a fresh input")
        if self.params.name != "STD128_T64_WIDE":
            fixes.append("a set with more precise bootstraps (STD128_T64_WIDE)")
        fix = "use " + ", ".join(fixes[:-1]) + (" or " if len(fixes) > 1 else "") + fixes[-1]
        _refuse_or_warn(log2_p, lambda p, refused: (f"[tfhe.{op}] an element {'would fail' if refused else 'fails'} "
                                                    f"with probability {p} at worst ({why}): {fix}"))

    def bootstrap_many(self, items: list, table: LookupTable | None = None) -> list:
        """Bootstraps several ciphertexts of any shapes in one batch on every
        thread: booleans are refreshed (fresh noise, same values) when
        ``table`` is None; integers go through ``table``. Returns them in order."""
        cts = [self._bool_operand(x) if table is None else x for x in items]
        if table is None:
            one = [self.trivial(np.ones(x.shape, dtype=bool)) for x in cts]
            return self._gates([("and", (x, o)) for x, o in zip(cts, one)])
        for x in cts:
            self._check_ct(x)
            if x.bits != table.bits:
                raise ValueError(f"the table reads {table.bits}-bit integers; an item holds "
                                 f"{'booleans' if x.bits is None else f'{x.bits}-bit integers'}")
        merged = Ciphertext(self, np.concatenate([x.data for x in cts]), (sum(x.size for x in cts),), table.bits,
                            max(x.variance for x in cts))
        out = self.apply(table, merged).data
        pieces = np.split(out, np.cumsum([x.size for x in cts])[:-1])
        return [Ciphertext(self, d, x.shape, table.out_bits) for d, x in zip(pieces, cts)]

    # ---- noise ---------------------------------------------------------------------

    def failure_probability(self, operation: str = "nand", *, bits: int | None = None,
                            tables: int | None = None, shift: int | None = None, fresh: bool = False,
                            log2: bool = False) -> float:
        """Predicted probability that one operation on bootstrapped inputs
        decrypts wrongly (the parameter set's noise model): a gate by name,
        ``"lut"`` with ``bits`` (a table on a bootstrapped ``bits``-bit input), or
        ``"lut_many"`` with ``bits`` and ``tables`` (:meth:`lut_many`), or ``"sign"`` with
        ``bits`` (:meth:`sign` on a bootstrapped input; torus sets), ``"shift_right"`` with
        ``bits`` and ``shift`` (:meth:`shift_right`, the same), ``"to_radix"`` with ``bits``
        (:meth:`to_radix`; ``"from_radix"`` reading its result), or ``"radix"`` (the worst table of
        :class:`~ringfire.tfhe.RadixUInt`'s operations; torus sets). Inputs are bootstrapped
        ones, or fresh encryptions with ``fresh=True`` (in the process that encrypted them: a
        ciphertext loaded from bytes counts as bootstrapped). With ``log2=True``, its base-2
        logarithm, finite where the probability itself underflows to 0.

        AND, OR, NAND and NOR land q/8 from one decision boundary and 3q/8
        from the other (a one-sided tail, mostly); XOR and XNOR land q/4 from
        both with doubled errors; MAJ sums three inputs and lands q/8 from
        one boundary (3q/8 from the other), XOR3 q/4 from both with doubled
        errors; a table's input lies half a slot, q/(4p), from both edges of
        its slot.
        """
        var = self.params.fresh_variance() if fresh else self.params.bootstrap_variance()
        q = self.params.lwe_modulus
        # Added at the next bootstrap's input (torus sets; LMKCDEY's odd exponents, where sums of
        # independent bootstrapped ciphertexts have even a_i half the time, doubled ones always;
        # a gate of a ciphertext with itself or its negation, x & x or x & ~x, is all even too).
        switch = self.params.switch_variance(even_share=0.5)
        if operation == "sign":
            if bits is None or not self._torus:
                raise ValueError("failure_probability('sign') needs bits= and a torus set")
            self._check_int_bits(bits)
            result = sign_failure_log2(self.params, int(bits), var)
        elif operation == "shift_right":
            if bits is None or shift is None or not self._torus:
                raise ValueError("failure_probability('shift_right') needs bits=, shift= and a torus set")
            self._check_int_bits(bits)
            _check_shift(bits, shift)
            result = floor_failure_log2(self.params, int(bits), int(shift), var)
        elif operation in ("to_radix", "from_radix"):
            if bits is None or not self._torus:
                raise ValueError(f"failure_probability({operation!r}) needs bits= and a torus set")
            self._check_int_bits(bits)
            _check_even(bits)
            result = (to_radix_failure_log2(self.params, int(bits), var) if operation == "to_radix"
                      else from_radix_failure_log2(self.params, int(bits)))
        elif operation == "radix":
            if not self._torus:
                raise ValueError("failure_probability('radix') needs a torus set")
            result = _radix.failure_probability_log2(self)
        elif operation in ("lut", "lut_many"):
            if bits is None:
                raise ValueError(f"failure_probability({operation!r}) needs bits=")
            if operation == "lut_many":
                if tables is None or tables < 1:
                    raise ValueError("failure_probability('lut_many') needs tables= (how many functions)")
                group = _outputs_per_rotation(tables)
                var += self.params.rounding_variance(group)
                if group > 1:  # LMKCDEY's rotation runs exact for several outputs (bootstrapper.h)
                    switch = self.params.switch_variance(even_share=0.0)
            result = tail_probability_log2(var + switch, q / (4 << bits))
        elif operation not in _GATES and operation not in _GATES3:
            raise ValueError(f"unknown operation {operation!r}: a gate {sorted(_GATES) + sorted(_GATES3)}, 'lut', "
                             f"'lut_many', 'sign', 'shift_right', 'to_radix', 'from_radix' or 'radix'")
        else:
            coef, inputs = (_GATES[operation][0], 2) if operation in _GATES else (_GATES3[operation][0], 3)
            if coef % 2 == 0:
                switch = self.params.switch_variance(even_share=1.0)
            var_in = inputs * coef * coef * var + switch
            if abs(coef) == 2:
                result = tail_probability_log2(var_in, q / 4)
            else:  # the mean of the two tails
                result = float(np.logaddexp2(tail_probability_log2(var_in, q / 8),
                                             tail_probability_log2(var_in, 3 * q / 8))) - 1
        return result if log2 else 2.0 ** result

    # ---- internals -----------------------------------------------------------------

    def _bootstrap(self, data: np.ndarray, test_vector: np.ndarray) -> np.ndarray:
        return self._require_keys().bootstrap(np.ascontiguousarray(data, dtype=self._dtype), test_vector, self.threads)

    def _words(self, x: np.ndarray) -> np.ndarray:
        """uint64 values (wrapped mod 2^64) as ciphertext words: reduced mod the word modulus."""
        return (x & self._mask).astype(self._dtype)

    def _sign_vector(self) -> np.ndarray:
        if not hasattr(self, "_sign_tv"):
            eighth = 1 << 61 if self._torus else round(self.params.ring_modulus / 8)
            self._sign_tv = np.full(self.params.ring_dimension, eighth, dtype=self._dtype)
        return self._sign_tv

    def _test_vector(self, values: np.ndarray, bits: int, out_bits: int) -> np.ndarray:
        return self._encode_outputs(self._spread(values, bits), out_bits)

    def _spread(self, values: np.ndarray, bits: int) -> np.ndarray:
        """A table's 2^bits values laid over the N test-vector coefficients: coefficient j
        answers for the message j 2^bits / N."""
        N = self.params.ring_dimension
        return values[(np.arange(N) << bits) // N]

    def _many_test_vector(self, values: np.ndarray, group: int, bits: int, out_bits: int) -> np.ndarray:
        """Coefficient j answers for the message of its group's first coefficient (a
        multiple of ``group``) with table j mod group (0 past the last table)."""
        N = self.params.ring_dimension
        j = np.arange(N)
        start, k = j - j % group, j % group
        slot = (start * (1 << bits)) // N
        tables = np.vstack([values, np.zeros((group - len(values), values.shape[1]), dtype=values.dtype)])
        return self._encode_outputs(tables[k, slot], out_bits)

    def _encode_outputs(self, values: np.ndarray, out_bits: int) -> np.ndarray:
        if self._torus:
            return values.astype(np.uint64) * np.uint64((1 << 64) // (2 << out_bits))
        Q = self.params.ring_modulus
        return (np.floor(values * Q / (2 << out_bits) + 0.5).astype(np.int64) % Q).astype(np.uint32)

    def _encode(self, arr: np.ndarray, bits: int | None) -> np.ndarray:
        q = self._word_modulus
        if bits is None:
            if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
                raise ValueError("booleans must be 0/1 or bool (pass bits= for integers)")
            return np.where(arr.astype(bool), np.uint64(q // 8), np.uint64(q - q // 8)).astype(self._dtype)
        self._check_int_bits(bits)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"integers expected, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() >= 1 << bits):
            raise ValueError(f"{bits}-bit integers must lie in [0, {(1 << bits) - 1}]; got {arr.min()}..{arr.max()}")
        return (arr.astype(np.uint64) * np.uint64(q // (2 << bits))).astype(self._dtype)

    def _check_bits(self, bits: int) -> None:
        """A table's width: its slots must be told apart after the switch to 2N."""
        limit = int(math.log2(self.params.ring_dimension)) - 1
        if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool) or not 1 <= bits <= limit:
            raise ValueError(f"bits must be an int in [1, {limit}] for N={self.params.ring_dimension}, got {bits!r}")

    def _check_int_bits(self, bits: int) -> None:
        """An encrypted integer's width: a table's on the 32-bit sets; up to _WIDE_BITS on the
        torus sets, whose integers that only add, take signs and floors may be wider than any
        table reads."""
        if not self._torus:
            return self._check_bits(bits)
        if not isinstance(bits, (int, np.integer)) or isinstance(bits, bool) or not 1 <= bits <= _WIDE_BITS:
            limit = int(math.log2(self.params.ring_dimension)) - 1
            raise ValueError(f"bits must be an int in [1, {_WIDE_BITS}] for {self.params.name}'s integers (its tables "
                             f"read at most {limit}), got {bits!r}")

    def _bool_operand(self, x) -> Ciphertext:
        if not isinstance(x, Ciphertext):
            raise TypeError(f"expected a ringfire.tfhe.Ciphertext, got {type(x).__name__}")
        self._check_ct(x)
        if x.bits is not None:
            raise ValueError(f"gates take booleans; this ciphertext holds {x.bits}-bit integers")
        return x

    def _check_ct(self, ct) -> None:
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"expected a ringfire.tfhe.Ciphertext, got {type(ct).__name__}")
        if ct.context is not self:
            raise ValueError("this ciphertext belongs to another tfhe context")

    def _check_key(self, key) -> None:
        if not isinstance(key, SecretKey) or key.context is not self:
            raise ValueError("expected a secret key made by this context's keygen() or load_secret_key()")
        if self._key_id is not None and key.key_id != self._key_id:
            raise ValueError("this secret key does not belong to the evaluation keys this context holds (a later "
                             "keygen() or load_evaluation_keys() replaced them)")

    def _require_keys(self):
        if self._bootstrapper is None:
            raise RuntimeError("this context has no evaluation keys yet: call ctx.keygen() (a client) or "
                               "ctx.load_evaluation_keys(...) (a server) first")
        return self._bootstrapper
