"""Crammer-Singer multi-class (multi_class="crammer_singer") in memory, SBM, BM and StreamSVM."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.dual.crammer_singer import cs_tables
from dask_streamsvm.kernels.crammer_singer import cs_loss_sum, cs_scores, cs_sweep
from dask_streamsvm.kernels.rng import make_state


def reference_primal(X, y_index, cost, W, bias):
    """P(W) = 1/2 ||W||^2 + sum_i C_i max_m (e_i^m + w_m x_i - w_y x_i), in plain NumPy."""
    Xb = np.hstack([X, np.full((X.shape[0], 1), bias)])
    scores = Xb @ W.T
    margin = scores - scores[np.arange(X.shape[0]), y_index][:, None] + 1.0
    margin[np.arange(X.shape[0]), y_index] = 0.0
    return 0.5 * float((W * W).sum()) + float(cost @ margin.max(axis=1))


def liblinear_objective(X, y, C, fit_intercept=True, class_weight=None):
    ref = LiblinearSVC(
        C=C, multi_class="crammer_singer", tol=1e-8, max_iter=200_000, fit_intercept=fit_intercept,
        class_weight=class_weight,
    ).fit(X, y)  # fmt: skip
    classes = np.unique(y)
    coef, intercept = ref.coef_, ref.intercept_
    if classes.shape[0] == 2:  # scikit-learn keeps w_1 - w_0; the joint objective needs both
        raise ValueError("use more than two classes")
    W = np.hstack([coef, (intercept if fit_intercept else np.zeros(len(classes)))[:, None]])
    weights = np.ones(len(classes)) if class_weight is None else np.array([class_weight[c] for c in classes])
    y_index = np.searchsorted(classes, y)
    return reference_primal(np.asarray(X, dtype=np.float64), y_index, C * weights[y_index], W, 1.0)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


# -- kernel ------------------------------------------------------------------------------


def random_state(rng, n, d, k):
    X = rng.randn(n, d) * (rng.rand(n, d) < 0.6)
    y_index = rng.randint(0, k, size=n)
    cost = rng.uniform(0.2, 2.0, size=n)
    Y, U = cs_tables(y_index, cost, k)
    sq = (X * X).sum(axis=1) + 1.0
    QD = np.repeat(sq[None, :], k, axis=0)
    return X, y_index, cost, Y, U, QD


def test_each_row_update_solves_its_subproblem(digits):
    """After a row's update its k variables meet the subproblem's optimality conditions."""
    rng = np.random.RandomState(0)
    n, d, k = 40, 6, 5
    X, y_index, cost, Y, U, QD = random_state(rng, n, d, k)
    A = np.zeros((k, n))
    W = np.zeros((k, d + 1))
    state = make_state(3)
    shrinkable = np.zeros(n, dtype=np.int64)
    for sweep in range(3):
        for i in range(n):
            index = np.array([i], dtype=np.int64)
            cs_sweep(X, Y, U, QD, A, W, 1.0, index, 1, np.inf, shrinkable, state)
            alpha = Y[:, i] * A[:, i]  # LIBLINEAR's alpha_i^m
            bound = np.where(np.arange(k) == y_index[i], cost[i], 0.0)
            assert abs(alpha.sum()) < 1e-10 and np.all(alpha <= bound + 1e-12), (sweep, i)
            G = W @ np.append(X[i], 1.0) + (np.arange(k) != y_index[i])
            free = alpha < bound - 1e-12
            assert G.max() - G[free].min() < 1e-9, (sweep, i)
    # W stays the weighted sum of the rows: w_m = sum_i alpha_i^m [x_i, 1].
    Xb = np.hstack([X, np.ones((n, 1))])
    np.testing.assert_allclose(W, (Y * A) @ Xb, atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_loss_matches_the_reference(sparse):
    rng = np.random.RandomState(1)
    X, y_index, cost, *_ = random_state(rng, 50, 8, 4)
    W = rng.randn(4, 9)
    rows = X
    if sparse:
        csr = sp.csr_matrix(X)
        rows = (csr.indptr.astype(np.int64), csr.indices, csr.data)
    ours = 0.5 * (W * W).sum() + cs_loss_sum(rows, y_index, cost, W, 0.5)
    assert ours == pytest.approx(reference_primal(X, y_index, cost, W, 0.5), rel=1e-12)


def test_scores_count_the_shrinkable_variables():
    rng = np.random.RandomState(2)
    X, y_index, cost, Y, U, QD = random_state(rng, 30, 5, 4)
    A = np.zeros((4, 30))
    W = np.zeros((4, 6))
    shrinkable = np.empty(30, dtype=np.int64)
    violation = np.empty(30)
    slots = np.arange(30, dtype=np.int64)
    # alpha = 0, W = 0: G = e, so the other classes (G = 1) are not below min G = G_y = 0.
    cs_scores(X, Y, U, A, W, 1.0, slots, shrinkable, violation)
    assert (shrinkable == 0).all() and np.allclose(violation, 1.0)
    # At the optimum, a row with alpha = 0 has its k - 1 other classes at the bound
    # with a gradient below its own: all shrinkable.
    state, scratch = make_state(0), np.zeros(30, dtype=np.int64)
    for _ in range(3000):
        cs_sweep(X, Y, U, QD, A, W, 1.0, slots.copy(), 30, np.inf, scratch, state)
    cs_scores(X, Y, U, A, W, 1.0, slots, shrinkable, violation)
    assert violation.max() < 1e-6
    at_zero = (A == 0).all(axis=0)
    assert (shrinkable[at_zero] == 3).all()


# -- in memory against LIBLINEAR ---------------------------------------------------------


@pytest.mark.parametrize("layout", ["dense", "csr", "float32"])
def test_digits_in_memory_matches_liblinear(digits, layout):
    X, y = digits
    expected = liblinear_objective(X, y, 0.1)
    Xf = {"dense": X, "csr": sp.csr_matrix(X), "float32": X.astype(np.float32)}[layout]
    clf = LinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-5, max_iter=5000, random_state=0).fit(Xf, y)
    assert clf.duality_gap_ <= 1e-5
    assert abs(clf.objective_ - expected) / expected < 1e-4
    assert clf.coef_.shape == (10, 64) and clf.intercept_.shape == (10,)
    W = np.hstack([clf.coef_, clf.intercept_[:, None]])
    cost = np.full(len(y), 0.1)
    assert clf.objective_ == pytest.approx(
        reference_primal(X, np.searchsorted(clf.classes_, y), cost, W, 1.0), rel=1e-9
    )
    assert clf.history_[-1]["class"] is None and clf.history_[-1]["gap"] <= 1e-5


def test_class_weights_and_no_intercept(digits):
    X, y = digits
    weights = {c: 0.5 + 0.1 * c for c in range(10)}
    expected = liblinear_objective(X, y, 0.1, fit_intercept=False, class_weight=weights)
    clf = LinearSVC(
        C=0.1, multi_class="crammer_singer", fit_intercept=False, class_weight=weights, tol=1e-5,
        max_iter=5000, random_state=0,
    ).fit(X, y)  # fmt: skip
    assert abs(clf.objective_ - expected) / expected < 1e-4
    assert np.all(clf.intercept_ == 0.0)


def test_two_classes_give_one_row_as_scikit_learn(digits):
    X, y = digits
    mask = (y == 3) | (y == 8)
    X2, y2 = X[mask], y[mask]
    ours = LinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-6, max_iter=5000, random_state=0).fit(X2, y2)
    ref = LiblinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-8, max_iter=200_000).fit(X2, y2)
    assert ours.coef_.shape == ref.coef_.shape == (1, 64)
    assert np.isscalar(ours.objective_) or np.ndim(ours.objective_) == 0
    np.testing.assert_array_equal(ours.predict(X2), ref.predict(X2))
    np.testing.assert_allclose(ours.decision_function(X2), ref.decision_function(X2), atol=2e-3)


def test_sample_weight_zero_drops_rows(digits):
    X, y = digits
    weight = np.ones(len(y))
    weight[::3] = 0.0
    a = LinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-6, max_iter=5000, random_state=0)
    a.fit(X, y, sample_weight=weight)
    b = LinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-6, max_iter=5000, random_state=0)
    b.fit(X[weight > 0], y[weight > 0])
    assert a.objective_ == pytest.approx(b.objective_, rel=2e-6)


def test_bad_multi_class_is_named(digits):
    X, y = digits
    with pytest.raises(ValueError, match="multi_class must be one of 'ovr', 'crammer_singer'"):
        LinearSVC(multi_class="multinomial").fit(X, y)


# -- out of core -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solver, extra",
    [("streamsvm", {}), ("sbm", {}), ("sbm", {"cache_policy": "random"}), ("bm", {})],
)
@pytest.mark.parametrize("sparse", [False, True])
def test_digits_out_of_core_matches_liblinear(digits, solver, extra, sparse):
    X, y = digits
    expected = liblinear_objective(X, y, 0.1)
    Xd = da.from_array(X, chunks=(150, 64))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 64)))
    yd = da.from_array(y, chunks=150)
    clf = LinearSVC(
        C=0.1, multi_class="crammer_singer", solver=solver, cache_bytes=int(0.3 * X.nbytes), tol=1e-4,
        max_iter=300, random_state=0, **extra,
    ).fit(Xd, yd)  # fmt: skip
    assert clf.duality_gap_ <= 1e-4
    assert abs(clf.objective_ - expected) / expected < 1e-4
    last = clf.history_[-1]
    assert last["class"] is None and last["cache_bytes"] <= int(0.3 * X.nbytes)
    # The certificate is that of the returned model.
    W = np.hstack([clf.coef_, clf.intercept_[:, None]])
    cost = np.full(len(y), 0.1)
    assert clf.objective_ == pytest.approx(
        reference_primal(X, np.searchsorted(clf.classes_, y), cost, W, 1.0), rel=1e-9
    )


def test_out_of_core_same_seed_same_model(digits):
    X, y = digits
    Xd, yd = da.from_array(X, chunks=(300, 64)), da.from_array(y, chunks=300)

    def fit():
        return LinearSVC(
            C=0.1, multi_class="crammer_singer", solver="sbm", cache_bytes=int(0.3 * X.nbytes), tol=1e-3,
            max_iter=100, random_state=7,
        ).fit(Xd, yd)  # fmt: skip

    np.testing.assert_array_equal(fit().coef_, fit().coef_)


def test_model_file_round_trip(digits, tmp_path):
    from dask_streamsvm import load

    X, y = digits
    clf = LinearSVC(C=0.1, multi_class="crammer_singer", tol=1e-3, random_state=0).fit(X, y)
    clf.save(tmp_path / "cs.model")
    again = load(tmp_path / "cs.model")
    assert again.multi_class == "crammer_singer" and again.objective_ == clf.objective_
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("multi_class", ["ovr", "crammer_singer"])
@pytest.mark.parametrize("solver", ["streamsvm", "sbm"])
def test_classes_seen_first_in_the_last_partition_are_trained_and_certified(digits, multi_class, solver):
    """Rows sorted so that classes 8 and 9 appear only in the last of 6 partitions: every class is
    learned, and each problem (or the joint one) reaches LIBLINEAR's optimum within its certified gap."""
    X, y = digits
    late = np.isin(y, [8, 9])
    order = np.concatenate([np.flatnonzero(~late), np.flatnonzero(late)])
    X, y = X[order], y[order]
    early = int((~late).sum())
    chunks = tuple(len(c) for c in np.array_split(np.arange(early), 5)) + (int(late.sum()),)
    assert set(y[:early]) == set(range(8)) and set(y[early:]) == {8, 9}
    C, tol = 0.1, 1e-4
    clf = LinearSVC(
        C=C, multi_class=multi_class, solver=solver, cache_bytes=int(0.3 * X.nbytes), tol=tol, max_iter=300,
        random_state=0,
    ).fit(da.from_array(X, chunks=(chunks, 64)), da.from_array(y, chunks=(chunks,)))  # fmt: skip
    np.testing.assert_array_equal(clf.classes_, np.arange(10))
    assert np.all(clf.duality_gap_ <= tol)
    if multi_class == "crammer_singer":
        expected = liblinear_objective(X, y, C)
        assert abs(clf.objective_ - expected) / expected < tol
        return
    ref = LiblinearSVC(C=C, tol=1e-10, max_iter=200_000).fit(X, y)
    for k in range(10):  # each one-vs-rest problem: its own primal against LIBLINEAR's
        sign = np.where(y == k, 1.0, -1.0)

        def primal(w, b, sign=sign):
            return 0.5 * (w @ w + b * b) + C * np.square(np.maximum(0.0, 1 - sign * (X @ w + b))).sum()

        expected = primal(ref.coef_[k], ref.intercept_[k])
        assert primal(clf.coef_[k], clf.intercept_[k]) == pytest.approx(clf.objective_[k], rel=1e-9)
        assert abs(clf.objective_[k] - expected) / expected < tol
    assert (clf.predict(X) == y).mean() > 0.95
