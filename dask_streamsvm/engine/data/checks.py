"""The checks a block of rows and its labels pass, and their messages.

What no solver can use is found here, for a partition that
:class:`~.source.DaskSource` reads and for in-memory input alike
(:mod:`dask_streamsvm._validation`): labels that are missing or infinite,
values that are NaN or infinite, rows whose ``x . x`` overflows float64,
complex values, and sparse matrices whose index arrays are inconsistent.
Each message names where the problem is (``where``: a partition and row,
or ``X, row r``), shows the value and says what to do.
"""

import math

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..plan.layout import MAGNITUDE_BITS, read_only

# -- labels ------------------------------------------------------------------------------------


def missing_labels(y):
    """Labels that are absent: NaN, None or pandas' NA."""
    if y.dtype.kind == "f":
        return np.isnan(y)
    if y.dtype.kind == "O":
        return np.asarray(pd.isna(y), dtype=bool)
    return np.zeros(y.shape[0], dtype=bool)


def invalid_labels(y):
    """Labels no class can have: missing (:func:`missing_labels`) or infinite."""
    if y.dtype.kind == "f":
        return ~np.isfinite(y)
    bad = missing_labels(y)
    if y.dtype.kind == "O" and pd.api.types.infer_dtype(y, skipna=True) not in ("string", "bytes", "empty"):
        bad = bad | np.fromiter((isinstance(v, float) and math.isinf(v) for v in y), bool, y.shape[0])
    return bad


def label_error(where, label):
    """The message for an invalid label (:func:`invalid_labels`), ``where`` naming its row."""
    problem = f"missing ({label})" if pd.isna(label) else f"infinite ({label}), not a class"
    return f"{where}: the label is {problem}. Drop such rows, or pass on_invalid='skip'."


# -- values -----------------------------------------------------------------------------------


def complex_message(what, dtype):
    """The error for complex features, ``what`` naming where they are."""
    return (
        f"{what} holds complex values (dtype {dtype}); complex values are not supported. Pass their "
        "real and imaginary parts as separate features (e.g. X.real and X.imag side by side)."
    )


def non_finite_encoded(encoder, frame):
    """Rows of ``frame`` that an encoding map cannot train on, and the first such ``(row, column,
    value)`` or None: a value the map reads is NaN or infinite (``value`` is that value; maps without
    ``non_finite_rows`` check what they read), or the row's encoded ``x . x`` overflows float64
    (``value`` is the encoded row's largest, finite: see :func:`encoded_overflow`)."""
    check = getattr(encoder, "non_finite_rows", None)
    rows, first = check(frame) if check is not None else (np.zeros(len(frame), dtype=bool), None)
    over, at = encoded_overflow(encoder, frame, rows)
    return rows | over, first if first is not None else at


def encoded_overflow(encoder, frame, skip):
    """Rows of ``frame`` (not in the mask ``skip``) whose row encoded by ``encoder`` has an ``x . x``
    that overflows float64, as in-memory input's encoded rows are checked, and the first such
    ``(row, column, value)`` (the numeric column of its largest value; the encoded row's largest
    value) or None.

    Only rows with a numeric value near float64's square root are encoded
    for it: an encoded row's values are sums of the values and token
    counts of its columns, so below ``sqrt(max) / (4 * columns)`` none
    can overflow.  That costs a comparison per numeric value.
    """
    n = len(frame)
    rows, large = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    bound = _SQRT_MAX / (4.0 * max(len(frame.columns), 1))
    numeric = [
        c
        for c in frame.columns
        if pd.api.types.is_numeric_dtype(frame[c].dtype) and not pd.api.types.is_complex_dtype(frame[c].dtype)
    ]
    top, top_column = np.zeros(n), np.zeros(n, dtype=np.intp)  # per row: its largest |value|, and where
    for j, column in enumerate(numeric):
        values = np.abs(frame[column].to_numpy(dtype=np.float64, na_value=np.nan))
        large |= values > bound  # False for NaN
        larger = values > top
        top_column[larger], top[larger] = j, values[larger]
    candidates = np.flatnonzero(large & ~skip)
    if candidates.shape[0] == 0:
        return rows, None
    encoded = encoder.encode(frame.iloc[candidates])
    over = overflowing_rows(encoded)
    rows[candidates[over]] = True
    if not over.any():
        return rows, None
    k = int(np.flatnonzero(over)[0])
    r = int(candidates[k])
    row = encoded[k].toarray().ravel() if sp.issparse(encoded) else np.asarray(encoded[k])
    return rows, (r, numeric[int(top_column[r])], float(np.max(np.abs(row))))


