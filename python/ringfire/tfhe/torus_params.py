"""Parameter sets of the 64-bit torus engine, their security sources and their noise model.

The engine runs TFHE in the KS-PBS order that tfhe-rs and Concrete use:
ciphertexts live mod 2^64 under the "big" key ``z`` (the ring secret read as an
LWE key of dimension ``N``); a programmable bootstrap switches them to the small
key ``s`` (dimension ``n``, mod 2^32), rounds them to ``q = 2N``, blindly rotates
a test polynomial (CGGI, binary secrets, a double-precision FFT) and extracts the
result under ``z`` again. Errors are TUniform(2^b): integers in [-2^b, 2^b], the
ends at half weight, variance (2^(2b+1) + 1) / 6.

Noise is counted at ``q = 2N``, where a lookup table's input is decided:

- a ciphertext's own variance (``Ciphertext.variance``): a fresh encryption's
  TUniform error, or a bootstrap's output (:meth:`TorusParameterSet.bootstrap_variance`),
  scaled by linear operations;
- plus what each bootstrap's first steps add (:meth:`TorusParameterSet.switch_terms`):
  the key switch's rounding and key errors, its 32-bit words, and the modulus
  switch to 2N -- the dominant term.
"""

from __future__ import annotations

import dataclasses

from .. import _core

# The key switch's table keeps each word's top 24 bits (TorusKeySwitchKey::kWordBits,
# tfhe/torus_keys.h); its sums run mod 2^32.
KEY_SWITCH_WORD_BITS = 24

# Where the security of the named sets comes from: each key's dimension and
# error width appear together in parameter sets Zama publishes at 128-bit
# security (estimated with the lattice estimator).
_TFHE_RS_2048 = (
    "tfhe-rs V1_x PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128 (shortint/parameters/v1_*/classic/tuniform/"
    "p_fail_2_minus_128/ks_pbs.rs): LWE n=918 with TUniform(2^45) and GLWE k=1, N=2048 with TUniform(2^17), "
    "binary secrets, modulus 2^64, 128-bit security estimated there with the lattice estimator; the gadgets "
    "are that set's (PBS 2^23 x 1, key switch 2^4 x 4)")
_TFHE_RS_2048_MULTI_BIT = _TFHE_RS_2048 + (
    "; multi-bit bootstrapping (groups of 2) encrypts more RGSW messages under the same GLWE key, as tfhe-rs's "
    "PARAM_MULTI_BIT_GROUP_{2,3,4}_* sets do: the estimate, over any number of samples, is unchanged")
_TFHE_RS_2048_WIDE = _TFHE_RS_2048.replace("the gadgets are that set's (PBS 2^23 x 1, key switch 2^4 x 4)",
                                           "the key switch's gadget is that set's (2^4 x 4), the PBS's 2^12 x 3 "
                                           "here (2^23 x 1 there: a gadget changes the noise, not the keys' "
                                           "security)")
_TFHE_RS_4096 = (
    "tfhe-rs V1_0 PARAM_GPU_MULTI_BIT_GROUP_3_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128 (the same LWE key, n=918 "
    "with TUniform(2^45)) and its GLWE key k=1, N=4096 with TUniform(2^3), binary secrets, modulus 2^64, "
    "128-bit security estimated there with the lattice estimator; the gadgets are that set's (PBS 2^21 x 1 there, "
    "2^22 x 1 here: a gadget changes the noise, not the keys' security; key switch 2^3 x 5)")


# The FFT's rounding, relative to 2L N E[d^2] E[a^2] 2^-106 (N / 2048) per step (a: the
# key's uniform 64-bit words): measured at 1.8e4 on STD128_T64's keys with a 2^23 x 2
# gadget and TUniform(2^3) errors, where it is the only term (256 bootstraps; the
# output error's variance 0.0139 at q), and consistent with two sets where other
# terms add to it (2^15 x 2: 3.1e4, 2^23 x 1: 1.6e4 and 2.3e4, each +-25 %). It grows
# with N^2, not N: the same measurement at N = 4096 (STD128_T64_LP's keys, 2^22 x 2)
# read 1.95 and 2.22 times the N-linear figure (1000 bootstraps each, two keys), where
# N = 2048 read 0.95 and 0.90 in the same run.
FFT_ERROR = 1.8e4
FFT_ERROR_RING = 2048


