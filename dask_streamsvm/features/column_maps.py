"""Feature maps that work on the input's columns as they are read, on the reader thread.

:class:`Standardize` scales them (its scales learned in one read),
:class:`HashingMap` hashes columns of any kind, :class:`ColumnMaps` gives
each group of columns a map of its own, :class:`MapOf` computes a kernel
map over what another map encodes, and :class:`VirtualExamples` trains
on transformed copies of every row.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array

from .._validation import check_positive_int
from ..engine.data.checks import overflowing_rows
from ..kernels.features import LINEAR, concatenate_specs, make_spec
from .base import FeatureMap, canonical_csr


class Standardize(FeatureMap):
    """Each feature scaled to unit variance (and, for dense rows, centred) while training.

    Features on very different scales, or far from unit scale (raw pixel
    values 0..255, counts, money), make the dual solvers crawl: the
    curvature of a coordinate step is ``C ||x_i||^2``.  With
    ``LinearSVC(feature_map=Standardize())`` the fit learns each column's
    mean and standard deviation in one read of the training data before it
    trains (so a streaming fit reads the data once more), scales every
    partition as it is read, and solves the problem of the standardized
    features: ``objective_`` and ``duality_gap_`` are that problem's.  The
    scaling is then folded into the model, so ``coef_`` and ``intercept_``
    apply to the raw features and ``predict`` needs nothing more.

    Parameters
    ----------
    with_mean : bool or "auto", default="auto"
        Centre the features (subtract their means). ``"auto"``: for dense
        rows only; sparse rows would lose their zeros, and ``True`` with
        sparse rows is refused.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Column means subtracted (zeros when not centring).
    scale_ : ndarray of shape (n_features,)
        Column standard deviations divided by (1 for a constant column).
    n_samples_seen_ : int
        Rows the statistics came from.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm import LinearSVC
    >>> from dask_streamsvm.features import Standardize
    >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [2.0, 100.0], [3.0, 300.0]])
    >>> clf = LinearSVC(feature_map=Standardize(), random_state=0).fit(X, [0, 1, 0, 1])
    >>> clf.predict(X).tolist()
    [0, 1, 0, 1]
    """

    scales_rows = True

    def __init__(self, with_mean="auto"):
        self.with_mean = with_mean

    def learn(self, blocks, n_features):
        """Learn ``mean_`` and ``scale_`` from the feature blocks ``blocks`` (arrays or CSR, in order)."""
        return self.learn_moments(self.moments(blocks, n_features))

    def moments(self, blocks, n_features):
        """The :class:`ColumnMoments` of the rows of ``blocks``, combined block by block in order."""
        self._check_with_mean()
        total = ColumnMoments.empty(n_features)
        for X in blocks:
            total = total.combine(ColumnMoments.of_block(X))
        return total

    def learn_moments(self, moments):
        """Learn ``mean_`` and ``scale_`` from the rows' :class:`ColumnMoments` (a cluster's combined)."""
        self._check_with_mean()
        if moments.rows == 0:
            raise ValueError("Standardize found no rows to learn the features' scales from.")
        if moments.sparse and self.with_mean is True:
            raise ValueError(
                "Standardize(with_mean=True) would centre sparse rows and lose their zeros; use "
                "with_mean='auto' (or False) to scale them only."
            )
        centre = self.with_mean is True or (self.with_mean == "auto" and not moments.sparse)
        mean, std = moments.mean, np.sqrt(moments.m2 / moments.rows)
        if moments.shift.any():
            mean, std = np.ldexp(mean, moments.shift), np.ldexp(std, moments.shift)
        self.scale_ = np.where(std > 0.0, std, 1.0)
        self.mean_ = mean if centre else np.zeros(mean.shape[0])
        self.n_samples_seen_, self.n_features_in_ = moments.rows, mean.shape[0]
        return self

    def _check_with_mean(self):
        if self.with_mean not in (True, False, "auto"):
            raise ValueError(f"with_mean must be True, False or 'auto', got with_mean={self.with_mean!r}.")

    def fit(self, X, y=None):
        X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        self.learn([X], X.shape[1])
        self.n_features_out_ = X.shape[1]
        return self

    def transform(self, X):
        X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
        return self._scaled(X)

    def scale_rows(self, X):
        """``(X - mean_) / scale_`` as float64, the rows a fit trains on: a CSR matrix for sparse rows
        (never centred).

        Their ``x . x`` is checked here, after the scaling (the input checks
        leave it to the scaled rows, see ``scales_rows``): a ValueError names
        the first row whose squared norm overflows float64.
        """
        X = self._scaled(X)
        over = overflowing_rows(X)
        if over.any():
            raise ValueError(self._overflow_message(X, int(np.flatnonzero(over)[0])))
        return X

    def _scaled(self, X):
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            X.data /= self.scale_[X.indices]
            return X
        return (np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_

    def _overflow_message(self, X, r):
        row = X[r].toarray().ravel() if sp.issparse(X) else X[r]
        j = int(np.argmax(np.abs(row)))
        return (
            f"row {r} of the block: after Standardize's scaling its squared norm x . x still overflows "
            f"float64 (feature {j} is {row[j]:.3g} after scaling, its mean {self.mean_[j]:.3g} and scale "
            f"{self.scale_[j]:.3g}); no solver can learn from it. Standardize divides by the spread of "
            "the rows it learned from: a column that is not centred (sparse rows, or with_mean=False) "
            "and far from zero, or a row of weight 0 far from the others, stays large. Drop or "
            "centre that column, or drop the row."
        )

    def fold(self, coef, intercept):
        """The raw features' ``(coef, intercept)`` of a model trained on the standardized ones."""
        return coef / self.scale_, intercept - coef @ (self.mean_ / self.scale_)


