"""The multinomial (softmax) model's row terms: its probabilities, its loss and its dual's entropy.

For a row of scores ``z`` (one per class) and label ``y``::

    p_k = exp(z_k - max z) / sum_l exp(z_l - max z)            (softmax, no overflow)
    loss(z) = logsumexp(z) - z_y = max z + log sum_l exp(z_l - max z) - z_y

and the loss's conjugate, which the dual of
:mod:`dask_streamsvm.engine.primal.multinomial` sums, is the negative
entropy of a point ``q`` of the simplex: ``loss*(e_y - q) = sum_k q_k log
q_k`` (``0 log 0 = 0``).  The leaves take ndarrays only and fill
preallocated output, as every kernel (docs/design.md, the three layers).
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def softmax_rows(Z, y_index, cost, P):
    """``P[i] = softmax(Z[i])`` for every row, in place; returns ``sum_i cost_i (logsumexp(Z[i]) -
    Z[i, y_i])``, the rows' weighted loss (module docstring)."""
    n, k = Z.shape
    total = 0.0
    for i in range(n):
        top = Z[i, 0]
        for c in range(1, k):
            if Z[i, c] > top:
                top = Z[i, c]
        norm = 0.0
        for c in range(k):
            e = np.exp(Z[i, c] - top)
            P[i, c] = e
            norm += e
        for c in range(k):
            P[i, c] /= norm
        if cost[i] != 0.0:
            total += cost[i] * (top + np.log(norm) - Z[i, y_index[i]])
    return total


@njit(cache=True, nogil=True)
def entropy_rows(Q, cost):
    """``sum_i cost_i H(Q[i])`` with ``H(q) = -sum_k q_k log q_k`` (``0 log 0 = 0``; a ``q_k <= 0``,
    which only rounding makes, counts as 0)."""
    n, k = Q.shape
    total = 0.0
    for i in range(n):
        if cost[i] == 0.0:
            continue
        row = 0.0
        for c in range(k):
            q = Q[i, c]
            if q > 0.0:
                row -= q * np.log(q)
        total += cost[i] * row
    return total


@njit(cache=True, nogil=True)
def shift_terms(P, cost, floors, level, weight, logs, inverse):
    """The terms of the shifted dual point (:mod:`dask_streamsvm.engine.primal.multinomial_reads`),
    by level: row ``i`` (of positive cost) is of level ``j``, the first with ``floors[j] <= min_k
    P[i, k]`` (``floors`` decreasing; ``len(floors)`` where none is), written to ``level[i]``, and
    adds ``cost_i`` to ``weight[j]``, ``cost_i log P[i, k]`` to ``logs[j, k]`` and ``cost_i / P[i, k]``
    to ``inverse[j, k]``.  The levels are exclusive; a level's rows and those of the levels before
    it are the rows whose every probability is at least its floor."""
    n, k = P.shape
    L = floors.shape[0]
    for i in range(n):
        c = cost[i]
        level[i] = L
        if c == 0.0:
            continue
        low = P[i, 0]
        for m in range(1, k):
            if P[i, m] < low:
                low = P[i, m]
        j = 0
        while j < L and floors[j] > low:
            j += 1
        level[i] = j
        if j == L:
            continue
        weight[j] += c
        for m in range(k):
            logs[j, m] += c * np.log(P[i, m])
            inverse[j, m] += c / P[i, m]
