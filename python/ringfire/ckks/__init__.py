"""CKKS: approximate arithmetic on encrypted vectors of real or complex numbers.

::

    import numpy as np, ringfire as rf

    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 40, 40, 60], scale_bits=40)
    sk, keys = ctx.keygen(rotations=[1, -1])
    ct = ctx.encrypt(np.random.rand(ctx.slots), keys)
    y = (ct * ct + 0.5).rotate(1)          # multiply, relinearize, rescale; levels aligned
    print(ctx.decrypt(y, sk)[:4])          # the shape encrypted: ctx.slots values

The Python operators manage relinearization, rescaling and level/scale
alignment; :class:`Evaluator` (``ctx.evaluator(keys)``) offers the explicit,
SEAL-like operations for users who manage levels themselves.
"""

from .bootstrapping import BOOTSTRAP_DEFAULTS, BootstrapKeys, BootstrapPlan
from .ciphertext import Ciphertext, Plaintext
from .circuits import LinearTransform, Polynomial, chebyshev_fit
from .context import PRESETS, Context
from .evaluator import Evaluator
from .matmul import matmul_rotations
from .minimax import minimax_fit
from ..rlwe.keys import GaloisKeys, KeySet, MasterKeys, PublicKey, RelinKey, SecretKey

__all__ = ["Context", "PRESETS", "Ciphertext", "Plaintext", "Evaluator", "KeySet", "SecretKey", "PublicKey",
           "RelinKey", "GaloisKeys", "MasterKeys", "BootstrapKeys", "BootstrapPlan", "BOOTSTRAP_DEFAULTS",
           "Polynomial", "LinearTransform", "chebyshev_fit", "minimax_fit", "matmul_rotations"]
