"""The multinomial (softmax) model streamed: a warm start from a sample, then a read per Newton step.

The problem and its dual are :mod:`.multinomial`'s.  Every term a Newton
step and its certificate need is a sum over rows (:class:`SoftmaxSums`),
so the sums of the partitions are the data's:

    loss      sum_i C_i (logsumexp(z_i) - z_{i,y_i})        P's loss term
    entropy   sum_i C_i H(p_i)                             the dual's entropy at q_i = p_i
    gradient  sum_i C_i (p_i - e_{y_i}) x~_i^T   (K x D)    the loss's gradient; - sum_i theta_i x~_i^T
    residual  sum_i C_i (p_i - e_{y_i})          (K)        - sum_i theta_i, the intercept's gradient
    hessian   sum_i C_i (diag(p_i) - p_i p_i^T) kron x~_i x~_i^T    (K D x K D)
    mass, targets, row_sum: sum_i C_i e_{y_i}, sum_i C_i e_{y_i} x~_i^T, sum_i C_i x~_i

(the last three do not depend on the point; a read sums them all the same,
which costs a product of the rows by ``K + 1`` vectors).

The reads (:func:`fit_multinomial_stream`).  The read that counts the
classes keeps a uniform sample of the rows (:func:`~.reads.first_read`); the
sample's problem, its costs scaled by the rows seen over the rows kept, is
solved in memory (:func:`~.multinomial.solve_softmax`, to
:data:`SAMPLE_TOL`), and its solution ``W0`` is where the first Newton
read evaluates the data's sums.  Each read evaluates one point: its value
and certificate, and, where Armijo's rule accepts it (or at the start), the
Newton step from its formed Hessian (a ``K D x K D`` Cholesky solve; the
model is at most :data:`~.newton.MAX_WIDTH` wide out of core).  A refused
step is shortened by the minimum of the quadratic through the refused
read's value and the slope at ``W`` (:func:`~.newton.shortened`), and the
next read evaluates that point.

The certificate of a read.  The dual point at ``W`` is the loss's
derivative, ``q_i = p_i``, and without an intercept it is feasible as it
is.  With one, ``g = sum_i theta_i`` must be made zero, and a read gives
two ways (:func:`dual_values`; the certificate takes the better):

- the mix ``q_i' = (1 - t) p_i + t r`` of :func:`~.multinomial.feasible_mix`,
  whose ``sum_i theta_i' x~_i^T = (1 - t) V + t (targets - r row_sum^T)``
  is made of the sums.  Its entropy ``sum_i C_i H(q_i')`` is not a sum the
  read can form before ``t`` is known, so it is bounded below by
  concavity: ``H((1 - t) p + t r) >= (1 - t) H(p) + t H(r)``.  The mix
  shrinks every row's probabilities, which moves ``V`` by ``t`` times the
  classes' sums of rows: far from the optimum it is the only feasible
  point, near it a poor one (a relative gap of about 100 t measured);
- the shift ``q_i' = p_i + delta`` of the rows whose every probability is at
  least a floor (a level of :data:`FLOORS`), ``delta = g / sum C_i`` over
  them, feasible where no ``|delta_k|`` passes :data:`SHIFT_SHARE` of the
  floor.  It moves ``V`` by ``delta`` times the rows' sum only, and its
  entropy is bounded below by ``H(p + delta) >= H(p) - sum_k delta_k log p_k
  - sum_k delta_k^2 / p_k``: the remainder of the first-order expansion of
  ``q log q``, ``(p + d) log(p + d) - p log p - d (1 + log p)``, is at most
  ``d^2 / p`` wherever ``p + d >= 0`` (with ``r = -d / p`` in [0, 1] it is
  ``p ((1 - r) log(1 - r) + r) <= p r^2``; for ``d > 0`` at most ``d^2 /
  (2 p)``), and ``sum_k delta_k = 0``.  The read sums, per level, ``C_i``,
  ``C_i log p_ik``, ``C_i / p_ik`` and ``C_i x~_i``
  (:func:`~...kernels.softmax.shift_terms`).

Both are the dual point of the read's own point, whose gap on tall rows is
about the square of the gradient, while its suboptimality is about ``g^T
H^-1 g``: the certificate would lag a Newton step behind the primal.  So
where a read gives a Newton step ``S`` it also bounds the dual point of the
step's first-order change, ``q_i' = p_i + a A_i dz_i`` (``A_i = diag(p_i) -
p_i p_i^T``, ``dz_i = S x~_i``, ``a`` a share of :data:`STEP_SHARES`), the
next point's dual point to second order:

- ``sum_i theta_i' x~_i^T = V - a H S`` with ``H`` the rows' Hessian the
  read summed (exactly the Hessian's product, ``sum_i C_i A_i dz_i
  x~_i^T``), and ``sum_i theta_i' = g - a (H S)_b``, which the step makes
  zero up to rounding (its intercept rows solve exactly that); the shift
  above, on top, makes it zero;
- feasible where ``a`` times the reach ``2 max_k ||s_k|| max_i ||x~_i||`` is
  below 1 (``|dz_ik - p_i . dz_i| <= 2 max_k |s_k . x~_i|``, and ``s_k . x~_i
  = (s_k . center + b_k) + (scale s_k) . ((x_i - center) / scale)``: the read
  keeps the largest ``||(x_i - center) / scale||``, in the sample's center
  and scale, :func:`~.reads.band_metric`), the shift's room then ``1 - a
  reach`` of a floor;
- its entropy bounded by the remainder above: the first-order term is ``a
  sum_i C_i (A_i log p_i) . dz_i``, and ``A_i log p_i = A_i z_i`` (``log p_i =
  z_i - logsumexp(z_i) 1`` and ``A_i 1 = 0``), so it is ``a W . H S``; ``sum_k
  d_k^2 / p_k = a^2 dz^T A dz``, so ``a^2 S . H S`` in all (twice that with
  the shift on top: ``(u + v)^2 <= 2 u^2 + 2 v^2``).  Every term is the
  read's Hessian sum times ``S``: no other sum is needed.

On the tall 2M x 60 three-class set at C = 1 (docs/benchmarks.md) it took
the first Newton read's certificate from a relative gap of 134 to 1.6e-3,
and the second's from 7.2e-3 to 2.5e-7.

A lower dual value only widens the gap: a read never certifies more than
it proved.  The fit returns the point of lowest primal value with the
highest dual value seen (weak duality holds for any pair).
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...kernels.softmax import entropy_rows, shift_terms, softmax_rows
from ..plan.certificate import Certificate, check_gap
from ..plan.problem import class_index
from ..plan.result import FitResult
from ..plan.threads import memory_row_threads, row_threads
from .multinomial import (
    MIN_STEP_LENGTH,
    SOLVER_NAME,
    TWO_CLASS_COST,
    SoftmaxProblem,
    check_classes,
    class_costs,
    class_sums,
    feasible_mix,
    formed_step,
    model_of,
    product_weights,
    regularised,
    scores,
    solve_softmax,
    stall_message,
    sufficient_decrease,
)
from .newton import MAX_WIDTH, STEP_SHARES, shortened
from .reads import Sample, StreamRead, band_metric
from .sums import Sums, chunk_sums, product_rows, run_sums, scratch
from .warm import MEMORY_SAMPLE_SEED, memory_sample_rows

# The sample's solve (the warm start) takes at most this many Newton steps ...
WARM_MAX_STEPS = 100
# ... to this relative gap, where the sample is not every row: its own optimum is about as far from
# the data's (on 1M x 60 Gaussian rows of three classes, the optimum of a sample of 100,000 rows is
# 6.7e-4 above the data's, relative; of 244,000 rows 2.3e-4).  Measured against 1e-6 (fresh
# processes, tol 1e-3, three classes of 60 features and an intercept): the first read's gap the same
# (1.6e-3 and 1.2e5 on the streamed 2M-row dense and raw sets, 2.7e-3 on 1M rows in memory), the
# sample's solve 0.85-1.08 s against 1.77-1.89 s (dense, 244,000 rows), 2.62-2.65 s against
# 3.37-3.60 s (raw), 0.19 s against 0.28 s (in memory, 100,000 rows).
SAMPLE_TOL = 1e-3


# The shifted dual point's levels (:func:`certificate`): a row is of the first level whose floor its
# smallest probability reaches, and the shift of a level may move each probability by at most half
# its floor (the bound of the entropy's second-order term, :func:`dual_values`, holds there).
FLOORS = 10.0 ** -np.arange(1, 13)
SHIFT_SHARE = 0.5
ARRAYS = ("gradient", "residual", "hessian", "mass", "targets", "row_sum", "shift_weight", "shift_logs",
          "shift_inverse", "shift_rows")  # fmt: skip


@dataclass
class SoftmaxSums:
    """The sums over rows of one read at one point (module docstring); ``shift_*``: by level of
    :data:`FLOORS` (exclusive), the rows' costs, ``sum C_i log p_ik``, ``sum C_i / p_ik`` and ``sum
    C_i x~_i`` (:func:`~...kernels.softmax.shift_terms`); ``row_norm``: the largest ``||(x_i -
    center) / scale||`` in the read's metric (:func:`metric_of`; a maximum, not a sum)
    (:func:`dual_values`)."""

    loss: float
    entropy: float
    gradient: np.ndarray
    residual: np.ndarray
    hessian: np.ndarray
    mass: np.ndarray
    targets: np.ndarray
    row_sum: np.ndarray
    shift_weight: np.ndarray
    shift_logs: np.ndarray
    shift_inverse: np.ndarray
    shift_rows: np.ndarray
    row_norm: float = 0.0
    diagonal: np.ndarray = None  # the rows' Hessian's diagonal (K x D), where the Hessian is not formed

    @classmethod
    def zeros(cls, K, D, hessian=True):
        """Zero sums; ``hessian``: the formed Hessian's (``K D x K D``), else its diagonal's."""
        L = FLOORS.shape[0]
        H, diagonal = (np.zeros((K * D, K * D)), None) if hessian else (None, np.zeros((K, D)))
        return cls(0.0, 0.0, np.zeros((K, D)), np.zeros(K), H, np.zeros(K), np.zeros((K, D)),
                   np.zeros(D), np.zeros(L), np.zeros((L, K)), np.zeros((L, K)), np.zeros((L, D)), 0.0,
                   diagonal)  # fmt: skip

    def add(self, other):
        self.loss += other.loss
        self.entropy += other.entropy
        self.row_norm = max(self.row_norm, other.row_norm)
        for name in (*ARRAYS, "diagonal"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is None or theirs is None:  # a sum the read did not form (the Hessian, its diagonal)
                setattr(self, name, theirs if mine is None else mine)
            else:
                mine += theirs


def metric_of(metric, width):
    """``(center, scale)`` of ``width`` feature columns (None: 0 and 1), float64."""
    if metric is None:
        return np.zeros(width), np.ones(width)
    return tuple(np.asarray(part, dtype=np.float64) for part in metric)


def _row_norm(features, metric):
    """The largest ``||(x_i - center) / scale||`` of the rows ``features`` (without the intercept)."""
    if not features.shape[0]:
        return 0.0
    center, scale = metric
    if sp.issparse(features):  # sparse rows: center 0 (band_metric's)
        scaled = sp.csr_matrix(features.multiply(1.0 / scale[None, :]))
        return float(np.sqrt(np.max(scaled.multiply(scaled).sum(axis=1))))
    X, largest = np.asarray(features), 0.0
    step = product_rows(X.shape[1])
    for lo in range(0, X.shape[0], step):  # in this thread's scratch: no mapping of its own a chunk
        part = X[lo : lo + step]
        scaled = scratch("centred rows", part.shape)
        np.subtract(part, center, out=scaled)
        np.divide(scaled, scale, out=scaled)
        largest = max(largest, float(np.max(np.einsum("ij,ij->i", scaled, scaled))))
    return float(np.sqrt(largest))


def problem_sums(problem, W, metric=None, hessian=True, diagonal=True):
    """``(P, sums)``: the probabilities and the :class:`SoftmaxSums` at ``W`` (``K x D``) of the rows
    of ``problem`` (a :class:`~.multinomial.SoftmaxProblem`: a read's chunk, or a part of a cluster
    held on its worker), with the formed Hessian (``hessian``), else the Hessian's diagonal (the
    conjugate gradient's preconditioner; none where not ``diagonal``); ``metric`` as
    :func:`softmax_sums`'.  The sums that do not depend on ``W`` (``mass``, ``targets``,
    ``row_sum``, ``row_norm``) are made where the problem made its own (else None, and
    ``row_norm`` 0)."""
    X, cost, K = problem.X, problem.cost, problem.K
    n = X.shape[0]
    P, loss = problem.loss(problem.scores(W))
    L = FLOORS.shape[0]
    level, weight = np.empty(n, dtype=np.int64), np.zeros(L)
    logs, inverse = np.zeros((L, K)), np.zeros((L, K))
    shift_terms(P, cost, FLOORS, level, weight, logs, inverse)
    # each level's sum_i C_i x~_i (a row is of one level) in the gradient's product: a column of
    # weights per level that has rows, beside the residuals C_i (p_i - e_{y_i})
    present = np.flatnonzero(np.bincount(level, minlength=L + 1)[:L])
    weights = np.zeros((n, K + present.size))
    np.multiply(cost[:, None], P - problem.onehot, out=weights[:, :K])
    column = np.full(L + 1, -1)
    column[present] = K + np.arange(present.size)
    kept = np.flatnonzero(level < L)
    weights[kept, column[level[kept]]] = cost[kept]
    summed = problem.class_sums(weights)
    shift_rows = np.zeros((L, summed.shape[1]))
    shift_rows[present] = summed[K:]
    residual = weights[:, :K]
    sums = SoftmaxSums(
        loss=loss, entropy=entropy_rows(P, cost), gradient=summed[:K],
        residual=residual.sum(axis=0), hessian=None, mass=problem.mass, targets=problem.targets,
        row_sum=problem.row_sum, shift_weight=weight, shift_logs=logs, shift_inverse=inverse,
        shift_rows=shift_rows,
    )  # fmt: skip
    if problem.mass is not None:  # the sums of the rows alone (their largest norm is one)
        sums.row_norm = _row_norm(X, metric_of(metric, X.shape[1]))
    if hessian:
        sums.hessian = problem.loss_hessian(P)
    elif diagonal:
        sums.diagonal = problem.loss_diagonal(P)
    return P, sums


def softmax_sums(X, y_index, cost, W, fit_intercept, metric=None, hessian=True, fixed=True, step=None):
    """The :class:`SoftmaxSums` of rows ``X`` (dense or CSR, without the intercept column) of classes
    ``y_index`` and costs ``cost`` at the point ``W`` (``K x D``), a chunk of rows at a time;
    ``metric``: the ``(center, scale)`` its largest row is measured in (:func:`metric_of`);
    ``hessian``: the formed Hessian is summed (else neither it nor its diagonal); ``fixed``: the
    sums that do not depend on ``W`` are made (:func:`problem_sums`); ``step``: the rows of a chunk
    (None: a product's, :func:`~.sums.product_rows`: a chunk and its products stay in a core's
    cache, and its arrays of a few columns are below glibc's mapping threshold where the reader
    runs), the chunk of dense rows made float64 in this thread's scratch (:func:`~.sums.scratch`)."""
    K, D = W.shape
    total = SoftmaxSums.zeros(K, D, hessian)
    total.diagonal = None
    if not fixed:
        total.mass = total.targets = total.row_sum = None
    step = product_rows(D) if step is None else step
    for lo in range(0, X.shape[0], step):
        hi = min(lo + step, X.shape[0])
        kept = np.flatnonzero(cost[lo:hi] > 0) + lo  # rows of no cost add nothing
        if not kept.size:
            continue
        rows = slice(lo, hi) if kept.size == hi - lo else kept
        chunk = X[rows] if sp.issparse(X) else np.asarray(X)[rows]
        if not sp.issparse(chunk) and chunk.dtype != np.float64:
            converted = scratch("float64 rows", chunk.shape)
            converted[...] = chunk
            chunk = converted
        problem = SoftmaxProblem(chunk, y_index[rows], cost[rows], K, fit_intercept, fixed=fixed)
        total.add(problem_sums(problem, W, metric, hessian, diagonal=False)[1])
    return total


