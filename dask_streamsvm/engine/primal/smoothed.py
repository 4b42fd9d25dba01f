"""The hinge loss solved in memory by Newton steps on its smoothed form, certified by its own dual.

The hinge ``max(0, 1 - m)`` has no second derivative, so the primal Newton solver
(:mod:`.newton`) cannot minimise it, and dual coordinate descent, which can, stalls where the
columns have scales of their own (raw 0..255 values: a gap of 0.998 after any number of passes,
issue 52).  Its smoothed form (the Huber hinge of Chapelle, "Training a support vector machine in
the primal", Neural Computation 2007)::

    h_mu(m) = 0                     m >= 1
              (1 - m)^2 / (2 mu)    1 - mu < m < 1
              1 - m - mu / 2        m <= 1 - mu

is piecewise quadratic, so Newton steps minimise

    F_mu(w) = 1/2 ||w||^2 - u . w + S + sum_i C_i h_mu(y_i w . x~_i),   x~_i = (x_i, bias)

exactly in finitely many steps whatever the scales (Keerthi and DeCoste's finite Newton method).
``u`` and ``S`` are an offset: the sums ``sum C_i y_i x~_i`` and ``sum C_i`` of rows held fixed on
the hinge's linear piece (:mod:`.sample_band`: the rows a read found far inside the margin); 0
for a problem of its own rows.

The certificate is the hinge's, not the smoothed loss's.  At any ``w`` the point
``alpha_i = -C_i h_mu'(m_i) = C_i clip((1 - m_i) / mu, 0, 1)`` lies in the hinge dual's box
``[0, C_i]``, so with ``v = u + sum_i alpha_i y_i x~_i`` the hinge problem's dual value
``D = S + sum_i alpha_i - 1/2 ||v||^2`` is a lower bound on its optimum, and the primal
``P(w) = 1/2 ||w||^2 - u . w + S + sum_i C_i max(0, 1 - m_i)`` an upper bound.  At the minimum of
``F_mu`` (``w = v``) their gap is ``sum_i C_i s_i (1 - s_i / mu)`` over the rows of shortfall
``0 < s_i < mu``, at most ``mu / 4`` of their costs: ``mu`` is divided by :data:`MU_FACTOR` until
the gap is within the tolerance asked (continuation, each stage starting from the last one's ``w``).
A warm start begins at :data:`MU_WARM`; where it is far from the solution and that stage runs out
of its :data:`STAGE_STEPS`, the next is :data:`MU_FACTOR` smoother (up to :data:`MU_START`) until a
stage ends on its gap.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ...kernels.band import clipped_slope, clipped_terms, row_margins, weighted_rows
from ..plan.certificate import Certificate
from .sums import augmented_rows, chunk_rows, gram, run_sums

MU_START = 1.0  # the first stage's smoothing: the loss's quadratic piece one margin unit wide
# ... and from a start near the solution (a sample's, a read's point): measured on 200k rows of the
# tall raw set from another 200k rows' solution, to a gap of 1e-5, 8-9 Newton steps where MU_START
# took 14-23.
MU_WARM = 0.01
MU_FACTOR = 10.0  # each stage divides mu by this
MU_FLOOR = 1e-14  # and stops at this: below it the quadratic piece is rounding
STAGE_STEPS = 50  # Newton steps per stage, at most
STAGE_SLACK = 2.0  # a stage ends where the gap is within this many times what its smoothing leaves
LINE_STEPS = 60  # the line search's Newton steps on the slope, at most
LINE_TOL = 1e-9  # it ends where the slope is this share of the slope at the start


class Rows:
    """The rows of a problem with their labels ``y`` (+1/-1) and costs: dense (float32 or float64)
    or CSR, read a chunk at a time as float64 with the ``bias`` column (:func:`~.sums.augmented_rows`),
    so that no float64 copy of them is ever held whole."""

    def __init__(self, X, y, cost, bias):
        self.X, self.bias = X, float(bias)
        self.y = np.asarray(y, dtype=np.float64)
        self.cost = np.asarray(cost, dtype=np.float64)
        self.n, self.width = X.shape[0], X.shape[1] + 1
        self.step = chunk_rows(self.width)

    def chunks(self):
        for lo in range(0, self.n, self.step):
            hi = min(lo + self.step, self.n)
            yield lo, hi, augmented_rows(self.X, lo, hi, self.bias)

    @property
    def _dense(self):
        return not sp.issparse(self.X) and self.X.dtype in (np.float32, np.float64)

    def margins(self, w):
        """``m_i = y_i w . x~_i`` of every row."""
        z = np.empty(self.n)
        if self._dense:  # a compiled pass over each run of rows, in float64, on the fit's row threads
            X, w = np.ascontiguousarray(self.X), np.ascontiguousarray(w, dtype=np.float64)

            def run(bounds):
                lo, hi = bounds
                row_margins(X[lo:hi], w, self.bias, z[lo:hi])

            run_sums(self.n, self.step, run, _nothing)
        else:
            for lo, hi, Xa in self.chunks():
                z[lo:hi] = np.asarray(Xa @ w).ravel()
        return self.y * z

    def weighted_sum(self, r):
        """``sum_i r_i y_i x~_i``."""
        if self._dense:  # a compiled pass over each run of rows, on the fit's row threads, added in order
            X, f = np.ascontiguousarray(self.X), np.ascontiguousarray(r * self.y)

            def run(bounds):
                lo, hi = bounds
                part = np.zeros(self.width)
                weighted_rows(X[lo:hi], f[lo:hi], self.bias, part)
                return part

            return run_sums(self.n, self.step, run, np.add)
        out = np.zeros(self.width)
        for lo, hi, Xa in self.chunks():
            out += np.asarray(Xa.T @ (r[lo:hi] * self.y[lo:hi])).ravel()
        return out

    def gram(self, weights):
        """``sum_i weights_i x~_i x~_i^T`` over the rows of positive weight."""
        out = np.zeros((self.width, self.width))
        if self._dense:  # the rows of positive weight only, made float64 a chunk at a time
            rows = np.flatnonzero(weights > 0)
            for lo in range(0, rows.size, self.step):
                part = rows[lo : lo + self.step]
                Xa = np.empty((part.size, self.width))
                Xa[:, :-1] = self.X[part]
                Xa[:, -1] = self.bias
                out += gram(Xa, weights[part])
            return out
        for lo, hi, Xa in self.chunks():
            part = weights[lo:hi]
            rows = np.flatnonzero(part > 0)
            if rows.size:
                out += gram(Xa[rows] if sp.issparse(Xa) else Xa[rows], part[rows])
        return out


def _nothing(total, part):
    """The margins' runs write their rows in place: nothing to add."""


