"""The losses of the binary linear models as numba leaves, chosen by an integer code.

Every kernel that depends on the loss takes its code and asks a leaf here;
none branches on the loss itself.  A leaf sees one row: its margin
``m = y_i w . [x_i, b]`` or its shortfall ``s = 1 - m`` (``s <= 0`` past the
margin: every caller computes ``s`` this way, so passing it keeps each
rounding where it was), its weight ``C_i``, its dual variable ``alpha_i``
and the dual's ``(U_i, D_ii)``.  The losses (Hsieh et al. 2008, eq. 1 and
4; Yu, Huang and Lin 2011, eq. 1 and 4; LIBLINEAR ``-s 3``, ``-s 1`` and
``-s 7``)::

    code           loss(m)             U_i    D_ii          Newton weight
    HINGE          max(0, 1 - m)       C_i    0             (none: not twice differentiable)
    SQUARED_HINGE  max(0, 1 - m)^2     inf    1 / (2 C_i)   2 C_i on rows with m < 1
    LOGISTIC       log(1 + e^-m)       C_i    0             C_i sigma(m) sigma(-m) on every row

The two hinge losses have the same dual form (a box and a diagonal)::

    D(alpha) = sum_i (alpha_i - 1/2 D_ii alpha_i^2) - 1/2 ||w(alpha)||^2,   0 <= alpha_i <= U_i

and the logistic loss has an entropy in place of the linear and quadratic
terms (Yu, Huang and Lin 2011, eq. 4)::

    D(alpha) = sum_i H_i(alpha_i) - 1/2 ||w(alpha)||^2,   0 <= alpha_i <= C_i
    H_i(a)   = -a log(a / C_i) - (C_i - a) log(1 - a / C_i)     (>= 0, 0 at either end)

so every dual is a sum of per-row terms (:func:`dual_term`) less ``1/2
||w||^2``, and a pass keeps it from two running sums
(:func:`dual_sums_change`: ``sum alpha`` and ``sum D alpha^2`` for the
hinges, ``sum H`` and 0 for the logistic loss).  The dual coordinate step
(:func:`dual_gradient`, :func:`dual_step`) is a clipped Newton step for the
hinges and a one-dimensional Newton solve for the logistic loss; the engine's
side of each loss is :mod:`dask_streamsvm.engine.plan.losses`.

Two clipping conventions, each the one its callers always used: the dual
side's leaves treat a NaN shortfall as no loss of a hinge (``s > 0``
fails), the primal Newton sums' (:func:`newton_terms`) let it through as
NumPy's ``maximum(0, s)`` does, so that the certificate refuses it.  The
values of the codes are fixed: callers that pass the old boolean (``True``
for the squared hinge) get the same loss.
"""

import numpy as np
from numba import njit

HINGE = 0
SQUARED_HINGE = 1
LOGISTIC = 2
# The estimators' default loss (LIBLINEAR's): the code a row cache or dual store assumes when none is given.
DEFAULT = SQUARED_HINGE

# D_ii = 1 / (2 C_i) of the squared hinge, capped: a C_i so small that the quotient overflows
# (a subnormal weight) gives a huge finite D_ii, so D_ii * alpha_i stays 0 at alpha_i = 0.
MAX_DIAG = 1e300

# The logistic dual's gradient ``m + log(a / (C - a))`` is infinite at either end of the box; at an
# end the leaves take the distance to it as EDGE * C (the spacing of float64 numbers just below C:
# no alpha closer to C than that is a float), so that a row at an end has a finite gradient that
# says whether it wants to leave it, as a hinge's bound row does.  Inside the box the gradient is
# exact, however near an end.
EDGE = 2.0**-53
TINY = 5e-324  # the smallest positive float: EDGE * C of a subnormal C
# The logistic coordinate step's Newton iterations: at most INNER_STEPS, each ending where the
# subproblem's derivative is at most INNER_SHARE of the row's gradient where the step started (an
# inexact coordinate minimum that still cuts the row's gradient tenfold), or INNER_FLOOR (the
# smallest projected gradient the kernels step on, :data:`~.dcd.PG_SKIP`), or stops changing; an
# iterate that leaves the box is pulled back to INNER_BACK of where it was (Yu, Huang and Lin
# 2011, Algorithm 3's xi = 0.1).
INNER_STEPS = 100
INNER_BACK = 0.1
INNER_SHARE = 0.1
INNER_FLOOR = 1e-12


