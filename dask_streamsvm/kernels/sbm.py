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

The block's solve (step 4(c)) is :func:`block_sweep`: one DCD pass of
every one-vs-rest problem over the row memory's slots in one call, with
LIBLINEAR's shrinking carried from sweep to sweep and from block to block,
and the rows' gap shares summed as the sweep visits them.
"""

import numpy as np
from numba import njit

from .dcd import PG_SKIP
from .losses import dual_gradient, dual_step, row_gap
from .rng import shuffle_prefix
from .rows import prefetch, row_axpy, row_dot, row_prefetch, row_prefetch_start


@njit(cache=True, nogil=True)
def gradients(X, Y, U, D, A, W, bias, loss, slots, G):
    """``G[c, t]``, the dual gradient of row ``s = slots[t]`` in problem ``c`` (:func:`~.losses.dual_gradient`
    of the loss of code ``loss``: ``Y[c, s] W[c] . [x_s, b] - 1 + D[c, s] A[c, s]`` for the hinges)."""
    for c in range(Y.shape[0]):
        w = W[c]
        for t in range(slots.shape[0]):
            s = slots[t]
            G[c, t] = dual_gradient(loss, Y[c, s] * row_dot(X, s, w, bias), A[c, s], U[c, s], D[c, s])


@njit(cache=True, nogil=True)
def gradients_and_gap(X, Y, U, D, A, W, bias, loss, slots, G):
    """:func:`gradients` and the rows' duality gap in one read of the rows; returns the gap.

    ``G[c, t]`` as :func:`gradients` gives it, and ``sum_t sum_c gap_tc``
    over the problems that give the row weight (``U > 0``), each
    :func:`~.losses.row_gap` of the loss of code ``loss``: the measure of a
    block's solve (:func:`~dask_streamsvm.engine.dual.sbm.passes_to_gap`), whose
    last value leaves ``G`` ready for the cache selection.  Summed row by
    row, problems inner, as :func:`~.cache.cache_objective` sums it.
    """
    total = 0.0
    for t in range(slots.shape[0]):
        s = slots[t]
        gap = 0.0
        for c in range(Y.shape[0]):
            m = Y[c, s] * row_dot(X, s, W[c], bias)
            g = dual_gradient(loss, m, A[c, s], U[c, s], D[c, s])
            G[c, t] = g
            if U[c, s] == 0.0:
                continue
            gap += row_gap(loss, m, g, A[c, s], U[c, s], D[c, s])
        total += gap
    return total


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
def _kth_smallest(keys, k):
    """``np.partition(keys, k)[k]``: the ``k``-th smallest of ``keys`` (0-based), NaNs counted largest.

    Hoare's selection on a copy (expected linear time).  Written out
    because numba's ``np.partition`` compiles a quicksort, ``np.unique``
    and an error message for its checks, many times the code of this
    function.
    """
    a = keys.copy()
    lo, hi = 0, a.shape[0] - 1
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while _before(a[i], pivot):
                i += 1
            while _before(pivot, a[j]):
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return a[k]


@njit(cache=True, nogil=True)
def _before(a, b):
    """``a < b`` with NaN after every number (NumPy's sort order)."""
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True)
def _top_of_group(members, keys, m):
    """The ``m`` best of ``members`` (row positions, ascending), ranked: key ascending, then position.

    ``keys[t]`` is member ``t``'s key (minus its score).  Returns their
    positions in rank order.  The ``m``-th smallest key is found by a
    partial selection (:func:`_kth_smallest`, linear); the members below it and
    the first (by position) that equal it are then sorted, stably, so the
    order is the one a stable sort of every member gives: O(g + m log m)
    for ``g`` members instead of O(g log g).
    """
    g = members.shape[0]
    if m >= g:
        return members[np.argsort(keys, kind="mergesort")]  # stable: ties keep input order
    cut = _kth_smallest(keys, m - 1)
    ties = m
    for t in range(g):
        if keys[t] < cut:
            ties -= 1  # what is left are the members at the cut that make the top m
    picked = np.empty(m, dtype=np.int64)
    picked_keys = np.empty(m)
    j = 0
    for t in range(g):
        key = keys[t]
        if key < cut or (key == cut and ties > 0):
            if key == cut:
                ties -= 1
            picked[j] = members[t]
            picked_keys[j] = key
            j += 1
    if j < m:  # a NaN key (the selection puts them last, but they equal nothing): sort them all
        return members[np.argsort(keys, kind="mergesort")][:m]
    return picked[np.argsort(picked_keys, kind="mergesort")]


