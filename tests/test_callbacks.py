"""Callbacks, validation scores, early stopping and the progress display."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dask_streamsvm import LinearSVC
from dask_streamsvm.callbacks import EarlyStopping, TimeLimit


def primal_objective(X, y, clf, C):
    """Squared-hinge primal of a binary model, intercept regularised (intercept_scaling=1)."""
    w = np.r_[clf.coef_.ravel(), clf.intercept_]
    margin = np.where(y == clf.classes_[1], 1.0, -1.0) * (X @ clf.coef_.ravel() + clf.intercept_[0])
    return 0.5 * w @ w + C * np.sum(np.maximum(0.0, 1.0 - margin) ** 2)


def _data(n=2000, seed=0, noise=1.0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 8)
    y = (X @ rng.randn(8) + noise * rng.randn(n) > 0).astype(int)
    return X, y


def test_a_callback_sees_every_pass_and_can_stop_the_fit():
    X, y = _data()
    seen = []

    def stop_at_three(record):
        seen.append(record["pass"])
        return record["pass"] == 3

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a requested stop is not a convergence failure
        clf = LinearSVC(tol=1e-12, max_iter=500, callbacks=[stop_at_three], random_state=0).fit(X, y)
    assert seen == [1, 2, 3] and clf.n_iter_ == 3
    # The state returned after a stop is certified: objective_ is the model's primal.
    P = primal_objective(X, y, clf, C=1.0)
    assert clf.objective_ == pytest.approx(P, rel=1e-10)
    assert clf.duality_gap_ > 1e-12


def test_streaming_callback_stops_after_the_read_it_returns_true_on():
    X, y = _data()
    records = []

    def stop(record):
        records.append(record)
        return record["pass"] == 2

    clf = LinearSVC(tol=1e-12, cache_bytes=20_000, callbacks=[stop], random_state=0)
    clf.fit(da.from_array(X, chunks=(250, 8)), da.from_array(y, chunks=250))
    assert [r["pass"] for r in records] == [0, 1, 2]
    assert clf.n_iter_ == 2 and clf.history_[-1]["pass"] == 2
    assert clf.objective_ == pytest.approx(primal_objective(X, y, clf, C=1.0), rel=1e-10)


def test_validation_score_is_recorded_per_pass_in_memory_and_streaming():
    X, y = _data(seed=1)
    X_val, y_val = _data(n=500, seed=2)
    clf = LinearSVC(tol=1e-5, validation_data=(X_val, y_val), random_state=0).fit(X, y)
    scores = [r["validation_score"] for r in clf.history_]
    assert len(scores) == clf.n_iter_
    assert scores[-1] == pytest.approx(clf.score(X_val, y_val))
    Xd, yd = da.from_array(X, chunks=(250, 8)), da.from_array(y, chunks=250)
    val = (da.from_array(X_val, chunks=100), da.from_array(y_val, chunks=100))  # computed once
    streamed = LinearSVC(tol=1e-4, cache_bytes=20_000, validation_data=val, random_state=0).fit(Xd, yd)
    assert streamed.history_[-1]["validation_score"] == pytest.approx(streamed.score(X_val, y_val))


def test_one_vs_rest_in_memory_scores_each_problem_and_streaming_the_model():
    rng = np.random.RandomState(0)
    X = rng.randn(900, 4)
    y = np.argmax(X[:, :3], axis=1)
    clf = LinearSVC(tol=1e-4, validation_data=(X, y), random_state=0).fit(X, y)
    last = {r["class"]: r["validation_score"] for r in clf.history_}
    for c in range(3):
        binary = (clf.decision_function(X)[:, c] > 0) == (y == c)
        assert last[c] == pytest.approx(binary.mean())
    seen = []
    streamed = LinearSVC(tol=1e-3, cache_bytes=50_000, validation_data=(X, y), callbacks=[seen.append])
    streamed.fit(da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=300))
    assert all(r["class"] is None for r in seen)  # one summary record per read
    assert seen[-1]["gap"] == pytest.approx(max(streamed.duality_gap_))
    assert seen[-1]["validation_score"] == pytest.approx(streamed.score(X, y))


def test_early_stopping_on_a_validation_plateau():
    X, y = _data(noise=3.0)
    stopper = EarlyStopping(patience=2)
    clf = LinearSVC(tol=1e-14, max_iter=2000, validation_data=_data(500, seed=5, noise=3.0),
                    callbacks=[stopper], random_state=0)  # fmt: skip
    clf.fit(X, y)
    scores = [r["validation_score"] for r in clf.history_]
    best = int(np.argmax(scores))
    # Stopped exactly `patience` passes after the last improvement.
    assert clf.n_iter_ == best + 1 + 2
    with pytest.raises(ValueError, match="validation_data"):
        LinearSVC(callbacks=[EarlyStopping()]).fit(X, y)


def test_early_stopping_counts_the_steps_on_the_rows_the_first_read_kept(monkeypatch):
    """The primal solver's first read keeps every row of a small Dask collection and the fit steps on
    them in memory: its records all carry that read's pass, 0.  EarlyStopping counts them as passes
    (it used to see pass 0 again as a new fit, and never stopped), and a second fit starts over.
    (Each step is read, none certified from its band, so that the fits take more steps than the
    stopper lets them.)"""
    from dask_streamsvm.engine.primal import newton

    monkeypatch.setattr(newton, "STEP_BAND_SHARE", 0.0)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20_000, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=20_000) > 0).astype(int)
    Xd, yd = da.from_array(X, chunks=2_500), da.from_array(y, chunks=2_500)
    full = LinearSVC(tol=1e-12, random_state=0).fit(Xd, yd)
    assert {r["pass"] for r in full.history_} == {0} and len(full.history_) >= 4
    stopper = EarlyStopping(patience=2, monitor="gap", mode="min", min_delta=1e9)  # nothing improves
    for _ in range(2):  # the same stopper in a second fit: it starts over
        stopped = LinearSVC(tol=1e-12, random_state=0, callbacks=[stopper]).fit(Xd, yd)
        assert len(stopped.history_) == 3
        assert [r["gap"] for r in stopped.history_] == [r["gap"] for r in full.history_[:3]]
        assert stopped.duality_gap_ == pytest.approx(stopped.history_[-1]["gap"])  # the last step's, exact
    # 20 times the rows: this fit's first record comes later in its fit than the last fit's last did in
    # its, so only the fit's start (PassHooks calls the stopper's _start_fit) tells the fits apart.
    X2 = rng.normal(size=(400_000, 3))
    y2 = (X2[:, 0] + 0.3 * rng.normal(size=400_000) > 0).astype(int)
    bigger = LinearSVC(tol=1e-12, random_state=0, callbacks=[stopper])
    bigger.fit(da.from_array(X2, chunks=50_000), da.from_array(y2, chunks=50_000))
    assert len(bigger.history_) == 3


def test_early_stopping_counts_rounds_and_steps_and_starts_over_with_each_fit():
    """A cluster's CoCoA+ rounds (records with ``round``, no ``pass``) count as passes; records of one
    pass count as its steps; ``_start_fit`` (each estimator fit calls it) forgets the last fit, whose
    seconds may be smaller than the new fit's first (a fit of more rows reads for longer)."""
    stop = EarlyStopping(patience=2, monitor="gap", mode="min", min_delta=1.0)
    assert [stop({"round": k, "gap": 0.5, "seconds": float(k)}) for k in (1, 2, 3)] == [False, False, True]
    steps = [{"class": None, "pass": 0, "gap": 0.5, "seconds": t} for t in (0.1, 0.2, 0.3)]
    assert [stop(r) for r in steps] == [False, False, True]
    stop._start_fit()
    assert stop({**steps[0], "seconds": 0.5}) is False  # the next fit's first step: a new start
    assert stop({**steps[0], "seconds": 0.6}) is False
    assert stop({**steps[0], "seconds": 0.05}) is False  # earlier seconds: a new fit, even unannounced


