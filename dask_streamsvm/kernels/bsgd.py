"""Budgeted stochastic gradient descent for the Gaussian-kernel SVM, with merging.

BSGD (Wang, Crammer & Vucetic, JMLR 2012) as Glasmachers & Qaadan (2018)
run it: Pegasos steps on ``lambda/2 ||w||^2 + mean max(0, 1 - y f(x))``, ``lambda = 1/(n C)``,
``w = sum_j alpha_j phi(sv_j)``, at most ``budget`` support vectors.

Step ``t`` on row ``(x, y)``: the margin ``y f(x)`` is taken with the model
before the step; every ``alpha`` shrinks by ``1 - 1/t``; a margin below 1
adds ``x`` with ``alpha = y / (lambda t)``.  The shrink factors telescope:
every coefficient is ``beta_j / (lambda t)`` with ``beta_j`` fixed between
merges (``beta = y`` when added), so the kernel stores ``beta`` and never
rescales.

Budget maintenance (the paper's Algorithm 1): the support vector with the
smallest ``|alpha|`` is merged with the same-label partner of least weight
degradation ``WD``; the merged point ``z = h x_min + (1 - h) x_partner``
lies on the line between them, with ``alpha_z = alpha_min kappa^((1-h)^2) +
alpha_p kappa^(h^2)``, ``kappa = k(x_min, x_partner)``, and ``h`` maximises
``s(h) = m kappa^((1-h)^2) + (1 - m) kappa^(h^2)`` with
``m = alpha_min / (alpha_min + alpha_p)``.  (The paper's Algorithm 1 prints
``m`` as the partner's share; with that reading ``h -> 1`` would move the
large coefficient onto the small vector.  ``m`` must weight the kernel to
``x_min``, ``kappa^((1-h)^2)``, as in lines 9 and 15.)  Then
``WD = (alpha_min + alpha_p)^2 (m^2 + (1-m)^2 + 2 m (1-m) kappa - s(h)^2)``.

``h`` comes from golden section search (``GSS``: to 0.01, ``GSS_PRECISE``:
to 1e-10) or from tables of ``h(m, kappa)`` and ``WD(m, kappa)`` (for
``alpha_min + alpha_p = 1``) on a 400 x 400 grid, with bilinear
interpolation (``LOOKUP_H``, ``LOOKUP_WD``: :func:`merge_by_lookup`).  With no
same-label partner the smallest vector is removed.

The support vectors are stored by feature, a column per slot
(:data:`BudgetState`): a step's decision values are ``k(sv_j, x) =
exp(-gamma (||sv_j||^2 + ||x||^2 - 2 sv_j . x))`` with every ``sv_j . x``
summed at once over the row's nonzeros, one contiguous run of the budget's
slots each (:func:`row_times_columns`), ``O(nnz(x) B)``; a merge reads the
features of the smallest vector once, its dot products with the others
over its nonzeros only, and passes down the pair's columns.  Stored as
rows of the full width (the reference code's layout), a sparse row's dot
with each vector gathers its nonzeros from a different row of
``n_features`` values (a cache miss each on wide data) and each merge
reads ``B`` of those rows whole, ``O(B n_features)``: on a 7,770 x 8,315
text-like set the defaults took 165 s that way and 9 s this way, for the
same model (issue 41).

Budget maintenance is timed in the CPU's time-stamp counter (:func:`ticks`,
which needs no GIL); the driver converts ticks to seconds against the wall
clock around each call.
"""

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .rows import n_rows, row_axpy, row_span, row_sqnorm

GSS, GSS_PRECISE, LOOKUP_H, LOOKUP_WD = 0, 1, 2, 3
GRID = 400
_INV_PHI = (np.sqrt(5.0) - 1.0) / 2.0

# Every problem's model, updated in place: ``t[0]`` the next step, and per problem c ``n_sv[c]``
# support vectors in slots ``0 .. n_sv[c] - 1`` of ``budget + 1``, stored by feature: ``SV[c, f, j]``
# is feature f of the vector in slot j (``n_features + 1`` features: a bias feature left at 0; an
# unused slot is a zero column), so that a row's dot with every vector reads one contiguous run per
# nonzero of the row; their ``sv . sv`` (``SVSQ``) and ``BETA`` (``alpha = beta / (lambda t)``); the
# counters ``stats[c]`` (merges, removals, shadowed decisions, equal decisions, margin violations)
# and the ticks spent in budget maintenance, ``merge_ticks[c]``.
BudgetState = namedtuple("BudgetState", ["t", "SV", "SVSQ", "BETA", "n_sv", "stats", "merge_ticks"])
# What a fit keeps fixed: the kernel's gamma, lambda, the budget B, the merge method and a
# shadow method (-1: none) that makes its own partner choice alongside, and the tables H, W.
BudgetSettings = namedtuple("BudgetSettings", ["gamma", "lam", "budget", "method", "shadow", "H", "W"])


