"""Feature maps that ``LinearSVC`` applies on the fly (COFFIN, Sonnenburg & Franc 2010).

``LinearSVC(feature_map=PolynomialMap())`` trains on ``phi(x)`` while the
cache, the blocks and the partitions hold the raw rows ``x``: the kernels
compute ``w . phi(x)``, ``w += a phi(x)`` and ``||phi(x)||^2`` from the raw
row when they need them (:mod:`dask_streamsvm.kernels.features`).  Each map
is also a scikit-learn transformer whose :meth:`transform` materialises
``phi(X)``, for inspection and for testing on small data.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array

from .kernels.features import POLY2, make_spec, map_entries, poly2_dimension


class PolynomialMap(TransformerMixin, BaseEstimator):
    """Degree-2 polynomial features, computed inside the solver (COFFIN section 2.1.2).

    ``phi(x) = [x, x_i x_j for i <= j]`` in the column order of
    scikit-learn's ``PolynomialFeatures(degree=2, include_bias=False)``
    (``i < j`` with ``interaction_only=True``).  The work per row is
    quadratic in its nonzeros, not in the number of features, so it suits
    sparse rows; dense rows are stored as CSR.

    Parameters
    ----------
    degree : int, default=2
        Only 2 is supported.
    interaction_only : bool, default=False
        Leave out the squares ``x_i^2``.
    n_features : int or None, default=None
        None keeps every monomial (``p + p (p + 1) / 2`` features for ``p``
        inputs); an int hashes them into that many buckets, for inputs whose
        explicit space is too large.
    alternate_sign : bool, default=True
        With ``n_features``: give each monomial a hashed sign, so that
        collisions cancel on average (Weinberger et al. 2009).
    seed : int, default=0
        Seed of the hash; the same in every process.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm.features import PolynomialMap
    >>> PolynomialMap().fit_transform(np.array([[1.0, 2.0]])).toarray()
    array([[1., 2., 1., 2., 4.]])
    """

    def __init__(self, degree=2, interaction_only=False, n_features=None, alternate_sign=True, seed=0):
        self.degree = degree
        self.interaction_only = interaction_only
        self.n_features = n_features
        self.alternate_sign = alternate_sign
        self.seed = seed

    def spec(self, n_in):
        """The kernels' record array for ``n_in`` raw features (parameters checked here)."""
        if self.degree != 2:
            raise ValueError(f"PolynomialMap supports degree=2 only, got degree={self.degree!r}.")
        hashed = self.n_features is not None
        if hashed:
            if isinstance(self.n_features, bool) or not isinstance(self.n_features, numbers.Integral):
                raise TypeError(f"n_features must be an int or None, got n_features={self.n_features!r}.")
            if self.n_features < 1:
                raise ValueError(f"n_features must be >= 1, got n_features={self.n_features!r}.")
            n_out = int(self.n_features)
        else:
            n_out = int(poly2_dimension(int(n_in), bool(self.interaction_only)))
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got seed={self.seed!r}.")
        return make_spec(
            POLY2, int(n_in), n_out, interaction_only=bool(self.interaction_only), hashed=hashed,
            alternate_sign=bool(self.alternate_sign), seed=int(self.seed),
        )  # fmt: skip

    def fit(self, X, y=None):
        """Record the number of input features (the map itself has nothing to learn)."""
        X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        self.n_features_in_ = X.shape[1]
        self.n_features_out_ = int(self.spec(X.shape[1])[0]["n_out"])
        return self

    def transform(self, X):
        """``phi(X)`` as a CSR matrix of ``n_features_out_`` columns (collisions summed)."""
        X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        n_in = getattr(self, "n_features_in_", X.shape[1])
        if X.shape[1] != n_in:
            raise ValueError(f"X has {X.shape[1]} features, but PolynomialMap is expecting {n_in} features.")
        return materialise(X, self.spec(n_in))


def canonical_csr(X):
    """CSR with sorted column indices and no duplicates (what the map kernels read)."""
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def materialise(X, spec):
    """``phi(X)`` of the map ``spec`` as a CSR matrix, for inspection and tests."""
    X = canonical_csr(X)
    n_out = int(spec[0]["n_out"])
    rows, cols, vals = [], [], []
    for r in range(X.shape[0]):
        lo, hi = X.indptr[r], X.indptr[r + 1]
        m = hi - lo
        index = np.empty(m + m * (m + 1) // 2, dtype=np.int64)
        value = np.empty(index.shape[0])
        n = map_entries(X.indices, X.data, lo, hi, spec, index, value)
        rows.append(np.full(n, r))
        cols.append(index[:n])
        vals.append(value[:n])
    if not rows:
        return sp.csr_matrix((0, n_out))
    out = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(X.shape[0], n_out)
    )
    out.sum_duplicates()
    return out
