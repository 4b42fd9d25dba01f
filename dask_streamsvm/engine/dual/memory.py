"""The in-memory schedule: every row is cached, DCD runs pass after pass.

This is LIBLINEAR's ``solve_l2r_l1l2_svc`` driven one pass at a time so that
each pass ends with an exact certificate (``history``) and the stopping rule
is the relative duality gap, not the projected-gradient heuristic.  The
projected-gradient tolerance of the kernel only steers shrinking: it starts
at LIBLINEAR's 0.1 and is divided by ten each time the kernel finds the
full set optimal to that tolerance while the gap is still above ``tol``.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ...kernels.dcd import ProblemArrays, Shrinking, dcd_passes, row_sqnorms
from ...kernels.losses import upper_and_diag_arrays
from ...kernels.objective import add_weighted_rows
from ...kernels.rng import make_state
from ..plan.certificate import Certificate, binary_certificate, dual_value
from ..plan.losses import loss_of
from ..plan.result import FitResult, solve_each_problem
from .crammer_singer import solve_crammer_singer

# Start and floor of the projected-gradient tolerance that steers shrinking.
_PG_EPS_START = 0.1
_PG_EPS_FLOOR = 1e-14


def check_sqnorms(sqnorms):
    """A ValueError naming the first row whose ``||[phi(x), bias]||^2`` (``sqnorms``) is not finite.

    The input checks refuse raw rows whose ``x . x`` overflows; this catches
    what only the kernels see: a feature map's ``phi(x)`` or a large bias.
    """
    bad = ~np.isfinite(sqnorms)
    if bad.any():
        r = int(np.argmax(bad))
        raise ValueError(
            f"row {r}: its squared norm with the intercept feature, ||[phi(x), bias]||^2, overflows float64; "
            "no solver can learn from it. The features need scaling (e.g. sklearn.preprocessing."
            "StandardScaler or MaxAbsScaler), or a smaller intercept_scaling or feature map degree."
        )


@dataclass
class BinaryProblem:
    """A binary SVM dual in the form the DCD kernel reads.

    Parameters
    ----------
    X : 2-D ndarray or CSR tuple ``(indptr, indices, data)``
    y : float64 ndarray of +1/-1
    cost : float64 ndarray, ``C_i`` per row (0 drops the row)
    loss : str, a loss's name (:data:`~..plan.losses.LOSSES`)
    bias : float, value of the constant bias feature (0 for none)
    offset : ``(u, S)`` or None
        Rows held fixed outside the problem (:mod:`~..primal.sample_band`: rows a read found on the
        hinge's linear piece, ``alpha_i = C_i``): ``u = sum C_i y_i [x_i, b]`` and ``S = sum C_i``
        over them.  Then ``w = u + sum_i alpha_i y_i [x_i, b]``, the dual is ``S + sum_i alpha_i -
        1/2 ||w||^2`` (a lower bound on the optimum of the rows and the held ones together) and the
        primal ``1/2 ||w||^2 - u . w + S + sum_i C_i loss(m_i)`` (the hinge loss: the held rows'
        loss where they stay on their piece).
    """

    X: object
    y: np.ndarray
    cost: np.ndarray
    loss: str
    bias: float
    n_features: int
    offset: tuple = None
    upper: np.ndarray = field(init=False)
    diag: np.ndarray = field(init=False)
    qd: np.ndarray = field(init=False)

    def __post_init__(self):
        cost = self.cost
        self.upper, self.diag = upper_and_diag_arrays(cost, self.loss_code)
        self.qd = np.empty_like(cost)
        row_sqnorms(self.X, self.bias, self.qd)
        check_sqnorms(self.qd)
        self.qd += self.diag

    @property
    def loss_code(self):
        """The kernels' code of the loss (:mod:`~dask_streamsvm.kernels.losses`)."""
        return loss_of(self.loss).code

    def trainable_rows(self):
        """Row ids with ``C_i > 0``; rows of zero cost keep ``alpha_i = 0``."""
        return np.flatnonzero(self.cost > 0.0).astype(np.int64)

    def dcd(self, index, active_size, alpha, w, n_passes, eps, pg_max_old, pg_min_old, rng_state):
        """Run :func:`~dask_streamsvm.kernels.dcd.dcd_passes` on this problem's rows."""
        problem = ProblemArrays(self.y, self.upper, self.diag, self.qd, self.loss_code)
        shrinking = Shrinking(active_size, pg_max_old, pg_min_old)
        return dcd_passes(self.X, problem, index, alpha, w, self.bias, n_passes, eps, shrinking, rng_state)

    def certificate(self, alpha, w):
        cert = binary_certificate(
            self.X, self.y, self.cost, self.upper, self.diag, alpha, w, self.bias, self.loss_code
        )
        if self.offset is None:
            return cert
        u, S = self.offset
        return Certificate(primal=cert.primal - float(u @ w) + S, dual=cert.dual + S)

    def dual(self, alpha, w):
        """``D(alpha)`` from the sums of ``alpha`` and ``w`` (no pass over the rows)."""
        value = dual_value(alpha, self.upper, self.diag, w, self.loss_code)
        return value if self.offset is None else value + self.offset[1]

    def exact_w(self, alpha):
        """``w(alpha) = u + sum_i alpha_i y_i [x_i, b]`` rebuilt from scratch (``u``: the offset's, or 0)."""
        w = (
            np.zeros(self.n_features + 1)
            if self.offset is None
            else np.array(self.offset[0], dtype=np.float64)
        )
        add_weighted_rows(self.X, self.y, alpha, w, self.bias)
        return w


def _copied(source, into):
    """``into`` with ``source``'s values (``np.copyto``): the best point kept without a new array."""
    np.copyto(into, source)
    return into


def solve_in_memory(problem, *, tol, max_iter, seed, clock_start=None, on_pass=None, label=None, alpha=None):
    """Minimise the dual of ``problem`` until the relative gap is <= ``tol``, from ``alpha`` (a
    feasible dual point, copied; None: 0).

    Returns a :class:`~..plan.result.FitResult` of one problem (``w``, ``certificate``, ``alpha``, a
    bool ``converged``); ``history`` has one record per pass.  Unconverged, the
    weights returned are the certified ones of lowest primal value (the last pass's primal can
    be far above an earlier one's), with the last pass's dual, DCD's best.
    ``on_pass(record, w)``, when given, is called after each pass with its
    record and the current weights (bias last; do not modify them); a true
    return value stops the solve, which then certifies the current state.

    The dual value costs O(n) and is recorded after every pass.  The primal
    needs a pass over all rows (shrunk ones too), which late in a solve
    costs more than a DCD pass over the small active set; it is computed
    after the first pass, whenever the kernel finds the full set optimal to
    its projected-gradient tolerance, on the last allowed pass, and
    otherwise once DCD has visited as many rows since the previous
    certificate as a certificate reads (every pass while no row is shrunk).
    A row visit costs at least a certificate's read of that row, so
    certificates take at most half the time, and far less on full passes.
    The rule counts rows, not seconds, so the same seed gives the same
    model.  Passes without a certificate record ``primal`` and ``gap`` as
    NaN.  A KeyboardInterrupt after the first pass ends the solve with the
    current state, certified, and ``interrupted=True``.
    """
    clock = time.perf_counter
    clock_start = clock() if clock_start is None else clock_start
    n = problem.y.shape[0]
    alpha = np.zeros(n) if alpha is None else np.array(alpha, dtype=np.float64)
    w = problem.exact_w(alpha)
    index = problem.trainable_rows()
    active = index.shape[0]
    pg_max_old, pg_min_old = np.inf, -np.inf
    pg_eps = _PG_EPS_START
    rng_state = make_state(seed)
    history = []
    converged = False
    passes = 0
    cert = None  # the first pass always certifies (max_iter >= 1)
    n_trainable = index.shape[0]
    visited = 0  # rows visited by DCD since the last certificate
    stopped = False
    interrupted = False
    best_primal, best_w = np.inf, None  # the certified point of lowest primal value
    try:
        while passes < max_iter and not converged and not stopped:
            visited += active
            _, active, pg_max, pg_min, pg_max_old, pg_min_old, pg_converged = problem.dcd(
                index, active, alpha, w, 1, pg_eps, pg_max_old, pg_min_old, rng_state
            )
            passes += 1
            due = passes == 1 or pg_converged or passes == max_iter or visited >= n_trainable
            if due:
                cert = problem.certificate(alpha, w)
                if cert.relative_gap <= tol:
                    # Rebuild w from alpha so the final certificate carries no drift.
                    w = problem.exact_w(alpha)
                    cert = problem.certificate(alpha, w)
                    converged = cert.relative_gap <= tol
                visited = 0
                if cert.primal < best_primal:
                    # copied into one buffer: a new copy beside the old held w three times
                    best_primal, best_w = cert.primal, w.copy() if best_w is None else _copied(w, best_w)
            record = {
                "class": label,
                "pass": passes,
                "seconds": clock() - clock_start,
                "primal": cert.primal if due else np.nan,
                "dual": cert.dual if due else problem.dual(alpha, w),
                "gap": cert.relative_gap if due else np.nan,
                "active": int(active),
            }
            history.append(record)
            if on_pass is not None:
                stopped = bool(on_pass(record, w))
            if pg_converged and not converged:
                # The full set is optimal to pg_eps but the gap is not small
                # enough yet: tighten and restart shrinking from all rows.
                pg_eps = max(pg_eps * 0.1, _PG_EPS_FLOOR)
                pg_max_old, pg_min_old = np.inf, -np.inf
    except KeyboardInterrupt:
        # An interrupt lands between kernel calls, and each DCD step changes alpha_i and w
        # together: alpha is feasible, and its exact w is rebuilt and certified below.
        if passes == 0:
            raise
        interrupted, converged = True, False
    if not converged and passes > 0:
        w = problem.exact_w(alpha)
        cert = problem.certificate(alpha, w)
        # DCD's dual only rises, so the last is the best; its primal can swing from pass to pass
        # (unscaled features, a large C): the point returned is the certified one of lowest primal.
        if best_primal < cert.primal:
            w, cert = best_w, Certificate(primal=best_primal, dual=cert.dual)
    return FitResult(
        W=w[None, :],
        certificates=[cert],
        passes=passes,
        converged=converged,
        history=history,
        interrupted=interrupted,
        alpha=alpha,
    )


def solve_problems(rows, y_index, weights, plan, *, width, seeds, clock_start=None, hooks=None):
    """Solve every problem of ``plan`` on in-memory rows: a :class:`~..plan.result.FitResult` (``W``
    ``(n_problems, width + 1)``, Crammer-Singer's ``(k, width + 1)``: :func:`~..plan.problem.cs_model`;
    ``converged`` one per problem; ``interrupted`` if a KeyboardInterrupt ended a solve, ``W``
    certified all the same).

    ``rows`` is a kernel layout, ``y_index`` each row's class index,
    ``weights`` its sample weight, ``seeds`` one seed per problem.
    ``hooks``, when given, has ``memory(c)`` (the ``on_pass`` of binary
    problem ``c``) and ``joint`` (Crammer-Singer's).  An interrupt while a
    one-vs-rest class is still untrained propagates: no partial model.
    """
    if plan.crammer_singer:
        result = solve_crammer_singer(
            rows, y_index, plan.costs[0, y_index] * weights, k=plan.classes.shape[0], n_features=width,
            bias=plan.bias, tol=plan.tol, max_iter=plan.max_iter, seed=int(seeds[0]),
            clock_start=clock_start, on_pass=None if hooks is None else hooks.joint,
        )  # fmt: skip
        result.converged = [result.converged]
        return result

    def solve_one(c):
        problem = BinaryProblem(
            rows, plan.signs[c, y_index], plan.costs[c, y_index] * weights, plan.loss, plan.bias, width
        )
        return solve_in_memory(
            problem, tol=plan.tol, max_iter=plan.max_iter, seed=int(seeds[c]), clock_start=clock_start,
            on_pass=None if hooks is None else hooks.memory(c), label=plan.labels[c],
        )  # fmt: skip

    return solve_each_problem(solve_one, plan.labels[: plan.n_problems])
