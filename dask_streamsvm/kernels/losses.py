"""The losses of the binary linear SVM as numba leaves, chosen by an integer code.

Every kernel that depends on the loss takes its code and asks a leaf here;
none branches on the loss itself.  A leaf sees one row: its margin's
shortfall ``s = 1 - m`` (``m = y_i w . [x_i, b]``, ``s <= 0`` past the
margin: every caller computes ``s`` this way, so passing it keeps each
rounding where it was), its weight ``C_i``, its dual variable ``alpha_i``
and the dual's ``(U_i, D_ii)``.  The losses (Hsieh et al. 2008, eq. 1 and
4; LIBLINEAR ``-s 3`` and ``-s 1``)::

    code           loss(m)             U_i    D_ii          Newton weight
    HINGE          max(0, 1 - m)       C_i    0             (none: not twice differentiable)
    SQUARED_HINGE  max(0, 1 - m)^2     inf    1 / (2 C_i)   2 C_i on rows with m < 1

and every loss here has the same dual form (a box and a diagonal)::

    D(alpha) = sum_i (alpha_i - 1/2 D_ii alpha_i^2) - 1/2 ||w(alpha)||^2,   0 <= alpha_i <= U_i

so the dual coordinate step of :mod:`.dcd` and the running sums of the
dual (``sum alpha``, ``sum D alpha^2``: :func:`dual_sums_change`) serve
both.  A loss whose dual is not of that form (the logistic loss: an
entropy term per row, a Newton solve per coordinate) adds its code, its
leaves and its branch of the coordinate step; the engine's side of each
loss is :mod:`dask_streamsvm.engine.losses`.

Two clipping conventions, each the one its callers always used: the dual
side's leaves treat a NaN shortfall as no loss (``s > 0`` fails), the
primal Newton sums' (:func:`newton_terms`) let it through as NumPy's
``maximum(0, s)`` does, so that the certificate refuses it.  The values of
the codes are fixed: callers that pass the old boolean (``True`` for the
squared hinge) get the same loss.
"""

import numpy as np
from numba import njit

HINGE = 0
SQUARED_HINGE = 1
# The estimators' default loss (LIBLINEAR's): the code a row cache or dual store assumes when none is given.
DEFAULT = SQUARED_HINGE

# D_ii = 1 / (2 C_i) of the squared hinge, capped: a C_i so small that the quotient overflows
# (a subnormal weight) gives a huge finite D_ii, so D_ii * alpha_i stays 0 at alpha_i = 0.
MAX_DIAG = 1e300


@njit(cache=True, nogil=True)
def loss_value(code, s):
    """``loss(m)`` at the shortfall ``s = 1 - m``.

    ::

        HINGE          max(0, s)
        SQUARED_HINGE  max(0, s)^2
    """
    if s > 0.0:
        if code == SQUARED_HINGE:
            return s * s
        return s
    return 0.0


@njit(cache=True, nogil=True)
def loss_derivative(code, s):
    """``d loss / d m`` at the shortfall ``s = 1 - m`` (the hinge's right derivative at its kink).

    ::

        HINGE          -1 if s > 0 else 0
        SQUARED_HINGE  -2 max(0, s)
    """
    if s > 0.0:
        if code == SQUARED_HINGE:
            return -2.0 * s
        return -1.0
    return 0.0


@njit(cache=True, nogil=True)
def weighted_loss(code, cost, s):
    """``C_i loss(m)`` at the shortfall ``s = 1 - m``, multiplied as the primal sums always were.

    ::

        HINGE          C_i s       if s > 0, else 0
        SQUARED_HINGE  C_i s s     if s > 0, else 0   (``(C_i s) s``)
    """
    if s > 0.0:
        if code == SQUARED_HINGE:
            return cost * s * s
        return cost * s
    return 0.0


@njit(cache=True, nogil=True)
def upper_and_diag(code, cost):
    """``(U_i, D_ii)`` of a row of weight ``C_i = cost`` in the binary dual (Hsieh et al. 2008, eq. 4).

    ::

        C_i <= 0        U_i = 0,     D_ii = 0      (the row has no weight: alpha_i = 0)
        HINGE           U_i = C_i,   D_ii = 0
        SQUARED_HINGE   U_i = inf,   D_ii = min(1 / (2 C_i), MAX_DIAG)

    The one definition of the rule: the row cache applies it row by row,
    the in-memory and cluster schedules through :func:`upper_and_diag_arrays`.
    """
    if cost <= 0.0:
        return 0.0, 0.0
    if code == SQUARED_HINGE:
        return np.inf, min(0.5 / cost, MAX_DIAG)
    return cost, 0.0


@njit(cache=True, nogil=True)
def _fill_upper_and_diag(code, cost, upper, diag):
    for i in range(cost.shape[0]):
        upper[i], diag[i] = upper_and_diag(code, cost[i])


def upper_and_diag_arrays(cost, code):
    """``(U, D)``: :func:`upper_and_diag` of every entry of the float64 array ``cost`` (any shape)."""
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    upper = np.empty_like(cost)
    diag = np.empty_like(cost)
    _fill_upper_and_diag(int(code), cost.reshape(-1), upper.reshape(-1), diag.reshape(-1))
    return upper, diag


