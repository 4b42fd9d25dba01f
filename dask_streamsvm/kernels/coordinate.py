"""Primal coordinate descent over features for the L1 and elastic-net penalties (CDN).

The problem, one binary problem of ``n`` rows and ``d`` columns (the bias a
column of constant value, regularised as any other)::

    min_w  l1 ||w||_1 + l2/2 ||w||^2 + sum_i C_i loss(m_i),   m_i = y_i w . x_i

with ``l1 > 0`` (``l1 = r``, ``l2 = 1 - r`` for the elastic net of ratio
``r``; ``l1 = 1``, ``l2 = 0`` for pure L1: LIBLINEAR's ``-s 5`` and ``-s 6``
problems) and a loss with a second derivative (the squared hinge, the
logistic loss; the leaves of :mod:`.losses` by code).

CDN (Yuan, Chang, Hsieh and Lin, "A comparison of optimization methods and
software for large-scale L1-regularized linear classification", JMLR 2010,
section 4.1, Algorithm 3; LIBLINEAR's ``solve_l1r_l2_svc``): each pass visits
the active columns in a random order; for column ``j``, with ``G`` and
``H`` the first and (generalised) second derivative in ``w_j`` of the
smooth part ``L(w) = sum_i C_i loss(m_i) + l2/2 ||w||^2``::

    G = -sum_i alpha_i y_i x_ij + l2 w_j,   alpha_i = -C_i loss'(m_i)
    H = sum_i D_ii x_ij^2 + l2,             D_ii = C_i loss''(m_i)   (at least MIN_CURVATURE)

the Newton direction is the minimiser of ``G d + H/2 d^2 + l1 |w_j + d|``::

    d = -(G + l1)/H  if G + l1 <= H w_j;  -(G - l1)/H  if G - l1 >= H w_j;  else -w_j

and the step ``t d``, ``t = 1, BETA, BETA^2, ...`` (at most MAX_LINE_SEARCH
trials), is the first to decrease the objective by Armijo's rule::

    F(w + t d e_j) - F(w) <= SIGMA t Delta,   Delta = G d + l1 (|w_j + d| - |w_j|)

where a trial is accepted without summing the loss when the loss's
curvature bound (:func:`~.losses.curvature_bound`) already proves the
decrease (LIBLINEAR's ``appxcond``).  A column at ``w_j = 0`` whose
derivative is well inside ``[-l1, l1]`` (by ``gmax_old / n_rows``, the largest
violation of the pass before over the rows, as LIBLINEAR shrinks) leaves the
active set for the rest of the pass sequence.  The kernel keeps each row's
shortfall ``s_i = 1 - m_i`` (LIBLINEAR's ``b``) up to date; the driver
rebuilds it from ``w`` before each certificate.

The columns come as a CSC triplet ``(indptr, indices, data)``: column ``j``
is ``data[indptr[j]:indptr[j + 1]]`` at the rows ``indices[...]``.
"""

import numpy as np
from numba import njit

from .losses import newton_terms, weighted_loss
from .rng import shuffle_prefix

# Armijo's sufficient decrease and the step's shrink factor (LIBLINEAR's sigma and the halving of d),
# and the trials before a column's step is given up for this pass (its max_num_linesearch).
SIGMA = 0.01
BETA = 0.5
MAX_LINE_SEARCH = 20
# The smallest second derivative a Newton direction divides by (LIBLINEAR's max(H, 1e-12)), and the
# shortest direction worth a step.
MIN_CURVATURE = 1e-12
MIN_STEP = 1e-12


@njit(cache=True, nogil=True)
def column_curvatures(cols, cost, bound, out):
    """``out[j] = bound/2 sum_i C_i x_ij^2``: the most the loss's second-order term can add per
    ``d^2`` along column ``j`` (``bound``: the loss's :func:`~.losses.curvature_bound`)."""
    indptr, indices, data = cols
    for j in range(indptr.shape[0] - 1):
        total = 0.0
        for k in range(indptr[j], indptr[j + 1]):
            v = data[k] * 1.0
            total += cost[indices[k]] * v * v
        out[j] = 0.5 * bound * total


