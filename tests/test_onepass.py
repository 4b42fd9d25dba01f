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
from dask_streamsvm.datasets import load_a9a
from dask_streamsvm.engine.data.labels import SORTED_LABEL_MIX, order_label_mix, partition_label_mix
from dask_streamsvm.kernels.meb import enclose
from dask_streamsvm.onepass import PROBE_ROWS, STANDARDIZED_ROW_NORM, MajorityClassWarning, OneClassWarning

from ._helpers import noisy_linear_data
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


# On 60 random rows the ball can score below the majority class, and the fit says so; here the ball is tested.
@pytest.mark.filterwarnings("ignore::dask_streamsvm.onepass.MajorityClassWarning")
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
    # partial_fit: the ball's own model (fit keeps the majority class's where the ball scores no better)
    model = OnePassSVC(C=C, lookahead=lookahead, standardize=False).partial_fit(X, y, classes=[0, 1])
    D = X.shape[1] + 1
    np.testing.assert_allclose(np.append(model.coef_[0], model.intercept_), centre[:D], atol=1e-9)
    assert model.radius_ == pytest.approx(R, rel=1e-9) and model.n_core_vectors_ == M


@pytest.mark.slow  # among make test's slowest (issue 51: the default suite in six minutes)
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
    # Unit variance, then one factor for every column: the rows' RMS norm is STANDARDIZED_ROW_NORM (5
    # centred columns of unit variance have RMS norm sqrt(5)).
    np.testing.assert_allclose(streamed.standardize_.mean_, first.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(streamed.standardize_.scale_, first.std(axis=0) * np.sqrt(5) / 2, rtol=1e-12)
    assert streamed.standardize_.n_samples_seen_ == 33
    for cuts in ([33, 40, 41, 90], [33, 34, 35, 36, 99]):
        model = OnePassSVC(lookahead=lookahead)
        for a, b in zip([0, *cuts], [*cuts, 100], strict=True):
            model.partial_fit(X[a:b], y[a:b], classes=[0, 1])
        np.testing.assert_array_equal(model.coef_, streamed.coef_)
        np.testing.assert_array_equal(model.intercept_, streamed.intercept_)
    whole = OnePassSVC(lookahead=lookahead, shuffle=False).fit(X, y)
    np.testing.assert_allclose(whole.standardize_.mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(whole.standardize_.scale_, X.std(axis=0) * np.sqrt(5) / 2, rtol=1e-12)
    # The fold: raw rows score as the standardized rows do under the ball trained on them.
    Z = (X - whole.standardize_.mean_) / whole.standardize_.scale_
    plain = OnePassSVC(lookahead=lookahead, standardize=False, shuffle=False).fit(Z, y)
    np.testing.assert_allclose(whole.decision_function(X), plain.decision_function(Z), rtol=1e-9, atol=1e-12)
    # Sparse rows are scaled, never centred; without an intercept nothing is centred.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)  # uncentred rows this far out: one class
        sparse = OnePassSVC(shuffle=False).fit(sp.csr_matrix(X), y).standardize_
        assert not OnePassSVC(fit_intercept=False).fit(X, y).standardize_.mean_.any()
        assert OnePassSVC(standardize=False).fit(X, y).standardize_ is None
    assert not sparse.mean_.any()
    ratio = sparse.scale_ / X.std(axis=0)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)  # one factor for every column
    unit = Z / np.linalg.norm(Z, axis=1, keepdims=True)  # normalize=False takes rows as they are
    assert OnePassSVC(normalize=False, fit_intercept=False).fit(unit, y).standardize_ is None


@pytest.mark.parametrize("kind", ["dense", "dense, no intercept", "csr", "constant column"])
def test_standardized_rows_have_the_root_mean_square_norm_of_the_rule(kind):
    """The scaling grows unit-variance columns by one factor so that the rows the ball reads (before
    they are normalized) have RMS norm 2 beside the constant feature's 1 (STANDARDIZED_ROW_NORM):
    measured on the scaled rows themselves, dense (centred), uncentred and sparse."""
    assert STANDARDIZED_ROW_NORM == 2.0
    X, y = _data(n=400, d=7, scale=30.0)
    X += 50.0
    if kind == "constant column":
        X[:, 3] = 4.0
    rows = sp.csr_matrix(np.where(X > 50.0, X, 0.0)) if kind == "csr" else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)  # the rows are what is tested here
        model = OnePassSVC(fit_intercept=kind != "dense, no intercept", random_state=0).fit(rows, y)
    Z = model.standardize_.scale_rows(rows)
    Z = Z.toarray() if sp.issparse(Z) else Z
    assert np.sqrt(np.mean(np.sum(Z**2, axis=1))) == pytest.approx(2.0, rel=1e-12)


