"""BFV: exact arithmetic modulo t, with scale-invariant products.

::

    import numpy as np, ringfire as rf

    ctx = rf.bfv.Context(poly_degree=2**14, plain_bits=20)
    sk, keys = ctx.keygen(rotations=[1], swap_rows=True)
    x = ctx.encrypt(np.arange(ctx.slots), keys)
    y = (x * x - 1).swap_rows()
    print(ctx.decrypt(y, sk)[:4], ctx.noise_budget(y, sk))

BFV is a mode of the BGV core (:mod:`ringfire.bgv`): the same ciphertexts,
keys, encoders and evaluator. The operators multiply with the
scale-invariant product (Halevi-Polyakov-Shoup in RNS), whose noise grows by
about t ||s|| per product whatever the operands' noise, so no modulus
switching is needed (``ct.mod_reduce()`` still shrinks a ciphertext, making
later operations cheaper).
"""

from ..bgv.ciphertext import Ciphertext, Plaintext
from ..bgv.chains import DEFAULT_CHAINS
from ..bgv.context import DEFAULT_PLAIN_BITS, PRESETS
from ..bgv.context import Context as BgvContext
from ..bgv.evaluator import Evaluator
from ..bgv.tables import SlotTable
from ..rlwe.keys import GaloisKeys, KeySet, MasterKeys, PublicKey, RelinKey, SecretKey


class Context(BgvContext):
    """BFV parameters: the arguments of :class:`ringfire.bgv.Context` (ring degree,
    plaintext modulus or its bits, modulus chain, security, device). The operators
    relinearize by themselves and multiply scale-invariantly (no modulus switching
    needed); ``ctx.evaluator(keys)`` has the explicit operations, the BGV product
    included."""

    scheme = "bfv"
    _scale_invariant = True


__all__ = ["Context", "PRESETS", "DEFAULT_CHAINS", "DEFAULT_PLAIN_BITS", "Ciphertext", "Plaintext", "Evaluator", "SlotTable",
           "KeySet", "SecretKey", "PublicKey", "RelinKey", "GaloisKeys", "MasterKeys"]
