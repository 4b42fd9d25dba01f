"""The step's dual point of the logistic loss's Newton reads (engine/primal/newton.py:
``_Problem.step_dual``): a read that gives a Newton step ``s`` also certifies the dual point of the
step's first-order change, from its own sums.  Each point feasible and its bound below its exact dual
value (NumPy), the shares the rows allow pinned, the gap near the optimum of the size of the true
suboptimality, and a streamed fit a read shorter for it."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from dask_streamsvm import LogisticRegression
from dask_streamsvm.engine.plan.losses import LOGISTIC as LOGISTIC_LOSS
from dask_streamsvm.engine.primal import newton
from dask_streamsvm.engine.primal.penalties import L2, Sparse
from dask_streamsvm.engine.primal.reads import Sample, band_metric, metric_row_norm
from dask_streamsvm.engine.primal.sums import block_sums
from dask_streamsvm.kernels.losses import LOGISTIC

from ._helpers import counted_reads

BIAS = 1.0


def _rows(n=1500, d=8, seed=0, offset=0.0):
    X, y = make_classification(n, d, n_informative=5, n_redundant=0, random_state=seed)
    return X + offset, np.where(y == 1, 1.0, -1.0)


def _augmented(X):
    return np.hstack([X, np.full((X.shape[0], 1), BIAS)])


def _entropy(u):
    safe = np.clip(u, 1e-300, 1.0)
    rest = np.clip(1.0 - u, 1e-300, 1.0)
    return -(u * np.log(safe) + (1.0 - u) * np.log(rest))


def _problem_at(X, y, C, penalty, w):
    """A Newton problem evaluated at ``w`` from one read of every row, its step taken."""
    sums = block_sums(X, y[None, :], np.full((1, len(y)), C), w[None, :], np.zeros((1, len(w))), BIAS,
                      LOGISTIC)  # fmt: skip
    problem = newton._Problem(len(w), LOGISTIC_LOSS, penalty=penalty)
    problem.w = w.copy()
    problem.g = penalty.gradient(w, sums.v[0])
    problem.H = penalty.hessian(sums.hessian[0])
    problem.s = penalty.direction(w, problem.g, problem.H)
    problem.column_max = np.append(np.abs(X).max(axis=0), BIAS)
    return problem, sums


def _optimum(X, y, C, penalty):
    """P* of the problem, by Newton reads in memory to a gap of 1e-13 (certified)."""
    kind = {"l1_ratio": 1.0} if isinstance(penalty, Sparse) else {}
    model = LogisticRegression(C=C, tol=1e-13, dual=False, **kind).fit(X, (y > 0).astype(int))
    return model.objective_


@pytest.mark.parametrize("offset", [0.0, 30.0])
@pytest.mark.parametrize("penalty", [L2(), Sparse(1.0, 0.0)], ids=["l2", "l1"])
def test_each_step_dual_point_is_feasible_and_bounded_below(penalty, offset):
    """At points around the optimum, for each share ``a`` the read allows, ``alpha_i' = alpha_i -
    a D_ii dm_i`` stays in its box, the read's bound is at most the exact dual value of that point
    (the penalty's dual in NumPy), and at most P*; the shares are exactly those with ``a sum_j |s_j|
    max_i |x~_ij| <= 1`` (STEP_SHARES)."""
    X, y = _rows(offset=offset)
    C = 0.5
    p_star = _optimum(X, y, C, penalty)
    w_star = LogisticRegression(C=C, tol=1e-12, dual=False, **(
        {"l1_ratio": 1.0} if isinstance(penalty, Sparse) else {})).fit(X, (y > 0).astype(int))  # fmt: skip
    w_star = np.r_[w_star.coef_.ravel(), w_star.intercept_ / BIAS]
    Xa = _augmented(X)
    rng = np.random.RandomState(1)
    used = 0
    for spread in (1e-4, 1e-3, 1e-2, 1e-1):
        w = w_star + spread * rng.normal(size=w_star.shape)
        problem, sums = _problem_at(X, y, C, penalty, w)
        values = problem.step_duals(sums, 0)
        reach = float(np.abs(problem.s) @ problem.column_max)
        assert set(values) == {float(a) for a in newton.STEP_SHARES if a * reach <= 1.0}
        assert reach >= np.abs(Xa @ problem.s).max() * (1 - 1e-12)
        m, dm = y * (Xa @ w), y * (Xa @ problem.s)
        u = 1.0 / (1.0 + np.exp(m))  # alpha_i / C
        for a, bound in values.items():
            moved = u - a * u * (1.0 - u) * dm
            assert np.all(moved >= 0.0) and np.all(moved <= 1.0)
            v = Xa.T @ (C * moved * y)
            exact = penalty.dual(LOGISTIC_LOSS, float(C * _entropy(moved).sum()), v, 0.0)
            assert bound <= exact + 1e-10 * abs(exact)
            assert bound <= p_star * (1 + 1e-12)
        used += bool(values)
    assert used >= 2
    assert list(newton.STEP_SHARES) == [2.0**-k for k in range(7)]


@pytest.mark.parametrize("offset", [0.0, 30.0])
def test_the_rows_length_in_the_samples_metric_bounds_every_margins_move(offset):
    """A read that measures its rows' largest length in the sample's metric (Sums.row_norm) bounds
    ``max_i |s . x~_i|`` by ``|s_f . center + s_b bias| + ||s_f * scale|| max_i ||(x_i - center) /
    scale||``: at least the true reach, at most the columns' bound, and every share it allows keeps
    each row's dual variable in its box, its bound below the exact dual value."""
    X, y = _rows(offset=offset)
    X[:, 0] *= 50.0  # a column of its own scale
    C, penalty = 0.5, L2()
    fit = LogisticRegression(C=C, tol=1e-12, dual=False).fit(X, (y > 0).astype(int))
    w_star = np.r_[fit.coef_.ravel(), fit.intercept_ / BIAS]
    p_star = fit.objective_
    Xa = _augmented(X)
    metric = band_metric(Sample(X[::3], y[::3], np.ones(X[::3].shape[0]), X.shape[0]))
    rng = np.random.RandomState(2)
    tighter = 0
    for spread in (1e-3, 1e-2, 1e-1):
        w = w_star + spread * rng.normal(size=w_star.shape)
        problem, sums = _problem_at(X, y, C, penalty, w)
        columns = float(np.abs(problem.s) @ problem.column_max)
        assert problem.reach(sums) == pytest.approx(columns, rel=1e-11)  # nothing measured: the columns'
        problem.metric, sums.row_norm = metric, metric_row_norm(X, metric)
        reach, true = problem.reach(sums), float(np.abs(Xa @ problem.s).max())
        assert true <= reach <= columns * (1 + 1e-11)
        tighter += reach < 0.5 * columns
        values = problem.step_duals(sums, 0)
        assert set(values) == {float(a) for a in newton.STEP_SHARES if a * reach <= 1.0}
        m, dm = y * (Xa @ w), y * (Xa @ problem.s)
        u = 1.0 / (1.0 + np.exp(m))
        for a, bound in values.items():
            moved = u - a * u * (1.0 - u) * dm
            assert np.all(moved >= 0.0) and np.all(moved <= 1.0)
            exact = penalty.dual(LOGISTIC_LOSS, float(C * _entropy(moved).sum()), Xa.T @ (C * moved * y), 0.0)
            assert bound <= exact + 1e-10 * abs(exact)
            assert bound <= p_star * (1 + 1e-12)
    assert tighter >= 2 or not offset  # the rule makes a difference: rows far from 0, centered


def test_the_rows_length_is_measured_dense_and_sparse_alike():
    X, _ = _rows(n=400, d=6, seed=7)
    X[X < 0.3] = 0.0
    scale = np.linspace(0.5, 2.0, 6)
    sparse = metric_row_norm(sp.csr_matrix(X), (np.zeros(6), scale))
    dense = metric_row_norm(X.astype(np.float32), (np.zeros(6), scale))
    expected = float(np.sqrt(np.max(np.sum((X / scale) ** 2, axis=1))))
    assert sparse == pytest.approx(expected, rel=1e-12) and dense == pytest.approx(expected, rel=1e-6)
    center = np.full(6, 0.25)
    assert metric_row_norm(X, (center, scale)) == pytest.approx(
        float(np.sqrt(np.max(np.sum(((X - center) / scale) ** 2, axis=1)))), rel=1e-12
    )


def test_a_streamed_logistic_fit_measures_its_rows_for_the_steps_reach(monkeypatch):
    """200k x 40 rows from a sample's solution: the rows' length in the sample's metric lets the
    first Newton read's step dual take its whole step (the columns' bound allowed 1/32 of it), so a
    2e-3 gap is certified by that read; with the columns' bound alone, a read later."""
    X, y = make_classification(200_000, 40, n_informative=20, random_state=4)
    X = X.astype(np.float32)

    def fit():
        Xd, yd = da.from_array(X, chunks=(20_000, 40)), da.from_array(y, chunks=20_000)
        with dask.config.set(scheduler="sync"):
            model = LogisticRegression(tol=2e-3, dual=False, cache_bytes=41 * 4 * 40_000).fit(Xd, yd)
        return model

    model = fit()
    assert model.history_[0]["sample_rows"] < X.shape[0]
    assert [r["pass"] for r in model.history_] == [0, 1] and model.duality_gap_ <= 2e-3
    monkeypatch.setattr(newton._Problem, "reach", lambda self, sums: float(np.abs(self.s) @ self.column_max))
    lagging = fit()
    assert [r["pass"] for r in lagging.history_] == [0, 1, 2] and lagging.duality_gap_ <= 2e-3


def test_tall_rows_in_memory_measure_their_length_once_for_the_steps_reach(monkeypatch):
    """In memory the rows' length in the columns' metric is measured once, before the first read:
    on 300k x 30 tall rows the first read (from a tenth of the rows' solution) certifies 2e-3; with
    the columns' bound alone, a read later."""
    X, y = make_classification(300_000, 30, n_informative=20, random_state=4)
    X = X.astype(np.float32)
    model = LogisticRegression(tol=2e-3, dual=False).fit(X, y)
    assert [r["pass"] for r in model.history_] == [1] and model.duality_gap_ <= 2e-3
    monkeypatch.setattr(newton._Problem, "reach", lambda self, sums: float(np.abs(self.s) @ self.column_max))
    lagging = LogisticRegression(tol=2e-3, dual=False).fit(X, y)
    assert [r["pass"] for r in lagging.history_] == [1, 2] and lagging.duality_gap_ <= 2e-3


def test_near_the_optimum_the_step_certifies_the_suboptimality():
    """The derivative's dual point of a point near the optimum has a gap of its gradient's square
    (far above its suboptimality on tall rows); the step's, of a few times the suboptimality."""
    X, y = _rows(n=20_000, d=8, seed=2)
    C = 1.0
    p_star = _optimum(X, y, C, L2())
    fit = LogisticRegression(C=C, tol=1e-12, dual=False).fit(X, (y > 0).astype(int))
    w = np.r_[fit.coef_.ravel(), fit.intercept_ / BIAS] + 1e-3 * np.random.RandomState(3).normal(size=9)
    problem, sums = _problem_at(X, y, C, L2(), w)
    primal = 0.5 * float(w @ w) + float(sums.loss[0])
    derivative = L2().dual(LOGISTIC_LOSS, float(sums.alpha[0]), sums.v[0], float(sums.loss[0]))
    stepped = problem.step_dual(sums, 0)
    suboptimality = primal - p_star
    assert primal - stepped <= 5 * suboptimality
    assert primal - derivative > 100 * suboptimality


def test_a_streamed_logistic_fit_is_certified_a_read_sooner(monkeypatch):
    """On tall rows from a sample's solution: a 1e-3 gap after the first read and two Newton reads;
    without the step's dual point (step_dual removed) the certificate lags a read behind."""
    X, y = make_classification(60_000, 10, n_informative=6, random_state=4)
    X = X.astype(np.float32)  # as Parquet gives them: the Hessian is summed in float64 all the same

    def fit():
        Xd, yd, reads = counted_reads(X, y, 6000)
        with dask.config.set(scheduler="sync"):
            model = LogisticRegression(tol=1e-3, dual=False, cache_bytes=11 * 4 * 4000).fit(Xd, yd)
        return model, len(reads) // 10  # 10 blocks a read; the reader runs ahead by a few blocks

    model, reads = fit()
    assert model.history_[0]["sample_rows"] < X.shape[0]
    assert reads == 3 and model.duality_gap_ <= 1e-3
    monkeypatch.setattr(newton._Problem, "step_dual", lambda self, sums, c, terms=None: None)
    lagging, reads = fit()
    assert reads == 4 and lagging.duality_gap_ <= 1e-3


def test_a_smooth_loss_sums_its_hessian_in_float64_from_float32_rows():
    """The step's dual point takes the Hessian's product: over float32 rows the logistic loss's
    Hessian is summed in float64 (the squared hinge's, which only sets a direction, in float32)."""
    X, y = _rows(n=5000, d=12, seed=5)
    X32 = X.astype(np.float32)
    W = np.random.RandomState(6).normal(size=(1, 13)) * 0.1
    args = (y[None, :], np.ones((1, len(y))), W, np.zeros_like(W), BIAS)
    single = block_sums(X32, *args, LOGISTIC).hessian[0]
    double = block_sums(X32.astype(np.float64), *args, LOGISTIC).hessian[0]
    np.testing.assert_allclose(single, double, rtol=1e-13, atol=1e-13 * np.abs(double).max())


@pytest.mark.parametrize("penalty", [L2(), Sparse(1.0, 0.0), Sparse(0.5, 0.5)], ids=["l2", "l1", "net"])
def test_the_step_dual_from_the_rows_products_is_the_formed_hessians(penalty):
    """In memory where the read holds the Hessian as its rows (sums.ActiveTerms: a sparse penalty's
    reads, wide rows' products), the step's dual points take ``H_loss s`` from their product, and
    are those of the formed Hessian's read at every share."""
    from dask_streamsvm.engine.primal.sums import ProductRead

    X, y = _rows(seed=5)
    w = 0.1 * np.random.RandomState(2).normal(size=X.shape[1] + 1)
    problem, sums = _problem_at(X, y, 0.5, penalty, w)
    read = ProductRead(X, y[None, :], np.full((1, len(y)), 0.5), BIAS, LOGISTIC, identity=penalty.l2)
    held = read(w[None, :], np.zeros((1, len(w))), [0])
    formed = problem.step_duals(sums, 0)
    from_rows = problem.step_duals(held, 0, held.operators[0])
    assert formed and formed.keys() == from_rows.keys()
    for share, value in formed.items():
        assert from_rows[share] == pytest.approx(value, rel=1e-10)
