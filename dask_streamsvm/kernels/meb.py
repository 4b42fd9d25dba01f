"""The one-pass SVM as a streaming minimum enclosing ball (Rai, Daume III & Venkatasubramanian 2009).

The L2-SVM without bias, ``min ||w||^2 + C sum_i xi_i^2`` s.t.
``y_i w . x_i >= 1 - xi_i``, is the minimum enclosing ball (MEB) of the
points ``p_i = [y_i x_i ; C^(-1/2) e_i]`` when every ``||x_i||`` is the same
(Tsang et al. 2005).  The ball's centre ``c = sum_i beta_i p_i`` is kept as
``w = sum_i beta_i y_i x_i`` and ``xi2 = ||slack part of c||^2 = sum_i
beta_i^2 / C``: a new point's slack axis ``e_n`` is orthogonal to the
centre, so its distance is ``d^2 = ||w - y x||^2 + xi2 + 1/C``.

Algorithm 1 (lookahead 1, Zarrabi-Zadeh & Chan's streaming MEB): a point
with ``d >= R`` moves the centre by ``s = (1 - R/d) / 2`` towards it and
sets ``R <- (R + d) / 2``, the smallest ball holding the old ball and the
point; then ``xi2 <- (1 - s)^2 xi2 + s^2 / C``.  The paper prints the start
as ``xi2 = 1`` and the update's last term as ``s^2``: both are ``1/C``
times those, which is what the slack coordinate ``C^(-1/2) e_n`` gives (the
same for ``C = 1``); we use the derived form.

Algorithm 2 (lookahead L): points with ``d >= R`` wait in a buffer; when it
holds L, the ball is replaced by the minimum ball enclosing the old ball
and the L points (:func:`enclose`, a second-order cone program solved to a
stated precision), the "QP of size L" of the paper.

Rows are read through :mod:`.rows` (dense or CSR) and scaled by
``inv_norm`` on the fly (the normalisation the equivalence needs).  ``w``
is held as ``a * v`` so that Algorithm 1's update costs the row's nonzeros,
not the dimension: ``w <- (1 - s) w + s y x`` is ``a <- (1 - s) a`` and
``v <- v + (s y / a) x``; ``v`` is rescaled when ``a`` becomes tiny.
"""

from collections import namedtuple

import numpy as np
from numba import njit

from .rows import row_axpy, row_dot

# Relative duality gap to which `enclose` solves the small ball problem.
ENCLOSE_TOL = 1e-10
_RESCALE = 1e-100  # fold a into v below this

# Every problem's ball, updated in place; problem c: the centre's ``w = A[c] * V[c]`` (row width
# ``n_features + 1``, bias last), ``WSQ[c] = ||w||^2``, the radius ``R[c]``, the slack norm
# ``XI2[c] = xi2``, the core vectors ``M[c]`` (the paper's M), whether the first point came
# (``started``), and with lookahead the buffer ``buf[c, :n_buf[c]]`` (dense scaled rows) and
# its labels ``buf_y``.
BallState = namedtuple("BallState", ["V", "A", "WSQ", "R", "XI2", "M", "started", "buf", "buf_y", "n_buf"])
# What a fit keeps fixed: the bias feature's value, ``1 / C`` and the lookahead L.
BallSettings = namedtuple("BallSettings", ["bias", "inv_C", "lookahead"])


def meb_block(X, signs, order, inv_norm, sqnorm, settings, balls):
    """Feed the rows ``order`` of ``X`` to the balls of every problem, in order.

    ``signs[c, i]`` is row i's label (+1/-1) in problem c (0: not in it);
    ``inv_norm[i]`` scales row i (with its bias feature) and ``sqnorm[i]``
    is its ``||x||^2`` after scaling.  ``settings`` is a
    :class:`BallSettings`, ``balls`` the :class:`BallState` it updates.  A
    point at distance ``d^2 = ||w - y x||^2 + xi2 + 1/C`` from the centre is
    dropped if ``d < R``; otherwise it grows the ball (:func:`grow_ball`,
    ``lookahead=1``) or waits in the buffer until :func:`flush`.

    The rows are walked by the compiled :func:`feed_rows`, which stops at
    each full buffer; the buffer's ball is then solved here, in NumPy
    (:func:`flush`: a small eigenproblem that numba would have to compile
    LAPACK for), and the walk resumes where it stopped.
    """
    position = 0
    while True:
        position, full = feed_rows(X, signs, order, inv_norm, sqnorm, settings, balls, position)
        if full < 0:
            return
        flush(balls, full, settings.inv_C)


