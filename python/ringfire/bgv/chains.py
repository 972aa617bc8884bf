"""Modulus chains for BGV and BFV: the defaults per ring degree, and a chain
sized for a multiplicative depth from the noise estimates (``depth=``).

The estimates are those the evaluator stamps on its results (bgv/noise.h):
a chain is the smallest that keeps ``depth`` squarings of a fresh
ciphertext decryptable, with a margin, under the operators' own policy:

* BFV: the scale-invariant product's noise grows by about t ||s|| per
  product whatever the level, so only the total log2(Q) matters; it is
  split into as few primes as possible (60 bits at most), since every
  prime costs time in every operation;
* BGV: q_0 holds the result and each further prime is divided away by one
  modulus switch; the primes are as small as lets each product return to
  the rounding noise, found by running the operators' switching rule on the
  estimates (ringfire.bgv.ciphertext).
"""

from __future__ import annotations

import math

from .. import _core

# Within the 128-bit HE-standard bound: a 60-bit q_0 that holds the final
# result, 39-40-bit primes consumed one per product (BGV) or spent as budget
# (BFV). The last entry sizes the special primes, whose count (and dnum) is
# chosen for the fastest key switching within the bound. Depths: docs/bgv.md.
DEFAULT_CHAINS = {
    2**12: dict(coeff_bits=[36, 36, 37]),
    2**13: dict(coeff_bits=[55, 40, 40, 60]),
    2**14: dict(coeff_bits=[60] + [39] * 8 + [60]),
    2**15: dict(coeff_bits=[60] + [40] * 17 + [60]),
    2**16: dict(coeff_bits=[60] + [40] * 36 + [60]),
}
# Bits of noise budget a chain keeps after the last product.
MARGIN_BITS = 4.0
# BGV's products square the noise, so an estimate short by d bits is short by
# 2d after the next product: chains are sized with products this much noisier
# than estimated, which keeps each modulus switch well above the rounding
# noise it returns to (measured: tests/test_bgv.py, depth=).
BGV_PRODUCT_SLACK_BITS = 2.0
MAX_PRIME_BITS = 60
SPECIAL_PRIME_BITS = 60


class _Estimates:
    """The noise estimates of a provisional context with this N and t (they
    depend on N, t and the rounding noise, not on the chain)."""

    def __init__(self, scheme: str, n: int, plain_modulus: int, plain_bits: int):
        params = _core.Parameters(n, [MAX_PRIME_BITS] * 2, [MAX_PRIME_BITS], 0, 128, 0,
                                  insecure_no_security_check=False, scheme=scheme, plain_modulus=plain_modulus,
                                  plain_bits=plain_bits)
        self.core = _core.BgvContext(params)
        self.n = n
        self.log_t = math.log2(self.core.plain_modulus)
        self.fresh = self.core.fresh_noise_bits()
        self.rounding = self.core.rounding_noise_bits()
        # Relinearization adds about a rounding's worth of noise when P covers the digits.
        self.key_switch = self.rounding + 1.0

    def largest(self, noise_bits: float) -> float:
        """log2 of the largest error coefficient for a noise norm (as budget_bits assumes)."""
        return noise_bits - 0.5 * math.log2(self.n) + 0.5 * math.log2(2.0 * math.log(self.n))

    def needed_bits(self, noise_bits: float) -> float:
        """log2(Q) that keeps MARGIN_BITS of budget at this noise."""
        return 1.0 + self.log_t + self.largest(noise_bits) + MARGIN_BITS

    def product(self, a: float, b: float, scale_invariant: bool) -> float:
        slack = 0.0 if scale_invariant else BGV_PRODUCT_SLACK_BITS
        return add_bits(self.core.product_noise_bits(a, b, scale_invariant), self.key_switch) + slack

    def reduced(self, a: float, prime_bits: float) -> float:
        return add_bits(a - prime_bits, self.rounding)


def add_bits(a: float, b: float) -> float:
    """log2(2^a + 2^b): the norms of two independent errors, in bits."""
    hi, lo = max(a, b), min(a, b)
    return hi + math.log2(1.0 + 2.0 ** (lo - hi))


def _split(bits: float) -> list[int]:
    """As few primes as hold ``bits`` (each at most 60 bits, the same size)."""
    count = max(1, math.ceil(bits / MAX_PRIME_BITS))
    return [math.ceil(bits / count)] * count


def _bgv_reaches(est: _Estimates, chain: list[int], depth: int) -> bool:
    """Whether ``depth`` squarings under the operators' switching rule keep the margin."""
    level, noise = len(chain) - 1, est.fresh
    budget = lambda lvl, e: sum(chain[:lvl + 1]) - est.needed_bits(e) + MARGIN_BITS  # noqa: E731
    for _ in range(depth):
        while level > 0:  # divide first while that leaves the product more budget
            keep = budget(level, est.product(noise, noise, False))
            reduced = est.reduced(noise, chain[level])
            if budget(level - 1, est.product(reduced, reduced, False)) <= keep:
                break
            level, noise = level - 1, reduced
        noise = est.product(noise, noise, False)
        if budget(level, noise) < MARGIN_BITS:
            return False
    return True


def chain_for_depth(scheme: str, n: int, depth: int, plain_modulus: int = 0, plain_bits: int = 0) -> list[int]:
    """The ciphertext primes (bits) for ``depth`` products at ring degree ``n``."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"[{scheme}.Context] depth must be an integer >= 1, got {depth!r}")
    est = _Estimates(scheme, n, plain_modulus, plain_bits)
    if scheme == "bfv":
        noise = est.fresh
        for _ in range(depth):
            noise = est.product(noise, noise, True)
        return _split(est.needed_bits(noise))
    # BGV: the smallest chain [q_0] + [q] * depth (by total bits) that lets the
    # switching rule go `depth` products deep.
    best = None
    for middle in range(20, MAX_PRIME_BITS + 1):
        for q0 in range(20, MAX_PRIME_BITS + 1):
            chain = [q0] + [middle] * depth
            if (best is None or sum(chain) < sum(best)) and _bgv_reaches(est, chain, depth):
                best = chain
                break
    return best if best is not None else [MAX_PRIME_BITS] * (depth + 1)
