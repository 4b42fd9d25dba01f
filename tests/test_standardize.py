"""feature_map=Standardize(): the scales learned in one read, rows scaled as they are read, the model
folded back onto the raw features; and the scaling advice of an unconverged fit."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC as LiblinearSVC

import dask_streamsvm
from dask_streamsvm import LinearSVC, Standardize

from ._helpers import noisy_linear_data


@pytest.fixture(scope="module")
def raw():
    """Raw 0..255 values (pixels, say) whose separating plane is far from the origin."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (6_000, 12)).astype(np.float64)
    w = rng.standard_normal(12)
    y = np.where((X - 128.0) @ w + 30.0 * rng.standard_normal(6_000) > 0, 1, -1)
    return X, y


def _scaled_reference(X, y):
    """LIBLINEAR on the scaled features: its objective and its decision values on them."""
    Xs = StandardScaler().fit_transform(X)
    ref = LiblinearSVC(C=1.0, tol=1e-10, max_iter=200_000).fit(Xs, y)
    m, b = ref.coef_.ravel(), ref.intercept_[0]
    objective = 0.5 * (m @ m + b * b) + np.sum(np.maximum(0.0, 1.0 - y * (Xs @ m + b)) ** 2)
    return objective, Xs @ m + b


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "dask"])
def test_standardize_solves_the_scaled_problem_and_predicts_on_raw_features(raw, stream):
    X, y = raw
    data = (da.from_array(X, chunks=(1_000, -1)), da.from_array(y, chunks=1_000)) if stream else (X, y)
    params = {"dual": True, "random_state": 0, "tol": 1e-4, "max_iter": 300}
    if stream:
        params.update(solver="streamsvm", cache_bytes="20%")
    clf = LinearSVC(feature_map=Standardize(), **params).fit(*data)
    objective, decision = _scaled_reference(X, y)
    assert clf.duality_gap_ <= 1e-4
    assert 0.0 <= (clf.objective_ - objective) / clf.objective_ <= clf.duality_gap_ + 1e-9
    # coef_ and intercept_ are the raw features' model: no scaling at predict.
    np.testing.assert_allclose(clf.decision_function(X), decision, atol=0.05)
    scaler = StandardScaler().fit(X)
    np.testing.assert_allclose(clf.standardize_.mean_, scaler.mean_)
    np.testing.assert_allclose(clf.standardize_.scale_, scaler.scale_)
    # The raw features, unscaled, stop far from their optimum in the passes the scaled fit took
    # (no more: 300 streamed passes of them took a minute).
    with pytest.warns(ConvergenceWarning, match=r"not scaled \(column \d+ reaches \|x\| = 255"):
        unscaled = LinearSVC(**{**params, "max_iter": max(clf.n_iter_, 1)}).fit(*data)
    # Every pass's certified state is far from the optimum.  StreamSVM's trainer is asynchronous: on a
    # loaded machine it may sweep less between reads, and where no pass certified a model better than
    # w = 0, the fit returns the trained weights uncertified (duality_gap_ NaN; on a quiet machine at
    # max_iter=3 here): that too is a fit far from its optimum.
    assert min(record["gap"] for record in unscaled.history_) > 100 * clf.duality_gap_
    assert np.isnan(unscaled.duality_gap_) or unscaled.duality_gap_ > 100 * clf.duality_gap_
    assert (clf.predict(X) == y).mean() > (unscaled.predict(X) == y).mean()


def test_a_scaled_fit_that_does_not_converge_gets_no_scaling_advice(raw):
    X, y = raw
    with pytest.warns(ConvergenceWarning) as caught:
        LinearSVC(dual=True, max_iter=1, tol=1e-12, random_state=0).fit(X / 255.0, y)
    assert all("not scaled" not in str(w.message) for w in caught)


