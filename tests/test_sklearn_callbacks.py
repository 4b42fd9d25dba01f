"""scikit-learn 1.9's callbacks (``set_callbacks``): a fit as a task tree, on every fit path."""

import logging
import subprocess
import sys
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.features import Standardize

callback = pytest.importorskip("sklearn.callback")
distributed = pytest.importorskip("distributed")


class Recorder:
    """A FitCallback that records every task it is told of: ``(event, task_name, task_id path)``,
    and the accuracy of the fitted estimator a task ends with on ``rows`` (None: no model)."""

    def __init__(self, rows=None, stop_after=None):
        self.events, self.scores, self.torn_down = [], [], 0
        self.rows, self.stop_after = rows, stop_after

    def setup(self, estimator, context):
        self.events.append(("setup", context.task_name, ()))

    def teardown(self, estimator, context):
        self.torn_down += 1

    def on_fit_task_begin(self, estimator, context):
        self.events.append(("begin", context.task_name, _path(context)))

    def on_fit_task_end(self, estimator, context, *, fitted_estimator=None):
        self.events.append(("end", context.task_name, _path(context)))
        if context.max_subtasks == 0 and context.parent is not None:  # a step
            score = None
            if fitted_estimator is not None and self.rows is not None:
                score = fitted_estimator.score(*self.rows)
            self.scores.append((context.task_name, score))
            return self.stop_after is not None and len(self.scores) >= self.stop_after
        return False

    def steps(self, name=None):
        return [e for e in self.events if e[0] == "end" and e[1] != "fit" and (name is None or e[1] == name)]


def _path(context):
    path = []
    while context is not None:
        path.append(context.task_id)
        context = context.parent
    return tuple(reversed(path))


