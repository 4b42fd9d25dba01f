"""The penalty inside the Newton reads: what a step and its certificate take from it.

The Newton reads (:mod:`.newton`) minimise, for each binary problem,

    P(w) = g(w) + sum_i C_i loss(m_i),   g(w) = l1 ||w||_1 + l2/2 ||w||^2

from sums over rows: a read at ``w`` gives the loss's sum, ``v = sum_i alpha_i y_i
x_i`` (``alpha_i = -C_i loss'(m_i)``, so the loss's gradient is ``-v``), the
Hessian ``H_loss = sum_i D_ii x_i x_i^T`` and the dual's row terms at
``alpha(w)``.  The penalty decides the rest, and this module is its only room:

- :class:`L2` (``l1 = 0``, ``l2 = 1``: every model but the sparse ones): the
  step solves ``(I + H_loss) s = -(w - v)`` (a Cholesky solve), and
  ``alpha(w)`` is dual feasible as it is (:meth:`~..plan.losses.Loss.newton_dual`).
- :class:`Sparse` (``l1 > 0``: LIBLINEAR's ``-s 5`` and ``-s 6``, scikit-learn's
  elastic net, ``l1 = r`` and ``l2 = 1 - r``): the step minimises the read's
  quadratic model of the smooth part plus the exact penalty::

      q(s) = (l2 w - v) . s + 1/2 s^T (H_loss + l2 I) s + l1 ||w + s||_1

  by coordinate descent (:func:`~dask_streamsvm.kernels.coordinate.model_descent`),
  newGLMNET's direction (Yuan, Ho and Lin, JMLR 2012) made of one read's sums,
  and Armijo's rule on ``P`` takes the sufficient decrease of Tseng and Yun
  (2009) along it::

      Delta = (l2 w - v) . s + l1 (||w + s||_1 - ||w||_1)

  The certificate is Fenchel's (:mod:`.l1`): the dual point ``alpha(w)``
  scaled by ``t = min(1, l1 / ||v||_inf)`` for pure L1 (1 for the elastic net,
  whose penalty's conjugate is finite everywhere), of value::

      D(t alpha) = sum_i phi_i(t alpha_i) - g*(t v)

  where the row terms ``phi_i`` are concave with ``phi_i(0) = 0``.  A read has
  only their sum at ``alpha`` itself, so for ``t < 1`` it bounds them from
  below, ``phi_i(t a) >= t phi_i(a)``, where it cannot sum them exactly
  (:meth:`~..plan.losses.Loss.scaled_newton_terms`): the squared hinge's
  ``phi_i(a) = a - a^2 / (4 C_i)`` is exact from its sums, the logistic
  loss's entropy is bounded.  Weak duality holds for any feasible point, and a
  lower dual value only widens the gap: the certificate never claims more than
  the read proved.  At the optimum ``||v||_inf = l1`` (pure L1), so ``t = 1`` and
  the gap is zero.

Products.  A cluster's parts wider than the Hessian it forms give only its products ``H p``
(:mod:`~..cluster.products`), and coordinate descent on the model needs its columns.  There the
sparse penalties take the orthant-wise Newton step (OWL-QN's orthant, Andrew and Gao 2007, with
the Newton-CG system of Byrd, Chin, Nocedal and Oztoprak 2016): on the free coordinates ``F`` and
their orthant (:func:`orthant`) ``P`` is smooth, of gradient ``r``, so ``H_FF e = -r_F`` is solved
by the same preconditioned conjugate gradient as the L2 penalty's (its products held on ``F``),
damped as Levenberg and Marquardt damp it (``H_FF + mu I``, ``mu`` raised after a refused step and
lowered after a full one, :meth:`~.newton._Problem.damp`), and the step is projected back to the
orthant (:func:`orthant_step`).  Armijo's rule then takes Tseng and Yun's ``Delta`` along it, as
above, and the certificate is the same.  Undamped, the squared hinge's Hessian is singular on the
free weights where fewer rows are inside the margin than weights are free (wide rows), and without
an ``l2`` part the logistic loss's is nearly so: the steps crossed zero in its flat directions, were
cut there, and stalled for hundreds of reads (newton.py, ``DAMPING_START``, has the numbers).
"""

