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


@numba.njit(cache=True, nogil=True)
def column_tops(X, top):
    """``top[j]`` folded to the largest ``|x_ij|`` of the dense rows of ``X`` (float32 or float64), in
    one pass: the first read's value check where no moments are summed (a loss without Newton
    steps: 1.9 ms a block of 100,000 x 60 float32 fresh from a read, where :func:`class_sums` takes
    4.5 ms)."""
    n, d = X.shape
    for i in range(n):
        for j in range(d):
            a = abs(X[i, j])
            if a > top[j]:
                top[j] = a


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
def kept_rows(X, y, cost, w, reference, bias, center, inv_scale, out, u, totals):
    """One pass over the dense rows of ``X`` (float32 or float64, summed in float64) for a read of
    the band whose rows keep their dual values (the engine's ``sample_band.KeptAlphas``): each row's
    shortfall ``1 - y_i (x_i . w[:-1] + bias w[-1])`` at the point read (``out[0]``), its shortfall
    at ``reference`` (``out[1]``) and its length ``||x~_i||`` in the band's metric (``out[2]``, as
    :func:`margin_keys`'s); over
    the rows of ``cost[i] > 0``, the hinge loss at ``w`` into ``totals[0]`` and, each row at its piece
    at ``reference`` (``C_i`` where that shortfall is positive), ``sum alpha_i`` into ``totals[1]``
    and ``sum alpha_i y_i (x_i, bias)`` into ``u`` (the caller corrects the rows a solve listed)."""
    n, d = X.shape
    tail = bias * reference[d]
    for i in range(n):
        z, q = _margin_and_length(X, i, w, bias, center, inv_scale)
        z0 = tail
        for j in range(d):
            z0 += X[i, j] * reference[j]
        s = 1.0 - y[i] * z
        s0 = 1.0 - y[i] * z0
        out[0, i] = s
        out[1, i] = s0
        out[2, i] = np.sqrt(q)
        c = cost[i]
        if not c > 0.0:
            continue
        if s > 0.0:
            totals[0] += c * s
        if s0 > 0.0:
            totals[1] += c
            f = c * y[i]
            for j in range(d):
                u[j] += f * X[i, j]
            u[d] += f * bias


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


@numba.njit(cache=True, nogil=True)
def clipped_terms(m, cost, mu, alpha, weights):
    """One pass over the margins ``m`` with costs ``cost`` for the smoothed solver's step: with
    ``s_i = 1 - m_i``, ``alpha[i] = cost_i clip(s_i / mu, 0, 1)`` and ``weights[i] = cost_i / mu``
    where ``0 < s_i < mu`` and ``cost_i > 0`` (0 elsewhere: the rows of the quadratic piece, whose
    weights make the Hessian); returns ``(sum_i cost_i max(s_i, 0), sum_i alpha_i, sum_i cost_i)``,
    the last over the rows of the quadratic piece, each summed in order in float64.  A margin that is
    not a number makes the first two sums NaN (no certificate follows from them), as NumPy's would."""
    linear = total = quadratic = 0.0
    for i in range(m.shape[0]):
        s = 1.0 - m[i]
        c = cost[i]
        weights[i] = 0.0
        if s != s:
            alpha[i] = s
            linear += s
            total += s
            continue
        if s >= mu:
            a = c
        elif s > 0.0:
            a = c * (s / mu)
            if c > 0.0:
                weights[i] = c / mu
                quadratic += c
        else:
            a = 0.0
        alpha[i] = a
        total += a
        if s > 0.0:
            linear += c * s
    return linear, total, quadratic


@numba.njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def clipped_slope(m, dm, cost, t, mu):
    """The smoothed solver's line search at ``t`` along a direction that changes the margins ``m`` by
    ``dm``, in one pass: with ``r_i = 1 - m_i - t dm_i`` and ``f_i = cost_i dm_i``, returns
    ``(sum_i f_i clip(r_i / mu, 0, 1), sum_i f_i dm_i)``, the second over the rows of ``0 < r_i <
    mu``, summed in float64 in any order (no branch: the compiler vectorises the pass; the line
    search only places the step, whose point the next certificate evaluates afresh)."""
    value = curvature = 0.0
    inv = 1.0 / mu
    for i in range(m.shape[0]):
        r = 1.0 - m[i] - t * dm[i]
        f = cost[i] * dm[i]
        q = min(max(r * inv, 0.0), 1.0)
        value += f * q
        curvature += f * dm[i] if (r > 0.0) & (r < mu) else 0.0
    return value, curvature


@numba.njit(cache=True, nogil=True)
def column_moments(X, center, scale):
    """Each column's mean ``center[j]`` and standard deviation ``scale[j]`` over the dense rows of
    ``X`` (float32 or float64, summed in float64, two passes: the squares about the mean), without a
    float64 copy of the rows: the band's metric."""
    n, d = X.shape
    center[:] = 0.0
    scale[:] = 0.0
    for i in range(n):
        for j in range(d):
            center[j] += X[i, j]
    for j in range(d):
        center[j] /= max(n, 1)
    for i in range(n):
        for j in range(d):
            t = X[i, j] - center[j]
            scale[j] += t * t
    for j in range(d):
        scale[j] = np.sqrt(scale[j] / max(n, 1))
