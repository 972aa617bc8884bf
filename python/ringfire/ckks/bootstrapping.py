"""Bootstrapping in the Python API: its options, its plan and its keys.

A bootstrappable context reserves the top primes of its chain for the
bootstrapping circuit (``Context(..., bootstrap={...})`` or the ``N16_BOOT``
preset): from the top, ``cts_levels`` for CoeffsToSlots, ``eval_mod_levels``
for EvalMod, ``stc_levels`` for SlotsToCoeffs. Fresh ciphertexts start below
them, at ``ctx.max_level``, and a bootstrap brings a ciphertext from any
level back there. The circuit itself is the C++ core's
(``cpp/include/ringfire/ckks/bootstrap.h``); docs/bootstrapping.md explains
the options and the measured precision.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from .. import _core
from ..rlwe.keys import _Key

# The options and their defaults (those of N16_BOOT).
BOOTSTRAP_DEFAULTS = dict(
    cts_levels=4,          # CoeffsToSlots: level budget (3-5), the top primes
    eval_mod_levels=11,    # EvalMod: cosine, double angles and arcsine
    stc_levels=3,          # SlotsToCoeffs: level budget (2-5), just above the user's levels
    slots=None,            # None: N/2 (full packing); else a power of two (sparse packing)
    k=16,                  # EvalMod's range: |I| < K after ModRaise (h=32 ephemeral secret)
    double_angles=3,       # double-angle steps of the cosine
    cos_degree=0,          # 0: the least degree reaching 2^-50 within EvalMod's levels
    arcsine_degree=3,      # 0: none; else odd (3, 5, 7): makes the precision independent of the data
    log_message_ratio=7,   # q_0 / scale seen by EvalMod (bits); 0 keeps the input's (stc_first: 8)
    ephemeral_weight=32,   # Hamming weight of the ephemeral sparse secret around ModRaise
    stc_first=False,       # SlotsToCoeffs first, on the user's lowest levels (full packing)
    chained_rotations=False,  # the DFTs' rotations chained: about a third of the Galois keys, slower DFTs
)


STC_FIRST_MESSAGE_RATIO = 8


def bootstrap_options(bootstrap, reserved_levels: int | None = None) -> dict:
    """The full option dict from ``True`` or a partial dict. With
    ``reserved_levels`` (loaded parameters), EvalMod gets what the two
    transforms leave."""
    if bootstrap is True:
        bootstrap = {}
    if not isinstance(bootstrap, dict):
        raise TypeError(f"[ckks.Context] bootstrap must be True or a dict of options, got {type(bootstrap).__name__}")
    unknown = sorted(set(bootstrap) - set(BOOTSTRAP_DEFAULTS))
    if unknown:
        raise ValueError(f"[ckks.Context] unknown bootstrap option(s) {unknown}; the options are "
                         f"{sorted(BOOTSTRAP_DEFAULTS)}")
    opts = {**BOOTSTRAP_DEFAULTS, **bootstrap}
    for name, value in opts.items():
        if name == "slots" and value is None:
            continue
        if name in ("stc_first", "chained_rotations"):
            if not isinstance(value, bool):
                raise ValueError(f"[ckks.Context] bootstrap option {name} must be True or False, got {value!r}")
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise ValueError(f"[ckks.Context] bootstrap option {name} must be a non-negative number, got {value!r}")
    if opts["stc_first"] is True and "log_message_ratio" not in bootstrap:
        # EvalMod then sees each slot's value as a coefficient, as large as the
        # value itself: a larger ratio shrinks the arcsine's truncation, and 2^8
        # measured best (docs/bootstrapping.md).
        opts["log_message_ratio"] = STC_FIRST_MESSAGE_RATIO
    if reserved_levels is not None and "eval_mod_levels" not in bootstrap:
        opts["eval_mod_levels"] = reserved_levels - opts["cts_levels"] - reserved_stc_levels(opts)
    return opts


def reserved_stc_levels(opts: dict) -> int:
    """SlotsToCoeffs' reserved primes: none when it runs first, on the user's levels."""
    return 0 if opts["stc_first"] else int(opts["stc_levels"])


def input_level_min(opts: dict) -> int:
    """The user's lowest levels SlotsToCoeffs runs on when it runs first (else 0): a
    ciphertext is bootstrapped from that level or above."""
    return int(opts["stc_levels"]) if opts["stc_first"] else 0


def reserved_levels(opts: dict) -> int:
    return int(opts["cts_levels"]) + int(opts["eval_mod_levels"]) + reserved_stc_levels(opts)


def native_config(opts: dict):
    config = _core.BootstrapConfig()
    config.slots = 0 if opts["slots"] is None else int(opts["slots"])
    for name in ("cts_levels", "stc_levels", "double_angles", "cos_degree", "arcsine_degree", "log_message_ratio",
                 "ephemeral_weight"):
        setattr(config, name, int(opts[name]))
    config.k = float(opts["k"])
    config.stc_first = bool(opts["stc_first"])
    config.chained_rotations = bool(opts["chained_rotations"])
    return config


@dataclass(frozen=True)
class BootstrapPlan:
    """What one bootstrap costs and gives, known before any key exists
    (``ctx.bootstrap_plan()``)."""

    slots: int                 # values per ciphertext the bootstrap keeps
    levels_left: int           # rescalings the user gets after each bootstrap, before the next
    levels_consumed: int       # used by the circuit: the reserved levels (and the lowest, with stc_first)
    cts_levels: int
    eval_mod_levels: int
    stc_levels: int
    cos_degree: int
    arcsine_degree: int
    rotation_keys: int         # Galois keys (the conjugation included)
    key_bytes: int             # those keys and the two encapsulation keys, in memory once expanded
    plaintext_bytes: int       # the precomputed DFT diagonals
    key_switches: int          # per bootstrap
    failure_log2: float        # log2 of the probability that one bootstrap fails (|I| >= K)
    input_bound: float = 1.0   # |x| up to which the precision holds for any data (input_bound())
    output_level: int = 0      # where a bootstrapped ciphertext lands (ctx.max_level)
    input_level_min: int = 0   # bootstrap from this level or above (stc_levels when SlotsToCoeffs runs first)
    temporary_bytes: int = 0   # the circuit's temporaries at their peak, with the blocks the pool keeps cached
    temporary_in_use_bytes: int = 0  # of which in use at once
    relin_key_bytes: int = 0   # the relinearization key (EvalMod's products), expanded
    wire_bytes: int = 0        # the keys serialized (``to_bytes()``, ``save_to``): seeded, each residue in its prime's bits

    @property
    def peak_bytes(self) -> int:
        """What a process holds for bootstrapping at the peak of one bootstrap: the keys as
        held by default (seeded, expanded per use: ``held_bytes``), the relinearization key,
        the DFT plaintexts and the temporaries (planned under the pool's cache limit at the
        time, :mod:`ringfire.memory`). The rest of the process (the interpreter, other
        ciphertexts) comes on top."""
        return self.held_bytes + self.relin_key_bytes + self.plaintext_bytes + self.temporary_bytes

    @property
    def held_bytes(self) -> int:
        """What the keys take in memory as held by default, seeded: half their expanded size,
        the uniform halves kept as 32-byte seeds and expanded per use (docs/keys.md)."""
        return self.key_bytes // 2

    @classmethod
    def from_native(cls, plan: dict, slots: int, input_bound: float, relin_key_bytes: int = 0) -> "BootstrapPlan":
        return cls(slots=slots, input_bound=input_bound, output_level=plan["output_level"],
                   input_level_min=plan["input_level_min"],
                   levels_left=plan["output_level"] - plan["input_level_min"], levels_consumed=plan["levels_consumed"],
                   cts_levels=plan["cts_levels"], eval_mod_levels=plan["eval_mod_levels"],
                   stc_levels=plan["stc_levels"], cos_degree=plan["cos_degree"],
                   arcsine_degree=plan["arcsine_degree"], rotation_keys=plan["rotation_keys"],
                   key_bytes=plan["key_bytes"], plaintext_bytes=plan["plaintext_bytes"],
                   key_switches=plan["key_switches"], failure_log2=plan["failure_log2"],
                   temporary_bytes=plan["temporary_bytes"], temporary_in_use_bytes=plan["temporary_in_use_bytes"],
                   relin_key_bytes=relin_key_bytes, wire_bytes=plan["wire_bytes"])

    def __str__(self) -> str:
        gib = 2.0 ** 30
        first = (f"  SlotsToCoeffs runs first, on your levels {self.input_level_min}..1: bootstrap at level "
                 f"{self.input_level_min} or above; the result lands at level {self.output_level}")
        return "\n".join([
            f"bootstrap plan: {self.slots} slots, inputs |x| <= {self.input_bound:g}",
            f"  levels: {self.levels_consumed} consumed (CoeffsToSlots {self.cts_levels}, EvalMod "
            f"{self.eval_mod_levels}, SlotsToCoeffs {self.stc_levels}); {self.levels_left} left for the user",
            *([first] if self.input_level_min else []),
            f"  EvalMod: cosine degree {self.cos_degree}, arcsine degree {self.arcsine_degree}",
            f"  keys: {self.rotation_keys} Galois keys + 2 encapsulation keys, {self.held_bytes / gib:.2f} GiB "
            f"held (seeded; they expand per use), {self.wire_bytes / gib:.2f} GiB sent, {self.key_bytes / gib:.2f} "
            "GiB once expanded; "
            f"DFT plaintexts {self.plaintext_bytes / gib:.2f} GiB",
            f"  {self.key_switches} key switches per bootstrap; failure probability 2^{self.failure_log2:.1f}",
            f"  memory at the peak: {self.peak_bytes / gib:.2f} GiB (keys {self.held_bytes / gib:.2f}, "
            f"relinearization key {self.relin_key_bytes / gib:.2f}, DFT plaintexts {self.plaintext_bytes / gib:.2f}, "
            f"temporaries {self.temporary_bytes / gib:.2f}, {self.temporary_in_use_bytes / gib:.2f} of them in use "
            "at once, the rest cached by the pool for reuse)",
        ])


class BootstrapKeys(_Key):
    """The keys bootstrapping needs besides the relinearization key: the
    rotations of the DFTs (each only as high as the level it is used at), the
    conjugation, and the two keys to and from the ephemeral sparse secret.
    ``keys.bootstrap`` after ``ctx.keygen(bootstrap=True)``; serialize with
    ``to_bytes()`` and read back with ``ctx.load``.

    They hold only their seeded halves in memory and expand the uniform halves at each
    use, a limb at a time (``expand_per_use``, on by default: N16_BOOT's keys take
    3.5 GiB instead of 7, for up to a tenth of a bootstrap's time). ``expand()`` keeps the
    uniform halves instead, for the fastest bootstraps (docs/keys.md)."""

    _save = staticmethod(_core.save_bootstrap_keys)
    _stream = staticmethod(_core.stream_bootstrap_keys)
    _image = True

    @property
    def expand_per_use(self) -> bool:
        """Whether keys not yet expanded expand at each use instead of keeping their uniform halves."""
        return self._host().expand_per_use

    @expand_per_use.setter
    def expand_per_use(self, per_use: bool) -> None:
        if not isinstance(per_use, bool):
            raise TypeError(f"[ckks.BootstrapKeys] expand_per_use takes True or False, got {per_use!r}")
        self._host().expand_per_use = per_use

    @property
    def resident_bytes(self) -> int:
        """Bytes the keys hold in memory now (``bootstrap_plan().key_bytes`` once expanded, half before)."""
        return self._host().resident_bytes

    def __len__(self) -> int:
        return len(self._native)


def message_ratio_bits(opts: dict, q0: float, scale: float) -> float:
    """log2(q_0 / scale) that EvalMod sees for an input at ``scale``."""
    ratio = math.log2(q0 / scale)
    return min(ratio, opts["log_message_ratio"]) if opts["log_message_ratio"] else ratio


def input_bound(ratio_bits: float) -> float:
    """The largest |x| bootstrapped at full precision whatever the data.
    EvalMod sees the plaintext's coefficients, which a vector with |x| <= B
    keeps within B (a constant vector reaches it); the arcsine-corrected sine
    holds its precision while a coefficient stays below q_0 / 2^7. Measured on
    constant vectors at ratio 2^7 (N = 2^14): |x| = 1 keeps 23.8 bits where
    random data keeps 24.6 (worst slot), |x| = 2 keeps 20.1, then about 5 bits
    fewer per doubling, and the value wraps (wrong) at 2^7. Random data spreads
    over the coefficients and tolerates far larger slots."""
    return 2.0 ** (ratio_bits - 7)
