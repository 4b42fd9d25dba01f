"""Multinomial (softmax) logistic regression in memory: Newton's method, certified by its Fenchel dual.

The problem (scikit-learn 1.9's ``LogisticRegression()`` for three classes
or more, its ``lbfgs`` / ``newton-cg`` objective): ``K`` classes, rows
``x_i`` of label ``y_i`` and cost ``C_i = C * class_weight[y_i] *
sample_weight_i``, weights ``W`` (``K x d``) and an intercept ``b`` (``K``)
that is *not* penalised (unlike the library's binary models, whose bias is
a regularised column as in LIBLINEAR)::

    P(W, b) = 1/2 ||W||_F^2 + sum_i C_i [logsumexp_k(z_ik) - z_{i,y_i}],    z_i = W x_i + b

Newton's method with Armijo's backtracking line search minimises it: the
Hessian ``I (W only) + sum_i C_i (diag(p_i) - p_i p_i^T) kron x~_i x~_i^T``
(``p_i = softmax(z_i)``, ``x~_i = [x_i, 1]``) is formed where the model is
at most :data:`HESSIAN_WIDTH` wide (``K (d + 1)``), and only its products
(conjugate gradient, Newton-CG) beyond.  The intercept's block is singular
along ``b + c 1`` (the softmax does not change): the gradient is orthogonal
to that direction, and the formed Hessian gets ``u u^T`` added along it
(``u``: ones at every class's intercept), which leaves the step in the
orthogonal space unchanged and makes the matrix positive definite.

The certificate (Fenchel duality).  With ``loss_i(z) = logsumexp(z) -
z_{y_i}``, whose conjugate is ``loss_i*(-theta/C_i) = sum_k q_k log q_k``
for ``q = e_{y_i} - theta / C_i`` in the simplex (infinite outside), and
the unpenalised intercept, whose conjugate forces ``sum_i theta_i = 0``,
the dual of ``P`` is::

    D(theta) = sum_i C_i H(q_i) - 1/2 ||sum_i theta_i x_i^T||_F^2,   H(q) = -sum_k q_k log q_k,
    subject to  q_i = e_{y_i} - theta_i / C_i  in the simplex,  and  sum_i theta_i = 0  (intercept)

and weak duality ``D(theta) <= P* <= P(W, b)`` holds for every feasible
``theta``.  At ``(W, b)`` the dual point is the loss's derivative,
``theta_i = C_i (e_{y_i} - p_i)`` (``q_i = p_i``), which is the dual
optimum at the optimum (``W* = sum_i theta_i x_i^T``); elsewhere
``g = sum_i theta_i`` (minus the intercept's gradient) is not zero, and
the point is made feasible by mixing every ``q_i`` with one distribution
``r``: ``q_i' = (1 - t) p_i + t r``, where ``sum_i C_i q_i' = m`` (``m_k``:
the cost of the rows of class ``k``) asks ``r = (t m + (1 - t) g) / (t
sum_i C_i)`` and ``r >= 0`` asks ``t >= -g_k / (m_k - g_k)`` for every
``g_k < 0`` (:func:`feasible_mix`, the smallest such ``t``).  ``t`` is of the
size of ``g``, so the gap goes to zero with the gradient.  Without an
intercept ``theta`` is feasible as it is.  The relative gap ``(P - D) / P``
bounds the relative suboptimality of the model returned, and ``tol`` is
that gap, as for every solver of the library.

Two classes: scikit-learn fits the binary model, ``1/2 ||v||^2 + C sum_i
s_i log(1 + exp(-y_i (v . x_i + beta)))`` with ``beta`` unpenalised.  Its
softmax form with weights ``(w_0, w_1)`` and cost ``C / 2`` has the same
loss in ``v = w_1 - w_0`` and the penalty ``1/4 ||v||^2`` at its optimum
(``w_0 = -w_1``): half the binary objective.  So two classes are solved as
two softmax rows at ``C / 2`` (:data:`TWO_CLASS_COST`), the model is ``v``
and the certificate's values are doubled (the relative gap is unchanged).
"""

