"""Feature maps computed inside the kernels' DOT and ADD: polynomial and string kernels.

The cache holds the raw rows (numbers, or a string's bytes); the kernels
compute the map's features from them whenever a row is used
(:mod:`dask_streamsvm.kernels.features`), so ``phi(x)`` is never stored.
"""

import math

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive_float, check_positive_int
from ..kernels.features import POLY2, POLYK, STRING, make_spec, poly2_dimension
from .base import FeatureMap

# The most monomials an unhashed kernel map writes out (above it, n_features must hash them).
MAX_EXPLICIT = 2**31 - 1
# The highest degree of the polynomial kernel's map: the kernels weigh degree k by C(degree, k),
# computed in int64 as r * (degree - k + j) // j, exact while C(degree, degree // 2) * degree fits.
MAX_DEGREE = 60


class PolynomialMap(FeatureMap):
    """Polynomial features, computed inside the solver (COFFIN section 2.1.2): two maps, which differ.

    ``PolynomialMap()`` (``degree=2``, neither ``gamma`` nor ``coef0``) is
    **not** the polynomial kernel's map.  It is scikit-learn's
    ``PolynomialFeatures(degree=2, include_bias=False)``: ``phi(x) = [x,
    x_i x_j for i <= j]`` in its column order (``i < j`` with
    ``interaction_only=True``), every monomial of weight 1, so that::

        phi(x) . phi(z) = x.z + ((x.z)^2 + sum_i x_i^2 z_i^2) / 2      (- with interaction_only)

    where the kernel is ``(x.z + 1)^2 = 1 + 2 x.z + (x.z)^2``: no constant,
    and the linear and cross terms weigh half as much.
    ``LinearSVC(feature_map=PolynomialMap())`` trains the model of
    ``make_pipeline(PolynomialFeatures(2, include_bias=False), LinearSVC())``.

    The polynomial kernel's map is the one with ``gamma`` or ``coef0``
    given, or with another ``degree`` (``degree=3`` alone: ``(x.z +
    1)^3``): every monomial of degree ``0 .. degree`` weighted so that
    ``phi(x) . phi(z) = (gamma x.z + coef0)^degree`` exactly, scikit-learn's
    ``polynomial_kernel`` (the multinomial expansion; the constant monomial
    carries ``coef0^degree``), in ``C(p + degree, degree)`` features for
    ``p`` inputs, or hashed into ``n_features``.  ``PolynomialMap(gamma=1.0,
    coef0=1.0)`` is the map of ``(x.z + 1)^2``.  :meth:`kernel` gives
    either map's inner products in closed form.

    The work per row grows with its nonzeros, ``C(m + degree, degree)``
    monomials for ``m`` of them, not with the number of features, so it
    suits sparse rows; dense rows are stored as CSR.  The rows cost no
    more memory than they take raw, but the weights do: ``w`` has a weight
    per monomial, and a fit holds several copies of it (3 times ``w`` in
    memory, 6 times out of core; see the guide's "Memory").

    Parameters
    ----------
    degree : int, default=2
        Highest degree of the monomials (>= 1).  2 with neither ``gamma``
        nor ``coef0``: the plain map of ``PolynomialFeatures`` above (not
        the kernel's); any other degree: the polynomial kernel's map.
    interaction_only : bool, default=False
        The plain degree-2 map only: leave out the squares ``x_i^2``.
    n_features : int or None, default=None
        None keeps every monomial (``p + p (p + 1) / 2`` features for ``p``
        inputs with the plain map, ``C(p + degree, degree)`` with the
        kernel's, at most 2**31 - 1); an int hashes them into that many
        buckets, for inputs whose explicit space is too large (the kernel
        is then exact up to the collisions).
    alternate_sign : bool, default=True
        With ``n_features``: give each monomial a hashed sign, so that
        collisions cancel on average (Weinberger et al. 2009).
    seed : int, default=0
        Seed of the hash; the same in every process.
    gamma : float or None, default=None
        The kernel's ``gamma`` (> 0).  Giving it (or ``coef0``) selects the
        polynomial kernel's map; None: 1.0 when the kernel's map is used.
    coef0 : float or None, default=None
        The kernel's ``coef0`` (>= 0).  Giving it (or ``gamma``) selects the
        polynomial kernel's map; None: 1.0 when the kernel's map is used.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_streamsvm.features import PolynomialMap
    >>> X = np.array([[1.0, 2.0]])
    >>> PolynomialMap().fit_transform(X).toarray()  # PolynomialFeatures(2, include_bias=False)
    array([[1., 2., 1., 2., 4.]])
    >>> PolynomialMap().kernel(X)  # x.z + ((x.z)^2 + sum_i x_i^2 z_i^2) / 2, not (x.z + 1)^2 = 36
    array([[26.]])
    >>> PolynomialMap(gamma=1.0, coef0=1.0).kernel(X)  # the polynomial kernel's map
    array([[36.]])
    """

    def __init__(
        self, degree=2, interaction_only=False, n_features=None, alternate_sign=True, seed=0, gamma=None,
        coef0=None,
    ):  # fmt: skip
        self.degree = degree
        self.interaction_only = interaction_only
        self.n_features = n_features
        self.alternate_sign = alternate_sign
        self.seed = seed
        self.gamma = gamma
        self.coef0 = coef0

    @property
    def _kernel(self):
        """Whether this is the weighted map of the polynomial kernel (any degree but plain 2)."""
        return self.gamma is not None or self.coef0 is not None or self.degree != 2

    def kernel(self, X, Z=None):
        """``phi(x) . phi(z)`` for every row ``x`` of ``X`` and ``z`` of ``Z`` (None: ``X``), in closed form.

        The map's kernel before any hashing (with ``n_features``, the hashed
        features' inner products equal it up to collisions)::

            plain map (PolynomialMap()):  x.z + ((x.z)^2 + sum_i x_i^2 z_i^2) / 2
                       interaction_only:  x.z + ((x.z)^2 - sum_i x_i^2 z_i^2) / 2
            the kernel's map:             (gamma x.z + coef0)^degree

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows_X, n_features_in)
        Z : {array-like, sparse matrix} of shape (n_rows_Z, n_features_in), default=None

        Returns
        -------
        ndarray of shape (n_rows_X, n_rows_Z)
        """
        from sklearn.utils import check_array

        X = check_array(X, accept_sparse="csr", dtype=np.float64)
        Z = X if Z is None else check_array(Z, accept_sparse="csr", dtype=np.float64)
        if Z.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features and Z {Z.shape[1]}; both need the same features.")
        G = _dense(X @ Z.T)
        if self._kernel:
            degree, gamma, coef0 = self._kernel_parameters()
            return (gamma * G + coef0) ** degree
        squares = _dense(_elementwise_square(X) @ _elementwise_square(Z).T)
        return G + 0.5 * (G * G + (-squares if self.interaction_only else squares))

    def spec(self, n_in):
        """The kernels' record array for ``n_in`` raw features (parameters checked here)."""
        if self._kernel:
            return self._kernel_spec(int(n_in))
        hashed = self.n_features is not None
        if hashed:
            n_out = check_positive_int("n_features", self.n_features)
        else:
            n_out = int(poly2_dimension(int(n_in), bool(self.interaction_only)))
        check_positive_int("seed", self.seed, low=0)
        return make_spec(
            POLY2, int(n_in), n_out, interaction_only=bool(self.interaction_only), hashed=hashed,
            alternate_sign=bool(self.alternate_sign), seed=int(self.seed),
        )  # fmt: skip

    def _kernel_parameters(self):
        """``(degree, gamma, coef0)`` of the kernel's map, checked."""
        degree = check_positive_int("degree", self.degree)
        if degree > MAX_DEGREE:
            raise ValueError(
                f"degree must be at most {MAX_DEGREE}, got degree={degree}: the kernels count the monomials "
                "and weigh them (binomial coefficients of the degree) in 64-bit integers, which hold them "
                f"exactly up to there. Pass {MAX_DEGREE} or less (degrees 2 to 5 are usual)."
            )
        gamma = 1.0 if self.gamma is None else check_positive_float("gamma", self.gamma)
        coef0 = 1.0 if self.coef0 is None else float(self.coef0)
        if not coef0 >= 0.0 or not np.isfinite(coef0):
            raise ValueError(f"coef0 must be a finite number >= 0, got coef0={self.coef0!r}.")
        if self.interaction_only:
            raise ValueError(
                "interaction_only applies to the plain degree-2 map; the polynomial kernel's map "
                "(degree other than 2, or gamma or coef0 given) keeps every monomial."
            )
        return degree, gamma, coef0

    def _kernel_spec(self, n_in):
        degree, gamma, coef0 = self._kernel_parameters()
        check_positive_int("seed", self.seed, low=0)
        hashed = self.n_features is not None
        if hashed:
            n_out = check_positive_int("n_features", self.n_features)
        else:
            n_out = math.comb(n_in + degree, degree)  # exact: numba's int64 binomial would wrap
            if n_out > MAX_EXPLICIT:
                raise ValueError(
                    f"PolynomialMap(degree={degree}) of {n_in} features has {n_out:,} monomials, more than "
                    f"{MAX_EXPLICIT:,}; pass n_features (say 2**20) to hash them into that many."
                )
        return make_spec(
            POLYK, n_in, n_out, hashed=hashed, alternate_sign=bool(self.alternate_sign), seed=int(self.seed),
            degree=degree, gamma=gamma, coef0=coef0,
        )  # fmt: skip