def tuniform_variance(bound_log2: int) -> float:
    """Variance of TUniform(2^b)."""
    return (2.0 ** (2 * bound_log2 + 1) + 1) / 6


@dataclasses.dataclass(frozen=True)
class TorusParameterSet:
    """One parameter set of the 64-bit torus engine (see the module docstring).

    ``security`` is the claimed classical security in bits with its ``source``,
    or ``None`` for sets that are insecure by design: :class:`~ringfire.tfhe.Context`
    refuses those unless asked with ``insecure=True``.
    """

    name: str
    lwe_dimension: int
    ring_dimension: int
    pbs_base_log: int
    pbs_levels: int
    ks_base_log: int
    ks_levels: int
    lwe_noise_log2: int
    glwe_noise_log2: int
    security: int | None = None
    source: str = ""
    # Bits of s per blind-rotation step (multi-bit bootstrapping): 1 is CGGI's
    # one key per bit; g in 2..4 keeps 2^g - 1 keys per group of g bits and takes
    # n / g steps, each costing the transforms of one bit.
    grouping: int = 1

    word_bits = 64  # ciphertext words: 64-bit, mod 2^64
    secret_square_mean = 0.5  # binary secrets: E[s^2]
    centred_square_mean = 0.25  # and E[(s - 1/2)^2], what the centred modulus switch leaves

    @property
    def lwe_modulus(self) -> int:
        """q = 2N: where a bootstrap's input is rounded, and noise is counted."""
        return 2 * self.ring_dimension

    @property
    def ciphertext_dimension(self) -> int:
        """Words of ``a`` in a ciphertext: N (the big key)."""
        return self.ring_dimension

    @property
    def bootstrap_key_count(self) -> int:
        """RGSW encryptions in the bootstrapping key: n, or (n / g)(2^g - 1) multi-bit."""
        g = self.grouping
        return self.lwe_dimension if g == 1 else self.lwe_dimension // g * ((1 << g) - 1)

    def native(self) -> _core.TfheTorusParams:
        p = _core.TfheTorusParams()
        for field in ("lwe_dimension", "ring_dimension", "pbs_base_log", "pbs_levels", "ks_base_log", "ks_levels",
                      "lwe_noise_log2", "glwe_noise_log2", "grouping"):
            setattr(p, field, getattr(self, field))
        p.validate()
        return p

    # ---- noise model ---------------------------------------------------------------

    def _scale2(self) -> float:
        """(q / 2^64)^2: variances at 2^64 to variances at q."""
        return (self.lwe_modulus / 2.0 ** 64) ** 2

    def fresh_variance(self) -> float:
        """A fresh encryption's error variance at q."""
        return tuniform_variance(self.glwe_noise_log2) * self._scale2()

    def bootstrap_terms(self) -> dict[str, float]:
        """A bootstrap's output error, term by term (variances at q): n CMux steps, each adding

        - ``keys``: 2L digit polynomials times the key's TUniform errors (N E[d^2] Var each);
        - ``gadget_rounding``: the gadget's rounding of both polynomials,
          E[s^2] (1 + N E[z^2]) 4^r / 12 for the r = 64 - B L rounded bits;
        - ``fft``: the double-precision transform's rounding, 2L N E[d^2] E[a^2] 2^-106 (N / 2048)
          times a constant measured where it is the only term (:data:`FFT_ERROR`): with digits of
          2^23 it is about a third of the output error at STD128_T64.

        Multi-bit (``grouping`` g > 1): n / g steps, each adding 2^g - 1 key products
        multiplied by X^m - 1 (twice a product's variance), so ``keys`` and ``fft`` count
        2 (2^g - 1) / g products per bit instead of one; the gadget's rounding enters once
        per group, through the one pattern the group's bits match (X^m - 1 again, and
        none when they are all 0: probability 2^-g).
        """
        n, N, g = self.lwe_dimension, self.ring_dimension, self.grouping
        base = 2.0 ** self.pbs_base_log
        digits = (base * base + 2) / 12
        rounded = 64 - self.pbs_base_log * self.pbs_levels
        rows = 2 * self.pbs_levels * N * digits
        products = n if g == 1 else n // g * ((1 << g) - 1) * 2
        roundings = n * self.secret_square_mean if g == 1 else n // g * 2 * (1 - 2.0 ** -g)
        return {
            "keys": products * rows * tuniform_variance(self.glwe_noise_log2) * self._scale2(),
            "gadget_rounding": roundings * (1 + N * self.secret_square_mean) * 4.0 ** rounded / 12 * self._scale2(),
            "fft": products * rows * (2.0 ** 128 / 12) * 2.0 ** -106 * FFT_ERROR * (N / FFT_ERROR_RING)
                   * self._scale2(),
        }

    def bootstrap_variance(self) -> float:
        """Variance (at q) of a bootstrap's output, before the next bootstrap's switches."""
        return sum(self.bootstrap_terms().values())

    def switch_terms(self) -> dict[str, float]:
        """What a bootstrap's first steps add to its input's error (variances at q).

        - ``key_switch_rounding``: the low 64 - B L bits of the N words, rounded
          away, times the binary big key, centred as the table's words below: the
          switch knows each word's rounding and moves the part the key's mean 1/2
          carries into the body, so E[(z - 1/2)^2] = 1/4 instead of E[z^2] = 1/2;
        - ``key_switch_keys``: N L digits (E[d^2] = (B^2 + 2) / 12) times the
          table's TUniform errors;
        - ``key_switch_words``: the table kept as its words' top 24 bits (each
          rounded, at most half a unit of 2^40 of 2^64), times the digits: a row's
          body and its n mask words are each rounded, and the masks' errors meet
          the small key. The table's builder knows those errors, and moves the part
          the key's mean carries into the body (centred, as the modulus switch
          below), so a row's phase moves by (1 + n E[(s - 1/2)^2]) 4^40 / 12 (about
          5 % of the key switch's variance at N = 2048; n E[s^2] uncentred); and the
          input's body rounded to 32 bits;
        - ``mod_switch``: rounding the n + 1 words to q (each uniform in
          [-1/2, 1/2)) times the small binary key, centred: the part of the
          error that the key's mean 1/2 carries is known to the server and
          taken out of b, so each word counts with E[(s - 1/2)^2] = 1/4
          instead of E[s^2] = 1/2 (half the variance; tfhe-rs's 4-bit set at
          2^-128 with N = 2048 rests on a reduction of this term too).
        """
        n, N, L = self.lwe_dimension, self.ring_dimension, self.ks_levels
        base = 2.0 ** self.ks_base_log
        digits = (base * base + 2) / 12
        rounded = 64 - self.ks_base_log * L
        scale2 = self._scale2()
        return {
            "key_switch_rounding": N * self.centred_square_mean * 4.0 ** rounded / 12 * scale2,
            "key_switch_keys": N * L * digits * tuniform_variance(self.lwe_noise_log2) * scale2,
            "key_switch_words": (N * L * digits * (1 + n * self.centred_square_mean) * 4.0 ** (64 - KEY_SWITCH_WORD_BITS)
                                 + 4.0 ** 32) / 12 * scale2,
            "mod_switch": (1 + n * self.centred_square_mean) / 12,
        }

    def switch_variance(self, even_share: float = 1.0) -> float:
        """What each bootstrap's first steps add (``switch_terms``); ``even_share`` is the
        32-bit sets' LMKCDEY argument and changes nothing here."""
        return sum(self.switch_terms().values())

    def rounding_variance(self, v: int) -> float:
        """What switching to a grid v times coarser adds (many-LUT: the modulus switch goes
        to 2N / v, centred as ``mod_switch``)."""
        return (self.lwe_dimension * self.centred_square_mean + 1) * (v * v - 1) / 12