import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ...kernels.softmax import entropy_rows, softmax_rows
from ..plan.certificate import Certificate, check_gap
from ..plan.problem import MULTINOMIAL_SOLVER, balanced_weights
from ..plan.result import FitResult
from ..plan.threads import memory_row_threads, row_threads
from .newton import CG_MAX_STEPS, CG_RESIDUAL
from .sums import (
    chunk_sums,
    product_rows,
    rows_product,
    scratch,
    squares_product,
    transposed_product,
    weighted_product,
)

# The name history_ records for this solver ("solver").
SOLVER_NAME = MULTINOMIAL_SOLVER
# The Hessian is formed where the model (K classes times the features plus the intercept) is at most
# this wide: forming costs about n (K (d + 1))^2 a step, a product of the conjugate gradient 2 n K
# (d + 1), and a step takes 5 to 80 products, so forming wins only on narrow models.  Measured
# (one thread, tol=1e-8, C = 1 and 100): formed/CG 0.13/0.26 s and 0.13/0.20 s at width 63 (50,000
# rows), 0.40/0.33 s and 0.41/0.29 s at 155, 0.30/0.19 s and 0.42/0.35 s on digits (650), 0.73/0.10 s
# at 1,010 (5,000 rows); iris (15) and wine (42): formed 2-3 ms, CG 3-13 ms.
HESSIAN_WIDTH = 128
# The conjugate gradient's preconditioner, the Hessian's diagonal (SoftmaxProblem.hessian_diagonal), is
# summed on dense rows over every DIAGONAL_STRIDE-th row (their weights times the stride), where that
# keeps at least DIAGONAL_MIN_ROWS: a preconditioner need not be exact, and the squares' sum over every
# row costs as much as a gradient.  Measured (one thread, tol 1e-3, C = 1, the 200,000 x 500 dense rows
# of 10 classes of benchmarks/bench_softmax_cluster.py): 3.12 s against 2.77 s, the same 4 steps and
# 10 products (2.73 s at a stride of 20).  Sparse rows keep every row: on its 200,000 x 20,000 text
# rows of 5 classes a stride of 10 missed rare columns, 30 products where 21 (1.97 s against 1.49 s).
DIAGONAL_STRIDE = 10
DIAGONAL_MIN_ROWS = 2_000
# Armijo's sufficient decrease (P(x + a s) <= P(x) + ARMIJO a g . s), the step's shrink factor and the
# shortest step tried before the line search gives up (the fit then ends with its certificate).
ARMIJO = 1e-4
BACKTRACK = 0.5
MIN_STEP_LENGTH = 1e-12
# Two classes: softmax rows at this fraction of the cost give half scikit-learn's binary objective
# (module docstring).
TWO_CLASS_COST = 0.5


def augmented(X, fit_intercept):
    """``[X, 1]`` (dense or CSR), or ``X`` without an intercept: the rows ``x~_i`` the model scores."""
    if not fit_intercept:
        return sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if sp.issparse(X):
        return sp.hstack([sp.csr_matrix(X), np.ones((n, 1))], format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), np.ones((n, 1))])


def scores(X, V, fit_intercept=False):
    """``x~_i . v_k`` for the rows ``X`` (without the intercept column where ``fit_intercept``: ``V``
    ``K x D`` has it last): a dense ``(n, K)`` array, the rows never copied with a column of ones."""
    columns = V[:, :-1] if fit_intercept else V
    # dense rows: (V X^T)^T, OpenBLAS's faster layout (~.sums.transposed_product)
    Z = np.asarray(X @ columns.T) if sp.issparse(X) else (np.ascontiguousarray(columns) @ X.T).T
    return Z + V[:, -1] if fit_intercept else Z


def class_sums(X, R, fit_intercept=False):
    """``sum_i R_ik x~_i``, a dense ``(K, D)`` array (``R`` ``(n, K)``), of the rows ``X`` (without
    the intercept column where ``fit_intercept``: its column is ``R``'s sums)."""
    # dense rows: R^T X, OpenBLAS's faster layout (~.sums.transposed_product), on the row threads
    S = np.asarray((X.T @ R).T) if sp.issparse(X) else rows_product(R, X)
    return np.hstack([S, R.sum(axis=0)[:, None]]) if fit_intercept else S


