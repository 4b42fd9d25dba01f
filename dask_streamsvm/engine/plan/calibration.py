"""Platt scaling: probabilities from decision values, fitted on held-out rows."""

import numpy as np

HELD_OUT_FRACTION = 0.1  # streaming: rows kept out of training to fit the sigmoid
N_FOLDS = 5  # in memory: folds of the cross-fitted decision values

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def hash_uniform(row_ids, seed):
    """A uniform number in [0, 1) per row, a pure function of row id and seed.

    SplitMix64's finaliser of ``row_id + seed * golden``.  A split drawn
    from it is the same on every pass.  Streaming numbers rows in the order
    of the first read (partition order shuffled by the seed), so its split
    depends on the seed, not on the data alone.
    """
    with np.errstate(over="ignore"):
        z = np.asarray(row_ids, dtype=np.uint64) + np.uint64(seed % 2**64) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def held_out(row_ids, seed, fraction=HELD_OUT_FRACTION):
    """Boolean mask of the rows kept out of training for calibration."""
    return hash_uniform(row_ids, seed) < fraction


def folds(n_rows, seed, n_folds=N_FOLDS):
    """Fold number in ``[0, n_folds)`` of each of ``n_rows`` rows."""
    return np.minimum((hash_uniform(np.arange(n_rows), seed) * n_folds).astype(np.intp), n_folds - 1)


def fit_sigmoid(f, positive, max_iter=100):
    """Platt's sigmoid ``P(y=1|f) = 1 / (1 + exp(A f + B))``, returns ``(A, B)``.

    Maximum likelihood with Platt's smoothed targets ``(N+ + 1) / (N+ + 2)``
    and ``1 / (N- + 2)``, by Newton's method with backtracking and the
    numerically stable log-loss of Lin, Lin and Weng (2007, "A note on
    Platt's probabilistic outputs for support vector machines").
    """
    f = np.asarray(f, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = positive.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            "probability=True needs held-out rows of both classes to fit the sigmoid, but the held-out "
            f"rows have {n_pos} positive and {n_neg} negative; use more data."
        )
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))

    def loss(a, b):
        z = a * f + b  # -log-likelihood = sum t z + log(1 + exp(-z)), stable for both signs
        return float(np.sum(t * z + np.logaddexp(0.0, -z)))

    value = loss(A, B)
    sigma = 1e-12  # keeps the Hessian positive definite, as Lin et al.
    for _ in range(max_iter):
        z = A * f + B
        p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + exp(z)) = P(y = 1)
        q = 1.0 - p
        d1 = t - p  # d loss / d z
        d2 = p * q
        g = np.array([np.dot(f, d1), d1.sum()])
        if np.abs(g).max() < 1e-5:
            break
        H = np.array([[np.dot(f * f, d2) + sigma, np.dot(f, d2)], [np.dot(f, d2), d2.sum() + sigma]])
        step = np.linalg.solve(H, -g)
        slope = float(g @ step)
        size = 1.0
        while size >= 1e-10:
            a, b = A + size * step[0], B + size * step[1]
            new = loss(a, b)
            if new < value + 1e-4 * size * slope:
                A, B, value = a, b, new
                break
            size /= 2.0
        else:
            break  # no decrease along the Newton direction: at the optimum to rounding
    return float(A), float(B)


def platt_sigmoids(scores, y, classes):
    """Platt's sigmoid per problem on held-out decision values ``scores`` (n, n_problems) of rows
    labelled ``y``: ``(probA, probB)``, an array each (problem ``c`` of one-vs-rest is ``classes[c]``
    against the rest; a binary problem is ``classes[1]`` against ``classes[0]``)."""
    scores = np.asarray(scores).reshape(y.shape[0], -1)
    k = scores.shape[1]
    positives = [y == classes[1]] if k == 1 else [y == label for label in classes]
    fitted = [fit_sigmoid(scores[:, c], positives[c]) for c in range(k)]
    return np.array([a for a, _ in fitted]), np.array([b for _, b in fitted])


def sigmoid_proba(scores, A, B):
    """``1 / (1 + exp(A f + B))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, np.asarray(A) * scores + np.asarray(B)))


def probabilities(scores, A, B):
    """Class probabilities from decision values: ``(n, 2)`` binary, normalised one-vs-rest else."""
    if scores.ndim == 1:
        p = sigmoid_proba(scores, A[0], B[0])
        return np.column_stack([1.0 - p, p])
    p = sigmoid_proba(scores, A[None, :], B[None, :])
    total = p.sum(axis=1, keepdims=True)
    k = p.shape[1]
    # All k sigmoids near zero: fall back to uniform rather than divide by zero.
    return np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / k)