# A value below this bound squares to at most max / n_features: n of them cannot overflow x . x.
_SQRT_MAX = float(np.sqrt(np.finfo(np.float64).max))


def first_non_finite(values):
    """``(k, top)`` for an array's values in C order: the index of the first NaN or infinite one
    (-1 if none) and the largest magnitude before it, without allocating.  Float32 and float64
    values are first scanned for their largest magnitude alone (:func:`~...kernels.layout.largest_bits`);
    only where it is not finite are they scanned again for the first such value."""
    from ...kernels.layout import largest_bits, scan_values

    if values.size == 0 or values.dtype.kind != "f":
        return -1, 0.0
    flat = values.reshape(-1) if values.flags.c_contiguous else np.ravel(values)
    if flat.dtype in MAGNITUDE_BITS:
        unsigned, mask, infinity = MAGNITUDE_BITS[flat.dtype]
        top = largest_bits(read_only(flat.view(unsigned)), mask)  # one compiled variant a width
        if top < infinity:
            return -1, float(np.array(top, dtype=unsigned).view(flat.dtype))
    k, top = scan_values(read_only(flat))  # one compiled variant, writable input or not
    return int(k), float(top)


def overflowing_rows(X, top=None):
    """Rows of ``X`` (2-D array or CSR) of finite values whose ``x . x`` overflows float64.

    The kernels accumulate ``x . x`` (and ``w . x``) in float64; such a row
    (values near 1e154 and above) has an infinite norm and no solver can
    use it.  Costs two reductions unless some value is that large, or
    none if ``top``, the largest magnitude of the values, is known.
    """
    values = (X.data if sp.issparse(X) else X).ravel()
    rows = np.zeros(X.shape[0], dtype=bool)
    if values.size == 0 or values.dtype.kind != "f":
        return rows
    if top is None:
        top = _largest_magnitude(values)
    if not top > _SQRT_MAX / math.sqrt(max(X.shape[1], 1)):  # also False for NaN: nothing to check
        return rows
    finite = np.where(np.isfinite(values), values, 0.0).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        squares = finite * finite
        if sp.issparse(X):
            entry_rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            sq = np.bincount(entry_rows, weights=squares, minlength=X.shape[0])
        else:
            sq = squares.reshape(X.shape).sum(axis=1)
    return ~np.isfinite(sq)


def _largest_magnitude(values):
    """The largest magnitude among the finite ``values`` (1-D): :func:`first_non_finite`'s where every
    float32 or float64 one is finite (one vectorised pass over their bits), else NumPy's ``fmax``
    and ``fmin``, which skip NaN."""
    if values.dtype in MAGNITUDE_BITS:
        k, top = first_non_finite(values)
        if k < 0:
            return top
    return max(abs(float(np.fmax.reduce(values))), abs(float(np.fmin.reduce(values))))


def overflow_message(where, X, r, *, skip=True):
    """The error for row ``r`` of ``X``, whose ``x . x`` overflows, ``where`` naming the row."""
    row = X[r].toarray().ravel() if sp.issparse(X) else np.asarray(X[r])
    return _overflow_text(where, float(np.max(np.abs(row))), skip)


def _overflow_text(where, largest, skip):
    fix = ", or pass on_invalid='skip' to drop such rows" if skip else ""
    return (
        f"{where}: the row's squared norm x . x overflows float64 (its largest value is "
        f"{largest:.3g}); no solver can learn from it. The features need scaling "
        f"(e.g. sklearn.preprocessing.StandardScaler or MaxAbsScaler){fix}."
    )


def non_finite_message(where, column, value, rows):
    """The error for the value NaN or infinity in ``column`` of the row ``where`` names (``rows``: every
    row of the partition that holds one); for a finite ``value``, the error for that row's encoded
    ``x . x`` overflowing (:func:`non_finite_encoded`), as :func:`overflow_message` says it."""
    if np.isfinite(value):
        return _overflow_text(f"{where}, {column}", float(value), skip=True)
    what = "NaN" if np.isnan(value) else "infinity"
    return (
        f"{where}, {column}: the value is {what}; {int(rows.sum())} rows of the partition "
        "hold values that are not finite. Drop or impute them, or pass on_invalid='skip' to drop them."
    )