class SoftmaxProblem:
    """The rows of one multinomial problem and what each step needs of them (module docstring).

    ``X``: the rows (dense or CSR, or their memory maps; float64, copied once where they are not),
    without the intercept column, which the products add (:func:`scores`, :func:`class_sums`:
    never a copy of the rows with a column of ones); ``y_index`` each row's class (0 to ``K - 1``);
    ``cost`` ``C_i``; ``penalised`` the columns the penalty weighs (ones for the features, 0 for
    the intercept).  ``spilled``: the rows are memory maps of a worker's disk (their bytes not
    counted as held).  ``fixed``: the sums that do not depend on the point (``mass``, ``targets``,
    ``row_sum``) are made (else None: an in-memory read that has them from its first).
    """

    def __init__(self, X, y_index, cost, n_classes, fit_intercept, spilled=False, fixed=True):
        # float64 once (a copy of float32 rows): every product would convert them again
        X = X.astype(np.float64, copy=False) if X.dtype != np.float64 else X
        self.X, self.y_index, self.cost = X, np.ascontiguousarray(y_index, dtype=np.int64), cost
        self.K, self.fit_intercept, self.spilled = n_classes, fit_intercept, spilled
        self.D = D = X.shape[1] + fit_intercept
        self.penalised = np.ones(D)
        if fit_intercept:
            self.penalised[-1] = 0.0
        onehot = np.zeros((X.shape[0], n_classes))
        onehot[np.arange(X.shape[0]), self.y_index] = 1.0
        self.onehot = onehot
        self.mass = self.targets = self.row_sum = None
        if fixed:
            self.mass = cost @ onehot  # m_k: the cost of the rows of class k
            self.targets = self.class_sums(onehot * cost[:, None])  # sum_i C_i e_{y_i} x~_i^T
            self.row_sum = self.targets.sum(axis=0)  # sum_i C_i x~_i, the classes' targets added up
        self.summed = None  # (R, class_sums(R)) of the last gradient, which certify takes again

    @property
    def nbytes(self):
        """Bytes held in memory: the rows (unless spilled) and the per-row arrays."""
        X = self.X
        rows = (X.data.nbytes + X.indices.nbytes) if sp.issparse(X) else X.nbytes
        return (0 if self.spilled else rows) + self.onehot.nbytes + self.cost.nbytes

    def scores(self, V):
        return scores(self.X, V, self.fit_intercept)

    def class_sums(self, R):
        return class_sums(self.X, R, self.fit_intercept)

    def penalty(self, W):
        return 0.5 * float(np.sum((W * self.penalised) ** 2))

    def loss(self, Z):
        """``(P, loss)``: the rows' probabilities and their weighted loss at scores ``Z``."""
        P = np.empty_like(Z)
        return P, softmax_rows(np.ascontiguousarray(Z), self.y_index, self.cost, P)

    def gradient(self, W, P):
        """``(G, R)``: the gradient of ``P`` and the rows' residuals ``R = C (P - E)``."""
        R = self.cost[:, None] * (P - self.onehot)
        summed = self.class_sums(R)
        self.summed = (R, summed)
        return W * self.penalised + summed, R

    def loss_hessian(self, P):
        """The rows' part of the Hessian (:func:`rows_hessian`; the formed Hessian is for narrow
        models)."""
        return rows_hessian(self.X, self.cost, P, self.K, self.fit_intercept)

    def hessian(self, P):
        """The formed Hessian (``K D x K D``, class-major), with ``u u^T`` along the intercept's null
        direction (module docstring)."""
        return regularised(self.loss_hessian(P), self.penalised, self.K, self.fit_intercept)

    def loss_product(self, P, V, scores=None):
        """The rows' part of ``H V`` for a direction ``V`` (``K x D``): ``sum_i C_i (diag(p_i) - p_i
        p_i^T) (V x~_i) x~_i^T``, a sum over rows (a part's share on a cluster).  ``scores``: an
        ``(n, K)`` array that receives the rows' scores of ``V`` (:meth:`scores`), which the product
        makes on its way."""
        if sp.issparse(self.X):
            Z = self.scores(V)
            if scores is not None:
                scores[:] = Z
            return self.class_sums(self._product_weights(P, slice(None), Z))
        # dense rows: both products a chunk at a time (weighted_product), each chunk read once
        columns, offset = (V[:, :-1], V[:, -1]) if self.fit_intercept else (V, 0.0)
        total, summed = weighted_product(
            self.X, columns.T, offset, lambda rows, Z: self._product_weights(P[rows], rows, Z), scores
        )
        return np.hstack([total.T, summed[:, None]]) if self.fit_intercept else total.T

    def _product_weights(self, P, rows, Z):
        return product_weights(P, Z, self.cost[rows])

    def hessian_product(self, P, V, scores=None):
        """``H V`` for a direction ``V`` (``K x D``); ``scores`` as :meth:`loss_product`'s."""
        return V * self.penalised + self.loss_product(P, V, scores)

    def loss_diagonal(self, P, stride=1):
        """The diagonal of the rows' part of the Hessian (``K x D``), a sum over rows
        (:func:`~.sums.squares_product`: never a copy of every row's squares); with a ``stride``,
        over every ``stride``-th row, each weighing ``n / rows kept`` (the sum's estimate)."""
        rows = slice(None, None, stride)
        weight = self.cost[rows, None] * P[rows] * (1.0 - P[rows])
        if stride > 1:
            weight *= P.shape[0] / weight.shape[0]
        total = squares_product(self.X[rows], weight).T
        return np.hstack([total, weight.sum(axis=0)[:, None]]) if self.fit_intercept else total

    def hessian_diagonal(self, P):
        """The Hessian's diagonal, the conjugate gradient's preconditioner: on dense rows summed over
        every :data:`DIAGONAL_STRIDE`-th row where that keeps :data:`DIAGONAL_MIN_ROWS`."""
        n = P.shape[0]
        stride = 1 if sp.issparse(self.X) else max(1, min(DIAGONAL_STRIDE, n // DIAGONAL_MIN_ROWS))
        return self.penalised + self.loss_diagonal(P, stride)

    def certify(self, W, P, R, loss):
        """The :class:`Certificate` of ``W`` (``P``, ``R``: its rows' probabilities and residuals,
        ``loss`` their weighted loss), the dual point made feasible (module docstring)."""
        primal = self.penalty(W) + loss
        # sum_i theta_i x~_i^T, as the gradient summed it (the same R), else summed here
        V = -(self.summed[1] if self.summed is not None and self.summed[0] is R else self.class_sums(R))
        Q = P
        if self.fit_intercept:
            g = -R.sum(axis=0)  # sum_i theta_i
            t, r = feasible_mix(g, self.mass)
            if t > 0.0:
                Q = (1.0 - t) * P + t * r
                V = (1.0 - t) * V + t * (self.targets - np.outer(r, self.row_sum))
        V = V * self.penalised  # the intercept's column of sum_i theta_i x~_i^T is sum_i theta_i: 0 now
        dual = entropy_rows(np.ascontiguousarray(Q), self.cost) - 0.5 * float(np.sum(V * V))
        return Certificate(primal=float(primal), dual=float(dual))


def product_weights(P, Z, cost):
    """The rows' weights ``C_i (diag(p_i) - p_i p_i^T) z_i`` of a Hessian product (``(n, K)``), of
    probabilities ``P``, costs ``cost`` and ``Z`` the rows' scores of the direction."""
    PdZ = P * Z
    return cost[:, None] * (PdZ - P * PdZ.sum(axis=1, keepdims=True))


def rows_hessian(X, cost, P, K, fit_intercept=False):
    """The rows' part of the Hessian, ``sum_i C_i (diag(p_i) - p_i p_i^T) kron x~_i x~_i^T`` of rows
    ``X`` (without the intercept column where ``fit_intercept``) of costs ``cost`` and probabilities
    ``P`` (``K D x K D``, class-major): a sum over rows, so a read's blocks add up to the data's.
    Each row's ``diag(p) - p p^T`` has rows that sum to 0, so a diagonal block is minus the sum of
    the others of its row of blocks: ``K (K - 1) / 2`` products of the rows, not ``K (K + 1) / 2``.
    Dense rows: each off-diagonal block is ``-X~^T diag(C p_k p_m) X~`` with ``C p_k p_m >= 0``, the
    Gram matrix of the rows scaled by its square root (:func:`pair_grams`)."""
    D = X.shape[1] + fit_intercept
    H = np.zeros((K * D, K * D))
    pairs = [(k, m) for k in range(K) for m in range(k + 1, K)]
    if sp.issparse(X):
        Xa, CP = augmented(X, fit_intercept), cost[:, None] * P
        blocks = [(Xa.T @ Xa.multiply((-CP[:, k] * P[:, m])[:, None]).tocsr()).toarray() for k, m in pairs]
    else:
        blocks = -pair_grams(X, cost, P, pairs, fit_intercept)
    for (k, m), block in zip(pairs, blocks, strict=True):
        H[k * D : (k + 1) * D, m * D : (m + 1) * D] = block
        H[m * D : (m + 1) * D, k * D : (k + 1) * D] = block.T
    for k in range(K):
        row = H[k * D : (k + 1) * D]
        diagonal = -sum(row[:, m * D : (m + 1) * D] for m in range(K) if m != k)
        H[k * D : (k + 1) * D, k * D : (k + 1) * D] = diagonal
    return H


def pair_grams(X, cost, P, pairs, fit_intercept):
    """``X~^T diag(C_i p_ik p_im) X~`` for each class pair ``(k, m)`` of ``pairs`` (an array ``(pairs,
    D, D)``) of dense rows ``X`` (without the intercept column where ``fit_intercept``: its row and
    column are the weights' sums of the rows and of the weights), :data:`~.sums.PRODUCT_CHUNK_BYTES` of
    rows at a time on the fit's row threads: each the Gram matrix of the chunk scaled by the weights'
    square roots, which BLAS makes as a symmetric product (half a general product's arithmetic), and
    never a copy of the rows with their column of ones; the scaled rows in the thread's scratch
    (:func:`~.sums.scratch`).  One thread, 1,000,000 x 60 rows, 3 classes: 0.64-0.70 s against
    0.71-0.80 s for the general products of the augmented rows by the weighted ones."""
    n, d = X.shape
    left, right = (np.array([pair[i] for pair in pairs], dtype=np.int64) for i in (0, 1))

    def chunk_sum(rows):
        chunk = X[rows]
        weights = cost[rows, None] * P[rows][:, left] * P[rows][:, right]  # (rows, pairs), >= 0
        grams = np.empty((len(pairs), d, d))
        scaled = scratch("scaled rows", chunk.shape)
        for j in range(len(pairs)):
            np.multiply(chunk, np.sqrt(weights[:, j])[:, None], out=scaled)
            grams[j] = scaled.T @ scaled
        return grams, transposed_product(weights, chunk), weights.sum(axis=0)

    if n == 0:
        return np.zeros((len(pairs), d + fit_intercept, d + fit_intercept))
    grams, sums, totals = chunk_sums(n, product_rows(d), chunk_sum)
    if not fit_intercept:
        return grams
    out = np.zeros((len(pairs), d + 1, d + 1))
    out[:, :d, :d] = grams
    out[:, d, :d] = out[:, :d, d] = sums.T
    out[:, d, d] = totals
    return out


def sufficient_decrease(value, slope, trial_value):
    """Whether a step of directional derivative ``slope`` (``G . s`` for the step ``s`` taken) that
    moves ``P`` from ``value`` to ``trial_value`` is accepted: Armijo's rule, and a strict decrease
    too: at float64's rounding of P the slope is about 0 and an equal value passed Armijo's rule, the
    same step accepted again until max_iter (digits at C = 1, tol=1e-12: 1,000 steps, 152 s, at a
    gap of 5.2e-10 in CI)."""
    return trial_value <= value + ARMIJO * slope and trial_value < value


def regularised(H, penalised, K, fit_intercept):
    """The Hessian of ``P`` from its rows' part ``H`` (changed in place): the penalty's diagonal
    (``penalised``, per column) and, with an intercept, ``u u^T`` along its null direction, scaled
    to the mean diagonal (module docstring)."""
    D = penalised.shape[0]
    H[np.diag_indices_from(H)] += np.tile(penalised, K)
    if fit_intercept:
        u = np.zeros(K * D)
        u[D - 1 :: D] = 1.0
        scale = max(1.0, float(np.trace(H)) / (K * D))
        H += scale * np.outer(u, u)
    return H


def formed_step(H, G):
    """The Newton step ``-H^{-1} G`` of a formed Hessian (``G`` ``K x D``): Cholesky, where the
    probabilities near 0 or 1 flatten ``H`` a least-squares solve."""
    try:  # Cholesky: no conditioning warning where the probabilities near 0 or 1 flatten H
        step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), -G.ravel())
    except (np.linalg.LinAlgError, ValueError):
        step = scipy.linalg.lstsq(H, -G.ravel())[0]
    return step.reshape(G.shape)


