"""The benchmarks behind ``ringfire bench``, one module per subject: :mod:`.foundations` (NTT,
modular and polynomial products, the machine's description), :mod:`.ckks` (seed 000's CKKS
routines), :mod:`.bootstrap`, :mod:`.bgv` (BGV and BFV) and :mod:`.tfhe`. Each returns rows
(dicts) that the command line prints as a table or JSON; ``benchmarks/`` runs them beside the
peer libraries."""

from .foundations import format_table, machine_info, median_ms

__all__ = ["format_table", "machine_info", "median_ms"]