def test_sparse_rows_are_scaled_not_centred(raw):
    X, y = raw
    Xs = sp.csr_matrix(np.where(X > 128, X, 0.0))
    clf = LinearSVC(feature_map=Standardize(), dual=True, tol=1e-4, random_state=0).fit(Xs, y)
    assert np.all(clf.standardize_.mean_ == 0.0)
    dense = LinearSVC(feature_map=Standardize(with_mean=False), dual=True, tol=1e-4, random_state=0)
    dense.fit(Xs.toarray(), y)
    np.testing.assert_allclose(clf.standardize_.scale_, dense.standardize_.scale_)
    assert abs(clf.objective_ - dense.objective_) / dense.objective_ <= clf.duality_gap_ + dense.duality_gap_
    with pytest.raises(ValueError, match="would centre sparse rows"):
        LinearSVC(feature_map=Standardize(with_mean=True)).fit(Xs, y)


def test_what_standardize_cannot_train_with_is_named(raw):
    X, y = raw
    with pytest.raises(ValueError, match="adds an intercept"):
        LinearSVC(feature_map=Standardize(with_mean=True), fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="partial_fit does not see"):
        LinearSVC(feature_map=Standardize()).partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(ValueError, match="validation_data"):
        LinearSVC(feature_map=Standardize(), validation_data=(X, y)).fit(X, y)
    with pytest.raises(ValueError, match="with_mean must be"):
        LinearSVC(feature_map=Standardize(with_mean="yes")).fit(X, y)
    # Without an intercept the features are scaled only: the raw model has no intercept either.
    clf = LinearSVC(feature_map=Standardize(), fit_intercept=False, dual=True, random_state=0).fit(X, y)
    assert np.all(clf.standardize_.mean_ == 0.0) and np.all(clf.intercept_ == 0.0)


def test_a_standardized_model_saves_and_loads(raw, tmp_path):
    X, y = raw
    clf = LinearSVC(feature_map=Standardize(), dual=True, random_state=0).fit(X, y)
    clf.save(tmp_path / "m.dsvm")
    loaded = dask_streamsvm.load(tmp_path / "m.dsvm")
    assert isinstance(loaded.feature_map, Standardize)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_the_scales_combine_exactly_over_partitions():
    rng = np.random.default_rng(1)
    X = 1e6 + rng.standard_normal((5_000, 4)) * [1.0, 10.0, 1e3, 0.0]  # far from 0: cancellation
    scaler = Standardize().learn(np.array_split(X, 7), 4)
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(scaler.scale_[:3], X.std(axis=0)[:3], rtol=1e-9)
    assert scaler.scale_[3] == 1.0  # a constant column is left as it is
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(Standardize().fit_transform(X[:, :3]).std(axis=0), 1.0)


def test_the_progress_output_says_once_that_the_features_look_unscaled(raw, capsys):
    X, y = raw
    data = (da.from_array(X, chunks=(1_000, -1)), da.from_array(y, chunks=1_000))
    # deterministic: the passes do not depend on the machine's load (StreamSVM's sweeps while it
    # waits for the reader would otherwise decide whether the scaled fit converges in 3 passes)
    params = {"dual": True, "solver": "streamsvm", "random_state": 0, "max_iter": 3, "verbose": 1}
    params["deterministic"] = True
    with pytest.warns(ConvergenceWarning):
        LinearSVC(**params).fit(*data)
    out = capsys.readouterr()
    text = out.out + out.err
    assert text.count("note: The features are not scaled") == 1
    assert "Standardize()" in text
    LinearSVC(feature_map=Standardize(), **{**params, "max_iter": 10}).fit(*data)
    out = capsys.readouterr()
    assert "not scaled" not in out.out + out.err


# -- issue 36, round three: Standardize of a column at 1e200


def _huge_column(n=200, seed=0):
    """Rows whose first column is about 1e200 (its spread too), labels that depend on it."""
    X, y = noisy_linear_data(n, 3, seed)
    huge = X.copy()
    huge[:, 0] = 1e200 * (3.0 + X[:, 0])
    return huge, X, y