def feasible_mix(g, mass):
    """``(t, r)``: the smallest ``t`` in [0, 1) and the distribution ``r`` that make ``q_i' = (1 - t)
    p_i + t r`` satisfy ``sum_i C_i q_i' = mass`` (module docstring), where ``g = sum_i C_i (e_{y_i} -
    p_i)`` and ``mass - g = sum_i C_i p_i > 0``.  ``t = 0`` (no mix) where ``g`` is zero."""
    below = g < 0.0
    if not below.any():
        return 0.0, None
    t = float(np.max(-g[below] / (mass[below] - g[below])))
    if t <= 0.0:
        return 0.0, None
    r = (t * mass + (1.0 - t) * g) / (t * float(mass.sum()))
    return t, np.maximum(r, 0.0)


def _conjugate_gradient(product, diagonal, g, residual, n_rows):
    """``(step, products, scores)``: preconditioned conjugate gradient on ``H s = -g`` until the
    residual is at most ``residual`` times ``||g||`` or :data:`~.newton.CG_MAX_STEPS` products.
    ``product(d, out)`` is ``H d``, writing the ``n_rows`` rows' scores of ``d`` into ``out``; the
    step's scores are those of its directions summed as the step is (``X~ s`` is linear in ``s``),
    so the line search needs no pass over the rows of its own (None where the step is ``-g``)."""
    s = np.zeros_like(g)
    r = -g
    z = r / diagonal
    d = z.copy()
    rz = float(np.sum(r * z))
    stop = residual * float(np.linalg.norm(g))
    scores = np.zeros((n_rows, g.shape[0]))
    scores_d = np.empty_like(scores)
    for step in range(1, CG_MAX_STEPS + 1):
        Hd = product(d, scores_d)
        curvature = float(np.sum(d * Hd))
        if curvature <= 0.0:
            return (s, step, scores) if step > 1 else (-g, step, None)
        a = rz / curvature
        s += a * d
        scores += a * scores_d
        r -= a * Hd
        if float(np.linalg.norm(r)) <= stop:
            return s, step, scores
        z = r / diagonal
        rz_new = float(np.sum(r * z))
        d = z + (rz_new / rz) * d
        rz = rz_new
    return s, CG_MAX_STEPS, scores


