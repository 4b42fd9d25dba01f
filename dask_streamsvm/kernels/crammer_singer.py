"""Sequential dual method for the Crammer-Singer multi-class SVM.

Problem (Crammer & Singer 2001; Keerthi et al. KDD 2008; LIBLINEAR
``Solver_MCSVM_CS``; the SBM paper's eq. 5)::

    min_alpha  1/2 sum_m ||w_m||^2 + sum_i sum_m e_i^m alpha_i^m
    s.t.       alpha_i^m <= C_i^m,   sum_m alpha_i^m = 0,   w_m = sum_i alpha_i^m [x_i, b]

    e_i^m = 0 if m = y_i else 1;   C_i^m = C_i if m = y_i else 0

and the primal it certifies::

    P(W) = 1/2 sum_m ||w_m||^2 + sum_i C_i max_m (e_i^m + w_m . x_i - w_{y_i} . x_i)

The sequential dual method visits one row at a time and solves the
subproblem of its ``k`` variables exactly (Keerthi et al., section 3;
LIBLINEAR's ``solve_sub_problem``): with ``A_i = ||[x_i, b]||^2``,
``G_m = w_m . [x_i, b] + e_i^m`` and ``B_m = G_m - A_i alpha_i^m``, sort
``D = B + A_i C_i [m = y_i]`` in decreasing order, find the largest ``r``
with ``beta = (sum_{t < r} D_t - A_i C_i) / r`` above ``D_r``'s threshold,
and set ``alpha_i^m = min(C_i^m, (beta - B_m) / A_i)``.

Storage.  The row cache and the in-memory solver keep ``k`` values per row
in ``(k, rows)`` arrays shared with the one-vs-rest solvers: ``Y[m, i]`` is
+1 for the true class and -1 for the others, ``U[m, i] = C_i`` for every
``m``, ``QD[m, i] = A_i``, and ``A[m, i] = Y[m, i] alpha_i^m >= 0`` (the true
class's variable as it is, the others negated).  Then ``w_m = sum_i A[m, i]
Y[m, i] [x_i, b]`` as in the binary kernels, every stored value is a
non-negative number at most ``C_i``, and the dual objective is a plain sum::

    sum_i alpha_i^{y_i} = 1/2 sum_{m, i} A[m, i]     (since sum_m alpha_i^m = 0)
    D(alpha) = 1/2 sum_{m, i} A[m, i] - 1/2 sum_m ||w_m||^2   (maximisation form)

so the row cache's running sums ``sum_i A[m, i]`` give the dual of every
row seen, cached or not, as they do for one-vs-rest.

Shrinking, as LIBLINEAR defines it for this problem: variable ``m`` of row
``i`` is shrinkable when it sits at its bound and ``G_m < min{G_t : alpha_i^t
< C_i^t}``; a row with at most one variable left is shrinkable.  SBM
(section 3) keeps the rows few of whose variables are shrinkable
(:func:`cs_select_informative`); StreamSVM-style eviction drops rows that
are shrinkable by a margin (:func:`cs_evict_uninformative`).
"""

import numpy as np
from numba import njit

from .cache import N_LIVE, nearly_full, write_back_many
from .dcd import PG_SKIP
from .rng import shuffle_prefix
from .rows import n_rows, row_axpy, row_dot
from .sbm import keep_prefix


@njit(cache=True, nogil=True)
def _dot(X, s, w, bias):
    """``row_dot`` behind a call: inlined once here, not at every call site of this module."""
    return row_dot(X, s, w, bias)


@njit(cache=True, nogil=True)
def _true_class(Y, s):
    for m in range(Y.shape[0]):
        if Y[m, s] > 0.0:
            return m
    return -1


@njit(cache=True, nogil=True)
def _gradients(X, s, y, W, bias, G):
    """``G_m = w_m . [x_s, b] + e_s^m``."""
    for m in range(W.shape[0]):
        G[m] = _dot(X, s, W[m], bias) + (0.0 if m == y else 1.0)


@njit(cache=True, nogil=True)
def _violation(A, s, y, upper, G):
    """``(maxG, minG)``: largest gradient, smallest among variables below their bound."""
    max_g = -np.inf
    min_g = np.inf
    for m in range(G.shape[0]):
        g = G[m]
        if g > max_g:
            max_g = g
        # alpha^y = A[y] < C_i, alpha^m = -A[m] < 0: below the bound.
        below = A[m, s] < upper if m == y else A[m, s] > 0.0
        if below and g < min_g:
            min_g = g
    return max_g, min_g


