"""The primal solver for tall data (``dual=False``): Newton steps, each from one read of the rows.

For a loss with Newton pieces (:attr:`~..plan.losses.Loss.newton`: the L2 loss,
``loss(m) = max(0, 1 - m)^2``, as LIBLINEAR's ``-s 2``, and the logistic loss
``log(1 + e^-m)``, as ``-s 0``; the maths below is the L2 loss's, the
logistic loss's pieces are its leaves'), the primal

    f(w) = 1/2 ||w||^2 + sum_i C_i loss(y_i w . x_i)

is convex and smooth; for the L2 loss piecewise quadratic.  Its gradient
and (generalised) Hessian are

    g = w - sum_i alpha_i y_i x_i,   H = I + sum_i D_ii x_i x_i^T,

with ``alpha_i = -C_i loss'(m_i)`` and ``D_ii = C_i loss''(m_i)`` (the L2
loss: ``alpha_i = 2 C_i max(0, 1 - m_i)``, ``D_ii = 2 C_i`` on the active
rows ``m_i < 1``, 0 elsewhere; the loss's leaves,
:func:`~dask_streamsvm.kernels.losses.newton_terms`): sums over rows, so
the sums of the partitions (or of the workers) are the sums of the data,
and one read gives one exact Newton step ``H s = -g`` (a Cholesky solve of
the ``D x D`` system, ``D`` the features plus the bias).  This is Keerthi
and DeCoste's finite Newton method (JMLR 2005) with the step length chosen
as below; like LIBLINEAR's primal solver (``-s 2``) it needs 5 to 20
steps whatever the scaling of the features, where dual coordinate descent
needs many passes on badly scaled data or at a large C.  The reads and
their sums are :mod:`.sums` and :mod:`.reads`.

One read per step.  A read evaluates the trial point ``w + s``: its value,
gradient and Hessian, and, along the way, the value of ``f(w + t s)`` for
the step lengths ``t`` of :data:`STEPS` (one more multiply-add per row and
length).  If the full step decreases ``f`` enough (Armijo's rule with
:data:`ARMIJO`), the next direction comes from the sums just read: one read
per Newton step.  If not, the longest step length that does is taken from
the same read, and the next read evaluates that point.  Rows in memory
with Hessian products also read longer lengths (:data:`~.sums.LONGER`), and
where one of them decreases ``f`` far more than the full step, the next
read evaluates that point instead (:data:`EXTENSION_GAIN`).  A smooth loss (the
logistic loss) reads no trial lengths (:func:`~.sums.trial_steps`:
their logarithms would cost more than the read); its step, rarely refused,
is shortened by the next read instead, within a trust region (:meth:`_Problem.shorten`).

Why a trust region.  Where rows of large cost sit far on the wrong side at
``w`` (margins of -30 and beyond: a warm start from a sample that missed
them, with sample weights of 1e6), their logistic loss is linear there and
their curvature ``C_i sigma(m)(1 - sigma(m))`` vanishes: the Hessian does not
see them, and the Newton step runs on along their descent until it is
thousands of times too long (measured: a step of length 1.2e6 from a point of
norm 137, acceptable only below 1/8000 of it; the optimum's norm is 6).
Neither rounding (Armijo's decrease there is 2e7, the value 2e9) nor the
direction (a descent direction, ``g . s = -1.8e13``) is at fault: its length is.
Halving it needs more reads than the step lengths it had, and a step taken
without Armijo's test raised the objective tenfold: the fit stalled 28 times
above the optimum.  The refused read's value fixes how far the quadratic
model along the step can be trusted (TRON's interpolation, Lin, Weng and
Keerthi, JMLR 2008, as LIBLINEAR's ``-s 0``), and the radius it leaves
bounds the next directions too, growing again as they are accepted.

The certificate.  ``alpha(w)`` is dual feasible (the L2-loss dual only asks
``alpha >= 0``), and with ``v = sum_i alpha_i y_i x_i`` (which the gradient
needs anyway) its dual value is

    D(alpha) = sum_i alpha_i - 1/2 ||v||^2 - sum_i alpha_i^2 / (4 C_i)
             = sum_i alpha_i - 1/2 ||v||^2 - sum_i C_i xi_i^2,

sums of the same read (:meth:`~..plan.losses.Loss.newton_dual`).  Every read
therefore certifies the point it evaluated exactly, and the solver returns
the point of lowest primal value with the highest dual value seen (weak
duality holds for any pair), so ``tol`` means the same relative duality gap
as for the dual solvers.  At the optimum ``alpha(w*)`` is the dual optimum,
so the gap goes to zero with the Newton steps.

The penalty.  Everything above is the L2 penalty's, ``1/2 ||w||^2``; the
penalty is an object of :mod:`.penalties` that each problem holds, so that
the L1 and elastic-net penalties run the same reads, trial lengths, trust
region and band: their step minimises the read's quadratic model plus the
exact penalty (newGLMNET's), Armijo's rule takes Tseng and Yun's decrease,
and their certificate scales the dual point to be feasible.
"""

import contextlib
import time

import numpy as np
import scipy.linalg

from ..plan.certificate import Certificate, check_gap
from ..plan.layout import take_rows
from ..plan.losses import loss_of, newton_blocker
from ..plan.result import FitResult
from .penalties import L2, penalty_of
from .sums import LONGER, STEPS, ActiveTerms, block_sums, shortfall_sums

# The reads (:mod:`.sums`, :mod:`.reads`) are named here too.

