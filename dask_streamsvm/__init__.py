"""Support vector machines on data larger than memory and on Dask clusters."""

from .budgeted import BudgetedSVC
from .features import (
    ColumnMaps,
    HashingMap,
    MapOf,
    PolynomialMap,
    SpectrumMap,
    VirtualExamples,
    WeightedDegreeMap,
)
from .io import read_libsvm
from .linear import LinearSVC
from .onepass import OnePassSVC


def load(path):
    """Read a model written by ``estimator.save(path)``.

    The file holds NumPy arrays and JSON only and is read without pickle,
    so loading never runs code from the file.  A damaged, edited or foreign
    file raises ``ValueError`` saying what is wrong.
    """
    from ._persist import load_model

    return load_model(path, (LinearSVC,))


__all__ = [
    "BudgetedSVC",
    "ColumnMaps",
    "HashingMap",
    "LinearSVC",
    "MapOf",
    "OnePassSVC",
    "PolynomialMap",
    "SpectrumMap",
    "VirtualExamples",
    "WeightedDegreeMap",
    "load",
    "read_libsvm",
]
__version__ = "0.1.0.dev0"
