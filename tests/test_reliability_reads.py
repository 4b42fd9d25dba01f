"""Reliability, round three: the read path every solver shares (issue 36, items 1, 4, 5, 10, 12).

A partition that changes between the primal solver's reads is named as for the dual solvers;
rows of zero cost everywhere, values the primal solver cannot train on and a C too small to
certify are refused before the first step (C before any read); ``rows_skipped`` counts rows,
not reads of them.
"""

import threading

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data.reader import read_blocks, source_prints
from dask_streamsvm.engine.data.source import DaskSource
from dask_streamsvm.engine.plan.problem import MIN_C, FitPlan
from dask_streamsvm.engine.primal.sums import MAX_VALUE

from ._helpers import noisy_linear_data, stream_model

N_PARTS, PART_ROWS, WIDTH = 10, 40, 5
CHANGED = "partition 3 gave other rows on this read than on its first"


def _data(n=N_PARTS * PART_ROWS, d=WIDTH, seed=0):
    return noisy_linear_data(n, d, seed)


def _chunks(X, y):
    return da.from_array(X, chunks=PART_ROWS), da.from_array(y, chunks=PART_ROWS)


def _counted_collection(X, y, change=None):
    """``(X, y, reads)`` as Dask Arrays whose partition ``i`` is ``change(i, read, rows, labels)``
    on its ``read``-th read (1 for the first); ``reads[i]`` counts the reads of partition ``i``."""
    reads, lock = {}, threading.Lock()

    def part(i):
        with lock:
            reads[i] = reads.get(i, 0) + 1
            read = reads[i]
        rows = slice(i * PART_ROWS, (i + 1) * PART_ROWS)
        rows, labels = X[rows].copy(), y[rows].copy()
        return (rows, labels) if change is None else change(i, read, rows, labels)

    parts = [dask.delayed(part, pure=False)(i) for i in range(N_PARTS)]
    Xd = da.concatenate([da.from_delayed(p[0], (PART_ROWS, X.shape[1]), X.dtype) for p in parts])
    yd = da.concatenate([da.from_delayed(p[1], (PART_ROWS,), y.dtype) for p in parts])
    return Xd, yd, reads


def _scale_odd_rows_of_partition_3_from(first_changed):
    """The issue's source: from read ``first_changed`` on, the odd rows of partition 3 are 5x."""

    def change(i, read, rows, labels):
        if i == 3 and read >= first_changed:
            rows[1::2] *= 5.0
        return rows, labels

    return change


# -- item 1: one partition check for every solver --------------------------------------------------


def test_the_primal_solver_stops_at_a_partition_changed_between_its_reads(partial_sample):
    """The issue's repro: dual=False returned the later reads' optimum with gap 0, no error."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(2))
    with pytest.raises(ValueError, match=CHANGED):
        LinearSVC(dual=False, tol=1e-6, random_state=0).fit(Xd, yd)


def test_the_primal_solver_checks_its_later_newton_reads_too(partial_sample):
    """A change that comes on the third read (between two Newton reads after the one that counted
    the classes, each made by a reader of its own) is named too."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(3))
    with pytest.raises(ValueError, match=CHANGED):
        LinearSVC(dual=False, tol=1e-9, random_state=0).fit(Xd, yd)


@pytest.mark.parametrize("solver", ["streamsvm", "sbm", "bm"])
def test_the_dual_solvers_still_stop_at_a_changed_partition(solver):
    X, y = _data()
    # Read 1 counts the labels, read 2 is the first pass: the change comes on the second pass.
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(3))
    with pytest.raises(ValueError, match=CHANGED):
        stream_model(solver=solver, tol=1e-9, max_iter=20).fit(Xd, yd)


def test_the_primal_solver_trains_on_a_source_that_gives_the_same_rows(partial_sample):
    X, y = _data()
    Xd, yd, reads = _counted_collection(X, y)
    streamed = LinearSVC(dual=False, tol=1e-8, random_state=0).fit(Xd, yd)
    in_memory = LinearSVC(dual=False, tol=1e-8, random_state=0).fit(X, y)
    np.testing.assert_allclose(streamed.coef_, in_memory.coef_, rtol=1e-6, atol=1e-9)
    assert min(reads.values()) >= 2  # every partition was read more than once, and checked


def test_every_reader_of_a_source_checks_against_the_first_read_of_it():
    """One check in the read path: two separate reads (two readers) of one source are compared."""
    X, y = _data()
    Xd, yd, _ = _counted_collection(X, y, _scale_odd_rows_of_partition_3_from(2))
    source = DaskSource(Xd, yd)
    assert len(list(read_blocks(source))) == N_PARTS
    with pytest.raises(ValueError, match=CHANGED):
        list(read_blocks(source))
    assert source_prints(source) is source_prints(source)
    other = DaskSource(*_chunks(X, y))
    assert source_prints(other) is not source_prints(source)