@njit(cache=True, nogil=True)
def _n_shrinkable(A, s, y, upper, G, min_g, margin):
    """Variables at their bound whose gradient is below ``min_g - margin``."""
    count = 0
    for m in range(G.shape[0]):
        at_bound = A[m, s] >= upper if m == y else A[m, s] <= 0.0
        if at_bound and G[m] < min_g - margin:
            count += 1
    return count


@njit(cache=True, nogil=True)
def _solve_row(X, s, y, upper, a_i, Y, A, W, bias, G, B, D):
    """Solve row ``s``'s subproblem exactly; update ``A`` and ``W``."""
    k = G.shape[0]
    for m in range(k):
        alpha = Y[m, s] * A[m, s]
        B[m] = G[m] - a_i * alpha
        D[m] = B[m]
    D[y] += a_i * upper
    D.sort()  # ascending: walk it from the end
    beta = D[k - 1] - a_i * upper
    r = 1
    while r < k and beta < r * D[k - 1 - r]:
        beta += D[k - 1 - r]
        r += 1
    beta /= r
    for m in range(k):
        bound = upper if m == y else 0.0
        new = min(bound, (beta - B[m]) / a_i)
        old = Y[m, s] * A[m, s]
        if new != old:
            A[m, s] = Y[m, s] * new
            row_axpy(X, s, new - old, W[m], bias)


@njit(cache=True, nogil=True)
def cs_sweep(X, Y, U, QD, A, W, bias, index, size, margin, shrinkable, rng_state):
    """One pass of the sequential dual method over ``index[:size]`` in random order.

    Parameters
    ----------
    X : a row layout of ``kernels.rows``
    Y, U, QD, A : float64 arrays ``(k, rows)`` (module docstring)
    W : float64 array ``(k, n_features + 1)``, updated in place
    bias : float
    index : int64 array of row ids, shuffled in place
    size : int, rows to visit
    margin : float
        ``shrinkable[t]`` counts the variables of row ``index[t]`` at their
        bound with a gradient below ``minG - margin`` before its update
        (``inf`` counts none).
    shrinkable : int64 array, at least ``size`` long, filled
    rng_state : uint64 array of length 1

    Returns
    -------
    float, the largest ``maxG - minG`` over the rows visited (0 at the optimum)
    """
    k = W.shape[0]
    G = np.empty(k)
    B = np.empty(k)
    D = np.empty(k)
    shuffle_prefix(index, size, rng_state)
    worst = 0.0
    for t in range(size):
        s = index[t]
        shrinkable[t] = 0
        y = _true_class(Y, s)
        upper = U[y, s]
        a_i = QD[y, s]
        if upper <= 0.0 or a_i <= 0.0:
            continue  # no weight, or an empty row without bias: W does not depend on it
        _gradients(X, s, y, W, bias, G)
        max_g, min_g = _violation(A, s, y, upper, G)
        if margin < np.inf:
            shrinkable[t] = _n_shrinkable(A, s, y, upper, G, min_g, margin)
        if max_g - min_g > worst:
            worst = max_g - min_g
        if max_g - min_g <= PG_SKIP:
            continue
        _solve_row(X, s, y, upper, a_i, Y, A, W, bias, G, B, D)
    return worst


@njit(cache=True, nogil=True)
def cs_scores(X, Y, U, A, W, bias, slots, shrinkable, violation):
    """For SBM's cache: shrinkable variables and ``maxG - minG`` of every row in ``slots``."""
    k = W.shape[0]
    G = np.empty(k)
    for t in range(slots.shape[0]):
        s = slots[t]
        y = _true_class(Y, s)
        upper = U[y, s]
        if upper <= 0.0:
            shrinkable[t] = k
            violation[t] = 0.0
            continue
        _gradients(X, s, y, W, bias, G)
        max_g, min_g = _violation(A, s, y, upper, G)
        shrinkable[t] = _n_shrinkable(A, s, y, upper, G, min_g, 0.0)
        violation[t] = max_g - min_g