@intrinsic
def _read_counter(typingctx):
    """LLVM's ``readcyclecounter``: a constant-rate counter (x86 ``rdtsc``, ARM64 ``CNTVCT_EL0``) or 0."""

    def codegen(context, builder, signature, args):
        counter_type = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, counter_type, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return types.int64(), codegen


@njit(cache=True, nogil=True)
def ticks():
    """The time-stamp counter now, in ticks of a constant rate (0 on a CPU without one)."""
    return _read_counter()


@njit(cache=True, nogil=True)
def merge_gain(m, kappa, h):
    """``s(h) = m kappa^((1-h)^2) + (1 - m) kappa^(h^2)``."""
    return m * kappa ** ((1.0 - h) ** 2) + (1.0 - m) * kappa ** (h * h)


@njit(cache=True, nogil=True)
def golden_h(m, kappa, eps):
    """``argmax_h s(h)`` on [0, 1] by golden section search to an interval of ``eps``."""
    if kappa <= 0.0:  # s is m at h = 1, 1 - m at h = 0, 0 between
        return 1.0 if m > 0.5 else 0.0
    if kappa >= 1.0:  # s is flat; its argmax as kappa -> 1, where s ~ 1 + ln(kappa) (m (1-h)^2 + (1-m) h^2)
        return m
    a, b = 0.0, 1.0
    c = b - _INV_PHI * (b - a)
    d = a + _INV_PHI * (b - a)
    fc, fd = merge_gain(m, kappa, c), merge_gain(m, kappa, d)
    while b - a > eps:
        if fc > fd:
            b, d, fd = d, c, fc
            c = b - _INV_PHI * (b - a)
            fc = merge_gain(m, kappa, c)
        else:
            a, c, fc = c, d, fd
            d = a + _INV_PHI * (b - a)
            fd = merge_gain(m, kappa, d)
    return 0.5 * (a + b)


@njit(cache=True, nogil=True)
def unit_degradation(m, kappa, h):
    """``WD`` for ``alpha_min + alpha_p = 1``: ``m^2 + (1-m)^2 + 2 m (1-m) kappa - s(h)^2``."""
    s = merge_gain(m, kappa, h)
    return max(m * m + (1.0 - m) ** 2 + 2.0 * m * (1.0 - m) * kappa - s * s, 0.0)


@njit(cache=True, nogil=True)
def build_tables(grid, eps):
    """``h(m, kappa)`` and ``WD(m, kappa)`` on ``(grid + 1)^2`` nodes of [0, 1]^2 (row: m, column: kappa)."""
    H = np.empty((grid + 1, grid + 1))
    W = np.empty((grid + 1, grid + 1))
    for i in range(grid + 1):
        m = i / grid
        for j in range(grid + 1):
            kappa = j / grid
            h = golden_h(m, kappa, eps)
            H[i, j] = h
            W[i, j] = unit_degradation(m, kappa, h)
    return H, W


@njit(cache=True, nogil=True)
def bilinear(T, m, kappa):
    """``T`` at ``(m, kappa)`` by bilinear interpolation between grid nodes, indices clamped."""
    grid = T.shape[0] - 1
    x = min(max(m, 0.0), 1.0) * grid
    y = min(max(kappa, 0.0), 1.0) * grid
    i = min(int(x), grid - 1)
    j = min(int(y), grid - 1)
    fx, fy = x - i, y - j
    return (
        (1.0 - fx) * (1.0 - fy) * T[i, j]
        + fx * (1.0 - fy) * T[i + 1, j]
        + (1.0 - fx) * fy * T[i, j + 1]
        + fx * fy * T[i + 1, j + 1]
    )


@njit(cache=True, nogil=True)
def lookup_h(H, m, kappa):
    """The merge coefficient from its table: ``h = clip(H~(m, kappa), 0, 1)`` (``~``: :func:`bilinear`)."""
    return min(max(bilinear(H, m, kappa), 0.0), 1.0)


