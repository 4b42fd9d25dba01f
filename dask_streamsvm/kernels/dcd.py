"""Dual coordinate descent for the binary linear models: the L1- and L2-loss SVM, logistic regression.

Problem (Hsieh, Chang, Lin, Keerthi & Sundararajan, ICML 2008, eq. 4;
LIBLINEAR ``solve_l2r_l1l2_svc``)::

    min_alpha  1/2 alpha' (Q + D) alpha - e' alpha
    s.t.       0 <= alpha_i <= U_i,        Q_ij = y_i y_j [x_i, b] . [x_j, b]

    U_i and D_ii from the loss and C_i: :func:`~.losses.upper_and_diag`
    (L1 loss: U_i = C_i, D_ii = 0; L2 loss: U_i = inf, D_ii = 1 / (2 C_i);
    rows of C_i = 0: U_i = D_ii = 0)

or, for logistic regression (Yu, Huang & Lin, Machine Learning 2011, eq. 4;
LIBLINEAR ``solve_l2r_lr_dual``), the same quadratic with the entropy
``sum_i alpha_i log alpha_i + (C_i - alpha_i) log(C_i - alpha_i)`` in place
of ``-e' alpha`` on the box ``0 <= alpha_i <= C_i``.  ``w = sum_i alpha_i y_i
[x_i, b]`` is kept up to date.  One coordinate step on row i (Hsieh et al.,
Algorithm 1; the loss's leaves, :func:`~.losses.dual_gradient` and
:func:`~.losses.dual_step`)::

    m  = y_i w . [x_i, b]
    G  = m - 1 + D_ii alpha_i                 (logistic: m + log(alpha_i / (C_i - alpha_i)))
    PG = projected gradient (G clipped at the active bound)
    alpha_i <- min(max(alpha_i - G / Qbar_ii, 0), U_i),   Qbar_ii = Q_ii + D_ii
                                              (logistic: the 1-D entropy problem's root, by Newton)
    w       <- w + (alpha_i_new - alpha_i_old) y_i [x_i, b]

Shrinking follows LIBLINEAR 2.4x's ``solve_l2r_l1l2_svc`` exactly: a bound
variable whose gradient points outside the box by more than last pass's
extreme projected gradient leaves the active set; each pass draws a fresh
permutation of the active set; when the active set looks optimal
(``M - m <= eps`` and ``|M|, |m| <= eps``) it is restored to all rows and
the pass repeats before convergence is declared.  A logistic row is at an
end of its box only where its optimum is closer to it than a float can
say (:data:`~.losses.EDGE`), so it is almost never shrunk, as LIBLINEAR
never shrinks one; its test ``max |G| <= eps`` is LIBLINEAR's.

The kernel works on any subset of rows (``index``) with persistent
``alpha`` and ``w``, so the out-of-core schedules call it on cached rows.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .losses import dual_gradient, dual_step
from .rng import shuffle_prefix
from .rows import n_rows, prefetch, row_axpy, row_dot, row_prefetch, row_prefetch_start, row_sqnorm

# LIBLINEAR skips coordinates whose projected gradient is below this.
PG_SKIP = 1e-12

ProblemArrays = namedtuple("ProblemArrays", "y upper diag qd loss")
ProblemArrays.__doc__ = """A binary problem's per-row arrays, float64 and indexed by row id, and its loss.

``y`` (+1/-1), ``upper`` (``U_i``), ``diag`` (``D_ii``) and ``qd``
(``Qbar_ii = ||[x_i, b]||^2 + D_ii``); ``U_i`` and ``D_ii`` follow from
the loss and ``C_i`` (:func:`~.losses.upper_and_diag`); ``loss`` is the
loss's code (:mod:`.losses`), which picks the coordinate step.
"""

Shrinking = namedtuple("Shrinking", "active_size pg_max_old pg_min_old")
Shrinking.__doc__ = """Where :func:`dcd_passes` left its shrinking: the active set's size and last thresholds.

