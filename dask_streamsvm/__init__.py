"""Support vector machines and logistic regression on data larger than memory and on Dask clusters.

The public names are imported on first use (PEP 562's module ``__getattr__``):
``import dask_streamsvm`` imports neither scikit-learn, numba nor Dask, so that
the command line's ``--help`` and ``info`` start at once; the first
``dask_streamsvm.LinearSVC`` (or ``from dask_streamsvm import LinearSVC``)
imports the estimators and what they need.
"""

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0.dev0"

# Each public name and the module that defines it, imported on first use (__getattr__).
_LAZY = {
    "BudgetedSVC": "budgeted",
    "ColumnMaps": "features",
    "HashingMap": "features",
    "LinearSVC": "linear",
    "LogisticRegression": "logistic",
    "MapOf": "features",
    "OnePassSVC": "onepass",
    "PolynomialMap": "features",
    "SpectrumMap": "features",
    "Standardize": "features",
    "VirtualExamples": "features",
    "WeightedDegreeMap": "features",
    "read_libsvm": "io",
}

__all__ = sorted([*_LAZY, "load"])

if TYPE_CHECKING:  # what type checkers and editors see: the names as if imported here
    from .budgeted import BudgetedSVC as BudgetedSVC
    from .features import ColumnMaps as ColumnMaps
    from .features import HashingMap as HashingMap
    from .features import MapOf as MapOf
    from .features import PolynomialMap as PolynomialMap
    from .features import SpectrumMap as SpectrumMap
    from .features import Standardize as Standardize
    from .features import VirtualExamples as VirtualExamples
    from .features import WeightedDegreeMap as WeightedDegreeMap
    from .io import read_libsvm as read_libsvm
    from .linear import LinearSVC as LinearSVC
    from .logistic import LogisticRegression as LogisticRegression
    from .onepass import OnePassSVC as OnePassSVC


def __getattr__(name):
    """A public name, imported from its module on first use and kept here after (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup finds it without calling __getattr__
    return value


def __dir__():
    return sorted({*globals(), *__all__})


def load(path):
    """Read a model written by ``estimator.save(path)``: a ``LinearSVC``, ``LogisticRegression``,
    ``OnePassSVC`` or ``BudgetedSVC``.

    The file holds NumPy arrays and JSON only and is read without pickle,
    so loading never runs code from the file.  A damaged, edited or foreign
    file raises ``ValueError`` saying what is wrong, and so does anything
    that is not a regular file (a directory, a FIFO, a device).  The
    parameters are checked as ``fit`` checks them; ``callbacks``,
    ``validation_data`` and ``checkpoint_dir`` are never read from a file
    and keep their defaults.  What loading may allocate is bounded by the
    file's size (see :mod:`dask_streamsvm.engine.store.archive`).

    The SHA-256 checksums in the file detect damage, not tampering: anyone
    who can write the file can rewrite them, and its parameters and weights
    decide what the model predicts.  Load only files you trust.
    """
    from ._persist import load_model
    from .budgeted import BudgetedSVC
    from .linear import LinearSVC
    from .logistic import LogisticRegression
    from .onepass import OnePassSVC

    return load_model(path, (LinearSVC, LogisticRegression, OnePassSVC, BudgetedSVC))
