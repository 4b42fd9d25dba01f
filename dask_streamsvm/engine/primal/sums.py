"""The primal Newton solver's reads: the sums over rows that one Newton step needs.

At a point ``w`` of one problem the loss's Newton terms of each row
(:func:`~dask_streamsvm.kernels.losses.newton_terms`, at the shortfall
``s_i = 1 - y_i w . x_i``) give the step's sums::

    loss    sum_i C_i loss(m_i)              the primal's loss term
    alpha   the dual's sum at alpha(w)       alpha_i = -C_i loss'(m_i), the gradient's factors
                                             (the squared hinge: sum_i alpha_i; the logistic loss:
                                             sum_i H_i(alpha_i), :func:`~...kernels.losses.newton_dual_term`)
    v       sum_i alpha_i y_i x_i            the gradient is w - v
    hessian sum_i D_ii x_i x_i^T             the generalised Hessian is I + this

and the loss at ``w + t s`` for each step length ``t`` of :data:`STEPS`:
sums over rows, so the sums of the partitions (or of the workers) are the
sums of the data.  :func:`block_sums` makes them from rows in memory or a
block, :func:`memory_read` is the ``read`` that :func:`~.newton.solve_primal`
calls in memory (:func:`~.reads.stream_read` streams), and :class:`ProductRead` keeps, instead
of the Hessian, its products on the active rows (truncated Newton on wide
data).  Every sum accumulates in float64, a chunk of rows at a time (the Hessian too: it
certifies a band's step, :data:`HESSIAN_IN_DATA_PRECISION`).

Dense rows take one fused pass per chunk (:func:`~dask_streamsvm.kernels.newton.dense_newton_sums`:
the margins, the loss's terms, the certificate's sums, the trial losses, and the scaled active
rows, read in the rows' own precision, for every problem at once) and the Hessian's sum is a
BLAS product (GEMM) of the scaled active rows, symmetrised once per block.  An in-memory fit's
float32 rows of integer values (pixels, counts, binary features) give their active rows unscaled
instead, whose Gram matrix float32 products make exactly (:class:`ExactGram`).
"""

import collections
import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...kernels.losses import newton_dual_rows, newton_losses, newton_rows
from ...kernels.newton import (
    csr_hessian_product,
    csr_newton_sums,
    dense_newton_sums,
    integer_gauge,
    sparse_gram,
)
from ..plan.layout import as_kernel_rows
from ..plan.losses import loss_by_code
from ..plan.problem import column_max_abs
from ..plan.threads import row_pool
from .l1 import column_layout

# Step lengths a read tries along the Newton direction: 1, 1/2, ..., 1/2048 (:func:`trial_steps`).
STEPS = 2.0 ** -np.arange(12)
# Longer step lengths an in-memory read (:class:`ProductRead`) also tries, 2, 4, ..., 1024: where the
# model's descent moves slowly along a flat direction (newton.py, EXTENSION_GAIN), the read's values
# show how far the step could have gone.
LONGER = 2.0 ** np.arange(1, 11)
CHUNK_BYTES = 16 << 20  # float64 rows made at a time (:func:`chunk_rows`)
# Dense rows a Hessian product takes at a time (:func:`weighted_product`): both of its matrix
# products read a chunk, the second from the cache.  Measured by benchmarks/bench_products.py (the
# table in docs/guide/threads.md: 4 shapes, 1 and 2 BLAS threads, chunks of 256 KB to 16 MB): 4 MB is
# the best or within 6% of it everywhere, and never slower than the two products over every row (200k
# x 500, 10 classes: 215 -> 180 ms on one thread, 132 -> 102 ms on two); 1 MB is, at two threads on
# 2M x 60 (OpenBLAS does not split a small product between threads).
PRODUCT_CHUNK_BYTES = 4 << 20
# Runs of chunks each row thread sums (:func:`chunk_sums`): more than one, so that a thread that shares
# its core with a busy process leaves its last runs to the others; few, so that few partial sums are
# held (one ``d x m`` array a run).
ROW_RUNS = 4
# Runs a row thread may have in flight or waiting to be added (:func:`_added_in_order`): the sums held
# at once (a Hessian each on the primal solver's reads: 84 MB for ten problems 1,023 wide) are at most
# this many a thread, while a thread that shares its core with a busy process is waited for.
RUNS_IN_FLIGHT = 2
# CSR chunks narrower than this and at least DENSE_FILL full are made dense (at 1024 columns,
# 34 MB a chunk): the Hessian's products are then BLAS calls.  Sparser rows cost less as CSR (the
# Gram matrix of a row costs its nonzeros' count times itself): measured on a9a (11% full) and w8a (4%).
DENSE_CHUNK_WIDTH = 1024
DENSE_FILL = 0.25
FILL_SAMPLE = 10_000  # rows of a dense array whose nonzeros estimate its fill (:func:`memory_layout`)
# In memory, dense rows wider than this (features plus bias) take Hessian products instead of the
# Hessian, as sparse rows always do (:func:`prefers_products`).  Measured at C = 1 on Gaussian rows
# (benchmarks/bench_primal.py): the Hessian wins at 51 columns (2.5 s against 4.1 s on 1M rows),
# 201 (2.3 against 3.0) and 501 (3.2 against 3.8), and loses at 1001 (4.8 against 3.8, 50k rows).
CG_WIDTH = 1024
# Sparse rows form the Hessian (:func:`~...kernels.newton.csr_newton_sums`: each row's pairs of
# nonzeros, fused with the read) where those pairs number at most this many times the nonzeros: a
# Newton direction takes 5 to 70 products, each reading the nonzeros twice (:func:`prefers_products`).
# a9a has 6.9 pairs a nonzero, w8a 11.3: there the Hessian took 0.085 and 0.23 s to a 1e-6 gap of
# the logistic loss at C = 1, products 0.15 and 0.30 s; LinearSVC's default loss 0.064 and 0.095 s
# against 0.16 and 0.14 s (one BLAS thread, load 0.3-0.8; products were the rule for sparse rows
# before).
SPARSE_HESSIAN_PAIRS = 16
# The largest |value| of a column (a feature, a feature map's feature, or the intercept column) the
# primal solver trains on; the first read, which sums the Hessian, refuses larger ones
# (:func:`too_large`).  Beyond it float64 rounding in ``v = sum_i alpha_i y_i x_i`` (terms of size
# |x| that cancel to ``w ~ 1/|x|``) keeps the duality gap from closing: its floor grows as |x|^2
# and with the rows.  Measured with dual=False, C = 1, tol = 1e-4, on Gaussian rows of 5 features
# with column 2 scaled by s (its largest |x| is about 3 s): on 400 rows, in memory and streamed,
# gaps of 6e-15, 7e-12 and 7e-8 (8e-7 streamed) at s = 1e8, 1e10 and 1e12 in 7 or 8 reads, and
# max_iter reached at gaps of 6e-4 (4e-3 streamed), 2e8 (CSR), 2e26 and 3e266 at s = 1e15, 1e20,
# 1e30 and 1e150; on 100k rows 2e-5 at s = 1e12 and 1e13, max_iter at 1.5e-3 at 1e14; on 1M rows
# 9e-9, 1.5e-5 and 3e-4 at s = 1e10, 1e11 and 1e12, max_iter at 1.9e-3 (above the default tol,
# 1e-3) at 1e13.  Refusing |x| > 1e12 (s of about 3e11) leaves the floor near 1e-5 on a million
# rows; raw pixels (255), counts, or times in seconds (2e9) are far below it.
MAX_VALUE = 1e12
# Whether the Hessian's sum over float32 rows of a piecewise-quadratic loss is made in float32 (a BLAS
# product of float32 scaled rows, each chunk's Gram matrix then added in float64; a chunk whose Gram
# matrix passes float32's range is made again in float64) rather than in float64.  False since
# 2026-12-04: a band's certificate (newton.band_certificate) takes its step's point's loss and dual
# point from the read's Hessian (v - H d, w . H d), so that Hessian certifies, and a certificate's
# sums are float64.  In float32 the certificates of a band's step on float32 rows 0..255 (200,000 x
# 10, C = 1) put the dual value 7.4e-8 of the primal above a float64 read's at that point (the
# certified gap 1.25e-5; at C = 0.01 2.0e-8 of 9.0e-7), more than they proved: the true gradient
# after a Newton step is the Hessian's rounding times the step.  In float64 within 1e-12.  Float32
# sums were 15-18% faster (0.37 against 0.44 s a read of 2M x 60 rows, all active, out of core,
# measured with SYRK before GEMM replaced it), with the same reads to 1e-3 and 1e-6 on those rows.
# A smooth loss's reads also certify their step's dual point from the Hessian's product
# (newton._Problem.step_dual) and sum it in float64 either way.
HESSIAN_IN_DATA_PRECISION = False
# Float32 rows whose values are integers (pixels 0..255, counts, binary features) have an exact Gram
# matrix in float32, and BLAS makes it in half the time of float64's: every product and partial sum
# is an integer, exact while its magnitude is at most EXACT_SUM (2^24, float32's 24-bit
# significand), so the rows are multiplied EXACT_SUM / top^2 at a time (top the largest |value|, the
# bias included; 258 rows of 0..255) and those products added in float64 (:func:`exact_gram`).  Where
# rows of a chunk would be fewer than EXACT_MIN_ROWS a product (|values| beyond 512), or a value is not
# an integer, or the active rows' weights differ, the chunk's rows are scaled in float64 as before
# (:class:`ExactGram`).  The Hessian is then the exact sum where float64's was rounded, so its
# certificates hold as before.  Measured on 33,800 x 61 rows of 0..255, one thread: the Gram matrix
# 11.0-11.5 ms where float64's took 17.9-19.2 ms; the read that forms the Hessian of the 2M x 60 raw
# set, two row threads, 0.38-0.39 s where 0.46-0.49 s (2026-12-04; docs/benchmarks.md, "The Hessian
# of integer rows, exact in float32").
EXACT_SUM = float(2**24)
EXACT_MIN_ROWS = 64
EXACT_PROBE = 1024  # rows an in-memory fit's rows are first probed on (ExactGram.of)