def offset_primal(rows, w, offset):
    """The unsmoothed problem's primal at ``w`` with ``offset = (u, S)`` (module docstring)."""
    u, S = offset
    s = 1.0 - rows.margins(w)
    return 0.5 * float(w @ w) - float(u @ w) + S + float(rows.cost @ np.maximum(s, 0.0))


def line_minimum(g0, d, cost, m, dm, mu):
    """The ``t >= 0`` that minimises ``F_mu(w + t d)``, from ``g0 = w - u``, the margins ``m`` at
    ``w`` and their change ``dm`` along ``d``: the root of the slope

        phi'(t) = g0 . d + t ||d||^2 - sum_i C_i dm_i clip((1 - m_i - t dm_i) / mu, 0, 1),

    increasing and piecewise linear, by Newton steps on it kept inside a bracket of the root
    (bisection where a step leaves it): exact once a step stays on one piece, as the first does
    near the minimum (the Newton direction's own step, ``t = 1``, is tried first)."""
    a, b = float(g0 @ d), float(d @ d)

    def slope(t):  # one compiled pass over the rows (kernels/band.py: clipped_slope)
        value, curvature = clipped_slope(m, dm, cost, t, mu)
        return a + t * b - value, b + curvature / mu

    lo, hi, t = 0.0, np.inf, 1.0
    limit = LINE_TOL * abs(slope(0.0)[0])  # of the slope at 0
    for _ in range(LINE_STEPS):
        value, curvature = slope(t)
        if abs(value) <= limit:
            return t
        if value < 0.0:
            lo = t
        else:
            hi = t
        step = t - value / curvature if curvature > 0.0 else np.inf
        if not lo < step < hi:
            step = 2.0 * t if hi == np.inf else 0.5 * (lo + hi)
        if abs(step - t) <= 1e-15 * max(t, 1.0):
            return step
        t = step
    return lo if hi == np.inf else 0.5 * (lo + hi)


