"""Key objects of every scheme: thin wrappers over the native keys that know their context."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field

from .. import _core
from .. import io as rf_io
from .._checks import warn_at_caller
from .residency import Placed


def _restore_key(context, data: bytes, device: str):
    key = context.load(data)
    return key if device == "cpu" else key.to(device)


class _Key(Placed):
    _save = None
    _stream = None  # the native streamed save, for key kinds that have one
    _image = False  # whether save_image writes it (switching keys)

    def __init__(self, native, context):
        self._context = context
        self._place(native)

    @property
    def context(self):
        return self._context

    def to(self, device: str):
        """This key on ``device`` (lazy: uploaded at the first operation there, then cached)."""
        return self._moved(device)

    def expand(self):
        """Expands the key's seeded half now, where it has one (relinearization, Galois and
        bootstrapping keys; all in parallel), and returns the key. Keys made by keygen or
        loaded from seeded bytes hold half their memory until their first use expands them
        (docs/keys.md): call this before timing or measuring memory."""
        native = self._host()
        if hasattr(native, "expand"):
            native.expand()
        return self

    def to_bytes(self, *, mac_key: bytes | None = None, compress=False) -> bytes:
        """Serialized form (see ``Context.load``); with ``mac_key``, authenticated
        (:func:`ringfire.io.authenticate`); ``compress=True`` or a level: Zstandard."""
        return rf_io.wrap(type(self)._save(self._host()), mac_key, rf_io.compress_level(compress))

    def save_to(self, file) -> int:
        """Streams the serialized key (the bytes ``to_bytes()`` returns) into ``file``, a
        path or a binary file object with ``write`` (a socket's ``makefile("wb")``),
        without ever holding those bytes whole: writing costs ~1 MiB beyond the key.
        Returns the bytes written; ``ctx.load_from(file)`` reads them back the same way.
        Not authenticated: across a trust boundary, check a digest of the file or use
        ``to_bytes(mac_key=...)`` (docs/keys.md)."""
        if type(self)._stream is None:
            raise TypeError(f"[io.save_to] a {type(self).__name__} is not streamed; use to_bytes()")
        return rf_io.stream_out(file, self._stream_into)

    @property
    def mapped(self) -> bool:
        """Whether the key views a mapped image (``ctx.map_keys``) instead of memory of this process."""
        return bool(getattr(self._res.any(), "mapped", False))

    def save_image(self, path, *, expanded: bool = False) -> int:
        """Writes the key as an image (the words as they sit in memory, page-aligned) to
        ``path``, which ``ctx.map_keys(path)`` maps read-only instead of loading: the keys'
        pages are then the kernel's page cache, shared by every process that maps the
        file and dropped under memory pressure, not memory of this process (docs/keys.md).
        Written beside ``path`` and renamed there, so a reader never sees half an image.
        Keys expanded when written map expanded; seeded ones keep their seeds and expand as
        they do now, unless ``expanded=True``, which writes their uniform halves expanded
        from the seeds a digit at a time (this key stays seeded: writing takes one
        polynomial of memory, not the halves). Relinearization, Galois and bootstrapping
        keys; returns the bytes written. An image is a local cache, not a wire format: send
        ``to_bytes()``."""
        if not type(self)._image:
            raise TypeError(f"[io.save_image] a {type(self).__name__} has no image form (relinearization, Galois "
                            "and bootstrapping keys have)")
        if not isinstance(expanded, bool):
            raise TypeError(f"[io.save_image] expanded takes True or False, got {expanded!r}")
        path = os.fspath(path)
        partial = f"{path}.partial-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            written = _core.save_key_image(self._host(), partial, expanded)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return written

    def _stream_into(self, write) -> None:
        """Hands the serialized key to ``write`` piece by piece."""
        type(self)._stream(self._host(), write)

    def __reduce__(self):
        # Through the checksummed format, under the (pickled) context's parameters.
        return _restore_key, (self._context, type(self)._save(self._host()), self._device)

    def __copy__(self):
        return self  # keys are immutable

    def __deepcopy__(self, memo):
        return self

    def _describe(self) -> str:
        """What __repr__ shows besides the type: overridden per key."""
        return ""

    def __repr__(self) -> str:
        ctx = self._context
        extra = self._describe()
        where = "" if self._device == "cpu" else f", device={self._device!r}"
        return (f"{type(self).__name__}({ctx.scheme}, N={ctx.poly_degree}{', ' + extra if extra else ''}"
                f"{where}, fingerprint={ctx.fingerprint:#018x})")


class SecretKey(_Key):
    """The secret key: decrypts and generates the other keys. Keep it private."""

    _save = staticmethod(_core.save_secret_key)

    def __repr__(self) -> str:
        ctx = self._context
        return f"SecretKey({ctx.scheme}, N={ctx.poly_degree}, <hidden>)"

    def to_bytes(self, *, password=None, mac_key: bytes | None = None, scrypt_log_n: int = 17,
                 compress=False) -> bytes:
        """Serialized form. With ``password`` (str or bytes) the key is encrypted
        (scrypt + ChaCha20-Poly1305, :func:`ringfire.io.seal_secret`) and
        ``ctx.load(data, password=...)`` reads it back; without one the bytes
        hold the key in the clear, and this warns."""
        raw = _core.save_secret_key(self._native)
        level = rf_io.compress_level(compress)
        if level is not None:  # before sealing: sealed bytes do not compress
            raw = rf_io.compress(raw, level)
        if password is None:
            warn_at_caller(f"[{self._context.scheme}.SecretKey] serialized without a password: anyone who reads these "
                           "bytes decrypts everything; pass password=... to encrypt them")
        else:
            raw = rf_io.seal_secret(raw, password, scrypt_log_n=scrypt_log_n)
        return rf_io.wrap(raw, mac_key)

    def __reduce__(self):
        warn_at_caller(f"[{self._context.scheme}.SecretKey] pickled: the pickle holds the key in the clear; "
                       "anyone who reads it decrypts everything")
        return super().__reduce__()

    def to(self, device: str):
        if _core.parse_device(str(device)) != "cpu":
            raise ValueError(f"[{self._context.scheme}.SecretKey] the secret key stays on the host: decryption and key "
                             "generation run there (GPU ciphertexts are downloaded by decrypt)")
        return self


class PublicKey(_Key):
    """Encrypts (anyone holding it can encrypt; only the secret key decrypts)."""

    _save = staticmethod(_core.save_public_key)
    _stream = staticmethod(_core.stream_public_key)


class RelinKey(_Key):
    """Relinearization key: turns a ciphertext product (size 3) back into size 2."""

    _save = staticmethod(_core.save_relin_key)
    _stream = staticmethod(_core.stream_relin_key)
    _image = True

    level = property(lambda self: self._res.any().level, doc="The highest ciphertext level it switches.")
    nbytes = property(lambda self: self._res.any().nbytes, doc="Bytes it holds in memory.")


class EmbeddingKey(_Key):
    """The key switch from a smaller ring's secret, embedded (X -> X^(N/n)), to this ring's
    own: how results of work in a subring land here (the way back from FHEW in a small ring,
    :mod:`ringfire.switching`). A kind of its own on the wire, so a relinearization or Galois
    key given in its place by mistake is refused (a label, not authentication: against
    tampering, authenticate the bytes, docs/security.md). Lives on the host."""

    _save = staticmethod(_core.save_embedding_key)

    level = property(lambda self: self._res.any().level, doc="The highest ciphertext level it switches.")
    nbytes = property(lambda self: self._res.any().nbytes, doc="Bytes it holds in memory.")
    subring_degree = property(lambda self: self._res.any().subring_degree,
                              doc="The degree of the ring whose secret it switches from.")

    def to(self, device: str):
        if _core.parse_device(str(device)) != "cpu":
            raise ValueError("[rlwe.EmbeddingKey] an embedding key stays on the host: the subring work it serves "
                             "runs there")
        return self

    def _describe(self) -> str:
        return f"from N={self.subring_degree}"


class GaloisKeys(_Key):
    """Rotation and conjugation keys, one per Galois element."""

    _save = staticmethod(_core.save_galois_keys)
    _stream = staticmethod(_core.stream_galois_keys)
    _image = True

    @property
    def elements(self) -> list[int]:
        return list(self._native.elements())

    def __len__(self) -> int:
        return len(self._native)

    def rotations(self) -> list[int]:
        """The rotation steps (left, in [0, slots)) these keys hold directly."""
        rlwe = self._context._core.rlwe
        return sorted(k for k in (rlwe.rotation_of(g) for g in self.elements) if k >= 0)

    def has_conjugation(self) -> bool:
        return self._native.has(self._context._core.rlwe.conjugation_element())

    nbytes = property(lambda self: self._res.any().nbytes, doc="Bytes the keys hold in memory.")

    @property
    def level(self) -> int | None:
        """The highest ciphertext level every key switches (None when empty)."""
        native = self._res.any()  # metadata: no download of device-resident keys
        return min((native.level(g) for g in native.elements()), default=None)

    def _describe(self) -> str:
        steps = self.rotations()
        shown = ", ".join(map(str, steps[:6])) + (", ..." if len(steps) > 6 else "")
        return (f"{len(self)} keys, rotations [{shown}]" + (", conjugation/row swap" if self.has_conjugation() else "")
                + (f", level {self.level}" if len(self) else ""))


class MasterKeys(_Key):
    """Master rotation keys (hierarchical rotation keys, Lee-Lee-Kim-No 2023): one per
    power-of-two rotation and, optionally, the conjugation (BGV/BFV: the row swap),
    from which a server derives any rotation key at or below :attr:`level` with
    ``ctx.derive_galois_keys(master, rotations)``, without the secret key. What a
    client sends instead of a model's Galois keys: log2(N/2) keys however many
    rotations the model makes (docs/keys.md)."""

    _save = staticmethod(_core.save_master_keys)
    _stream = staticmethod(_core.stream_master_keys)

    level = property(lambda self: self._native.level, doc="The highest ciphertext level derived keys switch.")
    nbytes = property(lambda self: self._native.nbytes, doc="Bytes the master keys hold in memory.")

    def __len__(self) -> int:
        return len(self._native)

    def has_conjugation(self) -> bool:
        return self._context._core.rlwe.conjugation_element() in self._native.elements()

    def to(self, device: str):
        """Master keys stay on the host: derivation runs there (the derived keys move)."""
        return self

    def _describe(self) -> str:
        return (f"{len(self)} master keys (rotations 1, 2, 4, ..."
                + (", conjugation" if self.has_conjugation() else "") + f"), level {self.level}")


@dataclass
class KeySet:
    """The public evaluation keys: what a server needs to compute on ciphertexts."""

    public: PublicKey | None = None
    relin: RelinKey | None = None
    galois: GaloisKeys | None = None
    bootstrap: "_Key | None" = None  # CKKS: ckks.bootstrapping.BootstrapKeys
    master: MasterKeys | None = None  # what the server derives Galois keys from
    _extra: dict = field(default_factory=dict, repr=False)

    def to(self, device: str) -> "KeySet":
        """The same keys, placed on ``device`` lazily (each key is uploaded the first
        time an operation there needs it, then cached)."""
        moved = {name: (getattr(self, name).to(device) if getattr(self, name) is not None else None)
                 for name in ("public", "relin", "galois", "bootstrap")}
        return KeySet(**moved, master=self.master, _extra=self._extra)

    def expand(self) -> "KeySet":
        """Expands every seeded switching key of the set now (``_Key.expand``); returns the set."""
        for name in ("relin", "galois", "bootstrap"):
            if getattr(self, name) is not None:
                getattr(self, name).expand()
        return self

    def save_to(self, file) -> int:
        """Streams every key this set holds (public, relin, galois, bootstrap, master, in
        that order) into one file (a path or a binary file object), one envelope after
        another, never holding a key's bytes whole; ``ctx.load_keys(file)`` reads the set
        back. Returns the bytes written."""
        present = [getattr(self, name) for name in ("public", "relin", "galois", "bootstrap", "master")]
        present = [key for key in present if key is not None]
        return rf_io.stream_out(file, lambda write: [key._stream_into(write) for key in present])

    def require_relin(self, op: str) -> RelinKey:
        if self.relin is None:
            raise ValueError(f"[{op}] needs a relinearization key; generate keys with ctx.keygen()")
        return self.relin

    def require_galois(self, op: str) -> GaloisKeys:
        if self.galois is None:
            if self.master is not None:
                raise ValueError(f"[{op}] needs Galois keys: derive them from the master keys first, "
                                 "keys.galois = ctx.derive_galois_keys(keys.master, rotations)")
            raise ValueError(f"[{op}] needs Galois keys; pass rotations=[...] (or conjugate=True) to ctx.keygen()")
        return self.galois

    def require_bootstrap(self, op: str):
        if self.bootstrap is None:
            raise ValueError(f"[{op}] needs bootstrapping keys: generate keys with ctx.keygen(bootstrap=True) "
                             "(or load them and set keys.bootstrap)")
        return self.bootstrap
