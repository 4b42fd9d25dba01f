"""The primal solver for tall data (``dual=False``): Newton steps, each from one read of the rows.

For the L2-loss SVM the primal

    f(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i w . x_i)^2

is convex, smooth and piecewise quadratic.  On the active rows
``I = {i : y_i w . x_i < 1}`` its gradient and (generalised) Hessian are

    g = w - sum_i alpha_i y_i x_i,   H = I + 2 sum_{i in I} C_i x_i x_i^T,

with ``alpha_i = 2 C_i max(0, 1 - y_i w . x_i)``: sums over rows, so the
sums of the partitions (or of the workers) are the sums of the data, and
one read gives one exact Newton step ``H s = -g`` (a Cholesky solve of the
``D x D`` system, ``D`` the features plus the bias).  This is Keerthi and
DeCoste's finite Newton method (JMLR 2005) with the step length chosen as
below; like LIBLINEAR's primal solver (``-s 2``) it needs 5 to 20 steps
whatever the scaling of the features, where dual coordinate descent needs
many passes on badly scaled data or at a large C.

One read per step.  A read evaluates the trial point ``w + s``: its value,
gradient and Hessian, and, along the way, the value of ``f(w + t s)`` for
the step lengths ``t`` of :data:`STEPS` (one more multiply-add per row and
length).  If the full step decreases ``f`` enough (Armijo's rule with
:data:`ARMIJO`), the next direction comes from the sums just read: one read
per Newton step.  If not, the longest step length that does is taken from
the same read, and the next read evaluates that point.

The certificate.  ``alpha(w)`` is dual feasible (the L2-loss dual only asks
``alpha >= 0``), and with ``v = sum_i alpha_i y_i x_i`` (which the gradient
needs anyway) its dual value is

    D(alpha) = sum_i alpha_i - 1/2 ||v||^2 - sum_i alpha_i^2 / (4 C_i)
             = sum_i alpha_i - 1/2 ||v||^2 - sum_i C_i xi_i^2,

sums of the same read.  Every read therefore certifies the point it
evaluated exactly, and the solver returns the point of lowest primal value
with the highest dual value seen (weak duality holds for any pair), so
``tol`` means the same relative duality gap as for the dual solvers.  At
the optimum ``alpha(w*)`` is the dual optimum, so the gap goes to zero with
the Newton steps.
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .certificate import Certificate, check_gap
from .layout import as_kernel_rows
from .problem import encode_block

# Step lengths a read tries along the Newton direction: 1, 1/2, ..., 1/2048.
STEPS = 2.0 ** -np.arange(12)
ARMIJO = 0.01  # sufficient decrease: f(w + t s) <= f(w) + ARMIJO t g . s
CHUNK_BYTES = 16 << 20  # float64 rows made at a time (:func:`_chunk_rows`)
# The widest model (features plus bias) whose D x D Hessian the solver forms: 128 MB a problem.
MAX_WIDTH = 4096
# CSR chunks narrower than this and at least DENSE_FILL full are made dense (at 1024 columns,
# 34 MB a chunk): the Hessian's products are then BLAS calls.  Sparser rows cost less as CSR (the
# Gram matrix of a row costs its nonzeros squared): measured on a9a (11% full) and w8a (4%).
DENSE_CHUNK_WIDTH = 1024
DENSE_FILL = 0.25
# In memory, dense rows wider than this (features plus bias) take Hessian products instead of the
# Hessian, as sparse rows always do (:func:`prefers_products`).  Measured at C = 1 on Gaussian rows
# (benchmarks/bench_primal.py): the Hessian wins at 51 columns (2.5 s against 4.1 s on 1M rows),
# 201 (2.3 against 3.0) and 501 (3.2 against 3.8), and loses at 1001 (4.8 against 3.8, 50k rows).
CG_WIDTH = 1024
CG_RESIDUAL = 0.1  # conjugate gradient stops at this fraction of the gradient's norm
CG_MAX_STEPS = 250
PRECONDITIONER = 0.01  # the weight of diag(H) in the conjugate gradient's preconditioner


@dataclass
class Sums:
    """Sums over rows at one point of every problem: what a Newton step and its certificate need.

    ``loss`` (k,): sum C_i xi_i^2; ``alpha`` (k,): sum alpha_i; ``v`` (k, D): sum alpha_i y_i x_i;
    ``hessian`` (k, D, D): 2 sum_active C_i x_i x_i^T; ``active`` (k,): rows with xi_i > 0;
    ``trial`` (k, len(STEPS)): sum C_i xi_i^2 at ``w + t s``; ``rows``: rows read.
    """

    loss: np.ndarray
    alpha: np.ndarray
    v: np.ndarray
    hessian: np.ndarray
    active: np.ndarray
    trial: np.ndarray
    rows: int = 0
    skipped: int = 0
    bytes: int = 0
    retries: int = 0
    # In memory with Hessian products (:class:`_ProductRead`): per problem, ``(product, diagonal)``
    # of the Hessian at the evaluated point, and ``hessian`` is None.
    operators: list = None

    @classmethod
    def zeros(cls, k, width):
        return cls(
            np.zeros(k), np.zeros(k), np.zeros((k, width)), np.zeros((k, width, width)),
            np.zeros(k, dtype=np.int64), np.zeros((k, STEPS.shape[0])),
        )  # fmt: skip

    def add(self, other):
        """``self += other`` (the sums of more rows); returns self."""
        self.loss += other.loss
        self.alpha += other.alpha
        self.v += other.v
        self.hessian += other.hessian
        self.active += other.active
        self.trial += other.trial
        self.rows += other.rows
        self.skipped += other.skipped
        self.bytes += other.bytes
        self.retries += other.retries
        return self


def _chunk_rows(width):
    """Rows a chunk holds: :data:`CHUNK_BYTES` of float64 rows ``width`` wide (256 to 65,536)."""
    return int(min(max(CHUNK_BYTES // (8 * width), 256), 65536))


def _augmented(X, lo, hi, bias, feature_map=None):
    """Rows ``lo:hi`` of ``X`` with the bias column, as float64: dense, or CSR where the rows are
    wide or sparse enough (:data:`DENSE_CHUNK_WIDTH`, :data:`DENSE_FILL`).  With a feature map's
    spec, the map's features of the rows, dense (the primal solver's maps are narrow)."""
    if feature_map is not None:
        from ..kernels.features import map_rows_into, spec_width

        indptr, indices, data = as_kernel_rows(sp.csr_matrix(X[lo:hi]))  # canonical: what maps read
        out = np.zeros((hi - lo, spec_width(feature_map) + 1))
        map_rows_into(indptr, indices, data, feature_map, out)
        out[:, -1] = bias
        return out
    part = X[lo:hi] if sp.issparse(X) else None
    dense = part is not None and X.shape[1] < DENSE_CHUNK_WIDTH
    if dense and part.nnz >= DENSE_FILL * part.shape[0] * X.shape[1]:
        out = np.zeros((hi - lo, X.shape[1] + 1))
        rows = np.repeat(np.arange(hi - lo), np.diff(part.indptr))
        if part.has_canonical_format:
            out[rows, part.indices] = part.data
        else:  # duplicate entries add up, as in every other use of the matrix
            np.add.at(out, (rows, part.indices), part.data)
        out[:, -1] = bias
        return out
    if part is not None:
        part = part.astype(np.float64)
        column = sp.csr_matrix(np.full((hi - lo, 1), float(bias)))
        return sp.hstack([part, column], format="csr")
    out = np.empty((hi - lo, X.shape[1] + 1))
    out[:, :-1] = X[lo:hi]
    out[:, -1] = bias
    return out


def _gram(rows, weights):
    """``sum_i weights_i x_i x_i^T`` of the rows (dense or CSR), dense."""
    scale = np.sqrt(weights)
    rows = rows.multiply(scale[:, None]).tocsr() if sp.issparse(rows) else rows * scale[:, None]
    gram = rows.T @ rows
    return gram.toarray() if sp.issparse(gram) else gram


def block_sums(X, Y, cost, W, S, bias, feature_map=None):
    """The :class:`Sums` of the rows of ``X`` (labels ``Y`` and costs ``cost``, each (k, n)) at the
    points ``W + S`` (each (k, D)), with the trial losses along ``W + t S`` for ``t`` in :data:`STEPS`.
    ``feature_map``: a map's spec, whose features of the rows the model reads.

    Works through the rows a chunk of :data:`CHUNK_BYTES` at a time in float64, so a float32
    partition is never copied whole and every sum accumulates in float64.
    """
    k, width = W.shape
    sums = Sums.zeros(k, width)
    sums.rows = X.shape[0]
    trial_points = S.any(axis=1)
    step = _chunk_rows(width)
    for lo in range(0, X.shape[0], step):
        hi = min(lo + step, X.shape[0])
        Xa = _augmented(X, lo, hi, bias, feature_map)
        Z0 = np.asarray(Xa @ W.T)  # (m, k)
        Z = Z0 + np.asarray(Xa @ S.T) if trial_points.any() else Z0
        for c in range(k):
            y, C = Y[c, lo:hi], cost[c, lo:hi]
            xi = np.maximum(0.0, 1.0 - y * Z[:, c])
            active = (xi > 0) & (C > 0)
            sums.loss[c] += float(C @ (xi * xi))
            alpha = 2.0 * C * xi
            sums.alpha[c] += float(alpha.sum())
            sums.v[c] += np.asarray(Xa.T @ (alpha * y)).ravel()
            sums.active[c] += int(active.sum())
            if active.any():
                sums.hessian[c] += _gram(Xa[active], 2.0 * C[active])
            if trial_points[c]:
                m0, dm = y * Z0[:, c], y * (Z[:, c] - Z0[:, c])
                xi_t = np.maximum(0.0, 1.0 - m0[:, None] - dm[:, None] * STEPS[None, :])
                sums.trial[c] += C @ (xi_t * xi_t)
    return sums


@dataclass
class PrimalResult:
    """What :func:`solve_primal` returns (the fields a model is set from, as the dual solvers')."""

    W: np.ndarray
    certificates: list
    passes: int
    history: list
    converged: list
    interrupted: bool = False
    parts: list = None  # on a cluster: per part, its worker, partitions and rows


class _Problem:
    """One binary problem's Newton state: the evaluated point, its gradient and Hessian, the best
    primal point and the best dual value seen."""

    def __init__(self, width):
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

    def direction(self):
        """The Newton direction at ``w``, from the Hessian and gradient of the last read (or its
        products, by preconditioned conjugate gradient)."""
        if self.H is None:
            s, self.cg_steps = _conjugate_gradient(*self.operator, self.g)
            self.operator = None  # the active rows it holds are not needed any more
            return s
        try:
            factor = scipy.linalg.cho_factor(self.H, check_finite=False)
            s = scipy.linalg.cho_solve(factor, -self.g, check_finite=False)
        except np.linalg.LinAlgError:  # not numerically positive definite: the least-squares step
            s = np.linalg.lstsq(self.H, -self.g, rcond=None)[0]
        return s if np.all(np.isfinite(s)) else -self.g

    def update(self, sums, c):
        """Take the read's sums of problem ``c``: certify the evaluated point, accept or shorten the
        step; returns the evaluated point's :class:`Certificate`."""
        point = self.w + self.s if self.trial else self.w
        half_sq = 0.5 * float(point @ point)
        primal = half_sq + float(sums.loss[c])
        v = sums.v[c]
        dual = float(sums.alpha[c]) - 0.5 * float(v @ v) - float(sums.loss[c])
        certificate = Certificate(primal=primal, dual=dual)
        self.best_dual = max(self.best_dual, dual)
        if primal < self.best_primal:
            self.best_primal, self.best_w = primal, point.copy()
        decrease = float(self.g @ self.s) if self.trial else 0.0
        self.accepted = not self.trial or primal <= self.f + ARMIJO * decrease
        if self.accepted:
            self.w, self.f, self.step = point, primal, 1.0 if self.trial else 0.0
            self.g = point - v
            if sums.operators is None:
                self.H = sums.hessian[c] + np.eye(point.shape[0])
            else:
                self.H, self.operator = None, sums.operators[c]
            self.s = self.direction()
            self.trial = True
            return certificate
        # The full step went too far: the longest step length of the same read that decreases enough.
        values = np.array([0.5 * float((self.w + t * self.s) @ (self.w + t * self.s)) for t in STEPS])
        values += sums.trial[c]
        good = np.flatnonzero(values <= self.f + ARMIJO * STEPS * decrease)
        t = STEPS[good[0]] if good.size else STEPS[int(np.argmin(values))]
        if not values.min() < self.f:  # not even the shortest step decreases f: evaluate w + s / 4096
            t = STEPS[-1] / 2
        self.w, self.step = self.w + t * self.s, float(t)
        self.s = np.zeros_like(self.s)
        self.trial = False
        return certificate

    @property
    def certificate(self):
        return Certificate(primal=self.best_primal, dual=self.best_dual)


def solve_primal(read, plan, width, *, clock_start=None, on_pass=None, source=None, initial=None):
    """Newton steps on every problem of ``plan`` until each relative gap is at most ``plan.tol``
    or ``plan.max_iter`` reads: a :class:`PrimalResult`.

    ``read(W, S, todo)`` returns the :class:`Sums` of all rows at the points ``W + S`` of the
    problems ``todo`` still training, with trial losses along ``S``.  ``on_pass(records, W)``,
    called after every read with one history record per problem (a problem already converged
    repeats its certificate), stops the solve with a true return value.  ``source``: the
    :class:`~.source.DaskSource` that ``read`` streams, whose reads the records count and number
    from 0 as the streaming solvers do (in memory they are numbered from 1).  ``initial``: the sums
    of every problem at ``w = 0`` from the read that found the classes (:func:`first_read`), which
    is then the first Newton read.  A KeyboardInterrupt after the first read returns the best
    certified state, ``interrupted``.
    """
    clock_start = time.perf_counter() if clock_start is None else clock_start
    k, D = plan.n_problems, width + 1
    if D > MAX_WIDTH and not getattr(read, "hessian_products", False):
        mapped = plan.feature_map is not None
        what = "the feature map's features" if mapped else "the features"
        where = "" if mapped else " out of core"
        instead = "" if mapped else (
            "train in memory (a NumPy array or SciPy sparse matrix: Hessian products instead) or "
        )
        raise ValueError(
            f"dual=False forms the {D} x {D} Hessian of {what} and the bias, wider than the "
            f"{MAX_WIDTH} it supports{where}; {instead}use dual=True (the dual solvers) for a "
            "model this wide."
        )
    problems = [_Problem(D) for _ in range(k)]
    converged = [False] * k
    active = [0] * k
    history, reads, interrupted = [], 0, False
    totals = {"rows_read": 0, "bytes_read": 0, "rows_skipped": 0, "read_retries": 0}
    first = 1 if source is None else 0
    while reads <= plan.max_iter and not all(converged):
        todo = [c for c in range(k) if not converged[c]]
        W = np.array([problems[c].w for c in todo])
        S = np.array([problems[c].s if problems[c].trial else np.zeros(D) for c in todo])
        try:
            sums = initial if reads == 0 and initial is not None else read(W, S, todo)
        except KeyboardInterrupt:
            if reads == 0:
                raise
            interrupted = True
            break
        where = f"read {reads + first}"
        base = {"pass": reads + first, "seconds": time.perf_counter() - clock_start, "solver": "newton"}
        counts = (sums.rows, sums.bytes, sums.skipped, sums.retries)
        for name, value in zip(totals, counts, strict=True):
            totals[name] += int(value)
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
                point = check_gap(problem.update(sums, j), where)
                active[c] = int(sums.active[j])
                record.update(point_primal=point.primal, point_dual=point.dual, accepted=problem.accepted)
                record.update(step=problem.step, hessian_products=problem.cg_steps)
            best = check_gap(problem.certificate, where)
            converged[c] = best.relative_gap <= plan.tol
            record.update(primal=best.primal, dual=best.dual, gap=best.relative_gap, active=active[c])
            records.append(record)
        history.extend(records)
        reads += 1
        if on_pass is not None and on_pass(records, np.array([p.best_w for p in problems])):
            break
    return PrimalResult(
        W=np.array([p.best_w for p in problems]),
        certificates=[p.certificate for p in problems],
        passes=reads - 1 + first,
        history=history,
        converged=converged,
        interrupted=interrupted,
    )


def memory_read(X, y_index, weights, plan, products=None):
    """``read`` for :func:`solve_primal` on in-memory rows (a 2-D array or CSR).

    ``products``: whether the Newton directions come from Hessian products (conjugate gradient,
    :class:`_ProductRead`) instead of the ``D x D`` Hessian; None picks by :func:`prefers_products`.
    """
    Y, cost = plan.signs[:, y_index], plan.costs[:, y_index] * weights
    if products is None:
        products = prefers_products(X, plan)
    if products:
        return _ProductRead(X, Y, cost, plan.bias)

    def read(W, S, todo):
        return block_sums(X, Y[todo], cost[todo], W, S, plan.bias, plan.feature_map)

    return read


def prefers_products(X, plan):
    """Whether in-memory rows take Hessian products (conjugate gradient) rather than the Hessian:
    sparse rows do (a product costs their nonzeros, the Hessian their nonzeros squared per row:
    on a9a, w8a and ijcnn1 products took 0.22, 0.16 and 0.10 s to a gap of 1e-3, the Hessian
    0.21, 0.35 and 0.18 s), and so do dense rows wider than :data:`CG_WIDTH`.  A feature map's
    features form the Hessian (they are made a chunk at a time, never held)."""
    if plan.feature_map is not None:
        return False
    return sp.issparse(X) or X.shape[1] + 1 > CG_WIDTH


def _conjugate_gradient(product, diagonal, g):
    """``(s, steps)``: an approximate solution of ``H s = -g`` by conjugate gradient on the
    products ``product(p) = H p``, preconditioned by ``M = (1 - PRECONDITIONER) I + PRECONDITIONER
    diag(H)`` (Hsia, Chiang and Lin, ACML 2018: the diagonal alone can slow some problems, the
    mixture does not), stopped when the residual is :data:`CG_RESIDUAL` of the gradient's norm
    (LIBLINEAR's truncated Newton rule) or after :data:`CG_MAX_STEPS` products."""
    M = (1.0 - PRECONDITIONER) + PRECONDITIONER * diagonal
    s = np.zeros_like(g)
    r = -g
    z = r / M
    p = z.copy()
    rz = float(r @ z)
    limit = CG_RESIDUAL * float(np.linalg.norm(g))
    steps = 0
    while steps < min(CG_MAX_STEPS, g.shape[0]) and float(np.linalg.norm(r)) > limit:
        Hp = product(p)
        curvature = float(p @ Hp)
        if not curvature > 0:  # H is I plus a positive semidefinite matrix: only rounding gets here
            break
        a = rz / curvature
        s += a * p
        r -= a * Hp
        z = r / M
        rz, previous = float(r @ z), rz
        p = z + (rz / previous) * p
        steps += 1
    return (s if steps else -g), steps


class _ProductRead:
    """``read`` for :func:`solve_primal` on in-memory rows that never forms the Hessian: each
    evaluated point's sums, and per problem the product ``p -> H p`` and ``diag(H)`` on its active
    rows, for :func:`_conjugate_gradient` (a truncated Newton step, as LIBLINEAR's primal solver
    takes on wide data).  Holds the rows once as float64 (a copy if they are not); a product
    costs one pass over the active rows, which are copied out when fewer than half are active."""

    hessian_products = True

    def __init__(self, X, Y, cost, bias):
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
        self.X, self.Y, self.cost, self.bias = X, Y, cost, float(bias)

    def _dot(self, X, w):
        return np.asarray(X @ w[:-1]).ravel() + self.bias * w[-1]

    def _tdot(self, X, u):
        return np.append(np.asarray(X.T @ u).ravel(), self.bias * u.sum())

    def _operator(self, active, weight):
        rows = np.flatnonzero(active)
        X, d = (self.X[rows], weight[rows]) if 2 * rows.shape[0] < self.X.shape[0] else (self.X, weight)
        squares = X.multiply(X) if sp.issparse(X) else None
        diagonal = 1.0 + self._tdot(squares if squares is not None else X * X, d) * np.append(
            np.ones(X.shape[1]), self.bias
        )
        del squares

        def product(p):
            return p + self._tdot(X, d * self._dot(X, p))

        return product, diagonal

    def __call__(self, W, S, todo):
        k, D = W.shape
        sums = Sums(
            np.zeros(k), np.zeros(k), np.zeros((k, D)), None, np.zeros(k, dtype=np.int64),
            np.zeros((k, STEPS.shape[0])), rows=self.X.shape[0], operators=[],
        )  # fmt: skip
        for j, c in enumerate(todo):
            y, C = self.Y[c], self.cost[c]
            z0 = self._dot(self.X, W[j])
            trial = bool(S[j].any())
            dz = self._dot(self.X, S[j]) if trial else None
            z = z0 + dz if trial else z0
            xi = np.maximum(0.0, 1.0 - y * z)
            active = (xi > 0) & (C > 0)
            sums.loss[j] = float(C @ (xi * xi))
            alpha = 2.0 * C * xi
            sums.alpha[j] = float(alpha.sum())
            sums.v[j] = self._tdot(self.X, alpha * y)
            sums.active[j] = int(active.sum())
            if trial:
                m0, dm = y * z0, y * dz
                for i, t in enumerate(STEPS):
                    xi_t = np.maximum(0.0, 1.0 - m0 - t * dm)
                    sums.trial[j, i] = float(C @ (xi_t * xi_t))
            sums.operators.append(self._operator(active, np.where(active, 2.0 * C, 0.0)))
        return sums


def _read_once(source, plan, counts):
    """The blocks of one read of ``source`` with ``plan``'s reader settings; each block's rows,
    bytes, skipped rows and retries are added to ``counts`` (a :class:`Sums`) as it passes."""
    from .reader import read_blocks

    blocks = read_blocks(source, prefetch=plan.prefetch, retries=plan.retries, read_timeout=plan.read_timeout)
    for _, block in blocks:
        counts.skipped += block.n_skipped
        counts.retries += block.retries
        counts.rows += block.n_rows
        counts.bytes += block.nbytes if block.n_rows else 0
        yield block


def stream_read(source, plan, on_block=None, start=0):
    """``read`` for :func:`solve_primal` on a :class:`~.source.DaskSource`: one read of every
    partition per call, the sums of each block added as it arrives.  ``on_block(k, block)`` is
    called for every block of read ``k`` (from ``start``)."""
    reads = [start]

    def read(W, S, todo):
        total = Sums.zeros(len(todo), W.shape[1])
        counts = Sums.zeros(0, 0)
        for block in _read_once(source, plan, counts):
            if block.n_rows:
                Y, cost = encode_block(plan, block)
                total.add(block_sums(block.X, Y[todo], cost[todo], W, S, plan.bias, plan.feature_map))
            if on_block is not None:
                on_block(reads[0], block)
        reads[0] += 1
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(total, name, getattr(counts, name))
        return total

    return read


# The most the first read's per-class Gram matrices may take; beyond, it only counts the labels.
MOMENT_BYTES = 256 << 20


@dataclass
class _ClassMoments:
    """Sums over one class's rows: weights, rows of positive weight, ``sum w x`` and ``sum w x x^T``."""

    weight: float
    weighted_rows: int
    first: np.ndarray
    second: np.ndarray


def first_read(source, plan, width, on_block=None):
    """The read that finds the classes, made the first Newton read: ``(labels, first)``.

    Counts the labels of every partition as :meth:`~.source.DaskSource.label_counts` does
    (``labels`` is its ``(classes, counts, weighted classes)``), and sums, per class, the weights
    and the first and second moments of its rows (with the bias, and the feature map's features).
    At ``w = 0`` every row is active with ``xi = 1``, so each problem's Newton sums there are
    combinations of these: ``first(plan)`` returns them as :class:`Sums` once ``plan`` has the
    labels (None if the classes' matrices would pass :data:`MOMENT_BYTES`; the first Newton read
    then reads again).  ``plan`` needs no labels; ``width`` is the model's width without the bias.
    """
    from .source import _count_labels, merge_label_counts

    D = width + 1
    counts, ids, moments = [], [], {}
    totals = Sums.zeros(0, D)
    for block in _read_once(source, plan, totals):
        counts.append(_count_labels(block.partition, block.y, block.sample_weight))
        ids.append(block.partition)
        if moments is not None and block.n_rows:
            moments = _add_moments(moments, block, plan, D)
        if on_block is not None:
            on_block(0, block)
    labels = merge_label_counts(counts, partitions=ids)

    def first(plan):
        if moments is None:
            return None
        k = plan.n_problems
        sums = Sums.zeros(k, D)
        for name in ("rows", "skipped", "retries", "bytes"):
            setattr(sums, name, getattr(totals, name))
        for j, label in enumerate(plan.classes.tolist()):
            m = moments[label]
            for c in range(k):
                cost = plan.costs[c, j]
                sums.loss[c] += cost * m.weight
                sums.alpha[c] += 2.0 * cost * m.weight
                sums.v[c] += 2.0 * cost * plan.signs[c, j] * m.first
                sums.hessian[c] += 2.0 * cost * m.second
                sums.active[c] += m.weighted_rows if cost > 0 else 0
        return sums

    return labels, first


def _add_moments(moments, block, plan, D):
    """``moments`` with the block's rows added per class; None once they would pass MOMENT_BYTES."""
    labels, inverse = np.unique(np.asarray(block.y).ravel(), return_inverse=True)
    keys = labels.tolist()
    if len(set(moments) | set(keys)) * D * D * 8 > MOMENT_BYTES:
        return None
    for key in keys:
        if key not in moments:
            moments[key] = _ClassMoments(0.0, 0, np.zeros(D), np.zeros((D, D)))
    weights = block.sample_weight
    step = _chunk_rows(D)
    for lo in range(0, block.n_rows, step):
        hi = min(lo + step, block.n_rows)
        Xa = _augmented(block.X, lo, hi, plan.bias, plan.feature_map)
        which, w = inverse[lo:hi], weights[lo:hi]
        for j in np.unique(which):
            rows = which == j
            m, wj = moments[keys[j]], w[rows]
            m.weight += float(wj.sum())
            m.weighted_rows += int((wj > 0).sum())
            m.first += np.asarray(Xa[rows].T @ wj).ravel()
            m.second += _gram(Xa[rows], wj)
    return moments