class ColumnMoments:
    """Per column, the rows' mean and sum of squared deviations (``m2``): what :class:`Standardize`
    learns its scales from, combined exactly over blocks, partitions and a cluster's parts.

    :meth:`combine` is Chan, Golub & LeVeque's pairwise update (1979): for moments ``a`` and ``b``
    of ``n_a`` and ``n_b`` rows, ``delta = mean_b - mean_a``, ``mean = mean_a + delta n_b / n``,
    ``m2 = m2_a + m2_b + delta^2 n_a n_b / n``; stable where the values are large or far from 0.
    A column whose values pass ``2**400`` (about 2.6e120, where sums of squares near float64's
    limit) is summed in units of ``2**shift`` (``mean`` in those units, ``m2`` in ``4**shift``):
    exact, and values up to float64's largest have a finite scale.  ``sparse``: whether a block
    with rows was sparse (None: no rows yet).  :meth:`combine` returns new moments.
    """

    def __init__(self, rows, mean, m2, shift, sparse):
        self.rows, self.mean, self.m2, self.shift, self.sparse = int(rows), mean, m2, shift, sparse

    @classmethod
    def empty(cls, n_features):
        return cls(0, np.zeros(n_features), np.zeros(n_features), np.zeros(n_features, dtype=np.int64), None)

    @classmethod
    def of_block(cls, X):
        """The moments of the rows of ``X`` (an array or CSR matrix)."""
        k = X.shape[0]
        if k == 0:
            return cls.empty(X.shape[1])
        X, shift = _in_units(X)
        if sp.issparse(X):
            mean = np.asarray(X.sum(axis=0)).ravel() / k
            m2 = np.asarray(X.multiply(X).sum(axis=0)).ravel() - k * mean**2
        else:
            mean = X.mean(axis=0)
            m2 = ((X - mean) ** 2).sum(axis=0)
        return cls(k, mean, np.maximum(m2, 0.0), shift, sp.issparse(X))

    def in_units(self, shift):
        """``(mean, m2)`` in units of ``2**shift`` (``shift >= self.shift``): powers of two, exact."""
        grown = shift - self.shift
        if grown.any():
            return np.ldexp(self.mean, -grown), np.ldexp(self.m2, -2 * grown)
        return self.mean, self.m2

    def combine(self, other):
        """The moments of the rows of ``self`` and ``other`` together (Chan et al.'s update)."""
        sparse = None if self.sparse is None and other.sparse is None else bool(self.sparse or other.sparse)
        if other.rows == 0 or self.rows == 0:
            kept = self if other.rows == 0 else other
            return ColumnMoments(kept.rows, kept.mean, kept.m2, kept.shift, sparse)
        shift = np.maximum(self.shift, other.shift)
        (mean_a, m2_a), (mean_b, m2_b) = self.in_units(shift), other.in_units(shift)
        n_a, n_b, delta = self.rows, other.rows, mean_b - mean_a
        mean = mean_a + delta * (n_b / (n_a + n_b))
        m2 = m2_a + m2_b + delta**2 * (n_a * n_b / (n_a + n_b))
        return ColumnMoments(n_a + n_b, mean, m2, shift, sparse)


