"""The primal Newton solver's sums over dense or CSR rows, one fused pass per chunk of rows.

At a point ``w + s`` of each problem ``c`` (``w``, ``s``: rows of ``W``, ``S``,
the bias ``b`` as the last feature), a row ``x_i`` of label ``y_i`` and cost
``C_i`` has the margin's shortfall ``xi_i = 1 - y_i (w + s) . [x_i, b]`` and
the loss's Newton terms ``(loss_i, alpha_i, D_ii)``
(:func:`~.losses.newton_terms`; Keerthi and DeCoste 2005).  One pass over
the rows adds, per problem::

    loss    sum_i C_i loss_i
    alpha   sum_i alpha_i                       (the dual's sum: :func:`~.losses.newton_dual_term`)
    v       sum_i alpha_i y_i [x_i, b]          (the gradient is w - v)
    active  #{i : D_ii > 0}
    trial   sum_i C_i loss(1 - m0_i - t dm_i)   for t in steps (m0 at w, dm along s)

and writes ``sqrt(D_ii) [x_i, b]`` of the active rows into a buffer, whose
Gram matrix (``sum_i D_ii x_i x_i^T``, the generalised Hessian's sum) the
engine makes by BLAS (or ``[x_i, b]`` and ``D_ii`` apart, for float32 rows of
integers, whose Gram matrix is then exact: :func:`integer_gauge`); CSR rows
(:func:`csr_newton_sums`) add their Gram matrix's nonzero pairs themselves.
The rows are read in their own precision, float32 or float64: every product
and sum is float64, and the certificate's sums (``loss``, ``alpha``, ``v``,
``trial``) add runs of :data:`RUN` rows apart before adding the runs.  Measured
against exactly rounded sums on 100k float32 rows (unit and 0..255 scale):
``v`` and ``trial`` within 4e-16 and 8e-16 of their terms' absolute sum (NumPy
and BLAS over 16 MB chunks: 2e-15 to 6e-15), ``loss`` and ``alpha`` within
4e-16 (NumPy's pairwise sums: 2e-16).
"""

import numpy as np
from numba import njit

from .losses import add_trial_losses, newton_dual_term, newton_terms

# Rows whose sums are added apart (two-level summation: the rounding grows with RUN + rows / RUN).
RUN = 256
# Indices cast to unsigned: numba then skips the negative-index wraparound it emits on every
# access (:mod:`.rows`); CSR offsets and columns are non-negative by construction.
_u = np.uint64

# Reassociation lets LLVM vectorise the dot product's reduction; no NaN or infinity flag (a NaN
# row still gives a NaN margin, which the certificate refuses).  An arithmetic leaf here; the band's
# row kernels (:mod:`.band`) take it too: a margin's rounding is within (D + 4) epsilons of
# sum_j |x_j w_j| in any order of its sum, as the band's bound counts it, and without it each row's
# sum waited on its last addition (2M x 60 float32 rows, one thread: the smoothed margins
# 0.217 s where 0.031 s, the band's piece_rows 0.238 where 0.091, 2026-12-04).
DOT_FLAGS = {"reassoc", "contract"}


@njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def row_dot(X, i, W, c):
    """``x_i . W[c, :d]`` in float64 (``d`` the row's width: ``W[c, d]`` is the bias's weight)."""
    acc = 0.0
    for j in range(X.shape[1]):
        acc += X[i, j] * W[c, j]
    return acc


@njit(cache=True, nogil=True, fastmath=DOT_FLAGS)
def row_dots(X, i, W, S, c):
    """``(x_i . W[c, :d], x_i . S[c, :d])`` in float64, in one pass over the row (:func:`row_dot`'s
    rounding each): a read's sums with trial losses 47.1 ns a row where two passes took 52.8 (100,000
    x 60 float32 rows of 0..255, one thread, 2026-12-05)."""
    a = 0.0
    b = 0.0
    for j in range(X.shape[1]):
        x = X[i, j]
        a += x * W[c, j]
        b += x * S[c, j]
    return a, b


