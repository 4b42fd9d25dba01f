"""LogisticRegression: scikit-learn's optimum (LIBLINEAR's problem) on every path, with a certificate.

The reference is scikit-learn's ``LogisticRegression(solver="liblinear")`` at a tight tolerance,
which minimises the same problem: ``1/2 ||w||^2 + sum_i C_i log(1 + exp(-y_i w . [x_i, B]))``,
the intercept a regularised weight of the constant feature ``B = intercept_scaling``.  Its
objective is at least the optimum, so a certified model's objective may exceed it by no more
than its own relative gap (and never fall below it by more than rounding).
"""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogisticRegression

from dask_streamsvm import LinearSVC, LogisticRegression, load
from dask_streamsvm.datasets import load_a9a

from ._helpers import two_worker_client

ROUNDING = 1e-10  # relative: two objectives of one problem summed in different orders


def primal(X, y, coef, intercept, C, bias=1.0, sample_weight=None, classes=None):
    """The logistic primal of a binary model ``(coef, intercept)`` with costs ``C`` (a number or one
    per row), labels mapped to +1 for ``classes[1]``."""
    classes = np.unique(y) if classes is None else classes
    sign = np.where(np.asarray(y) == classes[1], 1.0, -1.0)
    w_b = intercept / bias if bias else 0.0
    cost = C * (1.0 if sample_weight is None else sample_weight)
    z = np.asarray(X @ coef).ravel() + intercept
    return 0.5 * (coef @ coef + w_b * w_b) + float(np.sum(cost * np.logaddexp(0.0, -sign * z)))


def liblinear(X, y, C, **params):
    """scikit-learn's liblinear solution at a tight tolerance: ``(coef, intercept, objective)``."""
    sample_weight = params.pop("sample_weight", None)
    ref = SkLogisticRegression(C=C, solver="liblinear", tol=1e-12, max_iter=100_000, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y, sample_weight=sample_weight)
    bias = params.get("intercept_scaling", 1.0)
    cost = C
    if params.get("class_weight") is not None:
        cost = C * np.array([params["class_weight"][label] for label in np.asarray(y)])
    objective = primal(X, y, ref.coef_[0], ref.intercept_[0], cost, bias, sample_weight)
    return ref.coef_[0], ref.intercept_[0], objective


def assert_certified_optimum(clf, p_ref, tol):
    """``clf``'s objective is within its certified gap of the reference's (which is at least the
    optimum), its gap within ``tol``, and not below the reference beyond rounding."""
    rel = (clf.objective_ - p_ref) / clf.objective_
    assert clf.duality_gap_ <= tol
    assert rel <= clf.duality_gap_ + ROUNDING, (rel, clf.duality_gap_)
    assert rel >= -1e-7, rel  # liblinear's own point is within 1e-7 of its optimum here


@pytest.fixture(scope="module")
def a9a_part():
    X, y = load_a9a("train")
    return X[:6000], y[:6000]


@pytest.mark.parametrize("dual", [True, False])
@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_in_memory_reaches_the_liblinear_optimum(a9a_part, dual, layout, dtype):
    X, y = a9a_part
    X = X.astype(dtype)
    X = X.toarray() if layout == "dense" else X
    _, _, p_ref = liblinear(X.astype(np.float64), y, 2.0)
    clf = LogisticRegression(C=2.0, dual=dual, tol=1e-7, random_state=0).fit(X, y)
    assert_certified_optimum(clf, p_ref, 1e-7)
    # The reported objective is the primal of the returned coefficients.
    assert primal(X.astype(np.float64), y, clf.coef_[0], clf.intercept_[0], 2.0) == pytest.approx(
        clf.objective_, rel=1e-9
    )
    assert clf.history_[-1]["gap"] <= 1e-7