def _data(n=600, d=5, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if classes == 2:
        y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    else:
        y = np.digitize(X[:, 1], [-0.5, 0.5])
    return X, y


def _frame(X, y, npartitions=4):
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"] = y
    return dd.from_pandas(frame, npartitions=npartitions)


def test_set_callbacks_is_scikit_learns_and_survives_clone():
    recorder = Recorder()
    clf = LinearSVC()
    assert clf.set_callbacks(recorder) is clf
    assert clone(clf)._skl_callbacks == [recorder]
    with pytest.raises(TypeError, match="FitCallback"):
        clf.set_callbacks(lambda record: False)  # our own callbacks= take plain callables, not these


@pytest.mark.parametrize("Estimator", [LinearSVC, LogisticRegression])
def test_in_memory_a_step_per_pass_scored_on_the_training_rows(Estimator):
    X, y = _data()
    recorder = Recorder(rows=(X, y))
    clf = Estimator(dual=True, tol=1e-4).set_callbacks(recorder).fit(X, y)
    assert recorder.events[0] == ("setup", "fit", ())
    assert recorder.events[1] == ("begin", "fit", (0,))
    assert recorder.events[-1] == ("end", "fit", (0,))
    assert recorder.torn_down == 1
    steps = recorder.steps()
    assert {name for _, name, _ in steps} == {"pass"}
    assert len(steps) == clf.n_iter_ == len(clf.history_)
    # every step carries its model: the last one's is the fitted model
    assert all(score is not None for _, score in recorder.scores)
    assert recorder.scores[-1][1] == pytest.approx(clf.score(X, y))


def test_in_memory_one_vs_rest_a_task_per_problem_the_unsolved_at_zero():
    X, y = _data(classes=3)
    recorder = Recorder(rows=(X, y))
    clf = LinearSVC(dual=True, tol=1e-3).set_callbacks(recorder).fit(X, y)
    problems = [e for e in recorder.events if e[1] == "problem" and e[0] == "end"]
    assert [path for _, _, path in problems] == [(0, 0), (0, 1), (0, 2)]
    passes = recorder.steps("pass")
    assert {path[:2] for _, _, path in passes} == {(0, 0), (0, 1), (0, 2)}
    assert len(passes) == len(clf.history_)  # one step per pass of each problem
    # a step's model holds the problems solved so far, the others at zero: the last is the fit's
    assert recorder.scores[-1][1] == pytest.approx(clf.score(X, y))
    first_problem_done = len([r for r in clf.history_ if r["class"] == clf.classes_[0]])
    scores = X @ clf.coef_.T + clf.intercept_
    scores[:, 1:] = 0.0
    alone = np.mean(clf.classes_[scores.argmax(axis=1)] == y)
    assert recorder.scores[first_problem_done - 1][1] == pytest.approx(alone)


def test_a_callback_that_returns_true_stops_the_fit():
    X, y = _data()
    recorder = Recorder(stop_after=2)
    clf = LinearSVC(dual=True, tol=1e-12, max_iter=50).set_callbacks(recorder).fit(X, y)
    assert clf.n_iter_ == 2
    assert recorder.torn_down == 1


@pytest.mark.parametrize("Estimator", [LinearSVC, LogisticRegression])
def test_streamed_a_step_per_read_scored_on_validation_data(Estimator):
    X, y = _data(n=2000)
    X_val, y_val = _data(n=400, seed=1)
    X_val = pd.DataFrame(X_val, columns=[f"f{j}" for j in range(X.shape[1])])
    recorder = Recorder(rows=(X_val, y_val))
    monitor = callback.ScoringMonitor(scoring="accuracy")
    clf = Estimator(validation_data=(X_val, y_val)).set_callbacks(recorder, monitor)
    clf.fit(_frame(X, y), "label")
    reads = recorder.steps("read")
    assert len(reads) == len(clf.history_) >= 2
    # the score of each step's model is the one the fit's own validation gives for that read
    ours = [r["validation_score"] for r in clf.history_]
    assert [score for _, score in recorder.scores] == pytest.approx(ours)
    logged = monitor.get_logs().data_as_pandas
    assert (logged["task_name"] == "read").sum() == len(reads)
    assert logged.loc[logged["task_name"] == "read", "accuracy"].tolist() == pytest.approx(ours)


def test_streamed_without_validation_data_scoring_monitor_warns_and_the_fit_goes_on():
    X, y = _data(n=1000)
    monitor = callback.ScoringMonitor(scoring="accuracy")
    with pytest.warns(UserWarning, match="validation_data"):
        clf = LinearSVC().set_callbacks(monitor).fit(_frame(X, y), "label")
    assert clf.score(_frame(X, y).compute().drop(columns="label"), y) > 0.8
    with warnings.catch_warnings():  # and only for ScoringMonitor
        warnings.simplefilter("error")
        LinearSVC().set_callbacks(Recorder()).fit(_frame(X, y), "label")


def test_standardize_steps_carry_no_model():
    X, y = _data(n=1000)
    recorder = Recorder(rows=(X, y))
    clf = LinearSVC(feature_map=Standardize(), dual=True).set_callbacks(recorder).fit(X, y)
    assert recorder.steps("pass") and all(score is None for _, score in recorder.scores)
    assert clf.score(X, y) > 0.8


def test_a_failed_fit_tears_the_callbacks_down_and_leaves_the_estimator_unfitted():
    X, y = _data()
    recorder = Recorder()
    clf = LinearSVC().set_callbacks(recorder)
    with pytest.raises(ValueError):
        clf.fit(X, np.zeros(X.shape[0]))  # one class
    assert recorder.torn_down == 1
    assert not hasattr(clf, "coef_") and not hasattr(clf, "_callback_fit_ctx")


def test_partial_fit_tells_no_task():
    X, y = _data()
    recorder = Recorder()
    LinearSVC().set_callbacks(recorder).partial_fit(X, y, classes=[0, 1])
    assert recorder.events == []


def test_our_own_callbacks_and_scikit_learns_together():
    X, y = _data()
    seen = []
    recorder = Recorder()
    clf = LinearSVC(dual=True, callbacks=[lambda record: seen.append(record["pass"])]).set_callbacks(recorder)
    clf.fit(X, y)
    assert len(seen) == len(recorder.steps("pass")) == clf.n_iter_


def test_progress_bar_draws_every_fit_path(capsys, tmp_path):
    pytest.importorskip("rich")
    from dask_streamsvm.io import dask_parquet_deprecations_hidden

    X, y = _data(n=1500)
    with dask_parquet_deprecations_hidden():
        _frame(X, y).to_parquet(tmp_path / "rows", write_index=False)
    LinearSVC().set_callbacks(callback.ProgressBar()).fit(X, y)
    for Estimator in (LinearSVC, LogisticRegression):
        Estimator().set_callbacks(callback.ProgressBar()).fit(dd.read_parquet(tmp_path / "rows"), "label")
    out = capsys.readouterr().out
    assert out.count("LinearSVC - fit") >= 2 and "LogisticRegression - fit" in out
    assert out.count("100%") >= 3


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
            silence_logs=logging.ERROR, memory_limit=0,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):  # fmt: skip
        yield c