@njit(cache=True, nogil=True)
def violation(g, w_j, l1):
    """How far ``w_j`` is from optimal in its coordinate: the smallest ``|G + l1 sign|`` over the
    subgradient of ``l1 |w_j|`` (0 at an optimal coordinate)."""
    if w_j > 0.0:
        return abs(g + l1)
    if w_j < 0.0:
        return abs(g - l1)
    if g + l1 < 0.0:
        return -(g + l1)
    if g - l1 > 0.0:
        return g - l1
    return 0.0


@njit(cache=True, nogil=True)
def newton_direction(g, h, w_j, l1):
    """The minimiser ``d`` of ``g d + h/2 d^2 + l1 |w_j + d|`` (a soft threshold)."""
    if g + l1 <= h * w_j:
        return -(g + l1) / h
    if g - l1 >= h * w_j:
        return -(g - l1) / h
    return -w_j


@njit(cache=True, nogil=True)
def _column_derivatives(cols, j, y, cost, code, s):
    """``(G_loss, H_loss)``: the loss's first and second derivative in ``w_j``."""
    indptr, indices, data = cols
    g = 0.0
    h = 0.0
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        v = data[k] * y[i]
        _, alpha, weight = newton_terms(code, cost[i], s[i])
        g -= alpha * v
        h += weight * v * v
    return g, h


@njit(cache=True, nogil=True)
def _loss_change(cols, j, y, cost, code, s, step):
    """``sum_i C_i (loss(m_i + step y_i x_ij) - loss(m_i))`` over the rows of column ``j``."""
    indptr, indices, data = cols
    change = 0.0
    for k in range(indptr[j], indptr[j + 1]):
        i = indices[k]
        if cost[i] > 0.0:
            shifted = s[i] - step * data[k] * y[i]
            change += weighted_loss(code, cost[i], shifted) - weighted_loss(code, cost[i], s[i])
    return change


@njit(cache=True, nogil=True)
def line_search(cols, j, y, cost, code, s, w_j, d, g_loss, penalty, curvature):
    """The step ``t d`` Armijo's rule accepts along column ``j`` from ``w_j`` (module docstring):
    ``(step, trials)``, ``step = 0.0`` when MAX_LINE_SEARCH trials found none.

    ``g_loss``: the loss's derivative alone; ``penalty = (l1, l2)``; ``curvature``: the column's
    :func:`column_curvatures` entry."""
    l1, l2 = penalty
    g = g_loss + l2 * w_j
    delta = g * d + l1 * (abs(w_j + d) - abs(w_j))
    for trial in range(MAX_LINE_SEARCH):
        moved = w_j + d
        regular = l1 * (abs(moved) - abs(w_j)) + 0.5 * l2 * (moved * moved - w_j * w_j)
        cond = regular - SIGMA * delta
        if cond + g_loss * d + curvature * d * d <= 0.0:  # the curvature bound proves the decrease
            return d, trial + 1
        if cond + _loss_change(cols, j, y, cost, code, s, d) <= 0.0:
            return d, trial + 1
        d *= BETA
        delta *= BETA
    return 0.0, MAX_LINE_SEARCH


@njit(cache=True, nogil=True)
def cdn_pass(cols, y, cost, code, penalty, w, s, index, active, gmax_old, curvature, rng_state):
    """One CDN pass over the active columns ``index[:active]`` (module docstring), in place on
    ``w``, the shortfalls ``s`` and ``index``.

    Returns ``(active, gmax, gnorm1, refused)``: the active columns left after shrinking, the
    largest and the sum of the visited columns' violations (:func:`violation`, at the start of
    each column's step), and how many columns' line searches found no step.
    """
    indptr, indices, data = cols
    l1, l2 = penalty
    n_rows = y.shape[0]
    shrink = gmax_old / n_rows
    shuffle_prefix(index, active, rng_state)
    gmax = 0.0
    gnorm1 = 0.0
    refused = 0
    s_pos = 0
    while s_pos < active:
        j = index[s_pos]
        g_loss, h_loss = _column_derivatives(cols, j, y, cost, code, s)
        w_j = w[j]
        g = g_loss + l2 * w_j
        h = max(h_loss + l2, MIN_CURVATURE)
        if w_j == 0.0 and g + l1 > shrink and g - l1 < -shrink:
            active -= 1
            index[s_pos], index[active] = index[active], index[s_pos]
            continue
        v = violation(g, w_j, l1)
        gmax = max(gmax, v)
        gnorm1 += v
        s_pos += 1
        d = newton_direction(g, h, w_j, l1)
        if abs(d) < MIN_STEP:
            continue
        step, _ = line_search(cols, j, y, cost, code, s, w_j, d, g_loss, penalty, curvature[j])
        if step == 0.0:
            refused += 1
            continue
        w[j] = w_j + step
        for k in range(indptr[j], indptr[j + 1]):
            i = indices[k]
            s[i] -= step * data[k] * y[i]
    return active, gmax, gnorm1, refused