def test_a_new_row_transform_starts_new_fingerprints():
    """Standardize's scales, learnt by a read, change the rows of the reads after it: those are
    compared with each other, not with the read before the scales."""
    X, y = _data()
    source = DaskSource(*_chunks(X, y))
    list(read_blocks(source))
    source.row_transform = lambda rows: 2.0 * rows
    assert len(list(read_blocks(source))) == N_PARTS
    assert len(list(read_blocks(source))) == N_PARTS


def test_streamed_primal_fit_with_standardize_trains():
    from dask_streamsvm.features import Standardize

    X, y = _data()
    X = X * np.array([1.0, 100.0, 0.01, 1.0, 1e4])
    params = dict(dual=False, tol=1e-8, random_state=0, feature_map=Standardize())
    streamed = LinearSVC(**params).fit(*_chunks(X, y))
    in_memory = LinearSVC(**params).fit(X, y)
    np.testing.assert_allclose(streamed.coef_, in_memory.coef_, rtol=1e-5, atol=1e-9)


# -- item 4: every row of zero cost ----------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        dict(dual=False),
        dict(dual=True),
        dict(dual="auto"),
        dict(solver="streamsvm"),
        dict(solver="sbm"),
        dict(solver="bm"),
        dict(dual=True, multi_class="crammer_singer"),
    ],
)
@pytest.mark.parametrize("where", ["memory", "dask"])
def test_class_weight_zero_for_every_class_is_nothing_to_train_on(params, where):
    X, y = _data()
    if where == "memory" and "solver" in params:
        params = {**params, "solver": "memory"}
    data = (X, y) if where == "memory" else _chunks(X, y)
    with pytest.raises(ValueError, match=r"class_weight=\{0: 0, 1: 0\} .*nothing to train on"):
        LinearSVC(class_weight={0: 0, 1: 0}, random_state=0, **params).fit(*data)


def test_rows_of_weight_only_in_classes_of_weight_zero_are_nothing_to_train_on():
    """Crammer-Singer on three classes: class 2 has class_weight 1 but sample_weight 0, classes 0
    and 1 have rows of weight but class_weight 0: every row costs 0."""
    X, y = _data()
    labels = np.arange(len(y)) % 3
    weights = np.where(labels == 2, 0.0, 1.0)
    model = LinearSVC(multi_class="crammer_singer", class_weight={0: 0, 1: 0, 2: 1})
    with pytest.raises(ValueError, match=r"classes \[0, 1\] weigh 0\), so there is nothing to train on"):
        model.fit(X, labels, sample_weight=weights)


def test_a_class_of_weight_zero_beside_one_of_positive_weight_still_trains():
    X, y = _data()
    model = LinearSVC(dual=False, class_weight={0: 0, 1: 1}, tol=1e-8).fit(X, y)
    assert np.any(model.coef_ != 0)
    labels = np.arange(len(y)) % 3
    model = LinearSVC(dual=False, class_weight={0: 0, 1: 0, 2: 0}).fit(X, labels)  # one-vs-rest: C
    assert model.coef_.shape == (3, WIDTH)


# -- item 5: values the primal solver cannot train on ----------------------------------------------


@pytest.mark.parametrize("scale", [1e13, 1e15, 1e20, 1e30, 1e150])
@pytest.mark.parametrize("where", ["dense", "csr", "dask"])
def test_values_beyond_the_primal_solvers_range_are_named_before_its_first_step(scale, where):
    X, y = _data()
    X[:, 2] *= scale
    Xd, yd, reads = _counted_collection(X, y)
    data = {"dense": (X, y), "csr": (sp.csr_matrix(X), y), "dask": (Xd, yd)}[where]
    message = r"column 2 reaches \|x\| = .*e\+.*beyond 1e\+12.*feature_map=Standardize\(\).*dual=True"
    if where == "dask":
        message = r"partition \d+: " + message
    with pytest.raises(ValueError, match=message):
        LinearSVC(dual=False, random_state=0).fit(*data)
    assert sum(reads.values()) <= (N_PARTS if where == "dask" else 0)  # within the first read


@pytest.mark.parametrize("where", ["dense", "csr", "dask"])
def test_raw_pixel_values_and_other_unscaled_data_still_train_with_the_primal_solver(where):
    rng = np.random.RandomState(0)
    X = rng.randint(0, 256, size=(N_PARTS * PART_ROWS, 8)).astype(np.float64)  # raw 0..255 pixels
    X[:, 7] = 1.7e9 + rng.randint(0, 10**6, size=X.shape[0])  # a time in seconds
    y = (X[:, :7].sum(axis=1) + rng.randn(X.shape[0]) * 50 > 7 * 127.5).astype(np.int64)
    data = {"dense": (X, y), "csr": (sp.csr_matrix(X), y), "dask": _chunks(X, y)}[where]
    model = LinearSVC(dual=False, tol=1e-3, random_state=0, max_iter=200).fit(*data)
    assert model.duality_gap_ <= 1e-3


