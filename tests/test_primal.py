"""The primal Newton solver (``dual=False``): LIBLINEAR's optimum, an exact certificate, any input."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.plan.problem import FitPlan
from dask_streamsvm.engine.primal import newton as primal
from dask_streamsvm.engine.primal import reads

from ._helpers import load_libsvm_dataset

# Dask's frame operations warn under pandas 3.1 (its own use of ``inplace``), once per process.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def primal_value(X, y_sign, cost, w, b, bias=1.0):
    """``1/2 (||w||^2 + (b/bias)^2) + sum C_i max(0, 1 - y_i (w . x_i + b))^2`` in plain NumPy."""
    margin = y_sign * (np.asarray(X @ w).ravel() + b)
    return 0.5 * (w @ w + (b / bias) ** 2) + float(cost @ np.square(np.maximum(0.0, 1.0 - margin)))


def liblinear(X, y, **params):
    return LiblinearSVC(dual=False, tol=1e-10, max_iter=100_000, **params).fit(X, y)


def check_optimum(clf, X, y, C_rows, ref, bias=1.0):
    """Each problem's objective is the returned model's exact primal, within its certified gap of
    LIBLINEAR's, and the gap is a true bound (the dual value is below the optimum)."""
    gaps = np.atleast_1d(clf.duality_gap_)
    objectives = np.atleast_1d(clf.objective_)
    classes = clf.classes_
    ref_intercept = np.broadcast_to(ref.intercept_, (ref.coef_.shape[0],))
    problems = [classes[1]] if len(classes) == 2 else list(classes)
    for c, label in enumerate(problems):
        sign = np.where(y == label, 1.0, -1.0)
        cost = C_rows(label) if callable(C_rows) else C_rows
        ours = primal_value(X, sign, cost, clf.coef_[c], clf.intercept_[c], bias)
        theirs = primal_value(X, sign, cost, ref.coef_[c], ref_intercept[c], bias)
        assert objectives[c] == pytest.approx(ours, rel=1e-10)
        assert (ours - theirs) / theirs <= gaps[c] + 1e-9
        dual = objectives[c] * (1 - gaps[c])
        assert dual <= theirs * (1 + 1e-9)  # weak duality: the certificate never claims more
        assert gaps[c] <= clf.tol


@pytest.mark.parametrize("name", ["a9a", "ijcnn1", "w8a"])
def test_in_memory_reaches_liblinears_optimum(name):
    X, y = load_libsvm_dataset(name)
    clf = LinearSVC(dual=False, tol=1e-6).fit(X, y)
    check_optimum(clf, X, y, np.ones(len(y)), liblinear(X, y))
    assert clf.n_iter_ <= 15
    assert all(record["solver"] == "newton" for record in clf.history_)


@pytest.mark.parametrize("name", ["ijcnn1", "w8a"])
def test_out_of_core_reaches_liblinears_optimum(name):
    """As in memory, streaming a Dask Array of sparse partitions (a9a: the test below, in every
    kind of collection)."""
    from dask_streamsvm.io import csr_to_dask

    X, y = load_libsvm_dataset(name)
    Xd, yd = csr_to_dask(X, y, 6)
    clf = LinearSVC(dual=False, tol=1e-6).fit(Xd, yd)
    check_optimum(clf, X, y, np.ones(len(y)), liblinear(X, y))
    # Every row in the sample: one read of the source, n_iter_ the Newton steps on the rows it kept.
    assert clf.history_[0]["sample_rows"] == len(y) and clf.history_[-1]["rows_read"] == len(y)
    assert clf.n_iter_ + 1 <= 15 and len(clf.history_) - 1 == clf.n_iter_


@pytest.mark.slow  # among make test's slowest (issue 51: the default suite in six minutes)
def test_intercept_scaling_class_and_sample_weights():
    X, y = load_libsvm_dataset("a9a")
    rng = np.random.RandomState(0)
    weights = rng.uniform(0.0, 2.0, size=len(y))
    params = dict(C=0.5, class_weight={-1.0: 1.0, 1.0: 3.0}, intercept_scaling=2.0)
    clf = LinearSVC(dual=False, tol=1e-7, **params).fit(X, y, sample_weight=weights)
    ref = liblinear(X, y, **params).fit(X, y, sample_weight=weights)
    cost = 0.5 * weights * np.where(y == 1, 3.0, 1.0)
    check_optimum(clf, X, y, cost, ref, bias=2.0)


