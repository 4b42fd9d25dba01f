"""The keys that choose the primal solver's band: each row's distance of its margin from 1."""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def margin_keys(X, y, cost, w, bias, out):
    """``out[i] = |y_i (x_i . w[:-1] + bias w[-1]) - 1|`` for the dense rows of ``X`` (float32 or
    float64, summed in float64), ``inf`` where ``cost[i] <= 0`` (a row that adds nothing)."""
    n, d = X.shape
    tail = bias * w[d]
    for i in range(n):
        if cost[i] <= 0.0:
            out[i] = np.inf
            continue
        z = tail
        for j in range(d):
            z += X[i, j] * w[j]
        out[i] = abs(y[i] * z - 1.0)


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