import numpy as np
import scipy.linalg

from ...kernels.coordinate import columns_model_descent, model_descent
from .l1 import dual_scale, penalty_conjugate
from .sums import CG_WIDTH

# The direction of the sparse penalties (Sparse.direction): rounds of MODEL_SWEEPS sweeps of
# coordinate descent on the read's model, each followed by a Newton step on the model's support
# (Sparse.support_step), at most MODEL_ROUNDS of them, until the model's largest violation is MODEL_TOL
# of the first (at the read's point).  Coordinate descent alone is slow where columns are correlated
# (a9a's one-hot groups: the proximal Newton reads then stalled at a gap of 0.2 for several reads);
# the support's step solves the model exactly once its signs are right.  A read out of core costs
# seconds and a sweep of the model a millisecond (61 columns): the model is solved as far as rounding
# allows, so that each read's step is newGLMNET's exact step.
MODEL_TOL = 1e-12
MODEL_SWEEPS = 50
MODEL_ROUNDS = 40
# The model's ridge, relative to its mean diagonal: without an l2 part the model is flat along
# collinear columns (a9a's one-hot groups beside the bias column), where coordinate descent wanders
# (its largest violation stayed at 1.7 of a first 35,000 after 2,000 sweeps) and the support's
# system is singular.  The ridge makes it strictly convex: a step of the ridged model still descends
# P (Tseng and Yun's Delta does not ask for the exact Hessian), and the last steps, short, are
# barely changed (engine/primal/l1.py's support Newton steps take the same).
MODEL_RIDGE = 1e-9
# Where the model's Hessian is not positive definite, coordinate descent on it runs off along a
# direction of negative curvature (to 1e166 and an overflow, which Sparse.direction sees).  The
# band's model (newton.band_step) subtracts the band's Hessian at the read's point from the read's:
# summed again, a row at the kink of its loss counted active in one sum and not in the other left one
# row's Hessian negative (-2.8 on w8a, pure L1); the band is now subtracted at the read's own
# shortfalls (sums.shortfall_sums), and what remains is the sums' rounding (float32 rows' Hessian is
# summed in float32, and pure L1 adds no identity to outweigh it).  The shift added to its diagonal
# then grows by MODEL_SHIFT_GROWTH, from the ridge, until it factors (Levenberg and Marquardt's
# damping), and the model is descended again: the step still descends the exact model, whose line
# search takes it.  A model that descends pays no factorization.
MODEL_SHIFT_GROWTH = 10.0
SUPPORT_HALVINGS = 30  # the support's step, halved until the model decreases (support_step)
# Rows in memory with more free weights than their block is formed for (Sparse.columns_direction):
# coordinate descent on the model by the rows' columns, stopped at COLUMNS_TOL of the first
# violation or after COLUMNS_SWEEPS sweeps, the read's line search taking the rest (newGLMNET solves
# its model inexactly too).  Measured on benchmarks/bench_l1_shapes.py's 50,000 x 20,000 text rows
# (in one process, tol 1e-3): pure L1 at C = 1 and 10 took 0.46 and 1.41 s at 10 sweeps, 0.55 and
# 1.69 s at 5, 0.49 and 1.39 s at 20 and 0.89 and 1.92 s at 50 (6 and 11 reads: each sweep costs
# more than it saves); the elastic net 0.5 took 0.34 and 0.37 s at 10, 0.21 and 0.32 s at 5.  The
# damped orthant steps from the products took 0.56 and 6.3 s (35 and 362 reads).
COLUMNS_TOL = 1e-3
COLUMNS_SWEEPS = 10