@njit(cache=True, nogil=True)
def _trial_point(S, c):
    """Whether ``S[c]`` is a direction (not all zero): the trial losses are summed only then."""
    for j in range(S.shape[1]):
        if S[c, j] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def _column_max_abs(X, i, top):
    """``top[j] = max(top[j], |x_ij|)``, a NaN kept once seen (as NumPy's ``max`` keeps it)."""
    for j in range(X.shape[1]):
        a = abs(X[i, j])
        if a > top[j] or a != a:
            top[j] = a


@njit(cache=True, nogil=True)
def sparse_gram(indptr, indices, data, weight, out):
    """``out``'s lower triangle ``+= sum_i weight_i x_i x_i^T`` over the CSR rows ``(indptr, indices,
    data)``: each row's nonzeros times themselves, ``sum_i nnz_i^2 / 2`` multiply-adds in all (the
    Hessian's sum of sparse rows, in float64; duplicate column entries add up as in a product)."""
    for i in range(indptr.shape[0] - 1):
        w = weight[i]
        if w == 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        for a in range(lo, hi):
            ja = indices[a]
            va = w * data[a]
            for b in range(lo, hi):
                jb = indices[b]
                if jb <= ja:  # each pair of columns once below the diagonal, every pair on it
                    out[ja, jb] += va * data[b]
    return out


@njit(cache=True, nogil=True)
def dense_newton_sums(X, Y, cost, W, S, bias, code, steps, sums, scaled, top, shortfalls):
    """Adds the Newton sums of the dense rows ``X`` (m, d) of every problem to ``sums``.

    ``Y``, ``cost`` (k, m): each problem's labels and ``C_i``; ``W``, ``S`` (k, d + 1): the points
    ``W + S`` and the trial directions (a zero row of ``S``: no trial losses); ``bias``: the last
    feature's value; ``code``: the loss (:mod:`.losses`); ``steps``: the trial step lengths.
    ``sums`` is ``(loss, alpha, v, active, trial)`` of shapes (k,), (k,), (k, d + 1), (k,) int64
    and (k, len(steps)), added to (module docstring).  ``scaled`` is ``(rows, filled, weights)``:
    ``rows`` (k, >= m, d + 1), float32 or float64, whose first ``filled[c]`` rows of problem ``c``
    become ``sqrt(D_ii) [x_i, bias]`` of the active rows, in order (``rows`` of shape (k, 0, d + 1):
    none is written, and ``filled`` still counts them); with ``weights`` (k, >= m) float64, not
    (k, 0), they become ``[x_i, bias]`` unscaled and each one's ``D_ii`` goes into ``weights[c]``
    (float32 ``rows`` of integers: the engine makes their Gram matrix exactly, :func:`integer_gauge`).
    ``top`` (d,) or empty: each column's largest ``|x_ij|`` is folded into it (the first read's
    value check).  ``shortfalls`` (k, m) or (k, 0): each row's ``xi_i`` as these sums took it is
    written into it (a band's rows keep them: the rows the read counted active, whatever another
    sum's rounding).  Returns the number of rows summed.
    """
    loss, alpha, v, active, trial = sums
    rows, filled, weights = scaled
    unscaled = weights.shape[1] > 0
    m, d = X.shape
    scale_rows = rows.shape[1] > 0
    record = shortfalls.shape[1] > 0
    k = W.shape[0]
    n_steps = steps.shape[0]
    check = top.shape[0] > 0
    trials = np.zeros(k, dtype=np.bool_)
    for c in range(k):
        trials[c] = _trial_point(S, c)
        filled[c] = 0
    run_loss = np.zeros(k)
    run_alpha = np.zeros(k)
    run_v = np.zeros((k, d + 1))
    run_trial = np.zeros((k, n_steps))
    for i in range(m):
        if check:
            _column_max_abs(X, i, top)
        for c in range(k):
            y = Y[c, i]
            if trials[c]:
                z0, dz = row_dots(X, i, W, S, c)
                z0, dz = z0 + bias * W[c, d], dz + bias * S[c, d]
            else:
                z0, dz = row_dot(X, i, W, c) + bias * W[c, d], 0.0
            s = 1.0 - y * (z0 + dz)
            if record:
                shortfalls[c, i] = s
            terms, factor, weight = newton_terms(code, cost[c, i], s)
            run_loss[c] += cost[c, i] * terms
            run_alpha[c] += newton_dual_term(code, cost[c, i], s, factor)
            if factor != 0.0:
                a = factor * y
                for j in range(d):
                    run_v[c, j] += a * X[i, j]
                run_v[c, d] += a * bias
            if weight > 0.0:
                n = filled[c]
                if unscaled:
                    weights[c, n] = weight
                    for j in range(d):
                        rows[c, n, j] = X[i, j]
                    rows[c, n, d] = bias
                elif scale_rows:
                    root = np.sqrt(weight)
                    for j in range(d):
                        rows[c, n, j] = root * X[i, j]
                    rows[c, n, d] = root * bias
                filled[c] = n + 1
            if trials[c]:
                add_trial_losses(run_trial[c], cost[c, i], y * z0, y * dz, steps, code)
        if (i + 1) % RUN == 0 or i + 1 == m:
            for c in range(k):
                loss[c] += run_loss[c]
                alpha[c] += run_alpha[c]
                run_loss[c] = 0.0
                run_alpha[c] = 0.0
                for j in range(d + 1):
                    v[c, j] += run_v[c, j]
                    run_v[c, j] = 0.0
                for t in range(n_steps):
                    trial[c, t] += run_trial[c, t]
                    run_trial[c, t] = 0.0
    for c in range(k):
        active[c] += filled[c]
    return m


