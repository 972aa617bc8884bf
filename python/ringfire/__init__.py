"""ringfire: fast, practical homomorphic encryption.

Layers available in this release:

* :mod:`ringfire.arith` -- modular arithmetic over NumPy ``uint64`` arrays, with
  the reductions of seed 002 (classic Barrett, Dhem-Quisquater, the 62-bit
  variant "alg4", Shoup) and fused multiply-add; 128-bit moduli in
  :mod:`ringfire.arith128`.
* :mod:`ringfire.ring` -- NTT-friendly primes, negacyclic NTT / inverse NTT,
  polynomial multiplication, RNS bases (CRT), base conversion, automorphisms.
* :mod:`ringfire.ckks` -- the CKKS scheme: contexts with HE-standard security
  checks, keys (hybrid key switching), encryption, an explicit evaluator,
  Python operators, serialization; ``Context(..., device="cuda")`` and
  ``ct.to("cuda")`` run the same operations on an NVIDIA GPU.
* :mod:`ringfire.bgv` and :mod:`ringfire.bfv` -- exact integer arithmetic modulo a
  plaintext modulus t on one RLWE core: batching (2 x N/2 slots), rotations, the
  noise budget; BGV with automatic modulus switching, BFV with scale-invariant
  products; the same keys, serialization and GPU placement as CKKS.
* :mod:`ringfire.cuda` -- the GPU runtime: streams, compute frames, memory-pool
  statistics, the kernel profiler.
* :mod:`ringfire.memory` -- the host memory pool's statistics, and runs larger than RAM:
  ``rf.memory.spill(directory, ram_limit_gib=...)`` backs blocks beyond the limit with files;
  :mod:`ringfire.memory_guard` spills or refuses a run that does not fit before it starts.
* :mod:`ringfire.distributed` -- a model's ciphertexts spread over a Ray cluster
  (``executor=rf.distributed.RayExecutor(...)``, the ``ringfire[ray]`` extra).
* :mod:`ringfire.serve` -- encrypted inference as a service: ``ringfire serve`` and its
  client ``rf.serve.Client`` (the ``ringfire[serve]`` extra).
* :mod:`ringfire.apps` -- whole workloads: encrypted logistic-regression training (HELR) with
  bootstrapping.
* :mod:`ringfire.tracing` -- ``with rf.trace() as t:`` records what a real run asks of the
  hardware (NTTs, products, key-switching inner products... with sizes and bytes);
  :mod:`ringfire.rpu` projects such traces onto RPU tiles.
* :mod:`ringfire.io` -- envelopes for bytes that cross a trust boundary:
  authentication (keyed BLAKE2b) and password-protected secret keys.

The command line ``ringfire demo`` runs a short tour; ``ringfire bench`` measures.
"""

import pathlib as _pathlib

from ._cpu import check_cpu as _check_cpu

_check_cpu(_pathlib.Path(__file__).parent)  # before any native code runs
from . import _core  # noqa: E402
from . import apps, arith, arith128, bfv, bgv, ckks, cuda, distributed, io, memory, memory_guard, nn, parallel, ring, rpu, serve, switching, tfhe, tracing
from .tracing import Trace, trace  # noqa: E402

__version__ = "0.1.0"

DeviceError = _core.DeviceError  # a device that exists failed (a CUDA error, device memory); a RuntimeError

__all__ = ["DeviceError", "apps", "arith", "arith128", "bfv", "bgv", "ckks", "cuda", "distributed", "io", "memory", "memory_guard", "nn", "parallel", "ring", "rpu", "serve", "tracing", "Trace", "trace", "num_threads", "set_num_threads", "rns_isa", "set_rns_isa", "cuda_available", "__version__"]


def num_threads() -> int:
    """Threads the CPU kernels use: ``RINGFIRE_NUM_THREADS``, else ``OMP_NUM_THREADS``,
    else the CPUs this process may run on."""
    return _core.num_threads()


def set_num_threads(n: int) -> None:
    """Sets the threads the CPU kernels use; ``n`` must be >= 1."""
    _core.set_num_threads(int(n))


def rns_isa() -> str:
    """The instructions CKKS, BGV and BFV run on, on the CPU (their NTTs, products and
    base conversions): ``"avx512"`` where the CPU has AVX-512 with IFMA, else ``"avx2"``
    (``"scalar"`` in a build for a CPU without AVX2). ``RINGFIRE_RNS_ISA=avx2`` keeps the
    AVX2 kernels on an AVX-512 CPU. Both give the same words."""
    return _core.rns_isa()


def set_rns_isa(name: str) -> None:
    """Sets the instructions of :func:`rns_isa` for this process: ``"avx512"`` (raises
    ValueError on a CPU without AVX-512 IFMA) or ``"avx2"``."""
    _core.set_rns_isa(str(name))


def cuda_available() -> bool:
    """True when this build has the CUDA backend and a GPU is visible."""
    return cuda.available()