class L2:
    """The penalty ``1/2 ||w||^2`` (module docstring)."""

    sparse = False
    l1, l2 = 0.0, 1.0

    def nonsmooth(self, w):
        """The penalty's part a Hessian does not see, ``l1 ||w||_1``: none."""
        return 0.0

    def stationarity(self, w, g):
        """How far ``w`` of smooth gradient ``g`` is from a minimum: ``||g||``."""
        return float(np.linalg.norm(g))

    def value(self, w):
        """``g(w)``."""
        return 0.5 * float(w @ w)

    def gradient(self, w, v):
        """The objective's gradient at ``w`` from the read's ``v``."""
        return w - v

    def hessian(self, hessian_loss):
        """The objective's Hessian from the read's ``H_loss`` (a new array)."""
        return hessian_loss + np.eye(hessian_loss.shape[0])

    def dual(self, loss, dual_sum, v, loss_sum):
        """The dual value certifying the read's point (:meth:`~..plan.losses.Loss.newton_dual`)."""
        return loss.newton_dual(dual_sum, v, loss_sum)

    def direction(self, w, g, H):
        """The Newton step ``H s = -g`` (the least-squares step where ``H`` is not numerically
        positive definite; ``-g`` where neither is finite)."""
        try:
            factor = scipy.linalg.cho_factor(H, check_finite=False)
            s = scipy.linalg.cho_solve(factor, -g, check_finite=False)
        except np.linalg.LinAlgError:
            s = np.linalg.lstsq(H, -g, rcond=None)[0]
        return s if np.all(np.isfinite(s)) else -g

    def decrease(self, w, g, s):
        """Armijo's decrease of the full step ``s`` from ``w``: ``g . s``."""
        return float(g @ s)

    def products_direction(self, w, g, solve):
        """``(s, products)``: the Newton step from the Hessian's products alone, ``solve(g)``
        (preconditioned conjugate gradient on ``H s = -g``, every coordinate free; the identity in
        ``H`` keeps it positive definite)."""
        return solve(g)