def test_the_gap_bounds_the_true_suboptimality_on_every_path(a9a_part):
    """At loose tolerances the certified gap is an upper bound of the distance to the optimum, in
    memory (dual and primal) and streamed (StreamSVM, SBM, BM, Newton reads)."""
    X, y = a9a_part
    X, y = X[:3000], y[:3000]
    p_star = LogisticRegression(C=1.0, tol=1e-10, random_state=0).fit(X, y).objective_
    Xd = da.from_array(X.toarray(), chunks=(500, X.shape[1]))
    yd = da.from_array(y, chunks=500)
    fits = [
        (X, dict(dual=True)),
        (X, dict(dual=False)),
        (Xd, dict(solver="streamsvm", cache_bytes="20%", deterministic=True)),
        (Xd, dict(solver="sbm", cache_bytes="20%")),
        (Xd, dict(solver="bm", cache_bytes="20%")),
        (Xd, dict(dual=False)),
    ]
    for data, params in fits:
        for tol in (1e-1, 1e-2, 1e-4):
            clf = LogisticRegression(C=1.0, tol=tol, random_state=0, **params)
            clf.fit(data, yd if data is Xd else y)
            true = (clf.objective_ - p_star) / clf.objective_
            assert clf.duality_gap_ <= tol, params
            assert -ROUNDING <= true <= clf.duality_gap_ + ROUNDING, (params, tol, true, clf.duality_gap_)


@pytest.mark.parametrize(
    "params",
    [
        dict(solver="streamsvm", deterministic=True),
        dict(solver="streamsvm", cache_policy="random", deterministic=True),
        dict(solver="sbm"),
        dict(solver="sbm", cache_policy="random"),
        dict(solver="bm", cache_bytes="25%"),  # blocks of half the rows: smaller ones churn (as the SVM's)
        dict(dual=False),
    ],
    ids=["streamsvm", "streamsvm-random", "sbm", "sbm-random", "bm", "newton"],
)
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_streaming_reaches_the_in_memory_optimum(a9a_part, params, layout):
    """Every streaming solver, with a cache of a tenth of the rows (fewer than the rows the optimum
    leans on: every logistic row has alpha > 0; BM's blocks half the rows), certifies the in-memory
    optimum."""
    X, y = a9a_part
    p_star = LogisticRegression(C=1.0, tol=1e-10, random_state=0).fit(X, y).objective_
    dense = da.from_array(X.toarray(), chunks=(750, X.shape[1]))
    Xd = dense if layout == "dense" else dense.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 0)))
    yd = da.from_array(y, chunks=750)
    params = {"cache_bytes": "10%", **params}
    clf = LogisticRegression(C=1.0, tol=1e-5, max_iter=200, random_state=0, **params)
    clf.fit(Xd, yd)
    assert clf.duality_gap_ <= 1e-5
    assert -ROUNDING <= (clf.objective_ - p_star) / clf.objective_ <= clf.duality_gap_ + ROUNDING


