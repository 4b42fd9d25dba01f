"""numba kernels of selective block minimization: gradients and cache selection.

SBM (Chang & Roth, KDD 2011, Algorithm 1) solves the dual on
``W = block + cache`` and then chooses, from ``W``, the rows that stay in
memory for the next block (step 4(d)).  Section 2.2 ranks rows by the
gradient of the dual ``f(alpha) = 1/2 alpha' (Q + D) alpha - e' alpha``::

    G_i = y_i w . [x_i, b] - 1 + D_ii alpha_i             (grad_i f)

    unbounded rows, 0 < alpha_i < U_i:  first, by |G_i| descending
    rows at a bound, by the shrinking score (:func:`shrinking_score`)
        g(alpha_i) = -G_i   if alpha_i = 0   and G_i > 0
                      G_i   if alpha_i = U_i and G_i < 0
                      0     otherwise (the bound is violated)
                     highest first.

``g <= 0``; the lower it is, the likelier ``alpha_i`` stays at its bound
until the end (Hsieh et al. 2008, Theorem 2), so the row is not worth its
memory.  With ``k`` problems sharing rows (one-vs-rest) a row ranks by its
best problem: unbounded in any problem beats bounded in all, then the larger
value.  A problem that gives the row no weight (``U_i = 0``) never ranks it.
Rows are kept in rank order while their bytes fit in the cache budget (a
prefix of the ranking; ties keep the order of the input).

SBM-rand keeps a uniformly random prefix instead (the paper's SBM-1/2-rand).
The Crammer-Singer ranking (section 3) is
:func:`~dask_streamsvm.kernels.crammer_singer.cs_select_informative`.
"""

import numpy as np
from numba import njit

from .rng import shuffle_prefix
from .rows import row_dot


@njit(cache=True, nogil=True)
def gradients(X, Y, D, A, W, bias, slots, G):
    """``G[c, t] = Y[c, s] W[c] . [x_s, b] - 1 + D[c, s] A[c, s]`` for ``s = slots[t]``."""
    for c in range(Y.shape[0]):
        w = W[c]
        for t in range(slots.shape[0]):
            s = slots[t]
            G[c, t] = Y[c, s] * row_dot(X, s, w, bias) - 1.0 + D[c, s] * A[c, s]


@njit(cache=True, nogil=True)
def shrinking_score(a, u, g):
    """SBM's score of a row at a bound (Chang & Roth 2011, section 2.2), ``<= 0``::

        g(alpha_i) = -G_i   if alpha_i = 0   and G_i > 0
                      G_i   if alpha_i = U_i and G_i < 0
                      0     otherwise (the bound is violated)

    for ``a = alpha_i``, ``u = U_i`` and ``g = G_i``.  The lower it is, the
    likelier ``alpha_i`` stays at its bound until the end (Hsieh et al.
    2008, Theorem 2), so the row is not worth its memory.
    """
    if a == 0.0 and g > 0.0:
        return -g
    if a == u and g < 0.0:
        return g
    return 0.0


@njit(cache=True, nogil=True)
def _best_score(alpha, grad, upper, i):
    """``(unbounded, value)`` of row ``i``: its best problem's section 2.2 score.

    Unbounded in some problem: ``(True, max |G_i|)`` over those problems;
    else ``(False, max g(alpha_i))`` (:func:`shrinking_score`).  Problems
    that give the row no weight are skipped.
    """
    unbounded = False
    value = -np.inf
    for c in range(alpha.shape[0]):
        a = alpha[c, i]
        u = upper[c, i]
        g = grad[c, i]
        if u <= 0.0:
            continue  # the row has no weight in this problem
        if a > 0.0 and a < u:
            if not unbounded:
                unbounded = True
                value = abs(g)
            elif abs(g) > value:
                value = abs(g)
        elif not unbounded:
            score = shrinking_score(a, u, g)
            if score > value:
                value = score
    return unbounded, value


@njit(cache=True, nogil=True)
def keep_prefix(order, row_bytes, budget, keep):
    """Copy ``order`` to ``keep`` while the rows' bytes fit in ``budget``; return the count."""
    used = 0
    for t in range(order.shape[0]):
        i = order[t]
        if used + row_bytes[i] > budget:
            return t
        used += row_bytes[i]
        keep[t] = i
    return order.shape[0]


@njit(cache=True, nogil=True)
def select_informative(alpha, grad, upper, row_bytes, budget, keep):
    """Rank the rows by the section 2.2 score and keep those that fit ``budget`` bytes.

    Parameters
    ----------
    alpha, grad, upper : float64 arrays ``(k, n)``
        ``alpha_i``, ``G_i`` and ``U_i`` of each row in each problem.
    row_bytes : int64 array ``(n,)``, the memory of each row
    budget : int, bytes the kept rows may occupy
    keep : int64 array ``(n,)``, filled with the kept rows' positions, best first

    Returns
    -------
    int, the number of rows kept (``keep[:count]``)
    """
    n = row_bytes.shape[0]
    unbounded = np.zeros(n, dtype=np.bool_)
    value = np.empty(n)
    for i in range(n):
        unbounded[i], value[i] = _best_score(alpha, grad, upper, i)
    by_value = np.argsort(-value, kind="mergesort")  # stable: ties keep input order
    order = np.empty(n, dtype=np.int64)
    m = 0
    for t in range(n):  # unbounded rows first, each group by value
        if unbounded[by_value[t]]:
            order[m] = by_value[t]
            m += 1
    for t in range(n):
        if not unbounded[by_value[t]]:
            order[m] = by_value[t]
            m += 1
    return keep_prefix(order, row_bytes, budget, keep)


@njit(cache=True, nogil=True)
def select_random(row_bytes, budget, rng_state, keep):
    """Keep a uniformly random prefix of the rows that fits ``budget`` bytes (SBM-rand)."""
    n = row_bytes.shape[0]
    order = np.arange(n)
    shuffle_prefix(order, n, rng_state)
    return keep_prefix(order, row_bytes, budget, keep)