ARMIJO = 0.01  # sufficient decrease: f(w + t s) <= f(w) + ARMIJO t g . s
# The widest model (features plus bias) whose D x D Hessian the solver forms: 128 MB a problem.
MAX_WIDTH = 4096
# A smooth loss's refused step (:meth:`_Problem.shorten`): the next is the minimum of the quadratic
# through the refused read's value and the slope at ``w``, as a fraction of the refused step at
# least SHORTEST_FRACTION (a value of the refused read beyond float64's range gives no minimum: a
# hundredfold shorter step each read), at most LONGEST_FRACTION (at least halved, so that the reads
# bisect towards a step Armijo's rule accepts whatever the values).  An accepted step at the trust
# radius multiplies it by RADIUS_GROWTH (TRON's sigma3, Lin, Weng and Keerthi 2008).
SHORTEST_FRACTION = 0.01
LONGEST_FRACTION = 0.5
RADIUS_GROWTH = 4.0
CG_RESIDUAL = 0.1  # conjugate gradient stops at this fraction of the gradient's norm
CG_MAX_STEPS = 250
PRECONDITIONER = 0.01  # the weight of diag(H) in the conjugate gradient's preconditioner
# A sparse penalty's direction from the Hessian's products (a cluster's parts wider than the formed
# Hessian, :meth:`~.penalties.Sparse.products_direction`) is damped, Levenberg-Marquardt's way: the
# conjugate gradient solves ``(H + mu mean(diag H) I) e = -r`` on the free weights, ``mu`` starting at
# DAMPING_START, multiplied by DAMPING_UP after a refused step and by DAMPING_DOWN after a full step
# taken, at least DAMPING_FLOOR (:meth:`_Problem.damp`).  Undamped, the orthant's Newton steps of
# wide rows cross zero in the Hessian's flat directions and are cut there to almost nothing.
# Measured in memory on benchmarks/bench_l1_wide_cluster.py's 50,000 x 20,000 text rows (C = 1, tol
# 1e-3, at most 1,500 steps): LogisticRegression(l1_ratio=1) stood at a gap of 0.2 after 1,500 steps
# where damped it took 36, l1_ratio=0.5 at 2e-3 after 1,500 where 26, and LinearSVC(penalty="l1")
# took 353 steps where 90.  A floor of 0.1 cost the last steps of tight gaps (l1_ratio=1 at tol 1e-8
# on the tests' 1,500 x 1,300 rows: refused 930 times, where 34 steps with DAMPING_FLOOR).
DAMPING_START = 0.3
DAMPING_UP = 4.0
DAMPING_DOWN = 0.5
DAMPING_FLOOR = 1e-6
# The model a sparse penalty forms on its free weights (its block, or the rows' columns beyond it:
# :meth:`~.penalties.Sparse.free_direction`) is undamped until a full step is refused; then damped the
# same way, ``mu`` starting at BLOCK_DAMPING_START (times DAMPING_UP after each further refusal),
# halved (DAMPING_DOWN) after each full step taken and off again below DAMPING_FLOOR (:meth:`_Problem.
# damp_block`).  A piecewise-quadratic loss's model sees only the rows inside the margin: on rows that are
# nearly separable and fewer than the free weights (2,000 x 500 dense rows, LinearSVC(penalty="l1")
# at C = 10, 400 rows active) it is flat along directions that put rows back inside, its steps are
# refused, and the model's descent on a singular block takes its most sweeps.  Measured on
# benchmarks/bench_l1_svc.py's sets (one process, 2026-12-01): that fit took 4.0 s (83 steps) undamped,
# 0.96 s (67) damped from 1e-3, 1.4 s from 1e-4, 1.3 s from 1e-1; at C = 1 0.31 s against 0.25 s;
# LogisticRegression's fits, whose full steps are taken, are unchanged.
BLOCK_DAMPING_START = 1e-3
# In memory with Hessian products (:class:`~.sums.ProductRead`: sparse or wide rows, a cluster's parts),
# a piecewise-quadratic loss's read also sums the loss at the longer step lengths of
# :data:`~.sums.LONGER`; where the full step is taken and a longer one decreases ``f`` by at least
# 1 + EXTENSION_GAIN times as much as it, the point moved to is that one, evaluated by the next read
# (:meth:`_Problem._extension`): that read makes no step, so the longer step must gain more than one
# more step would.  A sparse penalty's model on the rows' columns is descended for a few sweeps only
# (:data:`~.penalties.COLUMNS_SWEEPS`), and on nearly separable rows it moves slowly along directions
# the active rows do not see: LinearSVC(penalty="l1") at C = 10 on benchmarks/bench_l1_svc.py's
# 50,000 x 20,000 text rows took 895 steps, consecutive ones parallel (cosine 1.000) and each 0.4%
# shorter than the last, where the objective along a step kept falling to 16 to 64 times its length.
# Measured there (one process, tol 1e-3): 895 steps and 58 s without; 347, 323 and 311 steps and
# 17.5, 17.4 and 18.2 s at a gain of 1, 2 and 4.  Its other fits (C = 0.1 and 1, and the L2 penalty's
# at C = 1 and 10) never extend.  On 20,000 x 2,000 dense Gaussian rows at C = 1 (a tenth of the true
# weights nonzero): 360 steps and 312 s without, 148 steps (29 of them extended) and 110 s at 2.
EXTENSION_GAIN = 2.0
# The step's dual point of a smooth loss (:meth:`_Problem.step_dual`) moves each row's dual variable by
# these shares of the first-order change a Newton step makes, the largest the rows' values keep
# feasible.
STEP_SHARES = 2.0 ** -np.arange(0, 7)


