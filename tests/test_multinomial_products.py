"""The softmax model on a cluster beyond the reads' formed Hessian (engine/cluster/products.py:
``softmax_products``): Newton-CG whose products are the parts' sums up the tree, certified as the
reads certify; and the rows' sums and products without the Hessian (``problem_sums``,
``SoftmaxProblem.loss_product``) against the formed ones, term by term."""

import dask
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from dask_streamsvm import LogisticRegression
from dask_streamsvm.engine.choice import softmax_method
from dask_streamsvm.engine.primal import multinomial_reads
from dask_streamsvm.engine.primal import sums as primal_sums
from dask_streamsvm.engine.primal.multinomial import SoftmaxProblem, formed_step, regularised
from dask_streamsvm.engine.primal.multinomial_reads import ARRAYS, problem_sums
from dask_streamsvm.engine.primal.newton import MAX_WIDTH
from dask_streamsvm.engine.primal.sums import CG_WIDTH

from ._helpers import two_worker_client
from .test_multinomial import ROUNDING, _generated, objective, reference
from .test_multinomial_out_of_core import _collection, _sample_bytes

# 4,212 weights put float64's floor of the relative gap near 1e-10 (Newton's line search sees no
# decrease below it: 2e-10 to 8e-10 seen on these sets), so the fits ask 1e-9, and their probabilities
# agree to 1e-5 (the gap bounds the objective, not each probability: at 1e-8 a row's moved by 1.1e-6
# between two certified fits).
TOL = 1e-9
PROBABILITIES = 1e-5


