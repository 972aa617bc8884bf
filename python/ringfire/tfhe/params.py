"""FHEW/TFHE parameter sets, their security sources and their noise model.

A set names the LWE ciphertexts that gates and lookup tables act on (dimension
``n``, modulus ``q = 2N``), the ring of the blind rotation (``N``, a prime
``Q`` below 2^29) with its gadget, and the key switch back (``Q_ks``, digits).
The noise model gives the variance of a bootstrapped ciphertext's error,
term by term, and from it the probability that a gate or a table lookup
decrypts wrongly (two-sided Gaussian tail) -- the numbers
:meth:`ringfire.tfhe.Context.failure_probability` reports and the tests
check against measured errors.
"""

from __future__ import annotations

import dataclasses
import math

from .. import _core

# Where the security of the named sets comes from.
_OPENFHE_STD128_3 = (
    "OpenFHE binfhe's STD128_3 set (src/binfhe/lib/binfhecontext.cpp, paramsMap: n=595, Q_ks=2^16, q=2048, "
    "N=1024, log2 Q=27, uniform ternary secrets, sigma=3.19; estimated there with the lattice estimator at "
    ">= 128-bit classical security); the ring also meets the HE standard's bound for N=1024 (log2 Q <= 27)")
_OPENFHE_STD128_4 = (
    "LWE: OpenFHE binfhe's STD128_4 set (src/binfhe/lib/binfhecontext.cpp, paramsMap: n=635, Q_ks=2^17, uniform "
    "ternary secret, sigma=3.19; estimated there with the lattice estimator at >= 128-bit classical security, "
    "beside a ring of N=1024 and log2 Q=27); ring: N=2048 with log2 Q=28 and a ternary secret, far inside the HE "
    "standard's bound for N=2048 (log2 Q <= 54) and larger than OpenFHE's ring for that set")
_OPENFHE_STD128 = (
    "OpenFHE binfhe's STD128 set (src/binfhe/lib/binfhecontext.cpp, paramsMap: n=556, Q_ks=2^15, q=2048, "
    "N=1024, log2 Q=27, uniform ternary secrets, sigma=3.19; estimated there with the lattice estimator at "
    ">= 128-bit classical security); the ring also meets the HE standard's bound for N=1024 (log2 Q <= 27)")

_LMKCDEY_KEYS = (
    "; LMKCDEY's automorphism keys are RLWE encryptions of z(X^t) under the ring secret z in the same ring, "
    "the circular-security assumption CKKS rotation keys and the paper (ePrint 2022/198, Section 5) make")