def _dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def _elementwise_square(X):
    return X.multiply(X) if sp.issparse(X) else X * X


class _StringMap(FeatureMap):
    """Hashed k-mer features of one string column, computed inside DOT and ADD."""

    reads_strings = True
    _positional = False

    def raw_width(self, n_in):
        return _STRING_WIDTH  # positions of a string: any length up to this

    def _string_spec(self, degree, min_degree):
        n = check_positive_int("n_features", self.n_features)
        check_positive_int("seed", self.seed, low=0)
        return make_spec(
            STRING, _STRING_WIDTH, n, hashed=True, alternate_sign=bool(self.alternate_sign),
            seed=int(self.seed), degree=degree, min_degree=min_degree, positional=self._positional,
            normalize=bool(self.normalize),
        )  # fmt: skip

    def encode(self, X, columns=None):
        """The strings of the column as CSR rows: positions as columns, byte codes as values."""
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            names = list(X.columns)
            column = self.column
            if column is None:
                if len(names) != 1:
                    raise ValueError(
                        f"{type(self).__name__} reads one string column; X has columns {names}: "
                        "name it with column=..."
                    )
                column = names[0]
            elif column not in names:
                raise ValueError(f"column={column!r} is not a column of X; its columns are {names}.")
            values = X[column].to_numpy(dtype=object)
        else:
            values = np.asarray(X, dtype=object)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
            if values.ndim != 1:
                raise ValueError(
                    f"{type(self).__name__} reads one column of strings; got shape {values.shape}."
                )
        bad = [r for r, v in enumerate(values) if not isinstance(v, str)]
        if bad:
            raise ValueError(
                f"row {bad[0]} holds {values[bad[0]]!r}, not a string; every row needs a string."
            )
        encoded = [v.encode("utf-8") for v in values]
        lengths = np.array([len(b) for b in encoded], dtype=np.int64)
        indptr = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.float64)
        starts = np.repeat(indptr[:-1], lengths)
        indices = (np.arange(indptr[-1]) - starts).astype(np.int32)
        if data.shape[0] and (lengths.max() > _STRING_WIDTH or (data == 0).any()):
            raise ValueError("strings must be shorter than 2**24 bytes (16 MiB) and hold no NUL character.")
        return sp.csr_matrix((data, indices, indptr), shape=(len(encoded), _STRING_WIDTH))


