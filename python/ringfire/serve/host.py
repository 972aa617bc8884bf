"""The model a server hosts: its context (the parameters every client must use), the
``ringfire.nn`` model, which evaluation keys it needs and how large they may be, and the
sessions' keys loaded from the store (once per session, kept while memory allows).

The server never holds a secret or public key: it needs the relinearization key, the
Galois keys of the model's rotations (inter packing) and the bootstrapping keys (models
that bootstrap). A key set is refused before it is stored when its declared size is
larger than those parameters make such keys, and checked when complete: its envelope,
its parameters, its kind, and the rotations it covers.

Checked keys are written once as key images beside their blob (``<blob>.image``:
relinearization and Galois keys expanded, bootstrapping keys as their seeded halves,
which expand at each use) and mapped from then on, read-only: their pages are the
kernel's page cache, shared by every server process that maps them and dropped under
memory pressure, not the server's anonymous memory, and a restart maps them again
instead of parsing the upload (docs/serving.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from .. import _core, ckks, nn
from ..memory_guard import available_bytes
from ..nn.client import fresh_level
from ..nn.nonlinear import exact as exact_layer
from ..nn.runtimes import is_ct
from .. import io as rf_io
from ..rlwe.keys import KeySet
from . import wire
from .config import ServeConfig

log = logging.getLogger("ringfire.serve")
MAX_DEFAULT_WORKERS = 4  # jobs at once when the operator does not say (memory permitting)

# Keys of a few sessions stay loaded (the LRU's bound is in bytes, set by the server; mapped
# key images count no bytes, as their pages are the page cache's, and at most MAX_CACHED_BLOBS
# stay mapped, each one mapping of the process's limited number).
DEFAULT_KEY_CACHE_BYTES = 8 * 2**30
MAX_CACHED_BLOBS = 1024
SLACK = 1 << 20  # envelope headers, seeds, the zstd frame's own bytes
_ENVELOPE_KINDS = {"relin": "relinearization key", "galois": "Galois key set", "bootstrap": "bootstrap key set",
                   "master": "master key set"}


class NotForThisModel(ValueError):
    """Sound keys of these parameters that do not serve this model (rotations it needs are not
    among them): refused for this model's sessions, kept in the store for the others."""


class CheckBusy(Exception):
    """Keys a link would check cannot be checked now (another link's check is reading keys):
    the caller links them unchecked (their job checks them) or asks the client to retry."""


class StoredKeysDamaged(ValueError):
    """Stored keys, sound when they were kept, that no longer load (their file damaged or gone):
    the store forgets them, so that their owner can send them again (the same digest would
    otherwise link the damaged copy for good). ``kind`` and ``path``: which."""

    def __init__(self, kind: str, path, error: Exception):
        # Said to the tenant: no server paths (an OSError's own text names the file).
        self.reason = f"{type(error).__name__}: {error.strerror}" if isinstance(error, OSError) else str(error)
        super().__init__(f"[serve] the stored {kind} keys {Path(path).name[:16]}... no longer load ({self.reason})")
        self.kind, self.path = kind, Path(path)