# Values above 2**400 (about 2.6e120) are summed in units of a power of two: their squares, summed
# over any number of rows, stay below float64's largest (about 1.8e308).
_LARGE_EXPONENT = 400


def _in_units(X):
    """``(X, shift)``: the block ``X`` as float64 in units of ``2**shift`` per column, ``shift`` 0 but
    for columns whose values pass ``2**400`` (powers of two scale floats exactly)."""
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    values = X.data if sp.issparse(X) else X
    shift = np.zeros(X.shape[1], dtype=np.int64)
    if values.size == 0:
        return X, shift
    top = max(abs(float(values.max())), abs(float(values.min())))  # no copy of the block
    if not (np.isfinite(top) and top > 2.0**_LARGE_EXPONENT):
        return X, shift
    col_top = abs(X).max(axis=0).toarray().ravel() if sp.issparse(X) else np.abs(X).max(axis=0)
    exponent = np.frexp(np.where(np.isfinite(col_top), col_top, 0.0))[1]
    shift = np.maximum(exponent - _LARGE_EXPONENT, 0).astype(np.int64)
    if sp.issparse(X):
        return sp.csr_matrix((np.ldexp(X.data, -shift[X.indices]), X.indices, X.indptr), shape=X.shape), shift
    return np.ldexp(X, -shift), shift


