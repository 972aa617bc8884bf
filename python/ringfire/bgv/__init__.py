"""BGV: exact arithmetic modulo t on encrypted vectors of integers.

::

    import numpy as np, ringfire as rf

    ctx = rf.bgv.Context(poly_degree=2**14, plain_bits=20)   # t: a 20-bit batching prime
    sk, keys = ctx.keygen(rotations=[1])
    x = ctx.encrypt(np.arange(ctx.slots), keys)               # N slots: 2 rows of N/2
    y = (x * x + 3).rotate_rows(1)                            # exact mod t
    print(ctx.decrypt(y, sk)[:4], ctx.noise_budget(y, sk))

BGV and BFV share one core (Lattigo's unified scheme, docs/bgv.md): the same
ciphertexts, keys and rotations; BGV products are followed by modulus
switching (the operators decide when), :mod:`ringfire.bfv` products are
scale-invariant. :class:`Evaluator` (``ctx.evaluator(keys)``) has the
explicit operations, both kinds of product included.
"""

from ..rlwe.keys import GaloisKeys, KeySet, MasterKeys, PublicKey, RelinKey, SecretKey
from .ciphertext import Ciphertext, Plaintext
from .chains import DEFAULT_CHAINS
from .context import DEFAULT_PLAIN_BITS, PRESETS, Context
from .evaluator import Evaluator
from .tables import SlotTable

__all__ = ["Context", "PRESETS", "DEFAULT_CHAINS", "DEFAULT_PLAIN_BITS", "Ciphertext", "Plaintext", "Evaluator", "SlotTable",
           "KeySet", "SecretKey", "PublicKey", "RelinKey", "GaloisKeys", "MasterKeys"]
