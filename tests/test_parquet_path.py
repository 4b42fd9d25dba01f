"""The Parquet fast path (pyarrow straight to arrays) and X and y taken from one frame."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dask_streamsvm import LinearSVC
from dask_streamsvm.engine.data import parquet
from dask_streamsvm.engine.data.source import DaskSource

from ._helpers import load_libsvm_dataset

# Dask's own Parquet reader (the general path) calls pandas' reset_index and set_index with
# inplace=True on files written without a pandas index, which pandas 3.1 deprecates: Dask's to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")


def _write(frame, directory, n_files, row_group_size):
    directory.mkdir()
    bounds = np.linspace(0, len(frame), n_files + 1).astype(int)
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        table = pa.Table.from_pandas(frame.iloc[a:b], preserve_index=False)
        pq.write_table(table, directory / f"part{k:03d}.parquet", row_group_size=row_group_size)
    return str(directory)


@pytest.fixture
def mixed(tmp_path):
    """Float32, float64, int and bool features and string labels, in 5 files of 3 row groups."""
    rng = np.random.RandomState(0)
    n = 1500
    frame = pd.DataFrame(
        {
            "a": rng.randn(n).astype(np.float32),
            "b": rng.randn(n),
            "k": rng.randint(-3, 4, n),
            "flag": rng.rand(n) > 0.5,
        }
    )
    margin = frame.a + 0.5 * frame.b - 0.3 * frame.k + frame.flag
    frame["label"] = np.where(margin + 0.3 * rng.randn(n) > 0.5, "spam", "ham")
    return frame, _write(frame, tmp_path / "mixed", 5, 100)


def _general(monkeypatch):
    monkeypatch.setattr(parquet, "parquet_plan", lambda *args, **kwargs: None)


def _fit(X, y, **kw):
    # The dual solvers read every path the same way; the primal solver's warm start differs where
    # the rows are counted before reading (the fast path: from the files' footers) or not.
    params = dict(
        C=0.5, cache_bytes="20KB", deterministic=True, random_state=0, tol=1e-4, max_iter=50, dual=True
    )
    return LinearSVC(**{**params, **kw}).fit(X, y)


@pytest.mark.parametrize("group_bytes", [parquet.GROUP_BYTES, 1])
def test_the_fast_path_reads_the_same_rows_labels_and_partitions(mixed, monkeypatch, group_bytes):
    frame, path = mixed
    monkeypatch.setattr(parquet, "GROUP_BYTES", group_bytes)  # 1: one column decoded at a time
    fast = DaskSource(dd.read_parquet(path), "label")
    assert fast.parquet_plan is not None and fast.n_partitions == 5
    _general(monkeypatch)
    general = DaskSource(dd.read_parquet(path), "label")
    assert general.parquet_plan is None and general.n_partitions == 5
    for p in range(5):
        a, b = fast.load(p), general.load(p)
        assert a.X.flags.c_contiguous and a.X.dtype == b.X.dtype == np.float64
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.sample_weight, b.sample_weight)
    classes, counts, _ = fast.label_counts()
    assert classes.tolist() == ["ham", "spam"] and counts.sum() == len(frame)


def test_fast_and_general_paths_train_the_same_model_bit_for_bit(mixed, monkeypatch):
    _, path = mixed
    calls = []
    read_part = parquet.read_part
    monkeypatch.setattr(parquet, "read_part", lambda *a: calls.append(a[2]) or read_part(*a))
    frame = dd.read_parquet(path)
    features = ["a", "b", "k", "flag"]
    fast = [_fit(frame, "label"), _fit(frame[features], frame["label"])]
    assert calls and all(c == features for c in calls if c)  # the fast path read the rows
    _general(monkeypatch)
    general = _fit(dd.read_parquet(path), "label")
    for model in fast:
        np.testing.assert_array_equal(model.coef_, general.coef_)
        np.testing.assert_array_equal(model.intercept_, general.intercept_)
        assert model.history_[-1]["gap"] == general.history_[-1]["gap"] <= 1e-4
    assert list(general.classes_) == ["ham", "spam"]


def test_a_narrow_selection_of_a_frame_of_many_small_files_trains(tmp_path, monkeypatch):
    """Dask fuses the partitions of ``frame["y"]`` alone: X and y once disagreed (8 against 60)."""
    rng = np.random.RandomState(1)
    n = 3000
    frame = pd.DataFrame(rng.randn(n, 6), columns=[f"x{j}" for j in range(6)])
    frame["y"] = (frame.x0 - frame.x3 > 0).astype(int)
    path = _write(frame, tmp_path / "many", 60, 50)
    ddf = dd.read_parquet(path)
    assert ddf["y"].to_delayed().__len__() < ddf.npartitions  # the fusion the fix is for
    reference = _fit(ddf, "y")
    for X in (ddf[["x0", "x1", "x2", "x3", "x4", "x5"]], ddf.drop(columns="y")):
        model = _fit(X, ddf["y"])
        np.testing.assert_array_equal(model.coef_, reference.coef_)
    _general(monkeypatch)  # the general path builds one frame of X and y too
    model = _fit(ddf.drop(columns="y"), ddf["y"])
    np.testing.assert_array_equal(model.coef_, reference.coef_)


def test_weights_from_the_same_frame_are_read_with_it(tmp_path, monkeypatch):
    rng = np.random.RandomState(2)
    n = 800
    frame = pd.DataFrame({"a": rng.randn(n), "b": rng.randn(n)})
    frame["y"] = (frame.a > 0).astype(int)
    frame["w"] = rng.rand(n) * (rng.rand(n) > 0.2)
    path = _write(frame, tmp_path / "w", 4, 100)
    ddf = dd.read_parquet(path)
    fast = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    assert fast.parquet_plan is not None and fast.parquet_plan.weight == "w"
    named = DaskSource(ddf.drop(columns="w"), "y", ddf["w"])
    assert named.parquet_plan is not None
    _general(monkeypatch)
    general = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    assert general.parquet_plan is None
    for source in (fast, named, general):
        blocks = [source.load(p) for p in range(source.n_partitions)]
        np.testing.assert_array_equal(np.vstack([b.X for b in blocks]), frame[["a", "b"]].to_numpy())
        np.testing.assert_array_equal(np.concatenate([b.sample_weight for b in blocks]), frame.w.to_numpy())


def test_co_aligned_pandas_backed_x_y_and_weights_become_one_frame():
    rng = np.random.RandomState(3)
    frame = pd.DataFrame({"a": rng.randn(100), "b": rng.randn(100), "y": rng.randint(0, 2, 100)})
    frame["w"] = np.arange(100.0)
    ddf = dd.from_pandas(frame, npartitions=4)
    source = DaskSource(ddf[["a", "b"]], ddf["y"], ddf["w"])
    blocks = [source.load(p) for p in range(source.n_partitions)]
    np.testing.assert_array_equal(np.concatenate([b.sample_weight for b in blocks]), frame.w.to_numpy())
    np.testing.assert_array_equal(np.concatenate([b.y for b in blocks]), frame.y.to_numpy())
    assert list(source.feature_names) == ["a", "b"]
    # rows of class 0 weigh nothing: only class 1 counts as weighted, as for separate collections
    zero = ddf["w"] * (ddf["y"] == 1)
    assert DaskSource(ddf[["a", "b"]], ddf["y"], zero).label_counts()[2].tolist() == [1]


def test_values_the_general_path_rejects_are_rejected_naming_the_same_place(tmp_path, monkeypatch):
    frame = pd.DataFrame({"a": np.arange(40.0), "k": pd.array(range(40), dtype="Int64"), "y": [0, 1] * 20})
    frame.loc[25, "a"] = np.nan
    frame.loc[12, "k"] = pd.NA
    path = _write(frame, tmp_path / "nan", 2, 10)
    messages = []
    for general in (False, True):
        if general:
            _general(monkeypatch)
        source = DaskSource(dd.read_parquet(path), "y")
        assert (source.parquet_plan is None) == general
        for p in range(2):
            with pytest.raises(ValueError) as info:
                source.load(p)
            messages.append(str(info.value))
    assert messages[:2] == messages[2:]
    assert "partition 0, row 12, column 'k': the value is NaN" in messages[0]
    assert "partition 1, row 5, column 'a': the value is NaN" in messages[1]


def test_what_the_fast_path_does_not_read_like_dask_takes_the_general_path(tmp_path):
    frame = pd.DataFrame({"a": np.arange(20.0), "s": ["u", "v"] * 10, "y": [0, 1] * 10})
    path = _write(frame, tmp_path / "t", 2, 5)
    with pytest.raises(ValueError, match=r"non-numeric columns \['s'\]"):
        DaskSource(dd.read_parquet(path), "y")
    assert DaskSource(dd.read_parquet(path, columns=["a", "y"]), "y").parquet_plan is not None
    filtered = dd.read_parquet(path, columns=["a", "y"], filters=[("a", ">", 3.0)])
    assert DaskSource(filtered, "y").parquet_plan is None
    hive = tmp_path / "hive"
    hived = frame.drop(columns="s").assign(g=np.arange(20) % 3)
    dd.from_pandas(hived, npartitions=2).to_parquet(hive, partition_on=["g"])
    assert DaskSource(dd.read_parquet(hive).drop(columns="g"), "y").parquet_plan is None
    computed = dd.read_parquet(path, columns=["a", "y"])
    assert DaskSource(computed.assign(b=computed.a * 2), "y").parquet_plan is None


@pytest.mark.slow
def test_a9a_as_parquet_trains_the_same_model_on_both_paths(tmp_path, monkeypatch):
    X, y = load_libsvm_dataset("a9a")
    frame = pd.DataFrame(X.toarray().astype(np.float32), columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"] = np.where(y > 0, ">50K", "<=50K")
    path = _write(frame, tmp_path / "a9a", 4, 2000)
    kw = dict(C=1.0, cache_bytes="1MB", tol=1e-3, max_iter=30)
    fast = _fit(dd.read_parquet(path), "label", **kw)
    _general(monkeypatch)
    general = _fit(dd.read_parquet(path), "label", **kw)
    np.testing.assert_array_equal(fast.coef_, general.coef_)
    np.testing.assert_array_equal(fast.intercept_, general.intercept_)
    assert fast.history_[-1]["gap"] <= 1e-3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_into_rows_is_the_transpose(dtype):
    from numba.typed import List

    from dask_streamsvm.kernels.layout import TILE, columns_into_rows

    rng = np.random.RandomState(4)
    columns = [rng.randn(2 * TILE + 5).astype(dtype) for _ in range(7)]
    typed = List()
    for c in columns:
        typed.append(c)
    out = np.full((len(columns[0]) + 3, 9), -1.0, dtype=dtype)
    columns_into_rows(out, typed, 3, 2)
    np.testing.assert_array_equal(out[3:, 2:], np.column_stack(columns))
    assert (out[:3] == -1).all() and (out[:, :2] == -1).all()  # rows before start, columns before first


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_first_non_finite_finds_the_first_bad_value_and_the_largest_magnitude_before_it(dtype):
    from dask_streamsvm.engine.data.checks import first_non_finite

    X = np.arange(-30, 30, dtype=dtype).reshape(6, 10)
    assert first_non_finite(X) == (-1, 30.0)
    assert first_non_finite(X[:, ::2]) == (-1, 30.0)  # not contiguous: scanned in C order all the same
    X[2, 3], X[4, 1] = np.inf, np.nan
    assert first_non_finite(X) == (23, 30.0)  # -30 .. -8 came before
    assert first_non_finite(np.arange(5)) == (-1, 0.0)  # integers cannot be NaN: nothing to scan
    assert first_non_finite(np.zeros((0, 3), dtype=dtype)) == (-1, 0.0)
