"""What every scheme's context shares: the device and its stream, the CSPRNG,
key generation, Galois elements, default keys and loading serialized objects.

:class:`ContextBase` is subclassed by ``ckks.Context``, ``bgv.Context`` and
``bfv.Context``; each adds its encoding, encryption and decryption.
"""

from __future__ import annotations

import contextlib
import os
import numbers
import weakref
from dataclasses import dataclass
from typing import Iterable

from .. import _core
from .. import io as rf_io
from .._checks import warn_at_caller, warnings_at_caller
from .keys import EmbeddingKey, GaloisKeys, KeySet, MasterKeys, PublicKey, RelinKey, SecretKey


def check_security_argument(scheme: str, security) -> int:
    """``security`` as an int, refusing booleans and non-integers with the scheme's name."""
    if isinstance(security, bool) or not isinstance(security, numbers.Integral):
        raise TypeError(f"[{scheme}.Context] security is 128, 192 or 256 (bits), got {security!r}")
    return int(security)


def split_special_bits(scheme: str, coeff_bits: list[int], special_bits) -> tuple[list[int], list[int], int]:
    """(ciphertext primes, explicit special primes, special-prime size to choose a count for).

    ``special_bits`` given: exactly those special primes. Omitted: the last
    entry of ``coeff_bits`` is the size of the special primes, and the core
    chooses how many (and the digits) for the fastest key switching within
    the security bound (rlwe/key_switch_shape.h)."""
    if special_bits is not None:
        return coeff_bits, [int(b) for b in special_bits], 0
    if len(coeff_bits) < 2:
        raise ValueError(f"[{scheme}.Context] coeff_bits needs at least two entries when special_bits is omitted "
                         "(the last one is the size of the special primes)")
    return coeff_bits[:-1], [], coeff_bits[-1]


# Contexts that were pickled or unpickled in this process, by what their pickle
# holds: an object unpickled here joins the live context with the same
# parameters (the one pickled last) (a result coming back from a worker computes with the keys set
# on the context it was sent from) instead of building a new one per object.
_LIVE_CONTEXTS: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _restore_context(cls, params: bytes, device: str, options: dict):
    key = (cls, params, device, repr(sorted(options.items())))
    ctx = _LIVE_CONTEXTS.get(key)
    if ctx is None:
        ctx = cls._from_pickle(params, device, options)
        _LIVE_CONTEXTS[key] = ctx
    return ctx