class HashingMap(FeatureMap):
    """Signed feature hashing of columns of any kind (Weinberger et al. 2009), as they are read.

    Every input column becomes features of one hashed space of
    ``n_features`` dimensions, named as scikit-learn's ``FeatureHasher``
    names the keys of a dict (and hashed the same way: MurmurHash3, index
    ``|h| mod n_features``, sign of ``h`` with ``alternate_sign``):

    - a numeric or boolean column ``c``: the feature ``"c"`` with the value;
    - a string, categorical or other object column ``c``: the feature
      ``"c=value"`` with value 1 (missing values give no feature);
    - a column of token lists ``c``: ``"c=token"`` for every token, counted.

    Numeric rows without column names (NumPy, SciPy sparse, Dask Arrays)
    hash column ``j`` as the feature ``"j"``.  Dask turns object columns
    of a DataFrame into strings by default, token lists included (they
    arrive as their text); keep lists as lists with
    ``dask.config.set({"dataframe.convert-string": False})``.  The hashing runs on the
    reader thread, once per distinct value of a partition's column, and the
    cache holds the hashed rows: one entry per column value.  The result
    is the same in every process.

    Parameters
    ----------
    n_features : int, default=2**20
    columns : list of str or None, default=None
        The DataFrame columns to use (None: all but the label column).
    alternate_sign : bool, default=True

    Examples
    --------
    >>> import pandas as pd
    >>> from dask_streamsvm.features import HashingMap
    >>> frame = pd.DataFrame({"colour": ["red", "blue"], "size": [1.5, 0.0]})
    >>> HashingMap(n_features=8).fit_transform(frame).toarray()
    array([[ 0. ,  1. ,  0. ,  0. ,  0. ,  0. , -1.5,  0. ],
           [-1. ,  0. ,  0. ,  0. ,  0. ,  0. ,  0. ,  0. ]])
    """

    reads_strings = True

    def __init__(self, n_features=2**20, columns=None, alternate_sign=True):
        self.n_features = n_features
        self.columns = columns
        self.alternate_sign = alternate_sign

    def raw_width(self, n_in):
        return check_positive_int("n_features", self.n_features, high=2**31 - 1)

    def selected(self, names):
        """The input columns the map reads, in order (``columns``, or all of ``names``)."""
        if self.columns is None:
            return list(names)
        missing = [c for c in self.columns if c not in list(names)]
        if missing:
            raise ValueError(f"HashingMap(columns=...) names columns {missing} that X does not have.")
        return list(self.columns)

    def _keys(self, keys):
        """``(index, sign)`` of feature names, as FeatureHasher computes them."""
        from sklearn.utils import murmurhash3_32

        n = self.raw_width(0)
        h = np.array([murmurhash3_32(str(k), seed=0) for k in keys], dtype=np.int64)
        index = np.abs(h) % n
        sign = np.where(h < 0, -1.0, 1.0) if self.alternate_sign else np.ones(h.shape[0])
        return index, sign

    def encode(self, X, columns=None):
        """The hashed rows of ``X`` as a CSR matrix of ``n_features`` columns.

        ``X`` is a pandas DataFrame, or numeric rows (ndarray or sparse).
        ``columns`` names the rows' columns when ``X`` is a plain array.
        """
        import pandas as pd

        n = self.raw_width(0)
        if not isinstance(X, pd.DataFrame):
            rows = canonical_csr(sp.csr_matrix(X, dtype=np.float64))  # copies before changing anything
            if not np.isfinite(rows.data).all():
                raise ValueError("X holds NaN or infinity; HashingMap needs finite numeric values.")
            names = range(rows.shape[1]) if columns is None else columns
            index, sign = self._keys(names)
            out = sp.csr_matrix(
                (rows.data * sign[rows.indices], index[rows.indices], rows.indptr.copy()),
                shape=(rows.shape[0], n),
            )
            out.sum_duplicates()
            out.eliminate_zeros()
            return out
        parts_r, parts_c, parts_v = [], [], []
        n_rows = len(X)
        for c in self.selected(X.columns):
            col = X[c]
            if _numeric_column(col):
                values = col.to_numpy(dtype=np.float64, na_value=np.nan)
                if not np.isfinite(values).all():
                    r = int(np.flatnonzero(~np.isfinite(values))[0])
                    raise ValueError(f"column {c!r}, row {r} is {values[r]!r}; HashingMap needs finite data.")
                index, sign = self._keys([c])
                rows = np.flatnonzero(values != 0.0)
                parts_r.append(rows)
                parts_c.append(np.full(rows.shape[0], index[0]))
                parts_v.append(values[rows] * sign[0])
                continue
            col = col.reset_index(drop=True)  # the index now counts rows
            first = col.dropna()
            if len(first) and isinstance(first.iloc[0], list | tuple | np.ndarray | set):
                col = col.explode()  # token lists: a row per token, under its row's number
            positions = col.index.to_numpy()
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            keep = codes >= 0
            index, sign = self._keys([f"{c}={u}" for u in uniques])
            parts_r.append(positions[keep])
            parts_c.append(index[codes[keep]])
            parts_v.append(sign[codes[keep]])
        if not parts_r:
            return sp.csr_matrix((n_rows, n))
        out = sp.csr_matrix(
            (np.concatenate(parts_v), (np.concatenate(parts_r), np.concatenate(parts_c))), shape=(n_rows, n)
        )
        out.sum_duplicates()
        out.eliminate_zeros()
        return out

    def non_finite_rows(self, X):
        bad, first = np.zeros(len(X), dtype=bool), None
        for c in self.selected(X.columns):
            if _numeric_column(X[c]):
                values = X[c].to_numpy(dtype=np.float64, na_value=np.nan)
                off = ~np.isfinite(values)
                r = int(np.argmax(off))
                if off[r] and (first is None or r < first[0]):
                    first = (r, c, values[r])
                bad |= off
        return bad, first


def _numeric_column(column):
    """Whether a pandas column holds numbers (or booleans), which HashingMap hashes by name."""
    import pandas as pd

    return pd.api.types.is_bool_dtype(column.dtype) or pd.api.types.is_numeric_dtype(column.dtype)


