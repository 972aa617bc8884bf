"""The scheme-neutral half of the Python API: lazy placement on devices,
keys, and the base classes of contexts, ciphertexts, plaintexts and
evaluators that :mod:`ringfire.ckks`, :mod:`ringfire.bgv` and
:mod:`ringfire.bfv` derive from. Users meet these through the schemes."""

from .keys import GaloisKeys, KeySet, MasterKeys, PublicKey, RelinKey, SecretKey

__all__ = ["GaloisKeys", "KeySet", "MasterKeys", "PublicKey", "RelinKey", "SecretKey"]