class _Problem:
    """One binary problem's Newton state: the evaluated point, its gradient and Hessian, the best
    primal point and the best dual value seen; ``loss`` (a :class:`~..plan.losses.Loss`) certifies it."""

    def __init__(self, width, loss, tol=0.0, penalty=None):
        self.loss, self.tol = loss, tol
        self.penalty = L2() if penalty is None else penalty  # (:mod:`.penalties`)
        self.w = np.zeros(width)
        self.s = np.zeros(width)
        self.f = np.inf  # f(w) once evaluated
        self.g = self.H = None  # at w, once evaluated
        self.trial = False  # the next read evaluates w + s (else w itself)
        self.best_w, self.best_primal, self.best_dual = self.w.copy(), np.inf, -np.inf
        self.step = 0.0  # the step length taken after the last read (0: none)
        self.accepted = False  # whether the last read's point became the iterate
        self.operator = None  # (product, diagonal) of the Hessian at w, without the matrix
        self.cg_steps = 0  # Hessian products the last direction took (0: a Cholesky solve)
        self.interrupted = False  # a KeyboardInterrupt while the direction was made
        self.band_step = None  # (w, g, H, band) -> step, where the reads keep a band
        self.band_certify = None  # (w, d, totals, H, band) -> Certificate or None (band_certificate)
        self.step_band = None  # (w, d, Sums.held, c) -> band or None, where no read kept one (step_band)
        self.band_certified = False  # whether the last read's band certified its step's point
        # A smooth loss's trust region (:meth:`shorten`): the longest step a direction may take
        # (infinite until a step is refused), and the share of the current Newton direction the
        # step ``s`` is (shortened by refused reads, or cut to the radius).
        self.radius = np.inf
        self.fraction = 1.0
        # Each column's largest |value| (the bias column's |bias|), or None: with it a read that
        # gives a Newton step of a smooth loss also certifies the step's dual point (step_dual).
        self.column_max = None
        # The ``(center, scale)`` the reads measure their rows' length in (Sums.row_norm), or None.
        self.metric = None
        # A sparse penalty's products direction (:meth:`damp`): the share of the Hessian's mean
        # diagonal added to it in the conjugate gradient (0: the L2 penalty's, never damped).
        self.damping = DAMPING_START if self.penalty.sparse else 0.0
        self.from_products = False  # whether the last direction came from the Hessian's products
        # A sparse penalty's model on its free weights (:meth:`damp_block`): its damping, 0 until a
        # full step of it is refused, and whether the last direction came from that model.
        self.block_damping = 0.0
        self.from_block = False

    def direction(self, band=None):
        """The Newton direction at ``w``, from the Hessian and gradient of the last read (or its
        products, by preconditioned conjugate gradient); with the read's ``band`` of rows (and
        ``self.band_step``), the step that minimizes the exact objective on the band
        (:func:`band_step`)."""
        if band is not None and self.H is not None and self.band_step is not None:
            return self.band_step(self.w, self.g, self.H, band)
        self.from_products = self.from_block = False
        if self.H is not None:
            return self.penalty.direction(self.w, self.g, self.H)
        # The Hessian held as rows: in memory (:class:`~.sums.ActiveTerms`) or on a cluster's parts
        # (``solve``; Ctrl-C there ends the fit at the point certified).  A sparse penalty forms its
        # block on the free weights where few enough are free; else the products' steps.
        terms = self.operator
        cluster = not isinstance(terms, ActiveTerms)
        try:
            s, shift = None, self.block_damping
            if self.penalty.sparse:
                s = self.penalty.free_direction(self.w, self.g, terms.gram, shift)
            if s is None and self.penalty.sparse:
                if cluster:
                    s = terms.columns_direction(self.penalty, self.w, self.g, shift)
                else:
                    s = self.penalty.columns_direction(self.w, self.g, terms, shift)
            self.from_block = s is not None
            if s is None:
                self.from_products = True
                shift = self.damping * float(np.mean(terms.diagonal))
                if cluster:

                    def solve(g, free=None):
                        return terms.solve(g, free, shift)

                else:

                    def solve(g, free=None):
                        return _conjugate_gradient(terms.product, terms.diagonal, g, free, shift)

                s, self.cg_steps = self.penalty.products_direction(self.w, self.g, solve)
        except KeyboardInterrupt:
            if not cluster:
                raise
            self.interrupted, self.operator = True, None
            return np.zeros_like(self.g)
        self.operator = None  # the active rows it holds are not needed any more
        return s

    def update(self, sums, c, certify_only=False):
        """Take the read's sums of problem ``c``: certify the evaluated point, accept or shorten the
        step; returns the evaluated point's :class:`Certificate`.  ``certify_only``: the sums hold
        no Hessian (the first read's, at ``w = 0``); only certify."""
        self.cg_steps = 0  # products of this read's direction (none unless one is taken)
        point = self.w + self.s if self.trial else self.w
        primal = self.loss.primal_value(self.penalty.value(point), float(sums.loss[c]))
        v = sums.v[c]
        dual = self.penalty.dual(self.loss, float(sums.alpha[c]), v, float(sums.loss[c]))
        certificate = Certificate(primal=primal, dual=dual)
        self.best_dual = max(self.best_dual, dual)
        if primal < self.best_primal:
            self.best_primal, self.best_w = primal, point.copy()
        if certify_only:
            self.accepted, self.step = True, 0.0
            return certificate
        decrease = self.penalty.decrease(self.w, self.g, self.s) if self.trial else 0.0
        self.accepted = not self.trial or primal <= self.f + ARMIJO * decrease
        if self.trial and self.from_products:  # the step came from the Hessian's products
            self.damp()
        elif self.trial and self.from_block:  # from the model on the free weights
            self.damp_block()
        if self.accepted and self.trial and (longer := self._extension(sums, c, primal)) is not None:
            self.w, self.step = self.w + longer * self.s, float(longer)  # the next read evaluates it
            self.s = np.zeros_like(self.s)
            self.trial = False
            return certificate
        if self.accepted:
            if self.trial and self.fraction < 1.0:  # a step cut to the radius, taken: trust it further
                self.radius *= RADIUS_GROWTH
            self.w, self.f, self.step = point, primal, self.fraction if self.trial else 0.0
            self.g = self.penalty.gradient(point, v)
            terms = None  # in memory, the Hessian held as its rows (ActiveTerms): its products
            if sums.operators is None:
                self.H = self.penalty.hessian(sums.hessian[c])
            else:
                self.H, self.operator = None, sums.operators[c]
                terms = self.operator if isinstance(self.operator, ActiveTerms) else None
            band = getattr(sums, "band", None)
            band = None if band is None else band[c]
            self.band_certified = False
            if self.certificate.relative_gap <= self.tol:  # certified: no read follows, no step
                self.s = np.zeros_like(self.w)
            else:
                self.s = self.direction(band)
            self.fraction = 1.0
            length = float(np.linalg.norm(self.s))
            if length > self.radius:  # a smooth loss's trust region (shorten): the direction cut to it
                self.fraction = self.radius / length
                self.s = self.fraction * self.s
            if band is None and length and self.H is not None and self.step_band is not None:
                band = self.step_band(self.w, self.s, getattr(sums, "held", None), c)
            if band is not None and self.H is not None and self.band_certify is not None and length:
                self._certify_step(sums, c, band)
            if (
                length
                and (self.H is not None or terms is not None)
                and self.column_max is not None
                and not self.loss.piecewise_quadratic
            ):
                stepped = self.step_dual(sums, c, terms)
                if stepped is not None and stepped > certificate.dual:
                    self.best_dual = max(self.best_dual, stepped)
                    certificate = Certificate(primal=primal, dual=stepped)
            self.trial = True
            return certificate
        if not self.loss.piecewise_quadratic:  # no trial losses read (trial_steps): the next read shortens it
            self.shorten(primal, decrease)
            return certificate
        # The full step went too far: the longest step length of the same read that decreases enough.
        values = np.array([self.penalty.value(self.w + t * self.s) for t in STEPS])
        values += sums.trial[c]
        good = np.flatnonzero(values <= self.f + ARMIJO * STEPS * decrease)
        t = STEPS[good[0]] if good.size else STEPS[int(np.argmin(values))]
        if not values.min() < self.f:  # not even the shortest step decreases f: evaluate w + s / 4096
            t = STEPS[-1] / 2
        self.w, self.step = self.w + t * self.s, float(t)
        self.s = np.zeros_like(self.s)
        self.trial = False
        return certificate

    def _extension(self, sums, c, primal):
        """The length of :data:`~.sums.LONGER` of lowest value along the full step just taken (of value
        ``primal``), where it decreases ``f`` by at least 1 + :data:`EXTENSION_GAIN` times as much as
        the full step: the next read evaluates ``w + t s`` in place of a step from ``w + s``.  None
        where none gains that much, or the read summed no longer lengths."""
        longer = getattr(sums, "longer", None)
        if longer is None or not np.isfinite(longer[c]).all():
            return None
        values = np.array([self.penalty.value(self.w + t * self.s) for t in LONGER]) + longer[c]
        best = int(np.argmin(values))
        if self.f - values[best] < (1.0 + EXTENSION_GAIN) * (self.f - primal) or not values[best] < primal:
            return None
        return LONGER[best]

    def damp(self):
        """After a read of a step from the Hessian's products, a sparse penalty's damping
        (:data:`DAMPING_START`): up after a refused step, down after a full one; a step cut to the
        trust radius and taken leaves it (the radius grows instead).  The L2 penalty's stays 0."""
        if not self.damping:
            return
        if not self.accepted:
            self.damping *= DAMPING_UP
        elif self.fraction == 1.0:
            self.damping = max(self.damping * DAMPING_DOWN, DAMPING_FLOOR)

    def damp_block(self):
        """After a read of a step from the model on the free weights (:data:`BLOCK_DAMPING_START`): on
        from BLOCK_DAMPING_START after a refused full step (DAMPING_UP times after another), halved
        after a full step taken, and off below DAMPING_FLOOR."""
        if not self.accepted:
            self.block_damping = max(self.block_damping * DAMPING_UP, BLOCK_DAMPING_START)
        elif self.fraction == 1.0:
            damping = self.block_damping * DAMPING_DOWN
            self.block_damping = damping if damping >= DAMPING_FLOOR else 0.0

    def step_dual(self, sums, c, terms=None):
        """The best dual value, or None, of the dual points ``alpha_i' = alpha_i - a D_ii dm_i`` of the
        read's point ``w`` and its step ``s`` (``dm_i = y_i s . x~_i``, ``a`` in :data:`STEP_SHARES`):
        the next point's dual point to first order, from the read's sums alone.

        With ``u_i = alpha_i / C_i`` the logistic loss's dual terms are entropies ``C_i H(u_i)``, and
        the step moves ``u_i`` by ``d_i = -a u_i (1 - u_i) dm_i``: inside [0, 1] where ``a |dm_i| <=
        1``, which ``a sum_j |s_j| max_i |x~_ij| <= 1`` makes true of every row.  There
        ``H(u + d) >= H(u) - d log(u / (1 - u)) - d^2 / (u (1 - u))`` (the remainder of ``q log q``'s
        first-order expansion is at most ``d^2 / q`` wherever ``q + d >= 0``), and ``log(u / (1 -
        u)) = -m_i``, so the entropies' sum is at least ``sum H - a w . H_loss s - a^2 s . H_loss s``
        (``sum_i D_ii m_i dm_i = w . H_loss s``), and ``sum_i alpha_i' y_i x~_i = v - a H_loss s``:
        each term is the read's Hessian sum times ``s``.  The penalty's dual of those
        (:meth:`~.penalties.L2.dual`, :meth:`~.penalties.Sparse.dual`) is a lower bound of the
        point's dual value: it certifies no more than it proved."""
        return max(self.step_duals(sums, c, terms).values(), default=None)

    def step_duals(self, sums, c, terms=None):
        """``{a: dual value}`` of :meth:`step_dual`'s points, for each share ``a`` the rows allow;
        ``terms``: the read's Hessian held as its rows (:class:`~.sums.ActiveTerms`), whose product
        gives ``H_loss s`` where the read formed no Hessian."""
        if terms is None:
            moved = sums.hessian[c] @ self.s  # the rows' Hessian as the read summed it (float64)
        else:
            moved = terms.loss_product(self.s)
        reach = self.reach(sums)
        linear, quadratic = float(self.w @ moved), float(self.s @ moved)
        dual_sum, loss_sum, v = float(sums.alpha[c]), float(sums.loss[c]), sums.v[c]
        return {
            float(a): self.penalty.dual(
                self.loss, dual_sum - a * linear - a * a * quadratic, v - a * moved, loss_sum
            )
            for a in STEP_SHARES
            if a * reach <= 1.0
        }

    def reach(self, sums):
        """A bound on ``max_i |s . x~_i|``, how far the step moves any row's margin: ``sum_j |s_j|
        max_i |x~_ij|`` (the columns' largest values), or, where the read measured its rows' length
        in the sample's metric (``sums.row_norm``), the smaller ``|s_f . center + s_b bias| +
        ||s_f * scale|| max_i ||(x_i - center) / scale||`` (Cauchy-Schwarz, ``s_f`` the features'
        part of the step, ``s_b`` the bias weight's; the bias, ``column_max``'s last, is never
        negative), which on dense rows is several times tighter.  Rounding is covered by a relative
        1e-12."""
        reach = column_reach(self.s, self.column_max)
        if self.metric is not None and sums.row_norm is not None:
            center, scale = self.metric
            features, bias = self.s[:-1], self.s[-1]
            measured = abs(float(features @ center) + float(bias) * float(self.column_max[-1]))
            measured += float(np.linalg.norm(features * scale)) * sums.row_norm
            reach = min(reach, measured)
        return reach * (1.0 + 1e-12)

    def _certify_step(self, sums, c, band):
        """The point ``w + s`` certified from the read at ``w`` and its band, without another read,
        where no row outside the band can change its piece (:func:`band_certificate`): it becomes
        the best point if its primal value is the lowest, and its dual value counts."""
        totals = (float(sums.loss[c]), float(sums.alpha[c]), sums.v[c])
        certificate = self.band_certify(self.w, self.s, totals, self.H, band)
        if certificate is None:
            return
        self.band_certified = True
        self.best_dual = max(self.best_dual, certificate.dual)
        if certificate.primal < self.best_primal:
            self.best_primal, self.best_w = certificate.primal, self.w + self.s

    def shorten(self, value, slope):
        """After a step ``s`` of a smooth loss (no trial losses read) that failed Armijo's rule: the
        next read evaluates ``w + tau s``, and ``|tau s|`` is the trust radius of the directions that
        follow.  ``tau`` minimizes the quadratic ``q(t)`` with ``q(0) = f(w)``, ``q'(0) = slope``
        (``g . s < 0``) and ``q(1) = value``, the refused read's ``f(w + s)`` (TRON's step update, Lin,
        Weng and Keerthi 2008, Alg. 2; Nocedal and Wright 2006, (3.57)), within
        [:data:`SHORTEST_FRACTION`, :data:`LONGEST_FRACTION`] (:func:`shortened`).  Where the
        quadratic model misses the curvature of rows whose margins the step crosses (module
        docstring) the refused value is far above the model's and ``tau`` as short as it needs: the
        step 1.2e6 long of issue 50 took three refused reads (to 5.9e-5 of it), where halving took
        thirteen.  ``w`` stays: the iterate only moves to a point that passed Armijo's rule."""
        tau = shortened(self.f, slope, value)
        self.s, self.step, self.fraction = tau * self.s, 0.0, tau * self.fraction
        self.radius = float(np.linalg.norm(self.s))

    @property
    def certificate(self):
        return Certificate(primal=self.best_primal, dual=self.best_dual)


