"""Support vector machines and logistic regression on data larger than memory and on Dask clusters."""

from .budgeted import BudgetedSVC
from .features import (
    ColumnMaps,
    HashingMap,
    MapOf,
    PolynomialMap,
    SpectrumMap,
    Standardize,
    VirtualExamples,
    WeightedDegreeMap,
)
from .io import read_libsvm
from .linear import LinearSVC
from .logistic import LogisticRegression
from .onepass import OnePassSVC


def load(path):
    """Read a model written by ``estimator.save(path)``.

    The file holds NumPy arrays and JSON only and is read without pickle,
    so loading never runs code from the file.  A damaged, edited or foreign
    file raises ``ValueError`` saying what is wrong, and so does anything
    that is not a regular file (a directory, a FIFO, a device).  The
    parameters are checked as ``fit`` checks them; ``callbacks``,
    ``validation_data`` and ``checkpoint_dir`` are never read from a file
    and keep their defaults.  What loading may allocate is bounded by the
    file's size (see :mod:`dask_streamsvm.engine.archive`).

    The SHA-256 checksums in the file detect damage, not tampering: anyone
    who can write the file can rewrite them, and its parameters and weights
    decide what the model predicts.  Load only files you trust.
    """
    from ._persist import load_model

    return load_model(path, (LinearSVC, LogisticRegression))


__all__ = [
    "BudgetedSVC",
    "ColumnMaps",
    "HashingMap",
    "LinearSVC",
    "LogisticRegression",
    "MapOf",
    "OnePassSVC",
    "PolynomialMap",
    "SpectrumMap",
    "Standardize",
    "VirtualExamples",
    "WeightedDegreeMap",
    "load",
    "read_libsvm",
]
__version__ = "0.1.0.dev0"
