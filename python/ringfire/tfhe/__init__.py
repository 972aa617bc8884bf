"""FHEW/TFHE: exact functions of encrypted bits and small integers, each by
one programmable bootstrap.

::

    import ringfire as rf

    ctx = rf.tfhe.Context.preset("STD128_LP")     # 128-bit security, every gate below 2^-128
    sk = ctx.keygen()                             # secret key + evaluation keys
    a, b = ctx.encrypt([1, 0, 1, 1], sk), ctx.encrypt([1, 1, 0, 1], sk)
    print(ctx.decrypt(~(a & b) ^ a, sk))          # gates bootstrap every element

    x = ctx.encrypt([0, 1, 2, 3], sk, bits=2)     # 2-bit integers, one ciphertext each
    square = ctx.lut(lambda m: m * m % 4, bits=2)
    print(ctx.decrypt(square(x), sk))             # [0 1 0 1]

    u = ctx.encrypt_uint([1234, 7], sk, bits=16)  # 16-bit integers, one ciphertext per bit
    print(ctx.decrypt((u + 100).max(u * 3), sk), ctx.decrypt(u < 1000, sk))

The blind rotation is GINX/CGGI with ternary secrets (OpenFHE's binfhe
design) on ringfire's own 32-bit NTT; parameter sets, their sources and the
noise model that gives each operation's failure probability are in
:mod:`ringfire.tfhe.params`. docs/tfhe.md has the details and measurements.
"""

from .ciphertext import Ciphertext
from .context import Context, LookupTable, ManyLookupTable, SecretKey
from .integers import UInt
from .params import PRESETS, ParameterSet, tail_probability
from .torus_params import TORUS_PRESETS, TorusParameterSet

__all__ = ["Context", "Ciphertext", "UInt", "LookupTable", "ManyLookupTable", "SecretKey", "ParameterSet",
           "TorusParameterSet", "PRESETS", "TORUS_PRESETS", "tail_probability"]
