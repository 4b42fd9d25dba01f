"""Exact primal and dual pieces of the binary SVM (LIBLINEAR's objective, recomputed exactly).

::

    P(w)       = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i w . [x_i, b])^p
                 (p = 1 hinge, p = 2 squared hinge; the bias inside w)
    D_min(a)   = 1/2 ||w(a)||^2 + 1/2 sum_i D_ii a_i^2 - sum_i a_i
                 (LIBLINEAR's printed "Objective value"; D(a) = -D_min(a))
    gap        = P(w) + D_min(a) >= 0

The kernels return sums over rows so that a streamed pass can add up
partitions; the driver assembles the certificate.
"""

import numpy as np
from numba import njit

from .rows import n_rows, row_axpy, row_dot


@njit(cache=True, nogil=True)
def weighted_loss_sum(X, y, cost, w, bias, squared):
    """``sum_i C_i loss(y_i w . [x_i, b])`` over every row of ``X``."""
    total = 0.0
    for i in range(n_rows(X)):
        xi = 1.0 - y[i] * row_dot(X, i, w, bias)
        if xi > 0.0:
            if squared:
                total += cost[i] * xi * xi
            else:
                total += cost[i] * xi
    return total


@njit(cache=True, nogil=True)
def add_weighted_rows(X, y, alpha, w, bias):
    """``w += sum_i alpha_i y_i [x_i, b]`` (rebuilds ``w(alpha)`` from zero)."""
    for i in range(n_rows(X)):
        a = alpha[i]
        if a != 0.0:
            row_axpy(X, i, a * y[i], w, bias)


@njit(cache=True, nogil=True)
def decision_values(X, w, bias, out):
    """``out[i] = w . [x_i, b]`` for every row."""
    for i in range(n_rows(X)):
        out[i] = row_dot(X, i, w, bias)


# D_ii = 1 / (2 C_i) of the squared hinge, capped: a C_i so small that the quotient overflows
# (a subnormal weight) gives a huge finite D_ii, so D_ii * alpha_i stays 0 at alpha_i = 0.
MAX_DIAG = 1e300


@njit(cache=True, nogil=True)
def upper_and_diag(cost, squared):
    """``(U_i, D_ii)`` of a row of weight ``C_i = cost`` in the binary dual (Hsieh et al. 2008, eq. 4).

    ::

        C_i <= 0                 U_i = 0,     D_ii = 0      (the row has no weight: alpha_i = 0)
        hinge (L1 loss)          U_i = C_i,   D_ii = 0
        squared hinge (L2 loss)  U_i = inf,   D_ii = min(1 / (2 C_i), MAX_DIAG)

    The one definition of the rule: the row cache applies it row by row,
    the in-memory and cluster schedules through :func:`upper_and_diag_arrays`.
    """
    if cost <= 0.0:
        return 0.0, 0.0
    if squared:
        return np.inf, min(0.5 / cost, MAX_DIAG)
    return cost, 0.0


@njit(cache=True, nogil=True)
def _fill_upper_and_diag(cost, squared, upper, diag):
    for i in range(cost.shape[0]):
        upper[i], diag[i] = upper_and_diag(cost[i], squared)


def upper_and_diag_arrays(cost, squared):
    """``(U, D)``: :func:`upper_and_diag` of every entry of the float64 array ``cost`` (any shape)."""
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    upper = np.empty_like(cost)
    diag = np.empty_like(cost)
    _fill_upper_and_diag(cost.reshape(-1), bool(squared), upper.reshape(-1), diag.reshape(-1))
    return upper, diag