class MapOf(FeatureMap):
    """``outer(inner(x))``: a map computed in the kernels over the rows another map encodes.

    ``inner`` encodes the input as it is read (:class:`HashingMap`);
    ``outer`` expands its output inside DOT and ADD
    (:class:`PolynomialMap`).  For example, degree-2 interactions of
    hashed categorical columns::

        MapOf(PolynomialMap(interaction_only=True, n_features=2**20), HashingMap(n_features=2**12))

    Parameters
    ----------
    outer : map computed in the kernels
    inner : map that encodes (its ``spec`` is None)
    """

    def __init__(self, outer, inner):
        self.outer = outer
        self.inner = inner

    @property
    def reads_strings(self):
        return bool(getattr(self.inner, "reads_strings", False))

    def _check(self):
        for name, part in (("outer", self.outer), ("inner", self.inner)):
            if not isinstance(part, FeatureMap):
                raise TypeError(f"MapOf {name} must be a feature map, got {part!r}.")
        if self.inner.spec(self.inner.raw_width(1)) is not None:
            raise ValueError(
                f"MapOf inner={self.inner!r} is computed in the kernels; only maps that encode "
                "(HashingMap) can be inner."
            )
        if self.outer.reads_strings:
            raise ValueError(f"MapOf outer={self.outer!r} reads strings; it must read numeric rows.")

    def encode(self, X, columns=None):
        self._check()
        return self.inner.encode(X, columns)

    def non_finite_rows(self, X):
        return self.inner.non_finite_rows(X)

    def raw_width(self, n_in):
        self._check()
        return self.inner.raw_width(n_in)

    def spec(self, n_raw):
        self._check()
        return self.outer.spec(n_raw)


class ColumnMaps(FeatureMap):
    """A map per group of columns, side by side: the sum of their kernels (COFFIN section 2.1).

    ``phi(x) = [phi_1(x_1), phi_2(x_2), ...]`` where ``x_g`` are the columns
    of group ``g``, so ``phi(x) . phi(x') = sum_g k_g(x_g, x'_g)``.  Each map
    encodes its own columns as they are read, the raw rows of all groups
    sit side by side in the cache, and the kernels compute every group's
    features inside DOT and ADD.  For example, a DNA sequence, two numeric
    columns with their degree-2 products, and hashed categories::

        ColumnMaps([
            (WeightedDegreeMap(degree=8, n_features=2**22), ["sequence"]),
            (PolynomialMap(), ["gc_content", "length"]),
            (HashingMap(n_features=2**16), ["tissue", "species"]),
            ("passthrough", ["score"]),
        ])

    Parameters
    ----------
    maps : list of (map, columns)
        ``map`` is a feature map or ``"passthrough"`` (the columns as they
        are); ``columns`` a list of DataFrame column names, or of column
        positions (also for arrays).  Columns not named are not used.
    """

    reads_strings = True  # it selects columns by name and encodes every group

    def __init__(self, maps=()):
        self.maps = maps

    def _parts(self):
        """``[(map or None, columns)]`` checked; None is passthrough."""
        if not isinstance(self.maps, list | tuple) or not self.maps:
            raise ValueError(
                f"ColumnMaps(maps=...) needs a non-empty list of (map, columns), got {self.maps!r}."
            )
        parts = []
        for g, pair in enumerate(self.maps):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ValueError(f"ColumnMaps maps[{g}] must be a pair (map, columns), got {pair!r}.")
            fmap, columns = pair
            if isinstance(columns, str | int | np.integer):
                columns = [columns]
            columns = list(columns)
            if not columns:
                raise ValueError(f"ColumnMaps maps[{g}] names no columns.")
            if isinstance(fmap, str) and fmap == "passthrough":
                fmap = None
            elif isinstance(fmap, VirtualExamples) or not isinstance(fmap, FeatureMap):
                raise TypeError(
                    f"ColumnMaps maps[{g}] holds {fmap!r}; it must be a feature map or 'passthrough'."
                )
            parts.append((fmap, columns))
        return parts

    def raw_width(self, n_in):
        width = sum(len(c) if m is None else m.raw_width(len(c)) for m, c in self._parts())
        if width > 2**31 - 1:
            raise ValueError(
                f"ColumnMaps' raw rows would have {width} columns, over 2**31 - 1: use fewer groups."
            )
        return width

    def spec(self, n_raw):
        pieces = []
        for fmap, columns in self._parts():
            width = len(columns) if fmap is None else fmap.raw_width(len(columns))
            spec = None if fmap is None else fmap.spec(width)
            pieces.append((make_spec(LINEAR, width, width) if spec is None else spec, width))
        return concatenate_specs(pieces)

    def encode(self, X, columns=None):
        """The groups' raw rows side by side, as one canonical CSR matrix."""
        import pandas as pd

        blocks = []
        for fmap, names in self._parts():
            if isinstance(X, pd.DataFrame):
                by_position = all(isinstance(c, int | np.integer) for c in names)
                missing = [] if by_position else [c for c in names if c not in X.columns]
                if missing:
                    raise ValueError(f"ColumnMaps names columns {missing} that X does not have.")
                sub = X.iloc[:, names] if by_position else X[names]
            else:
                if not all(isinstance(c, int | np.integer) for c in names):
                    raise ValueError(
                        f"ColumnMaps names columns {names} by name, but X has no column names "
                        "(it is not a DataFrame): name them by position."
                    )
                if max(names) >= X.shape[1] or min(names) < -X.shape[1]:
                    raise ValueError(
                        f"ColumnMaps names column positions {names}; X has {X.shape[1]} columns."
                    )
                sub = X[:, names]
            if fmap is None or not fmap.reads_strings:
                if isinstance(sub, pd.DataFrame):
                    sub = check_array(sub, accept_sparse="csr", dtype=np.float64, ensure_min_samples=0)
                sub = sub if fmap is None else fmap.encode(sub)
                width = len(names)
            else:
                sub = fmap.encode(sub)
                width = fmap.raw_width(len(names))
            block = sp.csr_matrix(sub, dtype=np.float64)
            if block.shape[1] != width:
                raise ValueError(
                    f"ColumnMaps: the map of columns {names} gave {block.shape[1]} columns, not {width}."
                )
            blocks.append(block)
        return canonical_csr(sp.hstack(blocks, format="csr"))