def newton_direction(problem, W, P, G):
    """``(step, products, scores)``: the Newton step at ``W`` (``G`` its gradient), from the formed
    Hessian where the model is at most :data:`HESSIAN_WIDTH` wide, else by conjugate gradient
    (``products`` counts its Hessian products; 0 for a formed Hessian), and the rows' scores of the
    step where the conjugate gradient made them (:func:`_conjugate_gradient`), else None."""
    K, D = W.shape
    if K * D <= HESSIAN_WIDTH:
        return formed_step(problem.hessian(P), G), 0, None
    if problem.fit_intercept:  # the gradient has no part along the null direction; keep it so
        G = G.copy()
        G[:, -1] -= G[:, -1].mean()
    # Truncated Newton's forcing term (Nocedal and Wright, Alg. 7.1): looser far from the optimum.
    norm = float(np.linalg.norm(G))
    residual = min(CG_RESIDUAL, np.sqrt(norm))
    diagonal = problem.hessian_diagonal(P)
    return _conjugate_gradient(
        lambda V, scores: problem.hessian_product(P, V, scores), diagonal, G, residual, P.shape[0]
    )


def solve_softmax(
    problem, *, tol, max_iter, clock_start=None, on_pass=None, scale=1.0, model=None, start=None
):
    """Minimise ``P`` (module docstring) of ``problem`` (a :class:`SoftmaxProblem`) until its relative
    gap is at most ``tol``: ``(W, certificate, steps, converged, history, interrupted,
    stalled)``.  ``start``: the ``K x D`` point the steps start from (None: ``W = 0``).

    A record per Newton step in ``history`` (its ``primal``, ``dual``, ``gap``, ``step`` length and
    ``hessian_products``), ``scale`` times the values of ``P`` (two classes: 2, module docstring).
    ``stalled``: the line search found no decrease (float64's rounding of ``P`` reached) first.
    ``on_pass(record, model(W))``: after each step; a true return value stops the solve.  A
    KeyboardInterrupt after the first step ends it with the current ``W``, certified.
    """
    clock = time.perf_counter
    clock_start = clock() if clock_start is None else clock_start
    model = (lambda W: W) if model is None else model
    K, D = problem.K, problem.D
    W = np.zeros((K, D)) if start is None else np.array(start, dtype=np.float64)
    Z = np.zeros((problem.X.shape[0], K)) if start is None else problem.scores(W)
    P, loss = problem.loss(Z)
    value = problem.penalty(W) + loss
    history, steps = [], 0
    converged = stopped = interrupted = stalled = False
    cert = record = None  # record: the last step's, certified at the top of the next turn
    try:
        while True:
            G, R = problem.gradient(W, P)
            cert = check_gap(problem.certify(W, P, R, loss), "the multinomial solver")
            converged = cert.relative_gap <= tol
            if record is not None:
                record["primal"], record["dual"] = scale * cert.primal, scale * cert.dual
                record["gap"] = cert.relative_gap
                history.append(record)
                if on_pass is not None:
                    stopped = bool(on_pass(record, model(W)))
            if converged or stopped or steps >= max_iter:
                break
            direction, products, dZ = newton_direction(problem, W, P, G)
            slope = float(np.sum(G * direction))
            dZ = problem.scores(direction) if dZ is None else dZ
            length = 1.0
            while length >= MIN_STEP_LENGTH:
                trial_W = W + length * direction
                trial_P, trial_loss = problem.loss(Z + length * dZ)
                trial_value = problem.penalty(trial_W) + trial_loss
                if sufficient_decrease(value, length * slope, trial_value):
                    break
                length *= BACKTRACK
            else:
                stalled = True  # no decrease along the step: rounding; the certificate says how far
                break
            W, Z, P, loss, value = trial_W, Z + length * dZ, trial_P, trial_loss, trial_value
            steps += 1
            record = {
                "class": None, "pass": steps, "seconds": clock() - clock_start, "primal": np.nan,
                "dual": np.nan, "gap": np.nan, "step": length, "hessian_products": products,
                "solver": SOLVER_NAME,
            }  # fmt: skip
    except KeyboardInterrupt:
        # An interrupt lands between two statements: W, P and loss are those of one point.
        if steps == 0:
            raise
        interrupted, converged = True, False
        G, R = problem.gradient(W, P)
        cert = problem.certify(W, P, R, loss)
        if record is not None and (not history or history[-1] is not record):
            record.update(primal=scale * cert.primal, dual=scale * cert.dual, gap=cert.relative_gap)
            history.append(record)
    cert = Certificate(primal=scale * cert.primal, dual=scale * cert.dual)
    return W, cert, steps, converged, history, interrupted, stalled