def shortened(value_at_0, slope, value_at_1):
    """The step fraction :meth:`_Problem.shorten` takes after a refused step: the minimizer
    ``-slope / (2 (value_at_1 - value_at_0 - slope))`` of the quadratic through ``(0, value_at_0)``
    of derivative ``slope < 0`` there and through ``(1, value_at_1)``, within
    [:data:`SHORTEST_FRACTION`, :data:`LONGEST_FRACTION`] (a value that is not finite: the shortest)."""
    curvature = value_at_1 - value_at_0 - slope  # > -0.99 slope > 0 where Armijo's rule refused
    tau = -slope / (2.0 * curvature) if np.isfinite(curvature) and curvature > 0 else 0.0
    return float(min(max(tau, SHORTEST_FRACTION), LONGEST_FRACTION))


def solve_primal(
    read,
    plan,
    width,
    *,
    clock_start=None,
    on_pass=None,
    source=None,
    initial=None,
    start=None,
    notes=None,
    before=None,
    start_read=True,
    column_max=None,
    metric=None,
):
    """Newton steps on every problem of ``plan`` until each relative gap is at most ``plan.tol``
    or ``plan.max_iter`` reads: a :class:`~..plan.result.FitResult` (``converged`` one per problem).

    ``read(W, S, todo)`` returns the :class:`Sums` of all rows at the points ``W + S`` of the
    problems ``todo`` still training, with trial losses along ``S``.  ``on_pass(records, W)``,
    called after every read with one history record per problem (a problem already converged
    repeats its certificate), stops the solve with a true return value.  ``source``: the
    :class:`~..data.source.DaskSource` that ``read`` streams, whose reads the records count and number
    from 0 as the streaming solvers do (in memory they are numbered from 1).  ``initial``: the sums
    of every problem at ``w = 0`` (no Hessian) from the read that found the classes
    (:func:`first_read`), which then certifies ``w = 0`` as read 0.  ``start``: the points (k, D)
    the first Newton read evaluates instead of ``w = 0`` (a warm start, :func:`warm_start`; without
    ``initial`` the records count the read before and are numbered from 1, ``before`` its
    :class:`Sums` of rows, bytes, skipped rows and retries; ``start_read=False``: no read made
    the start, a sample held in memory did, :func:`memory_start`).
    ``notes``: fields added to the first read's records.  ``column_max``: each column's largest
    ``|value|`` with the bias column's last (:attr:`~.reads.FirstRead.column_max`), or None: with it a
    smooth loss's read also certifies its step's dual point (:meth:`_Problem.step_dual`);
    ``metric``: the ``(center, scale)`` the reads measure their rows' length in (``Sums.row_norm``,
    :func:`~.reads.metric_row_norm`), which bounds the step's reach more tightly
    (:meth:`_Problem.reach`).  A ``read`` that is a context manager
    (:class:`~.reads.StreamRead`) is entered for the solve, and its ``overlap`` seconds are added to
    every record.  A KeyboardInterrupt after the
    first read returns the best certified state, ``interrupted``.
    """
    clock_start = time.perf_counter() if clock_start is None else clock_start
    k, D = plan.n_problems, width + 1
    check_width(plan, D, getattr(read, "hessian_products", False))
    loss = loss_of(plan.loss)
    if not loss.newton:
        raise ValueError(
            f"dual=False (the primal Newton solver) does not support {newton_blocker(plan.loss)}; "
            "use dual=True (the dual solvers)."
        )
    problems = [_Problem(D, loss, plan.tol, penalty_of(plan)) for _ in range(k)]
    for problem, w in zip(problems, [] if start is None or initial is not None else start, strict=False):
        problem.w = np.array(w, dtype=np.float64)
    for problem in problems:
        problem.column_max = None if column_max is None else np.asarray(column_max, dtype=np.float64)
        if metric is not None:
            problem.metric = tuple(np.asarray(part, dtype=np.float64) for part in metric)
        problem.band_step = lambda w, g, H, band, p=problem.penalty: _on_band(band_step, band)(
            w, g, H, band, plan, p
        )
        problem.band_certify = lambda w, d, totals, H, band, p=problem.penalty: _on_band(
            band_certificate, band
        )(w, d, totals, H, band, plan, p)
        problem.step_band = lambda w, d, held, c, p=problem: step_band(w, d, held, c, p.column_max, plan)
    with read if hasattr(read, "__enter__") else contextlib.nullcontext():
        return _newton_reads(
            read, plan, problems, clock_start, on_pass, source, (initial, start, start_read), notes, before
        )