@njit(cache=True, nogil=True)
def merge_by_lookup(method, m, kappa, H, W):
    """A candidate merge by table lookup (Glasmachers & Qaadan 2018, section 3): ``(h, WD_1)``, no search.

    ``WD_1`` is the weight degradation for ``alpha_min + alpha_p = 1`` (the
    merge's is ``(alpha_min + alpha_p)^2 WD_1``), read as::

        LOOKUP_WD:  WD_1 = W~(m, kappa)
        LOOKUP_H:   h = clip(H~(m, kappa), 0, 1),
                    WD_1 = m^2 + (1-m)^2 + 2 m (1-m) kappa - s(h)^2,
                    s(h) = m kappa^((1-h)^2) + (1-m) kappa^(h^2)

    with ``T~`` the :func:`bilinear` reading of a table.  ``LOOKUP_WD``
    returns ``h = nan``: it reads ``h`` (:func:`lookup_h`) for the chosen
    partner only, one table read per candidate instead of two.
    """
    if method == LOOKUP_WD:
        return np.nan, bilinear(W, m, kappa)
    h = lookup_h(H, m, kappa)
    return h, unit_degradation(m, kappa, h)


@njit(cache=True, nogil=True)
def merge_by_search(method, m, kappa):
    """A candidate merge by golden section search: ``h = argmax s(h)`` to 0.01 (GSS) or 1e-10; ``WD_1``."""
    h = golden_h(m, kappa, 1e-10 if method == GSS_PRECISE else 0.01)
    return h, unit_degradation(m, kappa, h)


def row_times_columns(X, i, SV, n, out):
    """``out[j] = x_i . SV[:, j]`` for ``j < n``: the row's dot with every support vector at once.

    ``SV`` is one problem's support vectors by feature (a row per feature,
    a column per slot), so each nonzero ``x_if`` adds ``x_if SV[f, :n]``, a
    contiguous run: ``O(nnz(x) n)`` and no gathers from vectors of the
    full width.  The plain-Python body is the reference semantics.
    """
    out[:n] = 0.0
    lo, hi = row_features(X, i)
    for k in range(lo, hi):
        out[:n] += float(row_value(X, i, k)) * SV[row_feature(X, i, k), :n]


@overload(row_times_columns, inline="always")
def _row_times_columns(X, i, SV, n, out):
    def dots(X, i, SV, n, out):
        for j in range(n):
            out[j] = 0.0
        lo, hi = row_features(X, i)
        for k in range(lo, hi):
            v = row_value(X, i, k) * 1.0
            if v != 0.0:
                column = SV[row_feature(X, i, k)]
                for j in range(n):
                    out[j] += v * column[j]

    return dots


def row_features(X, i):
    """``(lo, hi)``: the positions ``k`` of row ``i``'s entries, read by :func:`row_feature` and
    :func:`row_value` (dense rows: every feature; CSR: the stored entries)."""
    if isinstance(X, tuple):
        return int(X[0][i]), int(X[0][i + 1])
    return 0, X.shape[1]


def row_feature(X, i, k):
    """The feature of row ``i``'s entry ``k``."""
    return int(X[1][k]) if isinstance(X, tuple) else k


def row_value(X, i, k):
    """The value of row ``i``'s entry ``k``."""
    return X[2][k] if isinstance(X, tuple) else X[i, k]


def _is_csr(X):
    return isinstance(X, types.BaseTuple) and len(X) == 3


@overload(row_features, inline="always")
def _row_features(X, i):
    if _is_csr(X):
        return lambda X, i: row_span(X, i)
    return lambda X, i: (0, X.shape[1])


@overload(row_feature, inline="always")
def _row_feature(X, i, k):
    if _is_csr(X):
        return lambda X, i, k: X[1][k]
    return lambda X, i, k: k


@overload(row_value, inline="always")
def _row_value(X, i, k):
    if _is_csr(X):
        return lambda X, i, k: X[2][k]
    return lambda X, i, k: X[i, k]


