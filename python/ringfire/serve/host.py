"""The model a server hosts: its context (the parameters every client must use), the
``ringfire.nn`` model, which evaluation keys it needs and how large they may be, and the
sessions' keys loaded from the store (once per session, kept while memory allows).

The server never holds a secret or public key: it needs the relinearization key, the
Galois keys of the model's rotations (inter packing) and the bootstrapping keys (models
that bootstrap). A key set is refused before it is stored when its declared size is
larger than those parameters make such keys, and checked when complete: its envelope,
its parameters, its kind, and the rotations it covers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from .. import ckks, nn
from ..rlwe.keys import KeySet
from .config import ServeConfig

# Keys of a few sessions stay loaded (the LRU's bound is in bytes, set by the server).
DEFAULT_KEY_CACHE_BYTES = 8 * 2**30
SLACK = 1 << 20  # envelope headers, seeds, the zstd frame's own bytes


class Host:
    def __init__(self, config: ServeConfig, key_cache_bytes: int = DEFAULT_KEY_CACHE_BYTES):
        self.config = config
        if config.params:
            with open(config.params, "rb") as f:
                data = f.read()
            insecure = ckks.Context._load_parameters(data, None, True).security == 0
            self.ctx = ckks.Context.from_bytes(data, bootstrap=config.bootstrap, insecure_no_security_check=insecure)
        else:
            self.ctx = ckks.Context.preset(config.preset, **({"bootstrap": config.bootstrap} if config.bootstrap
                                                              else {}))
        options = dict(activation=config.activation, packing=config.packing, masking=config.masking)
        if config.activation == "poly":
            if not config.calibration:
                raise ValueError("[serve] --activation poly needs --calibration inputs.npy (they bound the "
                                 "polynomial activations)")
            options["calibration"] = np.load(config.calibration)
        self.model = nn.load(config.model, self.ctx, **options)
        plan = self.model.plan()
        if not plan.fits:
            raise ValueError(f"[serve] the parameters are too shallow for {config.model}: it needs "
                             f"{plan.levels_needed} levels, the context has {plan.levels_available}; try "
                             f"{plan.suggestion}")
        self.rotations = self.model.rotations() if config.packing == "inter" else []
        self.needs = ["relin"] + (["galois"] if self.rotations else []) + (["bootstrap"] if self.model.bootstrap
                                                                            else [])
        self._cache: OrderedDict[str, tuple[KeySet, int]] = OrderedDict()
        self._cache_bytes, self._cache_limit = 0, key_cache_bytes
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return f"{self.ctx.fingerprint:016x}"

    def describe(self) -> dict:
        """What /v2/models/{name} says: enough for a client to make matching keys."""
        g = self.model.graph
        return {"name": self.config.name, "platform": "ringfire", "versions": ["1"],
                "inputs": [{"name": g.input_name, "datatype": "FP64", "shape": [-1, *g.input_shape]}],
                "outputs": [{"name": n, "datatype": "FP64"} for n in g.output_names],
                "parameters": {"fingerprint": self.fingerprint, "context": self.ctx.describe(),
                               "packing": self.config.packing, "activation": self.config.activation,
                               "masking": self.config.masking, "keys": self.needs, "rotations": self.rotations,
                               "bootstrap": bool(self.model.bootstrap), "slots": self.ctx.slots,
                               "bootstrap_options": self.ctx.bootstrap_options,
                               "insecure": self.ctx.params.security == 0,
                               "max_key_bytes": {k: self.max_key_bytes(k) for k in self.needs}}}

    # ---- key sizes --------------------------------------------------------------------
    def _switch_key_bytes(self) -> int:
        """A switching key over the whole chain written unseeded: at most dnum digits, each two
        polynomials over Q and P."""
        params = self.ctx.params
        limbs = len(params.q_primes) + len(params.p_primes)
        return 2 * params.dnum * limbs * self.ctx.poly_degree * 8

    def max_key_bytes(self, kind: str) -> int:
        """The most bytes a key set of `kind` for these parameters and this model can take."""
        if kind == "relin":
            return self._switch_key_bytes() + SLACK
        if kind == "galois":
            return len(self.rotations) * (self._switch_key_bytes() + SLACK) + SLACK
        if kind == "bootstrap":
            return int(self.ctx.bootstrap_plan().key_bytes * 1.05) + 8 * SLACK
        raise KeyError(kind)

    # ---- session keys --------------------------------------------------------------------
    def check_keys(self, kind: str, data: bytes):
        """The key object in `data` (a complete upload), or ValueError saying what is wrong."""
        obj = self.ctx.load(data)
        expected = {"relin": "RelinKey", "galois": "GaloisKeys", "bootstrap": "BootstrapKeys"}[kind]
        if type(obj).__name__ != expected:
            raise ValueError(f"[serve] this upload holds a {type(obj).__name__}, not the {kind} keys ({expected})")
        if kind == "galois":
            have = set(obj.rotations())
            missing = sorted({r % self.ctx.slots for r in self.rotations} - {0} - have)
            if missing:
                raise ValueError(f"[serve] the Galois keys lack rotations {missing[:8]} the model needs "
                                 f"(all: {self.rotations})")
        return obj

    def keys_for(self, sid: str, paths: dict) -> KeySet:
        """The session's keys: loaded from their blobs once, then kept (least recently used
        sessions dropped past the cache's bound)."""
        with self._lock:
            if sid in self._cache:
                self._cache.move_to_end(sid)
                return self._cache[sid][0]
        loaded = {kind: self.ctx.load(path.read_bytes()) for kind, path in paths.items()}
        size = sum(path.stat().st_size for path in paths.values())
        keys = KeySet(relin=loaded.get("relin"), galois=loaded.get("galois"), bootstrap=loaded.get("bootstrap"))
        with self._lock:
            self._cache[sid] = (keys, size)
            self._cache_bytes += size
            while self._cache_bytes > self._cache_limit and len(self._cache) > 1:
                _, (_, dropped) = self._cache.popitem(last=False)
                self._cache_bytes -= dropped
        return keys

    def forget(self, sid: str) -> None:
        with self._lock:
            entry = self._cache.pop(sid, None)
            if entry:
                self._cache_bytes -= entry[1]

    def max_ciphertext_bytes(self) -> int:
        return self.ctx._largest_object_bytes()

    def max_input_entries(self) -> int:
        return max(1, int(np.prod(self.model.graph.input_shape))) if self.config.packing == "batch" else self.ctx.slots