@pytest.mark.parametrize(
    ("make", "step"),
    [
        (lambda: LinearSVC(cluster="auto"), "read"),  # Newton steps, each a read of every part
        (lambda: LinearSVC(loss="hinge", cluster="cocoa", max_iter=5), "round"),
        (lambda: LinearSVC(loss="hinge", cluster="average"), "part"),
    ],
)
def test_cluster_fits_tell_their_steps(client, make, step, capsys):
    X, y = _data(n=2000)
    recorder = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dual methods' convergence advice is not what is tested here
        clf = make().set_callbacks(recorder).fit(_frame(X, y), "label", client=client)
    steps = recorder.steps(step)
    assert steps, recorder.events
    if step == "part":  # each part of the average, as its worker finishes it
        assert len(steps) == 2
    elif step == "round":
        assert len(steps) == len([r for r in clf.history_ if "round" in r])
    else:  # a read's records (the sample's Newton steps all belong to the first) tell one step
        assert len(steps) == len({r["pass"] for r in clf.history_})
    assert recorder.events[-1] == ("end", "fit", (0,)) and recorder.torn_down == 1
    pytest.importorskip("rich")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().set_callbacks(callback.ProgressBar()).fit(_frame(X, y), "label", client=client)
    assert "LinearSVC - fit" in capsys.readouterr().out


def test_average_verbose_shows_each_part(client, capsys):
    X, y = _data(n=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LinearSVC(loss="hinge", cluster="average", verbose=2).fit(_frame(X, y), "label", client=client)
    out = capsys.readouterr().out
    assert "average: part 1 of 2 trained" in out and "average: part 2 of 2 trained" in out


def test_without_scikit_learns_callbacks_nothing_changes():
    """On a scikit-learn without ``sklearn.callback`` (before 1.9) the estimators have no
    set_callbacks, and fit as before."""
    code = (
        # scikit-learn's own modules that use sklearn.callback first, then a sklearn.callback without it
        "import sys, types, sklearn.preprocessing, sklearn.linear_model, sklearn.svm, sklearn.metrics\n"
        "sys.modules['sklearn.callback'] = types.ModuleType('sklearn.callback')\n"
        "import numpy as np\n"
        "from dask_streamsvm import LinearSVC\n"
        "assert not hasattr(LinearSVC(), 'set_callbacks')\n"
        "X = np.random.default_rng(0).standard_normal((100, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "print(LinearSVC().fit(X, y).score(X, y))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert float(out) > 0.9


def test_budgeted_an_epoch_task_each_with_its_model():
    from dask_streamsvm import BudgetedSVC

    X, y = _data(n=300)
    recorder = Recorder(rows=(X, y))
    clf = BudgetedSVC(budget=20, max_iter=3, random_state=0).set_callbacks(recorder).fit(X, y)
    epochs = recorder.steps("epoch")
    assert [path for _, _, path in epochs] == [(0, 0), (0, 1), (0, 2)]
    assert all(score is not None for _, score in recorder.scores)
    assert recorder.events[-1] == ("end", "fit", (0,)) and recorder.torn_down == 1
    assert clf.score(X, y) > 0.8


def test_onepass_one_task():
    from dask_streamsvm import OnePassSVC

    X, y = _data(n=300)
    monitor = callback.ScoringMonitor(scoring="accuracy")
    clf = OnePassSVC(random_state=0).set_callbacks(monitor).fit(X, y)
    logged = monitor.get_logs().data_as_pandas
    assert logged["task_name"].tolist() == ["fit"]
    assert logged["accuracy"].iloc[0] == pytest.approx(clf.score(X, y))