def _on_band(function, band):
    """``function`` (:func:`band_step` or :func:`band_certificate`), or where ``band`` is held
    elsewhere (a cluster's band on the worker that joined it, with a ``call(function, *args)`` that
    runs it there, :class:`~..cluster.newton.RootBand`) the same function run where the band is."""
    if hasattr(band, "call"):
        return lambda *args: band.call(function, *args)
    return function


def check_width(plan, D, products=False):
    """A ValueError if the primal solver cannot train a model ``D`` wide (features plus bias):
    without Hessian ``products`` (in memory), it forms the ``D x D`` Hessian, at most MAX_WIDTH."""
    if D > MAX_WIDTH and not products and plan.sparse_penalty:
        raise ValueError(
            f"{plan.penalty} out of core forms the {D} x {D} Hessian of the features and the bias, "
            f"wider than the {MAX_WIDTH} it supports; train in memory (solver='memory', on rows that "
            "fit: coordinate descent reads columns) or select fewer features."
        )
    if D > MAX_WIDTH and not products:
        mapped = plan.feature_map is not None
        what = "the feature map's features" if mapped else "the features"
        where = "" if mapped else " out of core"
        instead = "" if mapped else "train in memory (a NumPy array or SciPy sparse matrix: Hessian "
        instead += "" if mapped else "products instead) or "
        raise ValueError(
            f"dual=False forms the {D} x {D} Hessian of {what} and the bias, wider than the "
            f"{MAX_WIDTH} it supports{where}; {instead}use dual=True (the dual solvers) for a "
            "model this wide."
        )


def _newton_reads(read, plan, problems, clock_start, on_pass, source, first_read, notes, before):
    """:func:`solve_primal`'s loop: a read, then every problem's step, until converged."""
    k, D = len(problems), problems[0].w.shape[0]
    converged = [False] * k
    active = [0] * k
    history, reads, interrupted = [], 0, False
    totals = {"rows_read": 0, "bytes_read": 0, "rows_skipped": 0, "read_retries": 0}
    if before is not None:
        totals.update(
            rows_read=int(before.rows), bytes_read=int(before.bytes), read_retries=int(before.retries)
        )
    initial, start, start_read = first_read
    # The first record's number: reads of a source count from 0; one read before (a warm start
    # without its sums at w = 0) is counted.
    first = (1 if source is None else 0) + (start is not None and initial is None and start_read)
    while reads <= plan.max_iter and not all(converged):
        todo = [c for c in range(k) if not converged[c]]
        W = np.array([problems[c].w for c in todo])
        S = np.array([problems[c].s if problems[c].trial else np.zeros(D) for c in todo])
        at_zero = reads == 0 and initial is not None  # the first read's sums certify w = 0
        try:
            sums = initial if at_zero else read(W, S, todo)
        except KeyboardInterrupt:
            if reads == 0:
                raise
            interrupted = True
            break
        where = f"read {reads + first}"
        base = {"pass": reads + first, "seconds": time.perf_counter() - clock_start, "solver": "newton"}
        totals["rows_read"] += int(sums.rows)
        totals["bytes_read"] += int(sums.bytes)
        totals["read_retries"] += int(sums.retries)
        totals["rows_skipped"] = int(sums.skipped)  # one read's: every read skips the same rows
        if reads == 0 and notes:
            base.update(notes)
        base.update(getattr(read, "overlap", {}))
        if source is not None:
            base.update(totals, spill_bytes=source.spill_bytes)
        else:
            base["rows_skipped"] = totals["rows_skipped"]
        evaluated = dict(zip(todo, range(len(todo)), strict=True))
        records = []
        for c, problem in enumerate(problems):
            record = {**base, "class": plan.labels[c], "accepted": False, "step": 0.0}
            if c in evaluated:
                j = evaluated[c]
                point = check_gap(problem.update(sums, j, certify_only=at_zero), where)
                active[c] = int(sums.active[j])
                record.update(point_primal=point.primal, point_dual=point.dual, accepted=problem.accepted)
                record.update(step=problem.step, hessian_products=problem.cg_steps)
                record.update(band_certified=problem.band_certified)
            best = check_gap(problem.certificate, where)
            converged[c] = best.relative_gap <= plan.tol
            record.update(primal=best.primal, dual=best.dual, gap=best.relative_gap, active=active[c])
            records.append(record)
        history.extend(records)
        reads += 1
        sums = None  # its band is not needed any more: the next read's is being made
        if any(problem.interrupted for problem in problems):  # its read certified, no step made
            interrupted = True
            break
        for c, w in enumerate(start if at_zero and start is not None else []):
            problems[c].w = np.array(w, dtype=np.float64)  # the warm start, once w = 0 is certified
        if on_pass is not None and on_pass(records, np.array([p.best_w for p in problems])):
            break
    return FitResult(
        W=np.array([p.best_w for p in problems]),
        certificates=[p.certificate for p in problems],
        passes=reads - 1 + first,
        history=history,
        converged=converged,
        interrupted=interrupted,
        trained_W=np.array([p.w for p in problems]),  # a warm start not yet certified (FitResult)
    )


