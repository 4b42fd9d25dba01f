"""Feature maps that ``LinearSVC`` applies on the fly (COFFIN, Sonnenburg & Franc 2010).

``LinearSVC(feature_map=PolynomialMap())`` trains on ``phi(x)`` while the
cache, the blocks and the partitions hold the raw rows ``x``: the kernels
compute ``w . phi(x)``, ``w += a phi(x)`` and ``||phi(x)||^2`` from the raw
row when they need them (:mod:`dask_streamsvm.kernels.features`).  Each map
is also a scikit-learn transformer whose :meth:`transform` materialises
``phi(X)``, for inspection and for testing on small data.

A map works in two stages, either of which may do nothing:

``encode``
    turns a partition as it is read (a pandas DataFrame with string,
    categorical or token-list columns, or numeric rows) into numeric raw
    rows, on the reader thread; :class:`HashingMap` hashes here, so the
    cache holds one entry per column value, never a one-hot expansion;
``spec``
    names what the kernels compute from the raw rows inside DOT and ADD;
    :class:`PolynomialMap` expands here.

The maps computed inside the kernels (:class:`PolynomialMap`,
:class:`SpectrumMap`, :class:`WeightedDegreeMap`) are in
:mod:`.kernel_maps`; those that work on the input's columns as they are
read (:class:`Standardize`, :class:`HashingMap`, :class:`ColumnMaps`,
:class:`MapOf`, :class:`VirtualExamples`) in :mod:`.column_maps`; what
every map shares (:class:`FeatureMap`, :func:`materialise`) in :mod:`.base`.
"""

from .base import FeatureMap, canonical_csr, materialise
from .column_maps import ColumnMaps, HashingMap, MapOf, Standardize, VirtualExamples
from .kernel_maps import MAX_EXPLICIT, PolynomialMap, SpectrumMap, WeightedDegreeMap

__all__ = [
    "MAX_EXPLICIT",
    "ColumnMaps",
    "FeatureMap",
    "HashingMap",
    "MapOf",
    "PolynomialMap",
    "SpectrumMap",
    "Standardize",
    "VirtualExamples",
    "WeightedDegreeMap",
    "canonical_csr",
    "materialise",
]