def test_no_intercept():
    X, y = load_libsvm_dataset("ijcnn1")
    clf = LinearSVC(dual=False, fit_intercept=False, tol=1e-7).fit(X, y)
    ref = liblinear(X, y, fit_intercept=False)
    assert clf.intercept_[0] == 0.0
    check_optimum(clf, X, y, np.ones(len(y)), ref)


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.RandomState(3)
    centres = np.array([[0.0, 2.0, 0.0, 1.0], [2.0, -1.0, 0.0, 0.0], [-2.0, -1.0, 1.0, -1.0]])
    y = rng.randint(0, 3, size=3000)
    X = centres[y] + 1.3 * rng.randn(3000, 4)
    return X, np.array(["ant", "bee", "cat"])[y]


def test_one_vs_rest_from_one_read_per_step(three_classes):
    X, y = three_classes
    weights = {"ant": 1.0, "bee": 2.0, "cat": 0.5}
    clf = LinearSVC(dual=False, tol=1e-7, class_weight=weights).fit(X, y)
    ref = liblinear(X, y, class_weight=weights)

    def cost(label):  # LIBLINEAR's one-vs-rest weights only the positive class
        return np.where(y == label, weights[label], 1.0)

    check_optimum(clf, X, y, cost, ref)
    passes = [r["pass"] for r in clf.history_]
    assert len(passes) == sum(passes.count(p) for p in set(passes))
    assert max(passes) == clf.n_iter_  # all classes share the reads (numbered from 1 in memory)
    Xd = da.from_array(X, chunks=(700, 4))
    streamed = LinearSVC(dual=False, tol=1e-7, class_weight=weights).fit(Xd, da.from_array(y, chunks=700))
    check_optimum(streamed, X, y, cost, ref)


def _a9a_frame():
    X, y = load_libsvm_dataset("a9a")
    frame = pd.DataFrame(X.toarray(), columns=[f"f{j}" for j in range(X.shape[1])])  # one block
    return X, y, frame.assign(label=np.where(y > 0, "yes", "no"))


def _a9a_parquet(frame, tmp_path):
    """a9a's frame as Parquet files of 4,100 rows, read back by Dask."""
    (tmp_path / "a9a").mkdir()
    for k, start in enumerate(range(0, len(frame), 4100)):
        frame.iloc[start : start + 4100].to_parquet(tmp_path / "a9a" / f"part-{k}.parquet")
    return dd.read_parquet(tmp_path / "a9a")


@pytest.mark.parametrize("kind", ["array", "csr-array", "frame", "parquet"])
def test_out_of_core_gives_the_in_memory_model(kind, tmp_path):
    X, y, frame = _a9a_frame()
    if kind == "array":
        Xd, yd = da.from_array(X.toarray(), chunks=(4000, 123)), da.from_array(y, chunks=4000)
    elif kind == "csr-array":
        dense = da.from_array(X.toarray(), chunks=(4000, 123))
        Xd = dense.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 123)))
        yd = da.from_array(y, chunks=4000)
    else:
        ddf = _a9a_parquet(frame, tmp_path) if kind == "parquet" else dd.from_pandas(frame, npartitions=8)
        Xd, yd = ddf.drop(columns="label"), ddf["label"]
    clf = LinearSVC(dual=False, tol=1e-6).fit(Xd, yd)  # every row in the sample: one read
    memory = LinearSVC(dual=False, tol=1e-6).fit(X.toarray(), y)  # dense: it forms the Hessian too
    np.testing.assert_allclose(clf.coef_, memory.coef_, rtol=1e-6, atol=1e-8)
    assert clf.objective_ == pytest.approx(memory.objective_, rel=1e-9)
    assert clf.duality_gap_ <= 1e-6 and clf.n_iter_ == memory.n_iter_ - 1  # its steps after the read
    assert [r["rows_read"] for r in clf.history_] == [len(y)] * len(clf.history_)


