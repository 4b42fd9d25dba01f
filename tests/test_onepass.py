"""OnePassSVC against a pure-NumPy streaming minimum enclosing ball in the explicit augmented space."""

import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from dask_streamsvm import OnePassSVC
from dask_streamsvm.kernels.meb import enclose
from dask_streamsvm.onepass import OneClassWarning

from ._reference import exact_enclosing_ball, meb_points


def _data(n=80, d=5, seed=0, scale=1.0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * scale
    y = (X @ rng.randn(d) + 0.5 * rng.randn(n) > 0).astype(np.int64)
    return X, y


def _points(X, y, C):
    return meb_points(X, np.where(y == 1, 1.0, -1.0), C)


def _reference(points, lookahead):
    """Algorithms 1 and 2 with the centre kept explicitly; yields (centre, R, M) after every point."""
    c, R, M = points[0].copy(), 0.0, 1
    buffer = []
    yield c, R, M
    for p in points[1:]:
        d = np.linalg.norm(p - c)
        if d >= R:
            if lookahead == 1:
                c = c + 0.5 * (1 - R / d) * (p - c)
                R, M = R + 0.5 * (d - R), M + 1
            else:
                buffer.append(p)
                if len(buffer) == lookahead:
                    (c, R), M, buffer = _enclose_reference(c, R, buffer), M + len(buffer), []
        yield c, R, M
    if buffer:
        (c, R), M = _enclose_reference(c, R, buffer), M + len(buffer)
        yield c, R, M


def _enclose_reference(c, R, buffer):
    Q = np.vstack([c, *buffer])
    radii = np.zeros(len(Q))
    radii[0] = R
    lam, r = enclose(Q @ Q.T, radii)
    return lam @ Q, r


def _state(model):
    balls = model._balls.state
    return balls.A[0] * balls.V[0], balls.R[0], balls.XI2[0], balls.M[0]


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_algorithm_1_matches_the_explicit_ball_step_by_step(layout):
    X, y = _data()
    X[X < -0.5] = 0.0  # some zeros, for the sparse rows
    C = 0.7
    points = _points(X, y, C)
    model = OnePassSVC(C=C, lookahead=1, standardize=False, random_state=0)
    rows = sp.csr_matrix(X) if layout == "csr" else X
    D = X.shape[1] + 1
    for n, (c, R, M) in enumerate(_reference(points, 1)):
        model.partial_fit(rows[n : n + 1], y[n : n + 1], classes=[0, 1])
        w, radius, xi2, m = _state(model)
        np.testing.assert_allclose(w, c[:D], rtol=0, atol=1e-12)
        assert radius == pytest.approx(R, abs=1e-12)
        assert xi2 == pytest.approx(np.sum(c[D:] ** 2), abs=1e-12)  # the slack part of the centre
        assert m == M
    assert model.n_core_vectors_ < X.shape[0]  # rows inside the ball were dropped


@pytest.mark.parametrize("lookahead", [1, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ball_encloses_every_point_within_3_2_of_the_exact_ball(lookahead, seed):
    X, y = _data(n=60, d=4, seed=seed)
    C = 2.0
    points = _points(X, y, C)
    *_, (centre, R, M) = _reference(points, lookahead)
    distances = np.sqrt(np.sum((points - centre) ** 2, axis=1))
    assert distances.max() <= R * (1 + 1e-9)  # every point seen is inside
    exact = exact_enclosing_ball(points)[1]
    assert exact * (1 - 1e-6) <= R <= 1.5 * exact
    model = OnePassSVC(C=C, lookahead=lookahead, standardize=False, shuffle=False).fit(X, y)
    D = X.shape[1] + 1
    np.testing.assert_allclose(np.append(model.coef_[0], model.intercept_), centre[:D], atol=1e-9)
    assert model.radius_ == pytest.approx(R, rel=1e-9) and model.n_core_vectors_ == M


def test_enclose_is_the_minimum_ball_of_a_ball_and_points():
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(30):
        n, d = rng.integers(2, 9), rng.integers(1, 5)
        Q = rng.normal(size=(n, d))
        radii = np.zeros(n)
        radii[0] = rng.uniform(0, 2)
        lam, r = enclose(Q @ Q.T, radii)
        assert lam.sum() == pytest.approx(1.0)
        z = lam @ Q
        assert r == pytest.approx(max(np.linalg.norm(z - Q[i]) + radii[i] for i in range(n)), rel=1e-12)
        constraints = [
            {"type": "ineq", "fun": lambda v, q=Q[i], ri=radii[i]: v[-1] - ri - np.linalg.norm(v[:-1] - q)}
            for i in range(n)
        ]
        best = minimize(lambda v: v[-1], np.append(Q.mean(0), 10.0), constraints=constraints, method="SLSQP",
                        options={"ftol": 1e-14, "maxiter": 1000})  # fmt: skip
        true = max(np.linalg.norm(best.x[:-1] - Q[i]) + radii[i] for i in range(n))
        worst = max(worst, (r - true) / true)
    assert worst <= 1e-9
    # One point and a ball: Algorithm 1's closed form.
    c, p, R = rng.normal(size=4), rng.normal(size=4), 0.8
    lam, r = enclose(np.vstack([c, p]) @ np.vstack([c, p]).T, np.array([R, 0.0]))
    d = np.linalg.norm(p - c)
    assert r == pytest.approx((R + d) / 2, rel=1e-12) and lam[1] == pytest.approx(0.5 * (1 - R / d), rel=1e-9)


@pytest.mark.parametrize("lookahead", [1, 3])
def test_the_model_does_not_depend_on_how_the_stream_is_cut(lookahead):
    X, y = _data(n=100)
    whole = OnePassSVC(lookahead=lookahead, standardize=False, shuffle=False).fit(X, y)
    for cuts in ([7, 40, 41, 90], [1, 2, 3, 50], list(range(5, 100, 5))):
        model = OnePassSVC(lookahead=lookahead, standardize=False)
        for a, b in zip([0, *cuts], [*cuts, 100], strict=True):
            model.partial_fit(X[a:b], y[a:b], classes=[0, 1])
        np.testing.assert_array_equal(model.coef_, whole.coef_)
        np.testing.assert_array_equal(model.intercept_, whole.intercept_)
    for chunks in (10, 33, 100):
        streamed = OnePassSVC(lookahead=lookahead, standardize=False, shuffle=False).fit(
            da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks)
        )
        np.testing.assert_array_equal(streamed.coef_, whole.coef_)


@pytest.mark.parametrize("lookahead", [1, 3])
def test_standardizing_takes_the_first_block_and_the_rest_of_the_stream_may_be_cut_anyhow(lookahead):
    """The scaling comes from the first block read (in memory: every row; streamed: the first
    partition; partial_fit: the first call), and after it cutting the stream does not matter."""
    X, y = _data(n=100, scale=40.0)
    X += 300.0
    first = X[:33]
    streamed = OnePassSVC(lookahead=lookahead, shuffle=False).fit(
        da.from_array(X, chunks=33), da.from_array(y, chunks=33)
    )
    np.testing.assert_allclose(streamed.standardize_.mean_, first.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(streamed.standardize_.scale_, first.std(axis=0), rtol=1e-12)
    assert streamed.standardize_.n_samples_seen_ == 33
    for cuts in ([33, 40, 41, 90], [33, 34, 35, 36, 99]):
        model = OnePassSVC(lookahead=lookahead)
        for a, b in zip([0, *cuts], [*cuts, 100], strict=True):
            model.partial_fit(X[a:b], y[a:b], classes=[0, 1])
        np.testing.assert_array_equal(model.coef_, streamed.coef_)
        np.testing.assert_array_equal(model.intercept_, streamed.intercept_)
    whole = OnePassSVC(lookahead=lookahead, shuffle=False).fit(X, y)
    np.testing.assert_allclose(whole.standardize_.mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(whole.standardize_.scale_, X.std(axis=0), rtol=1e-12)
    # The fold: raw rows score as the standardized rows do under the ball trained on them.
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    plain = OnePassSVC(lookahead=lookahead, standardize=False, shuffle=False).fit(Z, y)
    np.testing.assert_allclose(whole.decision_function(X), plain.decision_function(Z), rtol=1e-9, atol=1e-12)
    # Sparse rows are scaled, never centred; without an intercept nothing is centred.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OneClassWarning)  # uncentred rows this far out: one class
        sparse = OnePassSVC(shuffle=False).fit(sp.csr_matrix(X), y).standardize_
        assert not OnePassSVC(fit_intercept=False).fit(X, y).standardize_.mean_.any()
        assert OnePassSVC(standardize=False).fit(X, y).standardize_ is None
    assert not sparse.mean_.any() and np.allclose(sparse.scale_, X.std(axis=0), rtol=1e-12)
    unit = Z / np.linalg.norm(Z, axis=1, keepdims=True)  # normalize=False takes rows as they are
    assert OnePassSVC(normalize=False, fit_intercept=False).fit(unit, y).standardize_ is None


def test_same_seed_same_model_and_one_read_of_each_partition():
    X, y = _data(n=200)
    reads = []

    def part(i, rows):
        reads.append(i)
        return rows

    Xd = da.concatenate(
        [
            da.from_delayed(dask.delayed(part)(i, X[i * 20 : (i + 1) * 20]), (20, 5), X.dtype)
            for i in range(10)
        ]
    )
    yd = da.from_array(y, chunks=20)
    a = OnePassSVC(lookahead=4, random_state=3).fit(Xd, yd)
    assert sorted(reads) == list(range(10))  # exactly one pass over the rows (the labels are read apart)
    b = OnePassSVC(lookahead=4, random_state=3).fit(Xd, yd)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = OnePassSVC(lookahead=4, random_state=4).fit(Xd, yd)
    assert not np.array_equal(a.coef_, c.coef_)


def test_memory_does_not_grow_with_the_stream():
    def state_bytes(n):
        X, y = _data(n=n)
        model = OnePassSVC(lookahead=5, random_state=0).fit(X, y)
        return sum(v.nbytes for v in model._balls.state)

    assert state_bytes(50) == state_bytes(5000)


def test_norms_must_be_equal_without_normalize():
    X, y = _data()
    with pytest.raises(ValueError, match=r"normalize=False\) needs every row.*row 1 of this block"):
        OnePassSVC(normalize=False, shuffle=False).fit(X, y)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    plain = OnePassSVC(normalize=False, fit_intercept=False, shuffle=False).fit(unit, y)
    scaled = OnePassSVC(fit_intercept=False, standardize=False, shuffle=False).fit(X, y)  # scales the rows
    np.testing.assert_allclose(plain.coef_, scaled.coef_, atol=1e-12)


def test_dataframes_multiclass_and_lazy_prediction():
    X, y = _data(n=300, d=4)
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]
    frame = pd.DataFrame(X, columns=list("pqrs")).assign(label=labels)
    ddf = dd.from_pandas(frame, npartitions=4)
    model = OnePassSVC(lookahead=10, random_state=0).fit(ddf, "label")
    assert model.coef_.shape == (3, 4) and list(model.classes_) == ["a", "b", "c"]
    assert list(model.feature_names_in_) == list("pqrs")
    assert model.radius_.shape == (3,) and (model.n_core_vectors_ >= 1).all()
    lazy = model.predict(ddf)
    np.testing.assert_array_equal(lazy.compute().to_numpy(), model.predict(frame[list("pqrs")]))
    assert model.score(frame[list("pqrs")], labels) > 0.6


def test_errors_are_named():
    X, y = _data()
    with pytest.raises(ValueError, match="lookahead must be an integer >= 1"):
        OnePassSVC(lookahead=0).fit(X, y)
    with pytest.raises(ValueError, match="C must be a finite number > 0"):
        OnePassSVC(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="only one class"):
        OnePassSVC().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="classes must be passed"):
        OnePassSVC().partial_fit(X, y)
    model = OnePassSVC().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"label 5, which is not among the classes \[0, 1\]"):
        model.partial_fit(X[:3], np.full(3, 5))


def test_a_model_that_puts_every_training_row_in_one_class_is_warned_of():
    """Raw 0..255 features, labels of a hyperplane away from the origin: without standardizing, at a
    small C the one-pass ball predicts one class for every row (0.56 accuracy); that is said, not
    returned silently, in memory and streamed (checked on the first partition's rows)."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 256, size=(20_000, 3)).astype(float)
    y = (X @ [0.02, -0.03, 0.01] + 0.8 * rng.randn(20_000) > -0.5).astype(int)
    with pytest.warns(OneClassWarning, match="predicts class 1 for every one of its 20,000 training rows"):
        OnePassSVC(C=0.01, lookahead=1, standardize=False, random_state=0).fit(X, y)
    with pytest.warns(OneClassWarning, match="class [01] for every one of the 4,096 training rows it"):
        OnePassSVC(C=0.01, lookahead=1, standardize=False, random_state=0).fit(
            da.from_array(X, chunks=5000), da.from_array(y, chunks=5000)
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = OnePassSVC(C=0.01, random_state=0).fit(X, y)  # standardized: both classes
    assert np.unique(model.predict(X)).shape[0] == 2


@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_rows_far_from_the_origin_need_the_intercept_and_the_standardizing(C):
    """Normalizing rows far from the origin puts the classes near opposite poles of the sphere and
    the ball's centre near the origin: no better than the majority class (77%), with or without
    the constant feature.  Standardized by the first block, the ball separates them, in memory
    and streamed; without the constant feature it cannot, the hyperplane being off the origin."""
    rng = np.random.RandomState(0)
    X = rng.randn(20_000, 3) * [1.0, 2.0, 0.5] + [3.0, -1.0, 2.0]
    s = X @ [1.0, -0.5, 2.0]
    y = (s + 0.7 * rng.randn(20_000) > np.quantile(s, 0.79)).astype(int)
    majority = 1 - y.mean()
    Xd, yd = da.from_array(X, chunks=4000), da.from_array(y, chunks=4000)

    def mean_score(data, **params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OneClassWarning)
            fits = [OnePassSVC(C=C, lookahead=10, random_state=r, **params).fit(*data) for r in range(5)]
        return np.mean([model.score(X, y) for model in fits])

    assert mean_score((X, y), standardize=False) < majority + 0.01
    assert mean_score((X, y)) > majority + 0.05
    assert mean_score((Xd, yd)) > majority + 0.05
    assert mean_score((X, y), fit_intercept=False) < majority + 0.01


def test_a_fitted_model_keeps_no_training_rows_and_pickles_mid_stream():
    """The rows the fit checks its model on are dropped after the check; a pickled model goes on
    with the stream, standardizing as before."""
    import pickle

    X, y = _data(n=200, scale=30.0)
    X += 100.0
    model = OnePassSVC(random_state=0).fit(X, y)
    assert model._probe[0] is None
    assert all(not (isinstance(v, np.ndarray) and v.shape[0] == X.shape[0]) for v in vars(model).values())
    first = OnePassSVC().partial_fit(X[:100], y[:100], classes=[0, 1])
    again = pickle.loads(pickle.dumps(first)).partial_fit(X[100:], y[100:])
    first.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(again.coef_, first.coef_)
    np.testing.assert_allclose(again.standardize_.mean_, X[:100].mean(axis=0), rtol=1e-14)
