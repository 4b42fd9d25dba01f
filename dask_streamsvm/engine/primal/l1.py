"""The L1 and elastic-net penalties in memory: CDN over the features, certified by a duality gap.

For each binary problem (one-vs-rest for more classes), with the bias a
column of constant value ``bias`` regularised like any weight (LIBLINEAR's
``-s 5`` and ``-s 6``, scikit-learn's ``liblinear``) and ``r`` the plan's
``l1_ratio`` (``0 < r <= 1``)::

    P(w) = r ||w||_1 + (1 - r)/2 ||w||^2 + sum_i C_i loss(y_i w . x_i)

is minimised by coordinate descent with a Newton direction and a line
search per coordinate (:mod:`dask_streamsvm.kernels.coordinate`, CDN: Yuan
et al. 2010; LIBLINEAR's ``solve_l1r_l2_svc``), a pass at a time, so that
passes end with an exact certificate and ``tol`` is the relative duality
gap, as for every other solver.  The projected-gradient rule of LIBLINEAR
(the violations' sum at most ``eps`` times the first pass's) only steers
shrinking and when to certify: ``eps`` starts at :data:`EPS_START` and is
divided by ten each time the full set meets it while the gap is still
above ``tol``.

The certificate (Fenchel duality, as glmnet-style solvers and celer build
it).  With ``alpha_i = -C_i loss'(m_i)`` at ``w`` (the L2 Newton path's dual
point, :func:`~dask_streamsvm.kernels.losses.newton_terms`) and ``v =
sum_i alpha_i y_i x_i``, the dual of ``P`` is::

    D(alpha) = sum_i dual_term_i(alpha_i) - g*(v)

with the loss's row terms (:func:`~dask_streamsvm.kernels.losses.dual_term`)
and ``g*`` the conjugate of the penalty ``g(w) = r ||w||_1 + (1 - r)/2 ||w||^2``::

    0 < r < 1:  g*(v) = sum_j max(|v_j| - r, 0)^2 / (2 (1 - r))       (finite everywhere)
    r = 1:      g*(v) = 0 if ||v||_inf <= 1, else infinite

so for pure L1 the dual point is scaled, ``alpha * min(1, 1 / ||v||_inf)``
(:func:`dual_scale`), to be feasible; for the elastic net it is not.  Weak
duality gives ``D <= P* <= P(w)``, so the relative gap ``(P - D) / P`` bounds
the relative suboptimality of ``objective_``; at the optimum ``alpha(w*)`` is
the dual optimum and the gap is zero.
"""

import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ...kernels.coordinate import BETA, SIGMA, cdn_pass, column_curvatures
from ...kernels.losses import curvature_bound, dual_term_sum, newton_rows, upper_and_diag_arrays
from ...kernels.rng import make_state
from ..plan.certificate import Certificate, check_gap
from ..plan.losses import loss_of
from ..plan.problem import SPARSE_PENALTY_SOLVER
from ..plan.result import FitResult, solve_each_problem

# LIBLINEAR's stopping tolerance of its primal solvers (-s 5, -s 6: eps = 0.01): the first
# projected-gradient tolerance, divided by ten (to EPS_FLOOR at least) each time the full set meets
# it while the gap is above tol.
EPS_START = 0.01
EPS_FLOOR = 1e-14
# The name history_ records for this solver ("solver").
SOLVER_NAME = SPARSE_PENALTY_SOLVER
# Newton steps on the support (:func:`support_newton`) before each certificate: at most this many, on
# a support of at most MAX_SUPPORT weights (its Hessian is formed), each accepted by Armijo's rule
# with the kernels' constants (SIGMA, BETA) within MIN_STEP_LENGTH.
SUPPORT_STEPS = 5
MAX_SUPPORT = 1024
MIN_STEP_LENGTH = 1e-10
# The Hessian's ridge on the support, relative to its mean diagonal: collinear columns in the support
# (one-hot groups beside the bias column) make X_A^T D X_A singular.
RIDGE = 1e-9


def column_layout(X, bias):
    """``[X, bias]`` as a CSC matrix: the features' columns, then the bias column (empty for
    ``bias = 0``: its weight stays 0).  A dense ``X`` is stored by its nonzeros."""
    n = X.shape[0]
    columns = sp.csc_matrix(X) if sp.issparse(X) else sp.csc_matrix(np.asarray(X))
    last = sp.csc_matrix(np.full((n, 1), float(bias))) if bias else sp.csc_matrix((n, 1))
    out = sp.hstack([columns, last], format="csc")
    out.sum_duplicates()
    return out


def _kernel_columns(matrix):
    """The kernels' ``(indptr, indices, data)`` of a CSC matrix."""
    return (matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64), matrix.data)


def dual_scale(v, l1, l2):
    """The factor that makes ``alpha`` dual feasible: ``min(1, l1 / ||v||_inf)`` for pure L1
    (``l2 = 0``), 1 for the elastic net (its conjugate is finite everywhere)."""
    if l2 > 0.0 or v.shape[0] == 0:
        return 1.0
    top = float(np.max(np.abs(v)))
    return 1.0 if top <= l1 else l1 / top