def _conjugate_gradient(product, diagonal, g, free=None, shift=0.0):
    """``(s, steps)``: an approximate solution of ``H s = -g`` by conjugate gradient on the
    products ``product(p) = H p`` (:class:`ConjugateGradient`); with a mask ``free`` (``g`` zero
    off it), of ``H_FF s_F = -g_F``, the products kept on the free coordinates; ``shift``: of
    ``(H + shift I) s = -g`` (a sparse penalty's damping, :meth:`_Problem.damp`)."""
    cg = ConjugateGradient(g, diagonal + shift)
    while not cg.done:
        cg.take(held_on(product(cg.p) + shift * cg.p, free))
    return cg.result()


def held_on(Hp, free):
    """``Hp`` kept on the coordinates ``free`` (zero elsewhere; all of it where ``free`` is None):
    the products of the system ``H_FF e = -r_F`` of a sparse penalty's orthant (:mod:`.penalties`),
    whose directions then stay on ``F``."""
    return Hp if free is None else np.where(free, Hp, 0.0)


class ConjugateGradient:
    """Preconditioned conjugate gradient on ``H s = -g``, one Hessian product at a time: the state
    the in-memory loop (:func:`_conjugate_gradient`) and a cluster's root worker
    (:mod:`~..cluster.products`) keep.

    Preconditioned by ``M = (1 - PRECONDITIONER) I + PRECONDITIONER diag(H)`` (Hsia, Chiang and
    Lin, ACML 2018: the diagonal alone can slow some problems, the mixture does not), stopped when
    the residual is :data:`CG_RESIDUAL` of the gradient's norm (LIBLINEAR's truncated Newton rule),
    after :data:`CG_MAX_STEPS` products, or where ``p . H p`` is not positive (``H`` is ``I`` plus a
    positive semidefinite matrix: only rounding gets there).  ``p`` is the direction whose product
    :meth:`take` needs next.
    """

    def __init__(self, g, diagonal):
        self.M = (1.0 - PRECONDITIONER) + PRECONDITIONER * diagonal
        self.s = np.zeros_like(g)
        self.r = -g
        z = self.r / self.M
        self.p = z.copy()
        self.rz = float(self.r @ z)
        self.limit = CG_RESIDUAL * float(np.linalg.norm(g))
        self.steps = 0
        self.stalled = False

    @property
    def residual(self):
        return float(np.linalg.norm(self.r))

    @property
    def done(self):
        return (
            self.stalled or self.steps >= min(CG_MAX_STEPS, self.s.shape[0]) or not self.residual > self.limit
        )

    def take(self, Hp):
        """One step with ``Hp = H p``; returns self."""
        curvature = float(self.p @ Hp)
        if not curvature > 0:
            self.stalled = True
            return self
        a = self.rz / curvature
        self.s += a * self.p
        self.r -= a * Hp
        z = self.r / self.M
        self.rz, previous = float(self.r @ z), self.rz
        self.p = z + (self.rz / previous) * self.p
        self.steps += 1
        return self

    def result(self):
        """``(s, steps)``: the step (the steepest descent ``-g`` if no product was taken)."""
        return (self.s if self.steps else self.r), self.steps  # r is -g until a step is taken


# The Newton reads' band (:func:`band_step`): per problem, this share of the rows read, of margin
# nearest 1 at the evaluated point (within ``cache_bytes``).  Measured in benchmarks/bench_primal.py
# (docs/benchmarks.md, "warm start"): 5% of 2M rows took the next read's relative gap to 1.4e-4 or
# less on tall dense, raw-scale and skewed-label sets at C = 0.01 and 1; 1% to 7.2 at worst.  15%,
# not 10%, so that the band's step is certified without a third read (:func:`band_certificate`):
# on the 2M x 60 tall set (dense and raw 0..255, C = 0.01 and 1) the step from the warm start is
# 0.0155 long in the band's metric, the smallest key outside a 10% band 0.0141, outside a 15% one
# 0.0211 (printed from band_certificate in a default fit; in memory, with numpy's own sample, 0.0140
# against 0.0140 at 10% and 0.0211 at 15%).  The fits: benchmarks/bench_two_reads.py.
BAND_SHARE = 0.15
BAND_STEPS = 30  # Newton steps on the band's objective, at most
BAND_TOL = 1e-10  # they stop at this fraction of the read's gradient norm
BAND_SHORTEST = 1.0 / 16  # or where a step this short does not decrease the model enough


def band_share(plan, capped=True):
    """The share of the rows read that each Newton read keeps as its band (:func:`band_step`):
    :data:`BAND_SHARE` (``capped``: at most ``plan.cache_share``) for a piecewise-quadratic loss,
    whose model is exact once its band is; 0 (no band) for a smooth one such as the logistic loss,
    whose Newton steps need none."""
    if not loss_of(plan.loss).piecewise_quadratic:
        return 0.0
    if not capped or plan.cache_share is None:
        return BAND_SHARE
    return min(BAND_SHARE, float(plan.cache_share))


