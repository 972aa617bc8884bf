"""The way back from FHEW in a smaller CKKS ring, landing in the large one.

Homomorphic LWE decryption (fhew_to_ckks.py) needs n' slots (the LWE dimension
rounded up: 1024), not a large ring's 32768, yet its fold rotations, cosine and
double angles cost in proportion to the ring degree at the levels they run at.
So the way back can run in a CKKS ring of degree n < N whose chain is the large
context's first primes q_0..q_l (and its special primes), under a secret of its
own, and move to the large ring at the end:

1. **Embedding** (cpp/include/ringfire/rlwe/subring.h): X -> X^(N/n) maps R_n
   into R_N. A ciphertext under s_n becomes one under s_n(X^(N/n)) with the same
   slots, repeated (slot j of R_N reads slot j mod n/2), at the same scale and level.
2. **One key switch** from s_n(X^(N/n)) to the large ring's secret, at the
   result's level: a key-switching key of the large ring (the client makes it,
   holding both secrets; it is public like every such key).

Security: the small ring's parameters pass the security check at n by themselves
(its chain is cut where they would not), so its secret is as protected as the
large one's; the embedding key is a key-switching key of the large ring of a kind
of its own (``EmbeddingKey``: its own source and serialized kind), so a key of the ring given
in its place by mistake is refused. Against tampering, that is no defence (the kind and source
are labels, the envelope's checksum is not a MAC): SchemeSwitch's ring key binds the whole
blob by its SHA-256, and with ``mac_key=`` by an HMAC, as for every other key a client sends.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import warnings
import weakref

from .. import _core
from ..ckks.ciphertext import Ciphertext as CkksCiphertext
from ..ckks.context import Context as CkksContext
from ..rlwe.keys import EmbeddingKey, GaloisKeys, KeySet, RelinKey
from .to_fhew import is_int

_MAGIC = b"RFSMALL2"
_OLD_MAGIC = b"RFSMALL1"  # 2026-11-30's first keys: the embedding key in a relinearization key's kind
_RINGS = struct.Struct("<II")  # the large ring's degree, the small ring's
_PARTS = ("secret", "galois", "relin", "embedding")
_HEAD = len(_MAGIC) + _RINGS.size + 8 * len(_PARTS)
# One SmallRing per (large context, degree): the way backs of one context share its keys.
_SHARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class SmallRing:
    """The CKKS context of degree ``degree`` on ``ckks``'s first primes: as many of them as
    pass the security check at that degree (all, up to ``ckks.max_level``, where they do)."""

    def __init__(self, ckks, degree: int):
        N = ckks.poly_degree
        if not is_int(degree) or degree < 1024 or degree & (degree - 1) or degree >= N:
            raise ValueError(f"[switching] ring_degree must be a power of two from 1024 to {N // 2} (below the CKKS "
                             f"context's {N}), got {degree!r}")
        params = ckks.params
        security = params.security
        top = chain_top(ckks, degree)
        if top < 0:
            raise ValueError(f"[switching] no part of the CKKS chain fits a ring of degree {degree} at {security}-bit "
                             f"security ({_core.max_log_qp(degree, security)} bits of modulus, the special primes "
                             f"alone take {sum(math.log2(x) for x in params.p_primes):.0f})")
        # Weakly: the shared map's value must not keep its key, the large context, alive.
        self._large, self.degree, self.top = weakref.ref(ckks), int(degree), top
        # dnum=0: the fewest key-switching digits the special primes cover, as for any chain.
        # A context with deterministic randomness (tests) passes it on; otherwise the small
        # ring draws from the operating system, as every context does.
        # (The large context warned about that when it was made: not again here.)
        seed = ckks._prng.bytes(32) if ckks._prng.deterministic else None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*insecure_deterministic_seed", category=RuntimeWarning)
            self.context = CkksContext.from_primes(self.degree, list(params.q_primes)[:top + 1],
                                                   list(params.p_primes), params.scale_bits, dnum=0,
                                                   security=security or 128,
                                                   insecure_no_security_check=security == 0,
                                                   insecure_deterministic_seed=seed)

    @property
    def large(self):
        """The large ring's CKKS context."""
        return self._large()

    @classmethod
    def shared(cls, ckks, degree: int) -> "SmallRing":
        """The one SmallRing of ``ckks`` at ``degree`` (made at the first call): keys made for
        one way back of the context serve every other one of that degree."""
        rings = _SHARED.setdefault(ckks, {})
        if degree not in rings:
            rings[degree] = cls(ckks, degree)
        return rings[degree]

    def __repr__(self) -> str:
        return f"SmallRing(N={self.degree}, levels 0..{self.top} of the N={self.large.poly_degree} chain)"

    def keygen(self, secret_key, rotations, lwe_secret_values, *, level: int, result_level: int) -> "SmallRingKey":
        """The client's keys: a secret of the small ring, its relinearization and Galois keys
        (``rotations``), ``lwe_secret_values`` encrypted under it at ``level``, and the key
        from the embedded small secret to ``secret_key`` (the large ring's) at ``result_level``."""
        small_sk, small_keys = self.context.keygen(rotations=rotations)
        secret = self.context.encrypt(lwe_secret_values, small_sk, level=level)
        embedding = EmbeddingKey(_core.generate_embedding_key(secret_key._native, small_sk._native, result_level,
                                                              self.large._prng), self.large)
        return SmallRingKey(secret, small_keys.galois, small_keys.relin, embedding)

    def land(self, ev, ct, key: "SmallRingKey"):
        """``ct`` (a ciphertext of the small ring, under the key's secret) as a ciphertext of the
        large ring under its own secret: the embedding, then one key switch."""
        if key.embedding.subring_degree != ct.context.poly_degree:
            raise ValueError(f"[switching] the embedding key switches from a ring of degree "
                             f"{key.embedding.subring_degree}; the result is in one of {ct.context.poly_degree}")
        embedded = _core.embed_in_ring(ct._host(), self.large._core.rlwe)
        if key.embedding.level < embedded.level:
            raise ValueError(f"[switching] the embedding key serves levels up to {key.embedding.level}; the result "
                             f"is at level {embedded.level}")
        out = CkksCiphertext(ev._ev.switch_key(embedded, key.embedding._on("cpu")), self.large, ev._keys)
        out._bound = ct._bound  # the same values: the magnitude checks carry on
        return out

    def load_key(self, data: bytes) -> "SmallRingKey":
        """A key from :meth:`SmallRingKey.to_bytes`: each part checked by its context's loader
        (envelope, checksum, parameters, kind), the lengths against the bytes before any is read."""
        data = memoryview(data)
        if bytes(data[:len(_OLD_MAGIC)]) == _OLD_MAGIC:
            raise ValueError("[switching] a small-ring key of the first format (its embedding key stored as a "
                             "relinearization key, which a crafted key could replace): make the keys again with "
                             "SchemeSwitch.keygen")
        if not is_small_ring_key(data):
            raise ValueError(f"[switching] not a ringfire small-ring key (SmallRingKey.to_bytes): this way back runs "
                             f"in a ring of degree {self.degree}; a key made for the CKKS context's own ring (an "
                             f"encrypted secret, as before 2026-11-30) loads with ring_degree="
                             f"{self.large.poly_degree}")
        large, small = made_for(data)
        if (large, small) != (self.large.poly_degree, self.degree):
            raise ValueError(f"[switching] this small-ring key was made for ring_degree={small} in a CKKS ring of "
                             f"{large}; this way back runs in {self.degree} for {self.large.poly_degree}")
        lengths = struct.unpack_from(f"<{len(_PARTS)}Q", data, len(_MAGIC) + _RINGS.size)
        if _HEAD + sum(lengths) != len(data) or 0 in lengths:
            raise ValueError(f"[switching] a small-ring key's four parts declare {list(lengths)} bytes behind its "
                             f"{_HEAD}-byte head; it holds {len(data)} bytes")
        loaded, at = {}, _HEAD
        for name, length, context, kind in zip(_PARTS, lengths, (self.context,) * 3 + (self.large,),
                                               (CkksCiphertext, GaloisKeys, RelinKey, EmbeddingKey)):
            try:
                part = context.load(bytes(data[at:at + length]))
            except ValueError as e:
                raise ValueError(f"[switching] the small-ring key's {name} part: {e}") from None
            if not isinstance(part, kind):
                raise ValueError(f"[switching] the small-ring key's {name} part holds a {type(part).__name__}, not "
                                 f"the {kind.__name__} that belongs there")
            loaded[name] = part
            at += length
        if loaded["embedding"].subring_degree != self.degree:
            raise ValueError(f"[switching] the small-ring key's embedding part switches from a ring of degree "
                             f"{loaded['embedding'].subring_degree}; its head says {self.degree}")
        return SmallRingKey(**loaded)


