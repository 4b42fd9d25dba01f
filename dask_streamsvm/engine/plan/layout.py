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
    X = as_csr(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return (as_kernel_rows(X), feature_map)


def as_kernel_rows(X):
    """The layout kernels read: a C-contiguous 2-D array or a CSR tuple, read-only.

    One type per layout and dtype, so that numba compiles each kernel once
    per layout whatever the caller holds: ``indptr`` becomes int64 and
    ``indices`` int32 (the row cache's index type; int64 only for more
    than 2**31 - 1 columns), and every array is handed over as a read-only
    view (arrays from ``np.frombuffer``, memory maps and Dask workers
    arrive read-only, a type of their own to numba; the kernels never
    write to ``X``).  Duplicate entries are summed (on a copy) so that row
    norms are right.
    """
    if sp.issparse(X):
        X = as_csr(X)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        wide = X.shape[1] > np.iinfo(np.int32).max
        indices = X.indices.astype(np.int64 if wide else np.int32, copy=False)
        return (read_only(X.indptr.astype(np.int64, copy=False)), read_only(indices), read_only(X.data))
    return read_only(np.ascontiguousarray(X))


def as_csr(X):
    """The SciPy matrix ``X`` as a ``csr_matrix``: ``X`` itself where it is one, since a new one made
    of it forgets what ``X`` knows of its format (and finds out again in a pass over its indices)."""
    return X if isinstance(X, sp.csr_matrix) else sp.csr_matrix(X)


def take_rows(X, rows):
    """The rows ``rows`` (integer positions) of ``X``, dense or sparse, as a new array or matrix.
    Dense rows by ``np.take``, which copies each row whole where NumPy's fancy indexing goes value by
    value: 200,000 of 2M x 60 float32 rows in 27 ms where ``X[rows]`` took 48 ms (2026-12-04).  CSR
    rows keep ``X``'s canonical format, known (rows of canonical rows are canonical; the kernels would
    find it out again, a pass over the indices, :func:`as_kernel_rows`)."""
    if sp.issparse(X):
        taken = X[rows]
        if X.format == "csr" and taken.format == "csr" and X.has_canonical_format:
            taken.has_canonical_format = True  # rows of canonical rows are canonical
        return taken
    return np.take(X, rows, axis=0)


def read_only(a):
    """``a`` as a plain ndarray that cannot be written: a view of it when it can (no copy)."""
    a = np.asarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def magnitude_bits(dtype):
    """``(unsigned, mask, infinity)`` of an IEEE 754 float ``dtype``: the unsigned integer type of its
    width, the mask of every bit but the sign's (``~`` the bits of -0.0), and the bits of infinity,
    the least value that is not finite (:func:`~...kernels.layout.largest_bits`)."""
    unsigned = np.dtype(f"u{dtype.itemsize}")
    sign = np.array(-0.0, dtype=dtype).view(unsigned)[()]
    return unsigned.type, ~sign, np.array(np.inf, dtype=dtype).view(unsigned)[()]


# Float32 and float64 values scanned as unsigned integers (one compiled variant of a scan each).
MAGNITUDE_BITS = {np.dtype(t): magnitude_bits(np.dtype(t)) for t in (np.float32, np.float64)}
