"""FHEW/TFHE integers back into BGV/BFV coefficients, through their last bootstrap.

A FHEW bootstrap's blind rotation ends with an LWE ciphertext of dimension N' under
the FHEW ring secret z whose only error is the rotation's: on the 32-bit sets mod
the ring prime Q, before the key switch and modulus switches that make it a gate
ciphertext (and add the rest); on the 64-bit torus sets mod 2^64, which is where
their bootstraps end anyway (KS-PBS). The way back starts there
(cpp/include/ringfire/rlwe/lwe_packing.h):

1. **The last bootstrap writes the BGV/BFV encoding.** The plaintext modulus is
   t = 2^k; ringfire's BGV and BFV ciphertexts hold t^-1 c m (c: the correction
   factor) at level l, which is (Q_l / t) [u c m]_t plus less than a unit with
   u = -Q_l^-1 mod t. So the test vector holds [u f(x)]_t at Q / t per unit and
   the result, with c = 1, decrypts to f(x) mod t.
2. **Each output as a ciphertext of the BGV ring** (``embed_lwe``): the LWE
   ciphertext read as one of R_N' (its constant coefficient's phase is the LWE
   phase), its words raised from Q to Q_l and X -> X^(N / N'); its phase, divided
   by N, sits in the constant coefficient under z(X^(N/N')).
3. **One key switch each** to the BGV secret s (an :class:`EmbeddingKey`, made by
   the client from both secrets; public).
4. **Packing** (Chen, Dai, Kim and Song, ePrint 2020/015, Algorithm 2): pairs
   merge as (A + X^s B) + sigma_g(A - X^s B) with g = N/s + 1, from s = N/2 down
   to N/count, then the trace's automorphisms X -> X^(N/s' + 1) down to s' = 1
   clear every other coefficient: count - 1 + log2(N / count) automorphisms,
   which multiply the phases by N. Value j lands at coefficient j N / count.

The error that lands is the blind rotation's, raised with the modulus (the
same share of it as at Q), plus the key switches' (tiny beside Q_l / t). That
share is the noise budget a result keeps: about 2^-8.3 on STD128, 2^-25.3 on
STD128_T64_WIDE (whose integers come from a 32-bit set through to_torus.py).
The keys: one embedding key and log2(N) Galois keys at the landing level.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np

from .. import _core
from ..bgv.ciphertext import Ciphertext as BgvCiphertext
from ..bgv.context import Context as BgvContext
from ..rlwe.keys import EmbeddingKey, GaloisKeys
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from .._checks import warn_at_caller
from ..tfhe.params import WARN_P_FAIL, ParameterSet, tail_probability
from .key_bytes import load_key_part, open_key_bytes
from .to_fhew import check_fhew_context, check_secret_keys, fhew_secrets, is_int, power_of_two_plain_modulus

_MAGIC = b"RFBGVBK1"
_HEAD = struct.Struct("<III32sQQ")  # N, N', level, the FHEW keys' id, then the two parts' lengths


def packing_elements(N: int) -> list[int]:
    """The Galois elements of the packing and the trace: N/s + 1 for s = N/2, ..., 1."""
    return [(1 << j) + 1 for j in range(1, int(math.log2(N)) + 1)]


@dataclasses.dataclass
class FhewToBgvKey:
    """The way back's public keys: the switch from FHEW's ring secret (embedded) to the BGV
    secret, and the packing's Galois keys, both at the landing level."""

    embedding: EmbeddingKey
    galois: GaloisKeys
    fhew_key_id: bytes = bytes(32)  # the FHEW keys' identity (tfhe SecretKey.key_id) whose ring secret it takes

    @property
    def level(self) -> int:
        return self.embedding.level

    def to_bytes(self, *, mac_key: bytes | None = None) -> bytes:
        """The degrees and the level, then the two keys, each in its own checksummed (and, with
        ``mac_key``, authenticated) envelope, behind their lengths."""
        parts = [self.embedding.to_bytes(mac_key=mac_key), self.galois.to_bytes(mac_key=mac_key)]
        head = _HEAD.pack(self.embedding.context.poly_degree, self.embedding.subring_degree, self.level,
                          self.fhew_key_id, *map(len, parts))
        return _MAGIC + head + b"".join(parts)


