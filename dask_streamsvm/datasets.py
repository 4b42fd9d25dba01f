"""Small real datasets shipped with the package, for demos and tests."""

from importlib import resources

import numpy as np

from .io import csr_to_dask

A9A_N_FEATURES = 123
_A9A_FILES = {"train": "a9a.bz2", "test": "a9a.t.bz2"}


def load_a9a(subset="train"):
    """UCI Adult as LIBSVM's ``a9a``: 123 binary features, labels -1/+1.

    Parameters
    ----------
    subset : {"train", "test"}
        32,561 training rows or 16,281 test rows.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_rows, 123), float64
    y : ndarray of shape (n_rows,), float64

    Notes
    -----
    Attribution and checksums: ``dask_streamsvm/data/README.md``.

    Examples
    --------
    >>> from dask_streamsvm.datasets import load_a9a
    >>> X, y = load_a9a("test")
    >>> X.shape
    (16281, 123)
    >>> sorted(set(y.tolist()))
    [-1.0, 1.0]
    """
    from sklearn.datasets import load_svmlight_file

    if subset not in _A9A_FILES:
        raise ValueError(f"subset must be 'train' or 'test', got subset={subset!r}.")
    path = resources.files("dask_streamsvm") / "data" / _A9A_FILES[subset]
    with resources.as_file(path) as p:
        X, y = load_svmlight_file(str(p), n_features=A9A_N_FEATURES)
    return compact_csr(X), y.astype(np.float64)


def load_a9a_dask(subset="train", n_partitions=16):
    """``a9a`` as a lazy Dask Array pair with SciPy CSR chunks.

    The shipped file is small, so it is parsed now, once; the returned
    collections then hand out its rows in ``n_partitions`` row blocks of
    known sizes, the way a larger-than-memory collection would (for a real
    one, use :func:`dask_streamsvm.read_libsvm` or ``dask.dataframe``).

    Parameters
    ----------
    subset : {"train", "test"}
        32,561 training rows or 16,281 test rows.
    n_partitions : int, default=16
        Number of row blocks (at most the number of rows).

    Returns
    -------
    X : dask.array.Array of shape (n_rows, 123), float64, CSR chunks
    y : dask.array.Array of shape (n_rows,), float64, chunked like X's rows

    Examples
    --------
    >>> from dask_streamsvm.datasets import load_a9a_dask
    >>> X, y = load_a9a_dask("test", n_partitions=4)
    >>> X.shape, X.numblocks, y.numblocks
    ((16281, 123), (4, 1), (4,))
    >>> type(X.blocks[0].compute()).__name__
    'csr_matrix'
    """
    if isinstance(n_partitions, bool) or not isinstance(n_partitions, int | np.integer) or n_partitions < 1:
        raise ValueError(f"n_partitions must be a positive integer, got n_partitions={n_partitions!r}.")
    X, y = load_a9a(subset)
    return csr_to_dask(X, y, n_partitions)


def compact_csr(X):
    """CSR with int32 index arrays when they fit (half the index memory)."""
    X = X.tocsr()
    if X.nnz < np.iinfo(np.int32).max and X.shape[1] < np.iinfo(np.int32).max:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X