def penalty_conjugate(v, l1, l2):
    """``g*(v)`` of ``g(w) = l1 ||w||_1 + l2/2 ||w||^2`` at a ``v`` inside its domain (module docstring)."""
    if l2 == 0.0:
        return 0.0
    excess = np.maximum(np.abs(v) - l1, 0.0)
    return float(excess @ excess) / (2.0 * l2)


def _row_terms(columns, y, cost, code, w):
    """``(s, loss, alpha, weight)`` of every row at ``w``: the shortfalls ``1 - m_i`` and their
    :func:`~dask_streamsvm.kernels.losses.newton_terms`."""
    s = 1.0 - y * (columns @ w)
    n = s.shape[0]
    loss, alpha, weight = np.empty(n), np.empty(n), np.empty(n)
    newton_rows(code, cost, s, loss, alpha, weight)
    return s, loss, alpha, weight


def primal_value(columns, y, cost, code, w, penalty):
    """``P(w)`` (module docstring)."""
    l1, l2 = penalty
    loss = _row_terms(columns, y, cost, code, w)[1]
    return l1 * float(np.abs(w).sum()) + 0.5 * l2 * float(w @ w) + float(cost @ loss)


def support_newton(columns, y, cost, code, w, penalty, steps=SUPPORT_STEPS):
    """Newton steps on the support of ``w`` with its signs held, in place: ``w``'s number of steps.

    On the support ``A`` with signs ``sigma`` the penalty is smooth, ``l1 sigma . u + l2/2 ||u||^2``:
    the step solves ``H p = -g`` with ``g = l1 sigma + l2 u - X_A^T (alpha y)`` and ``H = l2 I +
    X_A^T D X_A`` (``D_ii = C_i loss''(m_i)``), and its length is Armijo's on ``P`` itself.  Coordinate
    descent is slow where columns are correlated (a9a's one-hot groups: LIBLINEAR's ``-s 5`` takes
    13,345 passes to ``eps = 1e-10`` on 5,000 of its rows), and its point's dual, scaled to be
    feasible, is then poor; once the support is right these steps make the support's gradient
    vanish, and the certificate follows (the zeros' violations are what is left).  A weight the
    step would take across zero stops at zero (the projection on the signs' orthant, as OWL-QN's),
    so the support only shrinks: which weights leave zero is coordinate descent's to find.  They
    stop where a step is refused, and on supports wider than MAX_SUPPORT.
    """
    l1, l2 = penalty
    value = primal_value(columns, y, cost, code, w, penalty)
    for step in range(steps):
        support = np.flatnonzero(w)
        if support.size == 0 or support.size > MAX_SUPPORT:
            return step
        sign = np.sign(w[support])
        part = columns[:, support]
        _, _, alpha, weight = _row_terms(columns, y, cost, code, w)
        g = l1 * sign + l2 * w[support] - part.T @ (alpha * y)
        H = (part.T @ part.multiply(weight[:, None])).toarray()
        H[np.diag_indices_from(H)] += l2 + RIDGE * max(1.0, float(np.trace(H)) / support.size)
        try:
            p = -scipy.linalg.solve(H, g, assume_a="pos")
        except (np.linalg.LinAlgError, ValueError):
            return step
        length = 1.0
        while length >= MIN_STEP_LENGTH:
            moved = w[support] + length * p
            moved[np.sign(moved) != sign] = 0.0  # a weight that crosses zero stops at zero (its orthant)
            trial = w.copy()
            trial[support] = moved
            trial_value = primal_value(columns, y, cost, code, trial, penalty)
            if trial_value <= value + SIGMA * float(g @ (moved - w[support])):
                break
            length *= BETA
        else:
            return step
        w[support], value = moved, trial_value
    return steps


def certify(columns, y, cost, code, w, penalty):
    """``(certificate, s)``: the exact certificate of ``w`` (module docstring) and the rows'
    shortfalls ``s = 1 - y_i w . x_i``, rebuilt from ``w`` (``columns``: :func:`column_layout`)."""
    l1, l2 = penalty
    s, loss, alpha, _ = _row_terms(columns, y, cost, code, w)
    primal = l1 * float(np.abs(w).sum()) + 0.5 * l2 * float(w @ w) + float(cost @ loss)
    v = columns.T @ (alpha * y)
    scale = dual_scale(v, l1, l2)
    upper, diag = upper_and_diag_arrays(cost, code)
    dual = dual_term_sum(code, scale * alpha, upper, diag) - penalty_conjugate(scale * v, l1, l2)
    return Certificate(primal=primal, dual=float(dual)), s