@dataclasses.dataclass
class SmallRingKey:
    """What the way back in a small ring needs (public): the LWE secret encrypted in the
    small ring, that ring's Galois and relinearization keys, and the embedding key."""

    secret: CkksCiphertext
    galois: GaloisKeys
    relin: RelinKey
    embedding: EmbeddingKey
    _evaluator: object = dataclasses.field(default=None, init=False, repr=False, compare=False)

    @property
    def level(self) -> int:
        return self.secret.level

    def evaluator(self):
        """The small ring's evaluator with these keys (made once)."""
        if self._evaluator is None:
            self._evaluator = self.secret.context.evaluator(KeySet(relin=self.relin, galois=self.galois))
        return self._evaluator

    def to_bytes(self) -> bytes:
        """The two rings' degrees and the four parts, each in its own checksummed envelope,
        behind their lengths."""
        parts = [self.secret.to_bytes(), self.galois.to_bytes(), self.relin.to_bytes(), self.embedding.to_bytes()]
        rings = _RINGS.pack(self.embedding.context.poly_degree, self.secret.context.poly_degree)
        return _MAGIC + rings + struct.pack(f"<{len(parts)}Q", *map(len, parts)) + b"".join(parts)


def is_small_ring_key(data) -> bool:
    """Whether ``data`` starts as :meth:`SmallRingKey.to_bytes` writes."""
    return len(data) >= _HEAD and bytes(data[:len(_MAGIC)]) == _MAGIC