``Shrinking(n, inf, -inf)`` starts afresh on ``n`` rows; a call's
``(active_size, pg_max_old, pg_min_old)`` outputs continue it.
"""


@njit(cache=True, nogil=True)
def dcd_passes(X, problem, index, alpha, w, bias, max_passes, eps, shrinking, rng_state, sigma=1.0):
    """Run up to ``max_passes`` DCD passes over the rows ``index``.

    Parameters
    ----------
    X : 2-D float32/float64 array or CSR tuple ``(indptr, indices, data)``
    problem : :data:`ProblemArrays` ``(y, upper, diag, qd, loss)``
        ``y_i`` (+1/-1), ``U_i``, ``D_ii`` and ``Qbar_ii = ||[x_i, b]||^2 +
        D_ii``: float64 arrays indexed by row id; the loss's code.
    index : int64 array of row ids, permuted and shrunk in place
        Its first ``shrinking.active_size`` entries are the active set.
    alpha : float64 array indexed by row id, updated in place
    w : float64 array of length n_features + 1, updated in place
    bias : float
        Value of the constant bias feature (0.0 for no intercept).
    max_passes : int
    eps : float
        Projected-gradient tolerance of the active-set stopping test.
    shrinking : :data:`Shrinking` ``(active_size, pg_max_old, pg_min_old)``
        The active set's size and the shrinking thresholds carried over
        from the previous call (``Shrinking(len(index), inf, -inf)`` to
        start afresh).  A bound variable is shrunk when its gradient points
        out of the box by more than the thresholds: ``alpha_i = 0`` and
        ``G > pg_max_old``, or ``alpha_i = U_i`` and ``G < pg_min_old``.
    rng_state : uint64 array of length 1, advanced in place
    sigma : float, default=1.0
        CoCoA+'s ``sigma'``: each step adds ``sigma * delta_i y_i x_i`` to
        ``w``, and ``qd`` must then hold ``sigma ||[x_i, b]||^2 + D_ii``.
        With ``sigma = K`` the rows are one of ``K`` parts whose updates,
        made against the same ``w`` and added, still increase the dual
        (Ma, Smith, Jaggi et al. 2015); ``w - w_start`` is then ``sigma``
        times this part's own change.

    Returns
    -------
    passes, active_size, pg_max, pg_min, pg_max_old, pg_min_old, converged
        ``pg_max``/``pg_min`` are the extreme projected gradients of the
        last pass; ``(active_size, pg_max_old, pg_min_old)`` is the
        shrinking state for the next call; ``converged`` is true when that
        pass covered every row of ``index`` and met the projected-gradient
        test.
    """
    y, upper, diag, qd, code = problem
    active_size, pg_max_old, pg_min_old = shrinking
    n = index.shape[0]
    passes = 0
    converged = False
    pg_max = -np.inf
    pg_min = np.inf
    while passes < max_passes:
        shuffle_prefix(index, active_size, rng_state)
        pg_max = -np.inf
        pg_min = np.inf
        s = 0
        while s < active_size:
            if s + 2 < active_size:
                row_prefetch_start(X, index[s + 2])
            if s + 1 < active_size:
                nxt = index[s + 1]
                row_prefetch(X, nxt)
                prefetch(alpha, nxt)
                prefetch(y, nxt)
                prefetch(qd, nxt)
            i = index[s]
            r = np.uint64(i)  # unsigned: no wraparound code on the accesses below
            yi = y[r]
            a = alpha[r]
            u = upper[r]
            m = yi * row_dot(X, i, w, bias)
            g = dual_gradient(code, m, a, u, diag[r])
            pg = 0.0
            if a == 0.0:
                if g > pg_max_old:
                    active_size -= 1
                    index[s] = index[active_size]
                    index[active_size] = i
                    continue
                if g < 0.0:
                    pg = g
            elif a == u:
                if g < pg_min_old:
                    active_size -= 1
                    index[s] = index[active_size]
                    index[active_size] = i
                    continue
                if g > 0.0:
                    pg = g
            else:
                pg = g
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            if abs(pg) > PG_SKIP:
                new = dual_step(code, m, g, a, u, qd[r])
                alpha[r] = new
                row_axpy(X, i, (new - a) * yi * sigma, w, bias)
            s += 1
        passes += 1
        if pg_max - pg_min <= eps and abs(pg_max) <= eps and abs(pg_min) <= eps:
            if active_size == n:
                converged = True
                break
            active_size = n
            pg_max_old = np.inf
            pg_min_old = -np.inf
            continue
        pg_max_old = pg_max
        pg_min_old = pg_min
        if pg_max_old <= 0.0:
            pg_max_old = np.inf
        if pg_min_old >= 0.0:
            pg_min_old = -np.inf
    return passes, active_size, pg_max, pg_min, pg_max_old, pg_min_old, converged


@njit(cache=True, nogil=True)
def row_sqnorms(X, bias, out):
    """``out[i] = ||[x_i, bias]||^2`` for every row."""
    for i in range(n_rows(X)):
        out[i] = row_sqnorm(X, i, bias)