def dual_values(sums, W, penalised, fit_intercept, step=None, metric=None, moved=None):
    """The dual values of the feasible dual points the read's ``sums`` at ``W`` bound (module
    docstring), by name: ``"derivative"`` (``q_i = p_i``, without an intercept), ``"mix"``, ``j``
    for each level of :data:`FLOORS` whose shift is feasible, and with the Newton ``step`` (``K x
    D``) at ``W``, ``("step", a)`` (no intercept) or ``("step", a, j)``: the probabilities moved by
    the share ``a`` of :data:`STEP_SHARES` of the step's first-order change, and shifted on level
    ``j``; ``metric``: the ``(center, scale)`` the read measured its rows in (:func:`softmax_sums`);
    ``moved``: the rows' Hessian's product with ``step`` (``K x D``, the penalty left out), where the
    read did not form the Hessian (Newton-CG on a cluster); without either, no step's point."""
    V = -sums.gradient  # sum_i theta_i x~_i^T at q_i = p_i

    def value(entropy, V):
        V = V * penalised  # with an intercept, its column is sum_i theta_i: 0 at a feasible point
        return entropy - 0.5 * float(np.sum(V * V))

    g = -sums.residual  # sum_i theta_i
    if not fit_intercept:
        duals = {"derivative": value(sums.entropy, V)}
    else:
        duals = {"mix": _mixed(sums, V, g, value)}
        duals.update(_shifted(sums, V, g, sums.entropy, 1.0, 1.0, value))
    if step is None or (moved is None and sums.hessian is None):
        return duals
    K, D = step.shape
    if moved is None:  # sum_i C_i A_i (S x~_i) kron x~_i: the rows' Hessian, unregularised
        moved = sums.hessian @ step.ravel()
    moved = np.asarray(moved).reshape(K, D)
    quadratic = float(step.ravel() @ moved.ravel())  # sum_i C_i dz_i^T A_i dz_i
    # sum_i C_i (A_i log p_i) . dz_i, and A_i log p_i = A_i z_i (A_i 1 = 0): the Hessian's product
    linear = float(moved.ravel() @ W.ravel())
    # |dz_ik - p_i . dz_i| <= 2 max_k |s_k . x~_i| <= reach, for every row: q_i' >= (1 - a reach) p_i,
    # where s_k . x~_i = (s_k . center + intercept) + (scale s_k) . ((x_i - center) / scale)
    center, scale = metric_of(metric, D - fit_intercept)
    weights, intercepts = (step[:, :-1], step[:, -1]) if fit_intercept else (step, np.zeros(K))
    shift = np.abs(weights @ center + intercepts)
    reach = 2.0 * float(np.max(shift + np.linalg.norm(weights * scale, axis=1) * sums.row_norm))
    for a in STEP_SHARES:
        if not a * reach < 1.0:
            continue
        entropy, V_a = sums.entropy - a * linear, V - a * moved
        if not fit_intercept:
            duals[("step", a)] = value(entropy - a * a * quadratic, V_a)
            continue
        # The shift on top (the step leaves sum_i theta_i at rounding's size): (u + v)^2 <= 2 u^2 + 2 v^2
        shifted = _shifted(sums, V_a, g - a * moved[:, -1], entropy - 2.0 * a * a * quadratic,
                           1.0 - a * reach, 2.0, value)  # fmt: skip
        duals.update({("step", a, j): v for j, v in shifted.items()})
    return duals