@njit(cache=True, nogil=True)
def _partner(method, SVSQ, BETA, dots, n, i, gamma, H, W):
    """Best same-label partner of ``i`` by ``method``: ``(index or -1, h, WD in beta units)``.

    ``dots[j] = sv_i . sv_j``, so ``||sv_i - sv_j||^2 = SVSQ[i] + SVSQ[j] - 2 dots[j]``.
    """
    best, best_wd, best_h = -1, np.inf, 0.0
    for j in range(n):
        if j == i or BETA[j] * BETA[i] <= 0.0:
            continue
        total = BETA[i] + BETA[j]
        m = BETA[i] / total
        kappa = np.exp(-gamma * max(SVSQ[i] + SVSQ[j] - 2.0 * dots[j], 0.0))
        if method == LOOKUP_H or method == LOOKUP_WD:
            h, unit = merge_by_lookup(method, m, kappa, H, W)
        else:
            h, unit = merge_by_search(method, m, kappa)
        wd = total * total * unit
        if wd < best_wd:
            best, best_wd, best_h = j, wd, h
    return best, best_h, best_wd


@njit(cache=True, nogil=True)
def merge_pair(SV, SVSQ, BETA, i, p, h, kappa):
    """Vector ``p`` becomes the merged point of ``i`` and ``p``, ``kappa = k(x_i, x_p)``::

        z       = h x_i + (1 - h) x_p
        alpha_z = alpha_i kappa^((1-h)^2) + alpha_p kappa^(h^2)

    (the last step of the paper's Algorithm 1); ``SV`` by feature, as in :func:`merge`.
    """
    BETA[p] = BETA[i] * kappa ** ((1.0 - h) ** 2) + BETA[p] * kappa ** (h * h)
    sq = 0.0
    for f in range(SV.shape[0]):
        v = h * SV[f, i] + (1.0 - h) * SV[f, p]
        SV[f, p] = v
        sq += v * v
    SVSQ[p] = sq


@njit(cache=True, nogil=True)
def merge(settings, SV, SVSQ, BETA, n, stats, features):
    """Algorithm 1 on one model of ``n = budget + 1`` vectors in slots ``0 .. n - 1``; returns ``(i, m)``:
    the slot it empties (a zero column, ``beta = 0``), whose nonzero features were ``features[:m]``.

    ``SV[f, j]`` is feature ``f`` of the vector in slot ``j`` (by feature,
    see :func:`row_times_columns`).  The vector of smallest ``|alpha|`` (the
    first in slot order) is merged into its best same-label partner
    (:func:`merge_by_lookup` or :func:`merge_by_search`, :func:`merge_pair`),
    or removed when it has none.  Its dot products with the other vectors
    come from its nonzero features only (one pass down its column, then a
    contiguous row per nonzero), the distances from the norms:
    ``||sv_i - sv_j||^2 = SVSQ[i] + SVSQ[j] - 2 sv_i . sv_j``.
    ``settings.shadow`` (another method, or -1) makes the same decision
    alongside; ``stats`` counts merges [0], removals [1], shadowed
    decisions [2] and equal decisions [3].  ``features`` is scratch of
    ``SV.shape[0]`` entries.
    """
    method, gamma, H, W = settings.method, settings.gamma, settings.H, settings.W
    # np.int64, not 0: numba's typing would first see i as the literal 0 and compile _partner and
    # merge_pair for it as well as for int64
    i = np.int64(0)
    for j in range(1, n):
        if abs(BETA[j]) < abs(BETA[i]):
            i = j
    m = 0
    for f in range(SV.shape[0]):
        if SV[f, i] != 0.0:
            features[m] = f
            m += 1
    dots = np.zeros(n)
    for k in range(m):
        a, row = SV[features[k], i], SV[features[k]]
        for j in range(n):
            dots[j] += a * row[j]
    p, h, _ = _partner(method, SVSQ, BETA, dots, n, i, gamma, H, W)
    if settings.shadow >= 0:
        q, _, _ = _partner(settings.shadow, SVSQ, BETA, dots, n, i, gamma, H, W)
        stats[2] += 1
        if q == p:
            stats[3] += 1
    if p < 0:  # no partner of the same label: remove the smallest vector
        stats[1] += 1
    else:
        total = BETA[i] + BETA[p]
        kappa = np.exp(-gamma * max(SVSQ[i] + SVSQ[p] - 2.0 * dots[p], 0.0))
        if method == LOOKUP_WD:  # chosen by WD alone; h from its table
            h = lookup_h(H, BETA[i] / total, kappa)
        merge_pair(SV, SVSQ, BETA, i, p, h, kappa)
        stats[0] += 1
    for k in range(m):
        SV[features[k], i] = 0.0
    SVSQ[i] = 0.0
    BETA[i] = 0.0
    return i, m


