"""Scheme switching between CKKS and FHEW/TFHE.

``rf.switching.CkksToFhew(ckks_ctx, fhew_ctx, slots=n)`` turns the first n
slots of a CKKS ciphertext into n FHEW ciphertexts of small integers, on which
``fhew.apply`` evaluates any lookup table; ``rf.switching.FhewToCkks`` brings
FHEW ciphertexts of one bit back into CKKS slots; ``rf.switching.SchemeSwitch``
pairs them for lookup tables and comparisons that start and end in CKKS
(``ring_degree=`` runs the way back in a smaller ring, ``SmallRingKey`` its keys);
``rf.switching.BgvToFhew(bgv_ctx, fhew_ctx)`` turns coefficients of BGV or BFV
ciphertexts into FHEW integers, ``rf.switching.BgvSlotsToFhew`` their slots under
a batching t, ``rf.switching.FhewToBgv`` brings FHEW
integers back into BGV/BFV coefficients through their last bootstrap, and
``rf.switching.BgvFunctionalBootstrap`` pairs them: any function of the integers
in a BGV/BFV ciphertext, and a fresh ciphertext out. ``rf.switching.LweToSlots``
brings FHEW integers into the slots of a BGV/BFV ciphertext under t = 65537 through
any table, and ``rf.switching.BgvSlotBootstrap`` pairs it with ``BgvSlotsToFhew``:
functional bootstrapping of slots. See docs/switching.md.
"""

from .bgv_functional_bootstrap import BgvFunctionalBootstrap, BgvFunctionalBootstrapKeys
from .bgv_slot_bootstrap import BgvSlotBootstrap, BgvSlotBootstrapKeys
from .bgv_slots import BgvSlotsToFhew, BgvSlotsToFhewKey
from .bgv_to_fhew import BgvToFhew
from .ckks_to_fhew import CkksToFhew
from .fhew_to_bgv import FhewToBgv, FhewToBgvKey
from .fhew_to_ckks import FhewToCkks
from .lwe_to_slots import LweToSlots, LweToSlotsKey
from .ring_switch import RingSwitchKey
from .round_trip import SchemeSwitch, SwitchKeys
from .slot_maps import SlotsToCoefficients
from .small_ring import SmallRingKey
from .to_torus import LweToTorus, TorusSwitchKey

__all__ = ["BgvFunctionalBootstrap", "BgvFunctionalBootstrapKeys", "BgvSlotBootstrap", "BgvSlotBootstrapKeys", "BgvSlotsToFhew", "BgvSlotsToFhewKey", "BgvToFhew", "CkksToFhew", "FhewToBgv",
           "FhewToBgvKey", "FhewToCkks", "LweToSlots", "LweToSlotsKey", "LweToTorus", "RingSwitchKey", "SchemeSwitch", "SlotsToCoefficients", "SmallRingKey", "SwitchKeys",
           "TorusSwitchKey"]
