"""Bytes: the sizes the row cache counts, and ``cache_bytes`` as the user gives it.

:func:`stored_bytes` is what rows occupy in a :class:`~..dual.cache.RowCache`
(each row's solver state, :func:`slot_overhead`, and its values,
:func:`value_bytes`), the measure every budget of the streaming schedules is
counted in.  :func:`parse_bytes` reads ``"512MB"``, ``"2 GiB"`` or, as a
share of the training rows, ``"10%"`` (a :class:`CacheShare`, resolved by
:func:`share_bytes` once the rows are counted, :func:`row_bytes` giving a
row's bytes).
"""

import re

import numpy as np
import scipy.sparse as sp

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}  # fmt: skip


class CacheShare(float):
    """``cache_bytes="10%"``: a share of the training rows, in bytes as the row cache stores them.

    Resolved once the fit has counted the rows (:func:`share_bytes`): the share times the rows
    times the bytes per row of the first partition with rows (one more read of that partition).
    On a cluster it is a share of each worker's part.
    """

    def __repr__(self):
        return f"'{100 * float(self):g}%'"


def share_bytes(share, n_rows, row_bytes):
    """The bytes ``share`` (a :class:`CacheShare`) of ``n_rows`` rows of ``row_bytes`` each: at least 1."""
    return max(1, int(np.ceil(float(share) * n_rows * row_bytes)))


def row_bytes(source, k, feature_map=None):
    """Bytes per row as a :class:`~..dual.cache.RowCache` of ``k`` problems stores them, from the
    first partition of ``source`` with rows (0.0 if none has any)."""
    for p in range(source.n_partitions):
        block = source.load(p)
        if block.n_rows == 0:
            continue
        X = block.X
        if feature_map is not None and not sp.issparse(X):
            X = sp.csr_matrix(X)  # a feature map reads sparse rows
        values = X.nnz if sp.issparse(X) else X.size
        return stored_bytes(block.n_rows, values, k, X.dtype, sp.issparse(X)) / block.n_rows
    return 0.0


def parse_bytes(value, name="cache_bytes", share=False):
    """``512MB``, ``"2 GiB"``, ``10**9`` -> int bytes, or a ValueError naming ``name``; with
    ``share``, ``"10%"`` -> a :class:`CacheShare`."""
    if share and isinstance(value, str) and value.strip().endswith("%"):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%\s*", value)
        if not m or not 0.0 < float(m.group(1)) <= 100.0:
            raise ValueError(
                f"{name} as a share of the training data must be a percentage above 0% and at most 100%, "
                f"such as '10%', got {value!r}."
            )
        return CacheShare(float(m.group(1)) / 100.0)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        nbytes = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", value)
        unit = m.group(2).upper() if m else None
        if not m or unit not in _UNITS:
            also = ", or a share of the training data such as '10%'" if share else ""
            raise ValueError(
                f"{name} must be a number of bytes or a string such as '512MB' or '2GiB'{also}, "
                f"got {value!r}."
            )
        nbytes = int(float(m.group(1)) * _UNITS[unit])
    else:
        raise TypeError(f"{name} must be an int or a string such as '512MB', got {type(value).__name__}.")
    if nbytes <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}.")
    return nbytes


def slot_overhead(k, sparse):
    """Bytes of solver state per row of a :class:`~..dual.cache.RowCache` of ``k`` problems.

    ``gid``, ``live``, ``pos`` and ``free`` (int64), ``GAP`` (float64, the
    row's share of the duality gap), ``Y``, ``U``, ``D``, ``Qbar`` and
    ``alpha`` (float64, per problem), and ``starts`` and ``ends`` (int64)
    when sparse.
    """
    return 5 * 8 + 5 * 8 * k + (2 * 8 if sparse else 0)


def value_bytes(dtype, sparse):
    """Bytes per value a :class:`~..dual.cache.RowCache` stores: the value, and its int32 column index
    when sparse."""
    return np.dtype(dtype).itemsize + (4 if sparse else 0)


def stored_bytes(n_rows, n_values, k, dtype, sparse):
    """Bytes that ``n_rows`` rows holding ``n_values`` values in all occupy in a
    :class:`~..dual.cache.RowCache`.

    Each row's solver state (:func:`slot_overhead`) plus each value
    (:func:`value_bytes`); dense rows hold ``n_features`` values each.
    """
    return n_rows * slot_overhead(k, sparse) + n_values * value_bytes(dtype, sparse)