def _shifted(sums, V, g, entropy, room, factor, value):
    """``{j: dual value}`` of each level ``j`` whose shift ``delta = g / sum C_i`` (over its rows)
    moves no probability by more than :data:`SHIFT_SHARE` times ``room`` times its floor; the
    entropy ``entropy`` lowered by the shift's first-order term and ``factor`` times its bound of the
    rest, ``sum_k delta_k^2 / p_k`` (module docstring)."""
    duals = {}
    weight = np.cumsum(sums.shift_weight)
    logs, inverse = np.cumsum(sums.shift_logs, axis=0), np.cumsum(sums.shift_inverse, axis=0)
    rows = np.cumsum(sums.shift_rows, axis=0)
    for j, floor in enumerate(FLOORS):
        if weight[j] <= 0.0:
            continue
        delta = g / weight[j]  # q_i' = p_i + delta on the level's rows: sum_i theta_i' = 0
        if float(np.max(np.abs(delta))) > SHIFT_SHARE * room * floor:
            continue
        bound = entropy - float(delta @ logs[j]) - factor * float((delta * delta) @ inverse[j])
        duals[j] = value(bound, V - np.outer(delta, rows[j]))
    return duals


def certificate(sums, W, penalised, fit_intercept, step=None, metric=None, moved=None):
    """The :class:`Certificate` of the point ``W`` a read's ``sums`` were made at: its value, and the
    best of :func:`dual_values` (with the Newton ``step`` at ``W``, where one is taken, and its
    product ``moved``, where the Hessian was not formed)."""
    primal = 0.5 * float(np.sum((W * penalised) ** 2)) + sums.loss
    duals = dual_values(sums, W, penalised, fit_intercept, step, metric, moved)
    return Certificate(primal=float(primal), dual=float(max(duals.values())))