@pytest.mark.parametrize("kind", ["array", "csr-array", "parquet"])
def test_out_of_core_from_a_sample_reaches_the_in_memory_optimum(kind, tmp_path, partial_sample):
    """A warm start from 620 of a9a's 32,561 rows: the Newton reads stream, one per step, and end at
    the in-memory optimum within the certified gap."""
    X, y, frame = _a9a_frame()
    if kind == "parquet":
        ddf = _a9a_parquet(frame, tmp_path)
        Xd, yd = ddf.drop(columns="label"), ddf["label"]
    else:
        Xd, yd = da.from_array(X.toarray(), chunks=(4000, 123)), da.from_array(y, chunks=4000)
        if kind == "csr-array":
            Xd = Xd.map_blocks(sp.csr_matrix, meta=sp.csr_matrix((0, 123)))
    clf = LinearSVC(dual=False, tol=1e-6).fit(Xd, yd)
    assert clf.history_[0]["sample_rows"] == 5 * 124 and clf.n_iter_ >= 1
    optimum = LinearSVC(dual=False, tol=1e-10).fit(X, y).objective_
    assert clf.duality_gap_ <= 1e-6
    assert (clf.objective_ - optimum) / optimum <= max(clf.duality_gap_, 0.0) + 1e-12  # the gap bounds it
    assert clf.objective_ * (1 - clf.duality_gap_) <= optimum * (1 + 1e-12)  # weak duality
    assert [r["rows_read"] for r in clf.history_] == [len(y) * (r["pass"] + 1) for r in clf.history_]


def test_same_data_same_model_bit_for_bit():
    X, y = load_libsvm_dataset("a9a")
    Xd, yd = da.from_array(X.toarray(), chunks=(3000, 123)), da.from_array(y, chunks=3000)
    first = LinearSVC(dual=False, random_state=1).fit(Xd, yd)
    second = LinearSVC(dual=False, random_state=2).fit(Xd, yd)  # no randomness: seeds do not matter
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.intercept_, second.intercept_)


def raw_scale_tall(n=200_000, seed=0):
    """Three colour-like features on a 0..255 scale, labels of a hyperplane away from the origin."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 256, size=(n, 3)).astype(np.float64)
    y = (X @ [0.02, -0.03, 0.01] + 0.8 * rng.randn(n) > -0.5).astype(int)
    return X, y


def test_raw_scale_features_take_as_few_reads_as_scaled_ones():
    """Newton's steps do not care how the features are scaled, where dual coordinate descent does."""
    X, y = raw_scale_tall()
    raw = LinearSVC(dual=False, tol=1e-3).fit(X, y)
    scaled = LinearSVC(dual=False, tol=1e-3).fit(X / 255.0, y)
    assert raw.duality_gap_ <= 1e-3 and scaled.duality_gap_ <= 1e-3
    assert raw.n_iter_ <= scaled.n_iter_ + 2 and raw.n_iter_ <= 15
    ref = liblinear(X, y)
    check_optimum(raw, X, y, np.ones(len(y)), ref)
    # "auto" picks the primal solver for data this tall: the same model
    auto = LinearSVC(tol=1e-3).fit(X, y)
    assert auto.history_[-1]["solver"] == "newton"
    np.testing.assert_array_equal(auto.coef_, raw.coef_)


def test_auto_keeps_the_dual_solvers_where_the_primal_does_not_apply():
    X, y = raw_scale_tall(20_000)
    X = X / 255.0
    for params in [{"loss": "hinge"}, {"multi_class": "crammer_singer"}, {"dual": True}]:
        clf = LinearSVC(tol=1e-2, **params).fit(X, y)
        assert "solver" not in clf.history_[-1]
    sparse = LinearSVC(tol=1e-2).fit(sp.csr_matrix(X[:300]), y[:300])  # 300 sparse rows of 3 features
    assert "solver" not in sparse.history_[-1]