class VirtualExamples(BaseEstimator):
    """Virtual examples (COFFIN section 2.2): every row trains as ``n_variants`` transformed copies.

    ``transform(X, v)`` returns variant ``v`` of a block of rows ``X`` (a
    2-D array or CSR matrix, same shape), for ``v = 0 .. n_variants - 1``
    (include the identity as a variant to keep the original rows).  Each
    variant is an example of its own, with its own dual variable, its
    label and its weight.  Variants are made when a partition is read, on
    the reader thread, and never written anywhere: the data hold the
    original rows only, and the row cache keeps the variants the solver
    finds informative, within its budget.  (COFFIN makes them inside DOT
    and ADD instead, which also spares the cache; that needs transforms
    compiled for the kernels, which this class does not ask of ``transform``.)
    Prediction applies no transform.

    Parameters
    ----------
    transform : callable ``(X, v) -> X_v``
        Deterministic (the same variant on every read).
    n_variants : int >= 1
    """

    reads_strings = False

    def __init__(self, transform=None, n_variants=1):
        self.transform = transform
        self.n_variants = n_variants

    def _check(self):
        if not callable(self.transform):
            raise TypeError(f"transform must be a callable (X, v) -> X_v, got {self.transform!r}.")
        check_positive_int("n_variants", self.n_variants)

    def expand(self, X, y, sample_weight):
        """The variants of the rows ``X``, variant after variant, with their labels and weights."""
        self._check()
        variants = []
        for v in range(int(self.n_variants)):
            Xv = self.transform(X, v)
            if Xv.shape != X.shape:
                raise ValueError(f"transform(X, {v}) has shape {Xv.shape}; it must keep X's shape {X.shape}.")
            variants.append(Xv)
        if sp.issparse(X):
            stacked = sp.vstack([sp.csr_matrix(Xv, dtype=X.dtype) for Xv in variants], format="csr")
        else:
            stacked = np.ascontiguousarray(np.vstack([np.asarray(Xv, dtype=X.dtype) for Xv in variants]))
        n = int(self.n_variants)
        return stacked, np.tile(np.asarray(y), n), np.tile(np.asarray(sample_weight, dtype=np.float64), n)

    def variants(self, X):
        """All variants of ``X`` stacked, variant after variant (for inspection)."""
        return self.expand(X, np.zeros(X.shape[0]), np.ones(X.shape[0]))[0]

    def encode(self, X, columns=None):
        return X

    def raw_width(self, n_in):
        self._check()
        return int(n_in)

    def spec(self, n_raw):
        return None