def solve_l1(
    columns,
    y,
    cost,
    code,
    penalty,
    *,
    tol,
    max_iter,
    seed,
    clock_start=None,
    on_pass=None,
    label=None,
    start=None,
):
    """Minimise ``P`` (module docstring) of one binary problem until its relative gap is at most
    ``tol``: a :class:`~..plan.result.FitResult` of one problem, a record per pass in ``history``.

    ``columns``: :func:`column_layout` of the rows; ``y`` +1/-1; ``cost`` ``C_i``; ``code`` the
    kernels' code of the loss; ``penalty`` ``(l1, l2)``.  A pass is certified (its ``primal``,
    ``dual`` and ``gap``; NaN otherwise) when it is the first or the last, when the full set meets
    the projected-gradient tolerance, or once the passes since the last certificate visited as
    many columns as there are (a certificate reads every column once, as a full pass does).
    ``on_pass(record, w)``: after each pass; a true return value stops the solve.  A
    KeyboardInterrupt after the first pass ends it with the current ``w``, certified.  ``start``: the
    weights the passes start from (the bias's last; None: 0).
    """
    clock = time.perf_counter
    clock_start = clock() if clock_start is None else clock_start
    cols = _kernel_columns(columns)
    n_cols = columns.shape[1]
    w = np.zeros(n_cols) if start is None else np.array(start, dtype=np.float64)
    s = 1.0 - y * (columns @ w)
    index = np.arange(n_cols, dtype=np.int64)
    curvature = np.empty(n_cols)
    column_curvatures(cols, cost, curvature_bound(code), curvature)
    rng_state = make_state(seed)
    active, gmax_old, eps, first_norm = n_cols, np.inf, EPS_START, None
    history, passes, visited = [], 0, 0
    cert, best_dual = None, -np.inf
    converged = stopped = interrupted = False
    try:
        while passes < max_iter and not converged and not stopped:
            visited += active
            active, gmax, gnorm1, refused = cdn_pass(
                cols, y, cost, code, penalty, w, s, index, active, gmax_old, curvature, rng_state
            )
            passes += 1
            first_norm = gnorm1 if first_norm is None else first_norm
            met = gnorm1 <= eps * first_norm
            due = passes == 1 or met or passes == max_iter or visited >= n_cols
            polished = 0
            if due:
                polished = support_newton(columns, y, cost, code, w, penalty) if not converged else 0
                cert, s = _certified(columns, y, cost, code, w, penalty, best_dual)
                best_dual, visited = cert.dual, 0
                converged = cert.relative_gap <= tol
            record = {
                "class": label, "pass": passes, "seconds": clock() - clock_start,
                "primal": cert.primal if due else np.nan, "dual": cert.dual if due else np.nan,
                "gap": cert.relative_gap if due else np.nan, "active": int(active),
                "nonzeros": int(np.count_nonzero(w)), "refused_steps": int(refused),
                "support_steps": polished, "solver": SOLVER_NAME,
            }  # fmt: skip
            history.append(record)
            if on_pass is not None:
                stopped = bool(on_pass(record, w))
            if met and not converged and active < n_cols:  # LIBLINEAR: the whole set, unshrunk
                active, gmax_old = n_cols, np.inf
                continue
            if met and not converged:
                eps = max(eps * 0.1, EPS_FLOOR)
            gmax_old = gmax
    except KeyboardInterrupt:
        # An interrupt lands between passes: w is whole; its certificate is computed below.
        if passes == 0:
            raise
        interrupted, converged = True, False
    if not converged:
        cert, _ = _certified(columns, y, cost, code, w, penalty, best_dual)
    return FitResult(
        W=w[None, :], certificates=[cert], passes=passes, converged=converged, history=history,
        interrupted=interrupted,
    )  # fmt: skip


def _certified(columns, y, cost, code, w, penalty, best_dual):
    """:func:`certify`, with the best dual value seen (weak duality holds for any dual point)."""
    cert, s = certify(columns, y, cost, code, w, penalty)
    cert = check_gap(Certificate(primal=cert.primal, dual=max(cert.dual, best_dual)), "the L1 solver")
    return cert, s


def solve_l1_problems(X, y_index, weights, plan, *, seeds, clock_start=None, hooks=None, start=None):
    """Every problem of ``plan`` (its ``l1_ratio`` > 0) on in-memory rows ``X``: a
    :class:`~..plan.result.FitResult` with ``W`` ``(n_problems, n_features + 1)``, the bias weight
    last, and ``converged`` one per problem.  ``hooks``: as for
    :func:`~..dual.memory.solve_problems` (``memory(c)``), or None; ``start``: each problem's first
    weights, ``(n_problems, n_features + 1)`` (None: 0).  An interrupt while a one-vs-rest class is
    still untrained propagates: no partial model."""
    columns = column_layout(X, plan.bias)
    code = loss_of(plan.loss).code
    penalty = (float(plan.l1_ratio), 1.0 - float(plan.l1_ratio))

    def solve_one(c):
        return solve_l1(
            columns, plan.signs[c, y_index], plan.costs[c, y_index] * weights, code, penalty,
            tol=plan.tol, max_iter=plan.max_iter, seed=int(seeds[c]), clock_start=clock_start,
            on_pass=None if hooks is None else hooks.memory(c), label=plan.labels[c],
            start=None if start is None else start[c],
        )  # fmt: skip

    return solve_each_problem(solve_one, plan.labels[: plan.n_problems])
