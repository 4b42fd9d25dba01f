"""One-pass SBM for streams: ``LinearSVC.partial_fit`` (Chang & Roth, KDD 2011, section 4).

Each block of the stream is seen once::

    alpha_B = 0                                    the new rows start at zero
    W = B + cache                                  the rows in memory
    solve the dual on W to the gap rule            (alpha outside W: forgotten)
    cache <- the rows of W to keep, within ``cache_bytes`` (section 2.2, or
             section 3 for Crammer-Singer; or a random subset)

Rows that leave memory take their alpha with them: unlike the multi-pass
schedules there is no store of every row's dual variable, so memory is the
cache plus the block in hand, whatever the length of the stream.  ``w``
keeps the contributions of the forgotten rows (it is the model), so the
subproblem on ``W`` has no exact certificate; the result is a feasible
approximation of the batch optimum, better the larger the cache.

Accounting.  The state is plain arrays: the cached rows (dense, or CSR with
int32 column indices) and, per row and problem, label, cost and alpha
(``24 k`` bytes).  ``nbytes`` adds up the arrays actually held;
the selection keeps rows while that sum stays within ``cache_bytes``.
"""

import numpy as np
import scipy.sparse as sp

from ...kernels.cache import gap_scores
from ...kernels.crammer_singer import cs_select_informative, cs_sweep
from ...kernels.dcd import ProblemArrays, row_sqnorms
from ...kernels.losses import upper_and_diag_arrays
from ...kernels.rng import make_state
from ...kernels.sbm import gradients, select_informative, select_random
from ..plan.layout import kernel_rows
from ..plan.losses import loss_of
from .memory import BinaryProblem
from .sbm import INNER_EPS, passes_to_gap
from .trainer import KAPPA

_PER_PROBLEM = 3 * 8  # label, cost and alpha of a row in one problem (float64)


