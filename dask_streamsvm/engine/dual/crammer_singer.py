"""The in-memory schedule for the Crammer-Singer multi-class SVM.

Every row is in memory; :func:`~dask_streamsvm.kernels.crammer_singer.cs_sweep`
runs pass after pass (a fresh random order each time), and the fit stops on
the exact relative duality gap of the Crammer-Singer primal and dual, as
the binary schedule does.  A certificate costs about one pass (every row's
``k`` scores), so it is computed after the first pass, whenever the largest
violation ``maxG - minG`` of a pass falls below a tolerance that starts at
LIBLINEAR's 0.1 and is divided by ten each time the gap is still above
``tol`` there, every tenth pass and on the last allowed pass.
"""

import time

import numpy as np

from ...kernels.crammer_singer import cs_loss_sum, cs_sweep
from ...kernels.dcd import row_sqnorms
from ...kernels.objective import add_weighted_rows
from ...kernels.rng import make_state
from ..plan.certificate import Certificate
from ..plan.result import FitResult

_VIOLATION_START = 0.1
_VIOLATION_FLOOR = 1e-14
_CERTIFY_EVERY = 10


def cs_tables(y_index, cost, k):
    """``Y`` (+1 for the true class, else -1) and ``U`` (``C_i`` for every class), ``(k, n)``."""
    Y = np.where(np.arange(k)[:, None] == y_index[None, :], 1.0, -1.0)
    U = np.repeat(np.asarray(cost, dtype=np.float64)[None, :], k, axis=0)
    return Y, U


def cs_dual(A, W):
    """Dual (maximisation form) of the Crammer-Singer problem from the stored ``A``."""
    return 0.5 * float(A.sum()) - 0.5 * float(np.einsum("ij,ij->", W, W))


def cs_certificate(X, y_index, cost, A, W, bias):
    primal = 0.5 * float(np.einsum("ij,ij->", W, W)) + cs_loss_sum(X, y_index, cost, W, bias)
    return Certificate(primal=primal, dual=cs_dual(A, W))


def cs_exact_w(X, Y, A, bias, n_features):
    """``w_m = sum_i A[m, i] Y[m, i] [x_i, b]`` rebuilt from scratch."""
    W = np.zeros((Y.shape[0], n_features + 1))
    for m in range(Y.shape[0]):
        add_weighted_rows(X, Y[m], A[m], W[m], bias)
    return W


def solve_crammer_singer(
    X, y_index, cost, *, k, n_features, bias, tol, max_iter, seed, clock_start=None, on_pass=None
):
    """Solve the Crammer-Singer dual on in-memory rows until the relative gap is <= ``tol``.

    Parameters
    ----------
    X : a row layout of ``kernels.rows`` (dense array or CSR tuple)
    y_index : int64 array, the class index of every row
    cost : float64 array, ``C_i`` of every row (0 drops the row)
    k : int, number of classes

    Returns a :class:`~..plan.result.FitResult`: ``W`` ``(k, n_features + 1)``, the
    joint problem's one certificate, a bool ``converged``.
    ``on_pass(record, W)`` is called after every pass; a true return value
    stops the solve at the current state.  Passes without a certificate
    record ``primal`` and ``gap`` as NaN.
    """
    clock = time.perf_counter
    clock_start = clock() if clock_start is None else clock_start
    Y, U = cs_tables(y_index, cost, k)
    sq = np.empty(y_index.shape[0])
    row_sqnorms(X, bias, sq)
    QD = np.repeat(sq[None, :], k, axis=0)
    A = np.zeros((k, y_index.shape[0]))
    W = np.zeros((k, n_features + 1))
    index = np.flatnonzero(cost > 0.0).astype(np.int64)
    shrinkable = np.zeros(index.shape[0], dtype=np.int64)
    rng_state = make_state(seed)
    threshold = _VIOLATION_START
    history = []
    passes = 0
    converged = stopped = False
    cert = None
    while passes < max_iter and not converged and not stopped:
        worst = cs_sweep(X, Y, U, QD, A, W, bias, index, index.shape[0], np.inf, shrinkable, rng_state)
        passes += 1
        due = passes == 1 or worst <= threshold or passes % _CERTIFY_EVERY == 0 or passes == max_iter
        if due:
            cert = cs_certificate(X, y_index, cost, A, W, bias)
            if cert.relative_gap <= tol:
                W = cs_exact_w(X, Y, A, bias, n_features)  # no drift in the final certificate
                cert = cs_certificate(X, y_index, cost, A, W, bias)
                converged = cert.relative_gap <= tol
            if not converged and worst <= threshold:
                threshold = max(0.1 * threshold, _VIOLATION_FLOOR)
        record = {
            "class": None,
            "pass": passes,
            "seconds": clock() - clock_start,
            "primal": cert.primal if due else np.nan,
            "dual": cert.dual if due else cs_dual(A, W),
            "gap": cert.relative_gap if due else np.nan,
            "active": int(index.shape[0]),
            "violation": float(worst),
        }
        history.append(record)
        if on_pass is not None:
            stopped = bool(on_pass(record, W))
    if not converged and passes > 0:
        W = cs_exact_w(X, Y, A, bias, n_features)
        cert = cs_certificate(X, y_index, cost, A, W, bias)
    return FitResult(W=W, certificates=[cert], passes=passes, converged=converged, history=history)
