"""The row layouts the kernels read, made from NumPy arrays and SciPy matrices.

The kernels (:mod:`dask_streamsvm.kernels.rows`) never see SciPy objects: a
dense block is a C-contiguous 2-D array, a sparse one a CSR tuple
``(indptr, indices, data)``, and a feature map's rows the pair ``(CSR
tuple, spec)``.  These adapters are the one place that makes them.
"""

import numpy as np
import scipy.sparse as sp


def kernel_rows(X, feature_map=None):
    """:func:`as_kernel_rows`, or with a feature map's spec the mapped layout ``(CSR rows, spec)``.

    The map kernels read each row's nonzeros in column order, so the CSR
    rows are made canonical (sorted, no duplicates) first.
    """
    if feature_map is None:
        return as_kernel_rows(X)
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return (as_kernel_rows(X), feature_map)


def as_kernel_rows(X):
    """The layout kernels read: a C-contiguous 2-D array or a CSR tuple.

    CSR input keeps its dtype; ``indptr`` becomes int64 and ``indices``
    int32 or int64 as given.  Duplicate entries are summed (on a copy) so
    that row norms are right.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        indices = X.indices
        if indices.dtype not in (np.int32, np.int64):
            indices = indices.astype(np.int64)
        return (X.indptr.astype(np.int64, copy=False), indices, X.data)
    return np.ascontiguousarray(X)