def _mixed(sums, V, g, value):
    """The dual value of the mix ``q_i' = (1 - t) p_i + t r`` (:func:`~.multinomial.feasible_mix`),
    its entropy bounded below by concavity (module docstring)."""
    t, r = feasible_mix(g, sums.mass)
    if t <= 0.0:
        return value(sums.entropy, V)
    V = (1.0 - t) * V + t * (sums.targets - np.outer(r, sums.row_sum))
    spread = -float(np.sum(r[r > 0] * np.log(r[r > 0])))  # H(r)
    return value((1.0 - t) * sums.entropy + t * float(sums.mass.sum()) * spread, V)


def check_model_width(K, D):
    """A ValueError where the streamed model, ``K`` classes of ``D`` columns (features and the
    intercept), is wider than the formed Hessian the reads support."""
    if K * D > MAX_WIDTH:
        raise ValueError(
            f"multi_class='multinomial' out of core forms the Hessian of {K} classes times {D} columns "
            f"(the features and the intercept), {K * D} wide, beyond the {MAX_WIDTH} it supports; "
            "train in memory (solver='memory', where its Hessian products apply), select fewer "
            "features, or use multi_class='ovr' (a problem per class, each as wide as the features)."
        )


# multi_class="auto": the softmax model from this many classes on (two are the binary problem, the
# library's regularised bias as LIBLINEAR's, as scikit-learn 1.9 fits two classes with its binary loss).
AUTO_MIN_CLASSES = 3