def band_step(w, g, H, band, plan, penalty=None):
    """The step from ``w`` that minimizes the objective's model in which the rows of ``band`` are
    exact and the others quadratic: ``(w + d)`` where ``d`` minimizes

        m(d) = g . d + 1/2 d^T (H - B0) d + L(w + d) - L(w) + v0 . d  (+ l1 ||w + d||_1 - l1 ||w||_1),

    ``g`` and ``H`` the gradient and Hessian of the read at ``w`` (every row, and the smooth part of
    the ``penalty``; :mod:`.penalties`: the L1 part in brackets, with its proximal Newton steps,
    :meth:`~.penalties.Sparse.direction`, where the penalty has one), ``L``, ``v`` and
    ``B`` the band's loss, ``sum alpha_i y_i x_i`` and Hessian (``0``: at ``w``).  A row outside the
    band whose loss keeps its piece (quadratic where active, zero where not) contributes the same
    to ``m`` and to the objective, so where the rows that change piece are in the band ``m`` is
    the objective itself and its minimum the optimum: the next read finds a gap near zero.  The
    loss's piecewise-quadratic form makes it so (the L2 loss: Keerthi and DeCoste's finite Newton
    method on the rows that matter, as SBM chooses them).  ``m`` is convex (``H - B0`` is ``I`` plus
    the other rows' Hessian); Newton steps with Armijo's rule minimize it, at most
    :data:`BAND_STEPS`, in memory.  ``band``: a :class:`~.reads.Sample` of the rows, their
    signs as labels and costs as weights.
    """
    penalty = L2() if penalty is None else penalty
    X, Y, cost = band.X, band.y[None, :], band.sample_weight[None, :]
    D = w.shape[0]
    zero = np.zeros((1, D))

    def at(d):  # the band's Sums at w + d
        return block_sums(X, Y, cost, (w + d)[None, :], zero, plan.bias, plan.loss_code, plan.feature_map)

    at_start = at_step = _band_at_read(w, band, plan)
    L0, v0, B0 = float(at_start.loss[0]), at_start.v[0], at_start.hessian[0]
    A = H - B0

    at_w = penalty.nonsmooth(w)

    def model(d, L):
        return float(g @ d + 0.5 * d @ A @ d + L - L0 + v0 @ d) + penalty.nonsmooth(w + d) - at_w

    d = np.zeros(D)
    value = 0.0
    limit = BAND_TOL * penalty.stationarity(w, g)
    for _ in range(BAND_STEPS):
        v, B = at_step.v[0], at_step.hessian[0]
        grad = g + A @ d - v + v0
        if not penalty.stationarity(w + d, grad) > limit:
            break
        if penalty.sparse:
            step = penalty.direction(w + d, grad, A + B)
        else:
            try:
                step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A + B, check_finite=False), -grad)
            except np.linalg.LinAlgError:
                break
        t, slope = 1.0, penalty.decrease(w + d, grad, step)
        while t >= BAND_SHORTEST:
            trial = d + t * step
            at_trial = at(trial)
            if (value_t := model(trial, float(at_trial.loss[0]))) <= value + ARMIJO * t * slope:
                break
            t /= 2
        else:
            break
        d, value, at_step = trial, value_t, at_trial
    if not np.all(np.isfinite(d)):
        return -g
    # The band's sums at w and at the step's point, for band_certificate (which reads them if it
    # is asked for the same w and step).
    band.evaluated = (w, d, at_start, at_step)
    return d


# In memory a piecewise-quadratic loss's reads keep every row's shortfall (carried.CarriedHessian,
# Sums.held), so that once a step is known the rows it could carry across the kink are its band
# (step_band): those whose shortfall is within the most the step moves any margin, sum_j |d_j|
# max_i |x~_ij|.  Their sums at the step's point certify it without the read that would only confirm
# it (band_certificate): on the 2M x 60 raw set (C = 0.01) the second read's step from the tenth's
# solution has a band of 0.9% of the rows, the first read's of 58% (2026-12-04).  A band of more
# than STEP_BAND_SHARE of the rows is not cut: its copy and its two sums would cost about what the
# read they save does.
STEP_BAND_SHARE = 0.1


def step_band(w, d, held, c, column_max, plan):
    """The band of the step ``d`` from the in-memory read at ``w`` (``held``: that read's
    :attr:`~.sums.Sums.held`, ``c`` the problem's place in it): as a :class:`~.reads.Sample` (the
    rows, their signs and costs, their shortfalls at the read's point), the rows whose shortfall is
    within the most ``d`` moves any margin (:func:`column_reach`, with :data:`BOUND_SLACK`) and the
    margins' rounding at the read's point, twice over; ``shortfall_out`` (every row left out has
    a larger ``|1 - m_i|``) and ``rounding`` let :func:`band_certificate` certify ``w + d``.  None
    where the read kept no rows (``held`` None), the columns' largest values (``column_max``, the
    bias's last) are unknown, or the band would hold more than :data:`STEP_BAND_SHARE` of the rows.
    A NaN shortfall counts in the band (its sums, NaN, certify nothing).

    The rounding: the read summed each margin as ``x~ . W + x~ . S`` in float64, within ``(D + 4)``
    epsilons of ``sum_j |x~_ij| (|W_j| + |S_j|)``, at most ``rounding = (D + 4) eps (|W| + |S|) .
    column_max``.  A row left out has a computed shortfall above ``reach (1 + BOUND_SLACK) + 2
    rounding``, so its shortfall at ``w`` is above ``reach (1 + BOUND_SLACK) + rounding``: no step
    of ``d`` carries it across, whatever the rounding of the margins the certificate sums again."""
    from .reads import Sample

    if held is None or column_max is None:
        return None
    X, signs, costs, shortfall, spread = held[c]
    rounding = (w.shape[0] + 4) * np.finfo(np.float64).eps * float(spread @ column_max)
    limit = column_reach(d, column_max) * (1.0 + BOUND_SLACK) + 2.0 * rounding
    out = np.abs(shortfall) > limit
    n_band = shortfall.shape[0] - int(np.count_nonzero(out))
    if n_band > STEP_BAND_SHARE * shortfall.shape[0]:
        return None
    rows = np.flatnonzero(~out)
    return Sample(
        take_rows(X, rows), signs[rows], costs[rows], shortfall.shape[0], shortfall=shortfall[rows],
        shortfall_out=limit, column_max=column_max, rounding=rounding,
    )  # fmt: skip


def column_reach(d, column_max):
    """The most a step ``d`` moves any row's margin: ``sum_j |d_j| max_i |x~_ij|``, ``column_max``
    each column's largest ``|value|`` with the bias column's (``|bias|``) last."""
    return float(np.abs(d) @ column_max)


# band_certificate's bound: the step's length in the band's metric, times 1 + BOUND_SLACK, plus the
# margins' rounding, must stay below the smallest key of the rows outside the band.  The keys'
# own relative rounding is at most (D + 4) float64 epsilons, far below 1e-6 for any width the
# solver forms (MAX_WIDTH).
BOUND_SLACK = 1e-6