class ContextBase:
    """Parameters, device, randomness and keys of one scheme instance.

    Subclasses set :attr:`scheme` ("ckks", "bgv", "bfv"), the wrapper types
    ``_ciphertext_type`` / ``_plaintext_type``, and call :meth:`_init_runtime`
    with their native context and evaluator.

    Pickling a context carries its parameters and device, never keys or the
    random generator's state: the other side draws fresh randomness, and its
    evaluation keys are pickled on their own (``ctx.set_keys(keys)`` there).
    ``copy.deepcopy`` makes an independent context with the same parameters
    and default keys.

    The key set ``keygen`` makes is the default only while something else holds it (the
    context refers to it weakly): its keys refer to the context, and a strong reference back
    would make a cycle that keeps both, and every key of the set (N16_BOOT's bootstrapping keys
    are 3.5 GiB), until Python's cycle collector happens to run. ``set_keys`` holds its keys.
    """

    scheme = "rlwe"
    _ciphertext_type = None
    _plaintext_type = None

    # ---- device and runtime ----------------------------------------------------------
    def _set_device(self, device) -> None:
        self.device = _core.parse_device(str(device))
        self._queue = 0
        if self.device.startswith("cuda"):
            from .. import cuda
            cuda.require_device(self.device)
            # One in-order stream per context (seed 000 §III-F): its operations
            # queue behind each other and overlap with other contexts' work.
            self._stream = cuda.Stream(self.device)
            self._queue = self._stream.handle
            weakref.finalize(self, self._stream.close)

    @property
    def _default_keys(self) -> KeySet | None:
        """The keys for ciphertexts that carry none: set_keys' (held), or keygen's while alive."""
        keys = self.__dict__.get("_default_key_set")
        return keys() if isinstance(keys, weakref.ref) else keys

    @_default_keys.setter
    def _default_keys(self, keys: KeySet | None) -> None:
        self.__dict__["_default_key_set"] = keys

    def _remember_keys(self, keys: KeySet) -> None:
        """keygen's key set as the default, weakly (no cycle through the keys' context)."""
        self.__dict__["_default_key_set"] = weakref.ref(keys)

    def _queue_on(self, device: str) -> int:
        """The queue for work on ``device``: this context's stream on its own device."""
        return self._queue if device == self.device else 0

    def _init_runtime(self, native_context, native_evaluator, seed: bytes | None) -> None:
        if not hasattr(self, "device"):
            self._set_device("cpu")
        self._core = native_context
        self._core_evaluator = _OnQueue(native_evaluator, self._queue) if self._queue else native_evaluator
        self._default_keys = None
        # Whether keys and encryptions may repeat across runs (a fixed seed): a client that made
        # keys from the operating system's randomness knows no one else can hold them.
        self._deterministic = seed is not None
        if seed is not None:
            warn_at_caller(f"[{self.scheme}.Context] deterministic randomness (insecure_deterministic_seed) is for "
                           "tests only")
            self._prng = _core.Prng.from_seed(bytes(seed))
        else:
            self._prng = _core.Prng.from_os()

    @staticmethod
    def _load_parameters(data: bytes, mac_key: bytes | None, insecure_no_security_check: bool):
        with warnings_at_caller():
            return _core.load_parameters(rf_io.unwrap(data, mac_key),
                                         insecure_no_security_check=bool(insecure_no_security_check))

    # ---- properties ------------------------------------------------------------------
    params = property(lambda self: self._core.params)
    poly_degree = property(lambda self: self._core.params.poly_degree)
    fingerprint = property(lambda self: self._core.fingerprint)

    def describe(self) -> str:
        return self._core.params.describe()

    def __repr__(self) -> str:
        return f"{self.scheme}.Context({self.describe()})"

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """The parameters (``Context.from_bytes`` reads them); authenticated with ``mac_key``."""
        return rf_io.wrap(_core.save_parameters(self._core.params), mac_key)

    # ---- pickling and copies --------------------------------------------------------
    def _pickle_options(self) -> dict:
        """``from_bytes`` options the parameter bytes do not record (a scheme adds its own)."""
        return {}

    def __reduce__(self):
        params = _core.save_parameters(self._core.params)
        options = self._pickle_options()
        # The most recently pickled context is the one its objects come back to.
        _LIVE_CONTEXTS[(type(self), params, self.device, repr(sorted(options.items())))] = self
        return _restore_context, (type(self), params, self.device, options)

    @classmethod
    def _from_pickle(cls, params: bytes, device: str, options: dict):
        ctx = cls.__new__(cls)
        ctx._set_device(device)
        # Parameters pickled from an insecure context load as such (and warn again).
        with warnings_at_caller():
            native = _core.load_parameters(params, insecure_no_security_check=True)
        ctx._init_from_pickle(native, options)
        return ctx

    def _init_from_pickle(self, params, options: dict) -> None:
        """Builds the runtime from native parameters and :meth:`_pickle_options` (per scheme)."""
        raise NotImplementedError

    def __deepcopy__(self, memo):
        copy = type(self)._from_pickle(_core.save_parameters(self._core.params), self.device, self._pickle_options())
        copy._default_keys = self._default_keys
        memo[id(self)] = copy
        return copy

    def __copy__(self):
        return self.__deepcopy__({})

    # ---- keys --------------------------------------------------------------------------
    def _generate_keys(self, rotations, extra_elements: Iterable[int] = (),
                       galois_level: int | None = None, master_rotations: bool = False) -> tuple[SecretKey, KeySet]:
        """A secret key and its public, relinearization and Galois keys (for
        ``rotations`` and the Galois elements ``extra_elements``, made for levels up
        to ``galois_level``); the key set becomes this context's default. With
        ``master_rotations``, master keys at ``galois_level`` take the place of
        ``extra_elements`` (the conjugation) and of every rotation not listed."""
        op = f"{self.scheme}.keygen"
        level = self._galois_key_level(galois_level, op)
        sk = SecretKey(_core.generate_secret_key(self._core.rlwe, self._prng), self)
        keys = KeySet(public=PublicKey(_core.generate_public_key(sk._native, self._prng), self),
                      relin=RelinKey(_core.generate_relin_key(sk._native, self._prng), self))
        if master_rotations:
            keys.master = self._master_keys(sk, galois_level, bool(list(extra_elements)), op)
            extra_elements = ()
        elements = self._galois_elements(rotations, extra_elements)
        if elements:
            keys.galois = GaloisKeys(_core.generate_galois_keys(sk._native, elements, self._prng, level), self)
        self._remember_keys(keys)
        return sk, keys

    def _more_galois_keys(self, secret_key: SecretKey, rotations, extra_elements: Iterable[int] = (),
                          level: int | None = None) -> GaloisKeys:
        op = f"{self.scheme}.galois_keys"
        level = self._galois_key_level(level, op)
        secret_key = self._own_secret_key(secret_key, op)
        return GaloisKeys(_core.generate_galois_keys(secret_key._native,
                                                     self._galois_elements(rotations, extra_elements), self._prng,
                                                     level),
                          self)

    def _master_keys(self, secret_key: SecretKey, level, conjugation: bool, op: str) -> MasterKeys:
        level = self.master_key_level if level is None else self._galois_key_level(level, op)
        secret_key = self._own_secret_key(secret_key, op)
        return MasterKeys(_core.generate_master_keys(secret_key._native, level, conjugation, self._prng), self)

    @property
    def master_key_level(self) -> int:
        """The highest level master keys can serve (:meth:`master_keys`' default): the
        top of the user's chain, or lower where the key modulus there leaves no room
        under the security bound for the masters' special primes. Raises when no
        level has room (then send Galois keys themselves)."""
        level = _core.highest_derivation_level(self._core.rlwe)
        if level is None:
            raise ValueError(f"[{self.scheme}.master_keys] no level of these parameters leaves room under the security "
                             "bound for master keys; generate the Galois keys directly")
        return min(int(level), self.max_level)

    def master_key_plan(self, rotations, level: int | None = None) -> "MasterKeyPlan":
        """What a client sends for Galois keys of ``rotations`` at ``level`` (default
        :attr:`master_key_level`), directly or as master keys, and what the server's
        derivation costs, before any key exists (serialized, seeded bytes)."""
        level = self.master_key_level if level is None else self._galois_key_level(level, "master_key_plan")
        rl = self._core.rlwe
        derivation = _core.derivation_parameters(rl, level)
        n = self.poly_degree
        steps = sorted({rl.rotation_of(g) for g in self._galois_elements(rotations)} - {-1})
        masters = (self._rotation_count()).bit_length() - 1
        per_master = derivation.dnum * rf_io.stored_poly_bytes(n, [*derivation.q_primes, *derivation.p_primes])
        # The derivation tree's nodes: each step with its set bits added from the lowest up.
        prefixes = {step & ((2 << bit) - 1) for step in steps for bit in range(step.bit_length()) if step >> bit & 1}
        params = self._core.params
        direct = rl.digit_count(level) * rf_io.stored_poly_bytes(n, [*params.q_primes[:level + 1], *params.p_primes])
        return MasterKeyPlan(level=level, rotations=len(steps), direct_bytes=len(steps) * direct,
                             master_keys=masters, master_bytes=masters * per_master,
                             derived_key_switches=len(prefixes) * rl.digit_count(level))

    def _derive_galois_keys(self, master, rotations, extra_elements: Iterable[int], op: str) -> GaloisKeys:
        if not isinstance(master, MasterKeys):
            raise TypeError(f"[{op}] expected MasterKeys (ctx.master_keys or keygen(master_rotations=True)), "
                            f"got {type(master).__name__}")
        if master._native.fingerprint != self.fingerprint:
            raise ValueError(f"[{op}] the master keys were made under different parameters (fingerprint mismatch)")
        return GaloisKeys(_core.derive_galois_keys(master._native, self._galois_elements(rotations, extra_elements)),
                          self)

    def _galois_key_level(self, level, op: str) -> int:
        """The highest level Galois keys serve: ``max_level`` by default, the top of
        the chain a user's ciphertexts reach (a bootstrappable CKKS chain keeps its
        upper levels to bootstrapping, whose keys are its own). Lower keys are
        smaller: a key's size grows with its level, and a level-``l`` key switches
        ciphertexts at levels up to ``l`` only."""
        if level is None:
            return self.max_level
        if isinstance(level, bool) or not isinstance(level, numbers.Integral) or not 0 <= level <= self.max_level:
            raise ValueError(f"[{op}] level must be an integer in [0, {self.max_level}], got {level!r}")
        return int(level)

    def _rotation_count(self) -> int:
        """How many distinct rotation steps there are (the slots of one row)."""
        return self.poly_degree // 2

    def _galois_elements(self, rotations, extra_elements: Iterable[int] = ()) -> list[int]:
        if rotations is None:
            rotations = ()
        period = self._rotation_count()
        if isinstance(rotations, str):
            if rotations != "power_of_two":
                raise ValueError(f"[{self.scheme}.keygen] rotations must be a list of steps or 'power_of_two', got "
                                 f"{rotations!r}")
            rotations = [s * (1 << k) for k in range(period.bit_length() - 1) for s in (1, -1)]
        elements = []
        for r in rotations:
            if isinstance(r, bool) or not isinstance(r, numbers.Integral):
                raise TypeError(f"[{self.scheme}.keygen] rotation steps are integers, got {r!r}")
            if int(r) % period == 0:
                continue
            g = self._core.rlwe.galois_element(int(r))
            if g not in elements:
                elements.append(g)
        for g in extra_elements:
            if g not in elements:
                elements.append(g)
        return elements

    def set_keys(self, keys: KeySet | None) -> None:
        """Makes ``keys`` the evaluation keys for ciphertexts that carry none (e.g. loaded ones).
        The context holds them, and they refer to it: the two go together when Python's cycle
        collector runs, or the keys at once after ``ctx.set_keys(None)`` once nothing else
        holds them. (keygen's keys are the default without this hold.)"""
        self._default_keys = keys

    def _own_secret_key(self, secret_key, op: str) -> SecretKey:
        """``secret_key`` after checking that it is a secret key of these parameters."""
        if not isinstance(secret_key, SecretKey):
            raise TypeError(f"[{op}] expected a SecretKey, got {type(secret_key).__name__}")
        if secret_key._native.fingerprint != self.fingerprint:
            raise ValueError(f"[{op}] the secret key was made under different parameters (fingerprint mismatch)")
        return secret_key

    # ---- device ---------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Waits until this context's queued GPU work has finished (no-op on the CPU)."""
        if self._queue:
            _core.synchronize(self.device)

    def frame(self):
        """A compute frame on this context's device (see :func:`ringfire.cuda.frame`)."""
        from .. import cuda
        return cuda.frame(self.device)

    # ---- serialization ------------------------------------------------------------
    def _load_other(self, kind: str, data: bytes):
        """Kinds a scheme adds (None: not one of its own)."""
        return None

    def _largest_object_bytes(self) -> int:
        """A size-3 ciphertext at the top level with room for its header: what a
        compressed object of these parameters may expand to however well it
        compressed (a zero plaintext, a ciphertext times 0)."""
        params = self._core.params
        return 3 * self.poly_degree * (len(params.q_primes) + len(params.p_primes)) * 8 + (1 << 16)

    def _streamed_kinds(self) -> dict:
        """Streamed key kinds: name -> (wrapper class, native streamed loader)."""
        return {"public key": (PublicKey, _core.stream_load_public_key),
                "relinearization key": (RelinKey, _core.stream_load_relin_key),
                "Galois key set": (GaloisKeys, _core.stream_load_galois_keys),
                "master key set": (MasterKeys, _core.stream_load_master_keys)}

    def _load_streamed(self, stream):
        """The next key in ``stream`` (None at its end)."""
        header = rf_io.read_envelope_header(stream)
        if header is None:
            return None
        kind, size = header
        kinds = self._streamed_kinds()
        if kind not in kinds:
            raise ValueError(f"[io.load] a {kind} does not belong to {self.scheme} parameters")
        wrapper, load = kinds[kind]
        return wrapper(load(self._core.rlwe, stream.readinto, size), self)

    def load_from(self, file):
        """Reads one key written by ``key.save_to(file)`` (or ``to_bytes()`` without
        ``mac_key``, ``password`` or compression) from ``file``, a path or a binary file
        object, as it arrives, never holding its bytes whole (N16_BOOT's 6.96 GiB of
        bootstrapping keys loaded with 6 MiB beyond them, measured). Every field is checked
        as ``load`` checks it, and the trailing checksum decides whether the key is
        returned; a truncated, corrupted or foreign stream raises ``ValueError``."""
        with _open_for_reading(file) as f:
            key = self._load_streamed(rf_io.Stream(f))
        if key is None:
            raise ValueError("[io.load] the stream is empty")
        return key

    def _mapped_kinds(self) -> dict:
        """Key kinds with an image form: name -> (wrapper class, native mapping)."""
        return {"relinearization key": (RelinKey, _core.map_relin_key),
                "Galois key set": (GaloisKeys, _core.map_galois_keys)}

    def map_keys(self, path, *, verify: bool = True):
        """The keys of the image at ``path`` (``key.save_image(path)``), mapped read-only
        rather than loaded: they take no memory of this process, the kernel pages them in
        as they are used, shares them between processes that map the same file and drops
        them under memory pressure (docs/keys.md). The header (kind, parameters, every
        key's level, digits and source, and the file's exact size) is checked first;
        ``verify`` also checks the keys' checksum, reading every page once (about a
        second for N16_BOOT's keys from the page cache). A foreign, truncated or corrupted
        image raises ``ValueError``; so does an image of these parameters' other kinds."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"[io.map_keys] no key image at {path}")
        if not isinstance(verify, bool):
            raise TypeError(f"[io.map_keys] verify takes True or False, got {verify!r}")
        kind = _core.key_image_kind(path)
        kinds = self._mapped_kinds()
        if kind not in kinds:
            raise ValueError(f"[io.map_keys] a {kind} image does not belong to {self.scheme} parameters")
        wrapper, native_map = kinds[kind]
        return wrapper(native_map(self._core.rlwe, path, verify), self)

    def load_keys(self, file) -> KeySet:
        """Reads a key set written by ``keys.save_to(file)``: every key in the stream,
        each checked as :meth:`load_from` checks it, into one :class:`KeySet`."""
        keys = KeySet()
        slots = {PublicKey: "public", RelinKey: "relin", GaloisKeys: "galois", MasterKeys: "master"}
        with _open_for_reading(file) as f:
            stream = rf_io.Stream(f)
            while (key := self._load_streamed(stream)) is not None:
                name = slots.get(type(key), "bootstrap")
                if getattr(keys, name) is not None:
                    raise ValueError(f"[io.load] the stream holds two {type(key).__name__} objects")
                setattr(keys, name, key)
        return keys

    def load(self, data: bytes, *, mac_key: bytes | None = None, password=None):
        """Reads any object written by ``to_bytes()`` under these parameters.

        ``mac_key``: the bytes must carry a valid tag under this key (objects from
        another party: :mod:`ringfire.io`); ``password``: for a password-protected
        secret key. Malformed, tampered or foreign bytes raise ``ValueError``."""
        data = rf_io.unwrap(data, mac_key, password, max_size=self._largest_object_bytes())
        kind = _core.envelope_kind(data)  # the loader below checks the whole envelope
        rl = self._core.rlwe
        # Read on the host, placed on this context's device as its encryptions are (the upload
        # waits for the first operation there): a load and an encryption combine without a .to().
        if kind == "ciphertext":
            return self._ciphertext_type(_core.load_ciphertext(rl, data), self, device=self.device)
        if kind == "plaintext":
            return self._plaintext_type(_core.load_plaintext(rl, data), self, device=self.device)
        if kind == "public key":
            return PublicKey(_core.load_public_key(rl, data), self)
        if kind == "relinearization key":
            return RelinKey(_core.load_relin_key(rl, data), self)
        if kind == "embedding key":
            return EmbeddingKey(_core.load_embedding_key(rl, data), self)
        if kind == "Galois key set":
            return GaloisKeys(_core.load_galois_keys(rl, data), self)
        if kind == "master key set":
            return MasterKeys(_core.load_master_keys(rl, data), self)
        if kind == "secret key":
            return SecretKey(_core.load_secret_key(rl, data), self)
        other = self._load_other(kind, data)
        if other is not None:
            return other
        # Parameters saved without the security check load only into a context
        # that was itself made with that opt-out.
        with warnings_at_caller():
            params = _core.load_parameters(data, insecure_no_security_check=self.params.security == 0)
        if params.fingerprint != self.fingerprint:
            raise ValueError("[io.load] these parameters differ from this context's (fingerprint mismatch)")
        return params


def _open_for_reading(file):
    """``file`` opened for reading when it is a path, else as given (and left open)."""
    if hasattr(file, "read") or hasattr(file, "readinto"):
        return contextlib.nullcontext(file)
    return open(file, "rb", buffering=0)


@dataclass(frozen=True)
class MasterKeyPlan:
    """Galois keys sent directly against master keys the server derives them from
    (:meth:`ContextBase.master_key_plan`); bytes are serialized (seeded) sizes."""

    level: int
    rotations: int
    direct_bytes: int
    master_keys: int
    master_bytes: int
    derived_key_switches: int  # what the server's derivation runs (each in the wider derivation context)

    def __str__(self) -> str:
        mb = 1e6
        return (f"{self.rotations} rotations at level {self.level}: {self.direct_bytes / mb:.1f} MB of Galois keys, "
                f"or {self.master_keys} master keys, {self.master_bytes / mb:.1f} MB "
                f"({self.direct_bytes / max(self.master_bytes, 1):.1f}x less), from which the server derives them "
                f"in {self.derived_key_switches} key switches")


class _OnQueue:
    """The native evaluator with every call issued on a context's stream
    (unless the caller already chose a stream with ``with rf.cuda.stream()``)."""

    def __init__(self, native, queue: int):
        self._native_evaluator = native
        self._queue = queue

    def _on_queue(self, method):
        queue = self._queue

        def on_queue(*args, **kwargs):
            previous = _core.exchange_current_queue(queue)
            if previous:  # an explicit stream scope wins
                _core.exchange_current_queue(previous)
                return method(*args, **kwargs)
            try:
                return method(*args, **kwargs)
            finally:
                _core.exchange_current_queue(previous)

        return on_queue

    def __getattr__(self, name):  # first use of a method only: the wrapper is cached on the instance
        on_queue = self._on_queue(getattr(self._native_evaluator, name))
        setattr(self, name, on_queue)
        return on_queue

    def passing_self(self, function, *args, **kwargs):
        """``function(native evaluator, *args)`` on the stream (the bootstrapper's functions
        take the evaluator itself)."""
        return self._on_queue(function)(self._native_evaluator, *args, **kwargs)


def call_with_evaluator(evaluator, function, *args, **kwargs):
    """``function(native evaluator, *args)`` for a context's ``_core_evaluator``, on its stream."""
    if isinstance(evaluator, _OnQueue):
        return evaluator.passing_self(function, *args, **kwargs)
    return function(evaluator, *args, **kwargs)
