"""The CKKS context: parameters, keys, encoding, encryption and loading."""

from __future__ import annotations

import math

import numbers
from typing import Iterable, Sequence

import numpy as np

from .. import _core
from ..memory_guard import guard
from .._checks import warn_at_caller, warnings_at_caller
from ..rlwe.context import ContextBase, check_security_argument, split_special_bits
from ..rlwe.keys import GaloisKeys, KeySet, MasterKeys, PublicKey, SecretKey
from ..rlwe.shapes import as_values
from . import bootstrapping, magnitude
from .bootstrapping import BootstrapKeys, BootstrapPlan
from .ciphertext import Ciphertext, Plaintext
from .evaluator import Evaluator

# Common shapes, all within the 128-bit HE-standard bound. Depth = number of
# rescalings available to a fresh ciphertext.
# The last coeff_bits entry sizes the special primes; how many (and dnum) is
# chosen for the fastest key switching within the bound (describe() says).
PRESETS = {
    "N13_D2": dict(poly_degree=2**13, coeff_bits=[50, 40, 40, 60], scale_bits=40),
    "N14_D6": dict(poly_degree=2**14, coeff_bits=[60] + [40] * 6 + [60], scale_bits=40),
    "N15_D16": dict(poly_degree=2**15, coeff_bits=[60] + [40] * 16 + [60], scale_bits=40),
    "N16_D30": dict(poly_degree=2**16, coeff_bits=[60] + [40] * 30 + [60], scale_bits=40),
    # Bootstrappable, 128-bit (log QP = 1745 of 1747): 9 levels of 40 bits for the
    # user; from the top, 4 primes of 55 bits for CoeffsToSlots, 11 of 61 for
    # EvalMod (its precision grows a bit per bit of them), 3 of 43 for
    # SlotsToCoeffs; 5 special primes of 61 bits, which cover a digit of five
    # EvalMod primes (docs/bootstrapping.md).
    "N16_BOOT": dict(poly_degree=2**16, coeff_bits=[60] + [40] * 9 + [43] * 3 + [61] * 11 + [55] * 4,
                     scale_bits=40, special_bits=[61] * 5, dnum=6, bootstrap=True),
    # The same circuit on a toy ring, for tests and examples only: NOT SECURE
    # (N = 2^12 with this modulus gives no security at all); it warns.
    "N12_BOOT_INSECURE": dict(poly_degree=2**12, coeff_bits=[60] + [40] * 3 + [45] * 3 + [60] * 11 + [56] * 3,
                              scale_bits=40, special_bits=[60] * 3, dnum=7,
                              bootstrap=dict(cts_levels=3, stc_levels=3), insecure_no_security_check=True),
}


def _stc_primes_to_the_user(options: dict, preset_bootstrap) -> list[int]:
    """A preset's chain for SlotsToCoeffs first: the primes it reserves for
    SlotsToCoeffs (just above the user's) become user primes of the scale's size,
    since SlotsToCoeffs then runs on the user's lowest levels."""
    preset = bootstrapping.bootstrap_options(preset_bootstrap)
    above = preset["cts_levels"] + preset["eval_mod_levels"]
    bits = list(options["coeff_bits"])
    end = len(bits) - above
    bits[end - preset["stc_levels"]:end] = [options["scale_bits"]] * preset["stc_levels"]
    return bits