def _point(K, D, seed=0):
    return np.random.RandomState(seed).normal(size=(K, D)) * 0.3


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("chunk_bytes", [8 * 7 * 30, primal_sums.PRODUCT_CHUNK_BYTES])
def test_the_rows_sums_without_the_hessian_are_the_formed_ones(
    monkeypatch, sparse, fit_intercept, chunk_bytes
):
    """Every sum of an evaluation that does not form the Hessian is the formed read's; its diagonal
    is the formed Hessian's diagonal and its product the formed Hessian's product (dense rows' taken
    30 rows at a time too, the last chunk short)."""
    monkeypatch.setattr(primal_sums, "PRODUCT_CHUNK_BYTES", chunk_bytes)
    X, y = _generated(4, sparse, n=400, d=7)
    rng = np.random.RandomState(1)
    cost = rng.uniform(0.5, 2.0, X.shape[0])
    W = _point(4, 7 + fit_intercept)
    formed = multinomial_reads.softmax_sums(X, y, cost, W, fit_intercept)
    rows = SoftmaxProblem(X, y, cost, 4, fit_intercept)
    P, light = problem_sums(rows, W, hessian=False)
    assert light.hessian is None and formed.diagonal is None
    for name in (a for a in ARRAYS if a != "hessian"):
        np.testing.assert_allclose(getattr(light, name), getattr(formed, name), rtol=1e-12, atol=1e-12)
    for name in ("loss", "entropy", "row_norm"):
        assert getattr(light, name) == pytest.approx(getattr(formed, name), rel=1e-12)
    np.testing.assert_allclose(light.diagonal.ravel(), np.diag(formed.hessian), rtol=1e-12, atol=1e-12)
    V = rng.normal(size=W.shape)
    scores = np.full((X.shape[0], 4), np.nan)
    product = rows.loss_product(P, V, scores).ravel()
    np.testing.assert_allclose(product, formed.hessian @ V.ravel(), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(scores, rows.scores(V), rtol=1e-12, atol=1e-12)  # made on the way


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_conjugate_gradients_step_comes_with_its_rows_scores(monkeypatch, sparse, fit_intercept):
    """Beyond the formed Hessian the Newton step's rows' scores are summed by the conjugate gradient
    from its products' (``X~ s`` is linear in ``s``): they are the step's scores, and the solve's
    line search makes none of its own (one pass over the rows a step fewer; CSR rows' products make
    their scores by :meth:`~.multinomial.SoftmaxProblem.scores`, dense rows' a chunk at a time)."""
    from dask_streamsvm.engine.primal import multinomial

    X, y = _generated(5, sparse, n=600, d=40)
    problem = SoftmaxProblem(X, y, np.ones(X.shape[0]), 5, fit_intercept)
    assert 5 * problem.D > multinomial.HESSIAN_WIDTH  # the conjugate gradient's width
    W = _point(5, problem.D)
    P, _ = problem.loss(problem.scores(W))
    G, _ = problem.gradient(W, P)
    step, products, scores = multinomial.newton_direction(problem, W, P, G)
    assert products >= 2
    np.testing.assert_allclose(scores, problem.scores(step), rtol=1e-10, atol=1e-10)
    made, scores_of = [], SoftmaxProblem.scores

    def spy(self, V):
        made.append(V)
        return scores_of(self, V)

    monkeypatch.setattr(SoftmaxProblem, "scores", spy)
    W, cert, steps, converged, history = multinomial.solve_softmax(problem, tol=1e-8, max_iter=50)[:5]
    products = sum(record["hessian_products"] for record in history)
    assert converged and steps >= 2
    assert len(made) == (products if sparse else 0)  # CSR rows' products score by scores()


def test_sums_without_a_hessian_add_up_with_their_diagonals():
    """Two parts' sums added are the sums of their rows together, the diagonal too."""
    X, y = _generated(3, n=300, d=7)
    cost = np.ones(X.shape[0])
    W = _point(3, 8)

    def sums(rows):
        return problem_sums(SoftmaxProblem(X[rows], y[rows], cost[rows], 3, True), W, hessian=False)[1]

    whole, first = sums(slice(None)), sums(slice(0, 100))
    first.add(sums(slice(100, None)))
    np.testing.assert_allclose(first.diagonal, whole.diagonal, rtol=1e-12)
    np.testing.assert_allclose(first.gradient, whole.gradient, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_steps_dual_point_from_its_product_is_the_formed_ones(fit_intercept):
    """Where the Hessian is not formed, the step's dual point takes the rows' Hessian's product with
    the step (``moved``): the same dual values as the formed Hessian's; without it, no step's point
    (the read's own dual points only)."""
    X, y = _generated(3, n=500, d=6)
    cost = np.ones(X.shape[0])
    D = 6 + fit_intercept
    penalised = np.ones(D)
    if fit_intercept:
        penalised[-1] = 0.0
    near = LogisticRegression(multi_class="multinomial", tol=1e-4, fit_intercept=fit_intercept).fit(X, y)
    W = near.coef_ if not fit_intercept else np.hstack([near.coef_, near.intercept_[:, None]])
    W = W + _point(3, D, seed=2) * 0.01  # near the optimum, where the step's point is feasible
    formed = multinomial_reads.softmax_sums(X, y, cost, W, fit_intercept)
    H = regularised(formed.hessian.copy(), penalised, 3, fit_intercept)
    S = formed_step(H, W * penalised + formed.gradient)  # the Newton step
    rows = SoftmaxProblem(X, y, cost, 3, fit_intercept)
    P, light = problem_sums(rows, W, hessian=False)
    moved = rows.loss_product(P, S)
    expected = multinomial_reads.dual_values(formed, W, penalised, fit_intercept, S)
    got = multinomial_reads.dual_values(light, W, penalised, fit_intercept, S, moved=moved)
    assert any(isinstance(k, tuple) for k in expected), "the step's dual point was not feasible"
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-9)
    without = multinomial_reads.dual_values(light, W, penalised, fit_intercept, S)
    assert not any(isinstance(k, tuple) for k in without)


def test_the_softmax_models_cluster_method_follows_the_binary_width():
    """A class's row wider than CG_WIDTH (the binary problem's rule) takes the products from the
    start; narrower, the first read counts the classes and keeps the sample."""

    class Plan:
        def model_width(self, n_features):
            return n_features

    assert CG_WIDTH == 1024
    assert softmax_method(Plan(), CG_WIDTH - 1) == "newton"
    assert softmax_method(Plan(), CG_WIDTH) == "truncated_newton"


def _classes(K, n, d, seed=0, sparse=False):
    X, y = make_classification(
        n, d, n_informative=min(d, 20), n_redundant=0, n_classes=K, n_clusters_per_class=1,
        random_state=seed,
    )  # fmt: skip
    X[:, 0] += 2.0  # an offset, so that the intercept matters
    if sparse:
        X = sp.csr_matrix(X * (np.random.RandomState(seed).rand(*X.shape) < 0.05))
    return X, y


def _check_optimum(ours, X, y, local):
    """Within the certified gap of scikit-learn's optimum, and one machine's model's probabilities."""
    assert ours.duality_gap_ <= TOL
    sk = reference(X, y, 1.0)
    P = objective(X, y, ours.coef_, ours.intercept_, 1.0)
    P_star = objective(X, y, sk.coef_, sk.intercept_, 1.0)
    assert ours.objective_ == pytest.approx(P, rel=ROUNDING)
    assert (P - P_star) / P <= ours.duality_gap_ + ROUNDING
    np.testing.assert_allclose(ours.predict_proba(X), local.predict_proba(X), atol=PROBABILITIES, rtol=0)


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as client:
        yield client


def _local(X, y, **params):
    with dask.config.set(scheduler="sync"):  # one machine's in-memory model
        return LogisticRegression(tol=TOL, **params).fit(X, y)


@pytest.mark.slow
def test_many_classes_beyond_the_formed_hessian_train_by_products_from_the_sample(client):
    """12 classes of 350 features (4,212 weights, beyond the reads' 4,096) on a LocalCluster of two
    worker processes: the first read counts the classes and keeps the sample, whose solution starts
    Newton-CG on the parts read again; within the certified gap of scikit-learn's optimum."""
    X, y = _classes(12, 1800, 350)
    assert 12 * 351 > MAX_WIDTH and 351 <= CG_WIDTH
    Xd, yd = _collection(X, y, 300)
    ours = LogisticRegression(multi_class="multinomial", tol=TOL, cache_bytes=_sample_bytes(X, 900)).fit(
        Xd, yd
    )
    assert ours.cluster_parts_ and ours.multi_class_ == "multinomial" and ours.coef_.shape == (12, 350)
    assert ours.history_[0]["sample_rows"] < X.shape[0]
    assert ours.history_[-1]["method"] == "truncated_newton" and ours.history_[-1]["products"] > 0
    _check_optimum(ours, X, y, _local(X, y, multi_class="multinomial"))


@pytest.mark.slow
def test_wide_rows_train_the_softmax_model_from_one_read(client):
    """3 classes of 1,500 sparse features (a class's row wider than CG_WIDTH), ``multi_class="auto"``:
    the parts read once and counted, Newton-CG from 0, the softmax model (scikit-learn's)."""
    X, y = _classes(3, 1200, 1500, sparse=True)
    ours = LogisticRegression(tol=TOL).fit(*_collection(X, y, 300))
    assert ours.cluster_parts_ and ours.multi_class_ == "multinomial" and ours.coef_.shape == (3, 1500)
    assert "sample_rows" not in ours.history_[0]
    assert ours.history_[-1]["method"] == "truncated_newton" and ours.history_[-1]["parts"] == 2
    _check_optimum(ours, X, y, _local(X, y))


@pytest.mark.slow
def test_two_wide_classes_train_the_binary_problem(client):
    """Two classes of the same width, ``"auto"``: the binary problem's truncated Newton on the parts
    read, one-vs-rest's model, one machine's optimum within the gaps."""
    X, y = _classes(2, 1200, 1500, seed=1, sparse=True)
    ours = LogisticRegression(tol=TOL).fit(*_collection(X, y, 300))
    assert ours.multi_class_ == "ovr" and ours.history_[-1]["method"] == "truncated_newton"
    assert ours.objective_ == pytest.approx(_local(X, y).objective_, rel=2 * TOL)


@pytest.mark.slow
def test_samples_that_hold_every_row_are_the_fit(client):
    """Where the parts' samples hold every row, their problem, solved on a worker, is the data's: one
    read, its records those of the sample's steps (the records' totals once raised a TypeError)."""
    X, y = _generated(3, n=600, d=7)
    ours = LogisticRegression(multi_class="multinomial", tol=TOL).fit(*_collection(X, y, 150))
    assert ours.cluster_parts_ and ours.history_[0]["sample_rows"] == X.shape[0]
    assert {r["pass"] for r in ours.history_} == {0} and ours.history_[-1]["parts"] == 2
    assert ours.duality_gap_ <= TOL
    local = _local(X, y, multi_class="multinomial")
    assert ours.objective_ == pytest.approx(local.objective_, rel=2 * TOL)


@pytest.mark.parametrize("n, stride", [(25_000, 10), (15_000, 7), (1_500, 1)])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_preconditioner_sums_every_tenth_dense_row(n, stride, fit_intercept):
    """SoftmaxProblem.hessian_diagonal (multinomial.DIAGONAL_STRIDE, DIAGONAL_MIN_ROWS, measured: the
    constants' comment): on dense rows, the diagonal summed over every 10th row, weighted by the
    rows over those kept, where that keeps 2,000 rows (a shorter stride where fewer, every row below
    4,000); on CSR rows over every row.  The reads' diagonal (loss_diagonal) stays exact."""
    from dask_streamsvm.engine.primal import multinomial

    assert (multinomial.DIAGONAL_STRIDE, multinomial.DIAGONAL_MIN_ROWS) == (10, 2000)
    X, y = _generated(3, n=n, d=6)
    cost = np.random.RandomState(2).uniform(0.5, 2.0, n)
    problem = SoftmaxProblem(X, y, cost, 3, fit_intercept)
    P, _ = problem.loss(problem.scores(_point(3, problem.D)))
    kept = slice(None, None, stride)
    weight = cost[kept, None] * P[kept] * (1.0 - P[kept]) * (n / X[kept].shape[0])
    expected = ((X[kept] ** 2).T @ weight).T
    if fit_intercept:
        expected = np.hstack([expected, weight.sum(axis=0)[:, None]])
    np.testing.assert_allclose(problem.hessian_diagonal(P), problem.penalised + expected, rtol=1e-11)
    exact = ((X**2).T @ (cost[:, None] * P * (1.0 - P))).T
    np.testing.assert_allclose(problem.loss_diagonal(P)[:, :6], exact, rtol=1e-11)
    rows = SoftmaxProblem(sp.csr_matrix(X), y, cost, 3, fit_intercept)
    np.testing.assert_allclose(
        rows.hessian_diagonal(P), problem.penalised + problem.loss_diagonal(P), rtol=1e-11
    )