def class_costs(plan, weight_totals):
    """Each class's cost factor (``K``): a row of class ``k`` costs this times its sample weight.
    ``C * class_weight[k]`` (``"balanced"``: from ``weight_totals``, the sample weight of each
    class's rows), times :data:`TWO_CLASS_COST` for two classes (module docstring)."""
    K = plan.classes.shape[0]
    costs = plan.costs[0].astype(np.float64)  # joint tables: every row is C * class_weight
    if isinstance(plan.class_weight, str):  # "balanced": as scikit-learn 1.9, by the rows' weights
        costs = plan.C * balanced_weights(weight_totals)
    return costs * (TWO_CLASS_COST if K == 2 else 1.0)


def check_classes(plan, mass):
    """A ValueError naming the classes without rows of positive cost (``mass``: each class's)."""
    if not np.all(mass > 0):
        empty = plan.classes[mass <= 0].tolist()
        raise ValueError(
            f"multi_class='multinomial' needs rows of positive weight (C * class_weight * "
            f"sample_weight) in every class; classes {empty} have none, and the softmax model then has "
            "no optimum (their intercepts go to -infinity). Drop those classes' rows, give them a "
            "positive weight, or use multi_class='ovr'."
        )


def model_of(K, fit_intercept):
    """The model's rows (intercept last) of the solver's ``W``: a zero intercept column added
    without one, and ``w_1 - w_0`` for two classes (module docstring)."""

    def model(W):
        W = W if fit_intercept else np.hstack([W, np.zeros((K, 1))])
        return W[1:2] - W[0:1] if K == 2 else W

    return model