@dataclass
class Sums:
    """Sums over rows at one point of every problem: what a Newton step and its certificate need.

    ``loss`` (k,): sum C_i loss(m_i); ``alpha`` (k,): the dual's sum at ``alpha(w)`` (module docstring);
    ``v`` (k, D): sum alpha_i y_i x_i;
    ``hessian`` (k, D, D): sum D_ii x_i x_i^T; ``active`` (k,): rows of D_ii > 0;
    ``trial`` (k, len(STEPS)): sum C_i loss at ``w + t s``; ``rows``: rows read (module docstring).
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
    # In memory with Hessian products (:class:`ProductRead`): per problem, ``(product, diagonal)``
    # of the Hessian at the evaluated point, and ``hessian`` is None.
    operators: list = None
    # In memory (:class:`ProductRead`), a piecewise-quadratic loss's trial step: (k, len(LONGER)),
    # sum C_i loss at ``w + t s`` for ``t`` in :data:`LONGER`; None where not read.
    longer: np.ndarray = None
    # Streamed with a band (:class:`~.reads.StreamRead`): per problem, the rows of margin
    # nearest 1 at the evaluated point (a :class:`~.reads.Sample`), for :func:`~.newton.band_step`.
    band: list = None
    # Streamed from a sample's solution, a smooth loss's read: its rows' largest length in the
    # sample's metric, ``max_i ||(x_i - center) / scale||`` (:func:`~.reads.metric_row_norm`), which
    # bounds how far a step moves any margin (:meth:`~.newton._Problem.step_duals`); None unmeasured.
    row_norm: float = None
    # A part's sums on a cluster (:mod:`~..cluster.products`): per problem, the diagonal of its rows'
    # Hessian term ``sum_i D_ii x_i^2`` (k, D), added up the tree with the rest; ``hessian`` is None.
    diagonal: np.ndarray = None
    # In memory, a piecewise-quadratic loss's dense rows (:class:`~.carried.CarriedHessian`): per
    # problem, ``(X, signs, costs, shortfalls, |W| + |S|)``, every row's at the evaluated point
    # ``W + S``, from which a step's band is cut once its direction is known (newton.step_band).
    held: list = None

    @classmethod
    def zeros(cls, k, width, hessian=True):
        """Sums of no rows (``hessian``: with a Hessian, else None)."""
        return cls(
            np.zeros(k), np.zeros(k), np.zeros((k, width)), np.zeros((k, width, width)) if hessian else None,
            np.zeros(k, dtype=np.int64), np.zeros((k, STEPS.shape[0])),
        )  # fmt: skip

    def add(self, other):
        """``self += other`` (the sums of more rows); returns self."""
        self.loss += other.loss
        self.alpha += other.alpha
        self.v += other.v
        if self.hessian is not None:
            self.hessian += other.hessian
        if self.diagonal is not None:
            self.diagonal += other.diagonal
        self.active += other.active
        self.trial += other.trial
        if other.longer is not None:  # a part's trial losses at the longer lengths (ProductRead)
            self.longer = other.longer.copy() if self.longer is None else self.longer + other.longer
        if other.row_norm is not None:
            self.row_norm = max(self.row_norm or 0.0, other.row_norm)
        self.rows += other.rows
        self.skipped += other.skipped
        self.bytes += other.bytes
        self.retries += other.retries
        return self


def trial_steps(loss):
    """The step lengths whose losses a read sums along the Newton direction, for the loss of code
    ``loss``: :data:`STEPS` for a piecewise-quadratic loss (a multiply and a compare a row and
    length: its full step can overshoot a kink, and a read out of core is dear), none for a smooth
    one (the logistic loss: twelve more logarithms a row would cost more than its read, and from
    its warm start its full Newton step is taken; a step that fails is halved by the next read,
    :meth:`~.newton._Problem.update`)."""
    return STEPS if loss_by_code(loss).piecewise_quadratic else STEPS[:0]


def chunk_rows(width):
    """Rows a chunk holds: :data:`CHUNK_BYTES` of float64 rows ``width`` wide (256 to 65,536)."""
    return int(min(max(CHUNK_BYTES // (8 * width), 256), 65536))


def augmented_rows(X, lo, hi, bias, feature_map=None):
    """Rows ``lo:hi`` of ``X`` with the bias column, as float64: dense, or CSR where the rows are
    wide or sparse enough (:data:`DENSE_CHUNK_WIDTH`, :data:`DENSE_FILL`).  With a feature map's
    spec, the map's features of the rows, dense (the primal solver's maps are narrow)."""
    if feature_map is not None:
        from ...kernels.features import map_rows_into, spec_width

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


class BeyondPrimal(ValueError):
    """A first Newton read found a value beyond :data:`MAX_VALUE` (:func:`too_large`): nothing was
    trained (the read is at ``w = 0``), and ``dual="auto"`` trains the dual solvers instead."""


def too_large(rows, bias, mapped=False, augmented=True):
    """The reason the primal solver cannot train on ``rows`` (dense or CSR), a sentence, or None:
    a value beyond :data:`MAX_VALUE` in absolute value, named by its column and value, with the fix.

    ``augmented``: the last column of ``rows`` is the intercept column (of value ``bias``), as
    :func:`augmented_rows` makes it; else ``bias`` is checked as that column.  ``mapped``: the
    columns are a feature map's features.  One pass over the rows, on the first read only.
    """
    top = column_max_abs(rows)
    if not augmented:
        top = np.append(top, abs(float(bias)))
    return value_reason(top, bias, mapped)


# The dual solvers, as value_reason advises them (not to the L1 and elastic-net penalties: without_dual).
DUAL_ADVICE = "dual=True (the dual solvers)"


def without_dual(reason):
    """:func:`value_reason`'s sentence for a plan the dual solvers cannot train (the L1 and
    elastic-net penalties): its advice of ``dual=True`` left out, coordinate descent in memory named."""
    for advice in (f"; or use {DUAL_ADVICE}.", f", or {DUAL_ADVICE}."):
        reason = reason.replace(advice, ".")
    return reason + " In memory (solver='memory') coordinate descent trains such values."


def value_reason(top, bias, mapped):
    """:func:`too_large`'s sentence from each column's largest |value| ``top`` (the intercept
    column's last), or None."""
    column = int(np.argmax(top))
    value = float(top[column])
    if not value > MAX_VALUE:
        return None
    if column == top.shape[0] - 1:
        what = f"the intercept column is {value:.4g} (intercept_scaling={float(bias):g})"
        fix = f"Use an intercept_scaling of about 1, or {DUAL_ADVICE}."
    else:
        what = f"{'feature' if mapped else 'column'} {column}{' of the feature map' if mapped else ''} "
        what += f"reaches |x| = {value:.4g}"
        scale = "Scale the input features first" if mapped else (
            "Scale the features: feature_map=Standardize() (dask_streamsvm.features), or each column "
            "to about [-1, 1] first"
        )  # fmt: skip
        fix = f"{scale}; or use {DUAL_ADVICE}."
    return (
        f"{what}: the primal solver (dual=False) cannot train on values beyond {MAX_VALUE:g} in "
        "absolute value (float64 rounding keeps its duality gap from closing, whatever the number "
        f"of reads). {fix}"
    )


def gram(rows, weights):
    """``sum_i weights_i x_i x_i^T`` of the rows (dense or CSR), dense (float64 dense rows by BLAS,
    CSR rows by :func:`~...kernels.newton.sparse_gram`: their nonzeros' pairs only)."""
    if sp.issparse(rows):
        rows = sp.csr_matrix(rows)
        out = np.zeros((rows.shape[1], rows.shape[1]))
        sparse_gram(*as_kernel_rows(rows), np.ascontiguousarray(weights, dtype=np.float64), out)
        return symmetrised(out)
    scale = np.sqrt(weights)
    rows = np.ascontiguousarray(rows * scale[:, None], dtype=np.float64)
    out = np.zeros((rows.shape[1], rows.shape[1]))
    add_gram(rows, out)
    return symmetrised(out)


def symmetrised(lower):
    """The square matrix ``lower`` with its strict upper triangle set from its lower one, in place."""
    upper = np.triu_indices(lower.shape[-1], 1)
    lower[..., upper[0], upper[1]] = lower[..., upper[1], upper[0]]
    return lower


def newton_sums(loss, C, s):
    """Per row of costs ``C`` at shortfalls ``s``: ``(loss, factor, weight)`` arrays of the loss of
    code ``loss`` (:func:`~dask_streamsvm.kernels.losses.newton_terms`)."""
    terms, factor, weight = np.empty_like(s), np.empty_like(s), np.empty_like(s)
    newton_rows(loss, C, s, terms, factor, weight)
    return terms, factor, weight


def dual_terms(loss, C, s, factor):
    """Per row, what it adds to the Newton read's dual sum (:func:`~...kernels.losses.newton_dual_term`):
    the factors ``alpha_i`` themselves for the squared hinge, the entropies for the logistic loss."""
    out = np.empty_like(s)
    newton_dual_rows(loss, C, s, factor, out)
    return out


def trial_losses(loss, s):
    """The loss of code ``loss`` at every shortfall of the array ``s`` (any shape): the trial steps'."""
    out = np.empty_like(s)
    newton_losses(loss, s.reshape(-1), out.reshape(-1))
    return out


def block_sums(
    X, Y, cost, W, S, bias, loss, feature_map=None, where=None, hessian=True, shortfall=None, exact=None
):  # fmt: skip
    """The :class:`Sums` of the rows of ``X`` (labels ``Y`` and costs ``cost``, each (k, n)) at the
    points ``W + S`` (each (k, D)), with the trial losses along ``W + t S`` for ``t`` in :data:`STEPS`,
    for the loss of code ``loss``.  ``feature_map``: a map's spec, whose features of the rows the
    model reads.  ``where`` (the first read's): check each chunk's values (dense rows: in the pass
    that sums them), a ValueError starting with ``where`` (:func:`too_large`); None: no check.
    ``hessian=False``: no Hessian (``Sums.hessian`` None), only the point's certificate and gradient.
    ``shortfall`` (k, n) float64, or None: each row's shortfall ``1 - y_i m_i`` at ``W + S``, as
    the sums took it, is written into it (:func:`shortfall_sums`).  ``exact``: an :class:`ExactGram`
    whose dense float32 rows' Hessian is made exactly where they are integers, or None.

    Works through the rows a chunk of :data:`CHUNK_BYTES` at a time, every sum accumulating in
    float64; dense rows are read in their own precision (:func:`dense_block_sums`), never copied
    whole, CSR rows and a feature map's features are made float64 a chunk at a time.
    """
    if feature_map is None and not sp.issparse(X):
        return dense_block_sums(X, Y, cost, W, S, bias, loss, where, hessian, shortfall, exact)
    if feature_map is None:
        return csr_block_sums(X, Y, cost, W, S, bias, loss, where, hessian, shortfall)
    k, width = W.shape
    sums = Sums.zeros(k, width, hessian)
    sums.rows = X.shape[0]
    steps = trial_steps(loss)
    trial_points = S.any(axis=1)
    step = chunk_rows(width)
    for lo in range(0, X.shape[0], step):
        hi = min(lo + step, X.shape[0])
        Xa = augmented_rows(X, lo, hi, bias, feature_map)
        if where is not None and (reason := too_large(Xa, bias, feature_map is not None)) is not None:
            raise BeyondPrimal(where + reason)
        Z0 = np.asarray(Xa @ W.T)  # (m, k)
        Z = Z0 + np.asarray(Xa @ S.T) if trial_points.any() else Z0
        for c in range(k):
            y, C = Y[c, lo:hi], cost[c, lo:hi]
            s = 1.0 - y * Z[:, c]
            if shortfall is not None:
                shortfall[c, lo:hi] = s
            _add_rows_at(sums, c, Xa, y, C, s, loss, hessian)
            if trial_points[c] and steps.shape[0]:
                m0, dm = y * Z0[:, c], y * (Z[:, c] - Z0[:, c])
                sums.trial[c] += C @ trial_losses(loss, 1.0 - m0[:, None] - dm[:, None] * steps[None, :])
    return sums


def _add_rows_at(sums, c, Xa, y, C, s, loss, hessian, single=False):
    """Problem ``c``'s sums (and Hessian, with ``hessian``) of the augmented rows ``Xa`` (float64,
    dense or CSR) at their shortfalls ``s``, added to ``sums``; ``single``: the Hessian's sum of
    dense rows in float32, as :func:`dense_block_sums` makes it of float32 rows."""
    terms, alpha, weight = newton_sums(loss, C, s)
    active = weight > 0.0
    sums.loss[c] += float(C @ terms)
    sums.alpha[c] += float(dual_terms(loss, C, s, alpha).sum())
    sums.v[c] += np.asarray(Xa.T @ (alpha * y)).ravel()
    sums.active[c] += int(active.sum())
    if not (hessian and active.any()):
        return
    if single and not sp.issparse(Xa):
        add_gram((Xa[active] * np.sqrt(weight[active])[:, None]).astype(np.float32), sums.hessian[c])
        symmetrised(sums.hessian[c])
    else:
        sums.hessian[c] += gram(Xa[active], weight[active])


def shortfall_sums(X, y, cost, shortfall, bias, loss, feature_map=None):
    """One problem's :class:`Sums` (with the Hessian) of the rows ``X`` (labels ``y``, costs ``cost``)
    at the shortfalls a read took for them (:func:`block_sums`'s ``shortfall``): the rows that read
    counted active, and their terms, whatever the rounding of a margin summed again.

    A band's sums at the read's point are subtracted from the read's (:func:`~.newton.band_step`,
    :func:`~.newton.band_certificate`); summed again at ``w`` they could count a row at the hinge
    point differently: the read's margin at ``W + S`` is ``x . W + x . S``, not ``x . (W + S)``,
    and CSR and dense rows sum theirs in another order.  The difference then held ``-C_i x_i x_i^T``,
    a Hessian that was not positive semidefinite (-2.8 on w8a with an L1 penalty)."""
    from ...kernels.features import spec_width

    X = X.tocsr() if sp.issparse(X) else X
    n = X.shape[0]
    width = (X.shape[1] if feature_map is None else spec_width(feature_map)) + 1
    single = (
        HESSIAN_IN_DATA_PRECISION and feature_map is None and not sp.issparse(X) and X.dtype == np.float32
        and loss_by_code(loss).piecewise_quadratic
    )  # fmt: skip
    sums = Sums.zeros(1, width)
    sums.rows = n
    step = chunk_rows(width)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        Xa = augmented_rows(X, lo, hi, bias, feature_map)
        s = np.asarray(shortfall[lo:hi], dtype=np.float64)
        _add_rows_at(sums, 0, Xa, y[lo:hi], cost[lo:hi], s, loss, True, single)
    return sums


def csr_block_sums(X, Y, cost, W, S, bias, loss, where=None, hessian=True, shortfall=None):
    """:func:`block_sums` of CSR rows (no feature map): a chunk of :data:`CHUNK_BYTES` at a time, in
    place (:func:`~dask_streamsvm.kernels.newton.csr_newton_sums`: the margins, the sums and the
    Hessian's nonzero pairs in one pass), or, for narrow chunks at least :data:`DENSE_FILL` full,
    made dense and summed by :func:`dense_block_sums` (whose Hessian is a BLAS call)."""
    k, width = W.shape
    if X.shape[1] + 1 != width:
        raise ValueError(f"rows of shape {X.shape} for points of width {width}: expected {width - 1} columns")
    indptr, indices, data = as_kernel_rows(X)
    sums = Sums.zeros(k, width, hessian)
    n = sums.rows = X.shape[0]
    Y, cost = (np.ascontiguousarray(a, dtype=np.float64) for a in (Y, cost))
    W, S = (np.ascontiguousarray(a, dtype=np.float64) for a in (W, S))
    steps = trial_steps(loss)
    parts = (sums.loss, sums.alpha, sums.v, sums.active, sums.trial)
    packed = np.zeros((k, width * (width + 1) // 2) if hessian else (0, 0))  # lower triangles, by rows
    narrow = X.shape[1] < DENSE_CHUNK_WIDTH
    step = chunk_rows(width)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        if where is not None and (reason := too_large(X[lo:hi], bias, augmented=False)) is not None:
            raise BeyondPrimal(where + reason)
        if narrow and indptr[hi] - indptr[lo] >= DENSE_FILL * (hi - lo) * X.shape[1]:
            dense = augmented_rows(X, lo, hi, bias)[:, :-1]  # the rows dense: BLAS for their Hessian
            out = None if shortfall is None else shortfall[:, lo:hi]
            sums.add(
                dense_block_sums(dense, Y[:, lo:hi], cost[:, lo:hi], W, S, bias, loss, None, hessian, out)
            )
            sums.rows -= hi - lo  # counted once, above
            continue
        chunk, code = (indptr[lo : hi + 1], indices, data), int(loss)
        taken = np.empty((k, hi - lo) if shortfall is not None else (k, 0))
        csr_newton_sums(
            chunk, Y[:, lo:hi], cost[:, lo:hi], W, S, float(bias), code, steps, parts, packed, taken
        )  # fmt: skip
        if shortfall is not None:
            shortfall[:, lo:hi] = taken
    lower = np.tril_indices(width)
    for c in range(k if hessian else 0):
        sums.hessian[c][lower] += packed[c]
        symmetrised(sums.hessian[c])
    return sums


def dense_block_sums(X, Y, cost, W, S, bias, loss, where=None, hessian=True, shortfall=None, exact=None):
    """:func:`block_sums` of dense rows (no feature map): one fused pass per chunk
    (:func:`~dask_streamsvm.kernels.newton.dense_newton_sums`) for every problem, the Hessian's
    sum by BLAS of the chunk's scaled active rows (float32 ones with
    :data:`HESSIAN_IN_DATA_PRECISION`), symmetrised once.  Rows that are float32 or float64 and
    C-ordered are read in place; others are converted a chunk at a time.  With ``exact`` (an
    :class:`ExactGram`, float32 rows), the active rows are written unscaled and their Hessian made
    exactly where they are integers (:func:`exact_gram`)."""
    X = np.asarray(X)
    k, width = W.shape
    if X.ndim != 2 or X.shape[1] + 1 != width:
        raise ValueError(f"rows of shape {X.shape} for points of width {width}: expected {width - 1} columns")
    sums = Sums.zeros(k, width, hessian)
    n = sums.rows = X.shape[0]
    if n == 0 or k == 0:
        return sums
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    Y, cost = (np.ascontiguousarray(a, dtype=np.float64) for a in (Y, cost))
    W, S = (np.ascontiguousarray(a, dtype=np.float64) for a in (W, S))
    step = min(chunk_rows(width * k), n)  # the scaled rows of every problem: CHUNK_BYTES in all
    # A smooth loss's reads certify their step's dual point by the Hessian's product (newton.step_dual):
    # its sum stays float64, as every sum a certificate takes.
    single = HESSIAN_IN_DATA_PRECISION and dtype == np.float32 and loss_by_code(loss).piecewise_quadratic
    steps = trial_steps(loss)
    # the scaled active rows of a chunk, for the Hessian's product (none without the Hessian): float64
    # ones in the thread's scratch (hessian_rows)
    shape = (k, step if hessian else 0, width)
    unscaled = exact is not None and exact.on and hessian and not single and dtype == np.float32
    if unscaled:  # the active rows as they are, float32, each one's D_ii beside it (ExactGram)
        rows, weights = hessian_rows(shape, np.float32), np.empty((k, step))
    else:
        rows = np.empty(shape, dtype=np.float32) if single else hessian_rows(shape)
        weights = np.empty((k, 0))
    filled = np.zeros(k, dtype=np.int64)
    top = np.zeros(width - 1 if where is not None else 0)
    parts = (sums.loss, sums.alpha, sums.v, sums.active, sums.trial)
    for lo in range(0, n, step):
        part = np.ascontiguousarray(X[lo : lo + step], dtype=dtype)
        top[:] = 0.0
        taken = np.empty((k, part.shape[0]) if shortfall is not None else (k, 0))
        dense_newton_sums(
            part, Y[:, lo : lo + step], cost[:, lo : lo + step], W, S, float(bias), int(loss), steps, parts,
            (rows, filled, weights), top, taken,
        )  # fmt: skip
        if shortfall is not None:
            shortfall[:, lo : lo + part.shape[0]] = taken
        if where is not None and (reason := value_reason(np.append(top, abs(float(bias))), bias, False)):
            raise BeyondPrimal(where + reason)
        for c in range(k):
            if hessian and filled[c] and unscaled:
                exact.add(rows[c, : filled[c]], weights[c, : filled[c]], bias, sums.hessian[c])
            elif hessian and filled[c]:
                add_gram(rows[c, : filled[c]], sums.hessian[c])
    for c in range(k if hessian else 0):
        symmetrised(sums.hessian[c])
    return sums


class ExactGram:
    """The choice, for one fit's in-memory float32 rows, of the Hessian made exactly in float32 where
    they are integers (:data:`EXACT_SUM`): ``on`` until a chunk's active rows show a value that is
    not an integer or beyond the bound, or weights that differ (then that chunk's rows are scaled in
    float64, as every chunk's are without it, and ``on`` stays False: one chunk pays the check).
    ``exact``, ``scaled``: the chunks made each way."""

    def __init__(self):
        self.on = True
        self.exact = self.scaled = 0

    @classmethod
    def of(cls, X):
        """One for the dense rows ``X``, or None: not float32, or their first :data:`EXACT_PROBE`
        rows have a value that is not an integer or is beyond the bound (float rows pay nothing)."""
        if X.dtype != np.float32 or X.ndim != 2:
            return None
        return cls() if _exact_top(np.ascontiguousarray(X[:EXACT_PROBE])) is not None else None

    def add(self, rows, weights, bias, hessian):
        """``hessian += sum_i weights_i rows_i rows_i^T`` of a chunk's unscaled active ``rows``
        (float32, C-ordered, the bias in their last column, :func:`~...kernels.newton.dense_newton_sums`)."""
        top = _exact_top(rows)
        if top is not None and float(bias).is_integer() and weights.min() == weights.max():
            hessian += float(weights[0]) * exact_gram(rows, top)
            self.exact += 1
            return
        self.on = False  # not integers (or not one weight): this chunk scaled in float64, as before
        self.scaled += 1
        scaled = hessian_rows(rows.shape)
        roots = np.sqrt(weights)
        np.multiply(rows[:, :-1], roots[:, None], out=scaled[:, :-1])
        np.multiply(roots, float(bias), out=scaled[:, -1])  # the bias as given, not its float32
        add_gram(scaled, hessian)


def _exact_top(rows):
    """The largest ``|value|`` of C-ordered float32 ``rows`` where every value is an integer and
    :data:`EXACT_MIN_ROWS` rows of that magnitude have products within :data:`EXACT_SUM`; else None."""
    values = rows.reshape(-1)
    largest, odd = integer_gauge(values, values.view(np.int32))
    top = float(np.int32(largest).view(np.float32))
    return top if odd == 0 and top * top * EXACT_MIN_ROWS <= EXACT_SUM else None


def exact_gram(rows, top):
    """``rows^T rows`` (float64) of float32 rows whose values are integers of magnitude at most
    ``top``, exactly: float32 products of ``EXACT_SUM / top^2`` rows at a time (each partial sum an
    integer within float32's significand), added in float64 (:data:`EXACT_SUM`)."""
    n, width = rows.shape
    step = int(min(n, EXACT_SUM // max(top * top, 1.0)))
    whole = n // step * step
    stack = rows[:whole].reshape(-1, step, width)
    gram = np.matmul(stack.transpose(0, 2, 1), stack).sum(axis=0, dtype=np.float64)
    if whole < n:
        rest = rows[whole:]
        gram += rest.T @ rest
    return gram


def add_gram(rows, hessian):
    """``hessian``'s lower triangle ``+= rows^T rows`` (the whole square: the caller symmetrises from
    the lower); float32 rows' Gram matrix is made in float32.  By GEMM, not SYRK: OpenBLAS's GEMM of
    a chunk's few dozen columns is faster, though it makes both triangles (one thread, 34,000 x
    61 rows: float64 7.3 ms against 12.8 ms, float32 5.4 against 6.3; on 2 threads 9.7 against
    13.5 and 6.7 against 8.9)."""
    if rows.shape[0] == 0:
        return
    if rows.dtype == np.float32:
        with np.errstate(over="ignore"):  # past float32's range: made again below
            single = rows.T @ rows
        if np.isfinite(single).all():
            hessian += single
            return
        rows = rows.astype(np.float64)  # past float32's range: the chunk's Gram matrix in float64
    hessian += rows.T @ rows


def rows_nbytes(X):
    """Bytes of rows held: a dense array's, or a CSR matrix's values and indices."""
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else X.nbytes)


def squares_product(X, weight):
    """``sum_i weight_i (x_i * x_i)`` (each row's values squared; ``weight`` ``(n,)`` or ``(n, K)``:
    a ``(d,)`` or ``(d, K)`` array), the Hessian diagonal's sum, :data:`CHUNK_BYTES` of values at a
    time: dense rows squared into one buffer, CSR rows' values squared beside their own column
    indices.  Never the squares of every row: those are a copy of the rows, whose page faults cost
    more than the product (1.7 s for 200,000 x 500 float64 rows, against 0.1 s for the product;
    ``X.multiply(X)`` of 6M values 0.15 s against 0.012 s)."""
    n, d = X.shape
    sparse = sp.issparse(X)
    values = X.nnz if sparse else n * d
    step = max(1, int((CHUNK_BYTES // 8) * n / max(1, values)))  # rows of CHUNK_BYTES of values
    total = np.zeros((d,) + np.shape(weight)[1:])
    if sparse:
        X = X.tocsr()
        indptr = np.asarray(X.indptr)
    else:
        buffer = np.empty((min(step, n), d))
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        if sparse:
            a, b = int(indptr[lo]), int(indptr[hi])
            parts = (np.square(X.data[a:b], dtype=np.float64), X.indices[a:b], indptr[lo : hi + 1] - a)
            squares = sp.csr_matrix(parts, shape=(hi - lo, d))
        else:
            squares = np.square(X[lo:hi], out=buffer[: hi - lo], dtype=np.float64)
            if total.ndim == 2:  # (W^T S)^T: OpenBLAS's faster layout (transposed_product)
                total += transposed_product(weight[lo:hi], squares)
                continue
        total += np.asarray(squares.T @ weight[lo:hi])
    return total


def transposed_product(A, B):
    """``B^T A``, a ``(d, m)`` array, of dense ``A`` ``(n, m)`` (few columns) and ``B`` ``(n, d)``,
    made as ``(A^T B)^T``: the same sums, which OpenBLAS makes faster as a short wide product.  On
    one thread, 200,000 x 500 rows ``B`` and 10 columns ``A``: ``A.T @ B`` 0.097 s against ``B.T @
    A`` 0.193 s; a Hessian product's chunks (:func:`weighted_product`, its scores made as ``(V^T
    B^T)^T`` too) 0.151 s against 0.240 s; the squares' sum (:func:`squares_product`) 0.093 s
    against 0.127 s."""
    return (A.T @ B).T


def row_runs(n, step, threads):
    """``[(lo, hi), ...]``: the rows ``0 .. n`` cut into contiguous runs of whole chunks of ``step``
    rows (the last chunk short), :data:`ROW_RUNS` runs a row thread (fewer where there are fewer
    chunks), every row in exactly one run, in order."""
    chunks = -(-n // step)
    runs = max(1, min(chunks, ROW_RUNS * threads))
    bounds = np.linspace(0, chunks, runs + 1).astype(int) * step
    return [(int(a), int(min(b, n))) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _added_in_order(pool, threads, fn, runs, add):
    """``add``-ed ``fn(run)`` of every run, in the runs' order, on ``pool``'s ``threads``: at most
    :data:`RUNS_IN_FLIGHT` runs a thread in flight or waiting to be added."""
    pending, total = collections.deque(), None
    for bounds in runs:
        pending.append(pool.submit(fn, bounds))
        if len(pending) < RUNS_IN_FLIGHT * threads:
            continue
        part = pending.popleft().result()
        total = part if total is None else add(total, part)
    while pending:
        part = pending.popleft().result()
        total = part if total is None else add(total, part)
    return total


def _added_arrays(total, part):
    return tuple(a + b for a, b in zip(total, part, strict=True))


def chunk_sums(n, step, chunk_sum):
    """The sum over the rows ``0 .. n`` of ``chunk_sum(rows)`` (a tuple of arrays) for every slice
    ``rows`` of ``step`` rows, on the fit's row threads (:func:`~..plan.threads.row_threads`): each
    thread adds up its runs of chunks (:func:`row_runs`), and the runs' sums are added in order, so
    that the result does not depend on which thread ran first (on one row thread: the chunks' sums
    in order, in the calling thread)."""
    pool, threads = row_pool()

    def run(bounds):
        total = None
        for lo in range(bounds[0], bounds[1], step):
            part = chunk_sum(slice(lo, min(lo + step, bounds[1])))
            total = part if total is None else _added_arrays(total, part)
        return total

    if pool is None or n <= step:
        return run((0, n))
    return _added_in_order(pool, threads, run, row_runs(n, step, threads), _added_arrays)


def run_sums(n, step, run_sum, add):
    """The sums of the rows ``0 .. n`` of an in-memory fit: ``run_sum((lo, hi))`` of each run of whole
    chunks of ``step`` rows (:func:`row_runs`) on the fit's row threads, the runs' sums ``add``-ed in
    order (``add(total, part)`` returns the total); on one row thread ``run_sum((0, n))``."""
    pool, threads = row_pool()
    if pool is None or n <= step:
        return run_sum((0, n))
    return _added_in_order(pool, threads, run_sum, row_runs(n, step, threads), add)


def memory_block_sums(X, Y, cost, W, S, bias, loss, feature_map=None, where=None):
    """:func:`block_sums` of in-memory rows, dense rows without a feature map split between the
    fit's row threads (:func:`run_sums` of :func:`chunk_rows`' chunks)."""
    if sp.issparse(X) or feature_map is not None:
        return block_sums(X, Y, cost, W, S, bias, loss, feature_map, where)

    def run_sum(bounds):
        lo, hi = bounds
        return block_sums(X[lo:hi], Y[:, lo:hi], cost[:, lo:hi], W, S, bias, loss, None, where)

    return run_sums(X.shape[0], chunk_rows(W.shape[1] * W.shape[0]), run_sum, Sums.add)


def weighted_product(X, V, offset, weigh, scores=None):
    """``(X^T A, sum_i A_i)`` of dense rows ``X``, where ``A = weigh(rows, X[rows] V + offset)`` (the
    rows' weights from their scores: ``V`` ``(d,)`` or ``(d, m)``), :data:`PRODUCT_CHUNK_BYTES` of
    rows at a time, so that each chunk is read from memory once for both products (the second
    reads it from the cache): a Hessian product's ``X^T D X V``, whose two passes over every row
    are bound by the memory's speed, not the arithmetic's.  ``scores``: an array of ``X V``'s
    shape that receives the rows' scores ``X V + offset`` (else they are not kept).  The chunks
    run on the fit's row threads (:func:`chunk_sums`)."""
    n, d = X.shape
    V = np.ascontiguousarray(V, dtype=np.float64)
    wide = V.ndim == 2  # several directions: both products as short wide ones (transposed_product)
    Vt = np.ascontiguousarray(V.T) if wide else None

    def chunk_sum(rows):
        chunk = X[rows]
        Z = (Vt @ chunk.T).T if wide else chunk @ V
        Z += offset
        if scores is not None:
            scores[rows] = Z
        A = weigh(rows, Z)
        return (transposed_product(A, chunk) if wide else chunk.T @ A), A.sum(axis=0)

    if n == 0:
        return np.zeros((d,) + V.shape[1:]), np.zeros(V.shape[1:])
    return chunk_sums(n, product_rows(d), chunk_sum)


def rows_product(A, X):
    """``A^T X`` (``(m, d)``) of dense rows ``X`` ``(n, d)`` and weights ``A`` ``(n, m)``, made
    :data:`PRODUCT_CHUNK_BYTES` of rows at a time on the fit's row threads (:func:`chunk_sums`)."""
    n, d = X.shape
    if n == 0:
        return np.zeros((A.shape[1], d))
    return chunk_sums(n, product_rows(d), lambda rows: (A[rows].T @ X[rows],))[0]


_scratch = threading.local()  # this thread's scratch arrays by name (scratch)


def scratch(name, shape, dtype=np.float64):
    """An array of ``shape`` and ``dtype`` (its values left as they were) from this thread's scratch of
    that ``name``, grown as needed and kept for the thread's next call: a chunk's temporary without a
    mapping of its own.  Where the reader runs, glibc maps every allocation from
    :data:`~..data.malloc.MMAP_THRESHOLD` on afresh (1 MiB until 2026-12-03), and gives a heap's free
    top back above its trim threshold (128 KiB until 2026-12-04): a new array's first touch faults its
    pages in.  At 1 MiB the
    softmax Hessian's scaled rows took 1.48-1.50 s per million rows of 60 features and three classes
    there, 0.68-0.70 s where their memory was reused (one thread).  The caller uses the array before it
    asks for the same name again."""
    size = int(np.prod(shape))
    kept = getattr(_scratch, "arrays", None)
    if kept is None:
        kept = _scratch.arrays = {}
    key = (name, np.dtype(dtype).str)
    array = kept.get(key)
    if array is None or array.size < size:
        array = kept[key] = np.empty(size, dtype=dtype)
    return array[:size].reshape(shape)


def hessian_rows(shape, dtype=np.float64):
    """An array of ``shape`` (float64, or ``dtype``: float32 unscaled rows, :class:`ExactGram`) for a
    chunk's scaled active rows, whose Gram matrix is the
    Hessian's sum (:func:`dense_block_sums`, :class:`~.carried.CarriedHessian`): the thread's
    :func:`scratch`.  As new arrays, 16 MiB of them each chunk (each partition on a streamed read)
    were pages faulted in afresh: the in-memory squared hinge's read that forms the Hessian of the
    2M x 60 raw set took 0.46-0.49 s where 0.53-0.69 s, with 150-850 page faults where about 31,000
    (2 cores, 2026-12-04, load 0.4-1; docs/benchmarks.md).  Beyond :data:`CHUNK_BYTES` (many
    problems of wide rows: a chunk is at least 256 rows of each) the array is a new one, so that a
    thread never keeps more than that."""
    if np.dtype(dtype).itemsize * int(np.prod(shape)) > CHUNK_BYTES:
        return np.empty(shape, dtype=dtype)
    return scratch("hessian rows", shape, dtype)


def product_rows(d):
    """Dense rows ``d`` wide a product takes at a time: :data:`PRODUCT_CHUNK_BYTES` of float64."""
    return max(1, PRODUCT_CHUNK_BYTES // (8 * max(1, d)))


class ProductRead:
    """``read`` for :func:`~.newton.solve_primal` on in-memory rows that never forms the Hessian: each
    evaluated point's sums, and per problem the product ``p -> H p`` and ``diag(H)`` on its active
    rows, for the Newton solver's conjugate gradient (a truncated Newton step, as LIBLINEAR's primal solver
    takes on wide data).  Holds the rows once as float64 (a copy if they are not); a product
    costs one pass over the active rows, which are copied out when fewer than half are active.
    Values the solver cannot train on are refused here, before any read (:func:`too_large`).

    ``identity``: the weight of the Hessian's identity term in the products and the diagonal (1: the
    whole Hessian; 0: a cluster part's share of it, the identity added once at the tree's root,
    :mod:`~..cluster.products`)."""

    hessian_products = True

    def __init__(self, X, Y, cost, bias, loss, identity=1.0, spilled=False):
        if sp.issparse(X):
            X = X.tocsr() if X.dtype == np.float64 else sp.csr_matrix(X, dtype=np.float64)
        elif not spilled:
            X = np.ascontiguousarray(X, dtype=np.float64)
        if (reason := too_large(X, bias, augmented=False)) is not None:
            raise ValueError(reason)
        self.X, self.Y, self.cost, self.bias, self.loss = X, Y, cost, float(bias), int(loss)
        self.identity = float(identity)
        self.spilled = spilled  # the rows are a memory map: never copied whole (a cluster part's spill)
        self._columns = None  # the rows by columns, once asked for (:meth:`columns`)

    @property
    def nbytes(self):
        """Bytes of the rows, labels and costs held."""
        return rows_nbytes(self.X) + self.Y.nbytes + self.cost.nbytes

    def _dot(self, X, w):
        return np.asarray(X @ w[:-1]).ravel() + self.bias * w[-1]

    def _tdot(self, X, u):
        return np.append(np.asarray(X.T @ u).ravel(), self.bias * u.sum())

    def active_rows(self, active, weight):
        """``(rows, D_ii)`` of the Hessian's term at an evaluated point: the active rows, copied out
        when fewer than half are active (else every row, with its zero weights)."""
        rows = np.flatnonzero(active)
        if 2 * rows.shape[0] < self.X.shape[0] and not self.spilled:
            return self.X[rows], weight[rows]
        return self.X, weight

    def diagonal(self, X, d):
        """``diag(H)`` of the term ``identity I + sum_i d_i x_i x_i^T`` of the rows ``X``."""
        scale = np.append(np.ones(X.shape[1]), self.bias)
        return self.identity + np.append(squares_product(X, d), self.bias * d.sum()) * scale

    def product(self, X, d, p):
        """``(identity I + sum_i d_i x_i x_i^T) p`` over the rows ``X`` of weights ``d``, in one pass
        (CSR rows: :func:`~...kernels.newton.csr_hessian_product`; dense: :func:`weighted_product`)."""
        if sp.issparse(X):
            rows = (np.asarray(X.indptr), np.asarray(X.indices), np.asarray(X.data))
            return csr_hessian_product(rows, d, p, self.bias, self.identity, np.empty_like(p))
        total, summed = weighted_product(X, p[:-1], self.bias * p[-1], lambda rows, z: d[rows] * z)
        return self.identity * p + np.append(total, self.bias * summed)

    def evaluate(self, W, S, todo):
        """The :class:`Sums` of the points ``W + S`` of problems ``todo`` (no Hessian, no
        operators) and, per problem, its :meth:`active_rows`."""
        sums, terms_of, _ = self._evaluate(W, S, todo)
        return sums, terms_of

    def _evaluate(self, W, S, todo):
        """:meth:`evaluate`, and per problem every row's ``D_ii`` (0 off the active rows)."""
        k, D = W.shape
        sums = Sums(
            np.zeros(k), np.zeros(k), np.zeros((k, D)), None, np.zeros(k, dtype=np.int64),
            np.zeros((k, STEPS.shape[0])), rows=self.X.shape[0],
        )  # fmt: skip
        terms_of, weights = [], []
        steps = trial_steps(self.loss)
        for j, c in enumerate(todo):
            y, C = self.Y[c], self.cost[c]
            z0 = self._dot(self.X, W[j])
            trial = bool(S[j].any())
            dz = self._dot(self.X, S[j]) if trial else None
            z = z0 + dz if trial else z0
            s = 1.0 - y * z
            terms, alpha, weight = newton_sums(self.loss, C, s)
            active = weight > 0.0
            sums.loss[j] = float(C @ terms)
            sums.alpha[j] = float(dual_terms(self.loss, C, s, alpha).sum())
            sums.v[j] = self._tdot(self.X, alpha * y)
            sums.active[j] = int(active.sum())
            if trial:
                m0, dm = y * z0, y * dz
                lengths = np.concatenate([steps, LONGER]) if steps.size else steps
                losses = [float(C @ trial_losses(self.loss, 1.0 - m0 - t * dm)) for t in lengths]
                sums.trial[j, : steps.size] = losses[: steps.size]
                if steps.size:  # a piecewise-quadratic loss: the longer lengths too
                    if sums.longer is None:
                        sums.longer = np.full((k, LONGER.shape[0]), np.nan)
                    sums.longer[j] = losses[steps.size :]
            terms_of.append(self.active_rows(active, weight))
            weights.append(weight)
        return sums, terms_of, weights

    def columns_gram(self, X, d, columns):
        """The Hessian ``identity I + sum_i d_i x_i x_i^T`` of the rows ``X`` on the coordinates
        ``columns`` only (sorted indices, the bias's last): ``H_FF``, made from those columns of
        the rows (dense rows: scaled by ``sqrt(d)`` in the one copy made of them), never the whole
        Hessian.  The bias's row is ``bias X_F^T d``, summed, not a column of the rows."""
        columns = np.asarray(columns)
        features = columns[columns < X.shape[1]]
        m = features.size
        H = np.empty((columns.size, columns.size))
        if sp.issparse(X):
            rows = X if m == X.shape[1] else X[:, features]
            H[:m, :m] = gram(rows, d)
            with_bias = np.asarray(rows.T @ d).ravel()
        else:
            root = np.sqrt(d)
            rows = np.take(X, features, axis=1)
            rows *= root[:, None]
            block = np.zeros((m, m))
            add_gram(rows, block)
            H[:m, :m] = symmetrised(block)
            with_bias = rows.T @ root  # X_F^T d
        if m < columns.size:  # the bias's coordinate, last
            H[m, :m] = H[:m, m] = self.bias * with_bias
            H[m, m] = self.bias * self.bias * float(d.sum())
        H[np.diag_indices_from(H)] += self.identity
        return H

    def __call__(self, W, S, todo):
        sums, terms_of, weights = self._evaluate(W, S, todo)
        sums.operators = [ActiveTerms(self, X, d, w) for (X, d), w in zip(terms_of, weights, strict=True)]
        return sums

    def columns(self):
        """The CSC triplet of every row with its bias column (:func:`kernel_columns`), made once."""
        if self._columns is None:
            self._columns = kernel_columns(self.X, self.bias)
        return self._columns


def kernel_columns(X, bias):
    """The CSC triplet ``(indptr, indices, data)`` of the rows ``X`` with their bias column
    (:func:`~.l1.column_layout`), its indices int64, as the kernels read it."""
    layout = column_layout(X, bias)
    return (layout.indptr.astype(np.int64), layout.indices.astype(np.int64), layout.data)


class ActiveTerms:
    """The Hessian at an evaluated point of a :class:`ProductRead`, held as its active rows ``X`` and
    their weights ``d``: its products ``product(p) = H p``, its ``diagonal`` (made when first asked
    for), and ``gram(columns)``, its block ``H_FF`` on the coordinates ``columns`` (a sparse
    penalty's free weights, :mod:`.penalties`)."""

    def __init__(self, read, X, d, weight=None):
        self.read, self.X, self.d = read, X, d
        self.weight = weight  # every row's D_ii (0 off the active rows), for columns()
        self._diagonal = None
        self._columns = None  # the active rows' columns (columns())

    def product(self, p):
        return self.read.product(self.X, self.d, p)

    @property
    def diagonal(self):
        if self._diagonal is None:
            self._diagonal = self.read.diagonal(self.X, self.d)
        return self._diagonal

    def gram(self, columns):
        return self.read.columns_gram(self.X, self.d, columns)

    def columns(self):
        """``(cols, D)``: the Hessian ``identity I + X~^T diag(D) X~`` as columns
        (:func:`~...kernels.coordinate.columns_model_descent`): where the active rows were copied out
        (fewer than half active, :meth:`ProductRead.active_rows`), their columns with the bias's (a
        CSC triplet, :func:`kernel_columns`, made when first asked for) and their ``D_ii``; else every
        row's columns (made once a fit) and every row's ``D_ii``, 0 off the active rows.  The model's
        sweeps then visit only the active rows' values: on 20,000 x 2,000 dense rows with 2,000
        active, a tenth of every row's (LinearSVC(penalty="l1") at C = 1 there, 40 steps: 35.9 s
        before, 18.7 s; on bench_l1_svc.py's text rows at C = 10, 15.8 s before, 10.4 s; the same
        steps and values)."""
        if self.X is self.read.X:
            return self.read.columns(), self.weight
        if self._columns is None:
            self._columns = kernel_columns(self.X, self.read.bias)
        return self._columns, self.d

    def loss_product(self, p):
        """``H_loss p``: the rows' term of the product, without the identity's."""
        return self.product(p) - self.read.identity * p
