"""ringfire.apps -- whole encrypted workloads built on the schemes.

* :mod:`~ringfire.apps.logreg` -- encrypted logistic-regression training (HELR) with bootstrapping.
* :mod:`~ringfire.apps.fixed_point_logreg` -- seed 003's design: fixed-point integers, every
  rescale and comparison a functional bootstrap (CKKS lookups, every value exact).
* :mod:`~ringfire.apps.bgv_fixed_point_logreg` -- the same on BGV slots, as seed 003 runs it:
  functional bootstraps of the slots (Liu and Wang's), 16-bit integers mod t = 65537.
"""

from . import bgv_fixed_point_logreg, fixed_point_logreg, logreg

__all__ = ["bgv_fixed_point_logreg", "fixed_point_logreg", "logreg"]