@dataclasses.dataclass(frozen=True)
class ParameterSet:
    """One FHEW/TFHE parameter set (see the module docstring).

    ``security`` is the claimed classical security in bits with its
    ``source``, or ``None`` for sets that are insecure by design (tests,
    failure counting): :class:`~ringfire.tfhe.Context` refuses those unless
    asked with ``insecure=True``.
    """

    name: str
    lwe_dimension: int
    ring_dimension: int
    ring_modulus_bits: int
    gadget_base_log: int
    gadget_digits: int
    gadget_skip_bits: int
    ks_modulus_log: int
    ks_base_log: int
    ks_digits: int
    sigma: float = 3.19
    security: int | None = None
    source: str = ""
    # 0: GINX blind rotation; w >= 1: LMKCDEY, automorphism keys for 5^1 .. 5^w (and -5).
    automorphism_window: int = 0

    word_bits = 32  # ciphertext words: uint32, mod q
    secret_square_mean = 2 / 3  # ternary secrets: E[s^2]

    @property
    def lwe_modulus(self) -> int:
        return 2 * self.ring_dimension

    @property
    def ciphertext_dimension(self) -> int:
        """Words of ``a`` in a ciphertext: n."""
        return self.lwe_dimension

    @property
    def ring_modulus(self) -> int:
        """Q: the largest prime below 2^ring_modulus_bits with Q = 1 mod 2N."""
        return _ring_modulus(self.ring_modulus_bits, self.ring_dimension)

    def native(self) -> _core.TfheParams:
        p = _core.TfheParams()
        p.lwe_dimension = self.lwe_dimension
        p.ring_dimension = self.ring_dimension
        p.ring_modulus = self.ring_modulus
        p.gadget_base_log = self.gadget_base_log
        p.gadget_digits = self.gadget_digits
        p.gadget_skip_bits = self.gadget_skip_bits
        p.ks_modulus = 1 << self.ks_modulus_log
        p.ks_base_log = self.ks_base_log
        p.ks_digits = self.ks_digits
        p.sigma = self.sigma
        p.automorphism_window = self.automorphism_window
        p.validate()
        return p

    # ---- noise model ---------------------------------------------------------------

    def noise_terms(self, *, exact: bool = False) -> dict[str, float]:
        """Error variances of one bootstrapped ciphertext, each at modulus q.

        - ``blind_rotation``: n steps, each adding the external product's
          error N sum_r Var(D_r) * 4 sigma^2 (the digits D_r of both
          polynomials times the two keys' errors, each multiplied by a
          monomial minus one: 2 sigma^2 apiece) and the approximate
          gadget's rounding; scaled by (q/Q)^2.
        - ``mod_switch_ring``: rounding the N+1 words from Q to Q_ks.
        - ``key_switch``: N d_ks fresh errors (one table entry per nonzero digit).
        - ``mod_switch_lwe``: rounding the n+1 words from Q_ks to q.

        A ternary secret coefficient has E[s^2] = 2/3.

        LMKCDEY (``automorphism_window`` w >= 1) has two kinds of steps instead: n RGSW
        products with one key (N sum_r Var(D_r) sigma^2, and the gadget's rounding times
        X^s: one term, not two), and at most :meth:`automorphism_count` key switches of the
        accumulator's a half (d_g digits, the rounding times z(X^t)), as many as
        :meth:`automorphism_count` expects. ``exact``: the exact rotation that many-LUT runs on
        its inputs, whose a_i are all even (rounded to multiples of the table count): one more
        RGSW product per coefficient, 2n in all.
        """
        n, N, Q = self.lwe_dimension, self.ring_dimension, self.ring_modulus
        q, qks, s2 = self.lwe_modulus, 1 << self.ks_modulus_log, self.sigma ** 2
        bg = 1 << self.gadget_base_log
        top = Q / 2 ** (self.gadget_skip_bits + 1) / bg ** (self.gadget_digits - 1)  # |last digit| bound
        digits_var = 2 * ((self.gadget_digits - 1) * bg * bg / 12 + top * top / 3)
        rounding = 4 ** self.gadget_skip_bits / 12 if self.gadget_skip_bits else 0.0
        if self.automorphism_window:
            product = N * digits_var * s2 + rounding * (1 + N * 2 / 3)
            key_switch = N * digits_var / 2 * s2 + rounding * N * 2 / 3
            rotation = (2 * n if exact else n) * product + self.automorphism_count() * key_switch
        else:
            rotation = n * (N * digits_var * 4 * s2 + 2 * rounding * (1 + N * 2 / 3))
        base = 1 << self.ks_base_log
        return {
            "blind_rotation": rotation * (q / Q) ** 2,
            "mod_switch_ring": (1 + N * 2 / 3) / 12 * (q / qks) ** 2,
            "key_switch": N * self.ks_digits * (1 - 1 / base) * s2 * (q / qks) ** 2,
            "mod_switch_lwe": (1 + n * 2 / 3) / 12,
        }

    def bootstrap_variance(self, *, exact: bool = False) -> float:
        """Variance (at q) of a bootstrapped ciphertext's error (``exact``: see noise_terms)."""
        return sum(self.noise_terms(exact=exact).values())

    def fresh_variance(self) -> float:
        """A fresh encryption's error variance at q."""
        return self.sigma ** 2

    def automorphism_count(self) -> float:
        """The expected number of LMKCDEY's automorphisms per blind rotation (the errors
        they add are independent, so their variances add by the expected count). Each half
        walks the classes j = N/2-1 .. 1, each occupied with probability 1 - (1 - 1/N)^n
        (the a_i made odd are uniform over N odd values): an automorphism before an
        occupied class when any are pending, when w are pending and at j = 1; plus
        X -> X^-5 between the halves. A walk over the pending count (< w) gives it."""
        w = self.automorphism_window
        if not w:
            return 0.0
        N = self.ring_dimension
        occupied = 1 - (1 - 1 / N) ** self.lwe_dimension
        pending = [1.0] + [0.0] * (w - 1)  # probability of each pending count
        count = 0.0
        for j in range(N // 2 - 1, 0, -1):
            after = [0.0] * (w + 1)
            for p, prob in enumerate(pending):
                if prob == 0:
                    continue
                if p > 0:
                    count += prob * occupied  # flushed before the occupied class
                    after[1] += prob * occupied
                    after[p + 1] += prob * (1 - occupied)
                else:
                    after[1] += prob
            flush = sum(after) if j == 1 else after[w]
            count += flush
            pending = [0.0] * w
            if j > 1:
                pending[0] = after[w]
                for p in range(1, w):
                    pending[p] = after[p]
        return 2 * count + 1

    def switch_variance(self, even_share: float = 1.0) -> float:
        """What a bootstrap adds to its input's error before deciding: nothing for GINX
        (this engine switches keys after the blind rotation, so bootstrap_variance holds
        it); LMKCDEY moves each even a_i to a neighbour (up or down by a hash of the
        ciphertext), adding +-s_i: E[s^2] per even a_i. ``even_share``: the share of even
        a_i, about 1/2 for sums of fresh or bootstrapped ciphertexts, all of them after a
        product by an even number (XOR's doubling); all by default (a bound); 0 for the exact
        rotation many-LUT bootstraps run (one more RGSW product per even a_i instead)."""
        if not self.automorphism_window:
            return 0.0
        return self.lwe_dimension * self.secret_square_mean * float(even_share)

    def rounding_variance(self, v: int) -> float:
        """The error that rounding every word of an LWE ciphertext to a multiple of v adds."""
        return (self.lwe_dimension * self.secret_square_mean + 1) * (v * v - 1) / 12


# Failure probabilities above this are warned about (lookups, signs, switched values).
WARN_P_FAIL = 2.0 ** -40


def tail_probability(variance: float, tolerance: float) -> float:
    """The probability that a Gaussian error of this variance reaches ``tolerance`` in
    absolute value (two-sided)."""
    return math.erfc(tolerance / math.sqrt(2 * variance))


def tail_probability_log2(variance: float, tolerance: float) -> float:
    """log2 of :func:`tail_probability`, finite where the probability itself underflows
    (below about 2^-1070): erfc(x) = e^{-x^2} / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - ...)."""
    x = tolerance / math.sqrt(2 * variance)
    if x < 25:
        return math.log2(math.erfc(x))
    series = 1 - 1 / (2 * x * x) + 3 / (4 * x ** 4)
    return (-x * x - math.log(x * math.sqrt(math.pi)) + math.log(series)) / math.log(2)


def _ring_modulus(bits: int, n: int, _cache: dict = {}) -> int:  # noqa: B006 (a deliberate cache)
    key = (bits, n)
    if key not in _cache:
        _cache[key] = _core.find_ntt_primes(bits, 1, n)[0]
    return _cache[key]


PRESETS: dict[str, ParameterSet] = {
    # Gates at 128-bit security: OpenFHE's STD128 lattice parameters; the
    # gadget and key-switching digits are ours (noise model above: a NAND
    # fails with probability 2^-98, MAJ and XOR3 2^-66; see
    # Context.failure_probability).
    "STD128": ParameterSet("STD128", lwe_dimension=556, ring_dimension=1024, ring_modulus_bits=27,
                           gadget_base_log=7, gadget_digits=3, gadget_skip_bits=6,
                           ks_modulus_log=15, ks_base_log=3, ks_digits=5,
                           security=128, source=_OPENFHE_STD128),
    # STD128 with LMKCDEY's blind rotation (Lee, Micciancio, Kim, Choi, Deryabin, Eom, Yoo,
    # Eurocrypt 2023): the same lattices; the key holds one RGSW encryption per LWE
    # coefficient instead of two, plus 11 automorphism keys (window 10). Moving even
    # coefficients to odd ones adds n/3 to a gate input's error: a NAND fails with
    # probability 2^-79.
    "STD128_LMKCDEY": ParameterSet("STD128_LMKCDEY", lwe_dimension=556, ring_dimension=1024, ring_modulus_bits=27,
                                   gadget_base_log=7, gadget_digits=3, gadget_skip_bits=6,
                                   ks_modulus_log=15, ks_base_log=3, ks_digits=5, automorphism_window=10,
                                   security=128, source=_OPENFHE_STD128 + _LMKCDEY_KEYS),
    # Low probability of failure, for circuits of many bootstraps (the
    # integers' full adders): OpenFHE's STD128_3 lattice parameters, a key
    # switch at 2^16; every gate, MAJ and XOR3 included, fails with
    # probability below 2^-128.
    "STD128_LP": ParameterSet("STD128_LP", lwe_dimension=595, ring_dimension=1024, ring_modulus_bits=27,
                              gadget_base_log=7, gadget_digits=3, gadget_skip_bits=6,
                              ks_modulus_log=16, ks_base_log=4, ks_digits=4,
                              security=128, source=_OPENFHE_STD128_3),
    # Tables of up to 3 bits: a ring of N = 2048 (q = 4096: slots twice as
    # wide) and a key switch at 2^17 (32-bit table words) so that its noise no
    # longer dominates; a 3-bit table fails with probability 2^-52, a
    # bootstrap costs about 2.5 times STD128's (BENCHMARKS.md).
    "STD128_LUT": ParameterSet("STD128_LUT", lwe_dimension=635, ring_dimension=2048, ring_modulus_bits=28,
                               gadget_base_log=7, gadget_digits=3, gadget_skip_bits=7,
                               ks_modulus_log=17, ks_base_log=3, ks_digits=6,
                               security=128, source=_OPENFHE_STD128_4),
    # Small and insecure: exhaustive tests in milliseconds.
    "TOY": ParameterSet("TOY", lwe_dimension=64, ring_dimension=512, ring_modulus_bits=27,
                        gadget_base_log=7, gadget_digits=3, gadget_skip_bits=6,
                        ks_modulus_log=16, ks_base_log=4, ks_digits=4),
    # Insecure and deliberately noisy (wide errors, a coarse gadget): gates
    # fail often enough to count, to check the noise model's p_fail.
    "NOISY": ParameterSet("NOISY", lwe_dimension=128, ring_dimension=512, ring_modulus_bits=27,
                          gadget_base_log=9, gadget_digits=2, gadget_skip_bits=8,
                          ks_modulus_log=14, ks_base_log=7, ks_digits=2, sigma=16.0),
}

# The 64-bit torus engine's sets (ringfire.tfhe.torus_params) are named beside these.
from .torus_params import TORUS_PRESETS  # noqa: E402  (after PRESETS, which it joins)

PRESETS.update(TORUS_PRESETS)