@njit(cache=True, nogil=True)
def cs_select_informative(X, Y, U, A, W, bias, slots, row_bytes, budget, keep):
    """SBM's cache selection for Crammer-Singer (Chang & Roth 2011, section 3).

    Informative rows have few shrinkable variables: the rows ``slots`` rank
    by their count of shrinkable variables (:func:`cs_scores`, ascending),
    ties by the larger violation ``maxG - minG`` of the optimality
    conditions, then by position (the order of ``np.lexsort((-violation,
    shrinkable))``), and are kept in rank order while their bytes fit.

    Parameters
    ----------
    X, Y, U, A, W, bias : as :func:`cs_sweep`
    slots : int64 array ``(n,)``, the rows to rank
    row_bytes : int64 array ``(n,)``, the memory of each of them
    budget : int, bytes the kept rows may occupy
    keep : int64 array ``(n,)``, filled with the kept rows' positions in
        ``slots``, best first

    Returns
    -------
    int, the number of rows kept (``keep[:count]``)
    """
    n = slots.shape[0]
    shrinkable = np.empty(n, dtype=np.int64)
    violation = np.empty(n)
    cs_scores(X, Y, U, A, W, bias, slots, shrinkable, violation)
    # Two stable sorts, the minor key first: np.lexsort's order.
    by_violation = np.argsort(-violation, kind="mergesort")
    order = by_violation[np.argsort(shrinkable[by_violation], kind="mergesort")]
    return keep_prefix(order, row_bytes, budget, keep)


@njit(cache=True, nogil=True)
def cs_evict_uninformative(cache, dual, index, size, shrinkable):
    """Evict the rows a Crammer-Singer sweep found uninformative (StreamSVM's rule, Algorithm 2).

    Row ``i`` is uninformative when at most one of its ``k`` variables is
    not shrinkable by the sweep's margin ``eps``::

        #{m : alpha_i^m at its bound and G_m < min{G_t : alpha_i^t < C_i^t} - eps} >= k - 1

    (that one variable is then fixed by ``sum_m alpha_i^m = 0``).
    ``shrinkable[t]`` is that count for the row of slot ``index[t]``, as
    :func:`cs_sweep` fills it; the rows of ``index[:size]`` that qualify
    leave the cache (their alphas go to the store; ``index`` is overwritten).  Returns the number
    evicted.
    """
    k = cache.Y.shape[0]
    evicted = 0
    for t in range(size):
        if shrinkable[t] >= k - 1:
            index[evicted] = index[t]  # the slots leaving, in order, over the walked prefix
            evicted += 1
    write_back_many(index, np.int64(evicted), cache, dual, np.bool_(True))
    return evicted


@njit(cache=True, nogil=True)
def cs_train_on_cache(X, cache, dual, W, bias, eps, beta, full_at, visit_budget, rng_state):
    """StreamSVM's trainer (Algorithm 2) for Crammer-Singer, for ``visit_budget`` row visits.

    Each sweep is :func:`cs_sweep` over the cached rows with ``eps[0]`` as
    the margin, then :func:`cs_evict_uninformative` drops the rows with at
    most one variable that is not shrinkable by that margin.  ``eps[0]``
    then becomes the sweep's largest violation, times ``beta`` when the
    cache is :func:`~.cache.nearly_full` (more than ``full_at`` of it in
    use); ``X``, ``cache``, ``dual``, ``W``, ``bias`` and ``rng_state`` are
    those of :func:`~.cache.stream_sweep`.

    Returns ``(visits, busy)``; ``busy`` is false when a sweep changed nothing.
    """
    meta, Y, U, QD, A = cache.meta, cache.Y, cache.U, cache.QD, cache.A
    n_slots = cache.gid.shape[0]
    index = np.empty(n_slots, dtype=np.int64)
    shrinkable = np.zeros(n_slots, dtype=np.int64)
    visits = 0
    busy = True
    while visits < visit_budget and meta[N_LIVE] > 0 and busy:
        n = meta[N_LIVE]
        for t in range(n):  # a loop: an array assigned to a slice compiles numba's shape-error text
            index[t] = cache.live[t]
        worst = cs_sweep(X, Y, U, QD, A, W, bias, index, n, eps[0], shrinkable, rng_state)
        visits += n
        eps[0] = worst
        busy = worst > PG_SKIP
        if nearly_full(cache, full_at):
            eps[0] *= beta
        if cs_evict_uninformative(cache, dual, index, n, shrinkable) > 0:
            busy = True
    return visits, busy


@njit(cache=True, nogil=True)
def cs_loss_sum(X, y_index, cost, W, bias):
    """``sum_i C_i max_m (e_i^m + w_m . x_i - w_{y_i} . x_i)`` over every row of ``X``."""
    k = W.shape[0]
    total = 0.0
    for i in range(n_rows(X)):
        y = y_index[i]
        own = _dot(X, i, W[y], bias)
        worst = 0.0
        for m in range(k):
            if m != y:
                v = 1.0 + _dot(X, i, W[m], bias) - own
                if v > worst:
                    worst = v
        total += cost[i] * worst
    return total