@njit(cache=True, nogil=True)
def feed_rows(X, signs, order, inv_norm, sqnorm, settings, balls, position):
    """:func:`meb_block`'s walk from ``position`` until a buffer fills; returns ``(position, problem)``.

    The walk visits row ``order[t]`` for problem ``c`` at position ``t *
    n_problems + c``.  When problem c's buffer reaches the lookahead, it
    returns the position after that visit and ``c`` (the caller flushes the
    buffer and calls again from there); at the end it returns
    ``(order.shape[0] * n_problems, -1)``.
    """
    bias, inv_C = settings.bias, settings.inv_C
    k = balls.V.shape[0]
    end = order.shape[0] * k
    for p in range(position, end):
        t = p // k
        c = p - t * k
        i = order[t]
        y = signs[c, i]
        if y == 0.0:
            continue
        if not balls.started[c]:
            start_ball(balls, c, X, i, y * inv_norm[i], sqnorm[i], settings)
            continue
        wx = balls.A[c] * row_dot(X, i, balls.V[c], bias) * inv_norm[i]
        d2 = balls.WSQ[c] - 2.0 * y * wx + sqnorm[i] + balls.XI2[c] + inv_C
        d = np.sqrt(max(d2, 0.0))
        if d < balls.R[c]:
            continue  # inside the ball: the point is dropped
        if settings.lookahead == 1:
            grow_ball(balls, c, d, wx, X, i, y, inv_norm[i], sqnorm[i], settings)
        else:
            j = balls.n_buf[c]
            balls.buf[c, j, :] = 0.0
            row_axpy(X, i, inv_norm[i], balls.buf[c, j], bias)
            balls.buf_y[c, j] = y
            balls.n_buf[c] = j + 1
            if balls.n_buf[c] == settings.lookahead:
                return p + 1, c
    return end, -1


@njit(cache=True, nogil=True)
def start_ball(balls, c, X, i, scale, sqnorm, settings):
    """Problem c's first point ``p_1 = [scale x_i ; C^(-1/2) e_1]`` is its ball: centre p_1, radius 0.

    ``w = scale x_i`` (``scale = y_i / ||x_i||``), ``||w||^2 = sqnorm``,
    ``xi2 = 1/C``, ``R = 0``, ``M = 1``.
    """
    balls.V[c, :] = 0.0
    row_axpy(X, i, scale, balls.V[c], settings.bias)
    balls.A[c] = 1.0
    balls.WSQ[c] = sqnorm
    balls.R[c] = 0.0
    balls.XI2[c] = settings.inv_C
    balls.M[c] = 1
    balls.started[c] = True


@njit(cache=True, nogil=True)
def grow_ball(balls, c, d, wx, X, i, y, inv_norm, sqnorm, settings):
    """Algorithm 1's step: the smallest ball holding problem c's ball and a point at distance ``d >= R``.

    With ``x`` row i scaled by ``inv_norm`` (``||x||^2 = sqnorm``) and
    ``wx = w . x``, the centre moves by ``s`` towards the point and the
    radius grows to cover the old ball and the point::

        s    = (1 - R / d) / 2
        w   <- (1 - s) w + s y x              (kept as a <- (1 - s) a, v <- v + (s y / a) x)
        ||w||^2 <- (1 - s)^2 ||w||^2 + 2 s (1 - s) y w.x + s^2 ||x||^2
        R   <- R + (d - R) / 2
        xi2 <- (1 - s)^2 xi2 + s^2 / C
        M   <- M + 1

    (Rai et al. 2009, Algorithm 1, with the slack term derived in the module
    docstring.)
    """
    s = 0.5 * (1.0 - balls.R[c] / d)
    if balls.A[c] < _RESCALE:
        V, a = balls.V[c], balls.A[c]
        for j in range(V.shape[0]):  # a loop: an array assignment would compile numba's shape-error text
            V[j] *= a
        balls.A[c] = 1.0
    balls.A[c] *= 1.0 - s
    row_axpy(X, i, s * y * inv_norm / balls.A[c], balls.V[c], settings.bias)
    balls.WSQ[c] = (1.0 - s) ** 2 * balls.WSQ[c] + 2.0 * s * (1.0 - s) * y * wx + s * s * sqnorm
    balls.R[c] += 0.5 * (d - balls.R[c])
    balls.XI2[c] = (1.0 - s) ** 2 * balls.XI2[c] + s * s * settings.inv_C
    balls.M[c] += 1