@njit(cache=True, nogil=True, inline="always")
def softplus(x):
    """``log(1 + e^x)`` without overflow, to full precision for either sign of ``x``."""
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@njit(cache=True, nogil=True, inline="always")
def sigmoid(x):
    """``1 / (1 + e^-x)`` without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@njit(cache=True, nogil=True, inline="always")
def log_ratio(num, den):
    """``log(num / den)`` of two positive numbers, also where their quotient under- or overflows
    (a dual variable far below its row's weight): then ``log(num) - log(den)``."""
    r = num / den
    if r > 0.0 and r < np.inf:
        return np.log(r)
    return np.log(num) - np.log(den)


@njit(cache=True, nogil=True, inline="always")
def _logistic_parts(m):
    """``(e, tail)`` of a margin: ``e = exp(-|m|)`` and ``tail = log(1 + e) = log(1 + e^-|m|)``, from
    which the Newton leaves make the loss, ``sigma(+-m)`` and the entropy with no other
    transcendental function (a NaN margin gives NaNs)."""
    e = np.exp(-abs(m))
    return e, np.log1p(e)


@njit(cache=True, nogil=True, inline="always")
def loss_value(code, s):
    """``loss(m)`` at the shortfall ``s = 1 - m``.

    ::

        HINGE          max(0, s)
        SQUARED_HINGE  max(0, s)^2
        LOGISTIC       log(1 + e^(s - 1))
    """
    if code == LOGISTIC:
        return softplus(s - 1.0)
    if s > 0.0:
        if code == SQUARED_HINGE:
            return s * s
        return s
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def loss_derivative(code, s):
    """``d loss / d m`` at the shortfall ``s = 1 - m`` (the hinge's right derivative at its kink).

    ::

        HINGE          -1 if s > 0 else 0
        SQUARED_HINGE  -2 max(0, s)
        LOGISTIC       -sigma(-m) = -sigma(s - 1)
    """
    if code == LOGISTIC:
        return -sigmoid(s - 1.0)
    if s > 0.0:
        if code == SQUARED_HINGE:
            return -2.0 * s
        return -1.0
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def weighted_loss(code, cost, s):
    """``C_i loss(m)`` at the shortfall ``s = 1 - m``, multiplied as the primal sums always were.

    ::

        HINGE          C_i s       if s > 0, else 0
        SQUARED_HINGE  C_i s s     if s > 0, else 0   (``(C_i s) s``)
        LOGISTIC       C_i log(1 + e^(s - 1))          (every row: the loss is never 0)
    """
    if code == LOGISTIC:
        return cost * softplus(s - 1.0)
    if s > 0.0:
        if code == SQUARED_HINGE:
            return cost * s * s
        return cost * s
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def upper_and_diag(code, cost):
    """``(U_i, D_ii)`` of a row of weight ``C_i = cost`` in the binary dual (Hsieh et al. 2008, eq. 4).

    ::

        C_i <= 0        U_i = 0,     D_ii = 0      (the row has no weight: alpha_i = 0)
        HINGE           U_i = C_i,   D_ii = 0
        SQUARED_HINGE   U_i = inf,   D_ii = min(1 / (2 C_i), MAX_DIAG)
        LOGISTIC        U_i = C_i,   D_ii = 0      (the box of the entropy's alpha_i)

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


@njit(cache=True, nogil=True, inline="always")
def box_loss(code, s, upper, diag):
    """``C_i loss(m)`` at the shortfall ``s = 1 - m`` of a row known by its ``(U_i, D_ii)`` only.

    The row cache keeps ``U`` and ``D``, not ``C``: the squared hinge's
    ``C_i = 1 / (2 D_ii)``, the hinge's and the logistic loss's ``C_i = U_i``::

        SQUARED_HINGE  s^2 / (2 D_ii)          (D_ii > 0: a row of weight)
        HINGE          U_i s                   (and a row of no weight: U_i = 0)
        LOGISTIC       U_i log(1 + e^(s - 1))

    for ``s > 0`` (the hinges), else 0; the logistic loss at every ``s``.
    """
    if code == LOGISTIC:
        return upper * softplus(s - 1.0)
    if s > 0.0:
        if code == SQUARED_HINGE and diag > 0.0:
            return s * s / (2.0 * diag)
        return upper * s
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def entropy(a, upper):
    """The logistic dual's row term ``H(a) = -a log(a / C) - (C - a) log(1 - a / C)``, ``C = upper``.

    ``>= 0`` on ``0 <= a <= C``, 0 at either end (``0 log 0 = 0``) and for a
    row of no weight.  Each logarithm is taken of the smaller of ``a / C``
    and ``1 - a / C`` directly and of the larger by ``log1p``, so that a
    dual variable near either end of its box keeps every digit.
    """
    if not upper > 0.0:
        return 0.0
    rest = upper - a
    if a <= 0.0 or rest <= 0.0:
        return 0.0
    if a <= rest:
        return -(a * log_ratio(a, upper) + rest * np.log1p(-a / upper))
    return -(a * np.log1p(-rest / upper) + rest * log_ratio(rest, upper))


@njit(cache=True, nogil=True, inline="always")
def dual_term(code, a, upper, diag):
    """Row ``i``'s term of the dual ``D(alpha) = sum_i term_i - 1/2 ||w(alpha)||^2``::

        HINGE, SQUARED_HINGE   alpha_i - 1/2 D_ii alpha_i^2
        LOGISTIC               H_i(alpha_i)   (:func:`entropy`)

    (the conjugate of the loss at ``-alpha_i``, negated: ``-C_i loss*(-alpha_i / C_i)``).
    The streaming schedules keep its sums (:func:`dual_sums_change`).
    """
    if code == LOGISTIC:
        return entropy(a, upper)
    return a - 0.5 * diag * a * a


@njit(cache=True, nogil=True)
def dual_term_sum(code, alpha, upper, diag):
    """``sum_i`` :func:`dual_term` of every row (``alpha``, ``upper``, ``diag``: float64 arrays)."""
    total = 0.0
    for i in range(alpha.shape[0]):
        total += dual_term(code, alpha[i], upper[i], diag[i])
    return total


@njit(cache=True, nogil=True, inline="always")
def dual_sums_change(code, new, old, upper, diag):
    """What ``alpha_i: old -> new`` adds to the dual's two running sums.

    ``D(alpha) = sums[0] - 1/2 sums[1] - 1/2 ||w||^2`` for every loss here
    (:func:`dual_term`), so the two sums and ``w`` give the dual of rows no
    longer in memory::

        HINGE, SQUARED_HINGE   (sum alpha, sum D alpha^2):  (new - old, D_ii (new^2 - old^2))
        LOGISTIC               (sum H, 0):                  (H(new) - H(old), 0)
    """
    if code == LOGISTIC:
        return entropy(new, upper) - entropy(old, upper), 0.0
    return new - old, diag * (new * new - old * old)


@njit(cache=True, nogil=True, inline="always")
def dual_gradient(code, m, a, upper, diag):
    """``G_i``, the gradient of the dual (minimised, ``-D``) in ``alpha_i``, at the margin ``m``.

    ::

        HINGE, SQUARED_HINGE   m - 1 + D_ii alpha_i
        LOGISTIC               m + log(alpha_i / (C_i - alpha_i))

    The logistic loss's is infinite at the ends of the box: at ``alpha_i = 0``
    or ``C_i`` the distance to that end counts as ``EDGE * C_i`` (:data:`EDGE`),
    so that the row's gradient is finite, its sign saying whether it wants
    to leave the end (0 for a row of no weight); inside the box it is exact.
    The kernels' bound tests (``alpha_i = 0``, ``alpha_i = U_i``) and
    projected gradients then read it as a hinge's.
    """
    if code == LOGISTIC:
        if not upper > 0.0:
            return 0.0
        floor = max(EDGE * upper, TINY)
        rest = upper - a
        return m + log_ratio(a if a > 0.0 else floor, rest if rest > 0.0 else floor)
    return m - 1.0 + diag * a


@njit(cache=True, nogil=True)
def _logistic_step(m, a, upper, q, tol):
    """The logistic dual's coordinate minimum (Yu, Huang and Lin 2011, section 3, Algorithm 3).

    Row ``i`` with ``C = upper``, ``Q_ii = q`` and margin ``m`` at ``alpha_i = a``:
    the new ``z`` minimises

        phi(z) = z log z + (C - z) log(C - z) + q/2 (z - a)^2 + m (z - a)   on (0, C),

    whose derivative ``log(z / (C - z)) + q (z - a) + m`` is increasing.  Its
    root is at most ``C/2`` when the derivative at ``C/2`` is >= 0; otherwise
    the step solves for ``t = C - z`` (the same problem with ``a -> C - a``,
    ``m -> -m``), so that the variable solved for is the one near 0, where
    floats are dense.  On ``(0, C/2]`` the derivative is concave, so Newton's
    iterates from below the root rise to it monotonically and one from above
    lands below it (or out of the box, then pulled back to :data:`INNER_BACK`
    of the iterate); they stop at the tolerance ``tol``, where an iterate no
    longer changes, or after :data:`INNER_STEPS`.  Starting where the row is
    (or, from an end of the box or the other half, at a tenth of the way or
    the root without the quadratic term, ``C sigma(-m)``).  ``tol``: the
    derivative's tolerance.
    """
    half = 0.5 * upper
    if q * (half - a) + m >= 0.0:
        start, b, flip = a, m, False
    else:
        start, b, flip = upper - a, -m, True
    t = start
    if not t > 0.0:
        t = min(upper * sigmoid(-b), half)
        if not t > 0.0:  # sigma(-b) underflows: the root is closer to the end than any float
            return upper if flip else 0.0
    elif t > half:
        t = INNER_BACK * t
    for _ in range(INNER_STEPS):
        f = log_ratio(t, upper - t) + q * (t - start) + b
        if not abs(f) > tol:  # converged (or a NaN margin: the row stays)
            break
        nt = t - f / (1.0 / t + 1.0 / (upper - t) + q)  # phi'' = C / (t (C - t)) + q
        if nt <= 0.0:
            nt = INNER_BACK * t
        elif nt > half:
            nt = half
        if nt == t:
            break
        t = nt
    if not t == t:
        return a
    return upper - t if flip else t


@njit(cache=True, nogil=True, inline="always")
def dual_step(code, m, g, a, upper, q):
    """The new ``alpha_i`` of a coordinate step on row ``i``: the minimum of the dual along it.

    ``m`` the row's margin, ``g`` its :func:`dual_gradient`, ``a`` its
    ``alpha_i``, ``upper`` its ``U_i`` and ``q`` its ``Qbar_ii = Q_ii + D_ii``
    (the logistic step's tolerance: :data:`INNER_SHARE` of ``|g|``)::

        HINGE, SQUARED_HINGE   min(max(a - g / q, 0), U_i)     (Hsieh et al. 2008, Algorithm 1)
        LOGISTIC               the root of the entropy's 1-D problem (:func:`_logistic_step`)

    ``q = 0`` (an empty row, no bias): a hinge's dual is linear in
    ``alpha_i`` with slope ``g = -1`` and its optimum is the bound (LIBLINEAR
    gets there by dividing by zero); the logistic step needs no quadratic
    term.
    """
    if code == LOGISTIC:
        if not upper > 0.0:
            return 0.0
        return _logistic_step(m, a, upper, q, max(INNER_SHARE * abs(g), INNER_FLOOR))
    if q > 0.0:
        return min(max(a - g / q, 0.0), upper)
    return upper if g < 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def row_gap(code, m, g, a, upper, diag):
    """Row ``i``'s share of the duality gap, ``P(w) - D(alpha) = sum_i gap_i`` (Dünner et al. 2017).

    With ``w = sum_j alpha_j y_j [x_j, b]``, ``||w||^2 = sum_i alpha_i m_i``
    (``m_i = y_i w . [x_i, b]``), so the gap splits by rows::

        gap_i = alpha_i m_i + C_i loss(m_i) - term_i        (:func:`dual_term`)

        HINGE, SQUARED_HINGE   alpha_i (m_i - 1) + C_i loss(m_i) + 1/2 D_ii alpha_i^2
        LOGISTIC               alpha_i m_i + C_i log(1 + e^-m_i) - H_i(alpha_i)

    (:func:`box_loss`: the hinge's ``U_i = C_i``, ``D_ii = 0``; the squared
    hinge's ``C_i = 1 / (2 D_ii)``; the logistic loss's ``C_i = U_i``).  Each
    term is >= 0 (Fenchel-Young), and 0 exactly for a hinge's row at
    ``alpha_i = 0`` with ``m_i >= 1``: a row that needs no training.  ``g``
    is the :func:`dual_gradient` the trainer computes anyway, from which the
    hinges' gap is taken (``m_i - 1 = g - D_ii alpha_i``); the logistic
    loss's is taken from ``m``.
    """
    if code == LOGISTIC:
        gap = a * m + upper * softplus(-m) - entropy(a, upper)
        return gap if gap > 0.0 else 0.0
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

                                      SQUARED_HINGE                    LOGISTIC
        loss     loss(m)                      xi^2                             log(1 + e^-m)
        factor   alpha_i = -C_i loss'(m)      2 C_i xi                         C_i sigma(-m)
        weight   D_ii = C_i loss''(m)         2 C_i if xi > 0 and C_i > 0      C_i sigma(m) sigma(-m)
                                              (else 0)

    so that ``f(w) = 1/2 ||w||^2 + sum C_i loss``, its gradient ``w - sum
    alpha_i y_i x_i`` and its generalised Hessian ``I + sum D_ii x_i x_i^T``
    are sums over rows (Keerthi and DeCoste 2005; :mod:`dask_streamsvm.engine.primal.newton`).
    The hinge has no second derivative: its terms are the subgradient's
    (``xi``, ``C_i [xi > 0]``, 0), and the engine gives it no Newton solver.
    """
    if code == LOGISTIC:
        m = 1.0 - s
        e, tail = _logistic_parts(m)
        p = e / (1.0 + e) if m >= 0.0 else 1.0 / (1.0 + e)  # sigma(-m)
        weight = cost * (e / ((1.0 + e) * (1.0 + e))) if cost > 0.0 else 0.0  # sigma(m) sigma(-m)
        return (tail if m >= 0.0 else tail - m), cost * p, weight
    xi = 0.0 if s <= 0.0 else s
    active = xi > 0.0 and cost > 0.0
    if code == SQUARED_HINGE:
        return xi * xi, 2.0 * cost * xi, 2.0 * cost if active else 0.0
    return xi, cost if xi > 0.0 else 0.0, 0.0


@njit(cache=True, nogil=True)
def add_trial_losses(run, cost, m0, dm, steps, code):
    """``run[t] += cost * loss(1 - m0 - dm * steps[t])`` for every trial step ``t`` (the loss of code
    ``code``, :func:`newton_terms`).  The squared hinge's, ``xi^2`` with ``xi = max(0, s)``
    (NaN kept), in a loop of its own without the general terms' branches: the same values (100,000 x
    60 float32 rows of 0..255, one thread, 2026-12-05: a read's sums with trial losses 52.8 ns a row
    where 56.7; 31.8 without them)."""
    if code == SQUARED_HINGE:
        for t in range(steps.shape[0]):
            s = 1.0 - m0 - dm * steps[t]
            xi = 0.0 if s <= 0.0 else s
            run[t] += cost * (xi * xi)
        return
    for t in range(steps.shape[0]):
        run[t] += cost * newton_terms(code, 1.0, 1.0 - m0 - dm * steps[t])[0]


@njit(cache=True, nogil=True)
def newton_dual_term(code, cost, s, factor):
    """What a row adds to the Newton read's dual sum (``Loss.newton_dual`` of the engine),
    at the shortfall ``s = 1 - m`` and its :func:`newton_terms` ``factor = alpha_i(w)``::

        SQUARED_HINGE  alpha_i             (the dual's other term is the loss sum itself)
        LOGISTIC       H_i(alpha_i) = C_i (sigma(-m) log(1 + e^m) + sigma(m) log(1 + e^-m))
                                    = C_i (log(1 + e^-|m|) + |m| sigma(-|m|))

    the logistic loss's entropy taken from the margin, exact where
    ``alpha_i = C_i sigma(-m)`` is too close to 0 or ``C_i`` to tell apart (the
    entropy of ``p`` and ``1 - p`` is one: the second form adds two positive
    terms, no cancellation).
    """
    if code == LOGISTIC:
        if not cost > 0.0:
            return 0.0
        m = 1.0 - s
        e, tail = _logistic_parts(m)
        return cost * (tail + abs(m) * (e / (1.0 + e)))
    return factor


@njit(cache=True, nogil=True)
def newton_rows(code, cost, s, loss, factor, weight):
    """:func:`newton_terms` of every row: ``loss[i], factor[i], weight[i]`` at ``cost[i]``, ``s[i]``."""
    for i in range(s.shape[0]):
        loss[i], factor[i], weight[i] = newton_terms(code, cost[i], s[i])


@njit(cache=True, nogil=True)
def newton_dual_rows(code, cost, s, factor, out):
    """:func:`newton_dual_term` of every row: ``out[i]`` at ``cost[i]``, ``s[i]``, ``factor[i]``."""
    for i in range(s.shape[0]):
        out[i] = newton_dual_term(code, cost[i], s[i], factor[i])


@njit(cache=True, nogil=True)
def newton_losses(code, s, loss):
    """``loss[i]``: :func:`newton_terms`'s loss at every shortfall ``s[i]`` (the trial steps' values)."""
    for i in range(s.shape[0]):
        loss[i] = newton_terms(code, 1.0, s[i])[0]


@njit(cache=True, nogil=True, inline="always")
def curvature_bound(code):
    """The largest second derivative ``loss''(m)`` over every margin, or ``inf`` where there is none::

        HINGE          inf   (a kink: no bound, no second derivative)
        SQUARED_HINGE  2
        LOGISTIC       1/4   (sigma(m) sigma(-m) <= 1/4)

    so that ``sum_i C_i loss(m_i + t v_i) <= sum_i C_i loss(m_i) + t G + t^2/2 bound sum_i C_i
    v_i^2``: the L1 solver's line search accepts a step on this bound before it sums the loss
    (LIBLINEAR's ``appxcond`` in ``solve_l1r_l2_svc``, Yuan et al. 2010, section 4.1.2).
    """
    if code == LOGISTIC:
        return 0.25
    if code == SQUARED_HINGE:
        return 2.0
    return np.inf