def test_a9a_from_dense_chunks_is_not_below_the_majority_class_by_the_scaling():
    """The regression of issue 41: standardizing centred a9a's one-hot columns (their groups, which
    add up to 1 in every row, no longer stood in for the constant feature) and left rows of norm
    sqrt(123) beside a constant feature of 1, so the ball could not learn the offset.  On 8,192
    rows from a Dask array of 4,096-row chunks, C = 1, lookahead 10, scored on 4,000 test rows
    (majority 76.3%), the mean of five stream orders is 0.760; with unit variance alone it was 0.667,
    and each of 30 orders scored below 0.72 (0.54 to 0.71)."""
    X, y = load_a9a("train")
    Xt, yt = load_a9a("test")
    X, y, Xt, yt = X[:8192].toarray(), y[:8192], Xt[:4000], yt[:4000]
    Xd, yd = da.from_array(X, chunks=(4096, 123)), da.from_array(y, chunks=4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)  # some orders are, and say so
        scores = [OnePassSVC(random_state=seed).fit(Xd, yd).score(Xt, yt) for seed in range(5)]
    assert np.mean(scores) > 0.72


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
    returned silently, in memory and streamed (checked on rows spread over the stream)."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 256, size=(20_000, 3)).astype(float)
    y = (X @ [0.02, -0.03, 0.01] + 0.8 * rng.randn(20_000) > -0.5).astype(int)
    with pytest.warns(OneClassWarning, match="predicts class 1 for every one of its 20,000 training rows"):
        OnePassSVC(C=0.01, lookahead=1, standardize=False, random_state=0).fit(X, y)
    kept = r"4,000 training rows it checked \(one row in 5 of the stream"  # 20,000 rows, at most 4,096 kept
    with pytest.warns(OneClassWarning, match=f"class [01] for every one of the {kept}"):
        OnePassSVC(C=0.01, lookahead=1, standardize=False, random_state=0).fit(
            da.from_array(X, chunks=5000), da.from_array(y, chunks=5000)
        )
    assert -(-20_000 // PROBE_ROWS) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = OnePassSVC(C=0.01, random_state=0).fit(X, y)  # standardized: both classes
    assert np.unique(model.predict(X)).shape[0] == 2


def test_a_model_below_the_majority_class_is_warned_of_with_what_was_measured():
    """Issue 41: a model of two classes that scores below the majority class on its training rows
    (here 50% of 60 rows, majority 55%) returned silently; now it warns, in memory and streamed, with
    the accuracy, the majority rate and what to do.  One warning class for both cases."""
    X, y = _data(n=60, d=4, seed=1)
    params = dict(C=2.0, lookahead=1, standardize=False, shuffle=False)
    said = r"scores 50.0% accuracy on {}, no better than predicting the majority class 0 for every row \(55.0"
    with pytest.warns(MajorityClassWarning, match=said.format("its 60 training rows")) as caught:
        model = OnePassSVC(**params).fit(X, y)
    # The ball scored 50% with two classes predicted; the fit keeps the majority class's model (55%).
    assert model.majority_fallback_ and model.score(X, y) == 0.55
    assert np.unique(model.predict(X)).tolist() == [0]
    assert len(caught) == 1 and "train LinearSVC" in str(caught[0].message)
    assert "the fit keeps that constant model instead" in str(caught[0].message)
    kept = r"the 60 training rows it checked \(every row of the stream, kept as it was read\)"
    with pytest.warns(MajorityClassWarning, match=said.format(kept)):
        OnePassSVC(**params).fit(da.from_array(X, chunks=25), da.from_array(y, chunks=25))
    assert OneClassWarning is MajorityClassWarning  # a filter on the old name sees both cases
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OnePassSVC(**params).partial_fit(X, y, classes=[0, 1])  # partial_fit checks nothing
        assert OnePassSVC(**{**params, "lookahead": 10}).fit(X, y).score(X, y) > 0.55  # no warning


@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")  # Dask's read_parquet on pandas 3.1
def test_rows_sorted_by_label_in_parquet_are_warned_of_and_named(tmp_path):
    """Issue 41: label-ordered Parquet gave a model of no use (here 42% accuracy, majority 77%) and
    no warning, the rows checked being the first partition's, of one class.  Now the rows checked
    are spread over the stream, and the warning says the partitions are sorted by label.  The
    same rows in random order give a model better than the majority class (87%), silently.
    Rows sorted by label warn whatever the model scores: the one-pass ball is at its worst there."""
    rng = np.random.RandomState(0)
    X = rng.randn(12_000, 3) * [1.0, 2.0, 0.5] + [3.0, -1.0, 2.0]
    s = X @ [1.0, -0.5, 2.0]
    y = (s + 0.7 * rng.randn(12_000) > np.quantile(s, 0.79)).astype(int)
    ranked = np.argsort(y, kind="stable")
    frame = pd.DataFrame(X, columns=list("abc")).assign(label=y)
    dd.from_pandas(frame.iloc[ranked], npartitions=12, sort=False).to_parquet(tmp_path / "sorted")
    dd.from_pandas(frame, npartitions=12, sort=False).to_parquet(tmp_path / "mixed")
    sorted_note = r"The rows came sorted by label, the order .*: 1[01] of its 12 partitions hold one class"
    with pytest.warns(MajorityClassWarning, match=sorted_note) as caught:
        model = OnePassSVC(random_state=0).fit(str(tmp_path / "sorted"), "label")
    said = [str(w.message) for w in caught if w.category is MajorityClassWarning]
    assert len(said) == 1 and "no better than predicting the majority class 0" in said[0]
    # The ball scored below the majority class (42%); the fit keeps the majority class's model.
    assert model.majority_fallback_ and model.score(frame[list("abc")], y) == pytest.approx(1 - y.mean())
    with warnings.catch_warnings():
        warnings.simplefilter("error", MajorityClassWarning)
        model = OnePassSVC(random_state=0).fit(str(tmp_path / "mixed"), "label")
    assert model.score(frame[list("abc")], y) > 1 - y.mean() + 0.03
    # In memory the fit shuffles every row; with shuffle=False it reads them sorted and says so, even
    # where its model scores a little above the majority class (77.6% against 77.0%; shuffled: 88.6%).
    with warnings.catch_warnings():
        warnings.simplefilter("error", MajorityClassWarning)
        assert OnePassSVC(random_state=0).fit(X[ranked], y[ranked]).score(X, y) > 0.85
    with pytest.warns(MajorityClassWarning, match="against predicting the majority class 0") as caught:
        OnePassSVC(shuffle=False, random_state=0).fit(X[ranked], y[ranked])
    assert "consecutive rows differ in label 0% as often as rows drawn at random" in str(caught[0].message)


@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")  # Dask's read_parquet on pandas 3.1
def test_skin_like_rows_stored_by_label_score_at_least_the_majority_class(tmp_path):
    """Issue 53: skin (three colour values 0..255, 79% of one class) stored in label order gave a model
    that predicted the minority class for every row (21% accuracy).  The same rows in label order
    now give at least the majority rate, with the warning; shuffled, the ball's own model, which
    beats it, is kept unchanged (the fit's model is partial_fit's of the same order)."""
    rng = np.random.RandomState(3)
    X = rng.randint(0, 256, size=(20_000, 3)).astype(float)
    score = X @ [1.0, -0.6, -0.4] + rng.normal(0.0, 20.0, 20_000)
    y = (score > np.quantile(score, 0.79)).astype(int)
    majority = 1 - y.mean()
    ranked = np.argsort(-y, kind="stable")  # the minority class first, as it ends a pass
    frame = pd.DataFrame(X, columns=list("rgb")).assign(label=y)
    dd.from_pandas(frame.iloc[ranked], npartitions=10, sort=False).to_parquet(tmp_path / "by-label")
    with pytest.warns(MajorityClassWarning, match="sorted by label") as caught:
        model = OnePassSVC(random_state=0).fit(str(tmp_path / "by-label"), "label")
    assert model.majority_fallback_ and model.score(frame[list("rgb")], y) == pytest.approx(majority)
    assert "keeps that constant model instead" in str(caught[0].message)
    order = np.random.RandomState(0).permutation(len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MajorityClassWarning)
        mixed = OnePassSVC(random_state=0).fit(X, y)
    ball = OnePassSVC().partial_fit(X[order], y[order], classes=[0, 1])
    assert not mixed.majority_fallback_ and mixed.score(X, y) > majority
    np.testing.assert_allclose(mixed.coef_, ball.coef_, rtol=1e-12)  # the scales summed in another order


def test_the_label_mix_and_its_threshold():
    """The share of differing labels among rows of one partition (or consecutive rows), against rows
    drawn at random: 1 in expectation for a random order (unbiased: pairs without replacement), 0
    for partitions of one class; the warning calls a stream sorted by label below SORTED_LABEL_MIX
    (0.5), and not above."""
    from dask_streamsvm.onepass import _sorted_partitions, _sorted_rows

    assert SORTED_LABEL_MIX == 0.5
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=60_000)

    def counts(labels, n_parts):
        return [np.unique(part, return_counts=True) for part in np.array_split(labels, n_parts)]

    for n_parts in (30, 3_000, 20_000):  # partitions of 2,000, 20 and 3 rows
        assert partition_label_mix(counts(y, n_parts)) == pytest.approx(1.0, abs=0.02)
    assert partition_label_mix(counts(np.sort(y), 30)) < 0.02
    assert order_label_mix(y) == pytest.approx(1.0, abs=0.02) and order_label_mix(np.sort(y)) < 1e-3
    assert partition_label_mix(counts(np.zeros(10, dtype=int), 2)) is None
    # Half the rows sorted, half in random order: 0.5 +- a little either side of the threshold.
    for share, named in ((0.55, True), (0.45, False)):
        n = int(share * y.shape[0])
        mixed = np.concatenate([np.sort(y[:n]), y[n:]])
        assert (_sorted_partitions(counts(mixed, 600)) is not None) is named
        assert (_sorted_rows(mixed) is not None) is named


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
        """The balls' mean score in fit's five stream orders: partial_fit of the rows in fit's order
        gives the ball's own model (fit keeps the majority class's where the ball scores no better)."""
        if isinstance(data[0], np.ndarray):
            orders = [np.random.RandomState(r).permutation(len(y)) for r in range(5)]
            fits = [OnePassSVC(C=C, lookahead=10, **params).partial_fit(X[o], y[o], [0, 1]) for o in orders]
        else:  # streamed: fit's own models (an order the ball loses in scores the majority class's)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MajorityClassWarning)
                fits = [OnePassSVC(C=C, lookahead=10, random_state=r, **params).fit(*data) for r in range(5)]
        return np.mean([model.score(X, y) for model in fits])

    assert mean_score((X, y), standardize=False) < majority + 0.01
    assert mean_score((X, y)) > majority + 0.05
    assert mean_score((Xd, yd)) > majority + 0.05
    assert mean_score((X, y), fit_intercept=False) < majority + 0.01
    # fit itself returns no model worse than the majority class on its rows, whatever the ball scored
    for params in ({"standardize": False}, {"fit_intercept": False}):
        with pytest.warns(MajorityClassWarning, match="keeps that constant model instead"):
            model = OnePassSVC(C=C, lookahead=10, random_state=0, **params).fit(X, y)
        assert model.majority_fallback_ and model.score(X, y) == majority and not model.coef_.any()


