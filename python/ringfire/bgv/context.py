"""The BGV context (and, through :mod:`ringfire.bfv`, the BFV one): parameters,
keys, batch and coefficient encoding, encryption, decryption with the noise
budget, loading."""

from __future__ import annotations

import numbers
from typing import Iterable, Sequence

import numpy as np

from .. import _core
from .._checks import warnings_at_caller
from ..rlwe.context import ContextBase, check_security_argument, split_special_bits
from ..rlwe.keys import GaloisKeys, KeySet, MasterKeys, PublicKey, SecretKey
from ..rlwe.shapes import as_values
from .chains import DEFAULT_CHAINS, SPECIAL_PRIME_BITS, chain_for_depth
from .ciphertext import Ciphertext, Plaintext
from .evaluator import Evaluator

PRESETS = {f"N{n.bit_length() - 1}": dict(poly_degree=n, **chain) for n, chain in DEFAULT_CHAINS.items()}
DEFAULT_PLAIN_BITS = 20


def _plain_choice(scheme: str, plain_modulus, plain_bits) -> tuple[int, int]:
    if plain_modulus is not None and plain_bits is not None:
        raise ValueError(f"[{scheme}.Context] give plain_modulus or plain_bits, not both")
    for name, value in (("plain_modulus", plain_modulus), ("plain_bits", plain_bits)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise TypeError(f"[{scheme}.Context] {name} must be an integer, got {value!r}")
    if plain_modulus is not None:
        return int(plain_modulus), 0
    return 0, DEFAULT_PLAIN_BITS if plain_bits is None else int(plain_bits)


class Context(ContextBase):
    """BGV: exact arithmetic modulo a plaintext modulus t on encrypted vectors of
    integers.

    Args:
        poly_degree: ring degree N (a power of two, 2^12 .. 2^17); a ciphertext
            holds N integers mod t as a 2 x N/2 matrix (batching).
        plain_modulus: t. With a prime t = 1 (mod 2N) slots can be batched;
            any other t (coprime to the ciphertext primes, e.g. a power of two)
            allows coefficient encoding only.
        plain_bits: instead of t: the largest batching prime of this many bits
            (default 20 bits when neither is given).
        coeff_bits: bit sizes of the ciphertext primes q_0..q_L (default: a
            chain for this N within the 128-bit bound, :data:`DEFAULT_CHAINS`).
            When ``special_bits`` is omitted, the last entry is the size of the
            special primes and ringfire chooses how many (and dnum) for speed.
        special_bits: bit sizes of the key-switching primes, exactly (default: chosen for speed).
        depth: instead of ``coeff_bits``: the number of products the chain must
            allow (squarings of a fresh ciphertext); the smallest chain the noise
            estimates allow, with special primes chosen for speed
            (:func:`ringfire.bgv.chains.chain_for_depth`).
        dnum: key-switching digits (default: the fewest that the special primes cover).
        security: 128, 192 or 256 (HE-standard bound for ternary secrets).
        device, insecure_no_security_check, insecure_deterministic_seed: as
            :class:`ringfire.ckks.Context`.

    Operators on ciphertexts (``+ - *``, ``**``, ``rotate``, ``swap_rows``)
    relinearize and switch moduli by themselves: before a product, a noisy
    operand is divided by its last prime when that leaves more noise budget
    (the choice OpenFHE's FLEXIBLEAUTO makes, here from the noise estimates).
    """

    scheme = "bgv"
    _ciphertext_type = Ciphertext
    _plaintext_type = Plaintext
    _scale_invariant = False  # BFV: products are scale-invariant

    def __init__(self, poly_degree: int, plain_modulus: int | None = None, plain_bits: int | None = None,
                 coeff_bits: Sequence[int] | None = None, special_bits: Sequence[int] | None = None,
                 dnum: int | None = None, security: int = 128, *, depth: int | None = None, device: str = "cpu",
                 insecure_no_security_check: bool = False, insecure_deterministic_seed: bytes | None = None):
        scheme = self.scheme
        if isinstance(poly_degree, bool) or not isinstance(poly_degree, numbers.Integral):
            raise TypeError(f"[{scheme}.Context] poly_degree must be an integer, got {poly_degree!r}")
        poly_degree = int(poly_degree)
        security = check_security_argument(scheme, security)
        t, t_bits = _plain_choice(scheme, plain_modulus, plain_bits)
        if depth is not None:
            if coeff_bits is not None or special_bits is not None:
                raise ValueError(f"[{scheme}.Context] give depth or coeff_bits/special_bits, not both")
            coeff_bits = chain_for_depth(scheme, poly_degree, depth, t, t_bits) + [SPECIAL_PRIME_BITS]
        elif coeff_bits is None:
            if poly_degree not in DEFAULT_CHAINS:
                raise ValueError(f"[{scheme}.Context] no default modulus chain for N={poly_degree} (defaults: "
                                 f"{sorted(DEFAULT_CHAINS)}); pass coeff_bits and special_bits")
            coeff_bits = DEFAULT_CHAINS[poly_degree]["coeff_bits"]
        coeff_bits, special_bits, special_size = split_special_bits(scheme, [int(b) for b in coeff_bits],
                                                                    special_bits)
        self._set_device(device)
        with warnings_at_caller():
            params = _core.Parameters(poly_degree, coeff_bits, special_bits,
                                      0 if dnum is None else int(dnum), security, 0,
                                      insecure_no_security_check=bool(insecure_no_security_check),
                                      scheme=scheme, plain_modulus=t, plain_bits=t_bits,
                                      special_prime_bits=special_size)
        self._init_from(params, insecure_deterministic_seed)

    def _init_from_pickle(self, params, options: dict) -> None:
        self._init_from(params, None)

    def _init_from(self, params, seed: bytes | None) -> None:
        if params.scheme != self.scheme.upper():
            raise ValueError(f"[{self.scheme}.Context] these are {params.scheme} parameters")
        native = _core.BgvContext(params)
        self._init_runtime(native, _core.BgvEvaluator(native), seed)

    @classmethod
    def preset(cls, name: str, **overrides) -> "Context":
        """A context from :data:`PRESETS` (``"N12"`` .. ``"N16"``: the default chain of that
        ring degree; ``plain_bits=`` / ``plain_modulus=`` choose t)."""
        if name not in PRESETS:
            raise ValueError(f"[{cls.scheme}.Context] unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    @classmethod
    def from_bytes(cls, data: bytes, *, mac_key: bytes | None = None, insecure_no_security_check: bool = False,
                   insecure_deterministic_seed: bytes | None = None) -> "Context":
        """A context from ``ctx.to_bytes()`` (same primes and t, hence same fingerprint)."""
        self = cls.__new__(cls)
        self._init_from(cls._load_parameters(data, mac_key, insecure_no_security_check), insecure_deterministic_seed)
        return self

    # ---- properties ------------------------------------------------------------------
    slots = property(lambda self: self.poly_degree, doc="N: integers per ciphertext (2 rows of N/2 when batching).")
    row_size = property(lambda self: self.poly_degree // 2, doc="N/2: the slots of one row (rotations act per row).")
    plain_modulus = property(lambda self: self._core.plain_modulus, doc="t: arithmetic is modulo t.")
    can_batch = property(lambda self: self._core.can_batch,
                         doc="Whether t batches N slots (a prime t = 1 mod 2N); else coefficient encoding only.")
    max_level = property(lambda self: self._core.max_level, doc="Primes a fresh ciphertext can switch away.")

    # ---- keys --------------------------------------------------------------------------
    def keygen(self, rotations: Iterable[int] | str | None = (), swap_rows: bool = False,
               master_rotations: bool = False):
        """Generates a secret key and the evaluation keys.

        Args:
            rotations: row rotation steps to make Galois keys for (negative = right),
                or ``"power_of_two"`` for every ±2^k (any rotation is then reachable).
            swap_rows: also make the key that swaps the two rows.
            master_rotations: make master keys (``keys.master``, see
                :meth:`master_keys`) instead of the row-swap key: the server derives
                every rotation it needs from them. ``rotations`` still get direct keys.

        Returns ``(secret_key, keys)``; ``keys`` (public, relin, galois) also becomes
        this context's default evaluation keys.
        """
        return self._generate_keys(rotations, self._swap_element(swap_rows), None, master_rotations)

    def master_keys(self, secret_key: SecretKey, level: int | None = None, swap_rows: bool = False) -> MasterKeys:
        """Master rotation keys (client side): one per power-of-two row rotation, and
        the row swap with ``swap_rows``, from which :meth:`derive_galois_keys` makes
        any rotation key for levels up to ``level`` (default :attr:`master_key_level`,
        the highest with room under the security bound for the masters' special
        primes) without the secret key (docs/keys.md)."""
        return self._master_keys(secret_key, level, swap_rows, f"{self.scheme}.master_keys")

    def derive_galois_keys(self, master: MasterKeys, rotations: Iterable[int] | str = (),
                           swap_rows: bool = False) -> GaloisKeys:
        """Row-rotation keys (and the row swap) derived from ``master`` (server side,
        no secret key), for ciphertexts up to ``master.level``."""
        return self._derive_galois_keys(master, rotations, self._swap_element(swap_rows),
                                        f"{self.scheme}.derive_galois_keys")

    def galois_keys(self, secret_key: SecretKey, rotations: Iterable[int] | str = (), swap_rows: bool = False,
                    level: int | None = None):
        """More Galois keys for an existing secret key of this context, serving
        levels up to ``level`` (default :attr:`max_level`): lower keys are smaller,
        and rotating a ciphertext above their level raises."""
        return self._more_galois_keys(secret_key, rotations, self._swap_element(swap_rows), level)

    def _swap_element(self, swap_rows: bool) -> list[int]:
        return [self._core.rlwe.conjugation_element()] if swap_rows else []

    # ---- encoding ----------------------------------------------------------------------
    def _residues(self, values, op: str, length: int) -> np.ndarray:
        """``values`` (ints, bools; a scalar fills every entry; shorter vectors are
        zero-padded) as residues in [0, t), refusing values outside (-t, t)."""
        t = self.plain_modulus
        arr = as_values(values)
        if arr.dtype == object:  # Python ints of any size
            try:
                arr = np.array([int(v) for v in arr.ravel()], dtype=object).reshape(arr.shape)
            except (TypeError, ValueError):
                raise TypeError(f"[{op}] values must be integers") from None
        elif arr.dtype.kind not in "iub":
            raise TypeError(f"[{op}] values must be integers (mod t={t}), got dtype {arr.dtype}")
        if arr.ndim == 0:
            arr = np.full(length, arr.item(), dtype=object if arr.dtype == object else arr.dtype)
        if arr.ndim != 1:
            raise ValueError(f"[{op}] expected a 1-D vector of at most {length} values, got shape {arr.shape}")
        if arr.size > length:
            raise ValueError(f"[{op}] got {arr.size} values but there are only {length} slots")
        if arr.dtype.kind == "u":
            bad = arr >= t
        elif arr.dtype.kind in "ib":
            arr = arr.astype(np.int64)
            bad = (arr <= -t) | (arr >= t)
        else:
            bad = np.array([not -t < int(v) < t for v in arr], dtype=bool)
        if bad.any():
            raise ValueError(f"[{op}] the value {arr[np.argmax(bad)]} is outside (-t, t) for t={t}: reduce it mod t "
                             "first (values are residues mod t)")
        out = np.zeros(length, dtype=np.uint64)
        if arr.dtype == object:
            out[:arr.size] = [int(v) % t for v in arr]
        elif arr.dtype.kind == "u":
            out[:arr.size] = arr
        else:
            out[:arr.size] = np.where(arr < 0, arr + np.int64(t), arr).astype(np.uint64)
        return out

    def _coefficients_of_slots(self, values, op: str) -> np.ndarray:
        if not self.can_batch:
            raise ValueError(f"[{op}] t={self.plain_modulus} cannot batch N={self.poly_degree} slots (batching needs "
                             f"a prime t = 1 mod {2 * self.poly_degree}), so a vector has no slots to go to: encrypt "
                             "ctx.encode_coefficients(values) (a polynomial: products are negacyclic, not slot-wise) "
                             "and read it with decrypt_coefficients, or choose a batching t with plain_bits=...")
        return np.asarray(self._core.batch_encode(self._residues(values, op, self.slots)))

    def encode(self, values, level: int | None = None) -> Plaintext:
        """Up to N integers (mod t) in the slots: row 0 is ``values[:N/2]``, row 1
        ``values[N/2:]``; shorter vectors are zero-padded, a scalar fills every slot."""
        values = as_values(values)
        coefficients = self._coefficients_of_slots(values, f"{self.scheme}.encode")
        out = Plaintext.from_coefficients(self, coefficients, self.max_level if level is None else int(level))
        return out._set_shape(values.shape, True)

    def encode_coefficients(self, values, level: int | None = None) -> Plaintext:
        """Up to N integers (mod t) as the coefficients of the plaintext polynomial
        (any t; products are negacyclic polynomial products mod t)."""
        coefficients = self._residues(values, f"{self.scheme}.encode_coefficients", self.poly_degree)
        return Plaintext.from_coefficients(self, coefficients, self.max_level if level is None else int(level))

    def decode(self, plaintext: Plaintext, signed: bool = True) -> np.ndarray:
        """The slots of a plaintext (under a t that cannot batch: ``plaintext.coefficients()``)."""
        self._require_slots(f"{self.scheme}.decode", "plaintext.coefficients()")
        return self._signed(np.asarray(self._core.batch_decode(plaintext.coefficients())), signed)

    def _require_slots(self, op: str, instead: str) -> None:
        if not self.can_batch:
            raise ValueError(f"[{op}] t={self.plain_modulus} cannot batch N={self.poly_degree} slots (batching needs "
                             f"a prime t = 1 mod {2 * self.poly_degree}), so there are no slots to read: use "
                             f"{instead} for the polynomial's coefficients, or choose a batching t with "
                             "plain_bits=...")

    def _signed(self, values: np.ndarray, signed: bool) -> np.ndarray:
        """Residues as int64: centred in (-t/2, t/2] when ``signed``, else in [0, t)."""
        t = self.plain_modulus
        out = values.astype(np.int64)
        if signed:
            out[values > t // 2] -= np.int64(t)
        return out

    # ---- encryption ---------------------------------------------------------------------
    def encrypt(self, values, key, level: int | None = None) -> Ciphertext:
        """Encrypts integers (batched into the slots, or a :class:`Plaintext`) with a
        :class:`KeySet` / :class:`PublicKey`, or symmetrically with the :class:`SecretKey`
        (a smaller, seeded ciphertext)."""
        level = self.max_level if level is None else int(level)
        # A vector means slots; under a t that cannot batch, encode_coefficients says
        # what it means instead (a polynomial), so no vector is silently reinterpreted.
        plain = values if isinstance(values, Plaintext) else self.encode(values, level)
        pt = plain._at(level, 1)
        keys = key if isinstance(key, KeySet) else None
        if isinstance(key, SecretKey):
            native = _core.encrypt_secret(self._own_secret_key(key, f"{self.scheme}.encrypt")._native, pt, self._prng)
        else:
            public = key.public if isinstance(key, KeySet) else key
            if not isinstance(public, PublicKey):
                raise TypeError(f"[{self.scheme}.encrypt] key must be a KeySet, a PublicKey or a SecretKey")
            native = _core.encrypt_public(public._native, pt, self._prng)
        out = Ciphertext(native, self, keys, device=self.device)
        # Coefficient encoding has no slots: its shape is all N coefficients.
        return out._set_shape(plain.shape, plain._zero_tail) if self.can_batch else out

    def _decrypt_native(self, ciphertext: Ciphertext, secret_key: SecretKey, op: str) -> np.ndarray:
        if not isinstance(ciphertext, Ciphertext):
            raise TypeError(f"[{op}] expected a {self.scheme} Ciphertext, got {type(ciphertext).__name__}")
        secret_key = self._own_secret_key(secret_key, op)
        coefficients, _ = self._core.decrypt(ciphertext._host(), secret_key._native)
        return np.asarray(coefficients)

    def decrypt(self, ciphertext: Ciphertext, secret_key: SecretKey, signed: bool = True) -> np.ndarray:
        """The slots as int64, in the ciphertext's shape (the length encrypted, or a
        scalar for shape ()): centred in (-t/2, t/2] (``signed=True``) or in [0, t).

        Raises ``ValueError`` when the noise has overflowed (less than one bit of
        budget left): the result would be wrong, so none is returned; and when t
        cannot batch (there are no slots: :meth:`decrypt_coefficients`)."""
        self._require_slots(f"{self.scheme}.decrypt", "decrypt_coefficients")
        coefficients = self._decrypt_native(ciphertext, secret_key, f"{self.scheme}.decrypt")
        values = self._signed(np.asarray(self._core.batch_decode(coefficients)), signed)
        shape = ciphertext.shape
        return values[0] if not shape else values[:shape[0]]

    def decrypt_coefficients(self, ciphertext: Ciphertext, secret_key: SecretKey, signed: bool = True) -> np.ndarray:
        """The plaintext polynomial's N coefficients (coefficient encoding)."""
        coefficients = self._decrypt_native(ciphertext, secret_key, f"{self.scheme}.decrypt")
        return self._signed(coefficients, signed)

    def noise_budget(self, ciphertext: Ciphertext, secret_key: SecretKey) -> float:
        """Bits of noise budget left (exact): decryption is correct while it is > 0.
        Each product spends some; see ``ct.noise_budget_estimate`` for the keyless estimate."""
        secret_key = self._own_secret_key(secret_key, f"{self.scheme}.noise_budget")
        return float(self._core.noise_budget(ciphertext._host(), secret_key._native))

    def evaluator(self, keys: KeySet | None = None) -> Evaluator:
        """The explicit operations (keys default to this context's)."""
        return Evaluator(self, keys if keys is not None else self._default_keys)


