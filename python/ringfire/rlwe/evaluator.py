"""The explicit operations every scheme shares (relinearize, rotations,
dropping limbs), as a base class of the schemes' evaluators. Nothing is
relinearized, rescaled or aligned unless asked."""

from __future__ import annotations

from .ciphertext import check_steps
from .shapes import broadcast
from .keys import KeySet


class EvaluatorBase:
    def __init__(self, context, keys: KeySet | None = None):
        self._context = context
        self._keys = self._checked_keys(keys, f"{context.scheme}.evaluator", "ctx.evaluator(keys)")
        self._ev = context._core_evaluator
        self._op = context.scheme

    @property
    def keys(self) -> KeySet | None:
        return self._keys

    @property
    def context(self):
        """The context this evaluator computes in."""
        return self._context

    def __reduce__(self):
        return type(self), (self._context, self._keys)

    def __repr__(self) -> str:
        keys = self._keys
        have = [name for name in ("relin", "galois", "bootstrap") if keys is not None and getattr(keys, name) is not None]
        return f"{self._op}.Evaluator(keys: {', '.join(have) if have else 'none'})"

    def _wrap(self, native, like):
        """A result with ``like``'s shape (explicit operations do not broadcast)."""
        native.length = like._res.any().length
        return type(like)(native, self._context, like._keys if like._keys is not None else self._keys)

    def _wrap2(self, native, a, b):
        """A result of ``a`` and ``b``: their shapes must broadcast."""
        out = self._wrap(native, a)
        return out._set_shape(broadcast(f"{self._op}.evaluator", a.shape, b.shape, True))

    def _keyset(self, keys=None, a=None) -> KeySet:
        """The keys an operation uses: ``keys=`` if given, else the operand's, else the
        evaluator's; anything but a KeySet is refused by name."""
        chosen = self._checked_keys(keys, f"{self._op}.Evaluator", "keys=") or \
            (a.keys if a is not None else None) or self._keys
        if chosen is None:
            raise ValueError(f"[{self._op}.Evaluator] this operation needs keys: ctx.evaluator(keys)")
        return chosen

    @staticmethod
    def _checked_keys(keys, op: str, where: str):
        """``keys`` if it is None or a KeySet; anything else refused by name."""
        if keys is None or isinstance(keys, KeySet):
            return keys
        hint = (": the secret key stays with its holder; pass the evaluation keys"
                if type(keys).__name__ == "SecretKey" else "")
        raise TypeError(f"[{op}] {where} takes the KeySet that ctx.keygen() returns second, got "
                        f"{type(keys).__name__}{hint}")

    @staticmethod
    def _set(target, result):
        target._native = result._native
        return target

    # ---- what every scheme spells the same way ------------------------------------------
    def add(self, a, b):
        """Same level (and scale or correction, per scheme)."""
        return self._sum_of(self._ev.add(a._native, b._native), a, b)

    def sub(self, a, b):
        return self._sum_of(self._ev.sub(a._native, b._native), a, b)

    def _sum_of(self, native, a, b):
        """A sum or difference: zeros past both operands' length stay zeros."""
        out = self._wrap2(native, a, b)
        return out._set_shape(out.shape, a._zero_tail and b._zero_tail and a.shape == b.shape)

    def negate(self, a):
        return self._wrap(self._ev.negate(a._native), a)

    def multiply(self, a, b):
        """Size 2 x 2 -> 3: relinearize next (CKKS: and rescale; BGV: and mod_reduce)."""
        return self._wrap2(self._ev.multiply(a._native, b._native), a, b)

    def square(self, a):
        return self._wrap(self._ev.square(a._native), a)

    def relinearize(self, a, keys: KeySet | None = None):
        """Size 3 -> 2 with the relinearization key."""
        relin = self._keyset(keys).require_relin(f"{self._op}.relinearize")
        return self._wrap(self._ev.relinearize(a._native, relin._on(a.device)), a)

    def mod_switch(self, a, level: int | None = None):
        """Drops limbs down to ``level`` (default: one level) without dividing."""
        level = a.level - 1 if level is None else int(level)
        if level < 0:
            raise ValueError(f"[{self._op}.mod_switch] the operand is at level 0")
        if isinstance(a, self._context._plaintext_type):
            return type(a)(self._ev.mod_switch_plain(a._native, level), self._context)
        return self._wrap(self._ev.mod_switch(a._native, level), a)

    def rotate(self, a, steps: int, keys: KeySet | None = None):
        """Slots left by ``steps`` (negative: right); composed from keyed steps when
        ``steps`` has no key of its own (:meth:`rotation_plan`)."""
        op = f"{self._op}.rotate"
        galois = self._keyset(keys).require_galois(op)
        return self._wrap(self._ev.rotate(a._native, check_steps(op, steps), galois._on(a.device)), a)

    def rotate_many(self, a, steps, keys: KeySet | None = None) -> list:
        """Several rotations of one ciphertext sharing one ModUp (hoisting); each step
        needs its own Galois key."""
        op = f"{self._op}.rotate_many"
        galois = self._keyset(keys).require_galois(op)
        return [self._wrap(c, a) for c in self._ev.rotate_many(a._native, [check_steps(op, s) for s in steps],
                                                               galois._on(a.device))]

    def rotation_plan(self, steps: int, keys: KeySet | None = None) -> list[int]:
        """The keyed steps ``rotate`` would apply for ``steps``."""
        op = f"{self._op}.rotate"
        galois = self._keyset(keys).require_galois(op)
        return list(self._ev.rotation_plan(check_steps(op, steps), galois._native))

    # ---- in-place forms ------------------------------------------------------------
    def add_inplace(self, a, b): return self._set(a, self.add(a, b))
    def sub_inplace(self, a, b): return self._set(a, self.sub(a, b))
    def negate_inplace(self, a): return self._set(a, self.negate(a))
    def multiply_inplace(self, a, b): return self._set(a, self.multiply(a, b))
    def square_inplace(self, a): return self._set(a, self.square(a))
    def relinearize_inplace(self, a, keys=None): return self._set(a, self.relinearize(a, keys))
    def mod_switch_inplace(self, a, level=None): return self._set(a, self.mod_switch(a, level))
    def rotate_inplace(self, a, steps, keys=None): return self._set(a, self.rotate(a, steps, keys))