def band_certificate(w, d, totals, H, band, plan, penalty=None):
    """The :class:`Certificate` of ``w + d`` from the read at ``w`` and its band, without reading
    again; None where the read cannot prove it (the loss's Newton pieces are not quadratic, as the
    squared hinge's are, or a row outside the band may change its piece).

    ``totals``: the read's ``(loss, dual sum, v)`` of the problem over every row at ``w``, ``H``
    its Hessian (with the ``penalty``'s ``l2 I``: the identity for the L2 penalty,
    :mod:`.penalties`, whose value and dual point the certificate takes); ``band``: its band
    (:class:`~.reads.Sample`, with the smallest key of the rows it left out, ``band.outside``, and
    the metric of the keys, ``band.metric``).

    The bound.  A row's key is ``|1 - m_i| / ||x~_i||``, its margin's distance from the hinge point
    over its length in the band's metric (``x~ = ((x - center) / scale, 1)``,
    :func:`~.reads.band_metric`), and a step changes its margin by ``y_i x_i . d = y_i x~_i . d~``
    with ``d~ = (scale d_x, center . d_x + bias d_b)``, at most ``||x~_i|| ||d~||`` (Cauchy and
    Schwarz).  So where ``||d~||`` is below the smallest key outside the band (with
    :data:`BOUND_SLACK` and the margins' rounding), no row outside it crosses the hinge point.

    Then the objective at ``w + d`` is exact from the read: each active row outside the band adds
    ``C_i (1 - m_i - y_i x_i . d)^2``, a quadratic in ``d`` whose sums are the read's less the
    band's at ``w`` (``L_out - v_out . d + 1/2 d^T H_out d``), the inactive ones add 0, and the band's
    rows are summed at ``w + d`` as they are.  So is the dual point ``alpha(w + d)``: outside the
    band ``alpha_i = 2 C_i (1 - m_i) - 2 C_i y_i x_i . d`` stays positive on the active rows, its sum
    falls by ``u_out . d`` with ``u = sum_active 2 C_i y_i x_i = v + (H - I) w`` (``y_i^2 = 1``), and
    ``v_out`` by ``H_out d``.  Both values are the read's certificate had it been made at
    ``w + d`` (issue 52: the third read of the tall fit only confirmed them).  They take ``H_out
    d``, so the read's Hessian certifies: it is summed in float64
    (:data:`~.sums.HESSIAN_IN_DATA_PRECISION`; the true gradient at ``w + d`` of a Newton step is
    the Hessian's rounding times ``d``, which a float32 sum would not show).
    """
    objective = loss_of(plan.loss)
    # Newton pieces quadratic in the shortfall: alpha_i = D_ii (1 - m_i) on the active rows.
    if not (objective.newton and objective.piecewise_quadratic) or band is None:
        return None
    if band.shortfall_out is not None:  # cut from every row's shortfall once d was known (step_band)
        if not column_reach(d, band.column_max) * (1.0 + BOUND_SLACK) + band.rounding < band.shortfall_out:
            return None
    elif band.metric is None or not band_holds(w, d, band, plan.bias):
        return None
    penalty = L2() if penalty is None else penalty
    D = w.shape[0]
    loss, dual_sum, v = totals
    at_w, at_next = _band_sums(w, d, band, plan)
    H_out = H - penalty.l2 * np.eye(D) - at_w.hessian[0]
    v_out = v - at_w.v[0]
    u_out = v_out + H_out @ w
    H_out_d = H_out @ d
    loss_next = (loss - float(at_w.loss[0])) - float(v_out @ d) + 0.5 * float(d @ H_out_d)
    loss_next += float(at_next.loss[0])
    dual_next = (dual_sum - float(at_w.alpha[0])) - float(u_out @ d) + float(at_next.alpha[0])
    v_next = v_out - H_out_d + at_next.v[0]
    point = w + d
    return Certificate(
        primal=objective.primal_value(penalty.value(point), loss_next),
        dual=penalty.dual(objective, dual_next, v_next, loss_next),
    )


def band_holds(w, d, band, bias):
    """Whether no row a read left out of ``band`` (a :class:`~.reads.Sample` with ``outside`` and
    ``metric``) can cross the hinge point on the step from ``w`` to ``w + d``: the step's length in
    the band's metric, times 1 + :data:`BOUND_SLACK`, plus the margins' rounding, below the
    smallest key left out (:func:`band_certificate`)."""
    length, rounding = _band_terms(w, d, band, bias)
    return bool(length * (1.0 + BOUND_SLACK) + rounding < float(band.outside))


def band_reach(w, d, band, bias):
    """The largest ``t`` in [0, 1] (to a relative 1e-9) for which :func:`band_holds` holds on the
    step ``t d`` from ``w``: on that part of the step no row left out of ``band`` changes its piece
    (0: on none of it)."""
    length, rounding = _band_terms(w, d, band, bias)
    room = float(band.outside) - rounding
    if not room > 0.0:
        return 0.0
    if not length * (1.0 + BOUND_SLACK) >= room:
        return 1.0
    t = room / (length * (1.0 + BOUND_SLACK)) * (1.0 - 1e-9)
    return t if band_holds(w, t * d, band, bias) else 0.0


def _band_terms(w, d, band, bias):
    """The step's length in the band's metric and the margins' rounding in its units (:func:`band_holds`)."""
    center, scale = band.metric
    dx, db = d[:-1], float(d[-1])
    bias = float(bias)
    length = float(np.hypot(np.linalg.norm(scale * dx), float(center @ dx) + bias * db))
    D = w.shape[0]
    # A margin's rounding, in the keys' units: at most (D + 4) epsilons of sum_j |x_j w_j|, which
    # is at most ||x~|| ((1 + ||center / scale||) ||scale w_x|| + |bias w_b|).
    wx = w[:-1]
    spread = (1.0 + np.linalg.norm(center / scale)) * np.linalg.norm(scale * wx) + abs(bias * w[-1])
    return length, (D + 4) * np.finfo(np.float64).eps * float(spread)


def _band_at_read(w, band, plan):
    """The band's :class:`~.sums.Sums` (with its Hessian) at the read's point ``w``: at the
    shortfalls the read took (:func:`~.sums.shortfall_sums`), so that the rows it counted active are
    the ones subtracted from its sums; summed again where a band keeps none."""
    if band.shortfall is not None:
        return shortfall_sums(band.X, band.y, band.sample_weight, band.shortfall, plan.bias, plan.loss_code,
                              plan.feature_map)  # fmt: skip
    Y, cost = band.y[None, :], band.sample_weight[None, :]
    zero = np.zeros((1, w.shape[0]))
    return block_sums(band.X, Y, cost, w[None, :], zero, plan.bias, plan.loss_code, plan.feature_map)


def _band_sums(w, d, band, plan):
    """The band's :class:`~.sums.Sums` at ``w`` (with its Hessian) and at ``w + d``: those
    :func:`band_step` made on its way to ``d``, where it stepped from ``w`` to ``d``, else summed."""
    made = getattr(band, "evaluated", None)
    if made is not None and np.array_equal(made[0], w) and np.array_equal(made[1], d):
        return made[2], made[3]
    zero = np.zeros((1, w.shape[0]))
    Y, cost = band.y[None, :], band.sample_weight[None, :]
    at_w = _band_at_read(w, band, plan)
    at_next = block_sums(
        band.X, Y, cost, (w + d)[None, :], zero, plan.bias, plan.loss_code, plan.feature_map, hessian=False
    )
    return at_w, at_next