class FhewToBgv:
    """Ends FHEW work in a BGV or BFV ciphertext: each FHEW integer through one last
    bootstrap with a table, the results packed into one ciphertext's coefficients.

    Args:
        fhew: the :class:`ringfire.tfhe.Context` of the integers, whose bootstraps end them:
            a 32-bit set (STD128, STD128_LP, STD128_LUT: what the switches from BGV/BFV and
            CKKS land on) or a 64-bit torus set, whose bootstraps keep far more of the
            modulus (``STD128_T64_WIDE``; :class:`LweToTorus` brings 32-bit integers there).
            Its ring degree N' must divide the BGV ring's and be smaller.
        bgv: the :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context`, with a
            plaintext modulus t = 2^k (coefficient encoding).
        count: values per call, a power of two up to N: value j lands at coefficient
            j * N / count (the layout :class:`BgvFunctionalBootstrap` reads too).
        level: the level results land at (default: the top); the keys serve that level.

    The client makes the keys with :meth:`keygen` (both secret keys; the keys are public).
    """

    def __init__(self, fhew, bgv, *, count: int, level: int | None = None):
        check_fhew_context(fhew)
        if not isinstance(bgv, BgvContext):
            raise TypeError(f"[switching] expected a ringfire.bgv.Context or ringfire.bfv.Context, got "
                            f"{type(bgv).__module__}.{type(bgv).__name__}")
        N, Np = bgv.poly_degree, fhew.params.ring_dimension
        if N % Np or N == Np:
            raise ValueError(f"[switching] the ring degree N' = {Np} of {fhew.params.name} (the set the last "
                             f"bootstrap runs on) must divide the {bgv.scheme.upper()} ring degree {N} and be smaller")
        t = power_of_two_plain_modulus(bgv, "the way back writes")
        if not is_int(count) or count < 1 or count & (count - 1) or count > N:
            raise ValueError(f"[switching] count must be a power of two from 1 to N = {N}, got {count!r}")
        top = bgv.max_level
        level = top if level is None else level
        if not is_int(level) or not 0 <= level <= top:
            raise ValueError(f"[switching] level must be an int in [0, {top}], got {level!r}")
        self._torus = not isinstance(fhew.params, ParameterSet)
        Q = 1 << 64 if self._torus else fhew.params.ring_modulus
        primes = list(bgv.params.q_primes)[:int(level) + 1]
        if any(p == Q for p in primes):
            raise ValueError(f"[switching] the FHEW ring prime {Q} is one of the {bgv.scheme.upper()} primes")
        self.fhew, self.bgv, self.t, self.count, self.level = fhew, bgv, t, int(count), int(level)
        self.modulus = Q  # the bootstraps' outputs' modulus: the ring prime, or 2^64 on a torus set
        self.stride = N // self.count
        q_level = math.prod(primes)
        # Q_l t^-1 c m = (Q_l / t) [u c m]_t + ...: the value written is u f(x) (c = 1).
        self._u = -pow(q_level, -1, t) % t
        self._q_level_bits = math.log2(q_level)
        # One value past the bound makes the whole ciphertext undecryptable: the figure that counts
        # is per ciphertext.
        risk = self.failure_probability()
        if min(1.0, self.count * risk) > WARN_P_FAIL:
            warn_at_caller(f"[switching] each value lands wrong with probability {risk:.2g} ({min(1.0, self.count * risk):.2g} "
                           f"for a ciphertext of {self.count}): the blind rotation's error "
                           f"(2^{self._rotation_share():.1f} of its modulus) passes a quarter of Q / t for t = {t}, and "
                           f"then the whole ciphertext fails to decrypt: a smaller t, or a last bootstrap on "
                           f"STD128_T64_WIDE (LweToTorus)")

    def __repr__(self) -> str:
        return (f"FhewToBgv(N'={self.fhew.params.ring_dimension} -> {self.bgv.scheme.upper()} N="
                f"{self.bgv.poly_degree}, t={self.t}, count={self.count}, level={self.level})")

    @property
    def positions(self) -> np.ndarray:
        """The coefficients the values land at: j * N / count."""
        return np.arange(self.count) * self.stride

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, fhew_secret_key) -> FhewToBgvKey:
        """The way back's public keys from the two secret keys (the client runs this)."""
        if secret_key is None:
            raise ValueError(f"[switching] expected the {self.bgv.scheme.upper()} context's secret key, got None")
        check_secret_keys(self.bgv, secret_key, self.fhew, fhew_secret_key)
        s, z = fhew_secrets(fhew_secret_key)
        ring_secret = z.astype(np.int8)
        try:
            embedding = _core.generate_embedding_key_from_coefficients(secret_key._native, ring_secret,
                                                                       self.level, self.bgv._prng)
        finally:  # the copies of the secrets go (the binding wipes its own)
            s[:], z[:], ring_secret[:] = 0, 0, 0
        galois = _core.generate_galois_keys(secret_key._native, packing_elements(self.bgv.poly_degree),
                                            self.bgv._prng, self.level)
        return FhewToBgvKey(EmbeddingKey(embedding, self.bgv), GaloisKeys(galois, self.bgv), fhew_secret_key.key_id)

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> FhewToBgvKey:
        """The key :meth:`keygen` made, from ``key.to_bytes()``: the lengths checked against the
        bytes before either part is read, each part by the context's loader (envelope,
        checksum, parameters, kind), then against this way back."""
        data, (N, Np, level, fhew_key_id, *lengths), start = open_key_bytes(data, _MAGIC, _HEAD, "FhewToBgvKey",
                                                                            "a ringfire FHEW-to-BGV key")
        if (N, Np) != (self.bgv.poly_degree, self.fhew.params.ring_dimension) or level < self.level:
            raise ValueError(f"[switching] this FHEW-to-BGV key was made for N = {N}, N' = {Np} at level {level}; this "
                             f"way back needs N = {self.bgv.poly_degree}, N' = {self.fhew.params.ring_dimension} at "
                             f"level {self.level} or above")
        if start + sum(lengths) != len(data) or 0 in lengths:
            raise ValueError(f"[switching] the key's two parts declare {lengths} bytes behind its {start}-byte head; "
                             f"it holds {len(data)} bytes")
        parts = [load_key_part(self.bgv, bytes(data[at:at + length]), kind, f"the FHEW-to-BGV key's {name} part",
                               mac_key=mac_key)
                 for name, length, kind, at in (("embedding", lengths[0], EmbeddingKey, start),
                                                ("galois", lengths[1], GaloisKeys, start + lengths[0]))]
        key = FhewToBgvKey(*parts, fhew_key_id)
        self._check_key(key)
        return key

    def _check_key(self, key) -> None:
        if not isinstance(key, FhewToBgvKey):
            raise TypeError(f"[switching] expected the FhewToBgvKey from keygen, got {type(key).__name__}")
        emb, gal = key.embedding, key.galois
        if self.fhew.key_id is not None and key.fhew_key_id != self.fhew.key_id:
            raise ValueError(f"[switching] this FHEW-to-BGV key was made for other {self.fhew.params.name} keys than "
                             f"the evaluation keys loaded here (their ring secret is another)")
        if emb.context is not self.bgv or gal.context is not self.bgv:
            raise ValueError(f"[switching] this key was made for another {self.bgv.scheme.upper()} context")
        if emb.subring_degree != self.fhew.params.ring_dimension:
            raise ValueError(f"[switching] this key switches from a ring of degree {emb.subring_degree}; the FHEW "
                             f"ring's is {self.fhew.params.ring_dimension}")
        if emb.level < self.level:
            raise ValueError(f"[switching] this key serves levels up to {emb.level}; results land at {self.level}")
        missing = sorted(set(packing_elements(self.bgv.poly_degree)) - set(gal.elements))
        if missing or gal.level < self.level:
            raise ValueError(f"[switching] the key's Galois keys must hold the elements "
                             f"{packing_elements(self.bgv.poly_degree)} at level {self.level} or above "
                             f"(missing {missing}, level {gal.level})")

    # ---- the way back -------------------------------------------------------------

    def __call__(self, lwe, key: FhewToBgvKey, fn=None) -> BgvCiphertext:
        """f(x) mod t for every FHEW integer x of ``lwe`` (``count`` of them, of up to
        log2(N') - 1 bits), in one BGV/BFV ciphertext: value j at coefficient j N / count,
        the others 0. ``fn``: a function of the integer (or an array of its values over
        [0, 2^bits)); default: the integer itself."""
        self._check_input(lwe, key)
        self._warn_if_misread(lwe)
        return self._table(lwe, key, fn)

    def positive(self, lwe, key: FhewToBgvKey) -> BgvCiphertext:
        """[x > 0] (1 or 0) for FHEW integers x read on the whole circle, as signed integers in
        (-2^bits, 2^bits): the half of the circle x - 1/2 lies in gives +-1/2 (the bootstrap is
        negacyclic), and adding 1/2 makes it the bit."""
        self._check_input(lwe, key)
        self._warn_if_misread(lwe)
        return self._positive(lwe, key)

    def _table(self, lwe, key: FhewToBgvKey, fn) -> BgvCiphertext:
        inputs = np.arange(1 << lwe.bits)
        values = inputs if fn is None else (np.asarray(fn, dtype=object) if not callable(fn)
                                             else np.array([fn(int(m)) for m in inputs], dtype=object))
        if values.shape != inputs.shape or not all(is_int(v) for v in values):
            raise ValueError(f"[switching] the table must give an int for each of the {len(inputs)} inputs")
        Q = self.modulus
        written = [(self._u * int(v) % self.t * Q + self.t // 2) // self.t % Q for v in values]  # Q / t per unit
        return self._land(self.fhew.bootstrap_to_ring(lwe, written), key)

    def _positive(self, lwe, key: FhewToBgvKey) -> BgvCiphertext:
        Q = self.modulus
        half = (self._u * Q + self.t) // (2 * self.t) % Q  # u/2 at Q/t per unit
        ring = self.fhew.bootstrap_to_ring(lwe - 1, [half] * (1 << lwe.bits))
        if self._torus:
            ring[:, -1] += np.uint64(half)  # wraps mod 2^64
        else:
            ring[:, -1] = (ring[:, -1].astype(np.int64) + half) % Q
        return self._land(ring, key)

    def _check_input(self, lwe, key) -> None:
        if not isinstance(lwe, LweCiphertext):
            raise TypeError(f"[switching] expected ringfire.tfhe.Ciphertext integers, got {type(lwe).__name__}")
        if lwe.context is not self.fhew:
            raise ValueError("[switching] these FHEW ciphertexts belong to another context")
        if lwe.bits is None:
            raise ValueError("[switching] the way back reads FHEW integers (bits=...), not booleans")
        if lwe.size != self.count:
            raise ValueError(f"[switching] expected {self.count} FHEW ciphertexts (count), got {lwe.size}")
        self._check_key(key)

    def _warn_if_misread(self, lwe) -> None:
        """As fhew.apply does: the bootstrap reads the wrong value where the input's error passes
        half a value's width. (BgvFunctionalBootstrap's switch to FHEW warns for its inputs.)"""
        q, p = self.fhew.params.lwe_modulus, 1 << lwe.bits
        risk = tail_probability(lwe.variance + self.fhew.params.switch_variance(), q / (4 * p))
        if risk > WARN_P_FAIL:
            warn_at_caller(f"[switching] each value is read wrong with probability {risk:.2g} (its input's error "
                           f"variance {lwe.variance:.3g} at q={q}, a half-width of {q / (4 * p):.3g}): bootstrap it "
                           f"first, or use fewer bits")

    def _land(self, ring: np.ndarray, key: FhewToBgvKey) -> BgvCiphertext:
        """The bootstraps' ring LWE ciphertexts (count, N' + 1) as one BGV/BFV ciphertext."""
        N = self.bgv.poly_degree
        ev = self.bgv._core_evaluator
        target = self.bgv._core.rlwe
        noise_bits = self.noise_bits()
        leaves = (_core.embed_torus_lwe(ring, target, self.level, 1, N, noise_bits) if self._torus else
                  _core.embed_lwe(ring, self.modulus, target, self.level, 1, N, noise_bits))
        embedding = key.embedding._on("cpu")
        leaves = [ev.switch_key(ct, embedding) for ct in leaves]
        galois = key.galois._on("cpu")
        packed = _pack(ev, leaves, N, galois)
        for s in _trace_strides(self.stride):
            packed = _merge_one(ev, packed, N // s + 1, galois)
        # The sums above added their operands' norms, but the phases were divided by N first:
        # the landed error is the one noise_bits() estimates.
        packed.noise_bits = noise_bits
        return BgvCiphertext(packed, self.bgv)

    def noise_bits(self) -> float:
        """log2 of the norm of the error a result carries (rlwe/noise.h's convention, as if
        every coefficient had it: the budget estimate reads the largest from it): the blind
        rotation's, raised to Q_l, and the key switches', N times one's at most through the
        packing."""
        N = self.bgv.poly_degree
        rotation = self._rotation_share() + 0.5 * math.log2(N) + self._q_level_bits
        switches = self.bgv._core.key_switch_noise_bits(self.level) + math.log2(N)
        return float(np.logaddexp2(rotation, switches))

    def failure_probability(self) -> float:
        """The probability that one value lands wrong: the blind rotation's error past a
        quarter of Q / t (where [t x]_Q leaves the quarter decryption reads; BGV/BFV
        decryption then refuses the whole ciphertext)."""
        return tail_probability(4.0 ** self._rotation_share(), 1 / (4 * self.t))

    def _rotation_share(self) -> float:
        """log2 of the last bootstrap's error (a standard deviation) over its modulus, from the
        set's noise model: the blind rotation's alone (the 32-bit sets stop before their key
        switch; the torus sets' bootstraps end there)."""
        p = self.fhew.params
        variance = p.bootstrap_variance() if self._torus else p.noise_terms()["blind_rotation"]
        return 0.5 * math.log2(variance) - math.log2(p.lwe_modulus)


def _pack(ev, leaves: list, N: int, galois) -> object:
    """Chen-Dai-Kim-Song's PackLWEs: 2^l ciphertexts whose constant coefficients hold the
    values, merged so that value j sits at coefficient j N / 2^l (times 2^l)."""
    if len(leaves) == 1:
        return leaves[0]
    even, odd = _pack(ev, leaves[0::2], N, galois), _pack(ev, leaves[1::2], N, galois)
    s = N // len(leaves)
    shifted = _core.multiply_by_monomial(odd, s)
    plus, minus = ev.add(even, shifted), ev.sub(even, shifted)
    return ev.add(plus, ev.apply_galois(minus, N // s + 1, galois))


def _trace_strides(stride: int) -> list[int]:
    """The trace's steps after packing at ``stride``: s' = stride / 2, ..., 1."""
    return [stride >> i for i in range(1, int(math.log2(stride)) + 1)]


def _merge_one(ev, ct, element: int, galois):
    """ct + sigma_element(ct): keeps the coefficients the automorphism fixes (doubled), clears
    those it negates."""
    return ev.add(ct, ev.apply_galois(ct, element, galois))
