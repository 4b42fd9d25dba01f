"""Issue 36, round three: inputs that are not files, Parquet parts that differ, values at 1e200.

Each test injects a bad input or value and checks what the user gets: a
clear error naming where and what to do, before anything blocks or
allocates, or a model.  Items: a FIFO as a data input (3), the Parquet fast
path's parts (8), ``Standardize`` of very large columns (9), and the small
ones of 12 (HashingMap's two paths, crafted model files, a huge budget, a
huge lookahead, the chained "No worker found").
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dask_streamsvm import BudgetedSVC, LinearSVC, OnePassSVC, load
from dask_streamsvm.engine.data import parquet
from dask_streamsvm.engine.data.waiting import seceded
from dask_streamsvm.engine.models import budgeted as engine_budgeted
from dask_streamsvm.features import HashingMap, PolynomialMap, Standardize

from ._helpers import noisy_linear_data

# Dask's own Parquet reader (the general path) calls pandas' reset_index and set_index with
# inplace=True on files written without a pandas index, which pandas 3.1 deprecates: Dask's to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame")

SECONDS = 120  # a child process that takes longer blocked (its imports and a tiny fit take a few seconds)


def _child(script, *args):
    """Run ``script`` in a Python process of its own: ``[outcome, ...]`` of its JSON lines.

    A read that blocks fails the test (after :data:`SECONDS`), never the suite.
    """
    try:
        run = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=SECONDS,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"blocked on a FIFO; done before: {exc.stdout}")
    assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines()]


# -- item 3: a FIFO as a data input --------------------------------------------------------------


@pytest.fixture
def fifos(tmp_path):
    """FIFOs named as a CSV, a LIBSVM and a Parquet file, one inside a Parquet directory, a link to
    one, and a saved model and real files for the commands."""
    X, y = noisy_linear_data(60, 3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y)
    frame.to_csv(tmp_path / "real.csv", index=False)
    LinearSVC(random_state=0).fit(frame[["a", "b", "c"]], y).save(tmp_path / "model.dsvm")
    for name in ("fifo.csv", "fifo.svm", "fifo.parquet"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "parts").mkdir()
    frame.to_parquet(tmp_path / "parts" / "part0.parquet")
    os.mkfifo(tmp_path / "parts" / "part1.parquet")
    (tmp_path / "link.csv").symlink_to(tmp_path / "fifo.csv")
    return tmp_path


_COMMANDS = """
    import contextlib, io, json, sys
    from dask_streamsvm.cli import main
    for argv in map(json.loads, sys.argv[1:]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        print(json.dumps([code, err.getvalue()]), flush=True)
"""


def test_a_fifo_as_the_data_input_of_every_command_is_refused_without_blocking(fifos):
    d = fifos
    model, out = str(d / "model.dsvm"), str(d / "out.csv")
    cases = [
        (["train", str(d / "fifo.csv"), "--label", "y", "--model", str(d / "m.dsvm")], "fifo.csv"),
        (["train", str(d / "fifo.svm"), "--model", str(d / "m.dsvm")], "fifo.svm"),
        (["train", str(d / "parts"), "--label", "y", "--model", str(d / "m.dsvm")], "part1.parquet"),
        (["train", str(d / "f*o.csv"), "--label", "y", "--model", str(d / "m.dsvm")], "fifo.csv"),
        (["predict", model, str(d / "fifo.csv"), "--out", out], "fifo.csv"),
        (["predict", model, str(d / "link.csv"), "--out", out], "link.csv"),
        (["predict", model, str(d / "fifo.parquet"), "--out", out], "fifo.parquet"),
        (["evaluate", model, str(d / "fifo.csv"), "--label", "y"], "fifo.csv"),
        (["evaluate", model, str(d / "real.csv"), str(d / "fifo.csv"), "--label", "y"], "fifo.csv"),
    ]
    outcomes = _child(_COMMANDS, *(json.dumps(argv) for argv, _ in cases))
    assert len(outcomes) == len(cases)
    for (argv, name), (code, err) in zip(cases, outcomes, strict=True):
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1, (argv, code, err)
        assert lines[0].startswith("dask-streamsvm: error: ") and name in lines[0], (argv, err)
        assert "FIFO (named pipe), not a regular file" in lines[0], (argv, err)
    assert not (d / "m.dsvm").exists() and not os.path.exists(out)


_LIBRARY = """
    import json, sys
    from dask_streamsvm import LinearSVC, OnePassSVC, read_libsvm
    from dask_streamsvm.io import open_path
    d = sys.argv[1]
    calls = [
        lambda: LinearSVC().fit(d + "/fifo.csv", "y"),
        lambda: LinearSVC().fit(d + "/fifo.svm", None),
        lambda: LinearSVC().fit(d + "/fifo.parquet", "y"),
        lambda: LinearSVC().fit(d + "/parts", "y"),
        lambda: LinearSVC().fit(d + "/link.csv", "y"),
        lambda: OnePassSVC().fit(d + "/fifo.csv", "y"),
        lambda: read_libsvm([d + "/fifo.svm"]),
        lambda: open_path(d + "/f*o.csv", "y"),
    ]
    for call in calls:
        try:
            call()
            print(json.dumps(["done", ""]), flush=True)
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]), flush=True)
"""


def test_a_fifo_given_to_fit_or_the_readers_is_refused_without_blocking(fifos):
    outcomes = _child(_LIBRARY, fifos)
    names = ["fifo.csv", "fifo.svm", "fifo.parquet", "part1.parquet", "link.csv", "fifo.csv", "fifo.svm"]
    assert len(outcomes) == len(names) + 1
    for name, (kind, message) in zip([*names, "fifo.csv"], outcomes, strict=True):
        assert kind == "ValueError", (name, kind, message)
        assert name in message and "is a FIFO (named pipe), not a regular file" in message, message


def test_a_device_as_data_is_named_as_such(tmp_path):
    with pytest.raises(ValueError, match="'/dev/null' is a character device, not a regular file"):
        LinearSVC().fit("/dev/null", None)


# -- item 8: the Parquet fast path, parts of other types ---------------------------------------


def _parts(tmp_path, second):
    """A directory of two Parquet files: floats ``a, b`` and labels ``y``, the second file's columns
    replaced by ``second`` (name -> Arrow array)."""
    directory = tmp_path / "parts"
    directory.mkdir()
    rng = np.random.RandomState(0)
    n = 40
    first = {"a": pa.array(rng.randn(n)), "b": pa.array(rng.randn(n)), "y": pa.array([0, 1] * (n // 2))}
    pq.write_table(pa.table(first), directory / "part0.parquet")
    pq.write_table(pa.table({**first, **second}), directory / "part1.parquet")
    return directory


def _general_path(monkeypatch):
    monkeypatch.setattr(parquet, "parquet_plan", lambda *args, **kwargs: None)


def _fit_parquet(directory):
    return LinearSVC(solver="sbm", cache_bytes="4KB", max_iter=5, random_state=0).fit(
        dd.read_parquet(str(directory)), "y"
    )


_SECOND = {
    "a timestamp": (
        {"a": pa.array(pd.date_range("2024-01-01", periods=40, freq="h").to_numpy(), pa.timestamp("ns"))},
        r"part1.parquet, column 'a': its values are of type timestamp\[ns\] in this file",
    ),
    "a list": (
        {"b": pa.array([[1.0, 2.0]] * 40, pa.list_(pa.float64()))},
        r"part1.parquet, column 'b': its values are of type list<element: double> in this file",
    ),
}


@pytest.mark.parametrize("case", list(_SECOND))
def test_a_parquet_part_of_another_type_is_refused_naming_the_file_and_column(tmp_path, monkeypatch, case):
    columns, message = _SECOND[case]
    directory = _parts(tmp_path, columns)
    with pytest.raises(ValueError, match=message) as info:
        _fit_parquet(directory)
    assert "Cast the column to numbers in every file" in str(info.value)
    _general_path(monkeypatch)  # the general path refuses it too (naming the partition)
    with pytest.raises(ValueError, match="column '[ab]'"):
        _fit_parquet(directory)


def test_a_truncated_parquet_part_is_refused_naming_the_file(tmp_path, monkeypatch):
    directory = _parts(tmp_path, {})
    part = directory / "part1.parquet"
    part.write_bytes(part.read_bytes()[:-20])
    with pytest.raises(ValueError, match=re.escape(f"{part}: not a readable Parquet file")):
        _fit_parquet(directory)


# -- item 9: Standardize of a column at 1e200 -----------------------------------------------------


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
    assert "rows_skipped" not in model.history_[-1] and model.score(huge, y) > 0.9


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


# -- item 12 (a): HashingMap on Dask input and in memory agree --------------------------------------


def _hashed_frame():
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"v": rng.randn(40), "s": ["u", "w"] * 20})
    frame.loc[7, "v"] = 1e300
    return frame, np.array([0, 1] * 20)


def test_hashing_map_refuses_values_at_1e300_on_dask_input_as_in_memory():
    frame, y = _hashed_frame()
    model = dict(feature_map=HashingMap(n_features=16), random_state=0)
    with pytest.raises(ValueError) as memory:
        LinearSVC(**model).fit(frame, y)  # in memory
    ddf = dd.from_pandas(frame.assign(y=y), npartitions=2)
    with pytest.raises(ValueError) as streamed:
        LinearSVC(solver="sbm", cache_bytes="8KB", **model).fit(ddf, "y")
    tail = "the row's squared norm x . x overflows float64 (its largest value is 1e+300)"
    assert str(memory.value).startswith(f"X, row 7: {tail}")
    assert str(streamed.value).startswith("partition 0, row 7")
    assert f"column 'v': {tail}" in str(streamed.value)
    assert str(memory.value).split(": ", 1)[1] == str(streamed.value).split("column 'v': ", 1)[1]


def test_hashing_map_skips_the_same_rows_on_dask_input_as_in_memory():
    frame, y = _hashed_frame()
    model = dict(feature_map=HashingMap(n_features=16), random_state=0, on_invalid="skip", max_iter=50)
    memory = LinearSVC(**model).fit(frame, y)
    ddf = dd.from_pandas(frame.assign(y=y), npartitions=2)
    streamed = LinearSVC(solver="sbm", cache_bytes="8KB", **model).fit(ddf, "y")
    assert memory.history_[-1]["rows_skipped"] == 1
    assert streamed.history_[0]["rows_skipped"] == 1


# -- item 12 (b): crafted model files ------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    X, y = noisy_linear_data(60, 3)
    path = tmp_path / "model.dsvm"
    LinearSVC(random_state=0).fit(X, y).save(path)
    return path


def _replace_array(path, name, array):
    """Rewrite ``path`` with ``arrays/name.npy`` replaced by ``array``, its table entry to match."""
    import hashlib
    import io

    with zipfile.ZipFile(path) as z:
        members = {m: z.read(m) for m in z.namelist()}
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    members[f"arrays/{name}.npy"] = buffer.getvalue()
    meta = json.loads(members["model.json"])
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()  # of the whole member, as the archive writes it
    meta["arrays"][name] = {"dtype": array.dtype.str, "shape": list(array.shape), "sha256": digest}
    members["model.json"] = json.dumps(meta)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for member, data in members.items():
            z.writestr(member, data)


@pytest.mark.parametrize("dtype", [np.complex128, "<U8", "<M8[ns]"])
def test_weights_that_are_not_real_numbers_are_refused(saved, dtype):
    coef = load(saved).coef_
    crafted = coef + 1j if dtype == np.complex128 else coef.astype(dtype)
    _replace_array(saved, "coef_", crafted)
    with pytest.raises(ValueError, match=re.escape(f"{saved}: inconsistent model file: coef_ has dtype")):
        load(saved)


_LOAD = """
    import json, sys
    from dask_streamsvm import load
    for path in sys.argv[1:]:
        try:
            load(path)
            print(json.dumps(["loaded", ""]), flush=True)
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]), flush=True)
"""


def test_a_crafted_degree_of_the_polynomial_map_is_refused_without_hanging(tmp_path):
    X, y = noisy_linear_data(60, 3)
    saved = tmp_path / "model.dsvm"
    LinearSVC(random_state=0, feature_map=PolynomialMap(degree=3)).fit(X, y).save(saved)
    degrees = [2**70, 2**62, 61]  # numba's TypingError; a loop of 2**62 steps; an int64 binomial that wraps
    paths = []
    for degree in degrees:
        with zipfile.ZipFile(saved) as z:
            members = {m: z.read(m) for m in z.namelist()}
        meta = json.loads(members["model.json"])
        meta["params"]["feature_map"]["__feature_map__"][1]["degree"] = degree
        members["model.json"] = json.dumps(meta)
        paths.append(tmp_path / f"degree{degree}.dsvm")
        with zipfile.ZipFile(paths[-1], "w") as z:
            for member, data in members.items():
                z.writestr(member, data)
    for path, degree, (kind, message) in zip(paths, degrees, _child(_LOAD, *paths), strict=True):
        assert kind == "ValueError", (degree, kind, message)
        assert f"{path}: inconsistent model file: degree must be at most 60, got degree={degree}" in message
    with pytest.raises(ValueError, match="degree must be at most 60"):
        LinearSVC(feature_map=PolynomialMap(degree=100, n_features=64)).fit(X, y)


# -- item 12 (c): a budget larger than the machine ---------------------------------------------------


def test_a_budget_whose_model_cannot_fit_is_refused_before_any_read(monkeypatch):
    X, y = noisy_linear_data(60, 4)
    with pytest.raises(ValueError, match=r"budget=1000000000000 would need 56,000,000,000,056 bytes"):
        BudgetedSVC(budget=10**12).fit(X, y)
    reads = []
    Xd = da.from_array(X, chunks=20).map_blocks(lambda b: reads.append(1) or b, meta=np.empty((0, 0)))
    with pytest.raises(ValueError, match="budget=1000000000000 would need"):
        BudgetedSVC(budget=10**12).fit(Xd, da.from_array(y, chunks=20))
    assert reads == []
    monkeypatch.setattr(engine_budgeted, "_physical_memory", lambda: 10**6)
    with pytest.raises(ValueError, match=r"more than 1,000,000 bytes .*at most 17,856 here"):
        BudgetedSVC(budget=10**5).partial_fit(X, y, classes=[0, 1])
    BudgetedSVC(budget=50, max_iter=1).fit(X, y)  # one that fits trains


def test_a_failed_allocation_of_the_budget_is_a_value_error_naming_it(monkeypatch):
    zeros = np.zeros

    def refused(shape, *args, **kwargs):  # the model's arrays only: the small ones are allocated
        if np.prod(shape) > 1000:
            raise MemoryError
        return zeros(shape, *args, **kwargs)

    monkeypatch.setattr(np, "zeros", refused)
    with pytest.raises(ValueError, match=r"budget=500 needs .* allocating them failed \(MemoryError\)"):
        engine_budgeted.BSGD(1, 4, budget=500, gamma=1.0, C=1.0, n_samples=10, merge="gss")


# -- item 12 (d): a lookahead of a million rows ----------------------------------------------------


def test_a_lookahead_beyond_the_bound_is_refused_naming_it():
    X, y = noisy_linear_data(60, 4)
    with pytest.raises(
        ValueError, match=r"lookahead must be at most 128, got lookahead=1000000: each update"
    ):
        OnePassSVC(lookahead=10**6).fit(X, y)


# -- item 12 (e): no unrelated "No worker found" in tracebacks -------------------------------------


def test_an_error_in_a_fit_carries_no_chained_no_worker_found():
    pytest.importorskip("distributed")
    with pytest.raises(KeyError) as info:
        with seceded():
            raise KeyError("inside")
    assert info.value.__context__ is None
    X, y = noisy_linear_data(20, 3)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN") as info:
        LinearSVC().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))
    chain, exc = [], info.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__context__ or exc.__cause__
    assert not any("No worker found" in text for text in chain), chain