def test_a_fitted_model_keeps_no_training_rows_and_pickles_mid_stream():
    """The rows the fit checks its model on are dropped after the check; a pickled model goes on
    with the stream, standardizing as before."""
    import pickle

    X, y = _data(n=200, scale=30.0)
    X += 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MajorityClassWarning)  # what is kept is tested here
        model = OnePassSVC(random_state=0).fit(X, y)
        streamed = OnePassSVC(random_state=0).fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    for fitted in (model, streamed):
        assert all(
            not (isinstance(v, np.ndarray | sp.spmatrix) and v.shape[0] >= 50) for v in vars(fitted).values()
        )
    first = OnePassSVC().partial_fit(X[:100], y[:100], classes=[0, 1])
    again = pickle.loads(pickle.dumps(first)).partial_fit(X[100:], y[100:])
    first.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(again.coef_, first.coef_)
    np.testing.assert_allclose(again.standardize_.mean_, X[:100].mean(axis=0), rtol=1e-14)


# -- issue 36, round three: a lookahead of a million rows


def test_a_lookahead_beyond_the_bound_is_refused_naming_it():
    X, y = noisy_linear_data(60, 4)
    with pytest.raises(
        ValueError, match=r"lookahead must be at most 128, got lookahead=1000000: each update"
    ):
        OnePassSVC(lookahead=10**6).fit(X, y)