def flush(balls, c, inv_C):
    """Algorithm 2, line 7: the ball enclosing problem c's ball and its buffered points.

    :func:`enclose` gives the new centre ``lam_0 c + sum_j lam_j p_j`` and
    radius ``r``; the slack axes of the old centre and of the points are
    orthogonal, so ``w <- lam_0 w + sum_j lam_j y_j x_j`` and
    ``xi2 <- lam_0^2 xi2 + sum_j lam_j^2 / C``.  The buffer is emptied.
    Plain NumPy, called between compiled walks (:func:`meb_block`).
    """
    n = int(balls.n_buf[c])
    if n == 0:
        return
    V, A = balls.V[c], balls.A[c]
    buf, buf_y = balls.buf[c, :n], balls.buf_y[c, :n]
    G = np.empty((n + 1, n + 1))
    G[0, 0] = balls.WSQ[c] + balls.XI2[c]
    G[0, 1:] = G[1:, 0] = buf_y * A * (buf @ V)
    G[1:, 1:] = buf_y[:, None] * buf_y[None, :] * (buf @ buf.T)
    G[1:, 1:] += inv_C * np.eye(n)
    radii = np.zeros(n + 1)
    radii[0] = balls.R[c]
    lam, r = enclose(G, radii)
    V *= A * lam[0]
    balls.A[c] = 1.0
    xi2 = lam[0] * lam[0] * balls.XI2[c]
    for j in range(n):
        V += lam[j + 1] * buf_y[j] * buf[j]
        xi2 += lam[j + 1] * lam[j + 1] * inv_C
    balls.WSQ[c] = np.dot(V, V)
    balls.XI2[c] = xi2
    balls.R[c] = r
    balls.M[c] += n
    balls.n_buf[c] = 0


def enclose(G, radii):
    """The minimum ball enclosing balls ``B(q_i, radii[i])`` given by the Gram matrix ``G`` of the q_i.

    Returns ``(lam, r)``: the centre ``sum_i lam_i q_i`` (``sum lam = 1``) and
    the radius.  The centres are embedded isometrically in ``R^m`` (``m`` the
    rank of their differences), and ``min r s.t. ||z - q_i|| + radii[i] <= r``,
    a second-order cone program in ``m + 1`` variables, is solved by a
    log-barrier interior-point method to a duality gap of ``ENCLOSE_TOL * r``.
    The embedding (an eigendecomposition) is NumPy's; the barrier method's
    loops are compiled (:func:`_min_enclosing_balls`).
    """
    n = G.shape[0]
    lam = np.zeros(n)
    lam[0] = 1.0
    if n == 1:
        return lam, float(radii[0])
    # Differences u_j = q_j - q_0: their Gram matrix and an orthonormal embedding.
    H = G[1:, 1:] - G[1:, :1] - G[:1, 1:] + G[0, 0]
    e, U = np.linalg.eigh(H)
    top = max(e.max(), 0.0)
    keep = np.flatnonzero(e > 1e-12 * top) if top > 0.0 else np.empty(0, dtype=np.int64)
    root = np.sqrt(e[keep])
    P = np.zeros((n, keep.shape[0]))  # coordinates of q_i (q_0 at the origin)
    P[1:] = U[:, keep] * root
    z, r = _min_enclosing_balls(P, np.ascontiguousarray(radii, dtype=np.float64))
    # Back to coefficients: u_j has coordinates P[j+1], so mu = U_keep diag(1/sqrt(e)) z.
    lam[1:] = (U[:, keep] * z / root).sum(axis=1)
    lam[0] = 1.0 - lam[1:].sum()
    return lam, r


@njit(cache=True, nogil=True)
def _phi(P, radii, z, r, out):
    """``(r - radii_i)^2 - ||z - P_i||^2`` into ``out``; False if a point leaves the cone's interior."""
    for i in range(P.shape[0]):
        s = r - radii[i]
        if s <= 0.0:
            return False
        d2 = 0.0
        for a in range(P.shape[1]):
            d2 += (z[a] - P[i, a]) ** 2
        out[i] = s * s - d2
        if out[i] <= 0.0:
            return False
    return True