def unusable_rows(X, where, column_name, *, raising, norms=True):
    """Rows of ``X`` (a 2-D array or CSR) that no solver can use: a value NaN or infinite, or ``x . x``
    overflowing.

    With ``raising`` the first such row is a ValueError instead: ``where(r)`` names row ``r``, and
    ``column_name(j)`` column ``j`` of a dense ``X`` (a sparse one names the feature).
    ``norms=False`` leaves ``x . x`` to a later check: the rows are scaled before the solver reads
    them (:class:`~dask_streamsvm.features.Standardize`, whose ``scale_rows`` checks them).
    """
    values = X.data if sp.issparse(X) else X
    rows = np.zeros(X.shape[0], dtype=bool)
    first, top = first_non_finite(values)
    if first >= 0:  # only then the mask of every value (a bool per value)
        bad = ~np.isfinite(values)
        if sp.issparse(X):
            rows[np.searchsorted(X.indptr, np.flatnonzero(bad), side="right") - 1] = True
        else:
            rows = bad.any(axis=1)
    if rows.any() and raising:
        if sp.issparse(X):
            k = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            col, value = f"feature {int(X.indices[k])}", values[k]
        else:
            row, c = (int(v[0]) for v in np.nonzero(bad))
            col, value = column_name(c), values[row, c]
        raise ValueError(non_finite_message(where(row), col, value, rows))
    if not norms:
        return rows
    overflowing = overflowing_rows(X, top=top if first < 0 else None) & ~rows
    if overflowing.any() and raising:
        r = int(np.flatnonzero(overflowing)[0])
        raise ValueError(overflow_message(where(r), X, r))
    return rows | overflowing


# -- a computed partition as numbers -------------------------------------------------------------


def frame_rows(x, columns, dtype, p):
    """The columns ``columns`` of partition ``p``'s frame ``x`` as a C-ordered array of ``dtype``.

    Filled column by column: one copy of the data (``DataFrame.to_numpy``
    builds an F-ordered array first).  Nullable (extension) columns turn
    pandas' NA into NaN, for :func:`unusable_rows` to find.
    """
    values = np.empty((len(x), len(columns)), dtype=dtype)
    for j, column in enumerate(x.columns):
        series = x[column]
        if pd.api.types.is_complex_dtype(series.dtype):
            raise ValueError(complex_message(f"partition {p}, column {column!r}", series.dtype))
        if series.dtype.kind in "mM" or isinstance(series.dtype, pd.DatetimeTZDtype | pd.PeriodDtype):
            # pandas would give their nanoseconds (about 1.6e18 for a date of 2024) as numbers
            raise ValueError(
                f"partition {p}, column {column!r}: its values are dates or times (dtype {series.dtype}), "
                "not numbers: the partitions' types differ. Cast the column to numbers in every "
                "partition (e.g. float seconds), or drop it."
            )
        # Nullable (extension) columns turn pd.NA into NaN; a NumPy column is copied once, as is.
        missing = {"na_value": np.nan} if pd.api.types.is_extension_array_dtype(series.dtype) else {}
        try:
            values[:, j] = series.to_numpy(dtype=dtype, **missing)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"partition {p}, column {column!r}: its values (dtype {series.dtype}) are not "
                f"numbers ({exc}). Convert or drop the column, or encode it with a feature map."
            ) from None
    return values


