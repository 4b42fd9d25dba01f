"""Slow pure-NumPy references for the numba kernels.

Written from the maths (Hsieh et al. 2008, Algorithm 1, with LIBLINEAR's
shrinking rules as described in shared/notes/solvers.md section 1), on dense
float64 rows, one coordinate at a time.  Only the permutation is shared with
the kernel (``shuffle_prefix``), so that both visit rows in the same order.
"""

import numpy as np

from dask_streamsvm.kernels.rng import shuffle_prefix


def reference_dcd_pass(X, y, upper, diag, bias, index, active_size, alpha, w, eps, pg_old, rng_state):
    """One DCD pass; returns ``(active_size, pg_max, pg_min, pg_old_next, converged)``.

    ``X`` is dense; ``w`` has the bias weight last; ``pg_old`` is
    ``(pg_max_old, pg_min_old)``.  ``index``, ``alpha`` and ``w`` change in place.
    """
    Xb = np.hstack([np.asarray(X, dtype=np.float64), np.full((X.shape[0], 1), bias)])
    n = index.shape[0]
    pg_max_old, pg_min_old = pg_old
    shuffle_prefix(index, active_size, rng_state)
    pg_max, pg_min = -np.inf, np.inf
    s = 0
    while s < active_size:
        i = index[s]
        G = y[i] * (Xb[i] @ w) - 1.0 + diag[i] * alpha[i]
        PG = 0.0
        shrink = False
        if alpha[i] == 0.0:
            shrink = G > pg_max_old
            PG = min(G, 0.0)
        elif alpha[i] == upper[i]:
            shrink = G < pg_min_old
            PG = max(G, 0.0)
        else:
            PG = G
        if shrink:
            active_size -= 1
            index[s], index[active_size] = index[active_size], index[s]
            continue
        pg_max, pg_min = max(pg_max, PG), min(pg_min, PG)
        if abs(PG) > 1e-12:
            q = Xb[i] @ Xb[i] + diag[i]
            if q > 0:
                new = min(max(alpha[i] - G / q, 0.0), upper[i])
            else:
                new = upper[i]
            w += (new - alpha[i]) * y[i] * Xb[i]
            alpha[i] = new
        s += 1
    if pg_max - pg_min <= eps and abs(pg_max) <= eps and abs(pg_min) <= eps:
        if active_size == n:
            return active_size, pg_max, pg_min, (pg_max_old, pg_min_old), True
        return n, pg_max, pg_min, (np.inf, -np.inf), False
    nxt_max = np.inf if pg_max <= 0 else pg_max
    nxt_min = -np.inf if pg_min >= 0 else pg_min
    return active_size, pg_max, pg_min, (nxt_max, nxt_min), False


def reference_primal(X, y, cost, w, bias, squared):
    """``1/2 ||w||^2 + sum_i C_i loss_i`` on dense rows."""
    Xb = np.hstack([np.asarray(X, dtype=np.float64), np.full((X.shape[0], 1), bias)])
    xi = np.maximum(0.0, 1.0 - y * (Xb @ w))
    return 0.5 * w @ w + cost @ (xi**2 if squared else xi)


def reference_dual(X, y, diag, alpha, bias):
    """``sum alpha - 1/2 ||w(alpha)||^2 - 1/2 sum D_ii alpha_i^2`` (maximisation form)."""
    Xb = np.hstack([np.asarray(X, dtype=np.float64), np.full((X.shape[0], 1), bias)])
    w = Xb.T @ (alpha * y)
    return alpha.sum() - 0.5 * w @ w - 0.5 * diag @ alpha**2


def meb_points(X, signs, C, bias=1.0):
    """The one-pass SVM's ball: rows ``[y x~ ; C^(-1/2) e_n]`` with ``x~ = [x, bias]`` at unit norm."""
    Xb = np.hstack([np.asarray(X, dtype=np.float64), np.full((X.shape[0], 1), bias)])
    Xb /= np.linalg.norm(Xb, axis=1, keepdims=True)
    return np.hstack([np.asarray(signs, dtype=np.float64)[:, None] * Xb, np.eye(X.shape[0]) / np.sqrt(C)])


def exact_enclosing_ball(points):
    """``(centre, radius)`` of the minimum ball enclosing ``points`` (rows of equal norm).

    The dual QP ``min a'Ka`` over the simplex (the linear term of the MEB
    dual is constant when the norms are equal), solved by SLSQP.
    """
    from scipy.optimize import minimize

    K = points @ points.T
    n = K.shape[0]
    res = minimize(
        lambda a: a @ K @ a, np.full(n, 1.0 / n), jac=lambda a: 2 * K @ a, bounds=[(0, None)] * n,
        constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1.0, "jac": lambda a: np.ones(n)}],
        method="SLSQP", options={"maxiter": 1000, "ftol": 1e-15},
    )  # fmt: skip
    centre = res.x @ points
    return centre, float(np.sqrt(np.max(np.sum((points - centre) ** 2, axis=1))))
