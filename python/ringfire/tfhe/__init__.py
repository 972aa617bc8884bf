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

Two engines sit behind this API, chosen by the parameter set: GINX/CGGI with
ternary secrets (OpenFHE's binfhe design) on ringfire's own 32-bit NTT
(:mod:`ringfire.tfhe.params`: STD128, STD128_LP, STD128_LUT), and the 64-bit
torus engine in the KS-PBS order of tfhe-rs and Concrete, on a double-precision
FFT (:mod:`ringfire.tfhe.torus_params`: STD128_T64 for 4-bit tables below
2^-128, STD128_T64_MB the same with multi-bit bootstrapping, STD128_T64_LP for
5 bits), which also gives the sign and the floor of a 9-bit integer
in one ciphertext (``ctx.sign``, ``ctx.shift_right`` or ``x >> s``). Each module has its sets' sources and the
noise model behind every failure probability; docs/tfhe.md has the details and
measurements.
"""

from .ciphertext import Ciphertext
from .context import Context, LookupTable, ManyLookupTable, SecretKey
from .integers import UInt
from .radix import RadixUInt
from .params import PRESETS, ParameterSet, tail_probability
from .torus_params import TORUS_PRESETS, TorusParameterSet

__all__ = ["Context", "Ciphertext", "UInt", "RadixUInt", "LookupTable", "ManyLookupTable", "SecretKey", "ParameterSet",
           "TorusParameterSet", "PRESETS", "TORUS_PRESETS", "tail_probability"]