def softmax_columns(plan, n_features):
    """The columns of each class's row of the softmax model of ``plan`` on ``n_features`` raw
    features: the features (a map's output) and the intercept, if any."""
    return plan.model_width(n_features) + (plan.bias != 0.0)


def auto_softmax(K, D=None):
    """Whether ``multi_class="auto"`` trains the softmax model of ``K`` classes: from
    :data:`AUTO_MIN_CLASSES` on, and, streamed or on a cluster (``D``: the columns, features and the
    intercept; None in memory, where the Hessian's products take any width), where the reads form
    its Hessian (:func:`check_model_width`); else the one-vs-rest problems."""
    return K >= AUTO_MIN_CLASSES and (D is None or K * D <= MAX_WIDTH)


@dataclass
class SoftmaxModel:
    """What every read of one fit needs of its problem: ``plan`` (labels counted), each class's cost
    factor (:func:`~.multinomial.class_costs`), the penalised columns, whether there is an
    intercept, the scale of the values (two classes: 2) and ``model`` (the model's rows of ``W``)."""

    plan: object
    class_cost: np.ndarray
    penalised: np.ndarray
    fit_intercept: bool
    scale: float
    model: object
    metric: tuple = None  # (center, scale) of the features, from the sample (reads.band_metric)


def softmax_model(plan, n_features, weight_totals, beyond=None, products=False):
    """The :class:`SoftmaxModel` of ``plan`` (labels counted) on ``n_features`` features, from each
    class's sample weight (``weight_totals``, for ``class_weight="balanced"``); a ValueError for
    values beyond the primal solver's (``beyond``: the first read's reason), a model too wide for
    the reads' formed Hessian (unless its ``products`` are taken: Newton-CG on a cluster), or a
    class without rows of positive cost."""
    if beyond is not None:
        raise ValueError(
            f"{beyond.split(': the primal solver')[0]}: multi_class='multinomial' out of core "
            "does not train on values this large (float64 rounding keeps its certificate from "
            "closing). Scale the features (feature_map=Standardize()) or train in memory."
        )
    K = plan.classes.shape[0]
    fit_intercept = plan.bias != 0.0
    D = n_features + fit_intercept
    if not products:
        check_model_width(K, D)
    weight_totals = np.asarray(weight_totals, dtype=np.float64)
    class_cost = class_costs(plan, weight_totals)
    check_classes(plan, class_cost * weight_totals)
    penalised = np.ones(D)
    if fit_intercept:
        penalised[-1] = 0.0
    scale = 1.0 / TWO_CLASS_COST if K == 2 else 1.0
    return SoftmaxModel(plan, class_cost, penalised, fit_intercept, scale, model_of(K, fit_intercept))


def warm_start(sample, problem, clock_start, on_pass=None):
    """``(W0, notes, result)``: the sample's problem solved in memory (module docstring), its costs
    scaled by the rows seen over the rows kept; where it holds every row it is the data's, solved to
    ``plan.tol``, and ``result`` is the fit (``on_pass(records, W)`` seeing its steps), else None."""
    started = time.perf_counter()
    plan, fit_intercept = problem.plan, problem.fit_intercept
    K = plan.classes.shape[0]
    y_index = class_index(plan.classes, sample.y, lambda label: f"the sample has label {label!r}")
    complete = sample.complete
    cost = problem.class_cost[y_index] * sample.sample_weight * (sample.rows_seen / sample.n_rows)
    kept = np.flatnonzero(cost > 0)
    X = sample.X if kept.size == sample.n_rows else sample.X[kept]
    rows = SoftmaxProblem(X, y_index[kept], cost[kept], K, fit_intercept)
    tol, max_iter = (plan.tol, plan.max_iter) if complete else (SAMPLE_TOL, WARM_MAX_STEPS)
    joint = None if on_pass is None or not complete else (lambda record, W: on_pass([record], W))
    W, cert, steps, converged, history, interrupted, stalled = solve_softmax(
        rows, tol=tol, max_iter=max_iter, clock_start=clock_start, scale=problem.scale, on_pass=joint,
        model=problem.model, start=None if complete else sample_start(rows),
    )  # fmt: skip
    notes = {
        "sample_rows": int(sample.n_rows), "sample_bytes": sample.nbytes,
        "warm_start_s": time.perf_counter() - started, "sample_gap": cert.relative_gap,
    }  # fmt: skip
    if not complete:
        return W, notes, None
    if history:
        history[0].update(notes)
    result = FitResult(W=problem.model(W), certificates=[cert], passes=steps, converged=converged,
                       history=history, interrupted=interrupted)  # fmt: skip
    if stalled and not converged:
        result.explained = True
        result.messages.append(stall_message(plan, steps, cert.relative_gap))
    return W, notes, result


