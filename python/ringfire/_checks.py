"""Argument normalisation shared by the public modules: every error is a
``ValueError`` or ``TypeError`` whose message starts with the operation; and
warnings attributed to the user's line."""

from __future__ import annotations

import contextlib
import numbers
import os
import sys
import warnings

import numpy as np

U64_MAX = (1 << 64) - 1


def as_u64_array(op: str, name: str, value) -> np.ndarray:
    """``value`` as a C-contiguous uint64 array without silent wrap-around."""
    arr = np.asarray(value)
    if arr.dtype == np.uint64:
        return _c_order(arr)
    if arr.dtype == object or arr.dtype.kind not in "iub":
        if arr.dtype == object:
            try:
                ints = [int(v) for v in arr.ravel()]
            except (TypeError, ValueError):
                raise TypeError(f"[{op}] {name} must hold integers") from None
            if any(v < 0 or v > U64_MAX for v in ints):
                raise ValueError(f"[{op}] {name} has values outside [0, 2^64)")
            return np.array(ints, dtype=np.uint64).reshape(arr.shape)
        raise TypeError(f"[{op}] {name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise ValueError(f"[{op}] {name} has negative values")
    return _c_order(arr.astype(np.uint64))


def _c_order(arr: np.ndarray) -> np.ndarray:
    # np.ascontiguousarray would turn 0-d input into 1-d; keep the shape.
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def as_int(op: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"[{op}] {name} must be an integer, got {type(value).__name__}")
    return int(value)


def check_below(op: str, name: str, arr: np.ndarray, q: int) -> None:
    if arr.size and int(arr.max()) >= q:
        bad = int(np.argmax(arr >= np.uint64(q)))
        raise ValueError(f"[{op}] {name}[{bad}] = {int(arr.ravel()[bad])} is not below q={q}")


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CONTEXTLIB = os.path.abspath(contextlib.__file__)


def _inside_library(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(_PACKAGE_DIR) or path == _CONTEXTLIB


def warn_at_caller(message: str, category=RuntimeWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside the ringfire
    package: the user's line, however deep inside the library the cause was."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _inside_library(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


@contextlib.contextmanager
def warnings_at_caller():
    """Re-issues the warnings raised inside (by the native core, which cannot
    know the user's frame) through :func:`warn_at_caller`. The user's filters
    apply when they are re-issued, "error" included."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        warn_at_caller(str(w.message), w.category)
