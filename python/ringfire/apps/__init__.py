"""ringfire.apps -- whole encrypted workloads built on the schemes.

* :mod:`~ringfire.apps.logreg` -- encrypted logistic-regression training (HELR) with bootstrapping.
"""

from . import logreg

__all__ = ["logreg"]
