"""Small real datasets shipped with the package, for demos and tests."""

from importlib import resources

import numpy as np

A9A_N_FEATURES = 123


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
    """
    from sklearn.datasets import load_svmlight_file

    files = {"train": "a9a.bz2", "test": "a9a.t.bz2"}
    if subset not in files:
        raise ValueError(f"subset must be 'train' or 'test', got subset={subset!r}.")
    path = resources.files("dask_streamsvm") / "data" / files[subset]
    with resources.as_file(path) as p:
        X, y = load_svmlight_file(str(p), n_features=A9A_N_FEATURES)
    return compact_csr(X), y.astype(np.float64)


def compact_csr(X):
    """CSR with int32 index arrays when they fit (half the index memory)."""
    X = X.tocsr()
    if X.nnz < np.iinfo(np.int32).max and X.shape[1] < np.iinfo(np.int32).max:
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X