@pytest.mark.parametrize("Estimator", ["LinearSVC", "LogisticRegression"])
def test_auto_in_memory_takes_the_primal_on_dense_rows_at_least_the_width(Estimator):
    """DENSE_PRIMAL_RATIO: in memory, dual="auto" runs the primal Newton solver on dense rows from as
    many rows as the model's width (features plus bias), the dual below; sparse rows, and rows through
    a feature map, keep PRIMAL_RATIO.  Changing either constant moves a boundary tested here (a test
    that fails), and so does dropping the rule."""
    import dask_streamsvm
    from dask_streamsvm.engine.choice import DENSE_PRIMAL_RATIO, PRIMAL_RATIO
    from dask_streamsvm.features import PolynomialMap, Standardize

    estimator = getattr(dask_streamsvm, Estimator)
    rng = np.random.default_rng(0)
    width = 10  # 9 features and the bias
    X = rng.standard_normal((PRIMAL_RATIO * width, width - 1))
    y = np.where(X @ rng.standard_normal(width - 1) + rng.standard_normal(len(X)) > 0, 1, 0)

    def primal(X, y, **params):
        # Seeded: unseeded, the dual's passes on the degree-2 map's rows ran past max_iter=1000 for 1
        # seed in 60 (a ConvergenceWarning, an error here), the same before and after 2026-12-03.
        fit = estimator(tol=1e-2, random_state=0, **params).fit(X, y)
        return "solver" in fit.history_[-1]  # the dual records none

    dense = DENSE_PRIMAL_RATIO * width
    assert primal(X[:dense], y[:dense]) and not primal(X[: dense - 1], y[: dense - 1])
    assert primal(sp.csr_matrix(X), y) and not primal(sp.csr_matrix(X[:-1]), y[:-1])
    # A feature map's rows (1,000 here, against the degree-2 map's 55 columns) keep PRIMAL_RATIO;
    # Standardize, whose scales one read learns, is no map: its rows are the dense rows'.
    assert not primal(X, y, feature_map=PolynomialMap())
    assert primal(X[:dense], y[:dense], feature_map=Standardize())


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"loss": "hinge"}, "loss='hinge'"),
        ({"multi_class": "crammer_singer"}, "crammer_singer"),
        ({"solver": "sbm"}, "solver='sbm'"),
        ({"probability": True}, "probability=True on a Dask collection"),
    ],
)
def test_dual_false_names_what_it_cannot_do(params, fragment):
    X, y = raw_scale_tall(2_000)
    Xd, yd = da.from_array(X, chunks=500), da.from_array(y, chunks=500)
    with pytest.raises(ValueError, match="dual=False") as info:
        LinearSVC(dual=False, **params).fit(Xd, yd)
    assert fragment in str(info.value) and "dual=True" in str(info.value)


@pytest.mark.parametrize(
    "params, fragment", [({"penalty": "l3"}, "'l2', 'l1'"), ({"dual": "yes"}, "'auto', True or False")]
)
def test_bad_penalty_or_dual_is_named(params, fragment):
    X, y = raw_scale_tall(2_000)
    with pytest.raises(ValueError, match=next(iter(params))) as info:
        LinearSVC(**params).fit(X, y)
    assert fragment in str(info.value)


def test_too_wide_a_model_out_of_core_is_refused_with_the_ways_out():
    rng = np.random.RandomState(0)
    X = sp.random(50, primal.MAX_WIDTH, density=0.01, format="csr", random_state=rng)
    y = rng.randint(0, 2, size=50)
    Xd = da.from_array(X.toarray(), chunks=(25, primal.MAX_WIDTH))
    with pytest.raises(ValueError, match="use dual=True") as info:
        LinearSVC(dual=False).fit(Xd, da.from_array(y, chunks=25))
    assert "train in memory" in str(info.value)


def wide_sparse(n=3000, d=6000, seed=3):
    """Sparse rows wider than the Hessian the solver forms, with columns on scales 1 to 10."""
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.004, format="csr", random_state=rng)
    X = X @ sp.diags(10.0 ** rng.uniform(0, 1, size=d))
    w = rng.randn(d) / 10.0 ** rng.uniform(0, 1, size=d)
    y = (X @ w + 0.1 * rng.randn(n) > 0).astype(int)
    return sp.csr_matrix(X), y