def test_one_vs_rest_matches_liblinear_per_class():
    rng = np.random.RandomState(0)
    centres = rng.randn(3, 5) * 2
    y = rng.randint(0, 3, 900)
    X = centres[y] + rng.randn(900, 5)
    clf = LogisticRegression(C=0.5, tol=1e-8, multi_class="ovr", random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 5) and clf.intercept_.shape == (3,)
    for c in range(3):
        yc = (y == c).astype(int)
        _, _, p_ref = liblinear(X, yc, 0.5)
        rel = (clf.objective_[c] - p_ref) / clf.objective_[c]
        assert -1e-7 <= rel <= clf.duality_gap_[c] + ROUNDING
    proba = clf.predict_proba(X)
    own = expit(clf.decision_function(X))
    np.testing.assert_allclose(proba, own / own.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


def test_probabilities_are_the_models_own_and_lazy_on_dask(a9a_part):
    X, y = a9a_part
    clf = LogisticRegression(C=1.0, tol=1e-9, random_state=0).fit(X, y)
    ref = SkLogisticRegression(C=1.0, solver="liblinear", tol=1e-12, max_iter=10_000, random_state=0).fit(
        X, y
    )
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(proba[:, 1], expit(clf.decision_function(X)), rtol=1e-12)
    # The same optimum: the objective is 1-strongly convex, so ||w - w*||^2 <= 2 (P(w) - P*), here
    # at most 2 x 1e-9 x 2000 (and liblinear's far less): probabilities within about 1e-4.
    np.testing.assert_allclose(proba, ref.predict_proba(X), atol=1e-4)
    np.testing.assert_allclose(clf.predict_log_proba(X[:50]), np.log(proba[:50]), rtol=1e-12)
    Xd = da.from_array(X[:1000].toarray(), chunks=(250, X.shape[1]))
    lazy = clf.predict_proba(Xd)
    assert isinstance(lazy, da.Array) and lazy.numblocks[0] == 4
    np.testing.assert_allclose(lazy.compute(), proba[:1000], rtol=1e-12)
    assert not hasattr(clf, "probA_")


def test_weights_match_liblinear_and_repeated_rows(a9a_part):
    X, y = a9a_part
    X, y = X[:2000], y[:2000]
    rng = np.random.RandomState(1)
    weights = rng.randint(0, 3, X.shape[0]).astype(float)
    class_weight = {-1.0: 0.7, 1.0: 2.5}
    _, _, p_ref = liblinear(X, y, 1.5, sample_weight=weights, class_weight=class_weight)
    clf = LogisticRegression(C=1.5, class_weight=class_weight, tol=1e-9, random_state=0)
    clf.fit(X, y, sample_weight=weights)
    assert_certified_optimum(clf, p_ref, 1e-9)
    repeated = np.repeat(np.arange(X.shape[0]), weights.astype(int))
    again = LogisticRegression(C=1.5, class_weight=class_weight, tol=1e-9, random_state=0)
    again.fit(X[repeated], y[repeated])
    assert again.objective_ == pytest.approx(clf.objective_, rel=2e-9)


def test_partial_fit_learns_a_stream(a9a_part):
    X, y = a9a_part
    clf = LogisticRegression(C=1.0, cache_bytes="200KB", random_state=0)
    for start in range(0, X.shape[0], 1000):
        clf.partial_fit(X[start : start + 1000], y[start : start + 1000], classes=np.unique(y))
    full = LogisticRegression(C=1.0, tol=1e-8, random_state=0).fit(X, y)
    assert np.isnan(clf.objective_)
    assert clf.score(X, y) >= full.score(X, y) - 0.02
    # Starting from a fitted model, a pass over data it has seen changes it little.
    full.partial_fit(X[:1000], y[:1000])
    assert full.score(X, y) >= clf.score(X, y) - 0.02


def test_save_and_load_keep_the_model(a9a_part, tmp_path):
    X, y = a9a_part
    clf = LogisticRegression(C=0.3, tol=1e-6, random_state=0).fit(X, y)
    clf.save(tmp_path / "lr.model")
    back = load(tmp_path / "lr.model")
    assert type(back) is LogisticRegression and back.get_params()["C"] == 0.3
    np.testing.assert_array_equal(back.coef_, clf.coef_)
    np.testing.assert_array_equal(back.predict_proba(X[:100]), clf.predict_proba(X[:100]))
    assert back.duality_gap_ == clf.duality_gap_


def test_parameters_and_errors():
    clf = LogisticRegression()
    params = clf.get_params()
    assert "loss" not in params and "probability" not in params and params["multi_class"] == "auto"
    assert params["tol"] == 1e-3 and params["cluster"] == "auto" and params["dual"] == "auto"
    with pytest.raises(TypeError):
        LogisticRegression(loss="hinge")
    X = np.array([[0.0], [1.0], [2.0]])
    with pytest.raises(ValueError, match="LogisticRegression needs samples of at least 2 classes"):
        LogisticRegression().fit(X, [1, 1, 1])
    with pytest.raises(ValueError, match="penalty"):
        LogisticRegression(penalty="l3").fit(X, [0, 1, 1])
    # LinearSVC keeps its own losses: the logistic loss is LogisticRegression's.
    with pytest.raises(ValueError, match="loss must be one of 'squared_hinge', 'hinge'|loss must be one of"):
        LinearSVC(loss="log_loss").fit(X, [0, 1, 1])


def test_an_unconverged_fit_names_the_model_and_returns_a_certified_one(a9a_part):
    X, y = a9a_part
    with pytest.warns(ConvergenceWarning, match="LogisticRegression did not reach tol=1e-12"):
        clf = LogisticRegression(C=100.0, dual=True, tol=1e-12, max_iter=3, random_state=0).fit(X, y)
    assert np.isfinite(clf.objective_) and clf.duality_gap_ > 1e-12
    assert primal(X, y, clf.coef_[0], clf.intercept_[0], 100.0) == pytest.approx(clf.objective_, rel=1e-9)


def test_extreme_margins_keep_the_certificate_exact():
    """A row far on the right side (margin about 95) and one far on the wrong side (about -77) have
    dual variables ``C sigma(-m)`` within a float of 0 and of C: the steps keep them in the box
    and the certificate stays exact, in the dual and in the primal, whose Newton dual point
    ``alpha(w)`` has them too.  (Their norms make dual coordinate descent slow at C = 1: the
    primal solver takes that C, as ``dual="auto"`` would choose.)"""
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(200, 3) + 6, rng.randn(200, 3) - 6])
    y = np.repeat([1, 0], 200)
    X[0], X[1] = -50.0 * X[0], 50.0 * X[1]
    for dual, C in ((True, 0.1), (False, 0.1), (False, 1.0), (False, 1e4)):
        clf = LogisticRegression(C=C, dual=dual, tol=1e-8, max_iter=3000, random_state=0).fit(X, y)
        assert clf.duality_gap_ <= 1e-8
        _, _, p_ref = liblinear(X, y, C)
        assert -1e-7 <= (clf.objective_ - p_ref) / clf.objective_ <= clf.duality_gap_ + 1e-9
        margins = np.where(y == 1, 1.0, -1.0) * clf.decision_function(X)
        assert margins[0] < -37.0 and margins[1] > 37.0  # sigma(-37) < 2^-53: within a float of an end


