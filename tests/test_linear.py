"""The LinearSVC estimator: results against LIBLINEAR, API behaviour, errors."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as LiblinearSVC

from dask_streamsvm import LinearSVC


def primal_objective(X, y_pm, w, b, cost, loss):
    """Independent NumPy primal with the bias as a regularised weight."""
    xi = np.maximum(0.0, 1.0 - y_pm * (X @ w + b))
    return 0.5 * (w @ w) + cost @ (xi**2 if loss == "squared_hinge" else xi)


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(n_samples=300, n_features=8, n_informative=5, random_state=0)
    return X, y


def liblinear_objective(X, y, loss, C=1.0, intercept_scaling=1.0, class_weight=None, sample_weight=None):
    ref = LiblinearSVC(
        C=C,
        loss=loss,
        dual=True,
        tol=1e-10,
        max_iter=200000,
        intercept_scaling=intercept_scaling,
        class_weight=class_weight,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y, sample_weight=sample_weight)
    return ref


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("intercept_scaling", [1.0, 10.0])
def test_binary_objective_matches_liblinear_with_intercept(binary_data, loss, intercept_scaling):
    X, y = binary_data
    y_pm = np.where(y == 1, 1.0, -1.0)
    clf = LinearSVC(
        loss=loss, intercept_scaling=intercept_scaling, tol=1e-8, max_iter=100000, random_state=0
    ).fit(X, y)
    ref = liblinear_objective(X, y, loss, intercept_scaling=intercept_scaling)
    # The bias weight is intercept / scaling; LIBLINEAR regularises it too.
    bias_w = clf.intercept_[0] / intercept_scaling
    ours = primal_objective(X, y_pm, clf.coef_[0], clf.intercept_[0], np.ones(len(y)), loss) + 0.5 * bias_w**2
    assert ours == pytest.approx(clf.objective_, rel=1e-10)
    ref_bias_w = ref.intercept_[0] / intercept_scaling
    theirs = (
        primal_objective(X, y_pm, ref.coef_[0], ref.intercept_[0], np.ones(len(y)), loss)
        + 0.5 * ref_bias_w**2
    )
    # Ours is certified within 1e-8 of the optimum; LIBLINEAR cannot beat that.
    assert ours <= theirs * (1 + 1e-8) + 1e-9
    assert theirs >= ours * (1 - 1e-8)
    assert clf.duality_gap_ <= 1e-8
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_class_and_sample_weights_match_liblinear(binary_data, loss):
    X, y = binary_data
    y_pm = np.where(y == 1, 1.0, -1.0)
    sw = np.random.RandomState(0).uniform(0.2, 3.0, size=len(y))
    cw = {0: 0.5, 1: 3.0}
    clf = LinearSVC(loss=loss, C=0.5, class_weight=cw, tol=1e-9, max_iter=100000, random_state=0)
    clf.fit(X, y, sample_weight=sw)
    ref = liblinear_objective(X, y, loss, C=0.5, class_weight=cw, sample_weight=sw)
    cost = 0.5 * sw * np.where(y == 1, 3.0, 0.5)
    ours = (
        primal_objective(X, y_pm, clf.coef_[0], clf.intercept_[0], cost, loss) + 0.5 * clf.intercept_[0] ** 2
    )
    theirs = (
        primal_objective(X, y_pm, ref.coef_[0], ref.intercept_[0], cost, loss) + 0.5 * ref.intercept_[0] ** 2
    )
    assert ours == pytest.approx(clf.objective_, rel=1e-10)
    assert ours <= theirs * (1 + 1e-9) + 1e-9


def test_balanced_class_weight_uses_sklearn_formula(binary_data):
    X, y = binary_data
    y = y.copy()
    y[:100] = 0  # unbalance the classes
    clf = LinearSVC(class_weight="balanced", tol=1e-9, max_iter=100000, random_state=0).fit(X, y)
    counts = np.bincount(y)
    weights = len(y) / (2 * counts)
    y_pm = np.where(y == 1, 1.0, -1.0)
    cost = weights[y]
    ours = primal_objective(X, y_pm, clf.coef_[0], clf.intercept_[0], cost, "squared_hinge")
    assert ours + 0.5 * clf.intercept_[0] ** 2 == pytest.approx(clf.objective_, rel=1e-10)


def test_integer_sample_weight_equals_repeated_rows(binary_data):
    X, y = binary_data
    sw = np.random.RandomState(1).randint(1, 4, size=len(y))
    weighted = LinearSVC(loss="squared_hinge", tol=1e-10, max_iter=100000, random_state=0)
    weighted.fit(X, y, sample_weight=sw)
    repeated = LinearSVC(loss="squared_hinge", tol=1e-10, max_iter=100000, random_state=0)
    repeated.fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-9)
    # Squared hinge is strictly convex in w: the optima coincide.
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-4, atol=1e-5)


def test_zero_sample_weight_equals_dropping_rows(binary_data):
    X, y = binary_data
    sw = np.ones(len(y))
    sw[::4] = 0.0
    a = LinearSVC(tol=1e-10, max_iter=100000, random_state=0).fit(X, y, sample_weight=sw)
    b = LinearSVC(tol=1e-10, max_iter=100000, random_state=0).fit(X[sw > 0], y[sw > 0])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-4, atol=1e-5)


def test_one_vs_rest_matches_liblinear_per_class():
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=3
    )
    labels = np.array(["cat", "dog", "emu"])[y]
    cw = {"cat": 2.0, "dog": 1.0, "emu": 0.5}
    clf = LinearSVC(class_weight=cw, tol=1e-9, max_iter=100000, random_state=0).fit(X, labels)
    assert clf.coef_.shape == (3, 6) and clf.intercept_.shape == (3,)
    assert list(clf.classes_) == ["cat", "dog", "emu"]
    assert clf.objective_.shape == (3,) and (clf.duality_gap_ <= 1e-9).all()
    ref = liblinear_objective(X, labels, "squared_hinge", class_weight=cw)
    for k, name in enumerate(clf.classes_):
        y_pm = np.where(labels == name, 1.0, -1.0)
        # LIBLINEAR's one-vs-rest weights the positive class only.
        cost = np.where(labels == name, cw[name], 1.0)
        ours = primal_objective(X, y_pm, clf.coef_[k], clf.intercept_[k], cost, "squared_hinge")
        theirs = primal_objective(X, y_pm, ref.coef_[k], ref.intercept_[k], cost, "squared_hinge")
        ours += 0.5 * clf.intercept_[k] ** 2
        theirs += 0.5 * ref.intercept_[k] ** 2
        assert ours == pytest.approx(clf.objective_[k], rel=1e-10)
        assert ours <= theirs * (1 + 1e-9) + 1e-9
    assert (clf.predict(X) == ref.predict(X)).mean() > 0.99
    assert {r["class"] for r in clf.history_} == {"cat", "dog", "emu"}


def test_dense_sparse_and_dtype_parity(binary_data):
    X, y = binary_data
    fits = [  # the dual solver's iterates (dual="auto" takes the primal on dense rows, the dual on sparse)
        LinearSVC(tol=1e-7, max_iter=100000, random_state=0, dual=True).fit(Xv, y)
        for Xv in (
            X,
            sp.csr_matrix(X),
            sp.csc_matrix(X),
            X.astype(np.float32),
            sp.csr_matrix(X.astype(np.float32)),
        )
    ]
    # Same data, same seed: the same iterates up to rounding of the dot products.
    for other in fits[1:3]:
        np.testing.assert_allclose(other.coef_, fits[0].coef_, rtol=1e-8, atol=1e-10)
    for other in fits[3:]:
        np.testing.assert_allclose(other.coef_, fits[0].coef_, rtol=1e-3, atol=1e-4)
    assert fits[3].coef_.dtype == np.float64


def test_same_seed_same_model_and_seed_changes_path(binary_data):
    X, y = binary_data
    a = LinearSVC(tol=1e-4, random_state=5, dual=True).fit(X, y)  # the seed orders the dual's passes
    b = LinearSVC(tol=1e-4, random_state=5, dual=True).fit(X, y)
    c = LinearSVC(tol=1e-4, random_state=6, dual=True).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert [r["primal"] for r in a.history_] == [r["primal"] for r in b.history_]
    assert not np.array_equal(a.coef_, c.coef_)
    assert c.objective_ == pytest.approx(a.objective_, rel=2e-4)


def test_history_records_every_pass_with_a_valid_certificate(binary_data):
    X, y = binary_data
    clf = LinearSVC(tol=1e-6, max_iter=10000, random_state=0, dual=True).fit(X, y)  # the dual's passes
    h = clf.history_
    assert [r["pass"] for r in h] == list(range(1, clf.n_iter_ + 1))
    assert set(h[0]) == {"class", "pass", "seconds", "primal", "dual", "gap", "active"}
    certified = [r for r in h if not np.isnan(r["primal"])]
    # The first and the last pass always carry a certificate.
    assert certified[0] is h[0] and certified[-1] is h[-1]
    assert all(r["primal"] >= r["dual"] - 1e-9 for r in certified)
    assert all(np.isnan(r["gap"]) == np.isnan(r["primal"]) for r in h)
    # The dual is recorded on every pass and never decreases (coordinate descent).
    duals = np.array([r["dual"] for r in h])
    assert np.all(np.isfinite(duals)) and np.all(np.diff(duals) >= -1e-9 * abs(duals[-1]))
    assert all(0 < r["active"] <= len(y) for r in h)
    assert np.all(np.diff([r["seconds"] for r in h]) >= 0)
    assert h[-1]["gap"] <= 1e-6 < h[0]["gap"]
    assert clf.duality_gap_ == h[-1]["gap"]


def test_primal_reported_in_history_is_that_of_the_iterate(binary_data):
    # Every certified record is a true upper bound on the optimum and the
    # dual a true lower bound.
    X, y = binary_data
    opt = LinearSVC(tol=1e-10, max_iter=100000, random_state=0).fit(X, y).objective_
    clf = LinearSVC(tol=1e-5, random_state=1).fit(X, y)
    for r in clf.history_:
        assert r["dual"] <= opt * (1 + 1e-9)
        if not np.isnan(r["primal"]):
            assert r["primal"] >= opt * (1 - 1e-9)
            assert (r["primal"] - opt) / r["primal"] <= r["gap"] + 1e-9


def test_convergence_warning_says_what_to_change(binary_data):
    X, y = binary_data
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 passes.*Increase max_iter"):
        clf = LinearSVC(loss="hinge", tol=1e-12, max_iter=2, random_state=0).fit(X, y)
    assert clf.n_iter_ == 2 and clf.duality_gap_ > 1e-12


def test_pandas_input_records_feature_names(binary_data):
    X, y = binary_data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    clf = LinearSVC(random_state=0).fit(df, pd.Series(y))
    np.testing.assert_array_equal(clf.feature_names_in_, df.columns)
    assert clf.score(df, y) > 0.8
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(df.rename(columns={"f0": "zz"}))


def test_small_dask_collections_are_computed_for_the_memory_solver(binary_data):
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    X, y = binary_data
    ref = LinearSVC(random_state=0, tol=1e-6).fit(X, y)
    mem = {"solver": "memory", "random_state": 0, "tol": 1e-6}
    arr = LinearSVC(**mem).fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    np.testing.assert_array_equal(arr.coef_, ref.coef_)
    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("abcdefgh")), npartitions=3)
    frame = LinearSVC(**mem).fit(ddf, dd.from_pandas(pd.Series(y), npartitions=3))
    np.testing.assert_allclose(frame.coef_, ref.coef_)
    np.testing.assert_array_equal(arr.predict(da.from_array(X, chunks=50)), ref.predict(X))


def test_predict_and_decision_function(binary_data):
    X, y = binary_data
    clf = LinearSVC(random_state=0).fit(X, y)
    scores = clf.decision_function(X)
    np.testing.assert_allclose(scores, X @ clf.coef_[0] + clf.intercept_[0])
    np.testing.assert_array_equal(clf.predict(X), np.where(scores > 0, 1, 0))


def test_no_intercept_means_zero_intercept(binary_data):
    X, y = binary_data
    clf = LinearSVC(fit_intercept=False, random_state=0).fit(X, y)
    assert clf.intercept_.tolist() == [0.0]


def test_read_only_input_is_accepted_and_left_alone(binary_data):
    X, y = binary_data
    X, y = X.copy(), y.copy()
    X.setflags(write=False)
    y.setflags(write=False)
    before = X.copy()
    LinearSVC(random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, before)


def test_verbose_prints_one_line_per_pass(binary_data, capsys):
    X, y = binary_data
    clf = LinearSVC(verbose=1, random_state=0).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[LinearSVC]")]
    assert len(lines) == clf.n_iter_
    assert "gap=" in lines[0]


def test_verbose_prints_only_what_a_pass_computed(capsys):
    """In memory not every pass computes the certificate: those lines leave it out, not 'nan'."""
    from sklearn.datasets import make_classification

    X, y = make_classification(2000, 20, random_state=0)
    clf = LinearSVC(dual=True, solver="memory", verbose=1, tol=1e-6, random_state=0).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[LinearSVC]")]
    assert len(lines) == clf.n_iter_ and not any("nan" in line for line in lines)
    uncertified = [r for r in clf.history_ if not np.isfinite(r["primal"])]
    assert uncertified and sum("gap=" not in line for line in lines) == len(uncertified)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"C": -1.0}, ValueError, "C must be a finite number > 0, got C=-1.0"),
        ({"C": 0}, ValueError, "C must be a finite number > 0"),
        ({"C": float("nan")}, ValueError, "C must be"),
        ({"C": "1"}, TypeError, "C must be a real number"),
        ({"loss": "l1"}, ValueError, "loss must be one of 'hinge', 'squared_hinge'; got loss='l1'"),
        ({"tol": 0.0}, ValueError, "tol must be a finite number > 0"),
        ({"max_iter": 0}, ValueError, "max_iter must be an integer >= 1, got max_iter=0"),
        ({"max_iter": 2.5}, TypeError, "max_iter must be an integer"),
        ({"solver": "sgd"}, ValueError, "solver must be one of"),
        ({"solver": "streamsvm", "cache_bytes": "lots"}, ValueError, "cache_bytes must be a number of bytes"),
        ({"solver": "streamsvm", "cache_bytes": -5}, ValueError, "cache_bytes must be positive"),
        ({"solver": "streamsvm", "prefetch": 0}, ValueError, "prefetch must be an integer >= 1"),
        ({"intercept_scaling": -2.0}, ValueError, "intercept_scaling must be a finite number > 0"),
        ({"class_weight": "auto"}, ValueError, "class_weight must be None, 'balanced' or a dict"),
    ],
)
def test_bad_parameters_name_the_problem(binary_data, params, error, match):
    X, y = binary_data
    with pytest.raises(error, match=re.escape(match)):
        LinearSVC(**params).fit(X, y)


def test_bad_input_names_the_problem(binary_data):
    X, y = binary_data
    Xnan = X.copy()
    Xnan[3, 2] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        LinearSVC().fit(Xnan, y)
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        LinearSVC().fit(Xinf, y)
    with pytest.raises(ValueError, match="contains only one class: 1. Pass y with two or more"):
        LinearSVC().fit(X, np.ones(len(y), dtype=int))
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[300, 299\]"):
        LinearSVC().fit(X, y[:-1])
    with pytest.raises(ValueError, match="Unknown label type"):
        LinearSVC().fit(X, np.linspace(0, 1, len(y)))
    with pytest.raises(ValueError, match="row 2 has weight -1.0"):
        sw = np.ones(len(y))
        sw[2] = -1.0
        LinearSVC().fit(X, y, sample_weight=sw)
    with pytest.raises(ValueError, match=r"expected shape \(300,\), got \(3,\)"):
        LinearSVC().fit(X, y, sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="weight is zero for every row"):
        LinearSVC().fit(X, y, sample_weight=np.zeros(len(y)))
    clf = LinearSVC().fit(X, y)
    with pytest.raises(ValueError, match="X has 7 features, but LinearSVC is expecting 8 features"):
        clf.predict(X[:, :7])
    with pytest.raises(ValueError, match="Input X contains NaN"):
        clf.predict(Xnan)
