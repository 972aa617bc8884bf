"""ringfire.apps -- whole encrypted workloads built on the schemes.

* :mod:`~ringfire.apps.logreg` -- encrypted logistic-regression training (HELR) with bootstrapping.
* :mod:`~ringfire.apps.fixed_point_logreg` -- seed 003's design: fixed-point integers, every
  rescale and comparison a functional bootstrap.
"""

from . import fixed_point_logreg, logreg

__all__ = ["fixed_point_logreg", "logreg"]