def solve_smoothed(rows, *, tol, offset=None, start=None, max_stages=None):
    """Minimise the hinge problem of ``rows`` (a :class:`Rows`) to a relative duality gap of ``tol``:
    ``(w, certificate, info)``, ``w`` with the bias last, the :class:`Certificate` of the hinge
    problem (``offset = (u, S)``, module docstring; None: none), ``info`` the Newton steps and
    stages taken and ``alpha``, the rows' dual point whose value the certificate's dual is.
    ``start``: where the first stage starts (None: 0).  The certificate returned is the best primal
    and the best dual seen (weak duality holds for any pair)."""
    D = rows.width
    offset = (
        (np.zeros(D), 0.0) if offset is None else (np.asarray(offset[0], dtype=np.float64), float(offset[1]))
    )
    u = offset[0]
    w = np.zeros(D) if start is None else np.array(start, dtype=np.float64)
    best_w, best_primal, best_dual, best_alpha = w.copy(), np.inf, -np.inf, None
    mu, steps, stages, stage_steps = (MU_START if start is None else MU_WARM), 0, 1, 0
    settled = start is None  # whether a stage has ended on its gap (a cold start never backs off)
    max_stages = max_stages if max_stages is not None else int(np.ceil(np.log10(MU_START / MU_FLOOR))) + 1
    m = rows.margins(w)
    cost = rows.cost
    S = offset[1]
    alpha, weights = np.empty(rows.n), np.empty(rows.n)
    while True:
        # In one compiled pass (kernels/band.py: clipped_terms): the dual point alpha, the Hessian's
        # weights cost_i / mu on the quadratic piece, the loss at w and the piece's costs.
        loss, alpha_sum, quadratic = clipped_terms(m, cost, mu, alpha, weights)
        v = u + rows.weighted_sum(alpha)
        # The certificate of the unsmoothed problem at w (module docstring), with the dual point alpha.
        primal = 0.5 * float(w @ w) - float(u @ w) + S + loss
        dual = S + alpha_sum - 0.5 * float(v @ v)
        if dual > best_dual or best_alpha is None:
            best_dual, best_alpha = dual, alpha.copy()
        if primal < best_primal:
            best_primal, best_w = primal, w.copy()
        gap = Certificate(primal=best_primal, dual=best_dual)
        if gap.relative_gap <= tol:
            break
        # The stage is done where the gap is no more than twice what smoothing by mu leaves at the
        # stage's minimum (mu / 4 of the costs in the quadratic piece), or after STAGE_STEPS.
        smoothing = 0.25 * mu * quadratic
        done = primal - dual <= STAGE_SLACK * smoothing + 1e-15 * abs(primal)
        if done or stage_steps >= STAGE_STEPS:
            if mu <= MU_FLOOR or stages >= max_stages:
                break
            # Until a stage ends on its gap, one that ran out of steps (a warm start far from the
            # solution, at a smoothing too fine for its Newton steps) backs off to a smoother one,
            # up to MU_START; after, they divide it, as a finished stage does.
            settled = settled or done
            mu = mu * MU_FACTOR if not settled and mu < MU_START else mu / MU_FACTOR
            stage_steps, stages = 0, stages + 1
            continue
        g = w - v
        H = rows.gram(weights)
        H[np.diag_indices(D)] += 1.0
        try:
            d = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=False), -g, check_finite=False)
        except np.linalg.LinAlgError:
            break
        if not float(g @ d) < 0.0 or not np.all(np.isfinite(d)):
            break
        dm = rows.margins(d)
        t = line_minimum(w - u, d, cost, m, dm, mu)
        if not t > 0.0:
            break
        w = w + t * d
        m = rows.margins(w)  # afresh, not m + t dm: no drift of rounding from step to step
        steps += 1
        stage_steps += 1
    info = {"newton_steps": steps, "stages": stages, "alpha": best_alpha}
    return best_w, Certificate(primal=best_primal, dual=best_dual), info
