"""Rows as LIBSVM or Vowpal Wabbit text, fast enough for millions of rows.

Values are written in fixed point with six decimals, trailing zeros
dropped (``0.158114``, ``1``, ``-2.5``): values of the benchmarks' data are
of order one, so the text differs from the float by at most 5e-7.
"""

import numba
import numpy as np

_DECIMALS = 1_000_000


@numba.njit(cache=True)
def _put_int(buf, pos, value):
    digits = 1
    rest = value // 10
    while rest > 0:
        digits += 1
        rest //= 10
    end = pos + digits
    for k in range(end - 1, pos - 1, -1):
        buf[k] = 48 + value % 10
        value //= 10
    return end


@numba.njit(cache=True)
def _put_value(buf, pos, v):
    scaled = np.int64(np.round(abs(v) * _DECIMALS))
    if v < 0 and scaled > 0:
        buf[pos] = 45  # '-'
        pos += 1
    pos = _put_int(buf, pos, scaled // _DECIMALS)
    frac = scaled % _DECIMALS
    if frac > 0:
        buf[pos] = 46  # '.'
        pos += 1
        div = _DECIMALS // 10
        while frac > 0:
            buf[pos] = 48 + frac // div
            frac %= div
            div //= 10
            pos += 1
    return pos


@numba.njit(cache=True)
def _format(indptr, indices, data, labels, index_base, vw, buf):
    pos = 0
    for i in range(indptr.shape[0] - 1):
        label = labels[i]
        if label < 0:
            buf[pos] = 45
            pos += 1
            label = -label
        pos = _put_int(buf, pos, label)
        if vw:
            buf[pos] = 32
            buf[pos + 1] = 124  # ' |'
            pos += 2
        for k in range(indptr[i], indptr[i + 1]):
            buf[pos] = 32
            pos = _put_int(buf, pos + 1, indices[k] + index_base)
            buf[pos] = 58  # ':'
            pos = _put_value(buf, pos + 1, data[k])
        buf[pos] = 10
        pos += 1
    return pos


def write_rows(file, X, y, style):
    """Append CSR (or dense) rows ``X`` with integer labels ``y`` to the open binary ``file``.

    ``style`` is ``"libsvm"`` (one-based indices) or ``"vw"`` (``label | j:v``
    with zero-based feature names, no constant feature added by the text).
    """
    import scipy.sparse as sp

    if style not in ("libsvm", "vw"):
        raise ValueError(f"style must be 'libsvm' or 'vw', got {style!r}")
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        indptr, indices, data = X.indptr, X.indices, X.data
    else:  # dense rows: every entry, without building a CSR copy
        X = np.asarray(X)
        n, d = X.shape
        indptr = np.arange(n + 1, dtype=np.int64) * d
        indices, data = np.tile(np.arange(d, dtype=np.int64), n), X.ravel()
    nnz = indptr[-1]
    labels = np.asarray(y).astype(np.int64)
    width = 3 + 1 + 10 + 1 + 1 + 20  # ' ', index, ':', sign, digits and point of one entry
    buf = np.empty(labels.shape[0] * 8 + nnz * width, dtype=np.uint8)
    n = _format(
        indptr.astype(np.int64), indices.astype(np.int64), data.astype(np.float64),
        labels, 0 if style == "vw" else 1, style == "vw", buf,
    )  # fmt: skip
    file.write(buf[:n].tobytes())
