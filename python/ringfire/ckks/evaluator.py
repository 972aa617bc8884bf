"""Explicit CKKS operations (SEAL-like): nothing is relinearized, rescaled or
aligned unless you ask. Each method has an ``*_inplace`` twin where it makes
sense; errors name the operation and the values that disagree."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._checks import warn_at_caller
from . import bootstrapping, comparison, lookup, magnitude
from .ciphertext import Ciphertext, Plaintext
from .circuits import LinearTransform, Polynomial
from ..rlwe.context import call_with_evaluator
from ..rlwe.evaluator import EvaluatorBase
from ..rlwe.keys import KeySet


class Evaluator(EvaluatorBase):
    """Every result carries a magnitude bound (:mod:`.magnitude`): inherited from the
    operand where the values keep their size, computed where they change."""

    def _wrap(self, native, like):
        out = super()._wrap(native, like)
        out._bound = like._bound
        return out

    # ---- additive -----------------------------------------------------------------
    def add(self, a, b):
        return super().add(a, b)._bounded(magnitude.add(a._bound, b._bound), "ckks.add")

    def sub(self, a, b):
        return super().sub(a, b)._bounded(magnitude.add(a._bound, b._bound), "ckks.sub")

    def add_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        return self._wrap(self._ev.add_plain(a._native, p._native), a)._bounded(magnitude.add(a._bound, p._bound),
                                                                                 "ckks.add_plain")

    def sub_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        return self._wrap(self._ev.sub_plain(a._native, p._native), a)._bounded(magnitude.add(a._bound, p._bound),
                                                                                 "ckks.sub_plain")

    def add_scalar(self, a: Ciphertext, value: complex) -> Ciphertext:
        v = complex(value)
        return self._wrap(self._ev.add_scalar(a._native, v), a)._bounded(magnitude.add(a._bound, abs(v)),
                                                                          "ckks.add_scalar")

    # ---- multiplicative ---------------------------------------------------------------
    def multiply(self, a, b):
        return super().multiply(a, b)._bounded(magnitude.times(a._bound, b._bound), "ckks.multiply")

    def square(self, a):
        return super().square(a)._bounded(magnitude.times(a._bound, a._bound), "ckks.square")

    def multiply_plain(self, a: Ciphertext, p: Plaintext) -> Ciphertext:
        return self._wrap(self._ev.multiply_plain(a._native, p._native), a)._bounded(
            magnitude.times(a._bound, p._bound), "ckks.multiply_plain")

    def multiply_scalar(self, a: Ciphertext, value: complex, scale: float | None = None) -> Ciphertext:
        """Multiplies by a constant encoded at ``scale`` (default: the last prime
        of a's level, so that a rescale restores a's scale)."""
        v = complex(value)
        if scale is None:
            scale = float(self._context.params.q_primes[a.level])
        return self._wrap(self._ev.multiply_scalar(a._native, v, float(scale)), a)._bounded(
            magnitude.times(a._bound, abs(v)), "ckks.multiply_scalar")

    def linear_combination(self, inputs: list[Ciphertext], weights, scale: float) -> Ciphertext:
        """sum_t weights[t] * inputs[t], each weight encoded at ``scale`` (one pass, one reduction
        per word: the dense-layer kernel). Inputs share level, scale and size; the result's
        scale is theirs times ``scale``: rescale next."""
        return self.linear_combinations(inputs, [weights], scale)[0]

    def linear_combinations(self, inputs: list[Ciphertext], weights, scale: float) -> list[Ciphertext]:
        """``[linear_combination(inputs, row, scale) for row in weights]``, the same words, with
        each input read once for several outputs (a dense layer's outputs over the same
        inputs: on the CPU's AVX-512 path, four at a time). ``weights``: one row per output,
        one weight per input."""
        if not inputs:
            raise ValueError("[ckks.linear_combination] needs at least one input")
        rows = [[float(w) for w in row] for row in weights]
        natives = [c._native for c in inputs]
        bounds = [c._bound for c in inputs]
        outs = self._ev.linear_combinations(natives, rows, float(scale))
        return [self._wrap(out, inputs[0])._bounded(
                    None if None in bounds else sum(abs(w) * b for w, b in zip(row, bounds)), "ckks.linear_combination")
                for out, row in zip(outs, rows)]

    def multiply_integer(self, a: Ciphertext, value: int) -> Ciphertext:
        """Multiplies by an integer: no scale change, no level used."""
        return self._wrap(self._ev.multiply_integer(a._native, int(value)), a)._bounded(
            magnitude.times(a._bound, abs(int(value))), "ckks.multiply_integer")

    def divide_by_integer(self, a: Ciphertext, value: int) -> Ciphertext:
        """Divides by a positive integer with no level and no rounding: the same words read at
        a scale ``value`` times larger (no longer the level's canonical one: ``adjust_to``
        brings it back where an operand needs it)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value < 2**63:
            raise ValueError(f"[ckks.divide_by_integer] divides by a positive integer below 2^63, got {value!r}")
        out = self._wrap(self._ev.divide_by_integer(a._native, int(value)), a)
        return out._bounded(None if a._bound is None else a._bound / int(value), "ckks.divide_by_integer")

    def rescale(self, a: Ciphertext) -> Ciphertext:
        """Divides by the level's last prime (exact rounding): level - 1."""
        return self._wrap(self._ev.rescale(a._native), a)

    def relinearize_rescale(self, a: Ciphertext, keys: KeySet | None = None) -> Ciphertext:
        """``rescale(relinearize(a))`` as one step: the key switch divides by P * q_level at once.

        One rounding instead of two, so a few coefficients differ by one from the
        two-step result and the error is no larger (to within half a bit, tested); it saves the rescale's NTTs
        and two passes over the data (about 15-20 % of a multiply at N = 2^16).
        ``a * b`` on ciphertexts uses it.
        """
        relin = self._keyset(keys).require_relin("ckks.relinearize_rescale")
        return self._wrap(self._ev.relinearize_rescale(a._native, relin._on(a.device)), a)

    def adjust_to(self, a: Ciphertext, level: int) -> Ciphertext:
        """``a`` at ``level`` with that level's canonical scale (costs a level unless only limbs drop)."""
        return self._wrap(self._ev.adjust_to(a._native, int(level)), a)

    def conjugate(self, a: Ciphertext, keys: KeySet | None = None) -> Ciphertext:
        galois = self._keyset(keys).require_galois("ckks.conjugate")
        return self._wrap(self._ev.conjugate(a._native, galois._on(a.device)), a)

    def restore_imaginary_noise(self, a: Ciphertext) -> Ciphertext:
        """``a`` with Gaussian noise of its estimated error added to the imaginary parts of
        its slots only, for a real result whose real part you took exactly (``x + conj(x)``):
        that cancels the imaginary parts' noise, from which decryption sizes the noise it adds
        to hide the key. Lookups and ``bootstrap_pair`` do it themselves (docs/security.md,
        "Where the measurement misses"). The real parts do not change."""
        if not isinstance(a, Ciphertext):
            raise TypeError(f"[ckks.restore_imaginary_noise] expected a Ciphertext, got {type(a).__name__}")
        return self._wrap(self._ev.restore_imaginary_noise(a._native), a)  # the core refuses complex ones

    # ---- circuits -------------------------------------------------------------------
    def evaluate_polynomial(self, a: Ciphertext, polynomial, *, basis: str = "chebyshev", interval=(-1.0, 1.0),
                            scale: float | None = None, keys: KeySet | None = None) -> Ciphertext:
        """p(a) slot-wise: ``polynomial`` is a :class:`Polynomial` or its coefficients
        (in ``basis`` on ``interval``). Consumes ``Polynomial.depth`` levels and lands
        on that level's canonical scale (or ``scale``). Values outside the interval
        are extrapolated (Chebyshev polynomials grow fast there)."""
        if not isinstance(polynomial, Polynomial):
            polynomial = Polynomial(polynomial, basis, interval)
        if a.level < polynomial.depth:
            raise ValueError(f"[ckks.evaluate_polynomial] the polynomial needs {polynomial.depth} levels, the "
                             f"ciphertext has {a.level}" + (" (bootstrap it first)" if self._context.can_bootstrap
                                                            else ""))
        relin = self._keyset(keys, a).require_relin("ckks.evaluate_polynomial")._on(a.device)
        return self._wrap(self._ev.evaluate_polynomial(a._native, polynomial._native, relin,
                                                       0.0 if scale is None else float(scale)), a)._bounded(
            magnitude.polynomial(a._bound, polynomial), "ckks.evaluate_polynomial")

    def linear_transform(self, a: Ciphertext, transform: LinearTransform, *, rescale: bool = True,
                         keys: KeySet | None = None) -> Ciphertext:
        """``transform`` (a :class:`LinearTransform`) applied to the slots of ``a``,
        which must sit at the transform's level; one level (``rescale=False`` leaves
        the rescale to you)."""
        if not isinstance(transform, LinearTransform):
            raise TypeError(f"[ckks.linear_transform] expected a ckks.LinearTransform, got {type(transform).__name__}")
        if a.level != transform.level:
            raise ValueError(f"[ckks.linear_transform] the transform was built for level {transform.level}, the "
                             f"ciphertext is at level {a.level}: build it with level={a.level} or mod_switch")
        galois = self._keyset(keys, a).require_galois("ckks.linear_transform")
        slots = self._context.slots
        missing = sorted({r % slots for r in transform.rotations()} - {0} - set(galois.rotations()))
        if missing:
            raise ValueError(f"[ckks.linear_transform] the Galois keys lack rotations {missing[:8]}"
                             f"{' ...' if len(missing) > 8 else ''}: pass lt.rotations() to ctx.keygen(rotations=...)")
        return self._wrap(self._ev.linear_transform(a._native, transform._on(a.device), galois._on(a.device),
                                                    bool(rescale)), a)._bounded(
            magnitude.times(a._bound, transform._gain), "ckks.linear_transform")

    # ---- bootstrapping ----------------------------------------------------------------
    def bootstrap(self, a: Ciphertext, *, iterations: int = 1, correction_bits: int = 20,
                  scale: float | None = None, keys: KeySet | None = None, timings: dict | None = None,
                  bound: int = 1) -> Ciphertext:
        """``a`` (any level) refreshed to ``ctx.max_level``, landing on that level's
        canonical scale (or on ``scale``). Slots must hold values with ``|x| <= bound``
        (an integer, default 1; docs/bootstrapping.md): beyond that the result is
        wrong, not noisy. A larger ``bound`` costs nothing but precision: the error
        grows with it (about log2(bound) bits).

        ``iterations=2``: Meta-BTS (Bae et al.): bootstrap, then bootstrap the
        remaining error scaled up by 2^correction_bits and subtract it; the
        result's scale is the input's times 2^correction_bits (the bits it
        gained). ``timings``: a dict that receives each phase's seconds
        (``mod_raise``, ``coeffs_to_slots``, ``eval_mod``, ``slots_to_coeffs``;
        one iteration only). Needs ``keygen(bootstrap=True)``'s keys.
        """
        if not isinstance(a, Ciphertext):
            raise TypeError(f"[ckks.bootstrap] expected a Ciphertext, got {type(a).__name__}")
        if a.size != 2:
            raise ValueError(f"[ckks.bootstrap] the ciphertext has size {a.size}: relinearize it first")
        if iterations not in (1, 2):
            raise ValueError(f"[ckks.bootstrap] iterations is 1 or 2 (Meta-BTS), got {iterations!r}")
        ctx = self._context
        native = ctx._native_bootstrapper("ckks.bootstrap")
        bound = _check_bound(bound, "ckks.bootstrap")
        self._warn_if_scale_too_large(a, bound)
        if iterations == 2 and bound != 1:
            raise ValueError("[ckks.bootstrap] bound= applies to one iteration only (Meta-BTS refreshes |x| <= 1)")
        keyset = self._keyset(keys, a)
        boot = keyset.require_bootstrap("ckks.bootstrap")._on(a.device)
        relin = keyset.require_relin("ckks.bootstrap")._on(a.device)
        if iterations == 2:
            if timings is not None:
                raise ValueError("[ckks.bootstrap] timings are recorded for one iteration only")
            if scale is not None:
                raise ValueError("[ckks.bootstrap] Meta-BTS returns the input's scale times 2^correction_bits; "
                                 "scale= applies to one iteration only")
            return self._wrap(call_with_evaluator(self._ev, native.bootstrap_twice, a._native, relin, boot,
                                                  int(correction_bits)), a)._bounded(_refreshed(a, 1), "ckks.bootstrap")
        out, times = call_with_evaluator(self._ev, native.bootstrap, a._native, relin, boot,
                                         0.0 if scale is None else float(scale), timed=timings is not None,
                                         bound=bound)
        if timings is not None:
            timings.update(times)
        # The circuit's contract: |x| <= bound in, the same values out (beyond it the result is
        # wrong whatever a carried bound says), so the carried bound restarts from it.
        return self._wrap(out, a)._bounded(_refreshed(a, bound), "ckks.bootstrap")

    def lut(self, a: Ciphertext, function, *, modulus: int, signed: bool = False, keys: KeySet | None = None,
            timings: dict | None = None, flat: bool = False) -> Ciphertext:
        """``function(m)`` in every slot holding the integer ``m`` (read modulo ``modulus``),
        by one functional bootstrap (:mod:`ringfire.ckks.lookup`, docs/lookup.md): the
        result is refreshed at ``rf.ckks.lookup.output_level(ctx, modulus)``
        (``ctx.max_level`` for small tables) on its canonical scale. ``function``: a
        callable on integers (on ``[-p/2, p/2)`` with ``signed=True``, else on
        ``0 .. p-1``) or a sequence of ``modulus`` values. The slots must hold real
        integers within an error well below 1/2; the error is carried, not rounded away
        (``lookup.error_gain``). Needs an input at level ``stc_levels`` or above and
        ``keygen(bootstrap=True)``'s keys; with sparse packing (``bootstrap={"slots": n}``)
        it reads vectors that repeat with period n, and its result repeats likewise. ``timings``: receives each phase's
        seconds (``slots_to_coeffs``, ``mod_raise``, ``coeffs_to_slots``, ``eval_lut``).
        The result's imaginary parts carry noise of its estimated error, put back after the
        circuit takes the real part exactly, so that decryption masks the real parts' error
        (docs/security.md, "Where the measurement misses"). ``flat=True`` (``modulus`` a power of
        two): the table's curve is made flat at every integer, so the input's error reaches the
        result squared (times the curve's bend) instead of times its slope: integers come out
        cleaned, for a level (``lookup.output_level(ctx, p, flat=True)``) and a second pass over
        z's powers (docs/lookup.md, "Flat tables": about the same time at N16_BOOT)."""
        return self.luts(a, [function], modulus=modulus, signed=signed, keys=keys, timings=timings, flat=flat)[0]

    def luts(self, a: Ciphertext, functions, *, modulus: int, signed: bool = False, keys: KeySet | None = None,
             timings: dict | None = None, flat: bool = False) -> list[Ciphertext]:
        """Several tables of one input in one functional bootstrap (multi-value: the
        circuit runs once up to the table's powers; each further table costs a few
        weighted sums, a conjugation and a rescale). As :meth:`lut`, one ciphertext per
        function."""
        op = "ckks.lut"
        _check_lookup_input(a, op)
        _check_flat(flat, op)
        if a.is_complex:
            raise ValueError(f"[{op}] the slots must hold real integers; this ciphertext holds complex values "
                             "(lut_pair looks up two real vectors packed as a + ib)")
        native, tables, boot, relin = self._lookup_setup(a, a.level, functions, modulus, signed, keys, op)
        outs, times = call_with_evaluator(self._ev, native.functional_bootstrap, a._native, relin, boot, tables,
                                          timed=timings is not None, flat=flat)
        if timings is not None:
            timings.update(times)
        return [self._wrap(out, a)._bounded(max(abs(v) for v in table), op) for out, table in zip(outs, tables)]

    def lut_pair(self, a: Ciphertext, b: Ciphertext, function, *, modulus: int, signed: bool = False,
                 keys: KeySet | None = None, timings: dict | None = None,
                 flat: bool = False) -> tuple[Ciphertext, Ciphertext]:
        """:meth:`lut` of two real ciphertexts, packed as ``a + ib`` into one functional
        bootstrap: SlotsToCoeffs, ModRaise and CoeffsToSlots run once for both, the
        lookup once per part. Returns ``(f(a), f(b))``. Inputs at different levels or scales
        are aligned first (which can spend a level)."""
        op = "ckks.lut_pair"
        _check_flat(flat, op)
        for c in (a, b):
            _check_lookup_input(c, op)
            if c.is_complex:
                raise ValueError(f"[{op}] both ciphertexts must hold real integers (they travel as the real and "
                                 "imaginary parts of one)")
        x, y = a._aligned(b)
        packed = self._ev.add(x, self._ev.multiply_by_i(y, False))
        native, tables, boot, relin = self._lookup_setup(a, packed.level, [function], modulus, signed, keys, op)
        first, second, times = call_with_evaluator(self._ev, native.functional_bootstrap_pair, packed, relin, boot,
                                                   tables, timed=timings is not None, flat=flat)
        if timings is not None:
            timings.update(times)
        bound = max(abs(v) for v in tables[0])
        return self._wrap(first[0], a)._bounded(bound, op), self._wrap(second[0], b)._bounded(bound, op)

    def sign_integer(self, x: Ciphertext, *, bits: int, digit_bits: int = 4, flat: bool | None = None) -> Ciphertext:
        """sign(x) in {-1, 0, 1} for slots holding integers in ``[-2^(bits-1), 2^(bits-1))``
        (``bits`` up to 24), by digit decomposition over tables of ``2^digit_bits`` entries:
        ``ceil(bits / digit_bits)`` functional bootstraps (:func:`ringfire.ckks.lookup.integer_sign`).
        Two vectors of ``n``-bit integers compare as ``sign_integer(ev.sub(a, b), bits=n + 1)``:
        1 where a > b, 0 where equal, -1 where a < b. ``flat``: the tables flat at the integers
        (x's error not carried; default: where they fit, :func:`ringfire.ckks.lookup.uses_flat_tables`)."""
        return lookup.integer_sign(self, x, bits, digit_bits, flat=flat)

    def floor_divide(self, x: Ciphertext, shift: int, *, bits: int, digit_bits: int = 4,
                     flat: bool | None = None) -> Ciphertext:
        """floor(x / 2^shift) for slots holding integers in ``[-2^(bits-1), 2^(bits-1))``
        (``bits`` up to 24), exactly: the rescaling of fixed-point integers (a product of two
        values with f fractional bits has 2f; ``floor_divide(product, f, bits=...)`` brings it
        back). ``ceil(shift / digit_bits)`` functional bootstraps, one per digit dropped
        (:func:`ringfire.ckks.lookup.integer_floor_divide`); the result stays on x's level.
        ``flat``: as :meth:`sign_integer` (x's error e then leaves as e / 2^shift, not about e)."""
        return lookup.integer_floor_divide(self, x, shift, bits, digit_bits, flat=flat)

    def _lookup_setup(self, a: Ciphertext, level: int, functions, modulus, signed, keys, op):
        """The tables, the circuit and the keys for a lookup whose circuit starts at ``level``
        (the input's, or the pair's once aligned), refused below SlotsToCoeffs' levels."""
        if callable(functions) or isinstance(functions, np.ndarray) or not len(functions):
            raise TypeError(f"[{op}] luts takes a non-empty list of functions or tables (lut takes one)")
        tables = [lookup.table_of(f, modulus, signed=signed, op=op) for f in functions]
        if a._context is not self._context and a._context.fingerprint != self._context.fingerprint:
            raise ValueError(f"[{op}] the ciphertext comes from a different context than this evaluator's "
                             "(parameter fingerprint mismatch)")
        native = self._context._native_bootstrapper(op)
        floor = native.functional_input_level_min
        if level < floor:
            raise ValueError(f"[{op}] the input is at level {level}; a lookup runs SlotsToCoeffs on levels "
                             f"{floor}..1 first, so it needs level {floor} or above")
        keyset = self._keyset(keys, a)
        return (native, tables, keyset.require_bootstrap(op)._on(a.device), keyset.require_relin(op)._on(a.device))

    # ---- comparisons (composite polynomials; ringfire.ckks.comparison) ----------------

    def sign(self, x: Ciphertext, *, bound: float = 1.0, precision_bits: float = 8, error_bits: float = 12):
        """sign(x) slot by slot for ``|x| <= bound``: within 2^-error_bits of ±1 wherever
        ``|x| >= bound * 2^-precision_bits`` (:mod:`ringfire.ckks.comparison`); bootstraps
        when the levels run out, or refuses up front on a context that cannot."""
        return comparison.sign(self, x, bound=bound, precision_bits=precision_bits, error_bits=error_bits)

    def compare(self, a: Ciphertext, b: Ciphertext, *, bound: float = 1.0, precision_bits: float = 8,
                error_bits: float = 12):
        """[a > b] slot by slot (1 or 0; 0.5 where equal) for ``|a|, |b| <= bound``, right
        wherever ``|a - b| >= 2 bound 2^-precision_bits``."""
        return comparison.compare(self, a, b, bound=bound, precision_bits=precision_bits, error_bits=error_bits)

    def max(self, a: Ciphertext, b: Ciphertext, *, bound: float = 1.0, precision_bits: float = 8,
            error_bits: float = 12):
        """max(a, b) slot by slot for ``|a|, |b| <= bound`` (never off by more than
        ``bound 2^-precision_bits`` plus CKKS's error; :func:`ringfire.ckks.comparison.maximum`)."""
        return comparison.maximum(self, a, b, bound=bound, precision_bits=precision_bits, error_bits=error_bits)

    def min(self, a: Ciphertext, b: Ciphertext, *, bound: float = 1.0, precision_bits: float = 8,
            error_bits: float = 12):
        """min(a, b) slot by slot, as :meth:`max`."""
        return comparison.minimum(self, a, b, bound=bound, precision_bits=precision_bits, error_bits=error_bits)

    def max_of_slots(self, x: Ciphertext, count: int, *, bound: float = 1.0, precision_bits: float = 8,
                     error_bits: float = 12):
        """The largest of slots 0 .. count-1 in slot 0 (a tournament of log2(count) :meth:`max`;
        keys: ``ctx.keygen(rotations=rf.ckks.comparison.slot_rotations(count))``)."""
        return comparison.max_of_slots(self, x, count, bound=bound, precision_bits=precision_bits,
                                       error_bits=error_bits)

    def argmax_of_slots(self, x: Ciphertext, count: int, *, bound: float = 1.0, precision_bits: float = 8,
                        error_bits: float = 12, return_max: bool = False):
        """A one-hot vector over slots 0 .. count-1 marking the largest (ties within a few
        resolutions not broken; :func:`ringfire.ckks.comparison.argmax_of_slots`);
        ``return_max=True``: ``(one_hot, largest)``, one tournament for both."""
        return comparison.argmax_of_slots(self, x, count, bound=bound, precision_bits=precision_bits,
                                          error_bits=error_bits, return_max=return_max)

    def bootstrap_pair(self, a: Ciphertext, b: Ciphertext, *, keys: KeySet | None = None, bound: int = 1):
        """Two real-valued ciphertexts refreshed by one bootstrap (half the work of
        two): a + i b is bootstrapped and split again with one conjugation. Returns
        ``(a', b')`` at ``ctx.max_level`` on its canonical scale. Operands at
        different levels are aligned first; complex-valued ones are refused. The split
        cancels the halves' imaginary noise, so each gets noise of its estimated error put
        back there (docs/security.md, "Where the measurement misses").
        ``bound``: as for :meth:`bootstrap` (``|a + i b| <= bound``)."""
        for c in (a, b):
            if not isinstance(c, Ciphertext):
                raise TypeError(f"[ckks.bootstrap_pair] expected Ciphertexts, got {type(c).__name__}")
            if c.is_complex:
                raise ValueError("[ckks.bootstrap_pair] both ciphertexts must hold real values (the pair travels "
                                 "as the real and imaginary parts of one); bootstrap complex data on its own")
        native = self._context._native_bootstrapper("ckks.bootstrap")
        keyset = self._keyset(keys, a)
        boot = keyset.require_bootstrap("ckks.bootstrap")._on(a.device)
        relin = keyset.require_relin("ckks.bootstrap")._on(a.device)
        bound = _check_bound(bound, "ckks.bootstrap_pair")
        x, y = a._aligned(b)
        self._warn_if_scale_too_large(x, bound)  # the operands as they enter the circuit
        first, second = call_with_evaluator(self._ev, native.bootstrap_pair, x, y, relin, boot, bound)
        return (self._wrap(first, a)._bounded(_refreshed(a, bound), "ckks.bootstrap_pair"),
                self._wrap(second, b)._bounded(_refreshed(b, bound), "ckks.bootstrap_pair"))

    def _warn_if_scale_too_large(self, a, bound: int) -> None:
        """Warns where ``a``'s scale (a Ciphertext or its native) leaves EvalMod too little room for |x| <= bound."""
        ctx = self._context
        ratio = bootstrapping.message_ratio_bits(ctx._bootstrap_options, ctx.params.q_primes[0], a.scale * bound)
        if bootstrapping.input_bound(ratio) < 1:
            warn_at_caller(f"[ckks.bootstrap] the input's scale 2^{math.log2(a.scale):.1f} leaves q_0 / scale = "
                           f"2^{ratio + math.log2(bound):.1f}: only |x| <= {bootstrapping.input_bound(ratio) * bound:g} "
                           f"bootstraps at full precision (use a scale at most q_0 / 2^{7 + math.log2(bound):g})")

    # ---- in-place forms ------------------------------------------------------------
    def add_plain_inplace(self, a, p): return self._set(a, self.add_plain(a, p))
    def sub_plain_inplace(self, a, p): return self._set(a, self.sub_plain(a, p))
    def add_scalar_inplace(self, a, v): return self._set(a, self.add_scalar(a, v))
    def multiply_plain_inplace(self, a, p): return self._set(a, self.multiply_plain(a, p))
    def multiply_scalar_inplace(self, a, v, scale=None): return self._set(a, self.multiply_scalar(a, v, scale))
    def multiply_integer_inplace(self, a, v): return self._set(a, self.multiply_integer(a, v))
    def rescale_inplace(self, a): return self._set(a, self.rescale(a))
    def relinearize_rescale_inplace(self, a, keys=None): return self._set(a, self.relinearize_rescale(a, keys))
    def conjugate_inplace(self, a, keys=None): return self._set(a, self.conjugate(a, keys))


def _check_lookup_input(a, op: str) -> None:
    if not isinstance(a, Ciphertext):
        raise TypeError(f"[{op}] expected a Ciphertext, got {type(a).__name__}")
    if a.size != 2:
        raise ValueError(f"[{op}] the ciphertext has size {a.size}: relinearize it first")


def _refreshed(a: Ciphertext, bound: int) -> float:
    """A bootstrap's output bound: its contract is |x| <= bound in, the same values out (beyond
    it the result is wrong whatever a carried bound said), so the carried bound restarts there."""
    return float(bound) if a._bound is None else min(a._bound, float(bound))


def _check_bound(bound, op: str) -> int:
    if isinstance(bound, bool) or not isinstance(bound, numbers.Integral) or not 1 <= bound <= 2**30:
        raise ValueError(f"[{op}] bound must be an integer in [1, 2^30] (the largest |x| in the slots), got {bound!r}")
    return int(bound)


def _check_flat(flat, op: str) -> None:
    if not isinstance(flat, bool):
        raise TypeError(f"[{op}] flat must be True or False, got {flat!r}")