class Host:
    def __init__(self, config: ServeConfig, key_cache_bytes: int = DEFAULT_KEY_CACHE_BYTES):
        self.config = config
        if config.params:
            with open(config.params, "rb") as f:
                data = f.read()
            insecure = ckks.Context._load_parameters(data, None, True).security == 0
            self.ctx = ckks.Context.from_bytes(data, bootstrap=config.bootstrap, insecure_no_security_check=insecure,
                                               device=config.device)
        else:
            preset = ckks.PRESETS.get(config.preset)
            if config.bootstrap and preset is not None and not preset.get("bootstrap"):
                raise ValueError(f"[serve] bootstrapping options ({sorted(config.bootstrap)}: --chained-rotations) "
                                 f"need a preset that bootstraps, such as N16_BOOT; {config.preset} does not")
            self.ctx = ckks.Context.preset(config.preset, device=config.device,
                                           **({"bootstrap": config.bootstrap} if config.bootstrap else {}))
        options = dict(activation=config.activation, packing=config.packing, masking=config.masking)
        if config.activation == "poly":
            if not config.calibration:
                raise ValueError("[serve] --activation poly needs --calibration inputs.npy (they bound the "
                                 "polynomial activations)")
            options["calibration"] = np.load(config.calibration)
        self.model = nn.load(config.model, self.ctx, **options)
        self.plan = plan = self.model.plan()
        if not plan.fits:
            raise ValueError(f"[serve] the parameters are too shallow for {config.model}: it needs "
                             f"{plan.levels_needed} levels, the context has {plan.levels_available}; try "
                             f"{plan.suggestion}")
        self.rotations = self.model.rotations() if config.packing == "inter" else []
        self.needs = ["relin"] + (["galois"] if self.rotations else []) + (["bootstrap"] if self.model.bootstrap
                                                                            else [])
        # Master keys may stand in for the Galois keys where the server can derive keys for
        # every level the model rotates at (its Galois keys serve the top of the user's chain).
        self.takes_master = bool(self.rotations) and self._master_level() >= self.ctx.max_level
        self._max_key_bytes: dict[str, int] = {}
        # Loaded keys by blob (path -> (key object, file size)), least recently used first:
        # sessions that link the same blob share one copy, and the background check's load is
        # the one the first job uses.
        self._cache: OrderedDict[str, tuple[object, int]] = OrderedDict()
        self._cache_bytes, self._cache_limit = 0, key_cache_bytes
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}  # blob path -> held while it loads
        self._link_loads = threading.Lock()  # a link's load of keys to check them: one at a time

    def _master_level(self) -> int:
        try:
            return self.ctx.master_key_level
        except ValueError:  # no level has room for master keys under the security bound
            return -1

    def accepts(self, kind: str) -> bool:
        """Whether a session may upload keys of `kind`: what the model needs, and master keys
        instead of the Galois keys where the server can derive those."""
        return kind in self.needs or (kind == "master" and self.takes_master)

    def missing(self, stored) -> list[str]:
        """The key kinds a session with keys `stored` still lacks (master keys count as the
        Galois keys, which the server derives from them)."""
        have = set(stored) | ({"galois"} if "master" in stored and self.takes_master else set())
        return [k for k in self.needs if k not in have]

    @property
    def fingerprint(self) -> str:
        return f"{self.ctx.fingerprint:016x}"

    @property
    def params_id(self) -> str:
        """The parameter identity every key envelope for this model names (hex): what the store
        records with each key it keeps, and links only keys of."""
        return self.ctx.params.identity.hex()

    def describe(self) -> dict:
        """What /v2/models/{name} says: enough for a client to make matching keys."""
        g = self.model.graph
        return {"name": self.config.name, "platform": "ringfire", "versions": ["1"],
                "inputs": [{"name": g.input_name, "datatype": "FP64", "shape": [-1, *g.input_shape]}],
                "outputs": [{"name": n, "datatype": "FP64"} for n in g.output_names],
                "parameters": {"fingerprint": self.fingerprint, "context": self.ctx.describe(),
                               "packing": self.config.packing, "activation": self.config.activation,
                               "masking": self.config.masking, "device": self.ctx.device,
                               "keys": self.needs, "rotations": self.rotations,
                               "input_level": self.model.input_level,
                               "bootstrap": bool(self.model.bootstrap), "slots": self.ctx.slots,
                               "bootstrap_options": self.ctx.bootstrap_options,
                               "insecure": self.ctx.params.security == 0,
                               "master_keys": self.takes_master,
                               # Keys may be named with their last chunk (keydigest.PENDING before);
                               # 2: the answer to a chunk before the last names the digest of what was kept.
                               "keys_named_last": 2,
                               "max_key_bytes": {k: self.max_key_bytes(k) for k in self.needs
                                                 + (["master"] if self.takes_master else [])}}}

    def input_problem(self, fields: dict) -> str | None:
        """What keeps an encrypted input (a container's fields, ``wire.check_tensor``) from
        running on this model, or None: it must be packed as the model is served, and hold a
        sample of the model's input shape (the ciphertexts' shape with batch packing, the
        container's sample shape with inter packing)."""
        if fields["packing"] != self.config.packing:
            return f"it is packed {fields['packing']!r}; this model is served with {self.config.packing!r} packing"
        return self.model.input_problem(fields["packing"], fields["cts"].shape, fields["sample_shape"])

    def answer_problem(self, layer: str, cts: np.ndarray, out_shape: tuple) -> str | None:
        """What keeps a client-aided round's answer (its entries, loaded, and the output shape
        it declares) from going on in the job, or None. The layer (the round's description,
        ``wire.node_to_json``) says what it must be: the output shape the layer makes (one
        ciphertext with inter packing), each ciphertext at the level the layer asks for or
        above (the levels the layers after it spend). Refused when it is taken, such an answer
        failed the job later (a missing feature, a layer out of levels) with no word of why."""
        node, shape, _ = wire.node_from_json(layer)
        if self.config.packing == "inter":
            expected = (1,)
        else:
            _, made = exact_layer(node, np.zeros(tuple(shape) + (1,)), shape)
            expected = tuple(int(v) for v in made)
        if tuple(out_shape) != expected or cts.size != int(np.prod(expected)):
            return (f"the layer makes {int(np.prod(expected))} entries of shape {expected}; the answer holds "
                    f"{cts.size} and says shape {tuple(out_shape)}")
        level = fresh_level(node, self.ctx)
        low = [c.level for c in cts.flat if is_ct(c) and c.level < level]
        if low:
            return (f"its ciphertexts must be at level {level} or above (the layers after it spend those levels); "
                    f"{len(low)} of them are at level {min(low)}")
        return None

    # ---- jobs at once ----------------------------------------------------------------
    def default_workers(self) -> int:
        """Jobs run at once when the operator does not say: four (some compute while others
        wait for their clients' rounds), fewer where four of this model's jobs (its plan's
        peak, keys aside) would not fit in the memory available now, one at least; one with
        inter packing (its cached diagonals are shared)."""
        if self.config.packing == "inter":
            return 1
        return int(max(1, min(MAX_DEFAULT_WORKERS, available_bytes()["bytes"] // max(1, self.plan.run_bytes))))

    # ---- key sizes --------------------------------------------------------------------
    def _switch_key_bytes(self, params=None) -> int:
        """A switching key over the whole chain of `params` (the context's by default; master
        keys and the keys derived from them: :meth:`_derivation`) written unseeded: at most dnum
        digits, each two polynomials over Q and P."""
        params = self.ctx.params if params is None else params
        limbs = len(params.q_primes) + len(params.p_primes)
        return 2 * params.dnum * limbs * self.ctx.poly_degree * 8

    def _derivation(self):
        """The parameters master keys and the Galois keys derived from them live over, at the
        model's top level."""
        return _core.derivation_parameters(self.ctx._core.rlwe, self.ctx.max_level)

    @property
    def _steps(self) -> set[int]:
        """The model's rotations as slot steps, without the identity."""
        return {r % self.ctx.slots for r in self.rotations} - {0}

    def max_key_bytes(self, kind: str) -> int:
        """The most bytes a key set of `kind` for these parameters and this model can take
        (computed once per kind: every uploaded chunk asks)."""
        if kind not in self._max_key_bytes:
            self._max_key_bytes[kind] = self._key_bytes_bound(kind)
        return self._max_key_bytes[kind]

    def beside_bytes_expected(self, kind: str) -> int:
        """The disk the server fills beside a stored key set of `kind` for this model: its key
        image (relinearization and Galois keys expanded, a page of header; bootstrapping keys
        with their seeds) and, for master keys, the Galois keys derived from them for this
        model (imaged or not, expanded). Reserved against the tenant's stored bytes when the
        upload starts, so that what is written after the upload cannot take a tenant past its
        limit (master keys: 220 MB sent for ResNet-20, 1.49 GB derived)."""
        page = 1 << 16
        if kind == "master":
            return len(self._steps) * self._switch_key_bytes(self._derivation()) + page
        if not self.config.key_images:
            return 0
        if kind == "bootstrap":
            return self.max_key_bytes("bootstrap")
        return (len(self._steps) if kind == "galois" else 1) * self._switch_key_bytes() + page

    def _key_bytes_bound(self, kind: str) -> int:
        if kind == "relin":
            return self._switch_key_bytes() + SLACK
        if kind == "galois":
            return len(self.rotations) * (self._switch_key_bytes() + SLACK) + SLACK
        if kind == "bootstrap":  # seeded, as keygen makes them (format version 5 packs them smaller than 4)
            return int(self.ctx.bootstrap_plan().held_bytes * 1.05) + 8 * SLACK
        if kind == "master":  # log2(N/2) rotations and the conjugation, over the derivation context
            per_key = self._switch_key_bytes(self._derivation()) + SLACK
            return self.ctx.poly_degree.bit_length() * per_key + SLACK
        raise KeyError(kind)

    # ---- session keys --------------------------------------------------------------------
    def check_keys(self, kind: str, path, *, keep_image: bool = True):
        """The key object in the file at `path` (a complete upload, read as it streams in, or
        its key image once one was written), or ValueError saying what is wrong: NotForThisModel
        where the keys are sound but do not serve this model.
        ``keep_image=False``: no image is written (a file about to move, or be dropped)."""
        obj = self._sound_keys(kind, path, keep_image=keep_image)
        self.require_coverage(kind, obj)
        return obj

    def _sound_keys(self, kind: str, path, *, keep_image: bool = True):
        """The keys in the file at `path` checked for what does not depend on the model (their
        kind, the parameters, every word), imaged where images are kept; ValueError otherwise."""
        obj = self._mapped(image_path(path)) if self.config.key_images else None
        if obj is None:
            obj = self._load_blob(path)
        expected = {"relin": "RelinKey", "galois": "GaloisKeys", "bootstrap": "BootstrapKeys",
                    "master": "MasterKeys"}[kind]
        if type(obj).__name__ != expected:
            raise ValueError(f"[serve] this upload holds a {type(obj).__name__}, not the {kind} keys ({expected})")
        if obj.mapped or kind == "master" or not self.config.key_images or not keep_image:
            return obj
        return self._imaged(obj, image_path(path))

    def require_coverage(self, kind: str, obj) -> None:
        """Raises NotForThisModel where sound keys of `kind` do not serve this model: Galois keys
        without one of its rotations, master keys too low or without an element its rotations
        are derived from. The same blob may serve another model of these parameters (a store
        shared by servers of several models), so this refuses it for this model alone."""
        if kind == "master":
            if obj.level < self.ctx.max_level:
                raise NotForThisModel(f"[serve] the master keys serve levels up to {obj.level}; the model rotates "
                                      f"at levels up to {self.ctx.max_level}")
            needed = {self.ctx._core.rlwe.galois_element(1 << bit) for step in self._steps
                      for bit in range(step.bit_length()) if step >> bit & 1}
            missing = sorted(needed - set(obj._native.elements()))
            if missing:
                raise NotForThisModel(f"[serve] the master keys lack the elements {missing[:8]} the model's "
                                      "rotations are derived from")
        if kind == "galois":
            have = set(obj.rotations())
            missing = sorted(self._steps - have)
            if missing:
                raise NotForThisModel(f"[serve] the Galois keys lack rotations {missing[:8]} the model needs "
                                      f"(all: {self.rotations})")

    def coverage_problem(self, kind: str, path, wait: bool = False) -> str | None:
        """Why the stored, checked keys at `path` cannot serve this model (None: they can, or
        their kind serves any model of these parameters). CheckBusy where they cannot be checked
        now (``wait``: waits its turn instead); StoredKeysDamaged where they no longer load.
        Maps or loads them into the cache where they are not there already: the session that
        links them needs them for its first job."""
        if kind not in ("galois", "master"):
            return None
        try:
            if self._hit(str(path)) is not None:
                self.warm(kind, path)
                return None
            # Not in the cache, the check reads every byte (a load, or an image mapped and
            # verified: GBs at N = 2^16), and links are many (jobs and key checks are bounded
            # alike): one such check at a time. While one runs, no request thread waits for it.
            if not wait and self._being_loaded(path):  # by a job or the upload's check: theirs, not a wait here
                raise CheckBusy(f"[serve] these {kind} keys are being loaded; not checked now")
            if not self._link_loads.acquire(blocking=wait):
                raise CheckBusy(f"[serve] another link's check of stored keys is reading them; {kind} keys "
                                "are not checked now")
            try:
                self.warm(kind, path)
            finally:
                self._link_loads.release()
        except NotForThisModel as e:
            return str(e)
        except OSError as e:  # the disk, not the keys: left to the job, which says so if it fails too
            log.warning("stored %s keys %s not checked for a link: %s", kind, path, e)
        return None

    def _mapped(self, image):
        """The keys of the image at `image`, mapped and verified (None: no usable image; a
        damaged one is removed, and the blob it came from is loaded again)."""
        if not image.exists():
            return None
        try:
            return self.ctx.map_keys(image, verify=True)
        except FileNotFoundError:  # removed meanwhile (found damaged by another process)
            return None
        except ValueError as e:
            log.warning("key image %s refused (%s): loading its blob again", image.name, e)
            image.unlink(missing_ok=True)
            return None

    def _imaged(self, obj, image):
        """`obj` written as a key image at `image` and mapped from there, so the loaded copy
        goes (relinearization and Galois keys written expanded, a digit at a time: mapped
        whole, nothing to expand per process; bootstrapping keys keep their seeds and expand
        at each use). Where the image cannot be written (a full disk, say), the loaded keys
        serve as they are."""
        try:
            obj.save_image(image, expanded=type(obj).__name__ != "BootstrapKeys")
            os.chmod(image, 0o444)
            return self.ctx.map_keys(image, verify=False)  # written from checked keys just now
        except (OSError, RuntimeError, ValueError) as e:
            log.warning("key image %s not written (%s): serving the loaded keys", image.name, e)
            return obj

    @contextlib.contextmanager
    def loading(self, path):
        """Held while a stored key loads: one load of a blob at a time, so a job that starts
        while the background check (keychecks.py) still reads the same keys waits for it
        instead of holding a second copy (N16_BOOT's bootstrapping keys are 7 GiB loaded)."""
        with self._lock:
            lock = self._loading.setdefault(str(path), threading.Lock())
        with lock:
            yield

    def _being_loaded(self, path) -> bool:
        """Whether a load of the blob at `path` holds :meth:`loading` now."""
        with self._lock:
            lock = self._loading.get(str(path))
        return lock is not None and lock.locked()

    def check_header(self, kind: str, path, size: int) -> bool:
        """The quick check of a complete upload, before it is kept: its envelope says it holds
        `kind` keys of these parameters, `size` bytes long. False for a blob that has no plain
        envelope to read (compressed or authenticated): :meth:`check_keys` must load it now.
        The full check (:meth:`check_keys`) follows off the upload's path, and a job that does
        not find the keys loaded and checked already makes it itself (:meth:`warm`)."""
        with open(path, "rb") as f:
            head = f.read(rf_io.STREAM_HEADER.size)
            if not head.startswith(b"RFHE"):
                return False
            found, total = rf_io.read_envelope_header(rf_io.Stream(f, head))  # the fields checked
        identity = rf_io.STREAM_HEADER.unpack(head)[3]
        if found != _ENVELOPE_KINDS[kind]:
            raise ValueError(f"[serve] this upload holds a {found}, not the {kind} keys")
        if identity != self.ctx.params.identity:
            raise ValueError("[serve] these keys were made for other parameters than the model's")
        if total != size:
            raise ValueError(f"[serve] the envelope says {total} bytes, the upload has {size}")
        return True

    def keys_for(self, sid: str, paths: dict) -> KeySet:
        """The session's keys, each blob loaded and checked once (:meth:`warm`) and shared by
        every session that links it while it stays in the cache (least recently used blobs
        dropped past the cache's bound)."""
        loaded = {kind: self.warm(kind, path) for kind, path in paths.items()}  # StoredKeysDamaged: forgotten
        if "galois" not in loaded and "master" in paths:
            loaded["galois"] = self._derived(paths["master"], loaded["master"])
        return KeySet(relin=loaded.get("relin"), galois=loaded.get("galois"), bootstrap=loaded.get("bootstrap"))

    def warm(self, kind: str, path):
        """The checked key object of the blob at `path` (:meth:`check_keys`): from the cache, or
        loaded now (one load of a blob at a time) and kept. The cache holds sound keys whatever
        model they serve; NotForThisModel where they do not serve this one; StoredKeysDamaged
        where they no longer load (checked when they were kept, so the file changed or went)."""
        try:
            obj = self._cached(path, lambda: self._sound_keys(kind, path))
        except ValueError as e:
            raise StoredKeysDamaged(kind, path, e) from e
        except FileNotFoundError as e:
            if Path(path).exists():
                raise  # not the keys: a file beside them went meanwhile (an image another process removed)
            raise StoredKeysDamaged(kind, path, e) from e
        try:
            self.require_coverage(kind, obj)
        except NotForThisModel as e:
            e.kind, e.path = kind, Path(path)  # for a job that finds them so (its session loses them)
            raise
        return obj

    def _cached(self, path, load):
        """What ``load()`` makes of the file at `path`: from the cache, or made now under
        :meth:`loading` (a load of the same file that held it first may have kept it) and kept."""
        if (hit := self._hit(str(path))) is not None:
            return hit
        with self.loading(path):
            if (hit := self._hit(str(path))) is not None:
                return hit
            obj = load()
            self._keep(str(path), obj, path.stat().st_size if path.exists() else 0)
        return obj

    def _hit(self, key: str):
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            self._cache.move_to_end(key)
            return entry[0]

    def _keep(self, key: str, obj, size: int) -> None:
        """Keeps `obj` (the keys of the blob at path `key`), then drops keys past the cache's
        bounds: the least recently used of the tenant that holds the most of what is over
        (bytes, or entries), so that a tenant that goes through many key sets evicts its own
        before another's."""
        size = 0 if getattr(obj, "mapped", False) else size  # mapped keys are the page cache's
        with self._lock:
            self._cache[key] = (obj, size)
            self._cache_bytes += size
            while len(self._cache) > 1:
                over_bytes = self._cache_bytes > self._cache_limit
                if not over_bytes and len(self._cache) <= MAX_CACHED_BLOBS:
                    break
                held: dict[str, int] = {}
                for path, (_, bytes_) in self._cache.items():
                    owner = os.path.dirname(path)  # the tenant's key folder
                    held[owner] = held.get(owner, 0) + (bytes_ if over_bytes else 1)
                most = max(held, key=held.get)
                victim = next(path for path, (_, bytes_) in self._cache.items()  # its least recent (that
                              if os.path.dirname(path) == most and (bytes_ or not over_bytes))  # holds bytes)
                self._cache_bytes -= self._cache.pop(victim)[1]

    def evict(self, path) -> None:
        """Drops the blob at `path` from the cache (its keys were refused or deleted)."""
        with self._lock:
            entry = self._cache.pop(str(path), None)
            if entry:
                self._cache_bytes -= entry[1]

    def _load_blob(self, path):
        """A stored key: streamed from its file (no copy of its bytes beside the keys), unless the
        client sent it compressed or authenticated, which loads whole."""
        with open(path, "rb") as f:
            plain = f.read(4) == b"RFHE"
        return self.ctx.load_from(path) if plain else self.ctx.load(path.read_bytes())

    def derive(self, master):
        """The model's Galois keys derived from `master` (seconds at N = 2^16)."""
        return self.ctx.derive_galois_keys(master, self.rotations)

    def derived_path(self, master_path):
        """Where this model's Galois keys derived from the stored master keys at `master_path`
        are kept (named by the master keys' blob and the rotations; their image beside it)."""
        steps = hashlib.sha256(json.dumps(sorted(self.rotations)).encode()).hexdigest()[:16]
        return master_path.with_name(f"{master_path.name}.galois-{steps}")

    def derivation_kept(self, master_path) -> bool:
        """Whether this model's Galois keys from the master keys at `master_path` are kept already."""
        path = self.derived_path(master_path)
        return path.exists() or image_path(path).exists()

    def _derived(self, master_path, master):
        """The Galois keys derived from the stored master keys at `master_path`: derived once and
        kept beside them as a key image (:meth:`derived_path`), so other sessions with the same
        keys and restarts map them instead of deriving again."""
        path = self.derived_path(master_path)

        def load():
            if self.config.key_images and (mapped := self._mapped(image_path(path))) is not None:
                return mapped
            galois = self.ctx.load_from(path) if path.exists() else self.derive(master)
            if not self.config.key_images:
                if not path.exists():
                    galois.save_to(path)  # atomic: a temporary file renamed into place
                return galois
            image = self._imaged(galois, image_path(path))
            if image.mapped:
                path.unlink(missing_ok=True)  # the image replaces the derived keys' envelope
            return image

        return self._cached(path, load)

    def max_ciphertext_bytes(self) -> int:
        return self.ctx._largest_object_bytes()

    def max_input_entries(self) -> int:
        return max(1, int(np.prod(self.model.graph.input_shape))) if self.config.packing == "batch" else self.ctx.slots


def image_path(blob):
    """Where the key image of the stored blob at `blob` lives (beside it)."""
    return blob.with_name(blob.name + ".image")