@pytest.fixture(scope="module")
def client():
    with two_worker_client() as client:
        yield client


def _parts(X, y, n=4):
    step = -(-X.shape[0] // n)
    dense = X.toarray() if sp.issparse(X) else X
    Xd = da.from_array(dense, chunks=(step, X.shape[1]))
    if sp.issparse(X):
        Xd = Xd.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 0)))
    return Xd, da.from_array(y, chunks=step)


@pytest.mark.parametrize(
    ("params", "method", "tol"),
    [
        (dict(), "newton", 1e-8),
        # CoCoA+ rounds converge linearly, slowly at 2 parts as for the SVM (docs/guide/cluster.md)
        (dict(dual=True), "cocoa", 3e-3),
        # the parts trained to 1e-6: the average's own dual point is sensitive to them (below)
        (dict(cluster="average"), "average", 1e-6),
    ],
)
def test_a_cluster_fit_reaches_the_in_memory_optimum(client, a9a_part, params, method, tol):
    X, y = a9a_part
    X, y = X[:3000], y[:3000]
    p_star = LogisticRegression(C=1.0, tol=1e-10, random_state=0).fit(X, y).objective_
    Xd, yd = _parts(X, y)
    clf = LogisticRegression(C=1.0, tol=tol, max_iter=300, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the average's gap is reported, not a target
        clf.fit(Xd, yd, client=client)
    assert {r.get("method") for r in clf.history_} == {method}
    true = (clf.objective_ - p_star) / clf.objective_
    assert -ROUNDING <= true <= clf.duality_gap_ + ROUNDING
    if method != "average":  # the average's gap is reported, not a target
        assert clf.duality_gap_ <= tol
    else:  # certified by its own dual point (its parts' scales do not apply to an entropy)
        assert all(np.isnan(scale) for r in clf.history_[:-1] for scale in r["dual_scale"])
        # Two halves of these rows average to within 0.5% of the optimum (measured 0.0045); its own
        # dual point alpha(w) certifies 0.20-0.21 (the SVM's combined duals: 0.0073 and 0.051).  That
        # gap is about 1/2 ||grad P(w)||^2 / P(w), so it swings with how far each part was solved:
        # parts solved to 1e-3 gave 0.078 with one StreamSVM rhythm and 0.63 with another (the
        # same 0.0045 from the optimum), to 1e-4 0.19-0.25, to 1e-6 0.20-0.21 with both.
        assert clf.duality_gap_ < 0.25


def test_wide_data_on_a_cluster_takes_truncated_newton(client):
    rng = np.random.RandomState(0)
    X = sp.random(1500, 1500, density=0.01, random_state=rng, format="csr")
    y = (np.asarray(X @ rng.randn(1500)).ravel() + 0.1 * rng.randn(1500) > 0).astype(int)
    p_star = LogisticRegression(C=4.0, tol=1e-10, random_state=0).fit(X, y).objective_
    Xd, yd = _parts(X, y)
    clf = LogisticRegression(C=4.0, tol=1e-5, random_state=0).fit(Xd, yd, client=client)
    assert {r["method"] for r in clf.history_} == {"truncated_newton"}
    assert clf.duality_gap_ <= 1e-5
    assert -ROUNDING <= (clf.objective_ - p_star) / clf.objective_ <= clf.duality_gap_ + ROUNDING


def test_a_refused_newton_step_is_shortened_by_the_next_read():
    """The logistic loss reads no trial step lengths (primal_sums.trial_steps): a full step that
    fails Armijo's rule (from w = 0 at C = 1e6 on separable rows) is shortened by the next read, at
    least halved each time (newton.shortened), and the fit still ends certified; an accepted point
    never raises the objective."""
    from dask_streamsvm.engine.primal.sums import trial_steps
    from dask_streamsvm.kernels.losses import LOGISTIC, SQUARED_HINGE

    assert trial_steps(LOGISTIC).shape == (0,) and trial_steps(SQUARED_HINGE).shape == (12,)
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 5)
    y = (X[:, 0] > 0).astype(int)
    clf = LogisticRegression(C=1e6, dual=False, tol=1e-8, random_state=0).fit(X, y)
    assert any(not r["accepted"] for r in clf.history_), "the case needs a refused step"
    run = 0  # refusals in a row: the step the next accepted read took is at least halved as often
    for record in clf.history_[1:]:
        if not record["accepted"]:
            run += 1
            continue
        assert 0.0 < record["step"] <= 0.5**run
        run = 0
    accepted = [r["point_primal"] for r in clf.history_ if r["accepted"]]
    assert all(b <= a for a, b in zip(accepted, accepted[1:], strict=False))
    assert clf.duality_gap_ <= 1e-8