class Sparse(L2):
    """The penalty ``l1 ||w||_1 + l2/2 ||w||^2`` with ``l1 > 0`` (module docstring)."""

    sparse = True

    def __init__(self, l1, l2):
        self.l1, self.l2 = float(l1), float(l2)
        self.sweeps = 0  # the model's sweeps of the last direction

    def value(self, w):
        return self.l1 * float(np.abs(w).sum()) + 0.5 * self.l2 * float(w @ w)

    def nonsmooth(self, w):
        return self.l1 * float(np.abs(w).sum())

    def stationarity(self, w, g):
        """The norm of the minimum-norm subgradient (:func:`violations`)."""
        return float(np.linalg.norm(violations(g, w, self.l1)))

    def gradient(self, w, v):
        """The smooth part's gradient, ``l2 w - v``."""
        return self.l2 * w - v

    def hessian(self, hessian_loss):
        """The smooth part's Hessian, ``H_loss + l2 I``."""
        H = np.array(hessian_loss, dtype=np.float64, copy=True)
        H[np.diag_indices_from(H)] += self.l2
        return H

    def dual(self, loss, dual_sum, v, loss_sum):
        t = dual_scale(v, self.l1, self.l2)
        return loss.scaled_newton_terms(dual_sum, loss_sum, t) - penalty_conjugate(t * v, self.l1, self.l2)

    def direction(self, w, g, H):
        """The minimiser of the read's model ``q`` (module docstring), its coordinates descended and
        its support's Newton steps taken in turn; ``self.sweeps`` counts the sweeps."""
        H = np.array(H, dtype=np.float64, order="C", copy=True)
        ridge = MODEL_RIDGE * max(1.0, float(np.trace(H)) / H.shape[0])
        H[np.diag_indices_from(H)] += ridge
        self.sweeps = 0
        with np.errstate(over="ignore", invalid="ignore"):  # a model not positive definite runs off
            s = self._descended(w, g, H)
            ran_off = not np.isfinite(q := _model_value(H, g, w, self.l1, s)) or q > self.value(w)
        if ran_off:  # shifted until it factors (definite), and descended again
            if not definite(H, ridge):
                return np.zeros_like(w)
            s = self._descended(w, g, H)
        return s if np.all(np.isfinite(s)) else np.zeros_like(w)

    def _descended(self, w, g, H):
        s = np.zeros_like(w)
        first = float(np.max(violations(g, w, self.l1), initial=0.0))
        for _ in range(MODEL_ROUNDS):
            sweeps, largest = model_descent(H, g, w, self.l1, MODEL_TOL * first, MODEL_SWEEPS, s)
            self.sweeps += sweeps
            if largest <= MODEL_TOL * first or not np.all(np.isfinite(s)):
                break
            support_step(H, g, w, self.l1, s)
        return s

    def decrease(self, w, g, s):
        """Tseng and Yun's ``Delta`` (module docstring): at most 0, and 0 only at a stationary ``w``."""
        return float(g @ s) + self.l1 * (float(np.abs(w + s).sum()) - float(np.abs(w).sum()))

    def free_direction(self, w, g, gram, shift=0.0):
        """The minimiser of the read's model on the free weights (:func:`orthant`), the others held
        at 0, where the Hessian is held as its rows (in memory: :class:`~.sums.ActiveTerms`) and
        ``gram(F)`` forms its block ``H_FF``: None where more than :data:`~.sums.CG_WIDTH` weights
        are free (their block costs more than the products' steps).  newGLMNET's working set: a
        weight at zero whose derivative is inside ``[-l1, l1]`` is not in the model, whose cost
        is then that of the free weights, not of the whole width (pure L1's few nonzeros).
        ``shift``: the block's damping, a share of its mean diagonal added to it (Levenberg and
        Marquardt's, :meth:`~.newton._Problem.damp_block`)."""
        free = np.flatnonzero(orthant(w, g, self.l1)[0])
        if free.size > CG_WIDTH:
            return None
        s = np.zeros_like(w)
        if free.size:
            block = gram(free)
            if shift:
                block[np.diag_indices_from(block)] += shift * float(np.mean(np.diag(block)))
            s[free] = self.direction(w[free], g[free], block)
        return s

    def columns_direction(self, w, g, terms, shift=0.0):
        """The minimiser of the read's model on the free weights (:func:`orthant`), the others held at
        0, by coordinate descent on the rows' columns (:func:`~...kernels.coordinate.columns_model_descent`,
        newGLMNET's inner loop), where too many weights are free for their block (:meth:`free_direction`)
        and the rows are in memory (``terms``: :class:`~.sums.ActiveTerms`): the model's sweeps stop
        at :data:`COLUMNS_TOL` of its first violation, or after :data:`COLUMNS_SWEEPS`; the read's
        line search takes the rest.  ``self.sweeps`` counts the sweeps; ``shift`` as
        :meth:`free_direction`'s, a share of the Hessian's mean diagonal."""
        free = np.flatnonzero(orthant(w, g, self.l1)[0])
        s = np.zeros_like(w)
        if free.size == 0:
            return s
        cols, D = terms.columns()
        first = float(np.max(violations(g[free], w[free], self.l1)))
        mean = float(np.mean(terms.diagonal))
        ridge = self.l2 + MODEL_RIDGE * max(1.0, mean) + shift * mean
        q = np.zeros(D.shape[0])
        order = free.astype(np.int64)
        self.sweeps, _ = columns_model_descent(
            cols, D, order, g, w, self.l1, ridge, COLUMNS_TOL * first, COLUMNS_SWEEPS, s, q
        )
        return s if np.all(np.isfinite(s)) else np.zeros_like(w)

    def products_direction(self, w, g, solve):
        """``(s, products)`` where only the Hessian's products are at hand (a cluster's parts wider
        than the formed Hessian): the orthant-wise Newton step (module docstring, "Products").
        ``solve(r, free)`` is the conjugate gradient on ``H_FF e = -r_F`` (damped by the caller), its
        products kept on the ``free`` coordinates."""
        free, zeta, r = orthant(w, g, self.l1)
        if not free.any():  # stationary: no weight can move
            return np.zeros_like(w), 0
        e, products = solve(r, free)
        return orthant_step(w, e, r, zeta), products


def definite(H, ridge):
    """``H`` made positive definite in place: ``ridge`` added to its diagonal, then (where it does not
    factor) shifts growing by :data:`MODEL_SHIFT_GROWTH` until it does; False where no shift up to a
    million times its largest diagonal does (values that are not finite)."""
    diagonal = np.diag_indices_from(H)
    shift, top = float(ridge), 1e6 * max(1.0, float(np.max(np.abs(np.diag(H)), initial=0.0)))
    H[diagonal] += shift
    while True:
        try:
            scipy.linalg.cho_factor(H, check_finite=True)
            return True
        except (np.linalg.LinAlgError, ValueError):  # not positive definite, or not finite
            if shift > top or not np.all(np.isfinite(H)):
                return False
        H[diagonal] += (MODEL_SHIFT_GROWTH - 1.0) * shift
        shift *= MODEL_SHIFT_GROWTH