@njit(cache=True, nogil=True)
def model_descent(H, g, w, l1, tol, max_sweeps, d):
    """Coordinate descent, in place on ``d``, on the quadratic model of a Newton read: the step ``d``
    that minimises::

        q(d) = g . d + 1/2 d^T H d + l1 ||w + d||_1

    (``H``: the read's Hessian of the smooth part, the penalty's ``l2`` on its diagonal; ``g`` its
    gradient at ``w``), the direction of newGLMNET (Yuan, Ho and Lin, JMLR 2012) formed from sums
    over rows, so that out of core one read gives it.  Each sweep visits every coordinate in
    order, with the model's exact derivative ``g_j + (H d)_j`` and curvature ``H_jj`` (at least
    :data:`MIN_CURVATURE`) in :func:`newton_direction`, and keeps ``H d`` up to date.  It stops after
    a sweep whose largest :func:`violation` (before its moves) is at most ``tol``, or after
    ``max_sweeps``: ``(sweeps, largest violation of the last sweep)``."""
    n = g.shape[0]
    Hd = H @ d
    largest = 0.0
    for sweep in range(max_sweeps):
        largest = 0.0
        for j in range(n):
            G = g[j] + Hd[j]
            u = w[j] + d[j]
            largest = max(largest, violation(G, u, l1))
            h = max(H[j, j], MIN_CURVATURE)
            z = newton_direction(G, h, u, l1)
            if z != 0.0:
                d[j] += z
                for i in range(n):
                    Hd[i] += z * H[j, i]  # H is symmetric: its row j, stored contiguously
        if largest <= tol:
            return sweep + 1, largest
    return max_sweeps, largest


@njit(cache=True, nogil=True)
def columns_model_descent(cols, D, order, g, w, l1, ridge, tol, max_sweeps, d, q):
    """:func:`model_descent` where the model's Hessian is held as the rows' columns, never formed:
    ``H = ridge I + X~^T diag(D) X~`` (``cols``: the CSC triplet of the rows with their bias column,
    ``D`` the rows' second derivatives, ``ridge`` the penalty's ``l2`` plus the model's ridge), the
    coordinates ``order`` visited in turn (a sparse penalty's free weights).  newGLMNET's inner loop
    (Yuan, Ho and Lin, JMLR 2012): the model's derivative in ``d_j`` is ``g_j + ridge d_j + sum_i
    D_i x_ij q_i`` with ``q = X~ d`` kept up to date, in place with ``d``, so a sweep costs the free
    columns' nonzeros twice, where the formed Hessian costs their count squared.  The curvatures
    ``H_jj`` are summed once.  Stops as :func:`model_descent`: ``(sweeps, largest violation)``."""
    indptr, indices, data = cols
    m = order.shape[0]
    h = np.empty(m)
    for k in range(m):
        j = order[k]
        total = ridge
        for p in range(indptr[j], indptr[j + 1]):
            x = data[p] * 1.0
            total += D[indices[p]] * x * x
        h[k] = max(total, MIN_CURVATURE)
    largest = 0.0
    for sweep in range(max_sweeps):
        largest = 0.0
        for k in range(m):
            j = order[k]
            G = g[j] + ridge * d[j]
            for p in range(indptr[j], indptr[j + 1]):
                i = indices[p]
                G += D[i] * data[p] * q[i]
            u = w[j] + d[j]
            largest = max(largest, violation(G, u, l1))
            z = newton_direction(G, h[k], u, l1)
            if z != 0.0:
                d[j] += z
                for p in range(indptr[j], indptr[j + 1]):
                    q[indices[p]] += z * data[p]
        if largest <= tol:
            return sweep + 1, largest
    return max_sweeps, largest