def test_standardize_trains_on_a_column_at_1e200_in_memory():
    huge, X, y = _huge_column()
    params = dict(feature_map=Standardize(), random_state=0, tol=1e-6, max_iter=1000)
    model = LinearSVC(**params).fit(huge, y)
    scaled = X.copy()
    scaled[:, 0] = 3.0 + X[:, 0]  # the same columns, 1e200 times smaller: the same standardized rows
    reference = LinearSVC(**params).fit(scaled, y)
    np.testing.assert_allclose(model.decision_function(huge), reference.decision_function(scaled), rtol=1e-6)
    assert np.isfinite(model.coef_).all()


def test_without_standardize_a_column_at_1e200_is_still_refused():
    huge, _, y = _huge_column()
    with pytest.raises(ValueError, match=r"x \. x overflows float64"):
        LinearSVC().fit(huge, y)


def test_standardize_trains_on_a_column_at_1e200_streamed():
    huge, X, y = _huge_column()
    params = dict(feature_map=Standardize(), solver="sbm", cache_bytes="8KB", random_state=0, tol=1e-6)
    model = LinearSVC(**params).fit(da.from_array(huge, chunks=50), da.from_array(y, chunks=50))
    scaled = X.copy()
    scaled[:, 0] = 3.0 + X[:, 0]
    reference = LinearSVC(**params).fit(da.from_array(scaled, chunks=50), da.from_array(y, chunks=50))
    np.testing.assert_allclose(model.decision_function(huge), reference.decision_function(scaled), rtol=1e-5)


def test_standardize_with_on_invalid_skip_drops_no_row_at_1e200():
    huge, _, y = _huge_column()
    model = LinearSVC(feature_map=Standardize(), on_invalid="skip", random_state=0).fit(huge, y)
    assert model.history_[-1].get("rows_skipped", 0) == 0 and model.score(huge, y) > 0.9


def _chan_reference(blocks, n_features):
    """Standardize's statistics as they were computed before values this large were handled."""
    n, mean, m2 = 0, np.zeros(n_features), np.zeros(n_features)
    for X in blocks:
        k = X.shape[0]
        block_mean = X.mean(axis=0)
        block_m2 = ((X - block_mean) ** 2).sum(axis=0)
        delta = block_mean - mean
        total = n + k
        mean = mean + delta * (k / total)
        m2 = m2 + np.maximum(block_m2, 0.0) + delta**2 * (n * k / total)
        n = total
    return mean, np.sqrt(m2 / n)


def test_standardize_learns_finite_scales_of_huge_values_and_the_same_bits_of_ordinary_ones():
    X, _ = noisy_linear_data(300, 4)
    blocks = [X[:100] * 1e3, X[100:250] * 1e3, X[250:] * 1e3]
    scaler = Standardize().learn(blocks, 4)
    mean, std = _chan_reference(blocks, 4)
    assert np.array_equal(scaler.mean_, mean) and np.array_equal(scaler.scale_, std)
    huge = [b * 1e300 / 1e3 for b in blocks]  # values near 1e300: their squares overflow float64
    big = Standardize().learn(huge, 4)
    np.testing.assert_allclose(big.scale_ / 1e300, std / 1e3, rtol=1e-12)
    np.testing.assert_allclose(big.mean_ / 1e300, mean / 1e3, rtol=1e-12)
    assert np.abs(big.scale_rows(huge[0])).max() < 10


def test_a_row_standardize_leaves_too_large_is_named():
    X = np.array([[1e200, 1.0], [1e200, -1.0], [1e200, 2.0]])  # a constant column, not centred
    scaler = Standardize(with_mean=False).learn([X], 2)
    with pytest.raises(ValueError, match=r"row 0 of the block: after Standardize's scaling .* overflows"):
        scaler.scale_rows(X)
    assert scaler.transform(X)[0, 0] == 1e200  # transform is the map alone: what it gives is not trained on