_STRING_WIDTH = 2**24  # bytes of a string: room for several string columns in one int32 raw row


class SpectrumMap(_StringMap):
    """Hashed k-mer counts of a string column: the spectrum kernel (COFFIN section 2.1.2).

    ``phi(s)`` counts every substring of length ``k`` of ``s`` (with
    ``weighted=True``, every length from 1 to ``k``, weighted by
    ``sqrt(beta_j)``, ``beta_j = 2 (k - j + 1) / (k (k + 1))``: the weighted
    spectrum kernel), hashed into ``n_features`` buckets.  The cache holds
    the strings (a byte per character); the k-mers are hashed, one mix per
    character, whenever a row is used.

    Parameters
    ----------
    k : int, default=3
    weighted : bool, default=False
    n_features : int, default=2**20
    column : str or None, default=None
        The string column of a DataFrame (None: its only column).
    alternate_sign : bool, default=True
    normalize : bool, default=True
        Scale ``phi(s)`` to unit norm (before collisions), so that long and
        short strings weigh alike.
    seed : int, default=0
    """

    def __init__(
        self, k=3, weighted=False, n_features=2**20, column=None, alternate_sign=True, normalize=True, seed=0
    ):
        self.k = k
        self.weighted = weighted
        self.n_features = n_features
        self.column = column
        self.alternate_sign = alternate_sign
        self.normalize = normalize
        self.seed = seed

    def spec(self, n_raw):
        k = check_positive_int("k", self.k)
        return self._string_spec(k, 1 if self.weighted else k)


class WeightedDegreeMap(_StringMap):
    """Hashed weighted-degree features of a string column (COFFIN section 2.1.2; Sonnenburg et al. 2007).

    ``phi(s)`` has a feature for every position ``p`` and every substring
    ``s[p:p+j]``, ``j = 1 .. degree``, weighted by ``sqrt(beta_j)``, ``beta_j
    = 2 (d - j + 1) / (d (d + 1))``: ``phi(s) . phi(t)`` is the weighted
    degree kernel of ``s`` and ``t`` (up to hash collisions).  The features
    are hashed into ``n_features`` buckets incrementally, one mix per
    character, inside DOT and ADD; the cache holds the strings.

    Parameters
    ----------
    degree : int, default=8
    n_features : int, default=2**20
    column : str or None, default=None
    alternate_sign : bool, default=True
    normalize : bool, default=True
        Scale ``phi(s)`` by ``1 / sqrt(sum_j (L - j + 1) beta_j)``, its norm
        without collisions (Shogun's normalisation).
    seed : int, default=0
    """

    _positional = True

    def __init__(self, degree=8, n_features=2**20, column=None, alternate_sign=True, normalize=True, seed=0):
        self.degree = degree
        self.n_features = n_features
        self.column = column
        self.alternate_sign = alternate_sign
        self.normalize = normalize
        self.seed = seed

    def spec(self, n_raw):
        return self._string_spec(check_positive_int("degree", self.degree), 1)