def sample_start(rows):
    """Where the sample's solve (:func:`warm_start`) starts: the solution, to :data:`SAMPLE_TOL`, of a
    sample of its rows (:data:`~.warm.MEMORY_SAMPLE_SHARE` of them, at least
    :data:`~.warm.MEMORY_SAMPLE_PER_WIDTH` a weight, drawn from :data:`~.warm.MEMORY_SAMPLE_SEED`, their
    costs scaled by the rows over them), as the squared hinge's in-memory reads start
    (:func:`~.warm.memory_start`); None (``W = 0``) where that is more than a quarter of the rows.  Its
    steps take Newton's damped first steps, the sample's its last few: on 244,000 rows of three
    classes (a cluster's joined samples of the 2M x 60 tall set) 14 steps on 24,400 rows and 3 on the
    sample, 1.01 s, where 13 on the sample from ``W = 0`` took 3.14 s (docs/benchmarks.md, "The
    softmax model's sample solved from a sample of it")."""
    n, K, D = rows.X.shape[0], rows.K, rows.D
    m = memory_sample_rows(n, K * D)
    if 4 * m > n:
        return None
    drawn = np.sort(np.random.default_rng(MEMORY_SAMPLE_SEED).choice(n, m, replace=False))
    cost = rows.cost[drawn] * (n / m)  # their loss an estimate of the rows'
    part = SoftmaxProblem(rows.X[drawn], rows.y_index[drawn], cost, K, rows.fit_intercept)
    return solve_softmax(part, tol=SAMPLE_TOL, max_iter=WARM_MAX_STEPS)[0]


def first_totals(totals):
    """The record fields of the first read's :class:`~.sums.Sums` of rows, bytes, skips and retries."""
    return {
        "rows_read": int(totals.rows), "bytes_read": int(totals.bytes), "rows_skipped": int(totals.skipped),
        "read_retries": int(totals.retries),
    }  # fmt: skip


def fit_multinomial_stream(source, plan, hooks, first, clock_start):
    """The multinomial model of ``plan`` (labels counted) streamed from ``source``: a
    :class:`~..plan.result.FitResult` as :func:`~.multinomial.solve_multinomial`'s.  ``first``: the
    :class:`~.reads.FirstRead` that counted the classes and kept the sample (module docstring)."""
    totals = None if first.moments is None else [first.moments[label][0] for label in plan.classes.tolist()]
    problem = softmax_model(plan, source.n_features, totals, first.beyond)
    hooks.start(plan, n_partitions=source.n_partitions)
    counted = first_totals(first.totals)

    def sample_pass(records, W):  # the sample's steps, numbered 0 as the read that kept it
        for record in records:
            record.update(counted, **{"pass": 0, "spill_bytes": source.spill_bytes})
        return hooks.on_pass(records, W)

    # no reader runs until the sample is solved: its dense rows take the cores, as in memory
    with row_threads(memory_row_threads(sp.issparse(first.sample.X))):
        W, notes, result = warm_start(first.sample, problem, clock_start, sample_pass)
    problem.metric = band_metric(first.sample)  # the rows' reach is measured in the sample's metric
    first.sample = None
    if result is not None:  # the sample is every row: its problem is the data's, solved
        return result
    read = StreamRead(source, plan, lambda k, block: hooks.on_block(k, block, None, None), start=1)

    def evaluate(point):
        counts = Sums.zeros(0, 0)
        sums = sum_blocks(read.blocks(counts), problem, point)
        return sums, counts, {"spill_bytes": source.spill_bytes, **read.overlap}

    with read:
        return newton_reads(evaluate, problem, W, {**counted, "notes": notes}, hooks.on_pass, clock_start)


# In memory, tall rows (the door's rule, :func:`~...choice.choose`) take the Newton reads from the
# solution of a sample of MEMORY_SAMPLE_SHARE of the rows, at least MEMORY_SAMPLE_PER_WIDTH a weight.
# There a read forms no Hessian where the last read's certificate (with its Newton step's dual point)
# is within SKIP_HESSIAN_GAP times ``tol`` (:func:`ends_fit`): its step is expected to end the fit.
# Such a read certifies its point by the exact product of its own rows' Hessian with a step
# (:func:`moved_product`, two thin products of the rows, where forming costs K (K - 1) / 2 Gram
# matrices); if it does not end the fit, it steps by the last formed Hessian (a Cholesky solve with its
# own gradient) and the next read forms one again.  Measured (tol 1e-11, C = 0.1 to 10, 30,000 to
# 1,000,000 rows of 3 classes): a Newton step took a read's gap of at most 4e-2 to at most 3.7e-7, and
# of at most 7.3e-6 to at most 2.6e-13; on the 1,000,000 x 60 rows (tol 1e-3) the step by the last
# formed Hessian took the next read's gap to 1.3e-5 where its own Hessian's took it to 3.6e-7.
SKIP_HESSIAN_GAP = 10.0
# The sums that do not depend on the point: an in-memory fit makes them on its first read only.
FIXED = ("mass", "targets", "row_sum", "row_norm")
READS_SCHEDULE = "softmax_reads"  # the door's name of that method (Method.schedule)