TORUS_PRESETS: dict[str, TorusParameterSet] = {
    # Tables of up to 4 bits on the 64-bit torus, N = 2048 (tfhe-rs's 4-bit set): a
    # 4-bit table fails with probability below 2^-128 (Context.failure_probability).
    "STD128_T64": TorusParameterSet("STD128_T64", lwe_dimension=918, ring_dimension=2048, pbs_base_log=23,
                                    pbs_levels=1, ks_base_log=4, ks_levels=4, lwe_noise_log2=45,
                                    glwe_noise_log2=17, security=128, source=_TFHE_RS_2048),
    # STD128_T64's keys with multi-bit bootstrapping (groups of 2 bits): 459 rotation
    # steps instead of 918, each with three keys; bootstraps about a quarter faster in
    # batches, for 1.5 times the bootstrapping key (45 MB on the wire, 135 MB in memory).
    # Its added noise leaves the 4-bit table at 2^-131.3.
    "STD128_T64_MB": TorusParameterSet("STD128_T64_MB", lwe_dimension=918, ring_dimension=2048, pbs_base_log=23,
                                       pbs_levels=1, ks_base_log=4, ks_levels=4, lwe_noise_log2=45,
                                       glwe_noise_log2=17, security=128, source=_TFHE_RS_2048_MULTI_BIT,
                                       grouping=2),
    # STD128_T64's keys with a gadget of three levels of 2^12: bootstraps whose outputs
    # carry 2^-21 of STD128_T64's error variance, for about twice the time and three times
    # the bootstrapping key. What it is for: signs and floors of wide integers in one
    # ciphertext (ctx.sign, ctx.shift_right), which multiply each round's bootstrapped
    # error by 2^(bits left - 4): 18 bits after a bootstrap, 22 fresh, at 2^-118.9 (a floor's
    # result, which carries a bootstrap's error, up to 18).
    "STD128_T64_WIDE": TorusParameterSet("STD128_T64_WIDE", lwe_dimension=918, ring_dimension=2048,
                                         pbs_base_log=12, pbs_levels=3, ks_base_log=4, ks_levels=4,
                                         lwe_noise_log2=45, glwe_noise_log2=17, security=128,
                                         source=_TFHE_RS_2048_WIDE),
    # N = 4096: slots twice as wide, 5-bit tables below 2^-64.
    "STD128_T64_LP": TorusParameterSet("STD128_T64_LP", lwe_dimension=918, ring_dimension=4096, pbs_base_log=22,
                                       pbs_levels=1, ks_base_log=3, ks_levels=5, lwe_noise_log2=45,
                                       glwe_noise_log2=3, security=128, source=_TFHE_RS_4096),
    # Small and insecure: exhaustive tests in milliseconds.
    "TOY_T64": TorusParameterSet("TOY_T64", lwe_dimension=64, ring_dimension=512, pbs_base_log=15, pbs_levels=2,
                                 ks_base_log=4, ks_levels=5, lwe_noise_log2=30, glwe_noise_log2=20),
    # Insecure and deliberately noisy (a wide key-switching error): 3-bit tables
    # fail often enough to count, to check the model's p_fail.
    "NOISY_T64": TorusParameterSet("NOISY_T64", lwe_dimension=32, ring_dimension=256, pbs_base_log=15,
                                   pbs_levels=2, ks_base_log=8, ks_levels=2, lwe_noise_log2=48,
                                   glwe_noise_log2=20),
}