@njit(cache=True, nogil=True)
def _radius_at(P, radii, z):
    """``max_i ||z - P_i|| + radii_i``: the radius of the smallest ball centred at ``z``."""
    r = 0.0
    for i in range(P.shape[0]):
        d2 = 0.0
        for a in range(P.shape[1]):
            d2 += (z[a] - P[i, a]) ** 2
        r = max(r, np.sqrt(d2) + radii[i])
    return r


@njit(cache=True, nogil=True)
def _log_sum(phi):
    s = 0.0
    for i in range(phi.shape[0]):
        s += np.log(phi[i])
    return s


@njit(cache=True, nogil=True)
def _min_enclosing_balls(P, radii):
    """``argmin r s.t. ||z - P_i|| + radii_i <= r``: barrier method (Boyd & Vandenberghe 11.3).

    Written with scalar loops only (array expressions would make numba
    compile their broadcasting machinery for this one function).
    """
    n, m = P.shape
    z = np.zeros(m)
    for i in range(n):
        for a in range(m):
            z[a] += P[i, a] / n
    r = _radius_at(P, radii, z)
    if m == 0:
        return z, r
    r = 1.01 * r + 1e-12
    scale = max(r, 1e-300)
    phi = np.empty(n)
    trial = np.empty(n)
    t = 2.0 * n / scale  # barrier weight; the gap of the central point is 2n / t (each cone counts 2)
    grad = np.empty(m + 1)
    hess = np.empty((m + 1, m + 1))
    dphi = np.empty(m + 1)
    step = np.empty(m + 1)
    z_new = np.empty(m)
    for _ in range(60):  # outer: t grows by 10 each time
        for _ in range(100):  # Newton on t r - sum log phi_i
            _phi(P, radii, z, r, phi)
            for a in range(m + 1):
                grad[a] = 0.0
                for b in range(m + 1):
                    hess[a, b] = 0.0
            grad[m] = t
            for i in range(n):
                for a in range(m):
                    dphi[a] = -2.0 * (z[a] - P[i, a])
                dphi[m] = 2.0 * (r - radii[i])
                for a in range(m + 1):
                    grad[a] -= dphi[a] / phi[i]
                    for b in range(m + 1):
                        hess[a, b] += dphi[a] * dphi[b] / (phi[i] * phi[i])
                for a in range(m):
                    hess[a, a] += 2.0 / phi[i]
                hess[m, m] -= 2.0 / phi[i]
            _solve(hess, grad, step)  # the Newton step: hess step = -grad
            decrement = 0.0
            for a in range(m + 1):
                decrement -= grad[a] * step[a]
            if decrement <= 1e-14:
                break
            f0 = t * r - _log_sum(phi)
            h = 1.0
            while h > 1e-20:
                for a in range(m):
                    z_new[a] = z[a] + h * step[a]
                r_new = r + h * step[m]
                if _phi(P, radii, z_new, r_new, trial):
                    if t * r_new - _log_sum(trial) <= f0 - 0.25 * h * decrement:
                        break
                h *= 0.5
            if h <= 1e-20:
                break
            for a in range(m):
                z[a] = z_new[a]
            r = r_new
        if 2.0 * n / t <= ENCLOSE_TOL * r:
            break
        t *= 10.0
    # The exact radius of the ball centred at z (the barrier keeps r slightly above it).
    return z, _radius_at(P, radii, z)


@njit(cache=True, nogil=True)
def _solve(A, b, x):
    """``x = -A^-1 b`` by Gaussian elimination with partial pivoting; ``A`` and ``b`` are left as they were.

    The barrier's Newton system is small (the lookahead plus one) and
    positive definite; solving it here keeps LAPACK, which numba would
    compile for every fresh cache, out of the compiled code.
    """
    n = b.shape[0]
    M = A.copy()
    for k in range(n):
        x[k] = b[k]
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(M[i, k]) > abs(M[p, k]):
                p = i
        if p != k:
            for j in range(n):
                M[k, j], M[p, j] = M[p, j], M[k, j]
            x[k], x[p] = x[p], x[k]
        for i in range(k + 1, n):
            f = M[i, k] / M[k, k]
            for j in range(k + 1, n):
                M[i, j] -= f * M[k, j]
            x[i] -= f * x[k]
    for k in range(n - 1, -1, -1):
        s = x[k]
        for j in range(k + 1, n):
            s -= M[k, j] * x[j]
        x[k] = s / M[k, k]
    for k in range(n):
        x[k] = -x[k]