@njit(cache=True, nogil=True)
def decision(X, i, SV, SVSQ, BETA, n, gamma, scale, dots):
    """``f(x_i) = scale * sum_j beta_j exp(-gamma ||sv_j - x_i||^2)`` over the slots ``j < n``; ``dots``
    is scratch of at least ``n`` entries."""
    xsq = row_sqnorm(X, i, 0.0)
    row_times_columns(X, i, SV, n, dots)
    total = 0.0
    for j in range(n):
        d2 = SVSQ[j] + xsq - 2.0 * dots[j]
        total += BETA[j] * np.exp(-gamma * max(d2, 0.0))
    return scale * total


@njit(cache=True, nogil=True)
def _insert(X, i, SV, SVSQ, BETA, slot, y):
    """Row ``i`` into the empty ``slot`` (a zero column): its nonzeros only."""
    row_axpy(X, i, 1.0, SV[:, slot], 0.0)  # the last entry, the bias feature, stays 0
    SVSQ[slot] = row_sqnorm(X, i, 0.0)
    BETA[slot] = y


@njit(cache=True, nogil=True)
def _fill(X, row, SV, SVSQ, BETA, empty, last, features, m):
    """The vector in slot ``last`` moves into ``empty``, the slot a merge emptied; ``last`` becomes a
    zero column.

    Slot ``last`` holds the row just inserted, ``x_row``, or its merger
    with the vector that was in ``empty`` (whose nonzero features were
    ``features[:m]``): its nonzeros are among those of the two, so the
    move touches those features only.
    """
    lo, hi = row_features(X, row)
    for k in range(m):
        SV[features[k], empty] = SV[features[k], last]
    for k in range(lo, hi):
        f = row_feature(X, row, k)
        SV[f, empty] = SV[f, last]
    for k in range(m):
        SV[features[k], last] = 0.0
    for k in range(lo, hi):
        SV[row_feature(X, row, k), last] = 0.0
    SVSQ[empty], BETA[empty] = SVSQ[last], BETA[last]
    SVSQ[last], BETA[last] = 0.0, 0.0


@njit(cache=True, nogil=True)
def bsgd_block(X, signs, order, settings, state):
    """BSGD steps on the rows ``order`` of ``X`` for every problem; ``state.t[0]`` counts steps.

    ``signs[c, i]`` is row i's +1/-1 label in problem c; ``settings`` is a
    :class:`BudgetSettings`, ``state`` the :class:`BudgetState` it updates.
    Step ``t`` on row i, per problem: ``f = sum_j beta_j k(sv_j, x_i) /
    (lambda (t - 1))``; if ``y f < 1``, ``x_i`` joins with ``beta = y`` in
    the next slot, and past the budget :func:`merge` runs and the last
    vector fills the slot it emptied (:func:`_fill`), so that the vectors
    keep slots ``0 .. n - 1`` (the ticks of both are added to
    ``state.merge_ticks[c]``).
    """
    SV, SVSQ, BETA, gamma, lam = state.SV, state.SVSQ, state.BETA, settings.gamma, settings.lam
    dots = np.empty(SV.shape[2])
    features = np.empty(SV.shape[1], dtype=np.int64)
    for r in range(order.shape[0]):
        i = order[r]
        step = state.t[0]
        for c in range(SV.shape[0]):
            y = signs[c, i]
            n = state.n_sv[c]
            if step > 1 and n > 0:
                f = decision(X, i, SV[c], SVSQ[c], BETA[c], n, gamma, 1.0 / (lam * (step - 1)), dots)
            else:
                f = 0.0
            if y * f < 1.0:
                state.stats[c, 4] += 1
                _insert(X, i, SV[c], SVSQ[c], BETA[c], n, y)
                n += 1
                if n > settings.budget:
                    start = _read_counter()
                    empty, m = merge(settings, SV[c], SVSQ[c], BETA[c], n, state.stats[c], features)
                    n -= 1
                    if empty != n:
                        _fill(X, i, SV[c], SVSQ[c], BETA[c], empty, n, features, m)
                    state.merge_ticks[c] += _read_counter() - start
                state.n_sv[c] = n
        state.t[0] = step + 1


@njit(cache=True, nogil=True)
def predict_block(X, state, gamma, scale, out):
    """``out[i, c] = f_c(x_i)`` for every row and problem."""
    dots = np.empty(state.SV.shape[2])
    for i in range(n_rows(X)):
        for c in range(state.SV.shape[0]):
            n = state.n_sv[c]
            out[i, c] = decision(X, i, state.SV[c], state.SVSQ[c], state.BETA[c], n, gamma, scale, dots)