def chunk_rows(x, p, n_features, where):
    """Partition ``p``'s computed array chunk ``x`` (``n_features`` columns) as the rows the kernels read.

    A sparse chunk becomes canonical CSR of float32 or float64, its index
    arrays checked first (:func:`check_sparse_structure`, ``where(r)``
    naming row ``r`` and ``where(None)`` the partition); a dense one a
    C-ordered float array.
    """
    if sp.issparse(x):
        if x.dtype.kind == "c":
            raise ValueError(complex_message(f"partition {p}: X", x.dtype))
        x = check_sparse_structure(x, where)
        X = sp.csr_matrix(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if X.shape[1] != n_features:
            raise ValueError(f"partition {p} has {X.shape[1]} columns, expected {n_features}.")
        return X
    values = np.asarray(x)
    if values.dtype.kind == "c":
        raise ValueError(complex_message(f"partition {p}: X", values.dtype))
    if values.dtype not in (np.float32, np.float64):
        if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
            raise ValueError(f"partition {p}: X has dtype {values.dtype}; it must be numeric.")
        values = values.astype(np.float64)
    if values.ndim != 2 or values.shape[1] != n_features:
        raise ValueError(f"partition {p} has shape {values.shape}, expected (rows, {n_features}).")
    return np.ascontiguousarray(values)


# -- sparse structure ----------------------------------------------------------------------------


def check_sparse_structure(X, where):
    """``X`` (SciPy sparse) if its index arrays are consistent, else a ValueError naming the first flaw.

    Neither SciPy's constructors nor scikit-learn's ``check_array`` look at
    the values of ``indices`` and ``indptr``, while the kernels, and SciPy's
    own conversions and products, read ``w[indices[k]]`` and
    ``data[indptr[i]:indptr[i + 1]]`` without bounds checks: an index out
    of range corrupts memory.  CSR, CSC and COO are checked here in
    ``O(nnz)`` vectorised passes, BSR by SciPy's full check; other formats
    are converted to CSR (SciPy converts them safely) and checked.
    ``where(row)`` names a row of ``X``, ``where(None)`` the matrix.  A
    matrix whose ``indptr`` ends before its storage (room SciPy allows)
    comes back trimmed to its entries, as a new matrix.
    """
    fmt = X.format
    if fmt == "bsr":
        try:
            X.copy().check_format(full_check=True)  # on a copy: the check may change the arrays
        except ValueError as exc:
            raise ValueError(f"{where(None)}: the sparse matrix is malformed: {exc}. {_REBUILD}") from None
        return X
    if fmt not in ("csr", "csc", "coo"):
        X = X.tocsr()
    row, flaw = _coo_flaw(X) if fmt == "coo" else _compressed_flaw(X)
    if flaw is not None:
        raise ValueError(f"{where(row)}: the sparse matrix is malformed: {flaw}. {_REBUILD}")
    if fmt != "coo" and X.indptr[-1] < X.indices.shape[0]:
        end = int(X.indptr[-1])
        return type(X)((X.data[:end], X.indices[:end], X.indptr), shape=X.shape)
    return X


_REBUILD = (
    "Its index arrays are inconsistent (built or changed by hand?); build it with the scipy.sparse "
    "constructors, and X.check_format(full_check=True) finds such flaws."
)


def _index_arrays_flaw(arrays, n_values):
    """What is wrong with the index ``arrays`` (name -> array), or None: they must be 1-D signed
    integers (as SciPy's routines need), and all but ``indptr`` of ``n_values`` entries."""
    for name, a in arrays.items():
        if a.ndim != 1 or a.dtype.kind != "i":
            return f"{name} must be a 1-D array of signed integers, got dtype {a.dtype} and shape {a.shape}"
        if name != "indptr" and a.shape[0] != n_values:
            return f"{name} has {a.shape[0]} entries and data {n_values}; they must match"
    return None


def _compressed_flaw(X):
    """``(row or None, flaw)`` of a CSR or CSC matrix: its first inconsistency, or ``(None, None)``."""
    csr = X.format == "csr"
    n_major, n_minor = X.shape if csr else X.shape[::-1]
    major, minor = ("row", "column") if csr else ("column", "row")
    indptr, indices = X.indptr, X.indices

    def at(i, flaw):  # a CSC matrix's flaw is in a column: it names no row
        return (i if csr else None), flaw

    if X.data.ndim != 1:
        return None, f"data must be 1-D, got shape {X.data.shape}"
    flaw = _index_arrays_flaw({"indptr": indptr, "indices": indices}, X.data.shape[0])
    if flaw is not None:
        return None, flaw
    if indptr.shape[0] != n_major + 1:
        return None, f"indptr has {indptr.shape[0]} entries; {n_major} {major}s need {n_major + 1}"
    if indptr[0] != 0:
        return None, f"indptr starts at {indptr[0]}, not 0"
    stored = indices.shape[0]
    past = np.flatnonzero(indptr > stored)
    if past.shape[0]:
        i = int(past[0]) - 1
        return at(i, f"{major} {i} ends at entry {indptr[i + 1]}, past the {stored} entries stored")
    down = np.flatnonzero(np.diff(indptr.astype(np.int64)) < 0)
    if down.shape[0]:
        i = int(down[0])
        return at(i, f"indptr decreases at {major} {i} (from {indptr[i]} to {indptr[i + 1]})")
    used = indices[: int(indptr[-1])]
    out = np.flatnonzero((used < 0) | (used >= n_minor)) if used.shape[0] else used[:0]
    if out.shape[0]:
        k = int(out[0])
        i = int(np.searchsorted(indptr, k, side="right") - 1)
        whose = "its" if csr else f"{major} {i} has a"
        return at(i, f"{whose} {minor} index {int(used[k])} is outside [0, {n_minor})")
    return None, None


def _coo_flaw(X):
    """``(row or None, flaw)`` of a COO matrix: its first inconsistency, or ``(None, None)``."""
    flaw = _index_arrays_flaw({"row": X.row, "col": X.col}, X.data.shape[0])
    if flaw is not None:
        return None, flaw
    for name, index, n, at in (("row", X.row, X.shape[0], None), ("column", X.col, X.shape[1], X.row)):
        out = np.flatnonzero((index < 0) | (index >= n))
        if out.shape[0]:
            k = int(out[0])
            return (None if at is None else int(at[k])), (
                f"entry {k} has {name} index {int(index[k])}, outside [0, {n})"
            )
    return None, None