class OnePassSBM:
    """The state of a stream: model, cached rows and their dual variables.

    Parameters
    ----------
    plan : :class:`~..plan.problem.FitPlan` with ``solver="partial"``: its label
        tables give the problems (one binary, one per class for one-vs-rest
        or Crammer-Singer), and ``loss``, ``bias``, ``cache_bytes`` (bytes
        of rows kept between blocks), ``inner_iter`` (the passes' caps:
        :attr:`~..plan.problem.FitPlan.gap_ruled_passes`, ``fixed_passes``),
        ``cache_policy``, ``crammer_singer``, ``seed`` and
        ``feature_map`` (a map's spec, :mod:`~dask_streamsvm.kernels.features`:
        the cache then holds raw rows as CSR and the kernels apply the map)
        shape the stream.
    n_features : int, raw features of the rows
    """

    def __init__(self, plan, n_features):
        self.k, self.n_features = plan.n_problems, plan.model_width(int(n_features))
        self.feature_map = plan.feature_map
        self.loss, self.bias = plan.loss, float(plan.bias)
        self.cache_bytes, self.inner_iter = int(plan.cache_bytes), int(plan.gap_ruled_passes)
        self.cs_passes = int(plan.fixed_passes)
        self.informative = plan.cache_policy == "informative"
        self.crammer_singer = bool(plan.crammer_singer)
        self.W = np.zeros((self.k, self.n_features + 1))
        self.rng_state = make_state(plan.seed)
        self.X = None  # cached rows: C-contiguous ndarray or CSR matrix; None when empty
        self.layout = None  # (sparse, dtype) of the first block, kept by every later one
        self.Y = self.cost = self.alpha = np.zeros((self.k, 0))
        self.blocks = self.rows_seen = 0

    @property
    def loss_code(self):
        """The kernels' code of the stream's loss (``loss`` is its name)."""
        return loss_of(self.loss).code

    def start_from(self, coef, intercept):
        """Start ``W`` from a fitted model's ``coef_`` and ``intercept_`` (``partial_fit`` after ``fit``)."""
        bias = self.bias
        W = np.hstack([coef, (intercept / bias if bias > 0 else 0.0 * intercept)[:, None]])
        if self.crammer_singer and W.shape[0] == 1:
            W = np.vstack([np.zeros_like(W), W])  # w_1 - w_0 = coef_
        self.W[:] = W

    # -- accounting --------------------------------------------------------------

    @property
    def nbytes(self):
        """Bytes of the cached rows and their per-row state, as held."""
        return _nbytes(self.X) + self.Y.nbytes + self.cost.nbytes + self.alpha.nbytes

    def _row_bytes(self, X):
        if sp.issparse(X):
            nnz = np.diff(X.indptr)
            return self.k * _PER_PROBLEM + 8 + nnz * (4 + X.dtype.itemsize)
        return np.full(X.shape[0], self.k * _PER_PROBLEM + X.shape[1] * X.dtype.itemsize, dtype=np.int64)

    # -- a block arrives ---------------------------------------------------------

    def add_block(self, X, y_pm, cost):
        """Train on the cache plus the block ``(X, y_pm, cost)``; return the block's record.

        ``y_pm`` and ``cost`` are ``(k, n_rows)`` as the encoders of
        :mod:`.streamsvm` give them; rows of zero cost in every problem are
        dropped on arrival.
        """
        X = self._as_cache_layout(X)
        keep = (cost > 0.0).any(axis=0)
        if not keep.all():
            X, y_pm, cost = X[keep], y_pm[:, keep], cost[:, keep]
        n_new = X.shape[0]
        Xw = X if self.X is None else _tidy(_stack(self.X, X))
        Y = np.hstack([self.Y, y_pm])
        cost_w = np.hstack([self.cost, cost])
        alpha = np.hstack([self.alpha, np.zeros((self.k, n_new))])
        memory_bytes = _nbytes(Xw) + Y.nbytes + cost_w.nbytes + alpha.nbytes
        rows = kernel_rows(Xw, self.feature_map)
        passes = self._solve(rows, Y, cost_w, alpha) if Xw.shape[0] else 0
        kept = self._select(rows, Xw, Y, cost_w, alpha)
        self.X = _tidy(Xw[kept]) if kept.shape[0] else None
        self.Y, self.cost, self.alpha = Y[:, kept], cost_w[:, kept], alpha[:, kept]
        self.blocks += 1
        self.rows_seen += n_new
        return {
            "block": self.blocks,
            "rows": n_new,
            "rows_seen": self.rows_seen,
            "passes": passes,
            "memory_bytes": memory_bytes,
            "cache_rows": int(kept.shape[0]),
            "cache_bytes": self.nbytes,
        }

    def _as_cache_layout(self, X):
        """The block in the cache's layout (the first block's: dense or CSR)."""
        if self.layout is None:
            self.layout = (sp.issparse(X) or self.feature_map is not None, X.dtype)
        sparse, dtype = self.layout
        if sparse:
            return _tidy(sp.csr_matrix(X, dtype=dtype))
        X = X.toarray() if sp.issparse(X) else X
        return np.ascontiguousarray(X, dtype=dtype)

    def _solve(self, rows, Y, cost, alpha):
        """DCD passes (or the sequential dual method's) on the rows in memory, at most ``inner_iter``.

        DCD passes end once the rows' duality gap is ``KAPPA`` times its value
        after the first pass (measured after passes 1, 2, 4, 8, 16, 24, ...), the rule
        SBM follows (:func:`~.sbm.passes_to_gap`) with no
        certificate to compare against.
        """
        n = Y.shape[1]
        if self.crammer_singer:
            sq = np.empty(n)
            row_sqnorms(rows, self.bias, sq)
            QD = np.repeat(sq[None, :], self.k, axis=0)
            index = np.arange(n, dtype=np.int64)
            scratch = np.empty(n, dtype=np.int64)
            done = 0
            while done < self.cs_passes:
                done += 1
                worst = cs_sweep(rows, Y, cost, QD, alpha, self.W, self.bias, index, n, np.inf, scratch,
                                 self.rng_state)  # fmt: skip
                if worst <= INNER_EPS:
                    break
            return done
        problems = [
            BinaryProblem(rows, Y[c], cost[c], self.loss, self.bias, self.n_features) for c in range(self.k)
        ]
        index = [p.trainable_rows() for p in problems]
        arrays = [ProblemArrays(p.y, p.upper, p.diag, p.qd, p.loss_code) for p in problems]
        scores = np.empty(n)

        def measure():  # the block's gap, as SBM measures it
            gap_scores(rows, Y, cost, alpha, self.W, self.bias, self.loss_code, scores)
            return scores.sum()

        passes, _ = passes_to_gap(
            rows, arrays, index, alpha, self.W, self.bias, self.rng_state, self.inner_iter,
            measure=measure, target=lambda start_gap: KAPPA * start_gap,
        )  # fmt: skip
        return passes

    def _select(self, rows, Xw, Y, cost, alpha):
        """Positions of the rows to cache, best first, within ``cache_bytes``."""
        n = Y.shape[1]
        keep = np.empty(n, dtype=np.int64)
        if self.cache_bytes <= 0 or n == 0:
            return keep[:0]
        sizes = self._row_bytes(Xw)
        budget = self.cache_bytes - (8 if sp.issparse(Xw) else 0)  # CSR's extra indptr entry
        slots = np.arange(n, dtype=np.int64)
        if not self.informative:
            m = select_random(sizes, budget, self.rng_state, keep)
        elif self.crammer_singer:
            m = cs_select_informative(rows, Y, cost, alpha, self.W, self.bias, slots, sizes, budget, keep)
        else:
            upper, diag = upper_and_diag_arrays(cost, self.loss_code)
            grad = np.empty((self.k, n))
            gradients(rows, Y, upper, diag, alpha, self.W, self.bias, self.loss_code, slots, grad)
            m = select_informative(alpha, grad, upper, sizes, budget, keep)
        return np.sort(keep[:m])


def _stack(top, bottom):
    if sp.issparse(top):
        return sp.vstack([top, bottom], format="csr")
    return np.vstack([top, bottom])


def _nbytes(X):
    if X is None:
        return 0
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def _tidy(X):
    """CSR with int32 column indices and canonical rows (what ``_row_bytes`` counts)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.indices = X.indices.astype(np.int32, copy=False)
        X.indptr = X.indptr.astype(np.int64, copy=False)
    return X