def violations(G, u, l1):
    """Each coordinate's distance from optimality at ``u`` of derivative ``G`` (the smallest ``|G +
    l1 sign|`` over the subgradient of ``l1 |u_j|``): :func:`~dask_streamsvm.kernels.coordinate.violation`
    of every coordinate."""
    at_zero = np.maximum(np.abs(G) - l1, 0.0)
    return np.where(u > 0, np.abs(G + l1), np.where(u < 0, np.abs(G - l1), at_zero))


def orthant(w, g, l1):
    """``(free, zeta, r)`` at ``w`` of smooth gradient ``g``: the coordinates a step may move (a
    weight not zero, or zero with ``|g_j| > l1``: its minimum-norm subgradient is not zero), the
    orthant each moves in (a weight's sign; at zero the sign that descends, ``-sign(g_j)``), and the
    gradient of ``P`` in that orthant (``g + l1 zeta`` on the free coordinates, 0 elsewhere).  At a
    stationary point ``r`` is 0 (``||r||`` is :func:`violations`' norm)."""
    free = (w != 0) | (np.abs(g) > l1)
    zeta = np.where(w != 0, np.sign(w), -np.sign(g)) * free
    return free, zeta, np.where(free, g + l1 * zeta, 0.0)


def orthant_step(w, e, r, zeta):
    """The step ``s`` to take from ``w`` along the Newton solution ``e`` of the orthant's system:
    each coordinate of ``e`` that does not descend the orthant's gradient (``e_j r_j >= 0``) is
    dropped, and a weight the step takes across zero stops at zero (OWL-QN's two projections,
    Andrew and Gao 2007).  Then every move descends, ``Delta = r . s < 0`` unless ``s = 0``, and
    ``w + t s`` stays in the orthant for ``t`` in [0, 1], where ``P`` is smooth."""
    e = np.where(e * r < 0, e, 0.0)
    u = w + e
    return np.where(np.sign(u) == zeta, u, 0.0) - w


def support_step(H, g, w, l1, s):
    """One Newton step, in place on ``s``, on the model ``q`` restricted to the support ``A`` of ``u =
    w + s`` with its signs ``sigma`` held, where ``q`` is the quadratic ``(g + H s)_A . e + 1/2 e^T
    H_AA e + l1 sigma . e`` of the change ``e`` of ``s_A``: ``e = -H_AA^-1 ((g + H s)_A + l1 sigma)``,
    projected on the signs' orthant (a weight the step takes across zero stops at zero, as OWL-QN
    projects) and halved until ``q`` decreases (at most :data:`SUPPORT_HALVINGS` times; else ``s``
    stays), so that ``q`` only decreases."""
    u = w + s
    support = np.flatnonzero(u)
    if support.size == 0:
        return
    sigma = np.sign(u[support])
    G = g[support] + H[support] @ s + l1 * sigma
    H_AA = H[np.ix_(support, support)]
    try:
        e = -scipy.linalg.cho_solve(scipy.linalg.cho_factor(H_AA, check_finite=False), G, check_finite=False)
    except np.linalg.LinAlgError:  # singular on the support: the least-squares step
        e = -np.linalg.lstsq(H_AA, G, rcond=None)[0]
    if not np.all(np.isfinite(e)):
        return
    before = _model_value(H, g, w, l1, s)
    fraction = 1.0
    for _ in range(SUPPORT_HALVINGS):
        moved = u[support] + fraction * e
        moved[np.sign(moved) != sigma] = 0.0
        trial = s.copy()
        trial[support] = moved - w[support]
        if _model_value(H, g, w, l1, trial) < before:
            s[:] = trial
            return
        fraction *= 0.5


def _model_value(H, g, w, l1, s):
    """``q(s)`` (module docstring)."""
    return float(g @ s + 0.5 * s @ (H @ s)) + l1 * float(np.abs(w + s).sum())


def penalty_of(plan):
    """The penalty of ``plan``: :class:`Sparse` where its ``l1_ratio`` is positive, else :class:`L2`."""
    if plan.sparse_penalty:
        return Sparse(plan.l1_ratio, 1.0 - plan.l1_ratio)
    return L2()