def made_for(data) -> tuple[int, int]:
    """(large ring degree, small ring degree) a small-ring key's bytes record."""
    return _RINGS.unpack_from(data, len(_MAGIC))


def chain_top(ckks, degree: int) -> int:
    """The highest level of ``ckks``'s user chain whose primes q_0..q_l, with the special primes,
    pass the security check in a ring of ``degree`` (-1: not even q_0)."""
    params = ckks.params
    bound = math.inf if params.security == 0 else _core.max_log_qp(int(degree), params.security)
    bits = sum(math.log2(x) for x in params.p_primes)
    top = -1
    for prime in list(params.q_primes)[:ckks.max_level + 1]:
        bits += math.log2(prime)
        if bits > bound:
            break
        top += 1
    return top


def smallest_degree(ckks, slots_needed: int, depth: int) -> int:
    """The smallest ring degree below ``ckks``'s with ``slots_needed`` slots that holds its whole
    user chain: the way back there lands at the level it would in ``ckks``'s own ring. ``ckks``'s
    own degree where none does (a chain too long for half the ring at its security), where the
    chain is shorter than ``depth`` (the way back cannot run; the way there still can), and for a
    context on a GPU (the small ring runs on the host; not measured there)."""
    if ckks.device != "cpu" or ckks.max_level < depth:
        return ckks.poly_degree
    degree = max(2 * slots_needed, 1024)
    while degree < ckks.poly_degree:
        if chain_top(ckks, degree) == ckks.max_level:
            return degree
        degree *= 2
    return ckks.poly_degree
