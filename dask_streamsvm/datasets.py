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


def make_splice_sites(n_samples=1000, length=60, positive_fraction=0.25, noise=0.1, random_state=None):
    """DNA-like sequences with a planted splice-site-like signal, for string feature maps.

    Every sequence is ``length`` random letters of ``ACGT`` with the
    dinucleotide ``AG`` at the middle (an acceptor site's consensus, so it
    does not tell the classes apart).  Positive sequences also carry a
    pyrimidine-rich tract (``C``/``T`` with probability 0.8) over the 15
    letters before the ``AG`` and a ``G`` two letters after it, as real
    acceptor sites do; a fraction ``noise`` of labels is flipped.  A
    weighted-degree kernel sees position-specific k-mers and separates the
    classes; a bag of letters barely does.

    Returns
    -------
    frame : pandas.DataFrame with one string column ``"sequence"``
    y : ndarray of -1/+1
    """
    import pandas as pd
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    letters = np.array(list("ACGT"))
    codes = rng.randint(0, 4, size=(n_samples, length))
    middle = length // 2
    codes[:, middle], codes[:, middle + 1] = 0, 2  # "AG"
    y = np.where(rng.rand(n_samples) < positive_fraction, 1, -1)
    tract = slice(max(middle - 15, 0), middle)
    positive = np.flatnonzero(y == 1)
    pyrimidines = rng.choice([1, 3], size=(positive.shape[0], tract.stop - tract.start))
    keep = rng.rand(*pyrimidines.shape) < 0.8
    codes[positive, tract] = np.where(keep, pyrimidines, codes[positive, tract])
    if middle + 3 < length:
        codes[positive, middle + 3] = 2
    flip = rng.rand(n_samples) < noise
    y[flip] = -y[flip]
    sequences = ["".join(row) for row in letters[codes]]
    return pd.DataFrame({"sequence": sequences}), y