def test_the_shortened_step_interpolates_within_its_bounds():
    """newton.shortened: the minimum of the quadratic through f(w), the slope there and the refused
    f(w + s), at least 1/100 of the step (a value beyond float64's range, or far above the model's)
    and at most half of it (a value barely refused)."""
    from dask_streamsvm.engine.primal.newton import shortened

    assert shortened(0.0, -1.0, 1.0) == 0.25  # q(t) = -t + 2 t^2
    assert shortened(0.0, -1.0, -0.5) == 0.5  # q(t) = -t + t^2 / 2: its minimum at t = 1, capped
    assert shortened(0.0, -1.0, 1e6) == 0.01
    assert shortened(0.0, -1.0, np.inf) == 0.01 and shortened(0.0, -1.0, np.nan) == 0.01


def test_the_trust_radius_grows_fourfold_after_a_step_at_it():
    """newton._Problem: a refused step sets the trust radius to the shortened step's length; a
    Newton direction longer than the radius is cut to it, and once taken the radius grows by
    RADIUS_GROWTH (TRON's 4)."""
    from dask_streamsvm.engine.plan.losses import loss_of
    from dask_streamsvm.engine.primal.newton import _Problem
    from dask_streamsvm.engine.primal.sums import Sums

    def sums(loss):  # one problem's sums, a Hessian of 0 (H = I) and v = 0 (g = w)
        read = Sums.zeros(1, 2)
        read.loss[0], read.alpha[0] = loss, -1e12  # a dual far below: no certificate stops it
        return read

    problem = _Problem(2, loss_of("log_loss"))
    problem.w, problem.f, problem.g = np.array([100.0, 0.0]), 1e4, np.array([100.0, 0.0])
    problem.H, problem.s, problem.trial = np.eye(2), np.array([-100.0, 0.0]), True
    problem.update(sums(1e9), 0)  # f(w + s) = 1e9: refused, the step shortened to 1/100
    assert not problem.accepted and problem.radius == pytest.approx(1.0)
    np.testing.assert_allclose(problem.s, [-1.0, 0.0])
    problem.update(sums(0.0), 0)  # f(99, 0) = 4900.5: accepted; the direction -w cut to the radius
    assert problem.accepted and problem.step == pytest.approx(0.01)
    assert problem.radius == pytest.approx(4.0) and np.linalg.norm(problem.s) == pytest.approx(4.0)
    problem.update(sums(0.0), 0)  # taken at the radius again: it grows again
    assert problem.accepted and problem.radius == pytest.approx(16.0)


def _extreme_weights(seed=0):
    """Issue 50's rows: 3,000 x 10 Gaussian, labels of a noisy linear rule, weights Exp(1) with every
    7th 0 and every 11th 1e6.  At seed 0 the sample the Newton reads start from holds 41 of the heavy
    rows and separates them (norm 137, the optimum's 6), leaving 30 others at margins below -30,
    where their loss is linear and the Hessian misses them: a Newton step 1.2e6 long."""
    rng = np.random.RandomState(seed)
    X = rng.randn(3000, 10)
    y = (X @ rng.randn(10) + 0.5 * rng.randn(3000) > 0).astype(int)
    weights = rng.exponential(size=3000)
    weights[::7], weights[::11] = 0.0, 1e6
    return X, y, weights