class Context(ContextBase):
    """CKKS parameters and everything derived from them.

    Args:
        poly_degree: ring degree N (a power of two, 2^10 .. 2^17); there are N/2 slots.
        coeff_bits: bit sizes of the ciphertext primes q_0..q_L: the first holds
            the result (make it scale_bits + the bits of your largest value),
            the others are consumed one per rescale (make them scale_bits).
            When ``special_bits`` is omitted, the last entry is the size of the
            key-switching (special) primes, and ringfire chooses how many of
            them, and the digits, for the fastest key switching within the
            security bound (``ctx.describe()`` says what it chose and why), e.g.
            ``[60, 40, 40, 60]``.
        scale_bits: the default scale is 2^scale_bits.
        special_bits: bit sizes of the key-switching primes P, exactly (``[60]``:
            one special prime, SEAL's convention). Prime sizes, here and in
            ``coeff_bits``, are 20 to 61 bits (the arithmetic needs q < 2^61).
        dnum: number of key-switching digits (default: the fewest that P covers).
        security: 128, 192 or 256; parameters beyond the HomomorphicEncryption.org
            bound for uniform ternary secrets raise ``ValueError``. There is no
            level that turns the check off: only ``insecure_no_security_check``.
        device: where this context's ciphertexts compute: ``"cpu"`` (default),
            ``"cuda"`` or ``"cuda:N"``. Encoding and encryption run on the host;
            the data moves to the GPU at its first operation there and stays
            until ``decrypt`` or ``.to("cpu")``. The context owns one CUDA
            stream, so its operations never wait for the host.
        insecure_no_security_check: disables that check (toy sizes for tests only);
            warns every time such a context is made or loaded.
        insecure_deterministic_seed: 32 bytes making all randomness
            reproducible (tests only; warns). Never use it for real data.
        bootstrap: ``True`` or a dict of options
            (:data:`ringfire.ckks.bootstrapping.BOOTSTRAP_DEFAULTS`): the top
            ``cts_levels + eval_mod_levels + stc_levels`` primes of ``coeff_bits``
            are reserved for bootstrapping, and ``max_level`` counts the
            levels below them. See the ``N16_BOOT`` preset and docs/bootstrapping.md.
    """

    def __init__(self, poly_degree: int, coeff_bits: Sequence[int], scale_bits: int,
                 special_bits: Sequence[int] | None = None, dnum: int | None = None, security: int = 128, *,
                 device: str = "cpu", insecure_no_security_check: bool = False,
                 insecure_deterministic_seed: bytes | None = None, bootstrap: bool | dict | None = None):
        coeff_bits = [int(b) for b in coeff_bits]
        coeff_bits, special_bits, special_size = split_special_bits("ckks", coeff_bits, special_bits)
        security = check_security_argument("ckks", security)
        options = bootstrapping.bootstrap_options(bootstrap) if bootstrap not in (None, False) else None
        reserved = bootstrapping.reserved_levels(options) if options else 0
        if reserved and reserved >= len(coeff_bits):
            raise ValueError(f"[ckks.Context] bootstrapping reserves the top {reserved} primes but coeff_bits has only "
                             f"{len(coeff_bits)}: add the user's levels below them")
        self._set_device(device)
        with warnings_at_caller():
            params = _core.Parameters(int(poly_degree), coeff_bits, special_bits,
                                      0 if dnum is None else int(dnum), int(security), int(scale_bits),
                                      insecure_no_security_check=bool(insecure_no_security_check),
                                      reserved_levels=reserved, special_prime_bits=special_size)
        self._init_from(params, insecure_deterministic_seed, options)

    def _init_from(self, params, seed: bytes | None, bootstrap_options: dict | None = None) -> None:
        native = _core.CkksContext(params)
        if params.reserved_levels and bootstrap_options is None:
            bootstrap_options = bootstrapping.bootstrap_options(True, params.reserved_levels)
        self._bootstrap_options = bootstrap_options
        self._bootstrapper = None
        self._init_runtime(native, _core.Evaluator(native), seed)

    def _pickle_options(self) -> dict:
        return {} if self._bootstrap_options is None else {"bootstrap": dict(self._bootstrap_options)}

    def _init_from_pickle(self, params, options: dict) -> None:
        self._init_from(params, None, options.get("bootstrap"))

    @classmethod
    def preset(cls, name: str, **overrides) -> "Context":
        """A context from :data:`PRESETS` (``"N13_D2"``, ``"N14_D6"``, ``"N15_D16"``, ``"N16_D30"``;
        bootstrappable: ``"N16_BOOT"``, and ``"N12_BOOT_INSECURE"`` for tests). A ``bootstrap``
        dict in ``overrides`` changes those options of the preset's and keeps the others
        (``bootstrap={"slots": 16384}``: sparse packing). With ``bootstrap={"stc_first": True}``
        the primes the preset reserves for SlotsToCoeffs join your chain at the scale's
        size, since SlotsToCoeffs then runs on your lowest levels."""
        if name not in PRESETS:
            raise ValueError(f"[ckks.Context] unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        options = {**PRESETS[name], **overrides}
        preset_bootstrap = PRESETS[name].get("bootstrap")
        if isinstance(overrides.get("bootstrap"), dict) and isinstance(preset_bootstrap, dict):
            options["bootstrap"] = {**preset_bootstrap, **overrides["bootstrap"]}
        boot = options.get("bootstrap")
        if (isinstance(boot, dict) and boot.get("stc_first") and preset_bootstrap is not None
                and "coeff_bits" not in overrides):
            options["coeff_bits"] = _stc_primes_to_the_user(options, preset_bootstrap)
        return cls(**options)

    @classmethod
    def from_primes(cls, poly_degree: int, q_primes: Sequence[int], p_primes: Sequence[int], scale_bits: int, *,
                    dnum: int = 0, security: int = 128, insecure_no_security_check: bool = False,
                    insecure_deterministic_seed: bytes | None = None) -> "Context":
        """A context on explicit primes (NTT-friendly for ``poly_degree``, checked): another
        context's, for a ring that shares its chain (a subring's, ``ringfire.switching``'s way
        back in a smaller ring). ``dnum``: the key-switching digits (0: the fewest the special
        primes cover). No levels are reserved. ``insecure_deterministic_seed`` as for the
        constructor (tests only)."""
        self = cls.__new__(cls)
        with warnings_at_caller():
            params = _core.Parameters(int(poly_degree), [], [], int(dnum), check_security_argument("ckks", security),
                                      int(scale_bits), insecure_no_security_check=bool(insecure_no_security_check),
                                      q_primes=[int(q) for q in q_primes], p_primes=[int(p) for p in p_primes])
        self._init_from(params, insecure_deterministic_seed)
        return self

    @classmethod
    def from_bytes(cls, data: bytes, *, mac_key: bytes | None = None, insecure_no_security_check: bool = False,
                   insecure_deterministic_seed: bytes | None = None, bootstrap: dict | None = None,
                   device: str = "cpu") -> "Context":
        """A context from ``ctx.to_bytes()`` (same primes, hence same fingerprint). The
        security level recorded in the bytes is checked again; parameters saved with
        ``insecure_no_security_check`` load only when it is passed here too (it warns).
        ``mac_key``: the bytes must be authenticated with it. ``bootstrap``: the
        bootstrapping options when they differ from the defaults (the bytes
        record only how many levels are reserved). ``device``: as in the constructor."""
        self = cls.__new__(cls)
        params = cls._load_parameters(data, mac_key, insecure_no_security_check)
        self._set_device(device)
        options = None
        if bootstrap is not None:
            if not params.reserved_levels:
                raise ValueError("[ckks.Context] these parameters reserve no levels for bootstrapping")
            options = bootstrapping.bootstrap_options(bootstrap, params.reserved_levels)
        self._init_from(params, insecure_deterministic_seed, options)
        return self

    # ---- properties ------------------------------------------------------------
    scheme = "ckks"
    _ciphertext_type = Ciphertext
    _plaintext_type = Plaintext
    slots = property(lambda self: self._core.slots, doc="N/2: how many numbers a ciphertext holds.")
    max_level = property(lambda self: self._core.user_max_level,
                         doc="Rescalings a fresh ciphertext can take (below the levels reserved for bootstrapping).")
    can_bootstrap = property(lambda self: self._bootstrap_options is not None,
                             doc="Whether these parameters reserve levels for bootstrapping.")
    scale = property(lambda self: self._core.default_scale, doc="The default (fresh) scale.")

    def scale_at(self, level: int) -> float:
        """The canonical scale of a level (see :mod:`ringfire.ckks.ciphertext`): a product
        rescaled at level l lands on level l-1's scale. The top takes 2^scale_bits when the
        primes are about scale_bits bits; otherwise (a larger top prime, say) level 0 does and
        each level above is the geometric mean of the one below and its prime. Every level
        stays within 2^(scale_bits - 8) .. 2^(scale_bits + 12), or the context is refused."""
        return self._core.scale_at(int(level))

    def max_value(self, level: int, scale: float | None = None) -> float:
        """The largest ``abs(x)`` a ciphertext at ``level`` holds at ``scale`` (default: the
        level's canonical one), Q_level / (2 scale): beyond it the values may wrap
        around the modulus and decrypt wrong. Operations whose result may exceed it
        warn, and decryption refuses results that came near it unless their known
        bound (``ct.bound``) stays below it (docs/security.md). inf where the level
        holds more than a float can say."""
        level = int(level)
        if not 0 <= level <= self.params.max_level:
            raise ValueError(f"[ckks.max_value] level must be in [0, {self.params.max_level}], got {level}")
        bits = sum(math.log2(q) for q in self.params.q_primes[:level + 1]) - 1
        bits -= math.log2(self.scale_at(level) if scale is None else float(scale))
        return math.inf if bits >= 1023 else 2.0**bits

    def describe(self) -> str:
        """The parameters, then the canonical scale of every level (log2, level 0 first) and
        the largest value level 0 holds at its scale."""
        scales = ", ".join(f"{math.log2(self.scale_at(level)):.2f}" for level in range(self.max_level + 1))
        return f"{super().describe()}; scales by level (log2): {scales}; max |x| at level 0: {self.max_value(0):.4g}"

    def landing_scale(self, level: int, scale: float) -> float:
        """The encoding scale of a constant (or plaintext) that, multiplied into a
        ciphertext at ``level`` with ``scale`` and rescaled, lands exactly on the
        canonical scale of ``level - 1``: what keeps the chain canonical."""
        level = int(level)
        if not 1 <= level <= self.params.max_level:
            raise ValueError(f"[ckks.landing_scale] level must be in [1, {self.params.max_level}], got {level}")
        return self.scale_at(level - 1) * self.params.q_primes[level] / float(scale)

    # ---- keys -------------------------------------------------------------------
    def keygen(self, rotations: Iterable[int] | str | None = (), conjugate: bool = False, bootstrap: bool = False,
               galois_level: int | None = None, master_rotations: bool = False):
        """Generates a secret key and the evaluation keys.

        Args:
            rotations: rotation steps to make Galois keys for (negative = right),
                or ``"power_of_two"`` for every ±2^k (any rotation is then reachable).
            conjugate: also make the complex-conjugation key.
            bootstrap: also make the bootstrapping keys (``keys.bootstrap``; see
                :meth:`bootstrap_plan` for their count and size first).
            galois_level: the highest level the rotation and conjugation keys
                serve (default :attr:`max_level`, the top of the user's chain).
                A lower one makes smaller keys when rotations only happen late in
                a circuit; rotating a ciphertext above it raises.
            master_rotations: make master keys (``keys.master``, see
                :meth:`master_keys`) for ``galois_level`` instead of the
                conjugation key: the server derives every rotation it needs from
                them (:meth:`derive_galois_keys`). ``rotations`` still get direct keys.

        Returns ``(secret_key, keys)``; ``keys`` (a :class:`KeySet`: public,
        relin, galois, bootstrap) also becomes this context's default evaluation keys.
        On a bootstrappable chain the Galois keys stop at the user's top level, so
        they are a fraction of a whole-chain key's size (bootstrapping makes its own).
        """
        sk, keys = self._generate_keys(rotations, self._conjugation(conjugate), galois_level, master_rotations)
        if bootstrap:
            keys.bootstrap = self.bootstrap_keys(sk)
        return sk, keys

    def bootstrap_keys(self, secret_key: SecretKey, *, memory_check: bool = True) -> BootstrapKeys:
        """The bootstrapping keys for an existing secret key (``keygen(bootstrap=True)`` makes them too).
        Their size (``bootstrap_plan().key_bytes``: 7 GiB at N16_BOOT) goes through the memory guard
        first (:mod:`ringfire.memory_guard`): spilled to disk, or refused, when it does not fit."""
        secret_key = self._own_secret_key(secret_key, "ckks.bootstrap_keys")
        native = self._native_bootstrapper("ckks.keygen")
        with guard(self.bootstrap_plan().key_bytes, "bootstrapping key generation", memory_check=memory_check,
                   fixes="a sparse bootstrap with fewer keys (bootstrap={'slots': n}) where the data allows"):
            return BootstrapKeys(_core.generate_bootstrap_keys(native, secret_key._native, self._prng), self)

    def _streamed_kinds(self) -> dict:
        return {**super()._streamed_kinds(),
                "bootstrap key set": (BootstrapKeys, _core.stream_load_bootstrap_keys)}

    def _mapped_kinds(self) -> dict:
        return {**super()._mapped_kinds(), "bootstrap key set": (BootstrapKeys, _core.map_bootstrap_keys)}

    # ---- bootstrapping ------------------------------------------------------------
    def _native_bootstrapper(self, op: str):
        """The bootstrapping circuit's precomputation (the DFT diagonals, the
        EvalMod polynomial), built on first use: seconds at N=2^16."""
        if self._bootstrap_options is None:
            raise ValueError(f"[{op}] these parameters reserve no levels for bootstrapping: use "
                             "Context.preset('N16_BOOT') or pass bootstrap=True with room in coeff_bits")
        if self._bootstrapper is None:
            self._bootstrapper = _core.Bootstrapper(self._core, bootstrapping.native_config(self._bootstrap_options))
        return self._bootstrapper

    @property
    def bootstrap_options(self) -> dict | None:
        """The bootstrapping options (None: not bootstrappable)."""
        return None if self._bootstrap_options is None else dict(self._bootstrap_options)

    @property
    def bootstrap_min_level(self) -> int:
        """The lowest level a ciphertext can be bootstrapped from: 0, or ``stc_levels``
        when SlotsToCoeffs runs first (``bootstrap={"stc_first": True}``)."""
        return 0 if self._bootstrap_options is None else bootstrapping.input_level_min(self._bootstrap_options)

    def bootstrap_plan(self) -> BootstrapPlan:
        """Levels consumed and left, Galois keys and their bytes, key switches and
        the failure probability of one bootstrap, before any key exists
        (``print(ctx.bootstrap_plan())``)."""
        native = self._native_bootstrapper("ckks.bootstrap_plan")
        ratio = bootstrapping.message_ratio_bits(self._bootstrap_options, self.params.q_primes[0],
                                                 self.scale_at(self.bootstrap_min_level))
        relin = self._core.rlwe.switch_key_bytes(len(self.params.q_primes) - 1)
        return BootstrapPlan.from_native(native.plan(), native.slots, bootstrapping.input_bound(ratio), relin)

    def galois_keys(self, secret_key: SecretKey, rotations: Iterable[int] | str = (), conjugate: bool = False,
                    level: int | None = None):
        """More Galois keys for an existing secret key of this context, serving
        levels up to ``level`` (default :attr:`max_level`; see :meth:`keygen`)."""
        return self._more_galois_keys(secret_key, rotations, self._conjugation(conjugate), level)

    def master_keys(self, secret_key: SecretKey, level: int | None = None, conjugate: bool = False) -> MasterKeys:
        """Master rotation keys (client side): one per power-of-two rotation, and the
        conjugation with ``conjugate``, from which :meth:`derive_galois_keys` makes any
        rotation key for levels up to ``level`` without the secret key. They live
        modulo the level's key modulus times fresh special primes, which must stay
        within the security bound: the default, :attr:`master_key_level`, is the
        highest level where they do (the user's top unless the chain is near the
        bound); an explicit ``level`` without room raises, naming both sizes
        (docs/keys.md)."""
        return self._master_keys(secret_key, level, conjugate, "ckks.master_keys")

    def derive_galois_keys(self, master: MasterKeys, rotations: Iterable[int] | str = (),
                           conjugate: bool = False) -> GaloisKeys:
        """Galois keys for ``rotations`` (and the conjugation) derived from ``master``
        (server side, no secret key): each takes popcount(step) key switches, shared
        prefixes once. They switch ciphertexts up to ``master.level``; their error is
        larger than a fresh key's but enters divided by the special modulus
        (docs/keys.md has the measured precision)."""
        return self._derive_galois_keys(master, rotations, self._conjugation(conjugate), "ckks.derive_galois_keys")

    def _conjugation(self, conjugate: bool) -> list[int]:
        return [self._core.rlwe.conjugation_element()] if conjugate else []

    # ---- encoding and encryption ------------------------------------------------
    def _slot_values(self, values) -> np.ndarray:
        """``values`` as the encoder takes them: one contiguous complex vector of at most ``slots``
        entries (a scalar fills every slot)."""
        arr = as_values(values)
        if arr.ndim == 0:
            arr = np.full(self.slots, arr)
        if arr.ndim != 1:
            raise ValueError(f"[ckks.encode] expected a 1-D vector of at most {self.slots} values, got shape {arr.shape}")
        if arr.size > self.slots:
            raise ValueError(f"[ckks.encode] got {arr.size} values but there are only {self.slots} slots")
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"[ckks.encode] values must be numbers, got dtype {arr.dtype}")
        return np.ascontiguousarray(arr, dtype=np.complex128)

    def _encode_native(self, values, level: int, scale: float):
        return self._core.encode(self._slot_values(values), int(level), float(scale))

    def encode(self, values, level: int | None = None, scale: float | None = None) -> Plaintext:
        """Encodes up to ``slots`` real or complex numbers (zero-padded; shape (n,)) at a
        level and scale (defaults: the top level and the default scale). A scalar fills
        every slot (shape ())."""
        level = self.max_level if level is None else int(level)
        scale = self.scale_at(level) if scale is None else float(scale)
        values = as_values(values)
        out = Plaintext(self._encode_native(values, level, scale), self)._set_shape(values.shape, True)
        out._bound = magnitude.of_values(values)
        return out

    def decode(self, plaintext: Plaintext) -> np.ndarray:
        return np.asarray(self._core.decode(plaintext._host()))

    def encrypt(self, values, key, level: int | None = None) -> Ciphertext:
        """Encrypts numbers (or a :class:`Plaintext`) with a :class:`KeySet` /
        :class:`PublicKey`, or symmetrically with the :class:`SecretKey` (a
        smaller, seeded ciphertext)."""
        if isinstance(key, SecretKey) and not isinstance(values, Plaintext):
            return self._encrypt_values_secret(values, key, level)
        plain = values if isinstance(values, Plaintext) else self.encode(values, level)
        pt = plain._native
        keys = key if isinstance(key, KeySet) else None
        if isinstance(key, SecretKey):
            native = _core.encrypt_secret(self._own_secret_key(key, "ckks.encrypt")._native, pt, self._prng)
        else:
            public = key.public if isinstance(key, KeySet) else key
            if not isinstance(public, PublicKey):
                raise TypeError("[ckks.encrypt] key must be a KeySet, a PublicKey or a SecretKey")
            native = _core.encrypt_public(public._native, pt, self._prng)
        return self._fresh_ciphertext(native, keys, plain.shape, plain._zero_tail, plain._bound)

    def _encrypt_values_secret(self, values, key: SecretKey, level: int | None) -> Ciphertext:
        """``encrypt(encode(values, level), key)`` in one native call: the same ciphertext (the
        same words and draws), with the error added to the message's coefficients before the one
        forward NTT per limb they share instead of two."""
        level = self.max_level if level is None else int(level)
        scale = self.scale_at(level)
        values = as_values(values)
        arr = self._slot_values(values)
        secret = self._own_secret_key(key, "ckks.encrypt")._native
        native = self._core.encode_encrypt_secret(secret, arr, level, float(scale), self._prng)
        return self._fresh_ciphertext(native, None, values.shape, True, magnitude.of_values(values))

    def _fresh_ciphertext(self, native, keys, shape, zero_tail: bool, bound) -> Ciphertext:
        """A ciphertext both encryptions just made, with its shape and bound, checked against its
        level's room. Encryption runs on the host; the upload waits for the first GPU operation."""
        out = Ciphertext(native, self, keys, device=self.device)._set_shape(shape, zero_tail)
        out._bound = bound
        magnitude.check(out, "ckks.encrypt")
        return out

    def decrypt(self, ciphertext: Ciphertext, secret_key: SecretKey, complex: bool | None = None, *,
                noise_flooding: bool | float = False, decryptions: int = 1,
                insecure_exact: bool = False) -> np.ndarray:
        """Decrypts to NumPy values of the ciphertext's shape (a vector of the length
        encrypted, or a scalar for shape ()): real unless the computation involved
        complex values (or ``complex=True``).

        A CKKS result and its ciphertext together reveal the secret key (Li and
        Micciancio's attack), so decryption adds fresh noise first:

        * by default, noise the size of the ciphertext's own (measured on the
          imaginary parts of real data; about half a bit of precision). This
          defeats key recovery from a result; an adversary who gets many
          decryptions of ciphertexts it crafted could still average it out.
        * ``noise_flooding=True`` (40-bit statistical security) or ``=s`` bits:
          noise so wide that ``decryptions`` results reveal nothing about the
          key (Li, Micciancio, Schultz and Sorrell, CRYPTO 2022). Use it for
          every result that leaves the key holder; it costs about
          ``s/2 + log2(N)/2`` bits of precision, so it needs a large scale.
        * ``insecure_exact=True``: no noise (warns); never release such a result.

        Raises ``ValueError`` when the ciphertext's noise exceeds its scale (the
        result would be meaningless), when its values outgrew its level (they may
        have wrapped around the modulus: ``max_value``), or when flooding leaves no
        precision. Docs: docs/security.md.
        """
        if not isinstance(ciphertext, Ciphertext):
            raise TypeError("[ckks.decrypt] expected a Ciphertext")
        secret_key = self._own_secret_key(secret_key, "ckks.decrypt")
        noise, bits = _decryption_noise(noise_flooding, insecure_exact)
        bound = ciphertext.bound
        out, _ = self._core.decrypt(ciphertext._host(), secret_key._native, self._prng, noise,
                                    statistical_security=bits, decryptions=float(decryptions),
                                    value_bound=-1.0 if bound is None else float(bound))
        room = self.max_value(ciphertext.level, ciphertext.scale)
        if bound is not None and bound > room:
            # The coefficients showed no wrap, but a wrap by a whole multiple of the range
            # leaves none (a constant offset); only the bound can say it may have happened.
            warn_at_caller(f"[ckks.decrypt] the values may have outgrown level {ciphertext.level}: their bound "
                           f"{bound:.4g} exceeds ctx.max_value({ciphertext.level}) = {room:.4g}, so they may have "
                           "wrapped around the modulus, which decryption cannot always see. Scale the data down, use "
                           "a larger first prime or a smaller scale, or bootstrap with bound=...")
        out = np.asarray(out)
        want_complex = ciphertext.is_complex if complex is None else complex
        out = out if want_complex else out.real
        shape = ciphertext.shape
        return out[0] if not shape else out[:shape[0]].copy()

    def encrypt_batch(self, x, keys, packing: str = "batch", level: int | None = None):
        """Encrypts a batch (first axis) for :mod:`ringfire.nn`. ``packing="batch"``: one
        ciphertext per element of a sample, the batch in the slots (throughput);
        ``"inter"``: one ciphertext per sample, features tiled over the slots (latency,
        dense and convolutional layers; needs the Galois keys of ``model.rotations()``).
        ``level``: where to encrypt (default the top); ``model.input_level`` is the lowest a
        model's first layers need, with fewer limbs to send and to multiply."""
        from .batch import encrypt_batch
        return encrypt_batch(self, x, keys, packing, level)

    def decrypt_batch(self, tensor, secret_key, **decrypt_options) -> np.ndarray:
        """The inverse of :meth:`encrypt_batch`: a NumPy array, batch first. The options
        (``noise_flooding=...``) are :meth:`decrypt`'s."""
        from .batch import decrypt_batch
        return decrypt_batch(self, tensor, secret_key, **decrypt_options)

    def evaluator(self, keys: KeySet | None = None) -> Evaluator:
        """The explicit, SEAL-like operations (keys default to this context's)."""
        return Evaluator(self, keys if keys is not None else self._default_keys)

    # ---- serialization ------------------------------------------------------------
    def _load_other(self, kind: str, data: bytes):
        if kind == "bootstrap key set":
            return BootstrapKeys(_core.load_bootstrap_keys(self._core.rlwe, data), self)
        return None


def _decryption_noise(noise_flooding, insecure_exact) -> tuple[str, float]:
    """The native decryption mode and statistical security for decrypt's options."""
    if insecure_exact:
        if noise_flooding is not False and noise_flooding is not None:
            raise ValueError("[ckks.decrypt] choose noise_flooding or insecure_exact, not both")
        warn_at_caller("[ckks.decrypt] insecure_exact: this result together with its ciphertext reveals the secret key; "
                       "never let it leave the key holder")
        return "insecure_exact", 40.0
    if noise_flooding is False or noise_flooding is None:
        return "estimate", 40.0
    if noise_flooding is True:
        return "flooding", 40.0
    if isinstance(noise_flooding, bool) or not isinstance(noise_flooding, numbers.Real):
        raise TypeError(f"[ckks.decrypt] noise_flooding is True, False or a number of bits (8 to 128), "
                        f"got {noise_flooding!r}")
    return "flooding", float(noise_flooding)