@njit(cache=True, nogil=True)
def _keep_from_group(members, value, row_bytes, budget, keep, m_kept):
    """Keep the rank-order prefix of ``members`` that fits ``budget`` (:func:`keep_prefix`), partially sorted.

    Only as many of the group's best rows as can fit are ranked
    (:func:`_top_of_group`): first the number the group's mean row would
    give, doubled until the prefix ends inside the ranked rows.  Returns
    ``(rows kept, bytes used, whether a row did not fit)``; the kept rows'
    positions go to ``keep[m_kept:]``.
    """
    g = members.shape[0]
    if g == 0:
        return 0, 0, False
    total = 0
    keys = np.empty(g)
    for t in range(g):
        total += row_bytes[members[t]]
        keys[t] = -value[members[t]]
    m = g if total <= budget else min(g, int(budget * g / max(total, 1)) + 16)
    while True:
        top = _top_of_group(members, keys, m)
        used = 0
        for t in range(m):
            i = top[t]
            if used + row_bytes[i] > budget:
                return t, used, True
            used += row_bytes[i]
            keep[m_kept + t] = i
        if m == g:
            return m, used, False
        m = min(g, 2 * m)


@njit(cache=True, nogil=True)
def select_informative(alpha, grad, upper, row_bytes, budget, keep):
    """Rank the rows by the section 2.2 score and keep those that fit ``budget`` bytes.

    The kept rows are the prefix of the ranking (unbounded rows first,
    each group by value descending, ties in input order) whose bytes fit:
    the first row that does not fit ends it.  Only the rows that can be
    in that prefix are sorted (:func:`_keep_from_group`); the result is
    the full stable sort's.

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
    n_unbounded = 0
    for i in range(n):
        unbounded[i], value[i] = _best_score(alpha, grad, upper, i)
        n_unbounded += unbounded[i]
    first = np.empty(n_unbounded, dtype=np.int64)
    second = np.empty(n - n_unbounded, dtype=np.int64)
    a = b = 0
    for i in range(n):  # each group in input order
        if unbounded[i]:
            first[a] = i
            a += 1
        else:
            second[b] = i
            b += 1
    # np.int64(0), not 0: numba compiles a literal argument as a variant of its own
    kept, used, stopped = _keep_from_group(first, value, row_bytes, budget, keep, np.int64(0))
    if stopped:
        return kept
    more, _, _ = _keep_from_group(second, value, row_bytes, budget - used, keep, kept)
    return kept + more


@njit(cache=True, nogil=True)
def select_random(row_bytes, budget, rng_state, keep):
    """Keep a uniformly random prefix of the rows that fits ``budget`` bytes (SBM-rand)."""
    n = row_bytes.shape[0]
    order = np.arange(n)
    shuffle_prefix(order, n, rng_state)
    return keep_prefix(order, row_bytes, budget, keep)


@njit(cache=True, nogil=True)
def block_sweep(X, slot_values, W, bias, loss, index, active, shrink, done, eps, rng_state):
    """One DCD pass of each unfinished problem over its active slots; ``(visits, gap seen)``.

    The pass of :func:`~.dcd.dcd_passes` (Hsieh et al. 2008, Algorithm 1,
    with LIBLINEAR's shrinking) run for each problem ``c`` with ``not
    done[c]``, on the row memory's per-slot arrays ``slot_values = (Y,
    U, D, QD, A)``, each ``(k, slots)``, and ``W`` ``(k, n_features + 1)``::

        G  = y_i w_c . [x_i, b] - 1 + D_ii alpha_i
        alpha_i <- min(max(alpha_i - G / Qbar_ii, 0), U_i),  w_c += (change) y_i [x_i, b]

    (the loss's leaves, :func:`~.losses.dual_gradient` and :func:`~.losses.dual_step`:
    the logistic loss's step solves its entropy's 1-D problem)
    ``index[c]`` holds the slots, its first ``active[c]`` the active set;
    ``shrink[c] = (pg_max_old, pg_min_old)`` are the thresholds a bound row
    is shrunk by (``alpha_i = 0`` and ``G > pg_max_old``, or ``alpha_i =
    U_i`` and ``G < pg_min_old``; ``(inf, -inf)``: none).  All three are
    updated in place for the next call, as :func:`~.dcd.dcd_passes` leaves
    them; when the active set looks optimal to ``eps`` it is restored to
    every slot, and ``done[c]`` is set once every slot is.

    ``gap seen`` sums each visited row's :func:`~.losses.row_gap` (loss of
    code ``loss``) at the gradient its step starts from: an estimate of the
    rows' gap during the pass that costs no extra read.  Rows shrunk
    (gradient pointing out of the box at a bound) add nothing: their share
    is 0 there.  ``visits`` counts the rows of the active sets at the start.
    """
    Y, U, D, QD, A = slot_values
    n = index.shape[1]
    visits = 0
    seen = 0.0
    for c in range(Y.shape[0]):
        if done[c]:
            continue
        y, upper, diag, qd, alpha, w, order = Y[c], U[c], D[c], QD[c], A[c], W[c], index[c]
        size = active[c]
        pg_max_old, pg_min_old = shrink[c, 0], shrink[c, 1]
        visits += size
        shuffle_prefix(order, size, rng_state)
        pg_max = -np.inf
        pg_min = np.inf
        s = 0
        while s < size:
            if s + 2 < size:
                row_prefetch_start(X, order[s + 2])
            if s + 1 < size:
                nxt = order[s + 1]
                row_prefetch(X, nxt)
                prefetch(alpha, nxt)
                prefetch(y, nxt)
                prefetch(qd, nxt)
            i = order[s]
            r = np.uint64(i)  # unsigned: no wraparound code on the accesses below
            yi = y[r]
            a = alpha[r]
            u = upper[r]
            m = yi * row_dot(X, i, w, bias)
            g = dual_gradient(loss, m, a, u, diag[r])
            pg = 0.0
            if a == 0.0:
                if g > pg_max_old:
                    size -= 1
                    order[s] = order[size]
                    order[size] = i
                    continue
                if g < 0.0:
                    pg = g
            elif a == u:
                if g < pg_min_old:
                    size -= 1
                    order[s] = order[size]
                    order[size] = i
                    continue
                if g > 0.0:
                    pg = g
            else:
                pg = g
            if u > 0.0:
                seen += row_gap(loss, m, g, a, u, diag[r])
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
            if abs(pg) > PG_SKIP:
                new = dual_step(loss, m, g, a, u, qd[r])
                alpha[r] = new
                row_axpy(X, i, (new - a) * yi, w, bias)
            s += 1
        if pg_max - pg_min <= eps and abs(pg_max) <= eps and abs(pg_min) <= eps:
            if size == n:
                done[c] = True
            size = n
            pg_max, pg_min = np.inf, -np.inf
        if pg_max <= 0.0:
            pg_max = np.inf
        if pg_min >= 0.0:
            pg_min = -np.inf
        active[c] = size
        shrink[c, 0], shrink[c, 1] = pg_max, pg_min
    return visits, seen