def test_wide_sparse_rows_in_memory_take_hessian_products_to_liblinears_optimum():
    """Wider than :data:`primal.MAX_WIDTH`, in memory: truncated Newton steps by preconditioned
    conjugate gradient on Hessian products, to LIBLINEAR's optimum within the certified gap."""
    X, y = wide_sparse()
    clf = LinearSVC(dual=False, C=0.5, tol=1e-6).fit(X, y)
    assert clf.coef_.shape == (1, X.shape[1]) and clf.duality_gap_ <= 1e-6
    assert sum(r["hessian_products"] for r in clf.history_) > 0 and clf.n_iter_ <= 60
    check_optimum(clf, X, y, np.full(len(y), 0.5), liblinear(X, y, C=0.5))


def test_the_conjugate_gradient_is_preconditioned_by_the_hessians_diagonal(monkeypatch):
    """On a9a with its columns rescaled over two decades, the diagonal preconditioner cuts the
    Hessian products Newton's steps need: without it (the identity) they need several times as
    many (measured: 397 against 2,467 to a gap of 1e-4)."""
    X, y = load_libsvm_dataset("a9a")
    scales = 10.0 ** np.random.RandomState(0).uniform(0, 2, size=X.shape[1])
    X = sp.csr_matrix(X @ sp.diags(scales))
    plan = FitPlan(C=1.0, tol=1e-4, max_iter=100, solver="memory").with_labels(
        np.array([-1, 1]), np.bincount(y > 0), np.array([-1, 1])
    )

    def products():
        read = reads.memory_read(X, (y > 0).astype(int), np.ones(len(y)), plan, products=True)
        result = primal.solve_primal(read, plan, X.shape[1])
        assert result.converged[0]
        return sum(r["hessian_products"] for r in result.history)

    preconditioned = products()
    monkeypatch.setattr(primal, "PRECONDITIONER", 0.0)
    assert products() > 3 * preconditioned


def test_hessian_products_and_the_hessian_reach_the_same_optimum(monkeypatch):

    X, y = load_libsvm_dataset("ijcnn1")
    dense = LinearSVC(dual=False, tol=1e-8).fit(X.toarray(), y)
    formed = LinearSVC(dual=False, tol=1e-8).fit(X, y)  # 59% full: made dense once, the Hessian formed
    monkeypatch.setattr(reads, "prefers_products", lambda X, plan: True)
    sparse = LinearSVC(dual=False, tol=1e-8).fit(X, y)
    assert sum(r["hessian_products"] for r in sparse.history_) > 0
    assert sum(r["hessian_products"] for r in dense.history_) == 0
    assert sum(r["hessian_products"] for r in formed.history_) == 0
    assert formed.objective_ == pytest.approx(dense.objective_, rel=2e-8)
    assert sparse.objective_ == pytest.approx(dense.objective_, rel=2e-8)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-3, atol=1e-5)


def test_a_full_step_that_does_not_decrease_enough_is_shortened_from_the_same_read():
    """Armijo's rule: a full Newton step that overshoots is not taken; the longest step length of
    :data:`primal.STEPS` that decreases f enough is, chosen from the trial losses of the same read.
    Every point the solver moves to is then better than the last; without the rule the overshoot
    (here 60,768 after 41,463) would be taken."""
    rng = np.random.RandomState(14)
    X = rng.randn(60, 2) * rng.choice([1, 30], size=(60, 1), p=[0.9, 0.1])  # a few rows far out
    y = (X[:, 0] + rng.randn(60) > 0).astype(int)
    classes = np.array([0, 1])
    plan = FitPlan(C=1000.0, tol=1e-12, max_iter=60, solver="memory").with_labels(
        classes, np.bincount(y), classes
    )
    result = primal.solve_primal(reads.memory_read(X, y, np.ones(len(y)), plan), plan, 2)
    assert result.converged[0] and result.certificates[0].relative_gap <= 1e-12
    rejected = [r for r in result.history if not r["accepted"]]
    assert rejected and all(0 < r["step"] < 1 for r in rejected)
    accepted = [r["point_primal"] for r in result.history if r["accepted"]]
    assert np.all(np.diff(accepted) < 0)
    sign = np.where(y == 1, 1.0, -1.0)
    w = result.W[0]
    assert result.certificates[0].primal == pytest.approx(
        primal_value(X, sign, np.full(len(y), 1000.0), w[:2], w[2]), rel=1e-12
    )


