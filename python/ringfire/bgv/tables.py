"""Any function of the slots, exactly: a table over Z_t evaluated as one polynomial.

Under a prime plaintext modulus t every function F: Z_t -> Z_t is a polynomial of
degree at most t - 1 (interpolation over a field). Since the sum over y != 0 of y^j
is -1 when t - 1 divides j and 0 otherwise,

    P(x) = F(0) + sum_{k=1}^{t-2} c_k x^k + c_{t-1} x^{t-1},
    c_k = -sum_{y != 0} F(y) y^-k  (0 < k < t - 1),    c_{t-1} = -sum_y F(y).

With g a generator of Z_t^* and y = g^i, the sums over y != 0 are one transform of
length t - 1 of the sequence F(g^i) at the root g^-1: a radix-2 number-theoretic
transform when t - 1 is a power of two, which holds for the batching primes 257
(N <= 128) and 65537 (N <= 2^15), the Fermat primes.

The evaluation (Paterson and Stockmeyer): baby steps x, x^2, ..., x^(B-1) and giant
steps x^B, x^2B, x^4B, ...; each block of B coefficients is one linear combination of
the baby steps (a single pass over their words: ``Evaluator.linear_combination``)
plus its constant, and the blocks meet in a binary tree of products by the giant
steps. For degree d < B G that is B - 1 + log2(G) products for the powers and at most
G - 1 for the tree, log2(B) + log2(G) levels; for t = 65537 with a table whose values
sum to 0 (then c_{t-1} = 0, degree 65535): 256 baby steps, 256 blocks, 16 levels,
about 520 products and 65536 scalar products.

This is what the functional bootstrap of BGV/BFV slots evaluates after its homomorphic
decryption (ringfire.switching.lwe_to_slots); on its own it applies any table to
ciphertexts whose slots hold exact integers.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..ring import reversed_bits
from ..tracing import is_tracing
from .chains import add_bits
from .ciphertext import Ciphertext

# The noise budget a BFV table's result keeps by the evaluator's estimates, by default: about
# three scale-invariant products at N = 2^15 (31 bits each), what BGV's table leaves in levels.
KEEP_BITS = 100.0


def table_values(fn, t: int, *, signed: bool) -> np.ndarray:
    """F(y) mod t for y = 0 .. t - 1 (int64), fn reading y in [0, t), or, ``signed``, centred
    in (-t/2, t/2]; ``fn`` may also be an array of the t values itself."""
    if not callable(fn):
        values = np.asarray(fn)
        if values.shape != (t,) or values.dtype.kind not in "iu":
            raise ValueError(f"[bgv.SlotTable] a table given as values holds one integer per residue: shape ({t},), "
                             f"got {values.shape} of {values.dtype}")
        return np.mod(values.astype(object), t).astype(np.int64)
    y = np.arange(t, dtype=np.int64)
    if signed:
        y = np.where(y > t // 2, y - t, y)
    return np.mod(integer_results(fn, y), t).astype(np.int64)


def integer_results(fn, args: np.ndarray) -> np.ndarray:
    """fn at every one of ``args`` (int64) as Python integers (an object array): fn vectorized
    over the array, or, when that fails or gives another shape, called on each int. A result
    that is not an integer (a float, say, from ``/``) is refused by name, not truncated."""
    try:
        out = np.asarray(fn(args))
        vectorized = out.shape == args.shape
    except Exception:  # a function of one integer: called on each
        vectorized = False
    if not vectorized:
        out = np.array([fn(int(v)) for v in args], dtype=object)
    if out.dtype.kind in "iub":
        return out.astype(object)
    if not all(isinstance(v, (int, np.integer, bool, np.bool_)) for v in out.ravel()):
        bad = next(v for v in out.ravel() if not isinstance(v, (int, np.integer, bool, np.bool_)))
        raise TypeError(f"[bgv.SlotTable] a table maps integers to integers (mod t); the function returned "
                        f"{bad} ({type(bad).__name__}): use // for floor division, round() for rounding")
    return np.array([int(v) for v in out.ravel()], dtype=object).reshape(out.shape)


def table_coefficients(values: np.ndarray, t: int) -> np.ndarray:
    """The coefficients c_0 .. c_{t-1} (int64, in [0, t)) of the polynomial that takes
    ``values[y]`` at every y mod t (module docstring); t a prime with t - 1 a power of two."""
    check_fermat_prime(t)
    values = np.asarray(values, dtype=np.int64) % t
    g = _generator(t)
    order = t - 1
    points = _powers(g, order, t)                               # g^i, i < t - 1
    spectrum = _ntt(values[points], pow(g, -1, t), t)           # sum_i F(g^i) g^(-i k)
    coefficients = (-spectrum) % t
    coefficients[0] = values[0]
    coefficients = np.append(coefficients, (-int(values.sum())) % t)  # c_{t-1}
    return coefficients.astype(np.int64)


def check_fermat_prime(t: int) -> None:
    if t not in (3, 5, 17, 257, 65537):
        raise ValueError(f"[bgv.SlotTable] tables are polynomials found by a transform of length t - 1, which must "
                         f"be a power of two: t = 257 or 65537 (the batching Fermat primes), not {t}")


def _generator(t: int) -> int:
    """A generator of Z_t^* (t - 1 a power of two: any non-square)."""
    return next(g for g in range(2, t) if pow(g, (t - 1) // 2, t) == t - 1)


def _powers(g: int, count: int, t: int) -> np.ndarray:
    out = np.empty(count, dtype=np.int64)
    v = 1
    for i in range(count):
        out[i] = v
        v = v * g % t
    return out


def _ntt(x: np.ndarray, root: int, t: int) -> np.ndarray:
    """X_k = sum_j x_j root^(j k) mod t for a length n = 2^m and a primitive n-th root
    (iterative Cooley-Tukey, t < 2^31 so that products fit int64)."""
    n = len(x)
    x = np.asarray(x, dtype=np.int64)[reversed_bits(np.arange(n), n.bit_length() - 1)] % t
    m = 1
    while m < n:
        w = pow(root, n // (2 * m), t)                          # a primitive 2m-th root
        twiddles = _powers(w, m, t)
        blocks = x.reshape(-1, 2 * m)
        even, odd = blocks[:, :m], blocks[:, m:] * twiddles % t
        x = np.concatenate([(even + odd) % t, (even - odd) % t], axis=1).reshape(n)
        m *= 2
    return x


class SlotTable:
    """A function of each slot of a BGV/BFV ciphertext, evaluated exactly as a polynomial
    over Z_t (module docstring): ``SlotTable(ctx, fn)(ct)``.

    Args:
        context: a :class:`ringfire.bgv.Context` or :class:`ringfire.bfv.Context` whose t is
            257 or 65537.
        fn: the table: a function of the slot value (vectorized over a NumPy array, or of
            one int), or an array of its t values. Its results are taken mod t.
        signed: fn reads each slot centred in (-t/2, t/2], as ``ctx.decrypt`` does (default);
            False: in [0, t).

    :attr:`levels` is the depth it takes; the input needs that many levels and the noise
    budget of its products (a chain from ``depth=``).
    """

    def __init__(self, context, fn, *, signed: bool = True):
        t = int(context.plain_modulus)
        check_fermat_prime(t)
        self.context, self.t = context, t
        self.values = table_values(fn, t, signed=signed)
        self.coefficients = table_coefficients(self.values, t)
        nonzero = np.flatnonzero(self.coefficients)
        self.degree = int(nonzero[-1]) if len(nonzero) else 0
        terms = self.degree + 1
        self.baby = 1 << math.ceil(math.log2(terms) / 2) if terms > 1 else 1
        self.blocks = -(-terms // self.baby)

    def __repr__(self) -> str:
        return f"SlotTable(t={self.t}, degree={self.degree}, levels={self.levels})"

    @property
    def levels(self) -> int:
        """The levels the evaluation takes: log2 of the baby steps and of the blocks."""
        return int(math.log2(self.baby)) + math.ceil(math.log2(self.blocks))

    def __call__(self, ct: Ciphertext, *, keep_bits: float = KEEP_BITS) -> Ciphertext:
        """The table applied to every slot of ``ct`` (a ciphertext with its relinearization
        key, as ``ctx.encrypt(x, keys)`` makes it).

        BFV: the products would keep every prime, so ``ct`` first drops the primes whose budget
        the result would not need to keep ``keep_bits`` (by the evaluator's estimates, which
        run a little pessimistic), and each product's operands the primes their noise has
        outgrown: the table then costs about what BGV's does. BGV switches modulus by itself
        and ignores ``keep_bits``."""
        if not isinstance(ct, Ciphertext) or ct.context is not self.context:
            raise TypeError(f"[bgv.SlotTable] expected a ciphertext of this table's context, got {type(ct).__name__}")
        if isinstance(keep_bits, bool) or not isinstance(keep_bits, numbers.Real) or not 0 <= keep_bits < 4096:
            raise ValueError(f"[bgv.SlotTable] keep_bits is the noise budget (bits) the result keeps, a number in "
                             f"[0, 4096), got {keep_bits!r}")
        ev = self.context.evaluator(ct.keys)
        c = self.coefficients
        if self.degree == 0:
            return ev.add_integer(ev.multiply_integer(ct, 0), int(c[0]))
        if self.context._scale_invariant:
            ct = self._fewest_primes(ct, keep_bits)
        babies = self._baby_steps(ct)
        giants = []  # x^B, x^2B, x^4B, ...: one per level of the tree
        while len(giants) < math.ceil(math.log2(self.blocks)):
            last = giants[-1] if giants else babies[self.baby // 2]
            giants.append(self._product(last, last))
        floor = min(b.level for b in babies[1:])
        babies = [ev.mod_reduce(b, floor) if b.level > floor else b for b in babies[1:]]
        weights = np.zeros(self.blocks * self.baby, dtype=np.int64)
        weights[:len(c)] = c[:self.blocks * self.baby]
        weights = weights.reshape(self.blocks, self.baby)
        sums = block_sums(ev, babies, weights[:, 1:], self.t)
        del babies
        out = self._tree(ev, 0, 1 << math.ceil(math.log2(self.blocks)), weights[:, 0], sums, giants)
        del sums, giants
        if isinstance(out, int):  # only a constant was left
            out = ev.add_integer(ev.multiply_integer(ct, 0), out)
        if out.noise_budget_estimate <= 1.0:
            raise ValueError(f"[bgv.SlotTable] the table's polynomial (degree {self.degree}, {self.levels} levels) "
                             f"leaves no noise budget on this ciphertext (level {ct.level}, estimated budget "
                             f"{ct.noise_budget_estimate:.1f} bits before it): a chain with more depth "
                             f"(Context(..., depth={self.levels + 2}))")
        return out

    def _tree(self, ev, start: int, size: int, constants, sums: list, giants: list):
        """Blocks start .. start + size - 1 combined by the giant steps: low + high x^(size/2 B),
        each half the same way (None for nothing, an int for a constant). A method, not a
        closure: a recursive closure is a reference cycle, and it would hold every block sum
        (gigabytes at N = 2^15) until the garbage collector next ran."""
        if start >= self.blocks:
            return None
        if size == 1:
            constant = int(constants[start])
            if sums[start] is None:
                return constant or None
            return ev.add_integer(sums[start], constant) if constant else sums[start]
        half = size // 2
        low = self._tree(ev, start, half, constants, sums, giants)
        high = self._tree(ev, start + half, half, constants, sums, giants)
        if high is None:
            return low
        giant = giants[int(math.log2(half))]
        term = ev.multiply_integer(giant, high) if isinstance(high, int) else self._product(high, giant)
        if low is None:
            return term
        return ev.add_integer(term, low) if isinstance(low, int) else term + low

    def _baby_steps(self, x: Ciphertext) -> list:
        """[None, x, x^2, ..., x^(B-1)]: each power the product of its highest power of two
        and the rest (depth ceil(log2 k))."""
        powers = [None, x]
        for k in range(2, self.baby):
            high = 1 << (k.bit_length() - 1)
            powers.append(self._product(powers[high // 2], powers[high // 2]) if k == high
                          else self._product(powers[high], powers[k - high]))
        return powers

    def _fewest_primes(self, ct: Ciphertext, keep_bits: float) -> Ciphertext:
        """BFV: ``ct`` at the lowest level where the evaluator's estimates leave ``keep_bits``
        of budget after the table. A scale-invariant product's noise grows by about the same
        bits at every level, so the budget a table takes does not depend on the primes it runs
        on, and primes it would leave unused are dropped before the first product, not carried
        through all of them."""
        core = self.context._core
        level, noise, keep = ct.level, ct.noise_bits, ct.level
        while level > 0:
            noise, level = core.mod_reduce_noise_bits(noise, level), level - 1
            if core.budget_bits(self._noise_after(noise), level) < keep_bits:
                break
            keep = level
        return ct if keep == ct.level else ct.mod_reduce(keep)

    def _noise_after(self, noise: float) -> float:
        """The estimated noise (bits) of the table's result for an input of this noise, under
        scale-invariant products: x^(2^j) by squarings (the babies' deepest, x^(B-1), as deep as
        x^B), a block's sum of B products by weights below t/2, and one product by each giant."""
        core = self.context._core
        relin = core.rounding_noise_bits() + 1.0       # a relinearization: about one rounding (bgv.chains)

        def times(a: float, b: float) -> float:
            return add_bits(core.product_noise_bits(a, b, True), relin)

        baby_depth, giant_count = int(math.log2(self.baby)), math.ceil(math.log2(self.blocks))
        powers = [noise]
        for _ in range(baby_depth + giant_count):
            powers.append(times(powers[-1], powers[-1]))
        out = powers[baby_depth] + math.log2(self.baby * (self.t // 2))
        for j in range(giant_count):
            out = times(out, powers[baby_depth + j])
        return out

    def _product(self, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        """a b. BGV switches its operands' modulus by itself; BFV's scale-invariant product
        keeps every prime unless asked, so its operands first drop the primes their noise has
        outgrown (see :func:`fewer_primes`): the table's products then run on about as few
        primes as BGV's."""
        if self.context._scale_invariant:
            a = fewer_primes(a)
            b = a if b is a else fewer_primes(b)
        return a * b


def fewer_primes(x: Ciphertext, loss_bits: float = 0.5) -> Ciphertext:
    """x divided by its last primes while that costs at most ``loss_bits`` of noise budget by
    the evaluator's estimates: a product's noise grows past a prime's size, and dividing by
    that prime then shrinks modulus and noise alike (scale-invariant ciphertexts keep their
    budget), leaving later operations fewer primes to work on. A fresh ciphertext, whose
    noise is near the rounding's, keeps its primes."""
    core = x.context._core
    level, noise = x.level, x.noise_bits
    floor = core.budget_bits(noise, level) - loss_bits
    while level > 0:
        reduced = core.mod_reduce_noise_bits(noise, level)
        if core.budget_bits(reduced, level - 1) < floor:
            break
        level, noise = level - 1, reduced
    return x if level == x.level else x.mod_reduce(level)


def block_sums(ev, babies: list, weights: np.ndarray, t: int) -> list:
    """sum_k weights[j, k] babies[k] for every row j (None where the row is 0). On the host,
    all rows at once as float64 matrix products (BLAS), exact: each word is cut into pieces
    small enough that no sum of products reaches 2^53; two halves recombine as high 2^h + low
    below 2^63 and one reduction, the pieces of a wider prime are reduced one by one and
    recombine by Horner's rule (times 2^piece mod q with a float quotient and wrapping 64-bit
    products). On a device, and while a trace is open (BLAS runs outside the backend, where a
    trace would not see the products), one ``linear_combination`` per row.
    The babies share a level and a size; their corrections are folded into the weights (each
    term's weight times the first's correction over its own)."""
    rows = [j for j in range(len(weights)) if weights[j].any()]
    out: list = [None] * len(weights)
    if not rows:
        return out
    first = babies[0]
    terms = len(babies)
    piece = 53 - (terms * (t // 2 + 1)).bit_length()                  # bits per piece: sums stay below 2^53
    if first.device != "cpu" or terms == 1 or piece < 8 or is_tracing():
        for j in rows:
            used = np.flatnonzero(weights[j])
            out[j] = ev.linear_combination([babies[k] for k in used], [int(weights[j, k]) for k in used])
        return out
    ratios = np.array([first.correction * pow(int(b.correction), -1, t) % t for b in babies], dtype=np.int64)
    w = weights[rows] % t * ratios % t
    w = np.where(w > t // 2, w - t, w)                                    # centred: |w| <= t / 2
    noise = [_sum_noise(babies, row) for row in np.abs(w)]
    matrix = w.astype(np.float64)
    primes = [int(q) for q in ev.context.params.q_primes[:first.level + 1]]
    views = [b._native.view() for b in babies]                           # (size, limbs, N) each, no copy
    size, limbs, N = views[0].shape
    # The results are clones of the first baby (its metadata) whose words are written limb by
    # limb; the buffers are reused limb after limb (fresh ones would fault their pages in).
    results = [first._native.clone() for _ in rows]
    targets = [r.writable_view() for r in results]
    spread = 53 - piece                                                   # bits a sum adds to a piece's
    pieces = np.empty((terms, size * N))
    product = np.empty((len(rows), size * N))
    total, part = np.empty((len(rows), size * N), dtype=np.int64), np.empty((len(rows), size * N), dtype=np.int64)

    def piece_sums(i: int, shift: int, width: int, out: np.ndarray) -> None:
        """out <- the rows' sums of the babies' bits [shift, shift + width) of limb i (exact)."""
        mask, at = np.uint64((1 << width) - 1), np.uint64(shift)
        for k, v in enumerate(views):
            pieces[k] = (v[:, i, :].reshape(-1) >> at) & mask
        np.matmul(matrix, pieces, out=product)
        np.copyto(out, product, casting="unsafe")                         # exact integers below 2^53

    for i, q in enumerate(primes):
        bits = q.bit_length()
        half = (bits + 1) // 2
        if 2 * half + spread <= 62:  # high 2^half + low stays below 2^63: one reduction
            piece_sums(i, half, bits - half, total)
            total <<= half
            piece_sums(i, 0, half, part)
            total += part
            np.remainder(total, q, out=total)
        else:                        # a wide prime: pieces reduced one by one, Horner's rule
            count = -(-bits // piece)
            for level in reversed(range(count)):
                piece_sums(i, level * piece, piece, part)
                np.remainder(part, q, out=part)
                if level == count - 1:
                    total[...] = part
                else:
                    _times_power_of_two(total, piece, q)
                    total += part
                    np.remainder(total, q, out=total)
        for r, target in enumerate(targets):
            np.copyto(target[:, i, :], total[r].reshape(size, N), casting="unsafe")
    views.clear()                                                         # the babies may go now
    targets.clear()
    for r, j in enumerate(rows):
        results[r].noise_bits = noise[r]
        out[j] = ev._wrap(results[r], first)
    return out


def _times_power_of_two(x: np.ndarray, bits: int, q: int) -> None:
    """x <- x 2^bits mod q in place, for int64 x in [0, q) and q < 2^61: the quotient from
    float64 (off by a few at most), the remainder from 64-bit products that wrap, exact since
    the true remainder is within a few q of 0."""
    quotient = np.floor(x * (2.0 ** bits / q)).astype(np.uint64)
    u = x.view(np.uint64)
    u <<= np.uint64(bits)
    u -= quotient * np.uint64(q)                                          # mod 2^64: the true value, small
    np.remainder(x, q, out=x)


def _sum_noise(babies: list, magnitudes: np.ndarray) -> float:
    """log2 of the sum's noise bound: sum_k |w_k| 2^(noise_k) (rlwe/noise.h's convention)."""
    bits = np.array([b._native.noise_bits for b in babies])
    used = magnitudes > 0
    top = bits[used].max()
    return float(top + np.log2(np.sum(magnitudes[used] * np.exp2(bits[used] - top))))
