"""The keys that choose the primal solver's band: each row's distance of its margin from 1, over its
length in the band's metric; and the first read's class sums."""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def margin_keys(X, y, cost, w, bias, center, inv_scale, out):
    """``out[i] = |y_i (x_i . w[:-1] + bias w[-1]) - 1| / ||x~_i||`` for the dense rows of ``X``
    (float32 or float64, summed in float64), ``inf`` where ``cost[i] <= 0`` (a row that adds
    nothing): the distance of a row's margin from the hinge point over the length of the row in the
    band's metric, ``x~_i = ((x_i - center) * inv_scale, 1)``: a step ``d`` changes the row's
    margin by at most ``||x~_i||`` times the step's own length in that metric (the primal solver's
    ``band_certificate``)."""
    n, d = X.shape
    tail = bias * w[d]
    for i in range(n):
        if cost[i] <= 0.0:
            out[i] = np.inf
            continue
        z = tail
        q = 1.0
        for j in range(d):
            x = X[i, j]
            z += x * w[j]
            t = (x - center[j]) * inv_scale[j]
            q += t * t
        out[i] = abs(y[i] * z - 1.0) / np.sqrt(q)


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