@njit(cache=True, nogil=True)
def box_loss(code, s, upper, diag):
    """``C_i loss(m)`` at the shortfall ``s = 1 - m`` of a row known by its ``(U_i, D_ii)`` only.

    The row cache keeps ``U`` and ``D``, not ``C``: the squared hinge's
    ``C_i = 1 / (2 D_ii)``, the hinge's ``C_i = U_i``::

        SQUARED_HINGE  s^2 / (2 D_ii)   (D_ii > 0: a row of weight)
        HINGE          U_i s            (and a row of no weight: U_i = 0)

    for ``s > 0``, else 0.
    """
    if s > 0.0:
        if code == SQUARED_HINGE and diag > 0.0:
            return s * s / (2.0 * diag)
        return upper * s
    return 0.0


@njit(cache=True, nogil=True)
def dual_term(code, a, diag):
    """Row ``i``'s term of the dual ``D(alpha) = sum_i term_i - 1/2 ||w(alpha)||^2``::

        HINGE, SQUARED_HINGE   alpha_i - 1/2 D_ii alpha_i^2

    (the conjugate of the loss at ``-alpha_i``, negated: ``-C_i loss*(-alpha_i / C_i)``).
    The streaming schedules keep its two sums apart (:func:`dual_sums_change`).
    """
    return a - 0.5 * diag * a * a


@njit(cache=True, nogil=True)
def dual_sums_change(code, new, old, diag):
    """What ``alpha_i: old -> new`` adds to the dual's running sums ``(sum alpha, sum D alpha^2)``.

    ``D(alpha) = sum alpha - 1/2 sum D alpha^2 - 1/2 ||w||^2`` for every
    loss here (:func:`dual_term`), so the two sums and ``w`` give the dual
    of rows no longer in memory: ``(new - old, D_ii (new^2 - old^2))``.
    """
    return new - old, diag * (new * new - old * old)


@njit(cache=True, nogil=True)
def row_gap(code, g, a, upper, diag):
    """Row ``i``'s share of the duality gap, ``P(w) - D(alpha) = sum_i gap_i`` (Dünner et al. 2017).

    With ``w = sum_j alpha_j y_j [x_j, b]``, ``||w||^2 = sum_i alpha_i m_i``
    (``m_i = y_i w . [x_i, b]``), so the gap splits by rows::

        gap_i = alpha_i (m_i - 1) + C_i loss(m_i) + 1/2 D_ii alpha_i^2

    (:func:`box_loss` and :func:`dual_term`: the hinge's ``U_i = C_i``,
    ``D_ii = 0``; the squared hinge's ``C_i = 1 / (2 D_ii)``).  Each term is
    >= 0 (Fenchel-Young), and 0 exactly for a row at ``alpha_i = 0`` with
    ``m_i >= 1``: a row that needs no training.  ``g = m_i - 1 + D_ii
    alpha_i`` is the DCD gradient the trainer computes anyway.
    """
    m1 = g - diag * a  # m_i - 1
    xi = -m1 if m1 < 0.0 else 0.0
    if code == SQUARED_HINGE and diag > 0.0:
        gap = a * m1 + xi * xi / (2.0 * diag) + 0.5 * diag * a * a
    else:
        gap = a * m1 + upper * xi
    return gap if gap > 0.0 else 0.0


@njit(cache=True, nogil=True)
def newton_terms(code, cost, s):
    """``(loss, factor, weight)`` of a row in the primal Newton sums, at the shortfall ``s = 1 - m``.

    With ``xi = max(0, s)`` (NaN kept, as NumPy's ``maximum`` keeps it)::

        loss     loss(m)                      SQUARED_HINGE  xi^2
        factor   alpha_i = -C_i loss'(m)                     2 C_i xi
        weight   D_ii = C_i loss''(m)                        2 C_i if xi > 0 and C_i > 0, else 0

    so that ``f(w) = 1/2 ||w||^2 + sum C_i loss``, its gradient ``w - sum
    alpha_i y_i x_i`` and its generalised Hessian ``I + sum D_ii x_i x_i^T``
    are sums over rows (Keerthi and DeCoste 2005; :mod:`dask_streamsvm.engine.primal`).
    The hinge has no second derivative: its terms are the subgradient's
    (``xi``, ``C_i [xi > 0]``, 0), and the engine gives it no Newton solver.
    """
    xi = 0.0 if s <= 0.0 else s
    active = xi > 0.0 and cost > 0.0
    if code == SQUARED_HINGE:
        return xi * xi, 2.0 * cost * xi, 2.0 * cost if active else 0.0
    return xi, cost if xi > 0.0 else 0.0, 0.0


@njit(cache=True, nogil=True)
def newton_rows(code, cost, s, loss, factor, weight):
    """:func:`newton_terms` of every row: ``loss[i], factor[i], weight[i]`` at ``cost[i]``, ``s[i]``."""
    for i in range(s.shape[0]):
        loss[i], factor[i], weight[i] = newton_terms(code, cost[i], s[i])


@njit(cache=True, nogil=True)
def newton_losses(code, s, loss):
    """``loss[i]``: :func:`newton_terms`'s loss at every shortfall ``s[i]`` (the trial steps' values)."""
    for i in range(s.shape[0]):
        loss[i] = newton_terms(code, 1.0, s[i])[0]