@pytest.mark.parametrize("seed", [0, 6])
def test_extreme_sample_weights_reach_the_liblinear_optimum(seed):
    """Issue 50: the steps from a start 37 times above the optimum (the sample's) were refused or
    taken without a decrease, and the fit stayed there for 1,000 reads.  Shortened within a trust
    region, they reach liblinear's optimum, certified, in about 20 reads; on Dask input (the
    sample holds every row) its records are of the one read, and n_iter_ counts the steps after it
    (it said 0 after 1,001 records)."""
    X, y, weights = _extreme_weights(seed)
    _, _, p_ref = liblinear(X, y, 1.0, sample_weight=weights)
    clf = LogisticRegression(dual=False, tol=1e-8, max_iter=200).fit(X, y, sample_weight=weights)
    assert_certified_optimum(clf, p_ref, 1e-8)
    assert clf.history_[0]["primal"] > 30 * p_ref  # the case: its start is far above the optimum
    assert clf.n_iter_ <= 30 and [r["pass"] for r in clf.history_] == list(range(1, clf.n_iter_ + 1))
    accepted = [r["point_primal"] for r in clf.history_ if r["accepted"]]
    assert all(b <= a for a, b in zip(accepted, accepted[1:], strict=False))
    parts = (da.from_array(a, chunks=500) for a in (X, y, weights))
    # cluster=None: streamed in this process, whatever client an earlier test left active
    streamed = LogisticRegression(dual=False, tol=1e-8, max_iter=200, cluster=None).fit(*parts)
    assert_certified_optimum(streamed, p_ref, 1e-8)
    # (the partitions' order, and so the sample's own start, may differ from the array's)
    assert {r["pass"] for r in streamed.history_} == {0} and len(streamed.history_) == streamed.n_iter_ + 1
    assert streamed.history_[0]["sample_rows"] == len(y) and 1 <= streamed.n_iter_ <= 30


def test_the_newton_solvers_warning_does_not_advise_a_smaller_c():
    """A primal Newton fit that stops at max_iter is told to raise max_iter or loosen tol, or to try
    the dual solvers, not to lower C (its reads do not grow with C); a dual fit still is."""
    X, y, weights = _extreme_weights()
    with pytest.warns(ConvergenceWarning) as caught:
        LogisticRegression(dual=False, tol=1e-8, max_iter=2).fit(X, y, sample_weight=weights)
    (message,) = [str(w.message) for w in caught]
    assert "smaller C" not in message and "Increase max_iter or loosen tol" in message
    assert "primal Newton solver (dual=False)" in message and "dual=True" in message
    with pytest.warns(ConvergenceWarning, match="use a smaller C"):
        LogisticRegression(dual=True, tol=1e-12, max_iter=1, random_state=0).fit(X[:300], y[:300])


def test_in_memory_newton_starts_from_a_sample(monkeypatch):
    """A tall in-memory fit takes Newton's damped first steps on a tenth of its rows
    (warm.memory_start): its reads of every row are the last two or three, numbered from 1."""
    from dask_streamsvm.engine.primal import warm

    from ._helpers import noisy_linear_data

    X, y = noisy_linear_data(100_000, 10, seed=3)
    clf = LogisticRegression(C=1.0, tol=1e-8, random_state=0).fit(X, y)
    assert clf.history_[0]["sample_rows"] == 10_000 and clf.history_[0]["pass"] == 1
    assert clf.n_iter_ <= 4 and clf.duality_gap_ <= 1e-8
    monkeypatch.setattr(warm, "MEMORY_SAMPLE_SHARE", 0.3)  # a sample of more than a quarter: none
    cold = LogisticRegression(C=1.0, tol=1e-8, random_state=0).fit(X, y)
    assert "sample_rows" not in cold.history_[0] and cold.n_iter_ > clf.n_iter_
    assert cold.objective_ == pytest.approx(clf.objective_, rel=1e-8)


def test_verbose_lines_name_the_model(a9a_part, capsys):
    X, y = a9a_part
    LogisticRegression(C=1.0, dual=True, tol=1e-2, verbose=1, random_state=0).fit(X[:500], y[:500])
    out = capsys.readouterr().out
    assert out.startswith("[LogisticRegression] class=") and "[LinearSVC]" not in out
