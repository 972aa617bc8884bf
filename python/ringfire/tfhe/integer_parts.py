"""What the two encrypted-integer types share (:class:`~ringfire.tfhe.UInt`'s bit planes,
:class:`~ringfire.tfhe.RadixUInt`'s blocks): integers of any shape held as a list of
ciphertexts of that shape, indexing, bytes, operand checks and what they refuse."""

from __future__ import annotations

import numpy as np

from .ciphertext import Ciphertext


class IntegerParts:
    """Integers held as ``parts``, ciphertexts of one ``shape`` (least significant first),
    each carrying ``PART_BITS`` bits of the integer. Subclasses set ``_ENCODING`` (their
    code in the saved bytes), ``PART_BITS``, ``PART_CIPHERTEXT_BITS`` (the parts'
    :attr:`Ciphertext.bits`: None for gate booleans) and ``_trivial`` (public values as
    noiseless integers of their kind)."""

    _ENCODING = -1
    PART_BITS = 1
    PART_CIPHERTEXT_BITS: int | None = None
    # NumPy defers to these operators (an array on the left would otherwise apply them
    # element by element into an array of objects): arrays are refused like other operands.
    __array_ufunc__ = None

    def __init__(self, context, parts: list[Ciphertext]):
        self.context, self.parts = context, list(parts)

    @classmethod
    def from_words(cls, context, words: np.ndarray, shape: tuple, bits: int, key_id: bytes | None):
        """Loaded words (the parts one after another) as ``bits``-bit integers of ``shape``."""
        count = bits // cls.PART_BITS
        per = words.shape[0] // count
        parts = [Ciphertext(context, words[i * per:(i + 1) * per], shape, cls.PART_CIPHERTEXT_BITS)
                 for i in range(count)]
        for part in parts:
            part.key_id = key_id
        return cls(context, parts)

    @property
    def bits(self) -> int:
        return self.PART_BITS * len(self.parts)

    @property
    def shape(self) -> tuple:
        return self.parts[0].shape

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"len() of a 0-d tfhe.{type(self).__name__}")
        return self.shape[0]

    def __getitem__(self, index):
        """Elements by NumPy indexing (every part alike)."""
        return type(self)(self.context, [p[index] for p in self.parts])

    def __reduce__(self):
        raise TypeError("tfhe integers are not picklable: send x.to_bytes() and read it with ctx.load(...)")

    def __bool__(self):
        raise TypeError("encrypted integers have no truth value here: decrypt, or compare and use ctx.mux")

    __hash__ = None  # type: ignore[assignment]

    def to_bytes(self, *, mac_key: bytes | None = None, compress: int | None = None) -> bytes:
        """The integers' parts in one checksummed envelope (``Context.load`` reads them)."""
        words = np.concatenate([p.data for p in self.parts])
        return self.context._save(words, self.shape, self._ENCODING, self.bits, mac_key, compress,
                                  self.parts[0].key_id)

    # Bitwise operators: each kind's _bitwise(name, other) does the work.
    def __and__(self, other):
        return self._bitwise("and", other)

    def __or__(self, other):
        return self._bitwise("or", other)

    def __xor__(self, other):
        return self._bitwise("xor", other)

    def _bitwise(self, name: str, other):
        raise NotImplementedError

    def _operand(self, other):
        """other as an integer of this kind, bits and shape (public ints become noiseless ones)."""
        kind = type(self).__name__
        if isinstance(other, type(self)):
            if other.context is not self.context:
                raise ValueError("these integers belong to different tfhe contexts")
            if other.bits != self.bits or other.shape != self.shape:
                raise ValueError(f"operands differ: {self!r} and {other!r}")
            return other
        if isinstance(other, (Ciphertext, IntegerParts)):
            what = (type(other).__name__ if isinstance(other, IntegerParts) else
                    "boolean ciphertext" if other.bits is None else "single ciphertext")
            raise TypeError(f"combine a {kind} with a {kind} or a public int, not a {what}")
        return self._trivial(np.broadcast_to(np.asarray(other), self.shape))

    def _trivial(self, values):
        raise NotImplementedError


def shift_count(n, bits: int) -> int:
    """A shift count, checked (a non-negative int) and capped at ``bits``."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"shift counts are non-negative ints, got {n!r}")
    return min(int(n), bits)
