"""What every switch from a large ring to FHEW/TFHE shares (CKKS, BGV, BFV).

Once the source scheme has brought the values it switches into coefficients of
a ciphertext (c0, c1) whose phase at q_0 encodes each value at q_0 / 2^(bits+1)
per unit, the rest is the same for every scheme:

1. **Modulus switch** q_0 to the FHEW ring prime Q.
2. **Ring switch** (ring_switch.py) to an RLWE ciphertext of the FHEW ring
   under its secret z. It reads the coefficients at multiples of k = N / N';
   coefficient i is brought there by X^-(i mod k) first, so one ring switch
   serves every coefficient of a residue class. The residues share the gadget
   digits and their transforms; each adds two sums of small-ring products.
3. **Extract** each coefficient as an LWE ciphertext of dimension N' and
   finish as the FHEW bootstrap does (Q -> Q_ks, the key switch to the LWE
   secret, Q_ks -> q): ``fhew.from_ring_lwe``.

Comparisons read the half of the circle a difference's phase lies in, so they
need no padding bit: one bootstrap per value.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _core
from ..rlwe.keys import SecretKey as RingSecretKey
from ..tfhe.ciphertext import Ciphertext as LweCiphertext
from ..tfhe.context import Context as FhewContext
from ..tfhe.context import SecretKey as FhewSecretKey
from ..tfhe.params import ParameterSet
from .ring_switch import BASE_LOG, RingSwitchKey, extract, ring_switch_keygen, ring_switch_residues


class RingToFhew:
    """The switching key and the steps after the source scheme's own (module docstring).

    ``source``: the large ring's context (CKKS, BGV or BFV); ``fhew``: the
    :class:`ringfire.tfhe.Context` whose ring degree N' divides its ring degree.
    """

    def __init__(self, source, fhew):
        if not isinstance(fhew.params, ParameterSet):
            raise ValueError(f"[switching] the switch from {_name(source)} lands on the 32-bit FHEW sets (STD128, "
                             f"STD128_LP, STD128_LUT), not on the 64-bit torus set {fhew.params.name}: switch to one "
                             f"of those (and on to a torus set with LweToTorus, or last= for functional bootstrapping)")
        N, Np = source.poly_degree, fhew.params.ring_dimension
        if N % Np:
            raise ValueError(f"[switching] the FHEW ring degree N' = {Np} must divide the {_name(source)} ring "
                             f"degree {N}")
        self.source, self.fhew = source, fhew
        self._ntt = _core.Ntt32(Np, fhew.params.ring_modulus)
        self._tables: dict[int, object] = {}

    # ---- keys ----------------------------------------------------------------------

    def keygen(self, secret_key, fhew_secret_key, *, base_log: int = BASE_LOG) -> RingSwitchKey:
        """The switching key (public) from the two secret keys; the client runs this. A smaller
        ``base_log`` (the gadget's digits' bits) makes a key with more digits and less error."""
        if secret_key is None:
            raise ValueError(f"[switching] expected the {_name(self.source)} context's secret key, got None")
        check_secret_keys(self.source, secret_key, self.fhew, fhew_secret_key)
        s = np.asarray(secret_key._native.coefficients(), dtype=np.int64)
        z = fhew_secrets(fhew_secret_key)[1]
        key = ring_switch_keygen(s, z, self.fhew.params.ring_modulus, self.source._prng,
                                 sigma=self.fhew.params.sigma, base_log=base_log)
        key.fhew_key_id = fhew_secret_key.key_id
        return key

    def load_key(self, data: bytes, *, mac_key: bytes | None = None) -> RingSwitchKey:
        """A switching key from ``key.to_bytes()``, checked against these contexts (the evaluator's
        side), and against the FHEW evaluation keys loaded here when there are any."""
        key = RingSwitchKey.from_bytes(data, ring_degree=self.source.poly_degree,
                                       subring_degree=self.fhew.params.ring_dimension,
                                       modulus=self.fhew.params.ring_modulus, mac_key=mac_key)
        self._check_key_id(key)
        return key

    def _check_key_id(self, key: RingSwitchKey) -> None:
        if key.fhew_key_id and self.fhew.key_id is not None and key.fhew_key_id != self.fhew.key_id:
            raise ValueError("[switching] this switching key was made for other FHEW keys than this context's "
                             "(its secret key differs from the one the evaluation keys came from)")

    def _check_key(self, key) -> None:
        if not isinstance(key, RingSwitchKey):
            raise TypeError(f"[switching] expected the RingSwitchKey from keygen, got {type(key).__name__}")
        if (key.ring_degree, key.subring_degree, key.modulus) != (self.source.poly_degree,
                                                                  self.fhew.params.ring_dimension,
                                                                  self.fhew.params.ring_modulus):
            raise ValueError("[switching] this switching key was made for other contexts")
        rows = key.parts * key.digits
        if key.b.shape != (rows, key.subring_degree) or key.a.shape != key.b.shape:
            raise ValueError(f"[switching] a switching key holds two ({rows}, {key.subring_degree}) arrays; this one "
                             f"holds {key.b.shape} and {key.a.shape}")
        self._check_key_id(key)

    @property
    def bits_limit(self) -> int:
        """The widest integers the FHEW ring holds as a table input: log2(N') - 1 bits."""
        return int(math.log2(self.fhew.params.ring_dimension)) - 1

    def check_bits(self, bits) -> None:
        """Refuses a bit width the FHEW ring cannot hold as a table input (and bools), by name."""
        if not is_int(bits) or not 1 <= bits <= self.bits_limit:
            raise ValueError(f"[switching] bits must be an int in [1, {self.bits_limit}], got {bits!r}")

    # ---- the common steps ------------------------------------------------------------

    def _lwe_words(self, ct, key: RingSwitchKey, positions: np.ndarray) -> np.ndarray:
        """The LWE ciphertexts (count, N' + 1) mod Q of the coefficients at ``positions``
        of ``ct``'s phase at q_0 (ct: a ciphertext of the source context, limb q_0 read)."""
        host = ct if ct.device == "cpu" else ct.to("cpu")             # the ring switch runs on the host
        c0, c1 = host._native.coefficients()[:, 0, :]              # limb q_0, coefficient form
        q0, Q = self.source.params.q_primes[0], self.fhew.params.ring_modulus
        c0, c1 = _switch_modulus(c0, q0, Q), _switch_modulus(c1, q0, Q)
        k = key.parts
        words = np.empty((len(positions), self.fhew.params.ring_dimension + 1), dtype=np.uint32)
        switched = ring_switch_residues(key, c0, c1, [int(r) for r in np.unique(positions % k)], self._ntt)
        for row, position in enumerate(positions):
            b, a = switched[int(position % k)]
            words[row] = extract(b, a, int(position) // k, Q)
        return words

    def _switch_variance(self, key: RingSwitchKey) -> float:
        """Variance at q = 2N' of the error the common steps add: the ring switch, the
        modulus switches and the FHEW key switch."""
        p = self.fhew.params
        q, Q = p.lwe_modulus, p.ring_modulus
        terms = p.noise_terms()
        rounding = (1 + self.source.poly_degree * 2 / 3) / 12                # q_0 -> Q of c0 + c1 s
        total = (key.error_variance() + rounding) * (q / Q) ** 2
        return total + terms["mod_switch_ring"] + terms["key_switch"] + terms["mod_switch_lwe"]

    def _greater_than_zero(self, difference: LweCiphertext, bits: int) -> LweCiphertext:
        """[d > 0] as FHEW 1-bit integers (1 or 0) for a switched difference d of two integers
        in [0, 2^bits). Its sign is the half of the circle its phase lies in (no padding bit
        needed); the bootstrap, on it minus half a unit, gives +-q/8, and adding q/8 makes it
        FHEW's 1-bit encoding (0 or q/4), which :class:`ringfire.switching.FhewToCkks` brings
        back to CKKS."""
        if bits not in self._tables:  # +q/8 on the phases in [0, q/2), -q/8 on the others (negacyclic)
            self._tables[bits] = self.fhew.lut(lambda m: 1, bits=bits, out_bits=2)
        positive = self.fhew.apply(self._tables[bits], difference - 1)  # apply adds half a unit back
        shifted = positive + 1  # one unit of its 2-bit encoding: q/8
        return LweCiphertext(self.fhew, shifted.data, shifted.shape, 1, shifted.variance)


def _name(context) -> str:
    return getattr(context, "scheme", "source").upper()


def is_int(value) -> bool:
    """An int or NumPy integer, not a bool (True would pass for 1)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def power_of_two_plain_modulus(bgv, doing: str) -> int:
    """The BGV/BFV context's plaintext modulus t, refused by name unless it is 2^k with k >= 2:
    the integers FHEW ``doing`` (reads, or the way back writes) sit at Q / t per unit."""
    t = int(bgv.plain_modulus)
    if t < 4 or t & (t - 1):
        raise ValueError(f"[switching] {doing} integers mod a power of two: the {bgv.scheme.upper()} plaintext "
                         f"modulus must be 2^k (k >= 2, coefficient encoding), not {t}")
    return t


def check_fhew_context(fhew) -> None:
    if not isinstance(fhew, FhewContext):
        raise TypeError(f"[switching] expected a ringfire.tfhe.Context second, got {type(fhew).__module__}."
                        f"{type(fhew).__name__}")


def check_secret_keys(source, secret_key, fhew, fhew_secret_key) -> None:
    """Refuses, by name, what is not the two contexts' secret keys, before any key is made
    (``secret_key=None``: only the FHEW one is needed)."""
    if secret_key is not None and not (isinstance(secret_key, RingSecretKey) and secret_key.context is source):
        raise ValueError(f"[switching] expected the {_name(source)} context's secret key, got "
                         f"{_described(secret_key)}")
    if not (isinstance(fhew_secret_key, FhewSecretKey) and fhew_secret_key.context is fhew):
        raise ValueError(f"[switching] expected the FHEW context's secret key, got {_described(fhew_secret_key)}")


def fhew_secrets(fhew_secret_key) -> tuple[np.ndarray, np.ndarray]:
    """The FHEW secret key's LWE secret s (n values) and ring secret z (N'), as int64."""
    raw = np.frombuffer(fhew_secret_key._native.secret_bytes(), dtype=np.int8).astype(np.int64)
    n = fhew_secret_key.context.params.lwe_dimension
    return raw[:n], raw[n:]


def _described(key) -> str:
    return type(key).__name__ + (" of another context" if hasattr(key, "context") else "")


def _switch_modulus(words: np.ndarray, old: int, new: int) -> np.ndarray:
    """round(w new / old) mod new, for words below old (< 2^61): float64 is exact
    to 2^-24 of a unit of the new modulus here, far below its rounding."""
    centred = np.where(words >= old // 2, words.astype(np.float64) - old, words.astype(np.float64))
    return (np.rint(centred * (new / old)).astype(np.int64) % new).astype(np.uint64)
