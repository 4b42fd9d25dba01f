"""What every feature map shares: the two stages, ``transform``, and ``phi(X)`` written out."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array

from ..kernels.features import map_entries, map_terms, spec_width


class FeatureMap(TransformerMixin, BaseEstimator):
    """What every map shares: the two stages and ``transform``."""

    #: True when ``encode`` reads non-numeric columns (the data may hold strings).
    reads_strings = False
    #: True when the fit scales the rows before the solver reads them (:class:`Standardize`): the
    #: input checks then leave ``x . x`` to the scaled rows (``Standardize.scale_rows`` checks them).
    scales_rows = False

    def encode(self, X, columns=None):
        """Raw numeric rows of ``X`` (a CSR matrix or a 2-D float array); numeric input as it is."""
        return X

    def raw_width(self, n_in):
        """Columns of the encoded rows for ``n_in`` input columns."""
        return int(n_in)

    def spec(self, n_raw):
        """The kernels' record array for ``n_raw`` raw columns, or None (nothing computed on the fly)."""
        return None

    def non_finite_rows(self, X):
        """Rows of the DataFrame ``X`` that ``encode`` refuses for a value NaN or infinite (a bool
        mask), and the first such cell ``(row, column, value)``, or None (``on_invalid="skip"``
        drops the rows)."""
        return np.zeros(len(X), dtype=bool), None

    def fit(self, X, y=None):
        """Record the input width (a map has nothing to learn)."""
        if not self.reads_strings:
            X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        self.n_features_in_ = X.shape[1]
        raw = self.raw_width(X.shape[1])
        spec = self.spec(raw)
        self.n_features_out_ = raw if spec is None else spec_width(spec)
        return self

    def transform(self, X):
        """``phi(X)`` as a CSR matrix of ``n_features_out_`` columns (hash collisions summed)."""
        if not self.reads_strings:
            X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        n_in = getattr(self, "n_features_in_", X.shape[1])
        if X.shape[1] != n_in:
            name = type(self).__name__
            raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting {n_in} features.")
        raw = self.encode(X)
        spec = self.spec(raw.shape[1])
        return sp.csr_matrix(raw) if spec is None else materialise(raw, spec)


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
    n_out = spec_width(spec)
    rows, cols, vals = [], [], []
    for r in range(X.shape[0]):
        lo, hi = X.indptr[r], X.indptr[r + 1]
        index = np.empty(map_terms(spec, hi - lo), dtype=np.int64)
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
