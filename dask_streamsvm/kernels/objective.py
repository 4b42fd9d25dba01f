"""Exact primal and dual pieces of the binary SVM (LIBLINEAR's objective, recomputed exactly).

::

    P(w)       = 1/2 ||w||^2 + sum_i C_i loss(y_i w . [x_i, b])
                 (the loss chosen by its code: :mod:`.losses`; the bias inside w)
    D_min(a)   = 1/2 ||w(a)||^2 + 1/2 sum_i D_ii a_i^2 - sum_i a_i
                 (LIBLINEAR's printed "Objective value"; D(a) = -D_min(a))
    gap        = P(w) + D_min(a) >= 0

The kernels return sums over rows so that a streamed pass can add up
partitions; the driver assembles the certificate.  ``D_ii`` and the box
``U_i`` of each row are :func:`~.losses.upper_and_diag`'s.
"""

from numba import njit

from .losses import weighted_loss
from .rows import n_rows, row_axpy, row_dot


@njit(cache=True, nogil=True)
def weighted_loss_sum(X, y, cost, w, bias, loss):
    """``sum_i C_i loss(y_i w . [x_i, b])`` over every row of ``X``, for the loss of code ``loss``."""
    total = 0.0
    for i in range(n_rows(X)):
        total += weighted_loss(loss, cost[i], 1.0 - y[i] * row_dot(X, i, w, bias))
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