def solve_softmax_reads(X, y_index, weights, plan, *, clock_start=None, hooks=None):
    """The multinomial problem of ``plan`` on tall in-memory rows by the Newton reads (module
    docstring), each read a pass over the rows in memory: a :class:`~..plan.result.FitResult` as
    :func:`~.multinomial.solve_multinomial`'s.  Its solve from ``W = 0`` takes Newton's damped
    first steps on every row; here a sample's solve takes them, and the reads the last two."""
    # no reader: the dense rows' sums take the process's cores, a share of the rows each
    with row_threads(memory_row_threads(sp.issparse(X))):
        return _solve_softmax_reads(X, y_index, weights, plan, clock_start, hooks)


def _solve_softmax_reads(X, y_index, weights, plan, clock_start, hooks):
    clock_start = time.perf_counter() if clock_start is None else clock_start
    K = plan.classes.shape[0]
    problem = softmax_model(plan, X.shape[1], np.bincount(y_index, weights=weights, minlength=K))
    n = X.shape[0]
    m = min(n, memory_sample_rows(n, K * problem.penalised.shape[0]))
    rows = np.sort(np.random.default_rng(MEMORY_SAMPLE_SEED).choice(n, m, replace=False))
    sample = Sample(X[rows], plan.classes[y_index[rows]], weights[rows], rows_seen=n)
    W, notes, result = warm_start(sample, problem, clock_start)
    problem.metric = band_metric(sample)
    sample = None
    cost = problem.class_cost[y_index] * weights
    D = problem.penalised.shape[0]
    # the sums of the rows alone (the first read's) and the formed Hessian the next steps take
    fixed, formed = {}, {"H": None, "skip": False}
    # chunks of a product's size (~.sums.PRODUCT_CHUNK_BYTES), which stay in a core's cache through
    # the chunk's products and the Gram matrices of its scaled copies: on 1,000,000 x 60 rows of three
    # classes 1.37-1.42 s against 1.60-1.61 s in a read's chunks (chunk_rows, 16 MiB); 1 and 2 MiB the
    # same as 4, 256 KiB 2.14-2.39 s
    step = product_rows(D)

    def run_sum(bounds, point, hessian):
        rows = slice(*bounds)
        return softmax_sums(X[rows], y_index[rows], cost[rows], point, problem.fit_intercept, problem.metric,
                            hessian, fixed=not fixed, step=step)  # fmt: skip

    def evaluate(point):
        counts = Sums.zeros(0, 0)
        counts.rows = n
        hessian = not formed["skip"]
        sums = run_sums(n, step, lambda bounds: run_sum(bounds, point, hessian), _added)
        for name in FIXED:
            if name in fixed:
                setattr(sums, name, fixed[name])
            else:
                fixed[name] = getattr(sums, name)
        return sums, counts, {"hessian_formed": hessian}

    def direction(sums, W, G):
        if sums.hessian is None:  # the step by the last formed Hessian; the next read forms one
            formed["skip"] = False
            step = formed_step(formed["H"], G)
            return step, moved_product(X, y_index, cost, W, step, problem.fit_intercept)
        formed["H"] = regularised(sums.hessian.copy(), problem.penalised, K, problem.fit_intercept)
        step = formed_step(formed["H"], G)
        formed["skip"] = ends_fit(sums, W, step, problem)
        return step, None

    def on_pass(records, W):
        return hooks is not None and hooks.on_pass(records, W, step="pass")

    counted = {"rows_read": 0, "bytes_read": 0, "rows_skipped": 0, "read_retries": 0, "notes": notes}
    return newton_reads(evaluate, problem, W, counted, on_pass, clock_start, direction)


def ends_fit(sums, W, S, problem):
    """Whether the Newton step ``S`` from ``W`` of a read's ``sums`` with its formed Hessian is
    expected to end the fit: the read's certificate, with the step's dual point, within
    :data:`SKIP_HESSIAN_GAP` times ``plan.tol``."""
    cert = certificate(sums, W, problem.penalised, problem.fit_intercept, S, problem.metric)
    return cert.relative_gap <= SKIP_HESSIAN_GAP * problem.plan.tol


def moved_product(X, y_index, cost, W, S, fit_intercept):
    """The rows' Hessian's product with ``S`` at ``W`` (both ``K x D``): ``sum_i C_i (diag(p_i) -
    p_i p_i^T) (S x~_i) x~_i^T`` at ``p_i = softmax(W x~_i)``, of in-memory rows ``X`` (without the
    intercept column) of classes ``y_index`` and costs ``cost``, a chunk at a time on the fit's row
    threads: the product a read's certificate takes where the read did not form the Hessian
    (:func:`dual_values`' ``moved``)."""
    K = W.shape[0]
    both = np.vstack([W, S])  # one product of the rows gives the scores of both

    def chunk_sum(rows):
        chunk = X[rows]
        Z = scores(chunk, both, fit_intercept)
        P = np.empty((Z.shape[0], K))
        softmax_rows(np.ascontiguousarray(Z[:, :K]), y_index[rows], cost[rows], P)  # its loss unused
        return (class_sums(chunk, product_weights(P, Z[:, K:], cost[rows]), fit_intercept),)

    if X.shape[0] == 0:
        return np.zeros_like(W)
    return chunk_sums(X.shape[0], product_rows(X.shape[1]), chunk_sum)[0]