def stall_message(plan, steps, gap):
    """Why a solve that found no decrease along its step stopped above ``tol``."""
    return (
        f"{plan.estimator} (multi_class='multinomial') stopped after {steps} Newton steps, before "
        f"max_iter: the line search found no decrease along the step, so the objective's float64 "
        f"rounding is reached at a relative gap of {gap:.3g}, above tol={plan.tol:g}. "
        "Loosen tol to at least that gap (a large C, or unscaled features, raise the floor: "
        "feature_map=Standardize() lowers it)."
    )


def solve_multinomial(X, y_index, weights, plan, *, clock_start=None, hooks=None):
    """The multinomial problem of ``plan`` (its classes, costs and ``bias``: 0 for no intercept) on
    in-memory rows ``X``: a :class:`~..plan.result.FitResult` with ``W`` ``(K, n_features + 1)``
    (``(1, n_features + 1)`` for two classes, module docstring), the intercept last, one certificate.
    ``hooks``: the estimator's pass hooks (``joint(record, W)`` after each step), or None."""
    K = plan.classes.shape[0]
    totals = np.bincount(y_index, weights=weights, minlength=K)
    cost = class_costs(plan, totals)[y_index] * weights
    kept = np.flatnonzero(cost > 0)  # rows of no cost add nothing to P or D
    check_classes(plan, np.bincount(y_index[kept], weights=cost[kept], minlength=K))
    fit_intercept = plan.bias != 0.0
    scale = 1.0 / TWO_CLASS_COST if K == 2 else 1.0
    if kept.size < X.shape[0]:
        X, y_index, cost = X[kept], y_index[kept], cost[kept]
    problem = SoftmaxProblem(X, y_index, cost, K, fit_intercept)
    model = model_of(K, fit_intercept)

    on_pass = None if hooks is None else hooks.joint
    # no reader: the dense rows' products take the process's cores, a share of the rows each
    with row_threads(memory_row_threads(sp.issparse(X))):
        W, cert, steps, converged, history, interrupted, stalled = solve_softmax(
            problem, tol=plan.tol, max_iter=plan.max_iter, clock_start=clock_start, on_pass=on_pass,
            scale=scale, model=model,
        )  # fmt: skip
    result = FitResult(
        W=model(W), certificates=[cert], passes=steps, converged=converged, history=history,
        interrupted=interrupted,
    )  # fmt: skip
    if stalled and not converged:
        result.explained = True
        result.messages.append(stall_message(plan, steps, cert.relative_gap))
    return result