def test_early_stopping_on_the_gap_and_time_limit():
    stop = EarlyStopping(patience=1, monitor="gap", mode="min", min_delta=1.0)
    record = {"class": 1, "pass": 1, "gap": 0.5}
    assert stop(record) is False
    assert stop({**record, "pass": 2, "gap": 0.4}) is True  # improved by less than min_delta
    assert stop({**record, "pass": 1}) is False  # a new fit starts over
    assert TimeLimit(1.0)({"seconds": 1.5}) and not TimeLimit(1.0)({"seconds": 0.5})
    with pytest.raises(TypeError, match="callables"):
        LinearSVC(callbacks=[3]).fit(*_data(100))


def test_verbose_one_draws_a_bar_per_read(capsys):
    X, y = _data()
    LinearSVC(tol=1e-3, cache_bytes=20_000, verbose=1, random_state=0, dual=True).fit(
        da.from_array(X, chunks=(250, 8)), da.from_array(y, chunks=250)
    )
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[0].startswith("pass 0 [####################] 8/8 partitions 2.0k rows cache")
    assert all(" gap " in line for line in lines)


@pytest.mark.parametrize(
    "params",
    [{"solver": "streamsvm"}, {"solver": "sbm"}, {"solver": "bm"}, {"dual": False, "partial": True}],
    ids=["streamsvm", "sbm", "bm", "primal-warm-start"],
)
def test_a_fit_stopped_after_its_first_read_returns_what_it_learned(params, request):
    """Read 0 certifies w = 0 only: a fit stopped there (a callback, as a user's time limit would)
    returns the model its first read trained, better than the majority class, says that it is
    not certified, and reports no gap for it, instead of a certified w = 0 (accuracy: the majority's)."""
    params = dict(params)
    if params.pop("partial", False):  # the warm start's sample must not hold every row
        request.getfixturevalue("partial_sample")
    rng = np.random.RandomState(3)
    X = rng.randn(6000, 10)
    y = (X @ rng.randn(10) + 0.3 * rng.randn(6000) > 1.0).astype(int)  # about 80/20: the majority 0
    majority = max(np.mean(y), 1 - np.mean(y))
    stopped_at = []

    def stop(record):
        stopped_at.append(record["pass"])
        return True

    clf = LinearSVC(tol=1e-6, cache_bytes=40_000, callbacks=[stop], random_state=0, **params)
    with pytest.warns(ConvergenceWarning, match="not certified") as caught:
        clf.fit(da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
    assert stopped_at == [0]
    assert np.any(clf.coef_ != 0)
    assert clf.score(X, y) > majority + 0.05
    assert np.isnan(clf.duality_gap_) and np.isnan(clf.objective_)
    assert not [w for w in caught if "certified after pass" in str(w.message)]
    assert not [w for w in caught if "not scaled" in str(w.message)]  # these rows are of unit scale


def test_a_fit_stopped_before_it_certified_a_model_on_raw_values_says_to_scale_them():
    """The same stop on raw 0..255 values, where the dual solvers' models may not beat w = 0 for
    several reads: the warning that the model is not certified names the unscaled column, as the
    unconverged one does (the CLI words it "add --scale")."""
    rng = np.random.RandomState(3)
    X = np.clip(np.round(rng.randn(6000, 10) * 40 + 128), 0, 255)
    margins = X @ rng.randn(10)
    y = (margins > np.median(margins)).astype(int)
    clf = LinearSVC(callbacks=[lambda record: True], cache_bytes=40_000, random_state=0, dual=True)
    with pytest.warns(ConvergenceWarning, match="not certified") as caught:
        clf.fit(da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
    message = next(str(w.message) for w in caught if "not certified" in str(w.message))
    assert "The features are not scaled (column" in message and "feature_map=Standardize()" in message
