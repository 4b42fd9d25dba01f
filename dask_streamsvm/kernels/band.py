"""The keys that choose the primal solver's band: each row's distance of its margin from 1, over its
length in the band's metric; and the first read's class sums."""

import numba
import numpy as np

from .newton import DOT_FLAGS


@numba.njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def margin_keys(X, y, cost, w, bias, center, inv_scale, out):
    """``out[i] = |y_i (x_i . w[:-1] + bias w[-1]) - 1| / ||x~_i||`` for the dense rows of ``X``
    (float32 or float64, summed in float64), ``inf`` where ``cost[i] <= 0`` (a row that adds
    nothing): the distance of a row's margin from the hinge point over the length of the row in the
    band's metric, ``x~_i = ((x_i - center) * inv_scale, 1)``: a step ``d`` changes the row's
    margin by at most ``||x~_i||`` times the step's own length in that metric (the primal solver's
    ``band_certificate``)."""
    n = X.shape[0]
    for i in range(n):
        if cost[i] <= 0.0:
            out[i] = np.inf
            continue
        z, q = _margin_and_length(X, i, w, bias, center, inv_scale)
        out[i] = abs(y[i] * z - 1.0) / np.sqrt(q)


@numba.njit(cache=True, nogil=True, inline="always", fastmath=DOT_FLAGS)
def _margin_and_length(X, i, w, bias, center, inv_scale):
    """``(x_i . w[:-1] + bias w[-1], ||x~_i||^2)`` of row ``i``, with
    ``x~_i = ((x_i - center) * inv_scale, 1)``."""
    d = X.shape[1]
    z = bias * w[d]
    q = 1.0
    for j in range(d):
        x = X[i, j]
        z += x * w[j]
        t = (x - center[j]) * inv_scale[j]
        q += t * t
    return z, q


@numba.njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def metric_norm(X, center, inv_scale):
    """The largest ``||(x_i - center) * inv_scale||^2`` over the dense rows of ``X`` (float32 or
    float64, summed in float64): how far a step of a given length in that metric can move a margin
    (the primal solver's step dual)."""
    n, d = X.shape
    largest = 0.0
    for i in range(n):
        q = 0.0
        for j in range(d):
            t = (X[i, j] - center[j]) * inv_scale[j]
            q += t * t
        if q > largest:
            largest = q
    return largest


@numba.njit(cache=True, nogil=True)
def csr_metric_norm(data, indices, indptr, inv_scale):
    """:func:`metric_norm` of CSR rows (``data``, ``indices``, ``indptr``) with center 0: the
    largest ``||x_i * inv_scale||^2``, summed in float64, without a copy of the rows."""
    largest = 0.0
    for i in range(indptr.shape[0] - 1):
        q = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            t = data[k] * inv_scale[indices[k]]
            q += t * t
        if q > largest:
            largest = q
    return largest


@numba.njit(cache=True, nogil=True)
def class_sums(X, classes, weights, first, top):
    """One pass over the dense rows of ``X`` (float32 or float64): ``first[c] += sum w_i x_i`` over
    the rows of class ``c`` (``classes[i]``, weights ``w``), summed in float64, and ``top[j]`` the
    largest ``|x_ij|`` seen: the first read's moments and value check."""
    n, d = X.shape
    for i in range(n):
        c, w = classes[i], weights[i]
        for j in range(d):
            x = X[i, j]
            a = abs(x)
            if a > top[j]:
                top[j] = a
            first[c, j] += w * x


@numba.njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def piece_rows(X, y, cost, w, bias, center, inv_scale, shortfall, keys, u, totals):
    """One pass over the dense rows of ``X`` (float32 or float64, summed in float64) at the point
    ``w`` (bias last) for the band from a sample (the engine's ``sample_band``): each row's shortfall
    ``shortfall[i] = 1 - y_i (x_i . w[:-1] + bias w[-1])`` and key ``keys[i] = |shortfall[i]| /
    ||x~_i||`` as :func:`margin_keys` (``inf`` where ``cost[i] <= 0``), and over the rows of
    ``cost[i] > 0`` and shortfall above 0 (the loss's linear piece): ``u += C_i y_i (x_i, bias)``,
    ``totals[0] += C_i shortfall[i]`` (their hinge loss) and ``totals[1] += C_i``."""
    n, d = X.shape
    for i in range(n):
        z, q = _margin_and_length(X, i, w, bias, center, inv_scale)
        s = 1.0 - y[i] * z
        shortfall[i] = s
        c = cost[i]
        if not c > 0.0:
            keys[i] = np.inf
            continue
        keys[i] = abs(s) / np.sqrt(q)
        if s > 0.0:
            f = c * y[i]
            for j in range(d):
                u[j] += f * X[i, j]
            u[d] += f * bias
            totals[0] += c * s
            totals[1] += c


@numba.njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def row_margins(X, w, bias, out):
    """``out[i] = x_i . w[:-1] + bias w[-1]`` for the dense rows of ``X`` (float32 or float64,
    summed in float64): the smoothed solver's products, without a float64 copy of the rows."""
    n, d = X.shape
    tail = bias * w[d]
    for i in range(n):
        z = tail
        for j in range(d):
            z += X[i, j] * w[j]
        out[i] = z


@numba.njit(cache=True, nogil=True)
def weighted_rows(X, r, bias, out):
    """``out += sum_i r_i (x_i, bias)`` over the dense rows of ``X`` (float32 or float64, summed in
    float64; rows of ``r_i = 0`` skipped)."""
    n, d = X.shape
    for i in range(n):
        f = r[i]
        if f == 0.0:
            continue
        for j in range(d):
            out[j] += f * X[i, j]
        out[d] += f * bias
