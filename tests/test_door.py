"""The engine's one door (``engine/fit.py``): a fit chooses its method once, by
``choice.choose``, and once more, by ``choice.after_count``, only where the read that counts the
classes decides between the primal and the dual solvers."""

import dask.array as da
import numpy as np
import pytest

from dask_streamsvm import LinearSVC, LogisticRegression
from dask_streamsvm.engine import choice
from dask_streamsvm.engine import fit as door


@pytest.fixture
def asked(monkeypatch):
    """The door's questions, counted: ``{"choose": [...methods], "after_count": [...methods]}``."""
    calls = {"choose": [], "after_count": []}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            method = function(*args, **kwargs)
            calls[name].append(method)
            return method

        monkeypatch.setattr(door, name, wrapper)

    counted("choose", choice.choose)
    counted("after_count", choice.after_count)
    return calls


def _rows(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1)


def test_a_tall_dask_fit_chooses_once_then_decides_after_the_count(asked):
    X, y = _rows(20_000, 5)
    clf = LinearSVC(tol=1e-3).fit(da.from_array(X, chunks=5_000), da.from_array(y, chunks=5_000))
    [method] = asked["choose"]
    assert method.where == "stream" and method.primal is None and method.first_read == "primal"
    assert [m.primal for m in asked["after_count"]] == [True]
    assert clf.history_[-1]["solver"] == "newton"


def test_a_dask_fit_whose_plan_decides_chooses_once(asked):
    X, y = _rows(2_000, 5)
    LinearSVC(dual=True, tol=1e-3).fit(da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    [method] = asked["choose"]
    assert method.where == "stream" and method.primal is False and method.first_read == "labels"
    assert method.schedule == "sbm"  # choice.AUTO_SCHEDULE
    assert [m.primal for m in asked["after_count"]] == [False]  # asked, and already answered


def test_an_in_memory_fit_chooses_once(asked):
    X, y = _rows(2_000, 5)
    LogisticRegression().fit(X, y)
    LinearSVC(dual=True).fit(X, y)
    assert [(m.where, m.primal) for m in asked["choose"]] == [("memory", True), ("memory", False)]
    assert asked["after_count"] == []


def test_a_dask_fit_on_wide_rows_is_dual_from_the_start(asked):
    """dual="auto" on a model wider than the primal solver forms: dual whatever the rows, and no
    footers or chunks asked for the rows."""
    X, y = _rows(200, 5000)
    LinearSVC(tol=1e-2).fit(da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100))
    [method] = asked["choose"]
    assert method.primal is False and method.first_read == "labels" and method.known_rows is None


def _one_huge_value(n=3_000):
    X, y = _rows(n, 3)
    X[5, 2] = 3e13  # beyond the 1e12 the primal solver takes; the dual solvers train on it
    return X, y


# dask: among make test's slowest (issue 51: the default suite in six minutes)
@pytest.mark.parametrize("where", ["dense", "csr", pytest.param("dask", marks=pytest.mark.slow)])
def test_auto_trains_the_dual_solvers_where_values_are_beyond_the_primal_solvers_range(asked, where):
    """dual="auto" on tall rows picks the primal solver, whose first check finds a value beyond its
    range: the dual solvers train instead, and a warning says why (dual=False still refuses:
    tests/test_read_path.py)."""
    import scipy.sparse as sp
    from sklearn.exceptions import ConvergenceWarning

    X, y = _one_huge_value()
    data = {
        "dense": (X, y), "csr": (sp.csr_matrix(X), y),
        "dask": (da.from_array(X, chunks=1_000), da.from_array(y, chunks=1_000)),
    }[where]  # fmt: skip
    with pytest.warns(ConvergenceWarning, match=r"dual='auto' trained with the dual solvers.*column 2"):
        clf = LinearSVC(tol=1e-3, random_state=0).fit(*data)
    methods = asked["after_count"] if where == "dask" else asked["choose"]
    assert methods[-1].primal is False and "1e+12" in methods[-1].note
    assert clf.duality_gap_ <= 1e-3


def test_auto_falls_back_to_the_dual_solvers_after_a_count_of_labels_alone(asked):
    """Rows unknown before the read (a filtered frame): the count reads the labels alone and picks
    the primal solver, whose first Newton read (at w = 0, nothing trained) finds the value beyond
    its range; the dual solvers train instead, with the same warning (issue 50: it raised)."""
    import dask.dataframe as dd
    import pandas as pd
    from sklearn.exceptions import ConvergenceWarning

    X, y = _one_huge_value()
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y)
    data = dd.from_pandas(frame, npartitions=6)
    data = data[data.a > -100]  # the partitions' lengths unknown: no rows known before the read
    with pytest.warns(ConvergenceWarning, match=r"dual='auto' trained with the dual solvers.*column 2"):
        # deterministic: the dual solvers' passes do not follow the machine's load (at load 8 the
        # asynchronous schedule of 30,000 rows did not reach tol in 1,000 passes)
        clf = LinearSVC(tol=1e-3, random_state=0, deterministic=True).fit(data, "label")
    [first], counted = asked["choose"], asked["after_count"]
    assert first.first_read == "labels" and [m.primal for m in counted] == [True, False]
    assert clf.duality_gap_ <= 1e-3
    with pytest.raises(ValueError, match="column 2 reaches"):  # dual=False refuses, as before
        LinearSVC(dual=False).fit(data, "label")