def _added(total, part):
    """``total`` (a :class:`SoftmaxSums`) with ``part`` added (:func:`~.sums.run_sums`'s ``add``)."""
    total.add(part)
    return total


def sum_blocks(blocks, problem, W):
    """The :class:`SoftmaxSums` at ``W`` of the rows of ``blocks`` (one read of every partition)."""
    K, D = W.shape
    plan = problem.plan
    total = SoftmaxSums.zeros(K, D)
    for block in blocks:
        if block.n_rows:
            y_index = class_index(
                plan.classes, block.y,
                lambda label, p=block.partition: (
                    f"partition {p} has label {label!r}, which is not among the classes "
                    f"{plan.classes.tolist()} found in y; the collection changed between reads."
                ),
            )  # fmt: skip
            cost = problem.class_cost[y_index] * block.sample_weight
            total.add(softmax_sums(block.X, y_index, cost, W, problem.fit_intercept, problem.metric))
    return total


def newton_reads(evaluate, problem, W, counted, on_pass, clock_start, direction=None):
    """The reads from the warm start ``W``, until the relative gap is at most ``plan.tol`` or
    ``plan.max_iter`` reads (module docstring): a :class:`~..plan.result.FitResult`.
    ``evaluate(point)``: one read's ``(sums, counts, fields)`` at ``point`` (its
    :class:`SoftmaxSums`, a :class:`~.sums.Sums` of its rows, bytes, skipped rows and retries, and
    fields for its record); ``counted``: the first read's totals, and its ``notes`` for the first
    record; ``on_pass(records, W)`` after each read, a true value stops the reads.
    ``direction(sums, W, G)``: the Newton step at ``W`` (``G`` its gradient) and the rows' Hessian's
    product with it (None: not known) where the sums hold no formed Hessian (Newton-CG on a
    cluster, :mod:`~..cluster.products`); None: the formed Hessian's step."""
    plan, penalised, scale = problem.plan, problem.penalised, problem.scale
    S = np.zeros_like(W)
    trial = False  # the next read evaluates W + S (else W itself)
    value = slope = np.inf
    length = 1.0  # the share of the Newton direction S is (shortened by refused reads)
    G = None
    best_W, best_primal, best_dual = W.copy(), np.inf, -np.inf
    history, reads, interrupted, stalled, converged = [], 0, False, False, False
    totals = dict(counted)
    notes = totals.pop("notes")
    while reads < plan.max_iter:
        point = W + S if trial else W
        try:
            sums, counts, fields = evaluate(point)
        except KeyboardInterrupt:
            if reads == 0:
                raise
            interrupted = True
            break
        reads += 1
        where = f"read {reads}"
        primal = 0.5 * float(np.sum((point * penalised) ** 2)) + sums.loss
        accepted = not trial or sufficient_decrease(value, slope, primal)
        step = moved = None
        if accepted:
            W, value = point, primal
            G = W * penalised + sums.gradient
            if direction is None:  # the next step, and the certificate's dual point
                H = regularised(sums.hessian.copy(), penalised, W.shape[0], problem.fit_intercept)
                step = formed_step(H, G)
            else:  # a pass over the rows or rounds of a cluster: an interrupt keeps this read's point
                try:
                    step, moved = direction(sums, W, G)
                except KeyboardInterrupt:
                    interrupted = True
        cert = certificate(sums, point, penalised, problem.fit_intercept, step, problem.metric, moved)
        cert = check_gap(cert, where)
        sums = None
        best_dual = max(best_dual, cert.dual)
        if cert.primal < best_primal:
            best_primal, best_W = cert.primal, point.copy()
        best = check_gap(Certificate(primal=best_primal, dual=best_dual), where)
        converged = best.relative_gap <= plan.tol
        totals["rows_read"] += int(counts.rows)
        totals["bytes_read"] += int(counts.bytes)
        totals["read_retries"] += int(counts.retries)
        totals["rows_skipped"] = int(counts.skipped)
        record = {
            "class": None, "pass": reads, "seconds": time.perf_counter() - clock_start,
            "primal": scale * best.primal, "dual": scale * best.dual, "gap": best.relative_gap,
            "point_primal": scale * cert.primal, "point_dual": scale * cert.dual, "accepted": accepted,
            "step": length if trial and accepted else 0.0, "solver": SOLVER_NAME, **totals, **fields,
        }  # fmt: skip
        if reads == 1:
            record.update(notes)
        history.append(record)
        if on_pass([record], problem.model(best_W)) or converged or interrupted:
            break
        if accepted:
            S, length = step, 1.0
            slope = float(np.sum(G * S))
            trial = slope < 0.0
        else:
            fraction = shortened(value, slope, cert.primal)
            S, slope, length = fraction * S, fraction * slope, fraction * length
        if not trial or length < MIN_STEP_LENGTH:  # no descent left at float64's rounding of P
            stalled = True
            break
    certificate_ = Certificate(primal=scale * best_primal, dual=scale * best_dual)
    result = FitResult(
        W=problem.model(best_W), certificates=[certificate_], passes=reads, converged=converged,
        history=history, interrupted=interrupted,
    )  # fmt: skip
    if stalled and not converged:
        result.explained = True
        result.messages.append(stall_message(plan, reads, certificate_.relative_gap))
    return result