def test_verbose_one_draws_a_bar_per_read_without_a_cache(capsys):
    X, y = raw_scale_tall(20_000)
    LinearSVC(dual=False, verbose=1).fit(da.from_array(X, chunks=(2500, 3)), da.from_array(y, chunks=2500))
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("pass 0 [####################] 8/8 partitions 20.0k rows gap ")
    assert len(lines) >= 3 and not any("cache" in line for line in lines)


def test_probabilities_in_memory_come_from_the_primal_solver_too():
    """probability=True cross-fits the sigmoid with the solver the model is fitted with; the model
    is the ordinary fit on every row, as for the dual solvers."""
    X, y = raw_scale_tall(20_000)
    X = X / 255.0
    plain = LinearSVC(dual=False).fit(X, y)
    calibrated = LinearSVC(dual=False, probability=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(calibrated.coef_, plain.coef_)
    proba = calibrated.predict_proba(X)[:, 1]
    assert np.corrcoef(proba, calibrated.decision_function(X))[0, 1] > 0.9
    assert abs(proba.mean() - y.mean()) < 0.02  # calibrated: the mean probability is the base rate


@pytest.mark.parametrize("fmap", ["poly", "hash"])
def test_feature_maps_train_on_the_maps_features(fmap):
    """A narrow map's features are written out a chunk of rows at a time: the optimum is LIBLINEAR's
    on the materialised features, in memory and streaming."""
    from dask_streamsvm.features import HashingMap, PolynomialMap, materialise

    rng = np.random.RandomState(5)
    X = rng.randn(6000, 4)
    y = ((X[:, 0] * X[:, 1] + 0.5 * X[:, 2] ** 2 + 0.2 * rng.randn(6000)) > 0.4).astype(int)
    if fmap == "poly":  # computed inside the solver from the spec
        feature_map = PolynomialMap()
        phi = materialise(X, feature_map.spec(4)).toarray()
    else:  # an encoding map: the reader hashes the rows, the solver sees them hashed
        feature_map = HashingMap(n_features=16)
        phi = feature_map.fit_transform(X).toarray()
    ref = liblinear(phi, y)
    clf = LinearSVC(dual=False, feature_map=feature_map, tol=1e-7).fit(X, y)
    assert clf.coef_.shape == (1, phi.shape[1])
    check_optimum(clf, phi, y, np.ones(len(y)), ref)
    streamed = LinearSVC(dual=False, feature_map=feature_map, tol=1e-7).fit(
        da.from_array(X, chunks=(1000, 4)), da.from_array(y, chunks=1000)
    )
    check_optimum(streamed, phi, y, np.ones(len(y)), ref)
    assert (streamed.predict(X) == clf.predict(X)).all()
    auto = LinearSVC(feature_map=feature_map, tol=1e-7).fit(X, y)  # 6000 rows >= 100 x 16: primal
    assert auto.history_[-1]["solver"] == "newton"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_map_too_wide_for_the_hessian_is_refused_by_name():
    from dask_streamsvm.features import HashingMap

    X, y = raw_scale_tall(2_000)
    Xd, yd = da.from_array(X, chunks=(500, 3)), da.from_array(y, chunks=500)
    with pytest.raises(ValueError, match="8193 x 8193 Hessian.*use dual=True"):
        LinearSVC(dual=False, feature_map=HashingMap(n_features=2**13)).fit(Xd, yd)
    # In memory the hashed rows are made once, sparse, and train by Hessian products.
    wide = LinearSVC(dual=False, feature_map=HashingMap(n_features=2**13), tol=1e-6).fit(X / 255.0, y)
    assert wide.duality_gap_ <= 1e-6 and wide.history_[-1]["hessian_products"] >= 0
    auto = LinearSVC(feature_map=HashingMap(n_features=2**13), max_iter=2).fit(X / 255.0, y)
    assert "solver" not in auto.history_[-1]  # auto: the dual solvers, which compute the map in place


def _counted_labels(X, y, rows_per_part):
    """X and y as Dask Arrays whose label partitions count how often they are computed."""
    import collections

    import dask

    calls = collections.Counter()

    def labels(k):
        calls[k] += 1
        return y[k * rows_per_part : (k + 1) * rows_per_part]

    n_parts = -(-len(y) // rows_per_part)
    sizes = [min(rows_per_part, len(y) - k * rows_per_part) for k in range(n_parts)]
    yd = da.concatenate(
        [da.from_delayed(dask.delayed(labels)(k), shape=(m,), dtype=y.dtype) for k, m in enumerate(sizes)]
    )
    return da.from_array(X, chunks=(rows_per_part, X.shape[1])), yd, calls


@pytest.mark.parametrize("dual", [False, "auto"])  # "auto": the chunks say the data is tall
def test_the_read_that_finds_the_classes_keeps_the_warm_starts_sample(dual, partial_sample):
    """No read before training: the first read counts the classes and keeps a sample, whose problem
    solved in memory is the first Newton read's point; each later read reads every partition once
    (the reader reads ahead at most twice ``prefetch`` partitions of a read that is not needed)."""
    X, y = raw_scale_tall(40_000)
    Xd, yd, calls = _counted_labels(X / 255.0, y, 5_000)
    clf = LinearSVC(dual=dual, tol=1e-6).fit(Xd, yd)
    assert clf.history_[-1]["solver"] == "newton"
    reads = clf.n_iter_ + 1
    counts = np.array(list(calls.values()))
    assert counts.min() == reads and counts.max() <= reads + 1
    assert (counts > reads).sum() <= 2 * 2  # twice prefetch (2) partitions read ahead
    assert clf.history_[0]["sample_rows"] == 5 * (X.shape[1] + 1)
    memory = LinearSVC(dual=False, tol=1e-6).fit(X / 255.0, y)
    assert clf.objective_ == pytest.approx(memory.objective_, rel=1e-6)
    assert [r["rows_read"] for r in clf.history_] == [len(y) * (r["pass"] + 1) for r in clf.history_]


def test_a_sample_of_every_row_is_the_fit_in_one_read():
    """When the sample holds every row (small data, the default budget), its problem is the data's:
    solved in memory after the one read, with the data's certificate.  Every record is of read 0 (the
    progress bar shows the steps as steps of that read); ``n_iter_`` counts the Newton steps after
    it (issue 50: it said 0 after 1,001 records), one less than the same rows' in memory."""
    X, y = raw_scale_tall(15_000)  # fewer than SAMPLE_MIN_ROWS
    Xd, yd, calls = _counted_labels(X / 255.0, y, 5_000)
    clf = LinearSVC(dual=False, tol=1e-6).fit(Xd, yd)
    assert set(calls.values()) == {1} and clf.history_[0]["sample_rows"] == len(y)
    assert {r["pass"] for r in clf.history_} == {0} and len(clf.history_) == clf.n_iter_ + 1 >= 2
    assert {r["rows_read"] for r in clf.history_} == {len(y)}  # the one read of the source
    memory = LinearSVC(dual=False, tol=1e-6).fit(X / 255.0, y)
    assert clf.n_iter_ == memory.n_iter_ - 1
    np.testing.assert_array_equal(clf.coef_, memory.coef_)
    assert clf.duality_gap_ == memory.duality_gap_ <= 1e-6


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_classes_first_seen_in_the_last_partition_start_from_the_first_read(three_classes, class_weight):
    X, y = three_classes
    order = np.argsort(y == "cat", kind="stable")  # every "cat" row in the last partition
    X, y = X[order], y[order]
    early = int((y != "cat").sum())
    chunks = tuple(len(c) for c in np.array_split(np.arange(early), 4)) + (len(y) - early,)
    assert set(y[:early]) == {"ant", "bee"} and set(y[early:]) == {"cat"}
    clf = LinearSVC(dual=False, tol=1e-7, class_weight=class_weight)
    clf.fit(da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)))
    ref = liblinear(X, y, class_weight=class_weight)
    counts = dict(zip(*np.unique(y, return_counts=True), strict=True))
    weights = {c: len(y) / (3 * n) for c, n in counts.items()} if class_weight else dict.fromkeys(counts, 1.0)

    def cost(label):
        return np.where(y == label, weights[label], 1.0)

    check_optimum(clf, X, y, cost, ref)