# Added to and taken from a float32 value, rounds it to an integer where its magnitude is below 2^22
# (:func:`integer_gauge`).
_ROUNDING = np.float32(1.5 * 2**23)


@njit(cache=True, nogil=True)
def integer_gauge(values, bits):
    """``(largest, odd)`` of float32 ``values`` (1-D, ``bits`` the same memory as int32): the bits of
    the largest ``|value|`` (as int32; view them as float32) and the count of values that are not
    integers, where every value is below 2^22 in magnitude (beyond it the count is meaningless, and
    the largest tells so).  One vectorised pass: the magnitude by the bits, as
    :func:`~.layout.largest_bits` takes it, and in the same pass the rounding of adding and taking
    ``1.5 * 2^23``, exact in float32 (3.4 MB of values in 1.1 ms)."""
    largest = np.int32(0)
    odd = np.int32(0)
    for i in range(values.shape[0]):
        x = values[i]
        odd += np.int32(((x + _ROUNDING) - _ROUNDING) != x)
        largest = max(largest, bits[i] & np.int32(0x7FFFFFFF))
    return largest, odd


@njit(cache=True, nogil=True)
def csr_newton_sums(X, Y, cost, W, S, bias, code, steps, sums, hessian, shortfalls):
    """:func:`dense_newton_sums` of CSR rows ``X = (indptr, indices, data)``: adds their Newton sums
    of every problem to ``sums`` (the same five arrays) and, when ``hessian`` is ``(k, (d + 1) (d +
    2) / 2)`` (not empty), each problem's ``sum_i D_ii [x_i, b] [x_i, b]^T`` to its lower triangle,
    packed by rows (entry ``(j, j')``, ``j' <= j``, at ``j (j + 1) / 2 + j'``: half the memory of the
    square, which keeps a few hundred columns' triangle in the cache the scattered additions hit):
    a row's nonzeros times themselves, its bias row and corner, with no copy of the rows (the
    sparse Hessian of :func:`sparse_gram`, fused with the read).  The rows' columns must be sorted
    and distinct (canonical CSR, as :func:`~dask_streamsvm.engine.plan.layout.as_kernel_rows` makes
    them).  The rows' other
    arguments are :func:`dense_newton_sums`'s; the certificate's sums add runs of :data:`RUN` rows
    (or of the width, if wider) apart.  Returns the number of rows summed.
    """
    indptr, indices, data = X
    loss, alpha, v, active, trial = sums
    m = indptr.shape[0] - 1
    k, width = W.shape
    d = width - 1
    n_steps = steps.shape[0]
    formed = hessian.shape[0] > 0
    record = shortfalls.shape[1] > 0
    trials = np.zeros(k, dtype=np.bool_)
    for c in range(k):
        trials[c] = _trial_point(S, c)
    run_loss = np.zeros(k)
    run_alpha = np.zeros(k)
    run_v = np.zeros((k, width))
    run_trial = np.zeros((k, n_steps))
    run = max(RUN, width)  # a run's flush costs its width: at least as many rows as columns
    for i in range(m):
        lo, hi = _u(indptr[i]), _u(indptr[i + 1])
        for c in range(k):
            y = Y[c, i]
            w_c, s_c = W[c], S[c]
            z0 = bias * w_c[d]
            dz = bias * s_c[d] if trials[c] else 0.0
            for p in range(lo, hi):
                z0 += data[p] * w_c[_u(indices[p])]
            if trials[c]:
                for p in range(lo, hi):
                    dz += data[p] * s_c[_u(indices[p])]
            s = 1.0 - y * (z0 + dz)
            if record:
                shortfalls[c, i] = s
            terms, factor, weight = newton_terms(code, cost[c, i], s)
            run_loss[c] += cost[c, i] * terms
            run_alpha[c] += newton_dual_term(code, cost[c, i], s, factor)
            if factor != 0.0:
                a = factor * y
                v_c = run_v[c]
                for p in range(lo, hi):
                    v_c[_u(indices[p])] += a * data[p]
                v_c[d] += a * bias
            if weight > 0.0:
                active[c] += 1
                if formed:
                    wb = weight * bias
                    H = hessian[c]
                    last = _u(d) * _u(d + 1) // _u(2)  # the bias row's start
                    for p in range(lo, hi):
                        jp = _u(indices[p])
                        wp = weight * data[p]
                        row = jp * (jp + _u(1)) // _u(2)
                        for q in range(lo, p + 1):  # sorted columns: each pair once, below the diagonal
                            H[row + _u(indices[q])] += wp * data[q]
                        H[last + jp] += wb * data[p]
                    H[last + _u(d)] += wb * bias
            if trials[c]:
                add_trial_losses(run_trial[c], cost[c, i], y * z0, y * dz, steps, code)
        if (i + 1) % run == 0 or i + 1 == m:
            for c in range(k):
                loss[c] += run_loss[c]
                alpha[c] += run_alpha[c]
                run_loss[c] = 0.0
                run_alpha[c] = 0.0
                for j in range(width):
                    v[c, j] += run_v[c, j]
                    run_v[c, j] = 0.0
                for t in range(n_steps):
                    trial[c, t] += run_trial[c, t]
                    run_trial[c, t] = 0.0
    return m


@njit(cache=True, nogil=True)
def csr_hessian_product(X, weight, p, bias, identity, out):
    """``out = identity p + sum_i weight_i ([x_i, b] . p) [x_i, b]`` over the CSR rows ``X = (indptr,
    indices, data)``: a Hessian's product in one pass over the rows (each row's margin along ``p``,
    then its scaled row added), where two sparse products would read the rows twice.  Rows of
    weight 0 are skipped; every sum is float64.
    """
    indptr, indices, data = X
    d = p.shape[0] - 1
    for j in range(d + 1):
        out[j] = identity * p[j]
    for i in range(indptr.shape[0] - 1):
        w = weight[i]
        if w == 0.0:
            continue
        lo, hi = _u(indptr[i]), _u(indptr[i + 1])
        t = bias * p[d]
        for q in range(lo, hi):
            t += data[q] * p[_u(indices[q])]
        t *= w
        for q in range(lo, hi):
            out[_u(indices[q])] += t * data[q]
        out[d] += t * bias
    return out