def test_the_largest_value_the_primal_solver_takes_is_the_documented_bound():
    X, y = _data()
    X[:, 0] = np.sign(X[:, 0]) * MAX_VALUE * (np.abs(X[:, 0]) / np.abs(X[:, 0]).max())
    LinearSVC(dual=False, max_iter=3).fit(X[:, :1], y)  # |x| <= MAX_VALUE: trains (may not converge)


def test_a_feature_maps_features_beyond_the_range_are_named():
    from dask_streamsvm.features import PolynomialMap

    X, y = _data()
    X[:, 1] *= 1e7  # raw values within range; their squares are not
    with pytest.raises(ValueError, match=r"feature \d+ of the feature map reaches.*Scale the input features"):
        LinearSVC(dual=False, feature_map=PolynomialMap(degree=2)).fit(X, y)


def test_an_intercept_scaling_beyond_the_range_is_named():
    X, y = _data()
    with pytest.raises(ValueError, match=r"the intercept column is 1e\+13 \(intercept_scaling=1e\+13\)"):
        LinearSVC(dual=False, intercept_scaling=1e13).fit(*_chunks(X, y))


# -- item 10: rows_skipped counts rows, not reads of them ---------------------------------------------


@pytest.mark.parametrize(
    "params", [dict(solver="sbm"), dict(solver="streamsvm"), dict(solver="bm"), dict(dual=False)]
)
def test_rows_skipped_is_the_number_of_distinct_rows_skipped(params, partial_sample):
    X, y = _data()
    X[57, 1] = np.nan
    if "solver" in params:
        model = stream_model(on_invalid="skip", tol=1e-9, max_iter=4, **params)
    else:
        model = LinearSVC(on_invalid="skip", tol=1e-12, max_iter=4, random_state=0, **params)
    if "solver" in params:
        with pytest.warns(Warning, match="did not reach tol"):
            model.fit(*_chunks(X, y))
    else:  # from its warm start the Newton solver may reach even this tol within max_iter
        model.fit(*_chunks(X, y))
    assert len({record["pass"] for record in model.history_}) >= (4 if "solver" in params else 2)
    assert [record["rows_skipped"] for record in model.history_] == [1] * len(model.history_)


# -- item 12: a C too small to certify ------------------------------------------------------------------


def _unreadable_collection(X, y):
    def refuse(i):
        raise AssertionError(f"partition {i} was read")

    parts = [dask.delayed(refuse, pure=False)(i) for i in range(N_PARTS)]
    Xd = da.concatenate([da.from_delayed(p, (PART_ROWS, X.shape[1]), X.dtype) for p in parts])
    return Xd, da.from_array(y, chunks=PART_ROWS)


@pytest.mark.parametrize("C", [1e-320, 5e-324, 1e-200, 1e-151])
@pytest.mark.parametrize("params", [dict(dual=False), dict(dual=True), dict(solver="sbm")])
def test_a_C_too_small_to_certify_is_refused_before_any_read(C, params):
    """The issue's C=1e-320 (subnormal) failed streamed with "the rows read changed"; any C below
    MIN_C does so for the default loss's dual.  (A subnormal C may be refused by the parameter
    check before the plan's.)"""
    X, y = _data()
    message = rf"C must be .*got C={C!r}" if C < np.finfo(np.float64).tiny else (
        rf"C must be a finite number >= 1e-150, got C={C!r}.*Pass C >= 1e-150"
    )  # fmt: skip
    with pytest.raises(ValueError, match=message):
        LinearSVC(C=C, **params).fit(*_unreadable_collection(X, y))
    with pytest.raises(ValueError, match=message):
        LinearSVC(C=C, **params).fit(X, y)


def test_the_plan_checks_C_for_every_estimator_path():
    for C in (1e-320, 0.0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="C must be a finite number >= 1e-150"):
            FitPlan(C=C)
    assert FitPlan(C=MIN_C).C == MIN_C


@pytest.mark.parametrize("params", [dict(dual=False), dict(dual=True), dict(solver="sbm"), dict(solver="bm")])
def test_the_smallest_C_accepted_is_certified_by_every_solver(params):
    X, y = _data()
    data = _chunks(X, y) if "solver" in params else (X, y)
    model = LinearSVC(C=MIN_C, random_state=0, **params).fit(*data)
    assert -1e-9 <= model.duality_gap_ <= model.tol  # a gap of rounding, either sign
